/* [attestors.x509pop] in server.toml (src/attest/x509pop.c): the durations in seconds
 * (grace_seconds, window_seconds), their former millisecond names read with a warning,
 * each mistake an error naming the key and what is allowed, and the settings in the
 * attestor's own context, not in a global. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "bct_config.h"

#define TABLE "attestors.x509pop"

static const struct bct_config K = {.attestor = bc_attestor_x509pop, .table = TABLE};

static void loads(const char *text)
{
	bct_config_loads(&K, text);
}

/* Refused with exactly the error want. */
static void refused(const char *text, const char *want)
{
	bct_config_refused_exact(&K, text, want);
}

static void test_good_tables(void **state)
{
	(void)state;
	loads("");
	loads("[" TABLE "]\n");
	loads("[" TABLE "]\ngrace_seconds = 0\nwindow_seconds = 600\nreplay_cache_size = 0\n");
	loads("[" TABLE "]\ngrace_seconds = 7776000\nwindow_seconds = 1\n");
}

static void test_each_mistake(void **state)
{
	(void)state;
	refused("[" TABLE "]\ncolour = 1\n",
	        "[" TABLE "] colour: unknown key (known: grace_seconds, window_seconds, "
	        "replay_cache_size)");
	refused("[" TABLE "]\n[" TABLE ".more]\n",
	        "[" TABLE "] more: unknown table (known: grace_seconds, window_seconds, "
	        "replay_cache_size)");
	refused("[" TABLE "]\nwindow_seconds = \"30\"\n",
	        "[" TABLE "] window_seconds: expected 1 to 600 (seconds)");
	refused("[" TABLE "]\nwindow_seconds = 0\n",
	        "[" TABLE "] window_seconds: expected 1 to 600 (seconds)");
	refused("[" TABLE "]\ngrace_seconds = 7776001\n",
	        "[" TABLE "] grace_seconds: expected 0 to 7776000 (seconds)");
	refused("[" TABLE "]\nreplay_cache_size = -1\n",
	        "[" TABLE "] replay_cache_size: expected an integer from 0 to 1000000");
}

static void test_old_names(void **state)
{
	struct bc_attestor a = *bc_attestor_x509pop();
	struct bct_capture c;
	char err[512];

	(void)state;
	assert_int_equal(
	    bct_configure_logged(&K, &a, "[" TABLE "]\ngrace_ms = 604800000\nwindow_ms = 1500\n",
	                         err, sizeof(err), &c),
	    0);
	a.destroy(&a);
	if (strstr(c.text, "grace_ms is deprecated: write grace_seconds instead") == NULL ||
	    strstr(c.text, "window_ms is deprecated: write window_seconds instead") == NULL)
		fail_msg("no warning naming the new keys: %s", c.text);
	/* the old names keep their old bounds, in milliseconds */
	refused("[" TABLE "]\nwindow_ms = 999\n",
	        "[" TABLE "] window_ms: expected an integer from 1000 to 600000");
	refused("[" TABLE "]\ngrace_ms = 7776000001\n",
	        "[" TABLE "] grace_ms: expected an integer from 0 to 7776000000");
	refused("[" TABLE "]\nwindow_ms = 1500\nwindow_seconds = 2\n",
	        "[" TABLE "] window_ms: set only window_seconds (window_ms is its former name)");
}

/* Two attestors configured from one code: each has its own settings and cache, and
 * configuring one again leaves the other alone. */
static void test_state_in_context(void **state)
{
	struct bc_attestor a = *bc_attestor_x509pop(), b = *bc_attestor_x509pop();
	char err[512];
	void *b_ctx;

	(void)state;
	assert_null(a.ctx);
	assert_int_equal(
	    bct_configure(&K, &a, "[" TABLE "]\nwindow_seconds = 5\n", err, sizeof(err)), 0);
	assert_int_equal(bct_configure(&K, &b, "", err, sizeof(err)), 0);
	assert_non_null(a.ctx);
	assert_non_null(b.ctx);
	assert_ptr_not_equal(a.ctx, b.ctx);
	b_ctx = b.ctx;
	assert_int_equal(
	    bct_configure(&K, &a, "[" TABLE "]\nwindow_seconds = 9\n", err, sizeof(err)), 0);
	assert_ptr_equal(b.ctx, b_ctx);
	/* a refused table leaves the context that was there */
	void *a_ctx = a.ctx;
	assert_int_equal(
	    bct_configure(&K, &a, "[" TABLE "]\nwindow_seconds = 0\n", err, sizeof(err)),
	    BC_ERR_CONFIG);
	assert_ptr_equal(a.ctx, a_ctx);
	a.destroy(&a);
	b.destroy(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_tables),
	    cmocka_unit_test(test_each_mistake),
	    cmocka_unit_test(test_old_names),
	    cmocka_unit_test(test_state_in_context),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
