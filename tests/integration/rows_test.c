/* src/rows on each engine (BC_TEST_ENGINE): the typed reads and writes that the
 * admin API, the metrics, init and the attestors' join requests use, what each
 * returns when the row is missing, and the filtered lists' limits. The views' SQL
 * (the admin API's answers) is pinned by admin_api_test and the CLI tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/store.h"
#include "bctest.h"
#include "rows/api_keys.h"
#include "rows/join_requests.h"
#include "rows/leases.h"
#include "rows/nodes.h"
#include "rows/pools.h"
#include "rows/sites.h"
#include "rows/tenants.h"

#define HASH "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CSR1 "1111111111111111111111111111111111111111111111111111111111111111"
#define CSR2 "2222222222222222222222222222222222222222222222222222222222222222"

static struct bct_cp cp;

static int setup(void **state)
{
	(void)state;
	return bct_cp_start(&cp, NULL);
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	return 0;
}

/* Runs fn in a write transaction and asserts it returned 0. */
static void in_tx(bc_tx_fn fn)
{
	assert_int_equal(bc_store_run(bct_store(&cp), BC_TX_WRITE, fn, NULL), 0);
}

static int api_keys_tx(bc_tx *tx, void *arg)
{
	struct bc_api_key_auth k;
	int64_t changes = -1;
	bc_rows *r = NULL;

	(void)arg;
	assert_int_equal(bc_row_api_key_auth(tx, "key_none", &k), 0);
	assert_string_equal(k.tenant_id, "");
	assert_int_equal(bc_row_api_key_insert(tx, "key_a", "root", HASH, "a", "viewer", 1000), 0);
	assert_int_equal(bc_row_api_key_insert(tx, "key_a", "root", HASH, "a", "viewer", 1000),
	                 BC_ERR_CONFLICT);
	/* the store holds no role but the four (migration 010's CHECK) */
	assert_int_not_equal(bc_row_api_key_insert(tx, "key_b", "root", HASH, "b", "root", 1000),
	                     0);
	assert_int_equal(bc_row_api_key_auth(tx, "key_a", &k), 1);
	assert_string_equal(k.tenant_id, "root");
	assert_string_equal(k.secret_hash, HASH);
	assert_string_equal(k.role, "viewer");
	assert_false(k.revoked);
	assert_false(k.expires);
	assert_int_equal(k.last_used_at, 0);
	/* touched once per period: not again while the last use is newer than older_than */
	assert_int_equal(bc_row_api_key_touch(tx, "key_a", 5000, 4000), 0);
	assert_int_equal(bc_row_api_key_touch(tx, "key_a", 6000, 4000), 0);
	assert_int_equal(bc_row_api_key_auth(tx, "key_a", &k), 1);
	assert_int_equal(k.last_used_at, 5000);
	assert_int_equal(bc_row_api_key_set_expiry(tx, "key_a", 9000), 0);
	assert_int_equal(bc_row_api_key_revoke(tx, "other", "key_a", 7000, &changes), 0);
	assert_int_equal(changes, 0);
	assert_int_equal(bc_row_api_key_revoke(tx, "root", "key_a", 7000, &changes), 0);
	assert_int_equal(changes, 1);
	assert_int_equal(bc_row_api_key_revoke(tx, "root", "key_a", 8000, &changes), 0);
	assert_int_equal(changes, 0);
	assert_int_equal(bc_row_api_key_auth(tx, "key_a", &k), 1);
	assert_true(k.revoked);
	assert_true(k.expires);
	assert_int_equal(k.expires_at, 9000);
	/* the view never shows the hash */
	assert_int_equal(bc_row_api_keys_query(tx, "root", "key_a", &r), 0);
	assert_int_equal(bc_rows_next(r), 1);
	assert_int_equal(bc_rows_col(r, "secret_hash"), -1);
	assert_int_equal(bc_rows_int(r, 5), 7000); /* revoked_at */
	bc_rows_free(r);
	return 0;
}

static void test_api_keys(void **state)
{
	(void)state;
	in_tx(api_keys_tx);
}

static int pools_tx(bc_tx *tx, void *arg)
{
	char tenant[64];
	char *policy = NULL;

	(void)arg;
	assert_int_equal(bc_row_tenant_exists(tx, "root"), 1);
	assert_int_equal(bc_row_tenant_exists(tx, "tnt_none"), 0);
	assert_int_equal(bc_row_tenant_insert(tx, "tnt_b", "b", 1000), 0);
	assert_int_equal(bc_row_tenant_insert(tx, "tnt_c", "b", 1000), BC_ERR_CONFLICT);
	assert_int_equal(bc_row_pool_insert(tx, "pool_x", "tnt_b", "x", "{\"a\":1}", 1000), 0);
	assert_int_equal(bc_row_pool_insert(tx, "pool_y", "tnt_b", "x", "{}", 1000),
	                 BC_ERR_CONFLICT);
	assert_int_equal(bc_row_pool_in_tenant(tx, "tnt_b", "pool_x"), 1);
	assert_int_equal(bc_row_pool_in_tenant(tx, "root", "pool_x"), 0);
	assert_int_equal(bc_row_pool_lock(tx, "tnt_b", "pool_x"), 1);
	assert_int_equal(bc_row_pool_lock(tx, "root", "pool_x"), 0);
	assert_int_equal(bc_row_pool_set_policy(tx, "pool_x", "{\"b\":2}", 2000), 0);
	assert_int_equal(bc_row_pool_policy(tx, "pool_x", tenant, &policy), 1);
	assert_string_equal(tenant, "tnt_b");
	assert_string_equal(policy, "{\"b\":2}");
	free(policy);
	assert_int_equal(bc_row_pool_policy(tx, "pool_none", tenant, &policy), 0);
	assert_null(policy);
	assert_string_equal(tenant, "");
	assert_int_equal(bc_row_site_insert(tx, "site_s", "tnt_b", "s", 1000), 0);
	assert_int_equal(bc_row_site_in_tenant(tx, "tnt_b", "site_s"), 1);
	assert_int_equal(bc_row_site_in_tenant(tx, "root", "site_s"), 0);
	return 0;
}

static void test_pools_tenants_sites(void **state)
{
	(void)state;
	in_tx(pools_tx);
}

static int join_requests_tx(bc_tx *tx, void *arg)
{
	struct bc_join_request_row jr;
	struct bc_join_request_write w = {
	    .id = "jr_a",
	    .tenant_id = "root",
	    .pool_id = "",
	    .site_id = NULL,
	    .attestor = "tpm",
	    .request_key = "ek",
	    .csr_sha256 = CSR1,
	    .claims = "{}",
	    .detail = "{}",
	    .now_ms = 1000,
	    .expires_at = 5000,
	};
	int64_t n = -1, changes = -1;

	(void)arg;
	assert_int_equal(bc_row_join_request_lock(tx, "root", "tpm", "ek", "{}", &jr), 0);
	assert_string_equal(jr.id, "");
	assert_int_equal(bc_row_join_request_replace(tx, &w), 0);
	assert_int_equal(bc_row_join_request_lock(tx, "root", "tpm", "ek", "{}", &jr), 1);
	assert_string_equal(jr.id, "jr_a");
	assert_string_equal(jr.state, "pending");
	assert_string_equal(jr.csr_sha256, CSR1);
	assert_string_equal(jr.pool_id, ""); /* "" stored as NULL */
	assert_int_equal(jr.expires_at, 5000);
	assert_int_equal(jr.same_claims, 1);
	/* the claims it was made with, compared byte for byte */
	assert_int_equal(bc_row_join_request_lock(tx, "root", "tpm", "ek", "{ }", &jr), 1);
	assert_int_equal(jr.same_claims, 0);
	/* another tenant's request of the same key is another row, never this one */
	assert_int_equal(bc_row_join_request_lock(tx, "t2", "tpm", "ek", "{}", &jr), 0);
	w.id = "jr_t2";
	w.tenant_id = "t2";
	w.csr_sha256 = CSR2;
	assert_int_equal(bc_row_join_request_replace(tx, &w), 0);
	assert_int_equal(bc_row_join_request_lock(tx, "root", "tpm", "ek", "{}", &jr), 1);
	assert_string_equal(jr.id, "jr_a");
	assert_int_equal(bc_row_join_request_lock(tx, "t2", "tpm", "ek", "{}", &jr), 1);
	assert_string_equal(jr.id, "jr_t2");
	assert_string_equal(jr.tenant_id, "t2");
	assert_int_equal(bc_row_join_request_delete(tx, "t2", "jr_t2"), 0);
	w.tenant_id = "root";
	w.csr_sha256 = CSR1;
	assert_int_equal(bc_row_join_requests_pending(tx, &n), 0);
	assert_int_equal(n, 1);
	/* expired: no decision */
	assert_int_equal(
	    bc_row_join_request_decide(tx, "root", "jr_a", "approved", "api:k", 6000, &changes), 0);
	assert_int_equal(changes, 0);
	assert_int_equal(
	    bc_row_join_request_decide(tx, "root", "jr_a", "approved", "api:k", 2000, &changes), 0);
	assert_int_equal(changes, 1);
	assert_int_equal(bc_row_join_request_lock(tx, "root", "tpm", "ek", "{}", &jr), 1);
	assert_string_equal(jr.state, "approved");
	assert_string_equal(jr.csr_sha256, CSR1);
	assert_int_equal(bc_row_join_request_use(tx, "jr_a"), 0);
	assert_int_equal(bc_row_join_requests_pending(tx, &n), 0);
	assert_int_equal(n, 0);
	/* a new request of the same key replaces the used one */
	w.id = "jr_b";
	assert_int_equal(bc_row_join_request_replace(tx, &w), 0);
	assert_int_equal(bc_row_join_request_lock(tx, "root", "tpm", "ek", "{}", &jr), 1);
	assert_string_equal(jr.id, "jr_b");
	assert_int_equal(bc_row_join_request_delete(tx, "root", "jr_b"), 0);
	assert_int_equal(bc_row_join_request_lock(tx, "root", "tpm", "ek", "{}", &jr), 0);
	return 0;
}

static void test_join_requests(void **state)
{
	(void)state;
	assert_int_equal(bct_tenant(&cp, "t2"), 0);
	in_tx(join_requests_tx);
}

static int leases_tx(bc_tx *tx, void *arg)
{
	struct bc_lease_held *l = NULL;
	size_t n = 0;

	(void)arg;
	bc_param a[] = {BC_TEXT("site::boot/site_b"), BC_TEXT("node_b"), BC_INT(3), BC_INT(9000)};
	bc_param b[] = {BC_TEXT("site::boot/site_a"), BC_TEXT("node_a"), BC_INT(2), BC_INT(9000)};
	bc_param c[] = {BC_TEXT("site::boot/site_c"), BC_TEXT("node_c"), BC_INT(1), BC_INT(100)};
	bc_param d[] = {BC_TEXT("other"), BC_TEXT("node_d"), BC_INT(1), BC_INT(9000)};
	const char *ins = "INSERT INTO leases (name, holder, epoch, expires_at) "
	                  "VALUES ($1, $2, $3, $4)";
	assert_int_equal(bc_tx_exec(tx, ins, a, 4, NULL), 0);
	assert_int_equal(bc_tx_exec(tx, ins, b, 4, NULL), 0);
	assert_int_equal(bc_tx_exec(tx, ins, c, 4, NULL), 0);
	assert_int_equal(bc_tx_exec(tx, ins, d, 4, NULL), 0);
	assert_int_equal(bc_row_leases_held(tx, 1000, &l, &n), 0);
	assert_int_equal(n, 2); /* not the expired one, nor one of another name */
	assert_string_equal(l[0].name, "site::boot/site_a");
	assert_string_equal(l[0].holder, "node_a");
	assert_int_equal(l[0].epoch, 2);
	assert_string_equal(l[1].name, "site::boot/site_b");
	bc_row_leases_free(l, n);
	return 0;
}

static void test_leases_held(void **state)
{
	(void)state;
	in_tx(leases_tx);
}

static int nodes_tx(bc_tx *tx, void *arg)
{
	struct bc_row_where w;
	char state[16] = "x";
	bc_rows *r = NULL;

	(void)arg;
	assert_int_equal(bc_row_ping(tx), 0);
	assert_int_equal(bc_row_node_lock_state(tx, "root", "node_none", state), 0);
	assert_string_equal(state, "");
	assert_int_equal(bc_row_nodes_get(tx, "root", "node_none", &r), 0);
	assert_int_equal(bc_rows_next(r), 0);
	bc_rows_free(r);
	/* more filters than parameters: a bug, refused before any SQL */
	bc_row_where_init(&w, "SELECT 1 FROM nodes WHERE id = $1", BC_TEXT("x"));
	for (int i = 0; i < BC_ROW_WHERE_MAX; i++)
		bc_row_where_add(&w, "id <>", BC_TEXT("y"));
	assert_true(w.overflow);
	assert_int_equal(bc_row_where_query(tx, &w, &r), BC_ERR_LIMIT);
	assert_null(r);
	return 0;
}

static void test_nodes_missing_and_limits(void **state)
{
	(void)state;
	in_tx(nodes_tx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_api_keys, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pools_tenants_sites, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_join_requests, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_leases_held, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nodes_missing_and_limits, setup, teardown),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
