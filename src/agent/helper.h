/* bcd helper: the root daemon that holds the TPM for an unprivileged bcd node (the
 * spec's "The node key in the TPM", [helper]). Whoever can open /dev/tpmrm0 can change
 * the hierarchies' authorization, clear the TPM or trip its lockout, so the node never
 * does: it asks the helper for four operations on node keys named by their 32-byte
 * unique, and the helper builds every TPM command itself (template, hierarchy, handle
 * and authorization are its own; the node sends only a unique and a digest).
 *
 * After OpenSSH's monitor.c: a table of {verb, flags, handler}; a request whose verb is
 * not in the table, or whose body is not exactly the verb's shape, is refused and ends
 * the session. Only the configured user ([helper] user, by the socket's SO_PEERCRED
 * uid) is served; any other peer, root included, gets one refusal and is closed.
 *
 * Wire (every integer big-endian; both sides read with hard limits):
 *   frame     = u32 n (1 .. BCD_HELPER_FRAME_MAX) || n bytes
 *   request   = u8 v (1 .. BCD_HELPER_VERB_MAX) || verb (v bytes, [a-z.]) || body
 *   response  = u8 status || body
 *               status 0: the verb's answer; status 1: a refusal whose body is one
 *               printable line (at most BCD_HELPER_LINE_MAX bytes), after which the
 *               helper closes the session
 *   verb          body                                       answer
 *   tpm.ak        (empty)                                    u16 n || AK TPMT_PUBLIC
 *   tpm.nodekey   unique[32]                                 u16 n || key TPMT_PUBLIC
 *   tpm.sign      unique[32] || u8 n || digest[n], n 32/48/64 sig[64] (P1363 r || s)
 *   tpm.certify   unique[32] || u8 n || qualifying[n], n<=64 u16 n || TPMS_ATTEST ||
 *                                                            u16 n || TPMT_SIGNATURE
 * The node checks every answer (nodekey.c, keyops.c): public areas parse exactly and
 * have the AK's or a node key's attributes, a signature verifies under the key's public
 * half, a certification under the AK the helper announced.
 *
 * Keys: the helper keeps a table of at most BCD_HELPER_MAX_KEYS node keys (unique,
 * public area, name); the least recently used is dropped (wiped) for a new one. No
 * answer comes from the table: every request derives its key again (the TPM may have
 * been cleared since). The TPM objects themselves are derived
 * for each request and flushed after it (swtpm and TPMs without a resource manager have
 * three object slots), and the TPM connection lives while a session is open, so bcd join
 * (root) can open the TPM when none is.
 *
 * Time: each request must arrive whole within the idle time (BCD_HELPER_TIMEOUT_S unless
 * set shorter) of the session's start or of the previous answer, an absolute deadline
 * that bytes trickling in do not extend; a session past it gets one refusal and is
 * closed. bcd helper serves up to BCD_HELPER_SESSIONS_MAX sessions at once, one request
 * at a time, so a peer that holds a session open cannot keep another one waiting.
 *
 * Errors: 0 or a negative BC_ERR_*. */
#ifndef BCD_HELPER_H
#define BCD_HELPER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/tpm.h"
#include "bc/buf.h"
#include "bc/err.h"

#define BCD_HELPER_FRAME_MAX    4096
#define BCD_HELPER_VERB_MAX     16
#define BCD_HELPER_LINE_MAX     300
#define BCD_HELPER_MAX_KEYS     8
#define BCD_HELPER_TIMEOUT_S    30 /* a session with no whole request this long is closed */
#define BCD_HELPER_SESSIONS_MAX 8

enum bcd_helper_status { BCD_HELPER_OK = 0, BCD_HELPER_REFUSED = 1 };
#define BCD_HELPER_ENDED 1 /* bcd_helper_session_step: the peer closed between requests */

/* ---- framing (helper.c), for both sides ---- */
/* One frame of len bytes (1 .. BCD_HELPER_FRAME_MAX). */
BC_WUR int bcd_helper_write(int fd, const void *p, size_t len);
/* One frame into buf[BCD_HELPER_FRAME_MAX], whole within BCD_HELPER_TIMEOUT_S of the
 * call: BC_ERR_NOT_FOUND at a clean end of stream before the frame, BC_ERR_LIMIT for a
 * length of 0 or over the maximum, BC_ERR_EXPIRED past the deadline, BC_ERR_IO for a
 * short read. */
BC_WUR int bcd_helper_read(int fd, uint8_t buf[static BCD_HELPER_FRAME_MAX], size_t *len);

/* ---- the server (helper.c) ---- */
struct bcd_helper;
/* A helper for the TPM at tcti (copied). Free with bcd_helper_free (wipes the table). */
BC_WUR int bcd_helper_new(const char *tcti, struct bcd_helper **out);
void bcd_helper_free(struct bcd_helper *h);
/* The idle time, 1 .. BCD_HELPER_TIMEOUT_S * 1000 ms (BC_ERR_INVALID otherwise). */
BC_WUR int bcd_helper_set_idle(struct bcd_helper *h, unsigned ms);

/* A session on fd (a peer already checked; the caller keeps and closes fd). Its
 * deadline starts now. The TPM is opened at the first request of any session and
 * closed when the last session is freed. */
struct bcd_helper_session;
BC_WUR int bcd_helper_session_new(struct bcd_helper *h, int fd, struct bcd_helper_session **out);
void bcd_helper_session_free(struct bcd_helper *h, struct bcd_helper_session *s);
int bcd_helper_session_fd(const struct bcd_helper_session *s);
/* Milliseconds to the session's deadline (0 when past): a timeout for poll(). */
int bcd_helper_session_wait(const struct bcd_helper_session *s);
/* One step, never blocking on the peer: with readable (poll said so), one read and,
 * when a request is whole, its answer; without, a check of the deadline. 0 to go on;
 * BCD_HELPER_ENDED when the peer closed between requests; BC_ERR_EXPIRED past the
 * deadline, BC_ERR_DENIED after a refusal (unknown verb, bad shape, a TPM failure),
 * BC_ERR_LIMIT, BC_ERR_IO: the session is over (a refusal line sent where one fits). */
BC_WUR int bcd_helper_session_step(struct bcd_helper *h, struct bcd_helper_session *s,
                                   int readable);
/* Serves one session on fd to its end: 0 when the peer closes, or the error that ended
 * it (as bcd_helper_session_step). */
BC_WUR int bcd_helper_serve(struct bcd_helper *h, int fd);
/* Refuses a peer that is not the configured user: one refusal frame naming why. */
void bcd_helper_refuse(int fd, const char *why);
/* How many keys the table holds (at most BCD_HELPER_MAX_KEYS), and whether the key of
 * unique is among them (for tests). */
size_t bcd_helper_loaded(const struct bcd_helper *h);
int bcd_helper_has(const struct bcd_helper *h, const uint8_t unique[static BCD_TPM_UNIQUE_LEN]);

/* ---- the client (keyops.c) ---- */
/* Connects to the helper's socket: BC_ERR_UNAVAILABLE when it cannot (m says why). */
BC_WUR int bcd_helper_connect(const char *path, int *fd, char *err, size_t errlen);
/* One request and its answer: ans reads its body in buf (status stripped; empty on
 * failure). A refusal is BC_ERR_DENIED with its line in err. */
BC_WUR int bcd_helper_call(int fd, const char *verb, const uint8_t *body, size_t len,
                           uint8_t buf[static BCD_HELPER_FRAME_MAX], bc_reader *ans, char *err,
                           size_t errlen);

#endif
