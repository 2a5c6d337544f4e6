/* Reading an HTTP/1.1 request head (over picohttpparser, which libh2o-evloop carries),
 * strictly: what the front end (http_loop.c) needs of it, copied out of the read
 * buffer, and the refusals of a head this server will not read a body after.
 *
 * bc_http_parse_head() reads buf[0..len): 0 when the head is not whole yet, the head's
 * length when it is (h filled; free with http_head_free), or a refusal: a negative
 * BC_ERR_* with *status and *body (a static Connect error JSON) set. Nothing of buf is
 * kept. Out of memory is BC_ERR_NOMEM with status 500. */
#ifndef BC_SERVER_HTTP_PARSE_H
#define BC_SERVER_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

/* The most a request head may take (request line and headers). */
#define HTTP_HEAD_MAX (32u * 1024)
/* The most header lines a request may carry. */
#define HTTP_MAX_HEADERS 64

struct http_head {
	char *method;        /* "GET" */
	char *path;          /* percent-decoded, without the query */
	char *query;         /* raw, after '?'; NULL when absent */
	char *content_type;  /* "" when absent */
	char *authorization; /* "" when absent */
	int minor;           /* HTTP/1.<minor> */
	int keep_alive;      /* 0: Connection: close, or HTTP/1.0 */
	int expect_continue; /* Expect: 100-continue */
	int chunked;         /* Transfer-Encoding: chunked */
	int has_length;
	uint64_t content_length; /* UINT64_MAX: more digits than fit */
};

BC_WUR int bc_http_parse_head(const char *buf, size_t len, struct http_head *h, int *status,
                              const char **body);
void http_head_free(struct http_head *h);

/* Splits query (modified in place) into at most max key/value pairs, '+' and %XX
 * decoded; a key without '=' has the value "". BC_ERR_LIMIT past max pairs. */
BC_WUR int http_parse_query(char *query, const char **keys, const char **vals, size_t max,
                            size_t *n);

/* A chunked body, decoded in place: phr_decode_chunked's state. picohttpparser's
 * decoder grew fields over time: the padding leaves room for a newer library's. */
struct http_chunked {
	size_t bytes_left_in_chunk;
	char consume_trailer;
	char hex_count;
	char state;
	uint64_t reserved[4];
};
/* Decodes buf[0..*len) in place: *len becomes the decoded bytes' count. Returns 1 when
 * the body ended (*rest: how many bytes followed it, now at buf + *len), 0 when more
 * is needed, BC_ERR_INVALID on a malformed chunk. */
BC_WUR int http_chunked_decode(struct http_chunked *d, char *buf, size_t *len, size_t *rest);

/* The Connect error bodies of the front end's refusals. */
extern const char HTTP_BAD_REQUEST_LINE[];
extern const char HTTP_BAD_FRAMING[];
extern const char HTTP_NO_HOST[];
extern const char HTTP_BAD_LENGTH[];
extern const char HTTP_BAD_TRANSFER_ENCODING[];
extern const char HTTP_HEAD_TOO_LARGE[];
extern const char HTTP_BAD_CHUNK[];

#endif
