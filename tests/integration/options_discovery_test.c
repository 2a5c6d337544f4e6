/* The discovery attestor's options taking effect, each against the setting that would
 * decide otherwise: approval = "always", hardware_key, pending_ttl_seconds and
 * max_age_seconds. The same control plane, boot server and ramdisk as
 * join_discovery_test.c (tests/support's bct_discovery); the boot server holds its lease for
 * 5 minutes, so that the test clock may move a minute without fencing it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/wire.h"
#include "bct_discovery.h"
#include "bctest.h"

#define MAC_A  "52:54:00:aa:00:01"
#define MAC_B  "52:54:00:aa:00:02"
#define MAC_U  "52:54:00:aa:00:0f"
#define UUID_A "6b1f3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e"

/* A control plane with the discovery options in toml, its site and a boot server a
 * holding the site's lease for 300 s. */
static void boot_server(struct bct_cp *on, const char *toml, char site[64], struct bct_site_node *a)
{
	struct bc_lease_answer l;

	assert_int_equal(bct_cp_start(on, toml), 0);
	assert_int_equal(bct_site(on, "root", "dc-opt", site), 0);
	bct_site_node(on, "root", site, a);
	assert_int_equal(bct_lease(on, a, BC_LEASE_ACQUIRE, 300, &l), 0);
	assert_true(l.held);
}

/* A commissioned machine (workflow, token, assertion) joins through on: its state, and
 * in jr its request id when it waits. */
static enum bc_join_state join_commissioned(struct bct_cp *on, struct bct_site_node *a,
                                            const char *site, const char *mac, const char *uuid,
                                            char jr[64])
{
	struct bc_join_answer ans;
	struct bct_vouched v;
	char wf[64];

	bct_commission(on, "root", site, mac, uuid, NULL, wf);
	bct_vouched(on, a, wf, mac, uuid, &v);
	assert_int_equal(bct_ramdisk_join(on, &v.r, &ans), 0);
	enum bc_join_state st = ans.state;
	snprintf(jr, 64, "%s", st == BC_JOIN_PENDING ? ans.request_id : "");
	bc_join_answer_free(&ans);
	bct_vouched_free(&v);
	return st;
}

/* A machine a workflow names joins at once under unknown-machines, and waits for an
 * operator under always. */
static void test_approval_always(void **state)
{
	struct bct_cp on;
	struct bct_site_node a;
	char site[64], jr[64];
	(void)state;

	boot_server(&on, "[attestors.discovery]\napproval = \"unknown-machines\"\n", site, &a);
	assert_int_equal(join_commissioned(&on, &a, site, MAC_A, NULL, jr), BC_JOIN_JOINED);
	bct_site_node_free(&a);
	bct_cp_stop(&on);

	boot_server(&on, "[attestors.discovery]\napproval = \"always\"\n", site, &a);
	assert_int_equal(join_commissioned(&on, &a, site, MAC_A, NULL, jr), BC_JOIN_PENDING);
	bc_param p[] = {BC_TEXT(jr)};
	assert_int_equal(bct_count(&on,
	                           "SELECT COUNT(*) FROM join_requests WHERE id = $1 AND "
	                           "attestor = 'discovery' AND state = 'pending'",
	                           p, 1),
	                 1);
	assert_int_equal(
	    bct_count(&on, "SELECT COUNT(*) FROM nodes WHERE role = 'ramdisk'", NULL, 0), 0);
	bct_site_node_free(&a);
	bct_cp_stop(&on);
}

/* hardware_key = "product-uuid" keys the request on the boot entry's UUID; "none"
 * (the default) on site and MAC. */
static void test_hardware_key(void **state)
{
	struct bct_cp on;
	struct bct_site_node a;
	char site[64], jr[64], want[160], *key;
	(void)state;

	for (int uuid_key = 0; uuid_key < 2; uuid_key++) {
		boot_server(&on,
		            uuid_key ? "[attestors.discovery]\napproval = \"always\"\n"
		                       "hardware_key = \"product-uuid\"\n"
		                     : "[attestors.discovery]\napproval = \"always\"\n"
		                       "hardware_key = \"none\"\n",
		            site, &a);
		assert_int_equal(join_commissioned(&on, &a, site, MAC_A, UUID_A, jr),
		                 BC_JOIN_PENDING);
		bc_param p[] = {BC_TEXT(jr)};
		key = bct_text(&on, "SELECT request_key FROM join_requests WHERE id = $1", p, 1);
		assert_non_null(key);
		if (uuid_key)
			snprintf(want, sizeof(want), "uuid:%s", UUID_A);
		else
			snprintf(want, sizeof(want), "%s/%s", site, MAC_A);
		assert_string_equal(key, want);
		free(key);
		bct_site_node_free(&a);
		bct_cp_stop(&on);
	}
}

/* pending_ttl_seconds = 60: within it a restarted ramdisk (another CSR) is
 * enrollment-csr; past it the request expired and the new CSR makes a new one. */
static void test_pending_ttl(void **state)
{
	struct bct_cp on;
	struct bct_site_node a;
	struct bc_join_answer ans;
	EVP_PKEY *k1 = NULL, *k2 = NULL;
	uint8_t *c1 = NULL, *c2 = NULL;
	size_t l1, l2, len;
	char site[64], jr[64];
	int rc;
	(void)state;

	boot_server(&on,
	            "[attestors.discovery]\napproval = \"unknown-machines\"\n"
	            "pending_ttl_seconds = 60\n",
	            site, &a);
	bct_key_csr(&k1, &c1, &l1);
	bct_key_csr(&k2, &c2, &l2);
	char *t = bct_fetch_token(&on, &a, "", MAC_U, &rc);
	assert_int_equal(rc, 0);
	struct bct_assertion as = bct_vouch(&a, MAC_U, NULL, NULL);
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {
	    .token = t, .att = att, .att_len = len, .mac = MAC_U, .csr = c1, .csr_len = l1};
	assert_int_equal(bct_ramdisk_join(&on, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	snprintf(jr, sizeof(jr), "%s", ans.request_id);
	bc_join_answer_free(&ans);
	r.csr = c2;
	r.csr_len = l2;
	assert_int_equal(bct_ramdisk_join(&on, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&on), "enrollment-csr");
	bc_clock_set_offset_ms(61 * 1000);
	assert_int_equal(bct_ramdisk_join(&on, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	assert_string_not_equal(ans.request_id, jr);
	bc_join_answer_free(&ans);
	bc_clock_set_offset_ms(0);
	free(att);
	free(t);
	free(c1);
	free(c2);
	EVP_PKEY_free(k1);
	EVP_PKEY_free(k2);
	bct_site_node_free(&a);
	bct_cp_stop(&on);
}

/* max_age_seconds = 10: an assertion 11 s old is discovery-expired (the default 15
 * minutes would admit it); one signed now joins. */
static void test_max_age_seconds(void **state)
{
	struct bct_cp on;
	struct bct_site_node a;
	struct bc_join_answer ans;
	char site[64];
	size_t len;
	int rc;
	(void)state;

	boot_server(&on, "[attestors.discovery]\nmax_age_seconds = 10\n", site, &a);
	char *t = bct_fetch_token(&on, &a, "", MAC_B, &rc);
	assert_int_equal(rc, 0);
	struct bct_assertion as = bct_vouch(&a, MAC_B, NULL, NULL);
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {.token = t, .att = att, .att_len = len, .mac = MAC_B};
	bc_clock_set_offset_ms(11 * 1000);
	assert_int_equal(bct_ramdisk_join(&on, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&on), "discovery-expired");
	free(att);
	as = bct_vouch(&a, MAC_B, NULL, NULL);
	att = bct_assertion_sign(&as, &len);
	r.att = att;
	r.att_len = len;
	assert_int_equal(bct_ramdisk_join(&on, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_join_answer_free(&ans);
	bc_clock_set_offset_ms(0);
	free(att);
	free(t);
	bct_site_node_free(&a);
	bct_cp_stop(&on);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_approval_always),
	    cmocka_unit_test(test_hardware_key),
	    cmocka_unit_test(test_pending_ttl),
	    cmocka_unit_test(test_max_age_seconds),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
