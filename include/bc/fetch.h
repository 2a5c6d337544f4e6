/* One bounded HTTP request (bc/httpc.h), for the documents a program fetches from a
 * URL it was configured with: a JWKS (the server), a cloud metadata endpoint (bcd).
 *
 * https is verified against the system store or ca_file; plain http is sent only
 * where the caller allows it (BC_FETCH_HTTP_LOOPBACK: a loopback host; BC_FETCH_HTTP:
 * any, for the link-local metadata endpoints), never through a proxy. Redirects are
 * not followed; the body is read into a buffer of at most max bytes (the transfer
 * is aborted past it). */
#ifndef BC_FETCH_H
#define BC_FETCH_H

#include <stddef.h>

#include "bc/err.h"

enum bc_fetch_http { BC_FETCH_HTTPS_ONLY = 0, BC_FETCH_HTTP_LOOPBACK = 1, BC_FETCH_HTTP = 2 };

struct bc_fetch {
	const char *url;
	const char *method;         /* NULL: GET */
	const char *const *headers; /* "Name: value" lines */
	size_t n_headers;
	const char *ca_file; /* NULL: the system store */
	enum bc_fetch_http http;
	size_t max;     /* the largest body */
	long timeout_s; /* 0: 10 seconds */
};

/* 1 when url is allowed under http (https, or http as the rule says), else 0. */
int bc_fetch_url_allowed(const char *url, enum bc_fetch_http http);

/* 0 with *status and the body (malloc'd, NUL after *len bytes; free()).
 * BC_ERR_CONFIG: a URL the rule refuses; BC_ERR_LIMIT: a body over max;
 * BC_ERR_UNAVAILABLE: the transfer failed (err says why). A status other than 200
 * is returned, not an error. */
BC_WUR int bc_fetch_run(const struct bc_fetch *f, long *status, char **body, size_t *len, char *err,
                        size_t errlen);

#endif
