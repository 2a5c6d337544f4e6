/* bc-load's own HTTP/1.1 client, plugged into the client library with
 * bc_client_set_transport: what a join or renewal costs an agent over TLS, not what a
 * new libcurl handle loading its CA costs. Each thread keeps one SSL_CTX (the pinned CA
 * bundle loaded once); every request is a fresh TCP connection and a full TLS handshake
 * (no session resumption: that is what the bench measures), one POST with
 * "Connection: close", and the answer read by a bounded reader whose head is split by
 * picohttpparser (phr_parse_response, as libh2o-evloop exports it). */
#ifndef BENCH_TLS_CLIENT_H
#define BENCH_TLS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "bc/client.h"

/* The longest answer head read; a longer one is refused (BC_ERR_LIMIT). */
#define BENCH_REPLY_HEAD_MAX 16384
/* Every connect, read and write waits at most this long: a server that stops
 * answering is an error, never a hang. */
#define BENCH_IO_TIMEOUT_S 30

/* What bc-load needs of an answer's head. */
struct bench_reply_head {
	int status;              /* 200 to 599 */
	size_t head_len;         /* the head's bytes, its blank line included */
	uint64_t content_length; /* at most BC_CLIENT_MAX_RESPONSE */
	unsigned retry_after_s;  /* Retry-After in delta-seconds (capped at 86400); 0: none */
};

/* The head of an HTTP/1.x answer at the start of buf: 1 and *h when it is complete, 0
 * when more bytes are needed (and len < BENCH_REPLY_HEAD_MAX); BC_ERR_LIMIT when no
 * head ends within BENCH_REPLY_HEAD_MAX or its Content-Length passes
 * BC_CLIENT_MAX_RESPONSE; BC_ERR_INVALID, with *why (a constant) saying what, for a
 * malformed status line or header, a 1xx status (bc-load sends no Expect), no
 * Content-Length or more than one, or any Transfer-Encoding (the server frames every
 * answer by its length). */
int bench_reply_head(const char *buf, size_t len, struct bench_reply_head *h, const char **why)
    __attribute__((warn_unused_result));

/* The transport's post (struct bc_client_transport; arg unused): see the top of this
 * file. The calling thread's SSL_CTX is made on its first https request, again when
 * the pins' CA bundle differs from the one it was made with, and freed when the thread
 * ends. */
int bench_tls_post(void *arg, const struct bc_client_post_req *req, struct bc_client_reply *out,
                   char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
