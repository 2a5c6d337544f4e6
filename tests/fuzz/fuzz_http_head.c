/* libFuzzer: arbitrary bytes as an HTTP request head, then the query and a chunked body.
 * A head is refused with a 4xx and a named body, waits for more (0), or yields fields
 * that are C strings; the query splits into at most HTTP_MAX_QUERY pairs; the chunked
 * decoder never reports more bytes than it was given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_parse.h"

static void query(const char *q)
{
	const char *k[32], *v[32];
	char *copy;
	size_t n;

	if (q == NULL || (copy = strdup(q)) == NULL)
		return;
	if (http_parse_query(copy, k, v, 32, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (strlen(k[i]) + strlen(v[i]) > strlen(q))
				abort();
	free(copy);
}

static void chunked(const uint8_t *data, size_t size)
{
	struct http_chunked d;
	char *buf = malloc(size + 1);
	size_t n = size, rest;
	int r;

	if (buf == NULL)
		return;
	memset(&d, 0, sizeof(d));
	memcpy(buf, data, size);
	r = http_chunked_decode(&d, buf, &n, &rest);
	if (r >= 0 && n + rest > size)
		abort();
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_head h;
	const char *body = NULL;
	int status = 0, r;

	r = bc_http_parse_head((const char *)data, size, &h, &status, &body);
	if (r < 0 && (status < 400 || status > 599 || body == NULL))
		abort();
	if (r > 0) {
		if ((size_t)r > size || h.path[0] != '/' || strlen(h.method) == 0)
			abort();
		query(h.query);
		http_head_free(&h);
	}
	chunked(data, size);
	return 0;
}
