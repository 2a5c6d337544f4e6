/* x509pop's options taking effect (grace_seconds, window_seconds, replay_cache_size),
 * and a lessee's node-tenant certificate re-joining as node with its restriction kept:
 * the same in-process control plane and machines as join_x509pop_test.c (tests/support's
 * bct_x509pop), restarted with each option's table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bct_x509pop.h"
#include "bctest.h"
#include "rows/certs.h"

static struct bct_cp cp;
static char pool_id[64];

static void restart(const char *toml)
{
	assert_int_equal(bct_pooled_teardown(NULL), 0);
	bct_pooled(&cp, toml, pool_id);
	assert_int_equal(bct_pooled_setup(NULL), 0);
}

/* A minute of grace: a certificate expired 30 s ago re-joins, one expired 2 minutes
 * ago is x509pop-expired (with the 7-day default it would re-join). */
static void test_grace_seconds(void **state)
{
	struct bct_machine m;
	struct bct_pop p;
	struct bc_join_answer ans;
	(void)state;

	restart("[attestors.x509pop]\ngrace_seconds = 60\n");
	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	bct_cert_set(&cp, m.ans.node_id, "not_after", bc_now_ms() - 120000);
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-expired");
	bct_pop_free(&p);
	bct_cert_set(&cp, m.ans.node_id, "not_after", bc_now_ms() - 30000);
	bct_pop_make(&m, 0, NULL, &p);
	assert_int_equal(bct_pop_join(&cp, &p, "node", &ans), 0);
	assert_string_equal(ans.node_id, m.ans.node_id);
	bc_join_answer_free(&ans);
	bct_pop_free(&p);
	bct_machine_free(&m);
}

/* A 5-second window: a proof made 10 s ago is x509pop-client-time (the default 60 s
 * would take it), one made 2 s ago re-joins. */
static void test_window_seconds(void **state)
{
	struct bct_machine m;
	struct bct_pop p;
	struct bc_join_answer ans;
	(void)state;

	restart("[attestors.x509pop]\nwindow_seconds = 5\n");
	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	bct_pop_make(&m, bc_now_ms() - 10000, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-client-time");
	bct_pop_free(&p);
	bct_pop_make(&m, bc_now_ms() + 10000, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-client-time");
	bct_pop_free(&p);
	bct_pop_make(&m, bc_now_ms() - 2000, NULL, &p);
	assert_int_equal(bct_pop_join(&cp, &p, "node", &ans), 0);
	bc_join_answer_free(&ans);
	bct_pop_free(&p);
	bct_machine_free(&m);
}

/* replay_cache_size = 0: no cache in memory. A proof whose join was refused after the
 * attestor (its use rolled back) is refused by the pool again, not as a replay: the
 * cache is what said x509pop-replay in join_x509pop_test's test_replay. A proof that
 * was admitted is still refused (attestation_uses). */
static void test_replay_cache_off(void **state)
{
	struct bct_machine m;
	struct bct_pop p;
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
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "join:pool-attestor");
	bct_pop_refused(&cp, &p, "node", "join:pool-attestor");
	bct_pop_free(&p);
	free(tok);
	bct_machine_free(&m);

	/* the use row (another replica's, computed as the attestor does) still refuses */
	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	int64_t t = bc_now_ms();
	uint8_t d[32], subject[32];
	char hex[65];
	bc_buf b;
	bct_pop_make(&m, t, NULL, &p);
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
	bct_pop_refused(&cp, &p, "node", "x509pop-replay");
	bct_pop_free(&p);
	/* and a fresh proof re-joins */
	bct_pop_make(&m, 0, NULL, &p);
	assert_int_equal(bct_pop_join(&cp, &p, "node", &ans), 0);
	bc_join_answer_free(&ans);
	bct_pop_free(&p);
	bct_machine_free(&m);
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
	struct bct_machine m, lessee = {0};
	struct bct_pop p;
	struct bc_join_answer ans;
	const bc_pki *pki;
	uint8_t *der = NULL, point[65];
	size_t len;
	char serial[33];
	int64_t na;
	(void)state;

	restart("[attestors.x509pop]\n");
	pki = bc_server_pki(cp.srv);
	bct_machine_join(&cp, pool_id, &m, "node", NULL);
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
	bct_pop_make(&lessee, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node-tenant", "role-not-admitted");
	bct_pop_free(&p);
	/* asked as node: admitted in place, and issued node-tenant again */
	bct_pop_make(&lessee, 0, NULL, &p);
	assert_int_equal(bct_pop_join(&cp, &p, "node", &ans), 0);
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
	bct_pop_free(&p);
	free(der);
	EVP_PKEY_free(lessee.key);
	bct_machine_free(&m);
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
	bct_pooled(&cp, "[attestors.x509pop]\n", pool_id);
	return cmocka_run_group_tests(tests, bct_pooled_setup, bct_pooled_teardown);
}
