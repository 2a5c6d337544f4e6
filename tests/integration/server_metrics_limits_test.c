/* GET /metrics on the main listener, as the spec bounds it: a key that fails there
 * counts against the client's address with the same limiter as /v1/ (ten failures a
 * minute, then 429 for /metrics and /v1/ alike), and the refusal series are bounded by
 * the attestors this server runs: a request naming any other attestor id counts under
 * attestor "(unknown)", never in a series of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bct_http.h"
#include "bctest.h"
#include "server/admin.h"

struct body {
	char buf[65536];
	size_t n;
};

/* GET path with key (NULL: none): the status, the body in *out. */
static long get(struct bct_cp *cp, const char *key, const char *path, struct body *out)
{
	char *text = NULL;
	long status = bct_http(cp, "GET", path, key, NULL, &text);

	assert_true(status > 0);
	memset(out, 0, sizeof(*out));
	if (text != NULL) {
		out->n = strlen(text) < sizeof(out->buf) - 1 ? strlen(text) : sizeof(out->buf) - 1;
		memcpy(out->buf, text, out->n);
		free(text);
	}
	return status;
}

static int key_tx(bc_tx *tx, void *arg)
{
	return bc_admin_create_api_key(tx, "root", "scrape", (char **)arg);
}

static int tenant_key_tx(bc_tx *tx, void *arg)
{
	return bc_admin_create_api_key(tx, "acme", "ops", (char **)arg);
}

/* The sample of series in a scrape, -1 when absent. */
static long long sample(const char *scrape, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = scrape; (p = strstr(p, series)) != NULL; p += n)
		if ((p == scrape || p[-1] == '\n') && p[n] == ' ')
			return atoll(p + n + 1);
	return -1;
}

static void test_unknown_attestors_share_one_series(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *key = NULL, id[64];
	struct bc_join_answer ans;

	assert_int_equal(bc_store_run(bct_store(cp), BC_TX_WRITE, key_tx, &key), 0);
	/* more distinct ids than the table has series (256) */
	for (int i = 0; i < 300; i++) {
		snprintf(id, sizeof(id), "made-up-%d", i);
		struct bct_join_opts jo = {.attestor = id};
		assert_int_equal(bct_join(cp, &jo, &ans), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(cp), "attestor-unknown");
	}
	/* a real reason after them still has its series */
	char *t = bct_token(cp, &(struct bct_token_opts){.ttl_ms = -1000}, NULL);
	struct bct_join_opts tj = {.token = t};
	assert_int_equal(bct_join(cp, &tj, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(cp), "token-expired");
	free(t);

	assert_int_equal(get(cp, key, "/metrics", &b), 200);
	assert_int_equal(
	    sample(b.buf,
	           "bc_join_refusals_total{attestor=\"(unknown)\",reason=\"attestor-unknown\"}"),
	    300);
	assert_int_equal(
	    sample(b.buf,
	           "bc_join_refusals_total{attestor=\"join-token\",reason=\"token-expired\"}"),
	    1);
	assert_null(strstr(b.buf, "made-up-"));
	free(key);
}

static void test_failed_keys_are_limited_as_on_v1(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *key = NULL, *acme = NULL;

	assert_int_equal(bc_store_run(bct_store(cp), BC_TX_WRITE, key_tx, &key), 0);
	assert_int_equal(bct_tenant(cp, "acme"), 0);
	assert_int_equal(bc_store_run(bct_store(cp), BC_TX_WRITE, tenant_key_tx, &acme), 0);
	assert_int_equal(get(cp, key, "/metrics", &b), 200);
	/* a good key of another tenant is no guess: 401, and not counted (else the tenth
	 * failure below would be answered 429) */
	assert_int_equal(get(cp, acme, "/metrics", &b), 401);
	/* ten failures a minute from this address: 401 each */
	for (int i = 0; i < 10; i++) {
		assert_int_equal(get(cp, i % 2 ? NULL : "bck_key_wrong", "/metrics", &b), 401);
		assert_non_null(strstr(b.buf, "unauthenticated"));
	}
	/* then 429 on /metrics, even with the right key, and on /v1/ */
	assert_int_equal(get(cp, key, "/metrics", &b), 429);
	assert_non_null(strstr(b.buf, "too many failed authentications"));
	assert_int_equal(get(cp, key, "/v1/whoami", &b), 429);
	free(acme);
	free(key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_unknown_attestors_share_one_series, bct_cp_setup,
	                                    bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_failed_keys_are_limited_as_on_v1, bct_cp_setup,
	                                    bct_cp_teardown),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
