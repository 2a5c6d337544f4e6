#include "bct_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/httpc.h"
#include "bctest.h"

#define BODY_MAX (1024u * 1024)

long bct_http(const struct bct_cp *cp, const char *method, const char *path, const char *key,
              const char *json, char **body)
{
	char url[512], authz[256], err[256];
	const char *hdrs[2];
	struct bc_httpc_req q = {
	    .method = method, .url = url, .timeout_ms = 60000, .max = BODY_MAX};
	struct bc_httpc_resp r;
	long status = -1;

	if (body != NULL)
		*body = NULL;
	snprintf(url, sizeof(url), "%s%s", cp->url, path);
	if (key != NULL) {
		snprintf(authz, sizeof(authz), "Authorization: Bearer %s", key);
		hdrs[q.n_headers++] = authz;
	}
	if (json != NULL)
		hdrs[q.n_headers++] = "Content-Type: application/json";
	q.headers = hdrs;
	if (json != NULL) {
		q.body = json;
		q.len = strlen(json);
	} else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		q.body = ""; /* an empty body, said so */
	}
	if (bc_httpc_run(&q, &r, err, sizeof(err)) == 0) {
		status = r.status;
		if (body != NULL) {
			*body = r.body;
			r.body = NULL;
		}
	} else {
		fprintf(stderr, "bct: %s %s: %s\n", method, path, err);
	}
	bc_httpc_resp_free(&r);
	return status;
}
