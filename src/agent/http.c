/* GET /healthz for bcd doctor: is the server reachable through the pinned TLS, and
 * what time does it say it is (its Date header). The body is not read beyond a bound. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "agent/agent.h"

#define MAX_BODY 4096
#define MAX_URL  2048

struct sink {
	size_t n;
	time_t date;
};

static size_t body_cb(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;

	(void)p;
	s->n += size * n;
	return s->n > MAX_BODY ? 0 : size * n;
}

static size_t header_cb(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	char line[128];

	if (len > 5 && len < sizeof(line) && strncasecmp(p, "Date:", 5) == 0) {
		memcpy(line, p + 5, len - 5);
		line[len - 5] = '\0';
		line[strcspn(line, "\r\n")] = '\0';
		s->date = curl_getdate(line, NULL);
	}
	return len;
}

static int set_opts(CURL *c, const struct bc_client_pins *pins, const char *url, struct sink *s,
                    char *cerr)
{
	/* the same trust as every JoinService call: the pinned CA, no redirects */
	int ok = bc_client_curl_pin(c, pins, url, cerr) == 0;

	ok &= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_WRITEDATA, s) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb) == CURLE_OK;
	ok &= curl_easy_setopt(c, CURLOPT_HEADERDATA, s) == CURLE_OK;
	return ok ? 0 : BC_ERR_INTERNAL;
}

int bcd_healthz(const struct bc_client_pins *pins, long *status, int64_t *date_ms,
                struct bcd_msg *m)
{
	struct sink s = {0, -1};
	char url[MAX_URL], cerr[CURL_ERROR_SIZE] = "";
	CURL *c = NULL;
	CURLcode cc;
	int rc = 0, n;

	*status = 0;
	*date_ms = 0;
	n = snprintf(url, sizeof(url), "%s/healthz", pins->server_url);
	if (n < 0 || (size_t)n >= sizeof(url))
		return BC_ERR_LIMIT;
	if ((c = curl_easy_init()) == NULL || set_opts(c, pins, url, &s, cerr) != 0) {
		bcd_say(m, "cannot start libcurl");
		rc = BC_ERR_INTERNAL;
		goto out;
	}
	if ((cc = curl_easy_perform(c)) != CURLE_OK &&
	    !(cc == CURLE_WRITE_ERROR && s.n > MAX_BODY)) {
		bcd_say(m, "GET %s: %s", url, cerr[0] ? cerr : curl_easy_strerror(cc));
		rc = BC_ERR_UNAVAILABLE;
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	if (s.date > 0)
		*date_ms = (int64_t)s.date * 1000;
out:
	curl_easy_cleanup(c);
	return rc;
}
