/* libFuzzer: arbitrary bytes as an answer to the HTTP client (bc_httpc_read_reply), fed
 * in pieces whose sizes the first byte picks. An answer taken has a status of 200 to
 * 599, a head and a body within their bounds and a NUL after the body; a refusal says
 * why; nothing else is returned. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/httpc.h"

#define MAX 4096

struct mem {
	const uint8_t *p;
	size_t n, step;
};

static ssize_t mem_read(void *arg, char *p, size_t n)
{
	struct mem *m = arg;
	size_t k = n < m->n ? n : m->n;

	if (k > m->step)
		k = m->step;
	memcpy(p, m->p, k);
	m->p += k;
	m->n -= k;
	return (ssize_t)k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_httpc_resp r;
	struct mem m;
	struct bc_httpc_src src = {mem_read, &m};
	const char *why = NULL;
	int rc;

	if (size < 1)
		return 0;
	m = (struct mem){data + 1, size - 1, (size_t)(data[0] & 0x7f) + 1};
	rc = bc_httpc_read_reply(&src, MAX, data[0] >> 7, &r, &why);
	if (rc == 0 &&
	    (r.status < 200 || r.status > 599 || r.head == NULL ||
	     strlen(r.head) > BC_HTTPC_HEAD_MAX || r.len > MAX ||
	     (r.body != NULL && r.body[r.len] != '\0') || (r.body == NULL && r.len != 0)))
		abort();
	if (rc != 0 && (why == NULL || why[0] == '\0' || r.body != NULL))
		abort();
	if (rc != 0 && rc != BC_ERR_INVALID && rc != BC_ERR_LIMIT && rc != BC_ERR_UNAVAILABLE)
		abort();
	bc_httpc_resp_free(&r);
	return 0;
}
