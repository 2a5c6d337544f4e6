/* The rows JoinService uses (src/rows: nodes, certs, bindings, tokens, inventory,
 * workflows, uses) on SQLite: each query finds what was written, reports none as 0,
 * and turns a unique violation into BC_ERR_CONFLICT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bc/store.h"
#include "rows/bindings.h"
#include "rows/certs.h"
#include "rows/inventory.h"
#include "rows/nodes.h"
#include "rows/tokens.h"
#include "rows/uses.h"
#include "rows/workflows.h"

struct fx {
	char dir[64];
	char url[128];
	bc_store *s;
	bc_tx *tx;
};

static const uint8_t der_a[] = {0x30, 0x03, 0x02, 0x01, 0x01};
static const uint8_t der_b[] = {0x30, 0x03, 0x02, 0x01, 0x02};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	snprintf(f->dir, sizeof(f->dir), "/tmp/bc_rows_XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->url, sizeof(f->url), "sqlite:%s/bc.db", f->dir);
	assert_int_equal(bc_store_open(f->url, &f->s, err, sizeof(err)), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &f->tx), 0);
	assert_int_equal(
	    bc_tx_exec(f->tx, "INSERT INTO tenants (id, name, created_at) VALUES ('t1', 't1', 1)",
	               NULL, 0, NULL),
	    0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char path[160];

	bc_tx_rollback(f->tx);
	bc_store_close(f->s);
	snprintf(path, sizeof(path), "%s/bc.db", f->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bc.db-wal", f->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bc.db-shm", f->dir);
	unlink(path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static const char *const macs[] = {"aa:bb:cc:dd:ee:ff"};
static const struct bc_claims claims = {
    .macs = macs, .n_macs = 1, .product_uuid = "u", .serial = "s", .hostname = "h", .arch = "x"};

static struct bc_node_write node(const char *id, const char *hwkey)
{
	return (struct bc_node_write){.id = id,
	                              .tenant_id = "t1",
	                              .pool_id = "",
	                              .site_id = "",
	                              .role = "node",
	                              .hardware_key = hwkey,
	                              .claims = &claims,
	                              .agent_version = "1",
	                              .attestor = "join-token",
	                              .now_ms = 1000};
}

static void test_nodes(void **state)
{
	struct fx *f = *state;
	struct bc_node_write a = node("node_a", "uuid:1"), b = node("node_b", "uuid:1");
	struct bc_node_row r;

	assert_int_equal(bc_row_node_insert(f->tx, &a), 0);
	/* the hardware key is one node's */
	assert_int_equal(bc_row_node_insert(f->tx, &b), BC_ERR_CONFLICT);
	assert_int_equal(bc_row_node_get(f->tx, BC_NODE_BY_ID, "node_a", &r), 1);
	assert_string_equal(r.tenant_id, "t1");
	assert_string_equal(r.pool_id, "");
	assert_string_equal(r.role, "node");
	assert_string_equal(r.state, "adopted");
	assert_true(r.generation == 1);
	assert_int_equal(bc_row_node_get(f->tx, BC_NODE_BY_HARDWARE_KEY, "uuid:1", &r), 1);
	assert_string_equal(r.id, "node_a");
	assert_int_equal(bc_row_node_get(f->tx, BC_NODE_BY_ID, "node_b", &r), 0);
	assert_string_equal(r.id, "");
	assert_int_equal(bc_row_node_get(f->tx, (enum bc_node_by)9, "node_a", &r), BC_ERR_INVALID);
}

static void test_certs_and_reclaim(void **state)
{
	struct fx *f = *state;
	struct bc_node_write a = node("node_a", "");
	const char *stmts[] = {"urn:bc:tpm-ak:sha256:00"};
	struct bc_cert_write c = {.serial = "01",
	                          .node_id = "node_a",
	                          .generation = 1,
	                          .der = der_a,
	                          .der_len = sizeof(der_a),
	                          .not_before = 1000,
	                          .not_after = 5000,
	                          .statements = stmts,
	                          .n_statements = 1};
	struct bc_cert_row r;
	int64_t gen = 0;
	char *s = NULL;

	assert_int_equal(bc_row_node_insert(f->tx, &a), 0);
	assert_int_equal(bc_row_cert_insert(f->tx, &c), 0);
	assert_int_equal(bc_row_cert_insert(f->tx, &c), BC_ERR_CONFLICT);
	assert_int_equal(bc_tx_query_text(f->tx, "SELECT statements FROM node_certs", NULL, 0, &s),
	                 0);
	assert_string_equal(s, "[\"urn:bc:tpm-ak:sha256:00\"]");
	free(s);
	assert_int_equal(bc_row_cert_find(f->tx, "node_a", der_a, sizeof(der_a), &r), 1);
	assert_string_equal(r.serial, "01");
	assert_true(r.generation == 1 && r.not_after == 5000 && !r.revoked);
	assert_string_equal(r.node.id, "node_a");
	assert_true(r.node.generation == 1);
	/* other bytes, or another node's id: not this certificate */
	assert_int_equal(bc_row_cert_find(f->tx, "node_a", der_b, sizeof(der_b), &r), 0);
	assert_int_equal(bc_row_cert_find(f->tx, "node_b", der_a, sizeof(der_a), &r), 0);

	a.now_ms = 2000;
	a.hardware_key = "uuid:2";
	assert_int_equal(bc_row_node_reclaim(f->tx, &a, &gen), 0);
	assert_true(gen == 2);
	assert_int_equal(bc_row_cert_find(f->tx, "node_a", der_a, sizeof(der_a), &r), 1);
	assert_true(r.revoked && r.revoked_at == 2000);
	assert_true(r.generation == 1 && r.node.generation == 2);
	struct bc_node_row n;
	assert_int_equal(bc_row_node_get(f->tx, BC_NODE_BY_HARDWARE_KEY, "uuid:2", &n), 1);
	/* nothing left to revoke */
	assert_int_equal(bc_row_cert_revoke_all(f->tx, "node_a", 3000, &gen), 0);
	assert_true(gen == 0);
}

static void test_bindings_uses_tokens(void **state)
{
	struct fx *f = *state;
	struct bc_node_write a = node("node_a", "");
	struct bc_binding_row b;
	struct bc_token_row t;
	char *expect = (char *)1;
	int allow = 1;

	assert_int_equal(bc_row_node_insert(f->tx, &a), 0);
	assert_int_equal(bc_row_binding_get(f->tx, "tpm-ek", "k", &b), 0);
	assert_int_equal(bc_row_binding_insert(f->tx, "tpm-ek", "k", "node_a", 7), 0);
	assert_int_equal(bc_row_binding_insert(f->tx, "tpm-ek", "k", "node_a", 8), BC_ERR_CONFLICT);
	assert_int_equal(bc_row_binding_get(f->tx, "tpm-ek", "k", &b), 1);
	assert_string_equal(b.node_id, "node_a");
	assert_string_equal(b.kind, "tpm-ek");
	assert_true(b.created_at == 7);

	assert_int_equal(bc_row_use_insert(f->tx, "x509pop", "ab", 10, 5), 0);
	assert_int_equal(bc_row_use_insert(f->tx, "x509pop", "ab", 10, 6), BC_ERR_CONFLICT);
	assert_int_equal(bc_row_use_insert(f->tx, "other", "ab", 10, 6), 0);

	assert_int_equal(bc_row_token_lock(f->tx, "tok_x", &t), 0);
	assert_int_equal(bc_row_token_expect(f->tx, "tok_x", &expect, &allow), 0);
	assert_null(expect);
	assert_int_equal(allow, 0);
	assert_int_equal(
	    bc_tx_exec(
	        f->tx,
	        "INSERT INTO join_tokens (id, tenant_id, role, secret_hash, uses_left, "
	        "uses_total, expires_at, revoked_at, expect, allow_reclaim, created_at) "
	        "VALUES ('tok_x', 't1', 'node', 'h', 1, 1, 9, 3, '{\"serial\":\"s\"}', 1, 1)",
	        NULL, 0, NULL),
	    0);
	assert_int_equal(bc_row_token_lock(f->tx, "tok_x", &t), 1);
	assert_string_equal(t.secret_hash, "h");
	assert_string_equal(t.pool_id, "");
	assert_true(t.uses_left == 1 && t.expires_at == 9 && t.revoked);
	assert_int_equal(bc_row_token_expect(f->tx, "tok_x", &expect, &allow), 1);
	assert_string_equal(expect, "{\"serial\":\"s\"}");
	assert_int_equal(allow, 1);
	free(expect);
	assert_int_equal(bc_row_token_consume(f->tx, "tok_x", 4), 0);
	/* no use left: a caller that checked first never sees this */
	assert_int_equal(bc_row_token_consume(f->tx, "tok_x", 5), BC_ERR_INTERNAL);
}

static void test_token_insert_inventory_workflows(void **state)
{
	struct fx *f = *state;
	struct bc_node_write a = node("node_a", "");
	struct bc_token_row t;
	struct bc_workflow_row w;
	char uuid[BC_ID_MAX], id[BC_ID_MAX];
	static const char *const odd_macs[] = {"AA-BB-CC-DD-EE-0F", "not a mac"};
	struct bc_claims c = {.macs = odd_macs,
	                      .n_macs = 2,
	                      .product_uuid = "6B1D0C3E-AAAA-4000-8000-00000000D001",
	                      .serial = "s",
	                      .hostname = "h",
	                      .arch = "x"};
	char *s = NULL;

	assert_int_equal(bc_row_node_insert(f->tx, &a), 0);
	struct bc_token_write tw = {.id = "tok_p",
	                            .tenant_id = "t1",
	                            .role = "provisioned",
	                            .secret_hash = "h",
	                            .uses = 1,
	                            .expires_at = 9,
	                            .workflow_id = "wf_1",
	                            .node_id = "node_a",
	                            .now_ms = 1};
	assert_int_equal(bc_row_token_insert(f->tx, &tw), 0);
	assert_int_equal(bc_row_token_insert(f->tx, &tw), BC_ERR_CONFLICT);
	assert_int_equal(bc_row_token_lock(f->tx, "tok_p", &t), 1);
	assert_string_equal(t.role, "provisioned");
	assert_string_equal(t.workflow_id, "wf_1");
	assert_string_equal(t.node_id, "node_a");
	assert_string_equal(t.pool_id, "");
	assert_true(t.uses_left == 1 && !t.revoked);

	/* inventory: none, then the newest of two; MACs and UUID canonical where they can be */
	assert_int_equal(bc_row_inventory_newest_uuid(f->tx, "node_a", uuid), 0);
	assert_int_equal(bc_row_inventory_insert(f->tx, "node_a", &claims, 10, 1), 0);
	assert_int_equal(bc_row_inventory_insert(f->tx, "node_a", &c, 20, 1), 0);
	assert_int_equal(bc_row_inventory_newest_uuid(f->tx, "node_a", uuid), 1);
	assert_string_equal(uuid, "6b1d0c3e-aaaa-4000-8000-00000000d001");
	/* the same millisecond again replaces the record */
	assert_int_equal(bc_row_inventory_insert(f->tx, "node_a", &claims, 20, 1), 0);
	assert_int_equal(bc_row_inventory_newest_uuid(f->tx, "node_a", uuid), 1);
	assert_string_equal(uuid, "u");
	assert_int_equal(bc_row_inventory_insert(f->tx, "node_a", &c, 30, 1), 0);
	assert_int_equal(
	    bc_tx_query_text(f->tx, "SELECT data FROM inventory WHERE taken_at = 30", NULL, 0, &s),
	    0);
	assert_non_null(strstr(s, "\"macs\":[\"aa:bb:cc:dd:ee:0f\",\"not a mac\"]"));
	free(s);

	/* the newest BC_ROW_INVENTORY_KEEP records are kept */
	for (int64_t at = 100; at < 100 + BC_ROW_INVENTORY_KEEP + 5; at++)
		assert_int_equal(bc_row_inventory_insert(f->tx, "node_a", &c, at, 1), 0);
	int64_t kept = 0, oldest = 0;
	assert_int_equal(bc_tx_query_int(f->tx, "SELECT COUNT(*) FROM inventory", NULL, 0, &kept),
	                 0);
	assert_int_equal(
	    bc_tx_query_int(f->tx, "SELECT MIN(taken_at) FROM inventory", NULL, 0, &oldest), 0);
	assert_true(kept == BC_ROW_INVENTORY_KEEP);
	assert_true(oldest == 105);
	/* without prune (a node's first record) nothing older goes */
	assert_int_equal(bc_row_inventory_insert(f->tx, "node_a", &c, 1000, 0), 0);
	assert_int_equal(bc_tx_query_int(f->tx, "SELECT COUNT(*) FROM inventory", NULL, 0, &kept),
	                 0);
	assert_true(kept == BC_ROW_INVENTORY_KEEP + 1);

	/* workflows */
	assert_int_equal(bc_row_workflow_running_for(f->tx, "node_a", "deploy", id), 0);
	assert_int_equal(bc_row_workflow_insert(f->tx, "wf_1", "t1", "node_a", "deploy", "{}", 5),
	                 0);
	assert_int_equal(bc_row_workflow_insert(f->tx, "wf_1", "t1", NULL, "deploy", "{}", 5),
	                 BC_ERR_CONFLICT);
	assert_int_equal(bc_row_workflow_running_for(f->tx, "node_a", "deploy", id), 1);
	assert_string_equal(id, "wf_1");
	assert_int_equal(bc_row_workflow_running_for(f->tx, "node_a", "commission", id), 0);
	assert_int_equal(bc_row_workflow_lock(f->tx, "t2", "wf_1", &w), 0);
	assert_int_equal(bc_row_workflow_lock(f->tx, NULL, "wf_1", &w), 1);
	assert_string_equal(w.state, "running");
	assert_string_equal(w.data, "{}");
	assert_string_equal(w.node_id, "node_a");
	bc_row_workflow_clear(&w);
	assert_int_equal(bc_row_workflow_set(f->tx, "wf_1", "cancelled", NULL, 6), 0);
	assert_int_equal(bc_row_workflow_lock(f->tx, "t1", "wf_1", &w), 1);
	assert_string_equal(w.state, "cancelled");
	assert_string_equal(w.data, "{}");
	assert_true(w.updated_at == 6 && w.created_at == 5);
	bc_row_workflow_clear(&w);
	assert_int_equal(bc_row_workflow_running_for(f->tx, "node_a", "deploy", id), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_token_insert_inventory_workflows, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nodes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_certs_and_reclaim, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bindings_uses_tokens, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
