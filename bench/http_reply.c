/* The head of an answer, read strictly: picohttpparser splits it (phr_parse_response
 * refuses a malformed status line or header line); this file takes the framing and
 * Retry-After from its fields. */
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "bc/err.h"
#include "lib/picohttp.h"
#include "tls_client.h"

#define MAX_HEADERS     64
#define MAX_RETRY_AFTER 86400u

static int name_is(const struct phr_header *hd, const char *name)
{
	size_t n = strlen(name);

	return hd->name != NULL && hd->name_len == n && strncasecmp(hd->name, name, n) == 0;
}

/* A whole number of 1 to 19 digits, nothing else: 0 and *out, or -1. */
static int digits(const struct phr_header *hd, uint64_t *out)
{
	uint64_t v = 0;

	if (hd->value_len == 0 || hd->value_len > 19)
		return -1;
	for (size_t i = 0; i < hd->value_len; i++) {
		if (hd->value[i] < '0' || hd->value[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(hd->value[i] - '0');
	}
	*out = v;
	return 0;
}

static int fields(const struct phr_header *hd, size_t n, struct bench_reply_head *h,
                  const char **why)
{
	int lengths = 0;
	uint64_t v;

	for (size_t i = 0; i < n; i++) {
		/* a NULL name continues the previous line (obsolete folding): refused */
		if (hd[i].name == NULL) {
			*why = "a folded header line";
			return BC_ERR_INVALID;
		}
		if (name_is(&hd[i], "Transfer-Encoding")) {
			*why = "a Transfer-Encoding (the server frames answers by Content-Length)";
			return BC_ERR_INVALID;
		}
		if (name_is(&hd[i], "Content-Length")) {
			if (lengths++ > 0 || digits(&hd[i], &h->content_length) != 0) {
				*why = "a malformed or repeated Content-Length";
				return BC_ERR_INVALID;
			}
		}
		/* an HTTP date (which our server never sends) is not read: no wait */
		if (name_is(&hd[i], "Retry-After") && digits(&hd[i], &v) == 0)
			h->retry_after_s = v > MAX_RETRY_AFTER ? MAX_RETRY_AFTER : (unsigned)v;
	}
	if (lengths == 0) {
		*why = "no Content-Length";
		return BC_ERR_INVALID;
	}
	if (h->content_length > BC_CLIENT_MAX_RESPONSE) {
		*why = "a Content-Length past the client's bound";
		return BC_ERR_LIMIT;
	}
	return 1;
}

int bench_reply_head(const char *buf, size_t len, struct bench_reply_head *h, const char **why)
{
	struct phr_header hd[MAX_HEADERS];
	size_t n = MAX_HEADERS, msg_len;
	const char *msg;
	int minor, status, r;

	*h = (struct bench_reply_head){0};
	*why = "";
	r = phr_parse_response(buf, len < BENCH_REPLY_HEAD_MAX ? len : BENCH_REPLY_HEAD_MAX, &minor,
	                       &status, &msg, &msg_len, hd, &n, 0);
	if (r == -2 && len < BENCH_REPLY_HEAD_MAX)
		return 0;
	if (r == -2) {
		*why = "an answer head longer than the client's bound";
		return BC_ERR_LIMIT;
	}
	if (r < 0) {
		*why = "a malformed status line or header";
		return BC_ERR_INVALID;
	}
	if (status < 200 || status > 599) {
		*why = "a status outside 200 to 599";
		return BC_ERR_INVALID;
	}
	h->status = status;
	h->head_len = (size_t)r;
	return fields(hd, n, h, why);
}
