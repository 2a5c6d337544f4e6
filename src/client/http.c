/* One POST to JoinService over libcurl, or over the transport a program set in its place
 * (bc_client_set_transport). TLS is verified against the pinned CA bundle
 * only (never the system store), redirects are not followed, and the answer is read
 * into a bounded buffer: the transfer is aborted as soon as it would pass the bound. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/wire.h"
#include "client/internal.h"

#define CONNECT_TIMEOUT_S 10L
#define TOTAL_TIMEOUT_S   60L
#define MAX_URL           2048

struct sink {
	bc_buf buf;
	int over; /* the answer passed BC_CLIENT_MAX_RESPONSE */
	int nomem;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t sink_write(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	int rc;

	/* A short count makes libcurl abort the transfer with CURLE_WRITE_ERROR. */
	if ((rc = bc_buf_put(&s->buf, p, len)) != 0) {
		s->over = rc == BC_ERR_LIMIT;
		s->nomem = rc != BC_ERR_LIMIT;
		return 0;
	}
	return len;
}

#ifdef BC_TESTING
#include <openssl/ssl.h>
/* A test that moves the clock (BC_TEST_CLOCK_OFFSET_MS) moves it for the certificate
 * checks too, so that a server certificate renewed in the test's future verifies as
 * it would on that day. Never in a release build. */
static CURLcode verify_at_test_time(CURL *c, void *ssl_ctx, void *arg)
{
	(void)c;
	(void)arg;
	X509_VERIFY_PARAM_set_time(SSL_CTX_get0_param(ssl_ctx), (time_t)(bc_now_ms() / 1000));
	return CURLE_OK;
}
#endif

int bc_client_curl_pin(void *curl, const struct bc_client_pins *pins, const char *url, char *cerr)
{
	CURL *c = curl;
	struct curl_blob ca;
	int ok = 1;

	ok &= curl_easy_setopt(c, CURLOPT_URL, url) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr) == CURLE_OK;
	/* Only the pinned CA: no compiled-in CA file or directory next to the blob. */
	ok &= curl_easy_setopt(c, CURLOPT_CAINFO, NULL) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_CAPATH, NULL) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) == CURLE_OK;
	if (pins->ca_bundle_pem != NULL) {
		ca.data = pins->ca_bundle_pem;
		ca.len = strlen(pins->ca_bundle_pem);
		ca.flags = CURL_BLOB_COPY;
		ok &= curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca) == CURLE_OK;
	}
#ifdef BC_TESTING
	if (bc_clock_offset_ms() != 0 && strncmp(url, "https://", 8) == 0)
		ok &=
		    curl_easy_setopt(c, CURLOPT_SSL_CTX_FUNCTION, verify_at_test_time) == CURLE_OK;
#endif
	/* Plain http is loopback only (the pins refuse anything else): never send it
	 * through a proxy from the environment. */
	if (strncmp(url, "http://", 7) == 0)
		ok &= curl_easy_setopt(c, CURLOPT_PROXY, "") == CURLE_OK;
	return ok ? 0 : BC_ERR_INTERNAL;
}

static int set_opts(CURL *c, const struct bc_client_pins *pins, const char *url,
                    struct curl_slist *hdrs, const void *body, size_t len, struct sink *s,
                    char *cerr)
{
	int ok = bc_client_curl_pin(c, pins, url, cerr) == 0;

	ok &= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_TIMEOUT, TOTAL_TIMEOUT_S) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)BC_CLIENT_MAX_RESPONSE) ==
	      CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_POST, 1L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_POSTFIELDS, body) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_WRITEDATA, s) == CURLE_OK;
	return ok ? 0 : BC_ERR_INTERNAL;
}

/* One line saying what went wrong, and our status for it. */
static int transfer_error(CURL *c, CURLcode cc, const struct sink *s, const char *url,
                          const char *cerr, char *err, size_t errlen)
{
	long oserr = 0;

	if (s->over || cc == CURLE_FILESIZE_EXCEEDED) {
		bc_client_errf(err, errlen, "POST %s: the answer is larger than %u bytes", url,
		               BC_CLIENT_MAX_RESPONSE);
		return BC_ERR_LIMIT;
	}
	if (s->nomem) {
		bc_client_errf(err, errlen, "POST %s: out of memory", url);
		return BC_ERR_NOMEM;
	}
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		if (curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &oserr) == CURLE_OK &&
		    oserr == ECONNREFUSED)
			bc_client_errf(err, errlen, "POST %s: connection refused", url);
		else
			bc_client_errf(err, errlen, "POST %s: cannot connect: %s", url, cerr);
		return BC_ERR_UNAVAILABLE;
	case CURLE_COULDNT_RESOLVE_HOST:
		bc_client_errf(err, errlen, "POST %s: cannot resolve the host name", url);
		return BC_ERR_UNAVAILABLE;
	case CURLE_OPERATION_TIMEDOUT:
		bc_client_errf(err, errlen, "POST %s: timed out (%s)", url, cerr);
		return BC_ERR_UNAVAILABLE;
	case CURLE_PEER_FAILED_VERIFICATION:
		bc_client_errf(err, errlen,
		               "POST %s: the server's TLS certificate is not from the "
		               "pinned CA bundle: %s",
		               url, cerr);
		return BC_ERR_VERIFY;
	case CURLE_SSL_CONNECT_ERROR:
		bc_client_errf(err, errlen, "POST %s: TLS handshake failed: %s", url, cerr);
		return BC_ERR_UNAVAILABLE;
	default:
		bc_client_errf(err, errlen, "POST %s: %s", url,
		               cerr[0] != '\0' ? cerr : curl_easy_strerror(cc));
		return BC_ERR_UNAVAILABLE;
	}
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

/* Retry-After of the answer (seconds or an HTTP date; libcurl reads both). */
static unsigned retry_after_of(CURL *c)
{
	curl_off_t ra = 0;

	if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK || ra <= 0)
		return 0;
	return ra > MAX_RETRY_AFTER_S ? MAX_RETRY_AFTER_S : (unsigned)ra;
}

/* the process's transport, when one replaced libcurl (bc_client_set_transport) */
static struct bc_client_transport transport;

void bc_client_set_transport(const struct bc_client_transport *t)
{
	transport = t != NULL ? *t : (struct bc_client_transport){NULL, NULL};
}

/* The POST through the transport set: its answer bounded and its Retry-After capped as
 * libcurl's are, whatever the transport says. */
static int transport_post(const struct bc_client_pins *pins, const char *url, const void *body,
                          size_t len, struct bc_client_reply *out, char *err, size_t errlen)
{
	struct bc_client_post_req req = {.pins = pins, .url = url, .body = body, .len = len};
	int rc = transport.post(transport.arg, &req, out, err, errlen);

	if (rc == 0 && out->len > BC_CLIENT_MAX_RESPONSE) {
		bc_client_errf(err, errlen, "POST %s: the answer is larger than %u bytes", url,
		               BC_CLIENT_MAX_RESPONSE);
		rc = BC_ERR_LIMIT;
	}
	if (rc != 0) {
		free(out->body);
		memset(out, 0, sizeof(*out));
		return rc;
	}
	if (out->retry_after_s > MAX_RETRY_AFTER_S)
		out->retry_after_s = MAX_RETRY_AFTER_S;
	last_retry_after_s = out->retry_after_s;
	return 0;
}

int bc_client_post(const struct bc_client_pins *pins, const char *path, const void *body,
                   size_t len, struct bc_client_reply *out, char *err, size_t errlen)
{
	struct sink s = {.over = 0, .nomem = 0};
	struct curl_slist *hdrs = NULL, *h;
	char url[MAX_URL], cerr[CURL_ERROR_SIZE] = "";
	CURL *c = NULL;
	CURLcode cc;
	int rc;

	memset(out, 0, sizeof(*out));
	last_retry_after_s = 0;
	bc_buf_init(&s.buf, BC_CLIENT_MAX_RESPONSE);
	bc_client_errf(err, errlen, "%s", "");
	if (pins == NULL || (body == NULL && len > 0)) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = make_url(pins, path, url)) != 0) {
		bc_client_errf(err, errlen, "POST: no server URL or a bad path");
		goto out;
	}
	/* Without a pinned CA, libcurl could fall back to the system store. */
	if (strncmp(url, "https://", 8) == 0 && pins->ca_bundle_pem == NULL) {
		bc_client_errf(err, errlen,
		               "POST %s: no pinned CA bundle to verify the server with", url);
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if (transport.post != NULL) {
		rc = transport_post(pins, url, body, len, out, err, errlen);
		goto out;
	}
	if (pthread_once(&curl_once, curl_init) != 0 || curl_init_rc != CURLE_OK ||
	    (c = curl_easy_init()) == NULL) {
		bc_client_errf(err, errlen, "POST %s: cannot start libcurl", url);
		rc = BC_ERR_INTERNAL;
		goto out;
	}
	/* "Expect:" keeps libcurl from waiting for a 100-continue on larger bodies. */
	if ((hdrs = curl_slist_append(NULL, "Content-Type: " BC_WIRE_CONTENT_TYPE)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((h = curl_slist_append(hdrs, "Expect:")) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	hdrs = h;
	if ((rc = set_opts(c, pins, url, hdrs, body == NULL ? "" : body, len, &s, cerr)) != 0) {
		bc_client_errf(err, errlen, "POST %s: cannot set up libcurl", url);
		goto out;
	}
	if ((cc = curl_easy_perform(c)) != CURLE_OK) {
		rc = transfer_error(c, cc, &s, url, cerr, err, errlen);
		goto out;
	}
	if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status) != CURLE_OK) {
		rc = BC_ERR_INTERNAL;
		goto out;
	}
	last_retry_after_s = out->retry_after_s = retry_after_of(c);
	if ((out->body = bc_buf_steal(&s.buf, &out->len)) == NULL) {
		out->len = 0;
		rc = BC_ERR_NOMEM;
		goto out;
	}
	rc = 0;
out:
	if (rc == BC_ERR_NOMEM)
		bc_client_errf(err, errlen, "POST: out of memory");
	bc_buf_free(&s.buf);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return rc;
}
