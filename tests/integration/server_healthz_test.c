/* /healthz answers GET and HEAD, and no other method (a probe has no business
 * writing), over loopback HTTP to an in-process control plane. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "bct_http.h"
#include "bctest.h"

static struct bct_cp cp;

static long status_of(const char *method)
{
	long status = bct_http(&cp, method, "/healthz", NULL, NULL, NULL);

	assert_true(status > 0);
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
