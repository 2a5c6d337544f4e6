/* Migration 8 on each engine: a store whose node_certs hold their DER as hex text (as
 * migration 7 left them) is opened again, and every certificate reads back as the same
 * bytes from its BYTEA column, by the queries that serve joins and renewals. A row
 * whose hex is not hex stops the migration, and the store stays as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/crypto.h"
#include "bc/store.h"
#include "bctest.h"
#include "rows/certs.h"

#define JOINS 3

static struct bct_cp cp;
static char pool_id[64];

/* node_certs as migration 7 left it, filled from today's rows, and migration 8 marked
 * not applied: what a store written before migration 8 holds (the migrations after it
 * touch other tables, and each is applied by its own version, so they stay). */
static const char *const back_to_7[] = {
    "CREATE TABLE node_certs_h (serial TEXT PRIMARY KEY, node_id TEXT NOT NULL REFERENCES "
    "nodes(id), generation BIGINT NOT NULL, der_hex TEXT NOT NULL, der_sha256 TEXT NOT NULL "
    "UNIQUE, not_before BIGINT NOT NULL, not_after BIGINT NOT NULL, revoked_at BIGINT, "
    "statements TEXT NOT NULL DEFAULT '[]', created_at BIGINT NOT NULL, csr_sha256 TEXT, "
    "predecessor TEXT, used_at BIGINT, superseded_at BIGINT, key_point TEXT, role TEXT)",
    "INSERT INTO node_certs_h SELECT serial, node_id, generation, encode(der, 'hex'), "
    "der_sha256, not_before, not_after, revoked_at, statements, created_at, csr_sha256, "
    "predecessor, used_at, superseded_at, key_point, role FROM node_certs",
    "DROP TABLE node_certs",
    "ALTER TABLE node_certs_h RENAME TO node_certs",
    "CREATE INDEX node_certs_node ON node_certs(node_id)",
    "CREATE INDEX node_certs_predecessor ON node_certs(predecessor)",
    "CREATE INDEX node_certs_not_after ON node_certs(not_after)",
    "DELETE FROM schema_migrations WHERE version = 8",
};

static void store_at_7(void)
{
	for (size_t i = 0; i < sizeof(back_to_7) / sizeof(back_to_7[0]); i++)
		assert_int_equal(bct_exec(&cp, back_to_7[i], NULL, 0), 0);
}

struct found {
	const struct bc_join_answer *ans;
	int rc;
	struct bc_cert_row row;
	uint8_t *der; /* bc_row_cert_each's first certificate */
	size_t len;
};

static int first_der(void *ctx, const uint8_t *der, size_t len)
{
	struct found *f = ctx;

	if ((f->der = malloc(len)) == NULL)
		return -1;
	memcpy(f->der, der, len);
	f->len = len;
	return 1;
}

static int find_fn(bc_tx *tx, void *arg)
{
	struct found *f = arg;
	int rc;

	f->rc =
	    bc_row_cert_find(tx, f->ans->node_id, f->ans->chain[0], f->ans->chain_lens[0], &f->row);
	if (f->rc < 0)
		return f->rc;
	rc = bc_row_cert_each(tx, f->ans->node_id, first_der, f);
	return rc < 0 ? rc : 0;
}

/* The certificate the join answered is the row's, byte for byte, through s. */
static void reads_back(bc_store *s, const struct bc_join_answer *ans)
{
	struct found f = {.ans = ans};

	assert_int_equal(bc_store_run(s, BC_TX_READ, find_fn, &f), 0);
	assert_int_equal(f.rc, 1);
	assert_string_equal(f.row.node.id, ans->node_id);
	assert_non_null(f.der);
	assert_int_equal(f.len, ans->chain_lens[0]);
	assert_memory_equal(f.der, ans->chain[0], f.len);
	free(f.der);
}

static void test_hex_rows_read_back_as_the_same_bytes(void **state)
{
	struct bc_join_answer ans[JOINS];
	bc_store *s = NULL;
	char err[256] = "";
	int64_t v = 0;
	(void)state;

	for (int i = 0; i < JOINS; i++) {
		struct bct_token_opts to = {.pool = pool_id};
		char *t = bct_token(&cp, &to, NULL);
		struct bct_join_opts jo = {.token = t};
		assert_int_equal(bct_join(&cp, &jo, &ans[i]), 0);
		free(t);
	}
	store_at_7();
	/* the rows are hex now: twice the DER's length, each */
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE length(der_hex) > 2 * "
	                           "$1",
	                           (bc_param[]){BC_INT(200)}, 1),
	                 JOINS);

	assert_int_equal(bc_store_open(cp.cfg.database, &s, err, sizeof(err)), 0);
	assert_int_equal(bc_store_schema_version(s, &v), 0);
	assert_true(v >= 8);
	for (int i = 0; i < JOINS; i++)
		reads_back(s, &ans[i]);
	/* and the server's store, on the same database, finds them too */
	for (int i = 0; i < JOINS; i++) {
		reads_back(bct_store(&cp), &ans[i]);
		bc_join_answer_free(&ans[i]);
	}
	bc_store_close(s);
}

static void test_a_row_that_is_not_hex_stops_the_migration(void **state)
{
	struct bc_join_answer ans;
	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(&cp, &to, NULL);
	struct bct_join_opts jo = {.token = t};
	bc_store *s = NULL;
	char err[256] = "";
	(void)state;

	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	free(t);
	store_at_7();
	bc_param p[] = {BC_TEXT(ans.node_id)};
	assert_int_equal(
	    bct_exec(&cp, "UPDATE node_certs SET der_hex = 'zz' WHERE node_id = $1", p, 1), 0);

	assert_true(bc_store_open(cp.cfg.database, &s, err, sizeof(err)) < 0);
	assert_null(s);
	print_message("refused: %s\n", err);
	assert_non_null(strstr(err, "schema migration 008_cert_blob"));
	/* nothing changed: migration 8 still not applied, the rows still hex */
	assert_int_equal(
	    bct_count(&cp, "SELECT COUNT(*) FROM schema_migrations WHERE version = 8", NULL, 0), 0);
	assert_int_equal(
	    bct_count(&cp, "SELECT COUNT(*) FROM node_certs WHERE der_hex = 'zz'", NULL, 0), 1);
	bc_join_answer_free(&ans);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hex_rows_read_back_as_the_same_bytes,
	                                    bct_pooled_setup, bct_pooled_teardown),
	    cmocka_unit_test_setup_teardown(test_a_row_that_is_not_hex_stops_the_migration,
	                                    bct_pooled_setup, bct_pooled_teardown),
	};
	if (bct_engine_skip())
		return BCT_SKIP;
	bct_pooled(&cp, NULL, pool_id);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
