/* bc_store_copy(), what `better-compute store copy` runs: a node joined on a SQLite
 * control plane renews on a second control plane (the same secret and PKI bundle) over
 * the copy. The target is a fresh PostgreSQL database with BC_TEST_ENGINE=postgres, a
 * fresh SQLite file otherwise. Refusals: a target with rows, a schema version that
 * differs, a table the copy does not know; and a copy that fails halfway leaves the
 * target empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/store.h"
#include "bc/wire.h"
#include "bct_pg.h"
#include "bctest.h"
#include "bettercompute/join/v1/join.pb-c.h"

static struct bct_cp cp; /* on SQLite whatever the engine under test */
static char pool_id[64];
static char target_dir[256];
static char target_db[64]; /* PostgreSQL database, or "" */
static char target_url[512];

static int engine_postgres(void)
{
	const char *e = getenv("BC_TEST_ENGINE");
	return e != NULL && strcmp(e, "postgres") == 0;
}

static int setup(void **state)
{
	const char *engine = getenv("BC_TEST_ENGINE");
	char *saved = engine ? strdup(engine) : NULL, err[512], *d;
	int rc;

	(void)state;
	/* the source is the embedded default, as an operator who moves up has it */
	unsetenv("BC_TEST_ENGINE");
	rc = bct_cp_start(&cp, NULL);
	if (saved != NULL) {
		setenv("BC_TEST_ENGINE", saved, 1);
		free(saved);
	}
	if (rc != 0 || bct_pool(&cp, "root", "default", "{}", pool_id) != 0)
		return -1;
	if ((d = bct_tmpdir()) == NULL)
		return -1;
	snprintf(target_dir, sizeof(target_dir), "%s", d);
	free(d);
	target_db[0] = '\0';
	if (!engine_postgres()) {
		snprintf(target_url, sizeof(target_url), "sqlite:%s/target.db", target_dir);
		return 0;
	}
	if (bct_pg_create(getenv("BC_TEST_POSTGRES_URL"), target_db, sizeof(target_db), target_url,
	                  sizeof(target_url), err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	if (target_db[0] != '\0')
		bct_pg_drop(getenv("BC_TEST_POSTGRES_URL"), target_db);
	bct_rmrf(target_dir);
	return 0;
}

static bc_store *open_url(const char *url)
{
	char err[512] = "";
	bc_store *s = NULL;

	if (bc_store_open(url, &s, err, sizeof(err)) != 0)
		fail_msg("open %s: %s", url, err);
	return s;
}

static bc_store *open_source(void)
{
	char url[512];

	snprintf(url, sizeof(url), "sqlite:%s/bc.db", cp.dir);
	return open_url(url);
}

static int64_t count(bc_store *s, const char *sql)
{
	bc_tx *tx = NULL;
	int64_t v = -1;

	assert_int_equal(bc_tx_begin(s, BC_TX_READ, &tx), 0);
	assert_int_equal(bc_tx_query_int(tx, sql, NULL, 0, &v), 0);
	bc_tx_rollback(tx);
	return v;
}

static void exec(bc_store *s, const char *sql)
{
	bc_tx *tx = NULL;

	assert_int_equal(bc_tx_begin(s, BC_TX_WRITE, &tx), 0);
	assert_int_equal(bc_tx_exec(tx, sql, NULL, 0, NULL), 0);
	assert_int_equal(bc_tx_commit(tx), 0);
}

/* A second control plane on the target with cp's secret and bundle. */
static struct bc_server *start_on_target(struct bc_server_config *cfg, struct bc_client_pins *pins)
{
	char path[512], toml[2048], err[512] = "";
	struct bc_server *srv = NULL;

	snprintf(toml, sizeof(toml),
	         "listen = \"127.0.0.1:0\"\ndatabase = \"%s\"\nsecret_file = \"%s/secret\"\n"
	         "pki_bundle = \"%s/pki.bundle\"\nlog_level = \"error\"\n",
	         /* server.toml takes a SQLite database as a plain path */
	         strncmp(target_url, "sqlite:", 7) == 0 ? target_url + 7 : target_url, cp.dir,
	         cp.dir);
	snprintf(path, sizeof(path), "%s/server.toml", target_dir);
	assert_int_equal(bct_write_file(path, toml), 0);
	if (bc_server_config_load(path, cfg, err, sizeof(err)) != 0 ||
	    bc_server_start(cfg, NULL, NULL, &srv, err, sizeof(err)) != 0)
		fail_msg("second control plane: %s", err);
	*pins = cp.pins;
	snprintf(path, sizeof(path), "http://127.0.0.1:%u", bc_server_port(srv));
	pins->server_url = strdup(path);
	return srv;
}

/* A RenewRequest for the leaf, proved by its key, for a fresh next key (as
 * renew_test.c); the HTTP status. */
static long renew(const struct bc_client_pins *pins, const uint8_t *leaf, size_t leaf_len,
                  EVP_PKEY *key, const char *node_id)
{
	Bettercompute__Join__V1__RenewRequest rq = BETTERCOMPUTE__JOIN__V1__RENEW_REQUEST__INIT;
	ProtobufCBinaryData chain[1];
	struct bc_client_reply r = {0};
	uint8_t *csr = NULL, d[32], sig[64], *wire;
	size_t csr_len = 0, wire_len;
	EVP_PKEY *next = NULL;
	char err[256];
	bc_buf b;

	assert_int_equal(bc_key_generate(&next), 0);
	assert_int_equal(bc_csr_make(next, BC_WIRE_CSR_CN, &csr, &csr_len), 0);
	assert_int_equal(bc_sha256(csr, csr_len, d), 0);
	int64_t t = bc_now_ms();
	bc_buf_init(&b, 0);
	assert_int_equal(bc_buf_put(&b, d, 32), 0);
	assert_int_equal(bc_buf_put_cstr(&b, node_id), 0);
	assert_int_equal(bc_buf_put_u64(&b, (uint64_t)t), 0);
	assert_int_equal(bct_sign(key, BC_PURPOSE_RENEW, b.p, b.len, sig), 0);
	bc_buf_free(&b);
	chain[0].data = (uint8_t *)leaf;
	chain[0].len = leaf_len;
	rq.chain = chain;
	rq.n_chain = 1;
	rq.csr.data = csr;
	rq.csr.len = csr_len;
	rq.client_time_ms = t;
	rq.proof.data = sig;
	rq.proof.len = 64;
	wire_len = bettercompute__join__v1__renew_request__get_packed_size(&rq);
	assert_non_null(wire = malloc(wire_len));
	bettercompute__join__v1__renew_request__pack(&rq, wire);
	assert_int_equal(
	    bc_client_post(pins, BC_WIRE_PATH_RENEW, wire, wire_len, &r, err, sizeof(err)), 0);
	free(wire);
	free(r.body);
	free(csr);
	EVP_PKEY_free(next);
	return r.status;
}

static void test_node_renews_after_the_move(void **state)
{
	struct bct_token_opts to = {.pool = pool_id};
	struct bc_join_answer ans;
	struct bc_copy_report r;
	struct bc_server_config cfg;
	struct bc_client_pins pins;
	struct bc_server *srv;
	bc_store *src, *dst;
	EVP_PKEY *key = NULL;
	char err[512], sql[256], *t = bct_token(&cp, &to, NULL);

	(void)state;
	assert_int_equal(bc_key_generate(&key), 0);
	struct bct_join_opts jo = {.token = t, .key = key};
	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	free(t);
	/* the operator stops the server, then copies */
	bc_server_stop(cp.srv);
	cp.srv = NULL;
	src = open_source();
	dst = open_url(target_url);
	assert_int_equal(bc_store_copy(src, dst, 2, &r, err, sizeof(err)), 0);
	for (size_t i = 0; i < r.n_tables; i++)
		if (strcmp(r.tables[i].table, "nodes") == 0)
			assert_true(r.tables[i].rows == 1);
	assert_true(count(dst, "SELECT COUNT(*) FROM schema_migrations") ==
	            count(src, "SELECT COUNT(*) FROM schema_migrations"));
	assert_true(count(dst, "SELECT COUNT(*) FROM events") ==
	            count(src, "SELECT COUNT(*) FROM events"));
	bc_store_close(dst);
	bc_store_close(src);

	srv = start_on_target(&cfg, &pins);
	assert_int_equal(renew(&pins, ans.chain[0], ans.chain_lens[0], key, ans.node_id), 200);
	snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM node_certs WHERE node_id = '%s'",
	         ans.node_id);
	assert_true(count(bc_server_store(srv), sql) == 2);
	bc_server_stop(srv);
	bc_server_config_free(&cfg);
	free(pins.server_url);
	bc_join_answer_free(&ans);
	EVP_PKEY_free(key);
}

/* The lineage of a node's certificates, its claimed hardware key and an API key's
 * lifetime move with the store: the old certificate stays superseded on the target. */
static void test_lineage_and_key_scope_survive_the_move(void **state)
{
	struct bct_token_opts to = {.pool = pool_id};
	struct bc_join_answer ans, s1, s2;
	struct bc_copy_report r;
	struct bc_server_config cfg;
	struct bc_client_pins pins;
	struct bc_server *srv;
	bc_store *src, *dst;
	EVP_PKEY *key = NULL, *k1 = NULL, *k2 = NULL;
	char err[512], *t = bct_token(&cp, &to, NULL);
	static const char *const checks[] = {
	    "SELECT COUNT(*) FROM node_certs WHERE predecessor IS NOT NULL AND csr_sha256 IS NOT "
	    "NULL",
	    "SELECT COUNT(*) FROM node_certs WHERE used_at IS NOT NULL",
	    "SELECT COUNT(*) FROM node_certs WHERE superseded_at IS NOT NULL",
	    "SELECT COUNT(*) FROM nodes WHERE claimed_key IS NOT NULL AND hardware_key IS NULL",
	    "SELECT COUNT(*) FROM api_keys WHERE expires_at = 4102444800000 AND last_used_at = 2",
	};

	(void)state;
	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_key_generate(&k1), 0);
	assert_int_equal(bc_key_generate(&k2), 0);
	struct bct_join_opts jo = {
	    .token = t, .key = key, .product_uuid = "6b1d0c3e-7777-4000-8000-000000000007"};
	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	free(t);
	assert_int_equal(bct_renew(&cp, &ans, key, k1, &s1), 0);
	assert_int_equal(bct_renew(&cp, &s1, k1, k2, &s2), 0);
	bc_server_stop(cp.srv);
	cp.srv = NULL;
	src = open_source();
	exec(src, "INSERT INTO api_keys (id, tenant_id, secret_hash, name, created_at, expires_at, "
	          "last_used_at) VALUES ('key_copy', 'root', '00', 'ci', 1, 4102444800000, 2)");
	dst = open_url(target_url);
	assert_int_equal(bc_store_copy(src, dst, 2, &r, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(checks) / sizeof(*checks); i++) {
		if (count(src, checks[i]) < 1)
			fail_msg("nothing to copy: %s", checks[i]);
		assert_true(count(dst, checks[i]) == count(src, checks[i]));
	}
	bc_store_close(dst);
	bc_store_close(src);

	/* on the target the join's certificate is still superseded */
	srv = start_on_target(&cfg, &pins);
	assert_int_equal(renew(&pins, ans.chain[0], ans.chain_lens[0], key, ans.node_id), 403);
	assert_int_equal(renew(&pins, s2.chain[0], s2.chain_lens[0], k2, ans.node_id), 200);
	bc_server_stop(srv);
	bc_server_config_free(&cfg);
	free(pins.server_url);
	bc_join_answer_free(&ans);
	bc_join_answer_free(&s1);
	bc_join_answer_free(&s2);
	EVP_PKEY_free(key);
	EVP_PKEY_free(k1);
	EVP_PKEY_free(k2);
}

static void test_refusals(void **state)
{
	struct bc_copy_report r;
	bc_store *src = open_source(), *dst = open_url(target_url);
	char err[512];

	(void)state;
	exec(src, "INSERT INTO events (id, tenant_id, type, created_at) VALUES ('evt_a', 'root', "
	          "'test.copy', 1)");
	exec(src, "INSERT INTO events (id, tenant_id, type, created_at) VALUES ('evt_b', 'root', "
	          "'test.copy', 2)");
	assert_int_equal(bc_store_copy(src, dst, 0, &r, err, sizeof(err)), 0);
	/* a target with rows */
	assert_int_equal(bc_store_copy(src, dst, 0, &r, err, sizeof(err)), BC_ERR_CONFLICT);
	assert_non_null(strstr(err, "target is not empty"));
	bc_store_close(dst);
	if (target_db[0] == '\0') {
		snprintf(target_url, sizeof(target_url), "sqlite:%s/target2.db", target_dir);
	} else {
		/* a fresh target for what follows */
		bct_pg_drop(getenv("BC_TEST_POSTGRES_URL"), target_db);
		assert_int_equal(bct_pg_create(getenv("BC_TEST_POSTGRES_URL"), target_db,
		                               sizeof(target_db), target_url, sizeof(target_url),
		                               err, sizeof(err)),
		                 0);
	}
	dst = open_url(target_url);
	/* a version that differs */
	exec(dst,
	     "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999999, 'x', 0)");
	assert_int_equal(bc_store_copy(src, dst, 0, &r, err, sizeof(err)), BC_ERR_CONFIG);
	assert_non_null(strstr(err, "schema is version"));
	exec(dst, "DELETE FROM schema_migrations WHERE version = 999999");
	/* halfway: events cannot all go in (a unique index only the target has); the
	 * rows of the tables before are not left behind */
	exec(dst, "CREATE UNIQUE INDEX one_event_per_type ON events (type)");
	assert_int_equal(bc_store_copy(src, dst, 0, &r, err, sizeof(err)), BC_ERR_CONFLICT);
	assert_non_null(strstr(err, "events"));
	assert_true(count(dst, "SELECT COUNT(*) FROM tenants") == 0);
	assert_true(count(dst, "SELECT COUNT(*) FROM nodes") == 0);
	exec(dst, "DROP INDEX one_event_per_type");
	/* a table the copy does not know */
	exec(src, "CREATE TABLE extra (x BIGINT)");
	assert_int_equal(bc_store_copy(src, dst, 0, &r, err, sizeof(err)), BC_ERR_CONFIG);
	assert_non_null(strstr(err, "extra"));
	exec(src, "DROP TABLE extra");
	assert_int_equal(bc_store_copy(src, dst, 0, &r, err, sizeof(err)), 0);
	bc_store_close(dst);
	bc_store_close(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_node_renews_after_the_move, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lineage_and_key_scope_survive_the_move, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
