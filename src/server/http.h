/* The HTTP front end: HTTP/1.1, plain or over OpenSSL's TLS, one event loop that reads
 * every connection (a TLS handshake waits on the socket), a pool of worker threads
 * that runs the handler, bounded request bodies, and one handler for every request.
 *
 * The handler is called once per request with the whole body (at most max_body
 * bytes; a larger body is answered 413 without calling it). It fills the response;
 * the body it sets is malloc'd and freed by the HTTP layer. Handlers run on worker
 * threads concurrently. */
#ifndef BC_SERVER_HTTP_H
#define BC_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

struct bc_http_request {
	const char *method;        /* "GET", "POST", ... */
	const char *path;          /* without the query string */
	const char *content_type;  /* "" when absent */
	const char *authorization; /* "" when absent */
	const uint8_t *body;
	size_t body_len;
	const char *peer;              /* "127.0.0.1" */
	const char *const *query_keys; /* decoded query arguments */
	const char *const *query_vals;
	size_t n_query;
	/* how long the request's connection waited, accepted, for a worker to read it: the
	 * server's own queue (0 for a later request on a kept-alive connection) */
	uint64_t queued_ms;
};

struct bc_http_response {
	int status;
	const char *content_type; /* static string */
	uint8_t *body;            /* malloc'd; the HTTP layer frees it */
	size_t body_len;
	unsigned retry_after_s; /* > 0: a Retry-After header (429, 503) */
};

typedef void (*bc_http_handler)(void *ctx, const struct bc_http_request *req,
                                struct bc_http_response *resp);

/* Asked, before any byte of the body is read, whether a request that may carry more
 * than preauth_body bytes comes from someone allowed to send that much (an admin API
 * key): 1 yes, anything else no (the body is then capped at preauth_body). */
typedef int (*bc_http_authorize)(void *ctx, const char *method, const char *path,
                                 const char *authorization);

#define BC_HTTP_DEFAULT_CONNECTIONS       4096
#define BC_HTTP_DEFAULT_PER_ADDRESS       64
#define BC_HTTP_DEFAULT_REQUEST_TIMEOUT_S 10

/* What one client may hold. A connection whose request (headers and body) has not
 * arrived whole request_timeout_s after the connection opened, or after its previous
 * request was answered, is closed, however steadily its bytes trickle; a connection
 * that sends nothing is closed after 30 s in any case. With more than three-quarters
 * of max_connections open, the deadline is a fifth of request_timeout_s (1 s at
 * least), so that slow clients make room for others sooner. The soft open-file limit is
 * raised to fit max_connections (up to the hard limit; below it, fewer connections
 * are accepted and a warning says so). */
struct bc_http_config {
	const char *listen;       /* "127.0.0.1:8080", "[::1]:0", "0.0.0.0:443" */
	const char *tls_cert_pem; /* NULL: plain HTTP, refused unless listen is loopback */
	const char *tls_key_pem;
	unsigned threads;            /* 0: 4 */
	size_t max_body;             /* 0: 64 KiB */
	size_t preauth_body;         /* 0: max_body for every request; see bc_http_authorize */
	size_t body_budget;          /* bytes all unauthorized bodies may hold at once; 0: no cap */
	unsigned request_timeout_s;  /* 0: BC_HTTP_DEFAULT_REQUEST_TIMEOUT_S */
	unsigned max_connections;    /* 0: BC_HTTP_DEFAULT_CONNECTIONS */
	unsigned per_address;        /* connections from one client address; 0: the default */
	bc_http_authorize authorize; /* called with the handler's ctx; may be NULL */
	int access_log;     /* 1: one info line per request, msg="request" (client, method, path,
	                       status, duration_ms) */
	int plain_anywhere; /* 1: plain HTTP on any address (a listener that serves nothing
	                     * secret or that the operator binds to a trusted network) */
};

/* The Content-Security-Policy header of every answer (trusted types: a page of this
 * origin cannot assign a string to innerHTML or any other script sink). */
#define BC_HTTP_CSP                                                                                \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "        \
	"require-trusted-types-for 'script'; trusted-types 'none'"

struct bc_http;

/* Starts listening. err says what failed ("listen 10.0.0.1:80: plain HTTP is only
 * allowed on a loopback address; set [tls] cert and key"). */
BC_WUR int bc_http_start(const struct bc_http_config *cfg, bc_http_handler h, void *ctx,
                         struct bc_http **out, char *err, size_t errlen);
/* The bound port (useful with port 0). */
uint16_t bc_http_port(const struct bc_http *s);
/* Connections closed to make room for a new one at an address at its cap
 * (per_address): each time, the one of that address still sending its request with the
 * fewest bytes received, the oldest of equals; one that sent its request whole is never
 * closed for another (the new one is then refused). */
uint64_t bc_http_evicted(struct bc_http *s);
/* The connections open now (accepted, not yet closed): the loop's own count. */
unsigned bc_http_connections(struct bc_http *s);
/* Stops accepting, lets in-flight requests finish, frees. */
void bc_http_stop(struct bc_http *s);
/* Serves another certificate (PEM, then its chain) and key from the next connection
 * on, without a restart; connections already open keep theirs. BC_ERR_INVALID on a
 * plain HTTP listener, BC_ERR_CRYPTO when the PEM does not load or the key does not
 * match (the old certificate is still served then). Safe from any thread. */
BC_WUR int bc_http_set_tls(struct bc_http *s, const char *cert_pem, const char *key_pem);

/* Helpers for handlers. */
const char *bc_http_query(const struct bc_http_request *req, const char *key);
void bc_http_set_body(struct bc_http_response *resp, int status, const char *content_type,
                      const void *body, size_t len); /* copies */

#endif
