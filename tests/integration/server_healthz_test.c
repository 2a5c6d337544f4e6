/* /healthz answers GET and HEAD, and no other method (a probe has no business
 * writing), over loopback HTTP to an in-process control plane. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "bctest.h"

static struct bct_cp cp;

static size_t drop(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static long status_of(const char *method)
{
	char url[192];
	long status = 0;
	CURL *h = curl_easy_init();

	assert_non_null(h);
	snprintf(url, sizeof(url), "%s/healthz", cp.url);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drop);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	return status;
}

static void test_healthz_answers_get_and_head_only(void **state)
{
	static const char *const refused[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
	(void)state;

	assert_int_equal(status_of("GET"), 200);
	assert_int_equal(status_of("HEAD"), 200);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		assert_int_equal(status_of(refused[i]), 405);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_healthz_answers_get_and_head_only),
	};
	int rc;

	if (bct_engine_skip())
		return BCT_SKIP;
	if (bct_cp_start(&cp, NULL) != 0)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_cp_stop(&cp);
	return rc;
}
