/* picohttpparser's interface as libh2o-evloop 2.2.5 exports it (Debian ships no header
 * for it): the declarations of its picohttpparser.h that the server's request reader
 * (src/server/http_parse.c) and the bench's answer reader (bench/http_reply.c) call.
 * Private: one home for these prototypes, so that the two cannot drift apart. */
#ifndef BC_LIB_PICOHTTP_H
#define BC_LIB_PICOHTTP_H

#include <stddef.h>
#include <sys/types.h>

struct phr_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* > 0: the head's length; -1: malformed; -2: incomplete. */
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
                      const char **path, size_t *path_len, int *minor_version,
                      struct phr_header *headers, size_t *num_headers, size_t last_len);
int phr_parse_response(const char *buf, size_t len, int *minor_version, int *status,
                       const char **msg, size_t *msg_len, struct phr_header *headers,
                       size_t *num_headers, size_t last_len);

/* Its decoder's state (size_t bytes_left_in_chunk; char consume_trailer, _hex_count,
 * _state), which src/server/http_parse.h's struct http_chunked begins with. */
struct phr_chunked_decoder;
ssize_t phr_decode_chunked(struct phr_chunked_decoder *decoder, char *buf, size_t *bufsz);

#endif
