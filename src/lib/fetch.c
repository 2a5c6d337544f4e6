/* bc/fetch.h over bc/httpc.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/fetch.h"
#include "bc/httpc.h"
#include "bc/net.h"

#define CONNECT_TIMEOUT_MS 10000

int bc_fetch_url_allowed(const char *url, enum bc_fetch_http http)
{
	struct bc_httpc_url u;
	const char *why;

	if (bc_httpc_url_parse(url, &u, &why) != 0)
		return 0;
	if (u.tls)
		return 1;
	return http == BC_FETCH_HTTP ||
	       (http == BC_FETCH_HTTP_LOOPBACK && bc_net_host_is_loopback(u.host));
}

int bc_fetch_run(const struct bc_fetch *f, long *status, char **body, size_t *len, char *err,
                 size_t errlen)
{
	struct bc_httpc_req q = {.method = f->method,
	                         .url = f->url,
	                         .headers = f->headers,
	                         .n_headers = f->n_headers,
	                         .ca_file = f->ca_file,
	                         .connect_timeout_ms = CONNECT_TIMEOUT_MS,
	                         .timeout_ms = (int)(f->timeout_s ? f->timeout_s : 10) * 1000,
	                         .max = f->max};
	struct bc_httpc_resp r;
	char why[512];
	int rc;

	*status = 0;
	*body = NULL;
	*len = 0;
	if (!bc_fetch_url_allowed(f->url, f->http)) {
		snprintf(err, errlen, "%s: only https (plain http only to loopback)", f->url);
		return BC_ERR_CONFIG;
	}
	/* a PUT or POST without a body still says so (Content-Length: 0) */
	if (f->method != NULL && strcmp(f->method, "GET") != 0 && strcmp(f->method, "HEAD") != 0)
		q.body = "";
	if ((rc = bc_httpc_run(&q, &r, why, sizeof(why))) != 0) {
		snprintf(err, errlen, "%s: %s", f->url, why);
		return rc == BC_ERR_LIMIT || rc == BC_ERR_NOMEM ? rc : BC_ERR_UNAVAILABLE;
	}
	if (r.body == NULL && (r.body = calloc(1, 1)) == NULL) { /* HEAD, 204: no body */
		bc_httpc_resp_free(&r);
		return BC_ERR_NOMEM;
	}
	*status = r.status;
	*body = r.body;
	*len = r.len;
	r.body = NULL;
	bc_httpc_resp_free(&r);
	return 0;
}
