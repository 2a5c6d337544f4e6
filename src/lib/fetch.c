/* bc/fetch.h over libcurl. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bc/buf.h"
#include "bc/fetch.h"
#include "bc/net.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode init_rc = CURLE_FAILED_INIT;

static void init(void)
{
	init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct sink {
	bc_buf b;
	int over;
};

static size_t sink_write(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	int rc = bc_buf_put(&s->b, p, size * n);

	s->over |= rc == BC_ERR_LIMIT;
	return rc == 0 ? size * n : 0;
}

int bc_fetch_url_allowed(const char *url, enum bc_fetch_http http)
{
	CURLU *u;
	char *scheme = NULL, *host = NULL;
	int ok = 0;

	if (url == NULL || (u = curl_url()) == NULL)
		return 0;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		if (strcasecmp(scheme, "https") == 0)
			ok = 1;
		else if (strcasecmp(scheme, "http") == 0)
			ok = http == BC_FETCH_HTTP ||
			     (http == BC_FETCH_HTTP_LOOPBACK && bc_net_host_is_loopback(host));
	}
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ok;
}

static int setup(CURL *c, const struct bc_fetch *f, struct curl_slist *h, struct sink *s,
                 char *cerr)
{
	int ok = 1;

	ok &= curl_easy_setopt(c, CURLOPT_URL, f->url) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_PROXY, "") == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_TIMEOUT, f->timeout_s ? f->timeout_s : 10L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_WRITEDATA, s) == CURLE_OK;
	if (f->ca_file)
		ok &= curl_easy_setopt(c, CURLOPT_CAINFO, f->ca_file) == CURLE_OK;
	if (h)
		ok &= curl_easy_setopt(c, CURLOPT_HTTPHEADER, h) == CURLE_OK;
	if (f->method)
		ok &= curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, f->method) == CURLE_OK;
	return ok ? 0 : BC_ERR_INTERNAL;
}

int bc_fetch_run(const struct bc_fetch *f, long *status, char **body, size_t *len, char *err,
                 size_t errlen)
{
	char cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *h = NULL, *t;
	struct sink s = {.over = 0};
	CURL *c = NULL;
	CURLcode cc;
	int rc;

	*status = 0;
	*body = NULL;
	*len = 0;
	if (!bc_fetch_url_allowed(f->url, f->http)) {
		snprintf(err, errlen, "%s: only https (plain http only to loopback)", f->url);
		return BC_ERR_CONFIG;
	}
	pthread_once(&once, init);
	if (init_rc != CURLE_OK || (c = curl_easy_init()) == NULL)
		return BC_ERR_NOMEM;
	bc_buf_init(&s.b, f->max + 1);
	for (size_t i = 0; i < f->n_headers; i++) {
		if ((t = curl_slist_append(h, f->headers[i])) == NULL) {
			rc = BC_ERR_NOMEM;
			goto out;
		}
		h = t;
	}
	if ((rc = setup(c, f, h, &s, cerr)) != 0)
		goto out;
	if ((cc = curl_easy_perform(c)) != CURLE_OK) {
		rc = s.over ? BC_ERR_LIMIT : BC_ERR_UNAVAILABLE;
		snprintf(err, errlen, "%s: %s", f->url,
		         s.over    ? "answer too large"
		         : cerr[0] ? cerr
		                   : curl_easy_strerror(cc));
		goto out;
	}
	if (s.b.len > f->max) {
		rc = BC_ERR_LIMIT;
		snprintf(err, errlen, "%s: answer too large", f->url);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	if ((rc = bc_buf_put(&s.b, "", 1)) != 0)
		goto out;
	*body = (char *)bc_buf_steal(&s.b, len);
	(*len)--;
out:
	bc_buf_free(&s.b);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return rc;
}
