/* The x509pop attestor in-process over loopback HTTP: a node re-joins as itself with
 * its last chain and key, and each refusal is reached by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bc/x509pop.h"
#include "bct_x509pop.h"
#include "bctest.h"
#include "join/join.h"

static struct bct_cp cp;
static char pool_id[64];

static void test_rejoins_in_place(void **state)
{
	struct bct_machine m;
	struct bct_pop p;
	struct bc_join_answer ans;
	(void)state;

	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	/* offline past its expiry, within the grace period */
	bct_cert_set(&cp, m.ans.node_id, "not_after", bc_now_ms() - 3LL * 24 * 3600 * 1000);
	bct_pop_make(&m, 0, NULL, &p);
	assert_int_equal(bct_pop_join(&cp, &p, "node", &ans), 0);
	assert_string_equal(ans.node_id, m.ans.node_id);
	bc_param q[] = {BC_TEXT(m.ans.node_id)};
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", q, 1), 2);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "revoked_at IS NULL",
	                           q, 1),
	                 1);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = 'node.reclaimed' "
	                           "AND subject = $1 AND data LIKE '%x509pop%'",
	                           q, 1),
	                 1);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM attestation_uses WHERE attestor = "
	                           "'x509pop'",
	                           NULL, 0) >= 1,
	                 1);
	/* the old chain is now an older generation */
	struct bct_pop again;
	bct_pop_make(&m, 0, NULL, &again);
	bct_pop_refused(&cp, &again, "node", "x509pop-generation");
	bct_pop_free(&again);
	bc_join_answer_free(&ans);
	bct_pop_free(&p);
	bct_machine_free(&m);
}

static void test_refusals(void **state)
{
	struct bct_machine m, other;
	struct bct_pop p;
	(void)state;

	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	bct_machine_join(&cp, pool_id, &other, "node", NULL);

	/* not a row of that node: another node's chain under this node's id */
	bct_pop_make(&other, 0, m.ans.node_id, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-malformed");
	bct_pop_free(&p);
	/* a certificate of ours for the node that was never issued */
	{
		struct bct_machine forged = {0};
		const bc_pki *pki = bc_server_pki(cp.srv);
		uint8_t *der = NULL;
		size_t len;
		char serial[33];
		int64_t na;
		assert_int_equal(bc_key_generate(&forged.key), 0);
		struct bc_node_cert_req req = {.node_id = m.ans.node_id,
		                               .role = "node",
		                               .pub = forged.key,
		                               .not_before_ms = bc_now_ms()};
		assert_int_equal(bc_pki_issue_node_cert(pki, &req, &der, &len, serial, &na), 0);
		forged.ans.chain = &der;
		forged.ans.chain_lens = &len;
		forged.ans.n_chain = 1;
		snprintf(forged.ans.node_id, sizeof(forged.ans.node_id), "%s", m.ans.node_id);
		bct_pop_make(&forged, 0, NULL, &p);
		bct_pop_refused(&cp, &p, "node", "x509pop-not-current");
		bct_pop_free(&p);
		free(der);
		EVP_PKEY_free(forged.key);
	}
	/* role mismatch */
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "site", "x509pop-role");
	bct_pop_free(&p);
	/* client time outside the window */
	bct_pop_make(&m, bc_now_ms() - 120000, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-client-time");
	bct_pop_free(&p);
	/* a signature by another key */
	{
		struct bct_machine swapped = m;
		swapped.key = other.key;
		bct_pop_make(&swapped, 0, NULL, &p);
		bct_pop_refused(&cp, &p, "node", "x509pop-signature");
		bct_pop_free(&p);
	}
	/* expired more than the grace period ago */
	bct_cert_set(&cp, m.ans.node_id, "not_after", bc_now_ms() - 8LL * 24 * 3600 * 1000);
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-expired");
	bct_pop_free(&p);
	bct_cert_set(&cp, m.ans.node_id, "not_after", bc_now_ms() + 3600000);
	/* revoked */
	bct_cert_set(&cp, m.ans.node_id, "revoked_at", bc_now_ms());
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-revoked");
	bct_pop_free(&p);
	bc_param q[] = {BC_TEXT(m.ans.node_id)};
	assert_int_equal(
	    bct_exec(&cp, "UPDATE node_certs SET revoked_at = NULL WHERE node_id = $1", q, 1), 0);
	/* retired */
	assert_int_equal(bct_exec(&cp, "UPDATE nodes SET state = 'retired' WHERE id = $1", q, 1),
	                 0);
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-retired");
	bct_pop_free(&p);
	assert_int_equal(bct_exec(&cp, "UPDATE nodes SET state = 'adopted' WHERE id = $1", q, 1),
	                 0);
	/* from before revoke-identity: the generation moved on */
	assert_int_equal(
	    bct_exec(&cp, "UPDATE nodes SET generation = generation + 1 WHERE id = $1", q, 1), 0);
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-generation");
	bct_pop_free(&p);
	/* a leaf that names a TPM AK, recorded as the node's row: only tpm re-joins it */
	{
		struct bct_machine stmt = {0};
		const bc_pki *pki = bc_server_pki(cp.srv);
		const char *urn[1] = {BC_WIRE_TPM_AK_URN_SHA256
		                      "000b0123456789abcdef0123456789abcdef"
		                      "0123456789abcdef0123456789abcdef"};
		uint8_t *der = NULL, h[32];
		size_t len;
		char serial[33], hexsha[65];
		int64_t na;
		assert_int_equal(bc_key_generate(&stmt.key), 0);
		struct bc_node_cert_req req = {.node_id = m.ans.node_id,
		                               .role = "node",
		                               .pub = stmt.key,
		                               .statements = urn,
		                               .n_statements = 1,
		                               .not_before_ms = bc_now_ms()};
		assert_int_equal(bc_pki_issue_node_cert(pki, &req, &der, &len, serial, &na), 0);
		assert_int_equal(bc_sha256(der, len, h), 0);
		bc_hex_encode_to(h, 32, hexsha);
		bc_param r[] = {BC_TEXT(serial), BC_TEXT(m.ans.node_id), BC_BLOB(der, len),
		                BC_TEXT(hexsha), BC_INT(bc_now_ms()),    BC_INT(na)};
		assert_int_equal(
		    bct_exec(&cp,
		             "INSERT INTO node_certs (serial, node_id, generation, "
		             "der, der_sha256, not_before, not_after, created_at) "
		             "SELECT $1, $2, generation, $3, $4, $5, $6, $5 FROM nodes "
		             "WHERE id = $2",
		             r, 6),
		    0);
		stmt.ans.chain = &der;
		stmt.ans.chain_lens = &len;
		stmt.ans.n_chain = 1;
		snprintf(stmt.ans.node_id, sizeof(stmt.ans.node_id), "%s", m.ans.node_id);
		bct_pop_make(&stmt, 0, NULL, &p);
		bct_pop_refused(&cp, &p, "node", "x509pop-key-statement");
		bct_pop_free(&p);
		free(der);
		EVP_PKEY_free(stmt.key);
	}
	/* garbage evidence */
	{
		struct bct_pop g = {0};
		assert_int_equal(bc_key_generate(&g.next), 0);
		assert_int_equal(bc_csr_make(g.next, BC_WIRE_CSR_CN, &g.csr, &g.csr_len), 0);
		g.evidence = strdup("{\"v\":1}");
		bct_pop_refused(&cp, &g, "node", "x509pop-malformed");
		bct_pop_free(&g);
	}
	bct_machine_free(&m);
	bct_machine_free(&other);
}

/* A proof is accepted once, on any replica: the attestation_uses row (which every
 * replica sees) and the in-memory cache both refuse it again. */
static void test_replay(void **state)
{
	struct bct_machine m;
	struct bct_pop p;
	uint8_t d[32], subject[32];
	char hex[65];
	bc_buf b;
	(void)state;

	/* the row another replica wrote: computed here as the attestor does */
	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	int64_t t = bc_now_ms();
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
	bct_machine_free(&m);

	/* the cache: a proof whose join was refused after the attestor (the pool takes only
	 * tokens) rolled back its row, but is still never accepted twice */
	char tokens_only[64];
	assert_int_equal(bct_pool(&cp, "root", "tokens-only",
	                          "{\"joinAttestors\":[\"join-token\"]}", tokens_only),
	                 0);
	struct bct_token_opts to = {.pool = tokens_only};
	char *tok = bct_token(&cp, &to, NULL);
	assert_int_equal(bc_key_generate(&m.key), 0);
	struct bct_join_opts jo = {.token = tok, .key = m.key};
	assert_int_equal(bct_join(&cp, &jo, &m.ans), 0);
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "join:pool-attestor");
	bct_pop_refused(&cp, &p, "node", "x509pop-replay");
	bct_pop_free(&p);
	free(tok);
	bct_machine_free(&m);
}

/* A Renew proof (the same payload under purpose renew) and a proof made for another
 * CSR are not x509pop proofs. */
static void test_proof_bound_to_purpose_and_csr(void **state)
{
	struct bct_machine m;
	struct bct_pop p, other;
	uint8_t d[32], sig[64];
	bc_buf b;
	(void)state;

	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	/* the renew proof: ES256 over the very same bytes, purpose renew */
	bct_pop_make(&m, 0, NULL, &p);
	json_t *ev = json_loads(p.evidence, 0, NULL);
	int64_t t = json_integer_value(json_object_get(ev, "clientTime"));
	assert_int_equal(bc_sha256(p.csr, p.csr_len, d), 0);
	bc_buf_init(&b, 0);
	assert_int_equal(bc_buf_put(&b, d, 32), 0);
	assert_int_equal(bc_buf_put_cstr(&b, m.ans.node_id), 0);
	assert_int_equal(bc_buf_put_u64(&b, (uint64_t)t), 0);
	assert_int_equal(bct_sign(m.key, BC_PURPOSE_RENEW, b.p, b.len, sig), 0);
	bc_buf_free(&b);
	char *b64 = bc_b64_encode(sig, 64);
	json_object_set_new(ev, "sig", json_string(b64));
	free(b64);
	free(p.evidence);
	p.evidence = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	bct_pop_refused(&cp, &p, "node", "x509pop-signature");
	/* a proof made for another CSR, sent with this one */
	bct_pop_make(&m, 0, NULL, &other);
	free(p.evidence);
	p.evidence = strdup(other.evidence);
	bct_pop_refused(&cp, &p, "node", "x509pop-signature");
	/* the proof with its own CSR still admits: nothing above spent it */
	struct bc_join_answer ans;
	assert_int_equal(bct_pop_join(&cp, &other, "node", &ans), 0);
	bc_join_answer_free(&ans);
	bct_pop_free(&p);
	bct_pop_free(&other);
	bct_machine_free(&m);
}

struct racer {
	struct bct_cp *cp;
	const struct bct_pop *p;
	int rc;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct bc_join_answer ans;
	struct bct_join_opts jo = {.attestor = "x509pop",
	                           .key = r->p->next,
	                           .csr = r->p->csr,
	                           .csr_len = r->p->csr_len,
	                           .attestation = (const uint8_t *)r->p->evidence,
	                           .attestation_len = strlen(r->p->evidence)};
	r->rc = bct_join(r->cp, &jo, &ans);
	if (r->rc == 0)
		bc_join_answer_free(&ans);
	return NULL;
}

/* Two replicas on one store: one proof sent to both at once admits exactly once. */
static void test_two_replicas_accept_a_proof_once(void **state)
{
	struct bct_cp replica;
	struct bct_machine m;
	struct bct_pop p;
	struct racer r[16];
	pthread_t th[16];
	int admitted = 0, refused = 0;
	(void)state;

	assert_int_equal(bct_cp_replica(&cp, &replica), 0);
	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	bct_pop_make(&m, 0, NULL, &p);
	for (int i = 0; i < 16; i++) {
		r[i].cp = i % 2 ? &replica : &cp;
		r[i].p = &p;
		assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 16; i++) {
		pthread_join(th[i], NULL);
		admitted += r[i].rc == 0;
		refused += r[i].rc == BC_ERR_DENIED;
	}
	assert_int_equal(admitted, 1);
	assert_int_equal(refused, 15);
	bc_param q[] = {BC_TEXT(m.ans.node_id)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = 'node.reclaimed' "
	                           "AND subject = $1",
	                           q, 1),
	                 1);
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", q, 1), 2);
	bct_cp_stop(&replica);
	bct_pop_free(&p);
	bct_machine_free(&m);
}

static void test_site_rejoins_as_site(void **state)
{
	struct bct_machine m;
	struct bct_pop p;
	struct bc_join_answer ans;
	struct bc_node_identity id;
	char site[64];
	(void)state;

	assert_int_equal(bct_site(&cp, "root", "dc-x", site), 0);
	bct_machine_join(&cp, pool_id, &m, "site", site);
	bct_pop_make(&m, 0, NULL, &p);
	assert_int_equal(bct_pop_join(&cp, &p, "site", &ans), 0);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	assert_string_equal(id.role, "site");
	assert_string_equal(id.node_id, m.ans.node_id);
	bc_node_identity_clear(&id);
	bc_join_answer_free(&ans);
	bct_pop_free(&p);
	bct_machine_free(&m);
}

/* A renewal of a's certificate with a's key, for a fresh key: the successor in *next. */
static void renew_to(const struct bct_machine *a, struct bct_machine *next)
{
	memset(next, 0, sizeof(*next));
	assert_int_equal(bc_key_generate(&next->key), 0);
	assert_int_equal(bct_renew(&cp, &a->ans, a->key, next->key, &next->ans), 0);
}

/* A key the node rotated away (its successor renewed since) re-joins no more with
 * x509pop, and the node keeps its identity. */
static void test_rotated_away_key_cannot_x509pop(void **state)
{
	struct bct_machine m, s, t;
	struct bct_pop p;
	struct bc_join_answer ans;
	(void)state;

	bct_machine_join(&cp, pool_id, &m, "node", NULL);
	renew_to(&m, &s);
	renew_to(&s, &t);
	bct_pop_make(&m, 0, NULL, &p);
	bct_pop_refused(&cp, &p, "node", "x509pop-superseded");
	bct_pop_free(&p);
	/* the node is still generation 1, and its current certificate re-joins */
	bc_param q[] = {BC_TEXT(m.ans.node_id)};
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", q, 1), 1);
	bct_pop_make(&t, 0, NULL, &p);
	assert_int_equal(bct_pop_join(&cp, &p, "node", &ans), 0);
	bc_join_answer_free(&ans);
	bct_pop_free(&p);
	bct_machine_free(&m);
	bct_machine_free(&s);
	bct_machine_free(&t);
}

int main(void)
{
	if (bct_engine_skip())
		return BCT_SKIP;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rejoins_in_place),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_replay),
	    cmocka_unit_test(test_proof_bound_to_purpose_and_csr),
	    cmocka_unit_test(test_two_replicas_accept_a_proof_once),
	    cmocka_unit_test(test_site_rejoins_as_site),
	    cmocka_unit_test(test_rotated_away_key_cannot_x509pop),
	};
	bct_pooled(&cp, "[attestors.x509pop]\n", pool_id);
	return cmocka_run_group_tests(tests, bct_pooled_setup, bct_pooled_teardown);
}
