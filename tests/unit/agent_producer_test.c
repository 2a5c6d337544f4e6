/* src/agent/producer.c: bcd's table of producers. Every attestor of the client's table
 * (bc_client_attestor) has one row and no other row exists; the attestors whose
 * credential is the sealed token have no producer, and one bcd join cannot produce
 * evidence for from the config is refused with a message naming bcd join's attestors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "agent/producer.h"
#include "bc/client.h"
#include "bc/wire.h"

static void test_rows(void **state)
{
	const struct bc_client_attestor *a;

	(void)state;
	for (size_t i = 0; (a = bc_client_attestor_at(i)) != NULL; i++) {
		const struct bcd_producer_kind *k = bcd_producer_kind(a->id);
		assert_non_null(k);
		assert_string_equal(k->id, a->id);
		/* a token attestor has nothing to produce; tpm and cloud-iid are made here */
		if (a->flags & BC_CA_TOKEN)
			assert_null(k->make);
		if (strcmp(a->id, BC_WIRE_ATTESTOR_TPM) == 0 ||
		    strcmp(a->id, BC_WIRE_ATTESTOR_CLOUD_IID) == 0)
			assert_non_null(k->make);
	}
	assert_null(bcd_producer_kind("nosuch"));
	assert_null(bcd_producer_kind(NULL));
}

static void test_token_attestors(void **state)
{
	struct bcd_producer *pr = (struct bcd_producer *)&pr;
	char err[256] = "";

	(void)state;
	assert_int_equal(bcd_producer_for(NULL, NULL, NULL, &pr, err, sizeof(err)), 0);
	assert_null(pr);
	assert_int_equal(
	    bcd_producer_for(NULL, BC_WIRE_ATTESTOR_JOIN_TOKEN, NULL, &pr, err, sizeof(err)), 0);
	assert_null(pr);
	assert_int_equal(
	    bcd_producer_for(NULL, BC_WIRE_ATTESTOR_PROVISIONED, NULL, &pr, err, sizeof(err)), 0);
	assert_null(pr);
}

static void test_refused(void **state)
{
	static const char *const ids[] = {"nosuch", BC_WIRE_ATTESTOR_X509POP,
	                                  BC_WIRE_ATTESTOR_DISCOVERY};
	struct bcd_producer *pr = NULL;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		err[0] = '\0';
		assert_int_equal(bcd_producer_for(NULL, ids[i], NULL, &pr, err, sizeof(err)),
		                 BC_ERR_UNSUPPORTED);
		assert_null(pr);
		assert_non_null(strstr(err, ids[i]));
		assert_non_null(
		    strstr(err, "choose one of join-token, tpm, x509pop, provisioned, cloud-iid"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows),
	    cmocka_unit_test(test_token_attestors),
	    cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
