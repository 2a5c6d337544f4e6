/* One POST to JoinService over bc/httpc.h. TLS is verified against the pinned CA bundle
 * only (never the system store), redirects are not followed, the answer is read into a
 * bounded buffer (an answer past BC_CLIENT_MAX_RESPONSE is an error, never cut), and
 * https goes through the proxy of the environment as libcurl's did; plain http (loopback
 * only) never does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/clock.h"
#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/httpc.h"
#include "bc/wire.h"
#include "client/internal.h"

#define CONNECT_TIMEOUT_MS 10000
#define TOTAL_TIMEOUT_MS   60000
#define MAX_URL            2048

void bc_client_httpc_req(const struct bc_client_pins *pins, const char *url, struct bc_httpc_req *q)
{
	memset(q, 0, sizeof(*q));
	q->url = url;
	/* only the pinned CA: no system store beside it (bc_client_post refuses https
	 * without one) */
	q->ca_pem = pins->ca_bundle_pem != NULL ? pins->ca_bundle_pem : "";
	q->use_proxy = strncmp(url, "https://", 8) == 0;
	q->connect_timeout_ms = CONNECT_TIMEOUT_MS;
	q->timeout_ms = TOTAL_TIMEOUT_MS;
#ifdef BC_TESTING
	/* A test that moves the clock (BC_TEST_CLOCK_OFFSET_MS) moves it for the
	 * certificate checks too, so that a server certificate renewed in the test's
	 * future verifies as it would on that day. Never in a release build. */
	if (bc_clock_offset_ms() != 0)
		q->verify_time = (time_t)(bc_now_ms() / 1000);
#endif
}

static int make_url(const struct bc_client_pins *pins, const char *path, char url[static MAX_URL])
{
	int n;

	if (pins->server_url == NULL || path == NULL || path[0] != '/')
		return BC_ERR_INVALID;
	n = snprintf(url, MAX_URL, "%s%s", pins->server_url, path);
	return (n < 0 || n >= MAX_URL) ? BC_ERR_LIMIT : 0;
}

/* the longest wait a server may ask for: a bad or hostile header parks no agent */
#define MAX_RETRY_AFTER_S 3600

static _Thread_local unsigned last_retry_after_s;

unsigned bc_client_retry_after_s(void)
{
	return last_retry_after_s;
}

int64_t bc_client_retry_after_wait_ms(void)
{
	int64_t w = (int64_t)last_retry_after_s * 1000;
	uint32_t r = 0;

	if (w == 0 || bc_random(&r, sizeof(r)) != 0)
		return w;
	return w + (int64_t)(r % (uint32_t)(w / 4 + 1));
}

/* Retry-After of the answer: delta-seconds or an HTTP date. */
static unsigned retry_after_of(const struct bc_httpc_resp *r)
{
	char v[64];
	time_t t;
	long long s = 0;

	if (bc_httpc_header(r, "Retry-After", v, sizeof(v)) != 0)
		return 0;
	if (v[0] >= '0' && v[0] <= '9' && strspn(v, "0123456789") == strlen(v) && strlen(v) < 12)
		s = atoll(v);
	else if (bc_httpc_date(v, &t) == 0)
		s = (long long)t - (long long)time(NULL);
	if (s <= 0)
		return 0;
	return s > MAX_RETRY_AFTER_S ? MAX_RETRY_AFTER_S : (unsigned)s;
}

/* One line saying what went wrong, with our status for it. */
static int post_error(int rc, const char *url, const char *why, char *err, size_t errlen)
{
	switch (rc) {
	case BC_ERR_LIMIT:
		bc_errf(err, errlen, "POST %s: the answer is larger than %u bytes", url,
		        BC_CLIENT_MAX_RESPONSE);
		return rc;
	case BC_ERR_VERIFY:
		bc_errf(err, errlen,
		        "POST %s: the server's TLS certificate is not from the pinned CA "
		        "bundle: %s",
		        url, why);
		return rc;
	case BC_ERR_NOMEM: bc_errf(err, errlen, "POST %s: out of memory", url); return rc;
	default: bc_errf(err, errlen, "POST %s: %s", url, why); return BC_ERR_UNAVAILABLE;
	}
}

int bc_client_post(const struct bc_client_pins *pins, const char *path, const void *body,
                   size_t len, struct bc_client_reply *out, char *err, size_t errlen)
{
	static const char *const hdrs[] = {"Content-Type: " BC_WIRE_CONTENT_TYPE};
	struct bc_httpc_resp r = {0};
	struct bc_httpc_req q;
	char url[MAX_URL], why[512];
	int rc;

	memset(out, 0, sizeof(*out));
	last_retry_after_s = 0;
	bc_errf(err, errlen, "%s", "");
	if (pins == NULL || (body == NULL && len > 0))
		return BC_ERR_INVALID;
	if ((rc = make_url(pins, path, url)) != 0) {
		bc_errf(err, errlen, "POST: no server URL or a bad path");
		return rc;
	}
	if (strncmp(url, "https://", 8) == 0 && pins->ca_bundle_pem == NULL) {
		bc_errf(err, errlen, "POST %s: no pinned CA bundle to verify the server with", url);
		return BC_ERR_CONFIG;
	}
	bc_client_httpc_req(pins, url, &q);
	q.method = "POST";
	q.headers = hdrs;
	q.n_headers = 1;
	q.body = body != NULL ? body : "";
	q.len = len;
	q.max = BC_CLIENT_MAX_RESPONSE;
	if ((rc = bc_httpc_run(&q, &r, why, sizeof(why))) != 0)
		return post_error(rc, url, why, err, errlen);
	out->status = r.status;
	out->body = (uint8_t *)r.body;
	out->len = r.len;
	r.body = NULL;
	last_retry_after_s = out->retry_after_s = retry_after_of(&r);
	bc_httpc_resp_free(&r);
	if (out->body == NULL && (out->body = calloc(1, 1)) == NULL)
		return post_error(BC_ERR_NOMEM, url, "", err, errlen);
	return 0;
}
