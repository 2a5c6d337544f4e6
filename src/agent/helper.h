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
 * three object slots), and the TPM connection lives as long as one session, so bcd join
 * (root) can open the TPM between two sessions.
 *
 * Errors: 0 or a negative BC_ERR_*. */
#ifndef BCD_HELPER_H
#define BCD_HELPER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/tpm.h"
#include "bc/err.h"

#define BCD_HELPER_FRAME_MAX 4096
#define BCD_HELPER_VERB_MAX  16
#define BCD_HELPER_LINE_MAX  300
#define BCD_HELPER_MAX_KEYS  8
#define BCD_HELPER_TIMEOUT_S 30 /* a session idle this long is closed */

enum bcd_helper_status { BCD_HELPER_OK = 0, BCD_HELPER_REFUSED = 1 };

/* ---- framing (helper.c), for both sides ---- */
/* One frame of len bytes (1 .. BCD_HELPER_FRAME_MAX). */
BC_WUR int bcd_helper_write(int fd, const void *p, size_t len);
/* One frame into buf[BCD_HELPER_FRAME_MAX]: BC_ERR_NOT_FOUND at a clean end of stream
 * before the frame, BC_ERR_LIMIT for a length of 0 or over the maximum, BC_ERR_IO for a
 * short read or a timeout. */
BC_WUR int bcd_helper_read(int fd, uint8_t buf[static BCD_HELPER_FRAME_MAX], size_t *len);

/* ---- the server (helper.c) ---- */
struct bcd_helper;
/* A helper for the TPM at tcti (copied). Free with bcd_helper_free (wipes the table). */
BC_WUR int bcd_helper_new(const char *tcti, struct bcd_helper **out);
void bcd_helper_free(struct bcd_helper *h);
/* Serves one session on fd, a peer already checked: requests until the peer closes
 * (0), a refusal (BC_ERR_DENIED: unknown verb, bad shape, a TPM failure) or an I/O
 * error. The TPM is opened at the session's first request and closed at its end. */
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
/* One request and its answer: *ans points into buf (its body, status stripped). A
 * refusal is BC_ERR_DENIED with its line in err. */
BC_WUR int bcd_helper_call(int fd, const char *verb, const uint8_t *body, size_t len,
                           uint8_t buf[static BCD_HELPER_FRAME_MAX], const uint8_t **ans,
                           size_t *ans_len, char *err, size_t errlen);

#endif
