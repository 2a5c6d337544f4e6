/* The store cases that hold on every engine, included by each engine's test
 * program (store_sqlite_test.c, store_postgres_test.c): opening and migrations,
 * parameters and results, errors, transactions, bc_store_run, concurrency and
 * database time. Engine-specific cases stay in their program.
 *
 * The includer defines, before including this file:
 *   struct fx              a fixture with at least `char url[]` (the store's URL)
 *                          and `bc_store *s` (open on a fresh, migrated database)
 *   STORE_BLOB_TYPE        the column type of blobs in this engine's DDL
 *   STORE_TABLE_EXISTS_SQL one row, the count of tables named $1
 *   TEST_OFFSET_MS         the test clock offset main() sets, before any clock read
 * and lists STORE_SHARED_CASES(setup, teardown) among its cmocka tests. */
#ifndef BC_TEST_STORE_CASES_H
#define BC_TEST_STORE_CASES_H

static int64_t highest_migration(void)
{
	int64_t v = 0;

	for (size_t i = 0; i < bc_migrations_count; i++)
		if (bc_migrations[i].version > v)
			v = bc_migrations[i].version;
	return v;
}

/* One statement in its own write transaction. */
static int exec1(bc_store *s, const char *sql, const bc_param *p, size_t n)
{
	bc_tx *tx = NULL;
	int rc;

	if ((rc = bc_tx_begin(s, BC_TX_WRITE, &tx)) != 0)
		return rc;
	if ((rc = bc_tx_exec(tx, sql, p, n, NULL)) != 0) {
		bc_tx_rollback(tx);
		return rc;
	}
	return bc_tx_commit(tx);
}

static int64_t count1(bc_store *s, const char *sql, const bc_param *p, size_t n)
{
	bc_tx *tx = NULL;
	int64_t v = -1;

	assert_int_equal(bc_tx_begin(s, BC_TX_READ, &tx), 0);
	assert_int_equal(bc_tx_query_int(tx, sql, p, n, &v), 0);
	bc_tx_rollback(tx);
	return v;
}

static void make_table(bc_store *s)
{
	assert_int_equal(exec1(s,
	                       "CREATE TABLE t (id BIGINT PRIMARY KEY, i BIGINT, s TEXT, "
	                       "b " STORE_BLOB_TYPE
	                       ", u TEXT UNIQUE, nn TEXT NOT NULL DEFAULT 'x')",
	                       NULL, 0),
	                 0);
}

/* ---- opening and migrations ---- */

static void test_reopen_applies_nothing(void **state)
{
	struct fx *f = *state;
	const char *sum = "SELECT SUM(applied_at) FROM schema_migrations";
	int64_t before = count1(f->s, sum, NULL, 0), v = 0;
	char err[256];

	bc_store_close(f->s);
	f->s = NULL;
	assert_int_equal(bc_store_open(f->url, &f->s, err, sizeof(err)), 0);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM schema_migrations", NULL, 0) ==
	            (int64_t)bc_migrations_count);
	assert_true(count1(f->s, sum, NULL, 0) == before);
	assert_int_equal(bc_store_schema_version(f->s, &v), 0);
	assert_true(v == highest_migration());
}

static void test_newer_schema_refused(void **state)
{
	struct fx *f = *state;
	char err[256], want[256];
	bc_store *s2 = (bc_store *)1;

	assert_int_equal(exec1(f->s,
	                       "INSERT INTO schema_migrations (version, name, applied_at) "
	                       "VALUES (9999, '9999_future', 0)",
	                       NULL, 0),
	                 0);
	bc_store_close(f->s);
	f->s = NULL;
	assert_int_equal(bc_store_open(f->url, &s2, err, sizeof(err)), BC_ERR_CONFIG);
	assert_null(s2);
	snprintf(want, sizeof(want),
	         "the database schema is version 9999, newer than this better-compute (%" PRId64
	         "): upgrade better-compute",
	         highest_migration());
	assert_string_equal(err, want);
	/* the refused database is left for a newer binary: reopening a fixture
	 * store for teardown would refuse too */
}

struct plan_seen {
	int64_t versions[8];
	int n;
};

static void plan_one(void *arg, int64_t version, const char *name)
{
	struct plan_seen *p = arg;

	assert_non_null(name);
	if (p->n < 8)
		p->versions[p->n] = version;
	p->n++;
}

/* store migrate --check: what is not applied is listed, in order, and nothing runs;
 * a newer schema is refused by the same message as at open */
static void test_migration_plan(void **state)
{
	struct fx *f = *state;
	struct plan_seen seen = {0};
	int64_t cur = -1, latest = -1, top = highest_migration();
	char err[256], want[256];

	assert_int_equal(
	    bc_store_migration_plan(f->s, &cur, &latest, plan_one, &seen, err, sizeof(err)), 0);
	assert_true(cur == top && latest == top);
	assert_int_equal(seen.n, 0);
	/* as if the last migration had not run: listed, not applied by the plan */
	assert_int_equal(exec1(f->s, "DELETE FROM schema_migrations WHERE version = $1",
	                       (bc_param[]){BC_INT(top)}, 1),
	                 0);
	assert_int_equal(
	    bc_store_migration_plan(f->s, &cur, &latest, plan_one, &seen, err, sizeof(err)), 0);
	assert_int_equal(seen.n, 1);
	assert_true(seen.versions[0] == top);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM schema_migrations WHERE version = $1",
	                   (bc_param[]){BC_INT(top)}, 1) == 0);
	assert_int_equal(exec1(f->s,
	                       "INSERT INTO schema_migrations (version, name, applied_at) "
	                       "VALUES ($1, 'back', 0), (9999, '9999_future', 0)",
	                       (bc_param[]){BC_INT(top)}, 1),
	                 0);
	assert_int_equal(bc_store_migration_plan(f->s, &cur, &latest, NULL, NULL, err, sizeof(err)),
	                 BC_ERR_CONFIG);
	snprintf(want, sizeof(want),
	         "the database schema is version 9999, newer than this better-compute (%" PRId64
	         "): upgrade better-compute",
	         top);
	assert_string_equal(err, want);
	assert_int_equal(exec1(f->s, "DELETE FROM schema_migrations WHERE version = 9999", NULL, 0),
	                 0);
}

/* NO_MIGRATE opens a newer schema without refusing or changing it (store backup and
 * --check on a database a newer server serves) */
static void test_open_no_migrate(void **state)
{
	struct fx *f = *state;
	bc_store *s2 = NULL;
	char err[256];

	assert_int_equal(exec1(f->s,
	                       "INSERT INTO schema_migrations (version, name, applied_at) "
	                       "VALUES (9999, '9999_future', 0)",
	                       NULL, 0),
	                 0);
	assert_int_equal(bc_store_open_flags(f->url, BC_STORE_NO_MIGRATE, &s2, err, sizeof(err)),
	                 0);
	assert_true(count1(s2, "SELECT MAX(version) FROM schema_migrations", NULL, 0) == 9999);
	bc_store_close(s2);
	assert_int_equal(exec1(f->s, "DELETE FROM schema_migrations WHERE version = 9999", NULL, 0),
	                 0);
}

static void test_tables_of_design(void **state)
{
	/* DESIGN.md, Storage */
	static const char *tables[] = {
	    "tenants",       "pools",       "sites",         "nodes",
	    "node_certs",    "join_tokens", "node_bindings", "attestation_uses",
	    "join_requests", "leases",      "workflows",     "inventory",
	    "events",        "audit",       "api_keys"};
	struct fx *f = *state;

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		int64_t n =
		    count1(f->s, STORE_TABLE_EXISTS_SQL, (bc_param[]){BC_TEXT(tables[i])}, 1);
		if (n != 1)
			fail_msg("table %s is missing", tables[i]);
	}
}

/* ---- parameters and results ---- */

static void test_param_round_trip(void **state)
{
	static const uint8_t blob[] = {0x00, 0xff, 0x00, 0x7f, 0x80};
	struct fx *f = *state;
	bc_tx *tx = NULL;
	bc_rows *r = NULL;
	const uint8_t *p;
	size_t len = 99;
	int64_t changes = -1;

	make_table(f->s);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	assert_int_equal(
	    bc_tx_exec(tx, "INSERT INTO t (id, i, s, b) VALUES ($1, $2, $3, $4)",
	               (bc_param[]){BC_INT(1), BC_INT(INT64_MIN), BC_TEXT("h\xc3\xa9llo"),
	                            BC_BLOB(blob, sizeof(blob))},
	               4, &changes),
	    0);
	assert_true(changes == 1);
	assert_int_equal(
	    bc_tx_exec(tx, "INSERT INTO t (id, i, s, b) VALUES ($1, $2, $3, $4)",
	               (bc_param[]){BC_INT(2), BC_INT(INT64_MAX), BC_TEXT(NULL), BC_NULL}, 4, NULL),
	    0);
	assert_int_equal(bc_tx_exec(tx, "INSERT INTO t (id, i, s, b) VALUES ($1, $2, $3, $4)",
	                            (bc_param[]){BC_INT(3), BC_NULL, BC_TEXT(""), BC_BLOB(NULL, 0)},
	                            4, NULL),
	                 0);
	assert_int_equal(bc_tx_commit(tx), 0);

	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	assert_int_equal(bc_tx_query(tx, "SELECT id, i, s, b FROM t ORDER BY id", NULL, 0, &r), 0);

	assert_int_equal(bc_rows_next(r), 1);
	assert_true(bc_rows_int(r, 0) == 1);
	assert_true(bc_rows_int(r, 1) == INT64_MIN);
	assert_string_equal(bc_rows_text(r, 2), "h\xc3\xa9llo");
	p = bc_rows_blob(r, 3, &len);
	assert_int_equal(len, sizeof(blob));
	assert_memory_equal(p, blob, sizeof(blob));
	assert_false(bc_rows_is_null(r, 3));

	assert_int_equal(bc_rows_next(r), 1);
	assert_true(bc_rows_int(r, 1) == INT64_MAX);
	assert_true(bc_rows_is_null(r, 2));
	assert_string_equal(bc_rows_text(r, 2), "");
	assert_true(bc_rows_is_null(r, 3));
	assert_null(bc_rows_blob(r, 3, &len));
	assert_int_equal(len, 0);

	/* NULL int reads 0; an empty text and an empty blob are not NULL */
	assert_int_equal(bc_rows_next(r), 1);
	assert_true(bc_rows_is_null(r, 1));
	assert_true(bc_rows_int(r, 1) == 0);
	assert_false(bc_rows_is_null(r, 2));
	assert_string_equal(bc_rows_text(r, 2), "");
	assert_false(bc_rows_is_null(r, 3));
	len = 99;
	assert_non_null(bc_rows_blob(r, 3, &len));
	assert_int_equal(len, 0);

	/* out-of-range columns read as NULL */
	assert_true(bc_rows_is_null(r, 4));
	assert_true(bc_rows_is_null(r, -1));
	assert_string_equal(bc_rows_text(r, 9), "");
	assert_true(bc_rows_int(r, 9) == 0);

	/* the end stays the end, and does not rerun the query */
	assert_int_equal(bc_rows_next(r), 0);
	assert_int_equal(bc_rows_next(r), 0);
	assert_true(bc_rows_is_null(r, 0));
	bc_rows_free(r);
	bc_tx_rollback(tx);
}

/* Columns by name: the same answers on every engine, whatever case folding it does. */
static void test_columns_by_name(void **state)
{
	static const uint8_t blob[] = {0x01, 0x00, 0x02};
	struct fx *f = *state;
	bc_tx *tx = NULL;
	bc_rows *r = NULL;
	size_t len = 99;

	make_table(f->s);
	assert_int_equal(
	    exec1(f->s, "INSERT INTO t (id, i, s, b) VALUES ($1, $2, $3, $4)",
	          (bc_param[]){BC_INT(5), BC_INT(-7), BC_TEXT("five"), BC_BLOB(blob, sizeof(blob))},
	          4),
	    0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	assert_int_equal(bc_tx_query(tx,
	                             "SELECT t.id, i AS Minus_Seven, s, b, s AS s, nn, "
	                             "i + 1 AS plus_one FROM t",
	                             NULL, 0, &r),
	                 0);
	/* names are there before the first row */
	assert_int_equal(bc_rows_col(r, "id"), 0);
	assert_int_equal(bc_rows_next(r), 1);
	assert_int_equal(bc_rows_col(r, "id"), 0);
	assert_int_equal(bc_rows_col(r, "ID"), 0);
	/* an alias in mixed case: PostgreSQL folds it, SQLite keeps it; both match */
	assert_int_equal(bc_rows_col(r, "minus_seven"), 1);
	assert_int_equal(bc_rows_col(r, "MINUS_SEVEN"), 1);
	/* two columns of one name: the first */
	assert_int_equal(bc_rows_col(r, "s"), 2);
	assert_int_equal(bc_rows_col(r, "plus_one"), 6);
	assert_true(bc_rows_int_named(r, "plus_one") == -6);
	assert_true(bc_rows_int_named(r, "id") == 5);
	assert_true(bc_rows_int_named(r, "Minus_Seven") == -7);
	assert_string_equal(bc_rows_text_named(r, "s"), "five");
	assert_string_equal(bc_rows_text_named(r, "nn"), "x");
	assert_false(bc_rows_null_named(r, "s"));
	assert_memory_equal(bc_rows_blob_named(r, "b", &len), blob, sizeof(blob));
	assert_int_equal(len, sizeof(blob));

	/* unknown names: -1, and they read as NULL */
	assert_int_equal(bc_rows_col(r, "nope"), -1);
	assert_int_equal(bc_rows_col(r, "t.id"), -1);
	assert_int_equal(bc_rows_col(r, "\"id\""), -1);
	assert_int_equal(bc_rows_col(r, ""), -1);
	assert_int_equal(bc_rows_col(r, "i"), -1); /* renamed by its alias */
	assert_int_equal(bc_rows_col(r, NULL), -1);
	assert_int_equal(bc_rows_col(NULL, "id"), -1);
	assert_true(bc_rows_null_named(r, "nope"));
	assert_string_equal(bc_rows_text_named(r, "nope"), "");
	assert_true(bc_rows_int_named(r, "nope") == 0);
	len = 99;
	assert_null(bc_rows_blob_named(r, "nope", &len));
	assert_int_equal(len, 0);
	assert_true(bc_rows_null_named(NULL, "id"));

	assert_int_equal(bc_rows_next(r), 0);
	bc_rows_free(r);
	bc_tx_rollback(tx);
}

static void test_param_order_and_repeat(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;
	int64_t v = 0;
	char *s = NULL;

	make_table(f->s);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	/* $2 before $1 */
	assert_int_equal(bc_tx_exec(tx, "INSERT INTO t (s, id) VALUES ($2, $1)",
	                            (bc_param[]){BC_INT(7), BC_TEXT("seven")}, 2, NULL),
	                 0);
	assert_int_equal(
	    bc_tx_query_text(tx, "SELECT s FROM t WHERE id = $1", (bc_param[]){BC_INT(7)}, 1, &s),
	    0);
	assert_string_equal(s, "seven");
	free(s);
	/* $1 twice */
	assert_int_equal(
	    bc_tx_query_int(tx, "SELECT $1 + $1 * $2", (bc_param[]){BC_INT(3), BC_INT(10)}, 2, &v),
	    0);
	assert_true(v == 33);
	assert_int_equal(
	    bc_tx_query_int(tx, "SELECT COUNT(*) FROM t WHERE id = $1 OR s = $2 OR id = $1",
	                    (bc_param[]){BC_INT(7), BC_TEXT("none")}, 2, &v),
	    0);
	assert_true(v == 1);
	bc_tx_rollback(tx);
}

static void test_param_mismatch(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;
	int64_t v = 5;

	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	/* too many, too few, a gap, and other parameter styles */
	assert_int_equal(
	    bc_tx_query_int(tx, "SELECT $1", (bc_param[]){BC_INT(1), BC_INT(2)}, 2, &v),
	    BC_ERR_INVALID);
	assert_true(v == 0);
	assert_int_equal(bc_tx_query_int(tx, "SELECT $1 + $2", (bc_param[]){BC_INT(1)}, 1, &v),
	                 BC_ERR_INVALID);
	assert_int_equal(
	    bc_tx_query_int(tx, "SELECT $1 + $3", (bc_param[]){BC_INT(1), BC_INT(2)}, 2, &v),
	    BC_ERR_INVALID);
	assert_int_equal(bc_tx_query_int(tx, "SELECT ?", (bc_param[]){BC_INT(1)}, 1, &v),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_tx_query_int(tx, "SELECT :a", (bc_param[]){BC_INT(1)}, 1, &v),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_tx_query_int(tx, "SELECT $1", NULL, 1, &v), BC_ERR_INVALID);
	assert_int_equal(
	    bc_tx_query_int(tx, "SELECT $1", (bc_param[]){{.type = (enum bc_param_type)42}}, 1, &v),
	    BC_ERR_INVALID);
	assert_true(strlen(bc_store_errmsg()) > 0);
	/* the transaction is still fine */
	assert_int_equal(bc_tx_query_int(tx, "SELECT $1", (bc_param[]){BC_INT(4)}, 1, &v), 0);
	assert_true(v == 4);
	bc_tx_rollback(tx);
}

static void test_helpers(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;
	int64_t v = 5;
	char *s = (char *)1;

	make_table(f->s);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	assert_int_equal(bc_tx_query_int(tx, "SELECT i FROM t WHERE id = 1", NULL, 0, &v),
	                 BC_ERR_NOT_FOUND);
	assert_true(v == 0);
	assert_int_equal(bc_tx_query_text(tx, "SELECT s FROM t", NULL, 0, &s), BC_ERR_NOT_FOUND);
	assert_null(s);
	assert_int_equal(bc_tx_query_text(tx, "SELECT NULL", NULL, 0, &s), 0);
	assert_string_equal(s, "");
	free(s);
	assert_int_equal(
	    bc_tx_query_text(tx, "SELECT 'a' || $1", (bc_param[]){BC_TEXT("b")}, 1, &s), 0);
	assert_string_equal(s, "ab");
	free(s);
	assert_ptr_equal(bc_tx_store(tx), f->s);
	bc_tx_rollback(tx);
	bc_tx_rollback(NULL);
}

/* ---- errors ---- */

static void test_unique_conflict(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;

	make_table(f->s);
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, u) VALUES (1, 'a')", NULL, 0), 0);
	/* the primary key, then a UNIQUE column */
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, u) VALUES (1, 'b')", NULL, 0),
	                 BC_ERR_CONFLICT);
	assert_non_null(strcasestr(bc_store_errmsg(), "unique"));
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, u) VALUES (2, 'a')", NULL, 0),
	                 BC_ERR_CONFLICT);
	/* other constraints are not conflicts */
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, nn) VALUES (3, NULL)", NULL, 0),
	                 BC_ERR_DB);
	assert_int_equal(exec1(f->s,
	                       "INSERT INTO api_keys (id, tenant_id, secret_hash, name, "
	                       "created_at) VALUES ('k', 'no-such-tenant', 'h', 'n', 0)",
	                       NULL, 0),
	                 BC_ERR_DB);
	assert_non_null(strcasestr(bc_store_errmsg(), "foreign key"));

	/* the statement failed, the transaction goes on */
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	assert_int_equal(bc_tx_exec(tx, "INSERT INTO t (id) VALUES (1)", NULL, 0, NULL),
	                 BC_ERR_CONFLICT);
	assert_int_equal(bc_tx_exec(tx, "INSERT INTO t (id) VALUES (4)", NULL, 0, NULL), 0);
	assert_int_equal(bc_tx_commit(tx), 0);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 2);
}

static void test_sql_errors(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;
	bc_rows *r = (bc_rows *)1;

	make_table(f->s);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	assert_int_equal(bc_tx_query(tx, "SELEC 1", NULL, 0, &r), BC_ERR_DB);
	assert_null(r);
	assert_non_null(strstr(bc_store_errmsg(), "syntax error"));
	assert_int_equal(bc_tx_query(tx, "SELECT * FROM no_such_table", NULL, 0, &r), BC_ERR_DB);
	/* one statement per call */
	assert_int_equal(bc_tx_exec(tx, "SELECT 1; SELECT 2", NULL, 0, NULL), BC_ERR_INVALID);
	assert_int_equal(bc_tx_exec(tx, "SELECT 1; -- fine\n ; /* fine */", NULL, 0, NULL), 0);
	assert_int_equal(bc_tx_exec(tx, "  -- nothing", NULL, 0, NULL), BC_ERR_INVALID);
	/* a read transaction does not write */
	assert_int_equal(bc_tx_exec(tx, "INSERT INTO t (id) VALUES (1)", NULL, 0, NULL),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_tx_exec(NULL, "SELECT 1", NULL, 0, NULL), BC_ERR_INVALID);
	assert_int_equal(bc_tx_exec(tx, NULL, NULL, 0, NULL), BC_ERR_INVALID);
	bc_tx_rollback(tx);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 0);
}

static void test_exec_changes(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;
	int64_t changes = -1;

	make_table(f->s);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	for (int i = 1; i <= 3; i++)
		assert_int_equal(bc_tx_exec(tx, "INSERT INTO t (id, i) VALUES ($1, 0)",
		                            (bc_param[]){BC_INT(i)}, 1, NULL),
		                 0);
	assert_int_equal(bc_tx_exec(tx, "UPDATE t SET i = i + 1", NULL, 0, &changes), 0);
	assert_true(changes == 3);
	assert_int_equal(bc_tx_exec(tx, "UPDATE t SET i = 0 WHERE id = 99", NULL, 0, &changes), 0);
	assert_true(changes == 0);
	/* not the last UPDATE's count */
	changes = -1;
	assert_int_equal(bc_tx_exec(tx, "CREATE TABLE u (x BIGINT)", NULL, 0, &changes), 0);
	assert_true(changes == 0);
	assert_int_equal(
	    bc_tx_exec(tx, "DELETE FROM t WHERE id >= $1", (bc_param[]){BC_INT(2)}, 1, &changes),
	    0);
	assert_true(changes == 2);
	assert_int_equal(bc_tx_commit(tx), 0);
}

/* ---- transactions ---- */

static void test_rollback_discards(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;

	make_table(f->s);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	assert_int_equal(bc_tx_exec(tx, "INSERT INTO t (id) VALUES (1)", NULL, 0, NULL), 0);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 0);
	bc_tx_rollback(tx);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 0);
	/* and the write lock was given back */
	assert_int_equal(exec1(f->s, "INSERT INTO t (id) VALUES (2)", NULL, 0), 0);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 1);
	assert_int_equal(bc_tx_begin(f->s, (enum bc_tx_mode)7, &tx), BC_ERR_INVALID);
	assert_null(tx);
}

static void test_reader_sees_committed_only(void **state)
{
	struct fx *f = *state;
	bc_tx *w = NULL, *r = NULL;
	int64_t v = -1;

	make_table(f->s);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &w), 0);
	assert_int_equal(bc_tx_exec(w, "INSERT INTO t (id, i) VALUES (1, 5)", NULL, 0, NULL), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &r), 0);
	assert_int_equal(bc_tx_query_int(r, "SELECT COUNT(*) FROM t", NULL, 0, &v), 0);
	assert_true(v == 0);
	bc_tx_rollback(r);
	assert_int_equal(bc_tx_commit(w), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &r), 0);
	assert_int_equal(bc_tx_query_int(r, "SELECT i FROM t WHERE id = 1", NULL, 0, &v), 0);
	assert_true(v == 5);
	bc_tx_rollback(r);
}

static void test_same_query_open_twice(void **state)
{
	struct fx *f = *state;
	const char *q = "SELECT id FROM t ORDER BY id";
	bc_tx *tx = NULL;
	bc_rows *a = NULL, *b = NULL;
	int64_t sum = 0;

	make_table(f->s);
	for (int i = 1; i <= 3; i++)
		assert_int_equal(
		    exec1(f->s, "INSERT INTO t (id) VALUES ($1)", (bc_param[]){BC_INT(i)}, 1), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	assert_int_equal(bc_tx_query(tx, q, NULL, 0, &a), 0);
	while (bc_rows_next(a) == 1) {
		assert_int_equal(bc_tx_query(tx, q, NULL, 0, &b), 0);
		while (bc_rows_next(b) == 1)
			sum += bc_rows_int(a, 0) * bc_rows_int(b, 0);
		bc_rows_free(b);
	}
	bc_rows_free(a);
	assert_true(sum == 36); /* (1+2+3)^2 */
	bc_tx_rollback(tx);
}

static void test_statement_cache_eviction(void **state)
{
	struct fx *f = *state;
	char sql[64];
	bc_tx *tx = NULL;
	int64_t v;

	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 200; i++) {
			snprintf(sql, sizeof(sql), "SELECT %d + $1", i);
			v = -1;
			assert_int_equal(
			    bc_tx_query_int(tx, sql, (bc_param[]){BC_INT(round)}, 1, &v), 0);
			assert_true(v == i + round);
		}
	}
	bc_tx_rollback(tx);
}

/* ---- bc_store_run ---- */

struct run_arg {
	int calls;
	int fail_first; /* how many calls return fail_rc after writing */
	int fail_rc;
};

static int insert_then_maybe_fail(bc_tx *tx, void *p)
{
	struct run_arg *a = p;
	int rc;

	a->calls++;
	if ((rc = bc_tx_exec(tx, "INSERT INTO t (id, i) VALUES ($1, $2)",
	                     (bc_param[]){BC_INT(a->calls), BC_INT(a->calls)}, 2, NULL)) != 0)
		return rc;
	return a->calls <= a->fail_first ? a->fail_rc : 0;
}

static void test_run_replays_retry(void **state)
{
	struct fx *f = *state;
	struct run_arg a = {.fail_first = 1, .fail_rc = BC_ERR_RETRY};

	make_table(f->s);
	assert_int_equal(bc_store_run(f->s, BC_TX_WRITE, insert_then_maybe_fail, &a), 0);
	assert_int_equal(a.calls, 2);
	/* the first attempt's row was rolled back; the second's committed */
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 1);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t WHERE id = 2", NULL, 0) == 1);
}

static void test_run_gives_up_and_rolls_back(void **state)
{
	struct fx *f = *state;
	struct run_arg busy = {.fail_first = 100, .fail_rc = BC_ERR_BUSY};
	struct run_arg denied = {.fail_first = 100, .fail_rc = BC_ERR_DENIED};

	make_table(f->s);
	/* the first run and 5 replays */
	assert_int_equal(bc_store_run(f->s, BC_TX_WRITE, insert_then_maybe_fail, &busy),
	                 BC_ERR_BUSY);
	assert_int_equal(busy.calls, 6);
	/* other errors are not replayed */
	assert_int_equal(bc_store_run(f->s, BC_TX_WRITE, insert_then_maybe_fail, &denied),
	                 BC_ERR_DENIED);
	assert_int_equal(denied.calls, 1);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 0);
	assert_int_equal(bc_store_run(f->s, BC_TX_WRITE, NULL, NULL), BC_ERR_INVALID);
}

#define THREADS    8
#define INCREMENTS 200

struct counter_arg {
	bc_store *s;
	int (*increment)(bc_tx *tx, void *p);
	int failures;
};

/* read, then write what was read plus one: a lost update would show */
static int increment(bc_tx *tx, void *p)
{
	int64_t v = 0;
	int rc;

	(void)p;
	if ((rc = bc_tx_query_int(tx, "SELECT v FROM counter WHERE id = 1 FOR UPDATE", NULL, 0,
	                          &v)) != 0)
		return rc;
	return bc_tx_exec(tx, "UPDATE counter SET v = $1 WHERE id = 1", (bc_param[]){BC_INT(v + 1)},
	                  1, NULL);
}

/* bc_tx_lock, then a plain read and a write of what was read plus one: the lock alone
 * must keep the updates from being lost */
static int increment_locked(bc_tx *tx, void *p)
{
	int64_t v = 0;
	int rc;

	(void)p;
	if ((rc = bc_tx_lock(tx, "SELECT id FROM counter WHERE id = $1 FOR UPDATE",
	                     (bc_param[]){BC_INT(1)}, 1)) != 0 ||
	    (rc = bc_tx_query_int(tx, "SELECT v FROM counter WHERE id = 1", NULL, 0, &v)) != 0)
		return rc;
	return bc_tx_exec(tx, "UPDATE counter SET v = $1 WHERE id = 1", (bc_param[]){BC_INT(v + 1)},
	                  1, NULL);
}

static void *counter_thread(void *p)
{
	struct counter_arg *a = p;

	for (int i = 0; i < INCREMENTS; i++)
		if (bc_store_run(a->s, BC_TX_WRITE, a->increment, NULL) != 0)
			a->failures++;
	return NULL;
}

/* THREADS threads each run inc INCREMENTS times on a new counter: every run commits
 * and no increment is lost */
static void count_concurrently(struct fx *f, int (*inc)(bc_tx *tx, void *p))
{
	struct counter_arg args[THREADS];
	pthread_t th[THREADS];

	assert_int_equal(
	    exec1(f->s, "CREATE TABLE counter (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)", NULL, 0),
	    0);
	assert_int_equal(exec1(f->s, "INSERT INTO counter (id, v) VALUES (1, 0)", NULL, 0), 0);
	for (int i = 0; i < THREADS; i++) {
		args[i] = (struct counter_arg){.s = f->s, .increment = inc};
		assert_int_equal(pthread_create(&th[i], NULL, counter_thread, &args[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(args[i].failures, 0);
	}
	assert_true(count1(f->s, "SELECT v FROM counter WHERE id = 1", NULL, 0) ==
	            THREADS * INCREMENTS);
}

static void test_concurrent_increments(void **state)
{
	count_concurrently(*state, increment);
}

static void test_lock_serializes(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;
	uint64_t before;

	count_concurrently(f, increment_locked);
	/* SQLite sends nothing for a lock (its write transaction holds the database);
	 * PostgreSQL sends the statement, and reports what is wrong with it */
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	before = bc_store_statements(f->s);
	assert_int_equal(bc_tx_lock(tx, "SELECT id FROM counter WHERE id = 2 FOR UPDATE", NULL, 0),
	                 0);
	assert_true(bc_store_statements(f->s) - before ==
	            (bc_store_engine(f->s) == BC_STORE_SQLITE ? 0 : 1));
	assert_int_equal(bc_tx_lock(tx, NULL, NULL, 0), BC_ERR_INVALID);
	if (bc_store_engine(f->s) == BC_STORE_POSTGRES)
		assert_true(bc_tx_lock(tx, "SELECT nothing FROM counter FOR UPDATE", NULL, 0) < 0);
	bc_tx_rollback(tx);
}

/* ---- time ---- */

static void test_now_follows_test_clock(void **state)
{
	struct fx *f = *state;
	struct timespec ts;
	bc_tx *tx = NULL;
	int64_t real, now;

	assert_true(bc_clock_offset_ms() == TEST_OFFSET_MS);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	real = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	now = bc_tx_now_ms(tx);
	bc_tx_rollback(tx);
	/* a day ahead, give or take a slow machine */
	assert_true(now - real >= TEST_OFFSET_MS);
	assert_true(now - real < TEST_OFFSET_MS + 10000);
	/* and so is what migrations recorded */
	assert_true(count1(f->s, "SELECT MIN(applied_at) FROM schema_migrations", NULL, 0) - real >
	            TEST_OFFSET_MS - 600000);
}

#define STORE_SHARED_CASES(setup, teardown)                                                        \
	cmocka_unit_test_setup_teardown(test_reopen_applies_nothing, setup, teardown),             \
	    cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),           \
	    cmocka_unit_test_setup_teardown(test_migration_plan, setup, teardown),                 \
	    cmocka_unit_test_setup_teardown(test_open_no_migrate, setup, teardown),                \
	    cmocka_unit_test_setup_teardown(test_tables_of_design, setup, teardown),               \
	    cmocka_unit_test_setup_teardown(test_param_round_trip, setup, teardown),               \
	    cmocka_unit_test_setup_teardown(test_columns_by_name, setup, teardown),                \
	    cmocka_unit_test_setup_teardown(test_param_order_and_repeat, setup, teardown),         \
	    cmocka_unit_test_setup_teardown(test_param_mismatch, setup, teardown),                 \
	    cmocka_unit_test_setup_teardown(test_helpers, setup, teardown),                        \
	    cmocka_unit_test_setup_teardown(test_unique_conflict, setup, teardown),                \
	    cmocka_unit_test_setup_teardown(test_sql_errors, setup, teardown),                     \
	    cmocka_unit_test_setup_teardown(test_exec_changes, setup, teardown),                   \
	    cmocka_unit_test_setup_teardown(test_rollback_discards, setup, teardown),              \
	    cmocka_unit_test_setup_teardown(test_reader_sees_committed_only, setup, teardown),     \
	    cmocka_unit_test_setup_teardown(test_same_query_open_twice, setup, teardown),          \
	    cmocka_unit_test_setup_teardown(test_statement_cache_eviction, setup, teardown),       \
	    cmocka_unit_test_setup_teardown(test_run_replays_retry, setup, teardown),              \
	    cmocka_unit_test_setup_teardown(test_run_gives_up_and_rolls_back, setup, teardown),    \
	    cmocka_unit_test_setup_teardown(test_concurrent_increments, setup, teardown),          \
	    cmocka_unit_test_setup_teardown(test_lock_serializes, setup, teardown),                \
	    cmocka_unit_test_setup_teardown(test_now_follows_test_clock, setup, teardown)

#endif
