#include "bct_http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bctest.h"

#define BODY_MAX (1024u * 1024)

struct body {
	char *buf;
	size_t n;
};

/* Keeps the first BODY_MAX bytes and drops the rest: a test reading an answer
 * never grows without bound on a server that misbehaves. */
static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb, take = n;

	if (b->n + take > BODY_MAX)
		take = BODY_MAX - b->n;
	if (take > 0) {
		char *nb = realloc(b->buf, b->n + take + 1);
		if (nb == NULL)
			return 0;
		b->buf = nb;
		memcpy(b->buf + b->n, p, take);
		b->n += take;
		b->buf[b->n] = 0;
	}
	return n;
}

long bct_http(const struct bct_cp *cp, const char *method, const char *path, const char *key,
              const char *json, char **body)
{
	char url[512], authz[256];
	struct curl_slist *h = NULL;
	struct body b = {NULL, 0};
	CURL *c = curl_easy_init();
	CURLcode rc;
	long status = -1;

	if (body != NULL)
		*body = NULL;
	if (c == NULL)
		return -1;
	snprintf(url, sizeof(url), "%s%s", cp->url, path);
	if (key != NULL) {
		snprintf(authz, sizeof(authz), "Authorization: Bearer %s", key);
		h = curl_slist_append(h, authz);
	}
	if (json != NULL)
		h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (json != NULL)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
	else if (strcmp(method, "POST") == 0)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	if ((rc = curl_easy_perform(c)) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		fprintf(stderr, "bct: %s %s: %s\n", method, path, curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (body != NULL)
		*body = b.buf;
	else
		free(b.buf);
	return status;
}
