/* The one HTTP/1.1 client of the project, on OpenSSL: every request the server, the CLI,
 * bcd, bc-load and the tests send goes through bc_httpc_run.
 *
 * One request, one connection ("Connection: close"): the URL split
 * (bc_httpc_url_parse), a non-blocking connect under a connect deadline, TLS verified
 * against a CA file, a CA bundle in memory or the system store (the host checked as a
 * DNS name with SNI, or as an IP address), the request written, then the answer read by
 * a bounded reader (bc_httpc_read_reply: a status line and headers of at most
 * BC_HTTPC_HEAD_MAX bytes, a body framed by Content-Length, chunked or the end of the
 * stream, of at most the caller's max bytes: a longer body is an error, never cut).
 * The whole request lives under one deadline. Redirects are not followed.
 *
 * Proxies, when the caller asks (use_proxy): https_proxy / HTTPS_PROXY for https (a
 * CONNECT host:port tunnel), http_proxy for http (the request in absolute form), both
 * skipped for a host no_proxy / NO_PROXY names (a comma list: a host or a domain suffix,
 * or "*"). Without use_proxy the environment is not read. */
#ifndef BC_HTTPC_H
#define BC_HTTPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "bc/err.h"

#define BC_HTTPC_HEAD_MAX    16384 /* the longest answer head (status line and headers) */
#define BC_HTTPC_HOST_MAX    256
#define BC_HTTPC_MAX_HEADERS 64

/* scheme://host[:port][/path...]: host a name, an IPv4 address or [an IPv6 address]. */
struct bc_httpc_url {
	int tls; /* https */
	char host[BC_HTTPC_HOST_MAX];
	uint16_t port;
	int port_given;   /* the URL names its port */
	const char *path; /* into the URL parsed: "/..." or "" (sent as "/") */
};

/* 0 and *u, or BC_ERR_INVALID with *why (a constant): another scheme, user info, an
 * empty host or port, a port outside 1 to 65535, an unclosed IPv6 bracket, a space or
 * control byte anywhere. u->path points into url. */
BC_WUR int bc_httpc_url_parse(const char *url, struct bc_httpc_url *u, const char **why);

struct bc_httpc_req {
	const char *method; /* NULL: GET */
	const char *url;
	const char *const *headers; /* "Name: value" lines, sent as given */
	size_t n_headers;
	const void *body; /* sent with a Content-Length when non-NULL (len 0 too) */
	size_t len;
	int no_length;          /* the body sent without a Content-Length: the caller framed it
	                         * (a "Transfer-Encoding: chunked" header and chunks) */
	const char *ca_file;    /* https: the CA certificates trusted, from a PEM file, */
	const char *ca_pem;     /* or from PEM in memory; both NULL: the system store */
	time_t verify_time;     /* 0: now; else the certificates are checked at this time */
	int use_proxy;          /* honour the proxy variables of the environment */
	int connect_timeout_ms; /* 0: 10 s */
	int timeout_ms;         /* the whole request; 0: 60 s */
	size_t max;             /* the largest body taken */
};

struct bc_httpc_resp {
	int status;
	char *head; /* the answer's head, NUL-terminated (bc_httpc_header reads it) */
	char *body; /* NUL after len bytes; NULL when there is no body */
	size_t len;
};

/* Sends req and reads its answer into *resp (free with bc_httpc_resp_free, also after an
 * error). 0 for any status; else err (always NUL-terminated) says what, and:
 * BC_ERR_INVALID (a URL refused, a malformed answer), BC_ERR_UNAVAILABLE (resolution,
 * connect, a deadline, the connection cut, TLS failing other than verification),
 * BC_ERR_VERIFY (the server's certificate does not verify or name the host),
 * BC_ERR_LIMIT (an answer head or body past its bound), BC_ERR_CONFIG (no CA in the
 * file or bundle given, a proxy variable that is not a URL), BC_ERR_NOMEM. */
BC_WUR int bc_httpc_run(const struct bc_httpc_req *req, struct bc_httpc_resp *resp, char *err,
                        size_t errlen);

void bc_httpc_resp_free(struct bc_httpc_resp *resp);

/* The value of the first header called name (case-insensitive) in resp's head, copied
 * into out (NUL-terminated, leading and trailing blanks removed): 0, BC_ERR_NOT_FOUND, or
 * BC_ERR_LIMIT when it does not fit. */
BC_WUR int bc_httpc_header(const struct bc_httpc_resp *resp, const char *name, char *out,
                           size_t outlen);

/* ---- the answer reader, apart from the socket (the fuzz target drives it) ---- */

/* A byte source: up to n bytes into p, how many (> 0), 0 at the end of the stream, or -1
 * on an error (the source keeps its own message). */
struct bc_httpc_src {
	ssize_t (*read)(void *arg, char *p, size_t n);
	void *arg;
};

/* One answer from src: interim 1xx answers skipped, then the head into resp->head and
 * resp->status, the body into resp->body. no_body: the answer to HEAD (or a 204/304)
 * has none. BC_ERR_UNAVAILABLE when the source fails or ends before the answer does
 * (*why says which); BC_ERR_INVALID, *why a constant, for a malformed status line,
 * header, Content-Length or chunk, or a Transfer-Encoding other than chunked;
 * BC_ERR_LIMIT past BC_HTTPC_HEAD_MAX or max. Nothing past the answer is read. After an
 * error resp->body is NULL (resp->head may be set: free with bc_httpc_resp_free). */
BC_WUR int bc_httpc_read_reply(const struct bc_httpc_src *src, size_t max, int no_body,
                               struct bc_httpc_resp *resp, const char **why);

/* An HTTP date (IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT") into *t: 0 or
 * BC_ERR_INVALID. */
BC_WUR int bc_httpc_date(const char *s, time_t *t);

/* s percent-encoded for a URL's path segment or query value: every byte but letters,
 * digits and -._~ as %XX (as curl_easy_escape). malloc'd (free()); NULL: out of memory. */
char *bc_httpc_escape(const char *s);

/* Whether a request to host must skip the proxy, after no_proxy's list (NULL: no). */
int bc_httpc_no_proxy(const char *no_proxy, const char *host);

#endif
