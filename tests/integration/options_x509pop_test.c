/* x509pop's options taking effect (grace_seconds, window_seconds, replay_cache_size),
 * and a lessee's node-tenant certificate re-joining as node with its restriction kept:
 * the same in-process control plane and machines as join_x509pop_test.c (its fixture
 * included), restarted with each option's table. */
#define main join_x509pop_test_main
#include "join_x509pop_test.c"
#undef main

#include "rows/certs.h"

static void restart(const char *toml)
{
	bct_cp_stop(&cp);
	assert_int_equal(bct_cp_start(&cp, toml), 0);
	assert_int_equal(bct_pool(&cp, "root", "default", "{}", pool_id), 0);
}

/* A minute of grace: a certificate expired 30 s ago re-joins, one expired 2 minutes
 * ago is x509pop-expired (with the 7-day default it would re-join). */
static void test_grace_seconds(void **state)
{
	struct machine m;
	struct pop p;
	struct bc_join_answer ans;
	(void)state;

	restart("[attestors.x509pop]\ngrace_seconds = 60\n");
	token_join(&m, "node", NULL);
	set_cert(m.ans.node_id, "not_after", bc_now_ms() - 120000);
	make_pop(&m, 0, NULL, &p);
	expect_refused(&p, "node", "x509pop-expired");
	pop_free(&p);
	set_cert(m.ans.node_id, "not_after", bc_now_ms() - 30000);
	make_pop(&m, 0, NULL, &p);
	assert_int_equal(pop_join(&p, "node", &ans), 0);
	assert_string_equal(ans.node_id, m.ans.node_id);
	bc_join_answer_free(&ans);
	pop_free(&p);
	machine_free(&m);
}

/* A 5-second window: a proof made 10 s ago is x509pop-client-time (the default 60 s
 * would take it), one made 2 s ago re-joins. */
static void test_window_seconds(void **state)
{
	struct machine m;
	struct pop p;
	struct bc_join_answer ans;
	(void)state;

	restart("[attestors.x509pop]\nwindow_seconds = 5\n");
	token_join(&m, "node", NULL);
	make_pop(&m, bc_now_ms() - 10000, NULL, &p);
	expect_refused(&p, "node", "x509pop-client-time");
	pop_free(&p);
	make_pop(&m, bc_now_ms() + 10000, NULL, &p);
	expect_refused(&p, "node", "x509pop-client-time");
	pop_free(&p);
	make_pop(&m, bc_now_ms() - 2000, NULL, &p);
	assert_int_equal(pop_join(&p, "node", &ans), 0);
	bc_join_answer_free(&ans);
	pop_free(&p);
	machine_free(&m);
}

/* replay_cache_size = 0: no cache in memory. A proof whose join was refused after the
 * attestor (its use rolled back) is refused by the pool again, not as a replay: the
 * cache is what said x509pop-replay in join_x509pop_test's test_replay. A proof that
 * was admitted is still refused (attestation_uses). */
static void test_replay_cache_off(void **state)
{
	struct machine m;
	struct pop p;
	struct bc_join_answer ans;
	char tokens_only[64];
	(void)state;

	restart("[attestors.x509pop]\nreplay_cache_size = 0\n");
	assert_int_equal(bct_pool(&cp, "root", "tokens-only",
	                          "{\"joinAttestors\":[\"join-token\"]}", tokens_only),
	                 0);
	char *tok = bct_token(&cp, &(struct bct_token_opts){.pool = tokens_only}, NULL);
	assert_int_equal(bc_key_generate(&m.key), 0);
	struct bct_join_opts jo = {.token = tok, .key = m.key};
	assert_int_equal(bct_join(&cp, &jo, &m.ans), 0);
	make_pop(&m, 0, NULL, &p);
	expect_refused(&p, "node", "join:pool-attestor");
	expect_refused(&p, "node", "join:pool-attestor");
	pop_free(&p);
	free(tok);
	machine_free(&m);

	/* the use row (another replica's, computed as the attestor does) still refuses */
	token_join(&m, "node", NULL);
	int64_t t = bc_now_ms();
	uint8_t d[32], subject[32];
	char hex[65];
	bc_buf b;
	make_pop(&m, t, NULL, &p);
	assert_int_equal(bc_sha256(p.csr, p.csr_len, d), 0);
	bc_buf_init(&b, 0);
	assert_int_equal(bc_buf_put(&b, d, 32), 0);
	assert_int_equal(bc_buf_put_cstr(&b, m.ans.node_id), 0);
	assert_int_equal(bc_buf_put_u64(&b, (uint64_t)t), 0);
	assert_int_equal(bc_sha256(b.p, b.len, subject), 0);
	bc_buf_free(&b);
	bc_hex_encode_to(subject, 32, hex);
	bc_param r[] = {BC_TEXT(hex), BC_INT(t + 60000), BC_INT(t)};
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO attestation_uses (attestor, subject, expires_at, "
	                          "created_at) VALUES ('x509pop', $1, $2, $3)",
	                          r, 3),
	                 0);
	expect_refused(&p, "node", "x509pop-replay");
	pop_free(&p);
	/* and a fresh proof re-joins */
	make_pop(&m, 0, NULL, &p);
	assert_int_equal(pop_join(&p, "node", &ans), 0);
	bc_join_answer_free(&ans);
	pop_free(&p);
	machine_free(&m);
}

struct cert_insert {
	struct bc_cert_write w;
};

static int insert_tx(bc_tx *tx, void *arg)
{
	return bc_row_cert_insert(tx, &((struct cert_insert *)arg)->w);
}

/* A lessee's certificate (node-tenant, as a lease issues it) re-joins by x509pop as
 * node, and the certificate issued is node-tenant again: the restriction is restored,
 * never dropped by a re-join. The row is inserted as a lease would have stored it. */
static void test_node_tenant_rejoins_restricted(void **state)
{
	struct machine m, lessee = {0};
	struct pop p;
	struct bc_join_answer ans;
	const bc_pki *pki;
	uint8_t *der = NULL, point[65];
	size_t len;
	char serial[33];
	int64_t na;
	(void)state;

	restart("[attestors.x509pop]\n");
	pki = bc_server_pki(cp.srv);
	token_join(&m, "node", NULL);
	assert_int_equal(bc_key_generate(&lessee.key), 0);
	struct bc_node_cert_req req = {.node_id = m.ans.node_id,
	                               .role = "node-tenant",
	                               .pub = lessee.key,
	                               .not_before_ms = bc_now_ms()};
	assert_int_equal(bc_pki_issue_node_cert(pki, &req, &der, &len, serial, &na), 0);
	assert_int_equal(bc_key_to_point(lessee.key, point), 0);
	bc_param q[] = {BC_TEXT(m.ans.node_id)};
	struct cert_insert ci = {.w = {.serial = serial,
	                               .node_id = m.ans.node_id,
	                               .generation = bct_count(&cp,
	                                                       "SELECT generation FROM nodes "
	                                                       "WHERE id = $1",
	                                                       q, 1),
	                               .der = der,
	                               .der_len = len,
	                               .not_before = bc_now_ms(),
	                               .not_after = na,
	                               .point = point,
	                               .role = "node-tenant"}};
	assert_int_equal(bc_store_run(bct_store(&cp), BC_TX_WRITE, insert_tx, &ci), 0);
	lessee.ans.chain = &der;
	lessee.ans.chain_lens = &len;
	lessee.ans.n_chain = 1;
	snprintf(lessee.ans.node_id, sizeof(lessee.ans.node_id), "%s", m.ans.node_id);

	/* asked as node-tenant: no machine may ask for the restriction by name */
	make_pop(&lessee, 0, NULL, &p);
	expect_refused(&p, "node-tenant", "role-not-admitted");
	pop_free(&p);
	/* asked as node: admitted in place, and issued node-tenant again */
	make_pop(&lessee, 0, NULL, &p);
	assert_int_equal(pop_join(&p, "node", &ans), 0);
	assert_string_equal(ans.node_id, m.ans.node_id);
	{
		struct bc_node_identity id;
		assert_int_equal(
		    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
		assert_string_equal(id.role, "node-tenant");
		bc_node_identity_clear(&id);
	}
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "role = 'node-tenant'",
	                           q, 1),
	                 2);
	bc_join_answer_free(&ans);
	pop_free(&p);
	free(der);
	EVP_PKEY_free(lessee.key);
	machine_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grace_seconds),
	    cmocka_unit_test(test_window_seconds),
	    cmocka_unit_test(test_replay_cache_off),
	    cmocka_unit_test(test_node_tenant_rejoins_restricted),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, setup, teardown);
}
