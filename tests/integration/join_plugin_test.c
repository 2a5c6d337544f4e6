/* Attestor plugins loaded from shared objects named in server.toml: one admits a
 * join through the generic two-round (challenge) machinery, one registered as
 * join-token replaces the built-in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bctest.h"
#include "join/join.h"

/* Both rounds of a lab join with a fresh key, claiming serial. */
static int lab_join(struct bct_cp *cp, const char *serial, struct bc_join_answer *ans)
{
	struct bc_join_answer first;
	uint8_t *csr = NULL, answer[32];
	size_t csr_len = 0;
	EVP_PKEY *key = NULL;
	int rc;

	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_csr_make(key, BC_WIRE_CSR_CN, &csr, &csr_len), 0);
	struct bct_join_opts jo = {
	    .attestor = "lab", .key = key, .csr = csr, .csr_len = csr_len, .serial = serial};
	assert_int_equal(bct_join(cp, &jo, &first), 0);
	assert_int_equal(first.state, BC_JOIN_CHALLENGE);
	memcpy(answer, first.challenge, 32);
	bc_join_answer_free(&first);
	jo.attestation = answer;
	jo.attestation_len = 32;
	rc = bct_join(cp, &jo, ans);
	free(csr);
	EVP_PKEY_free(key);
	return rc;
}

static void test_plugin_admits_after_a_challenge(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	char toml[512], pool[64];
	uint8_t *csr = NULL;
	size_t csr_len = 0;
	EVP_PKEY *key = NULL;
	(void)state;

	snprintf(toml, sizeof(toml), "plugins = [\"%s/plugin_lab.so\"]\n", BC_BINARY_DIR);
	assert_int_equal(bct_cp_start(&cp, toml), 0);
	assert_true(bc_join_attestor_known(bc_server_join(cp.srv), "lab"));
	assert_true(bc_join_attestor_known(bc_server_join(cp.srv), "join-token"));
	assert_int_equal(bct_pool(&cp, "root", "lab", "{\"joinAttestors\":[\"lab\"]}", pool), 0);
	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_csr_make(key, BC_WIRE_CSR_CN, &csr, &csr_len), 0);

	/* round 1: a signed challenge, nothing issued or written */
	struct bct_join_opts jo = {.attestor = "lab", .key = key, .csr = csr, .csr_len = csr_len};
	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_CHALLENGE);
	assert_string_equal(ans.challenge_attestor, "lab");
	assert_int_equal(ans.challenge_len, 32);
	assert_int_equal(ans.n_chain, 0);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 0);
	uint8_t answer[32];
	memcpy(answer, ans.challenge, 32);
	bc_join_answer_free(&ans);

	/* round 2 with another CSR: the answer is bound to the first CSR */
	EVP_PKEY *other = NULL;
	assert_int_equal(bc_key_generate(&other), 0);
	struct bct_join_opts wrong = {
	    .attestor = "lab", .key = other, .attestation = answer, .attestation_len = 32};
	assert_int_equal(bct_join(&cp, &wrong, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "lab-answer");

	/* round 2 with the same CSR: admitted into the plugin's pool */
	jo.attestation = answer;
	jo.attestation_len = 32;
	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_param p[] = {BC_TEXT(ans.node_id), BC_TEXT(pool)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND pool_id = $2 "
	                           "AND attestor = 'lab'",
	                           p, 2),
	                 1);
	/* a plugin that sets no allowed kinds (as one built before them): none */
	char *kinds = bct_text(&cp, "SELECT allowed_kinds FROM nodes WHERE id = $1", p, 1);
	assert_non_null(kinds);
	assert_string_equal(kinds, "[]");
	free(kinds);
	bc_join_answer_free(&ans);

	/* the kinds a plugin's result names are the node's */
	assert_int_equal(lab_join(&cp, "lab-kinds", &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_param k[] = {BC_TEXT(ans.node_id)};
	kinds = bct_text(&cp, "SELECT allowed_kinds FROM nodes WHERE id = $1", k, 1);
	assert_non_null(kinds);
	assert_string_equal(kinds, "[\"lab.run\"]");
	free(kinds);
	bc_join_answer_free(&ans);
	/* a malformed list is the plugin's bug: nothing is written */
	int64_t nodes = bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0);
	assert_int_not_equal(lab_join(&cp, "lab-bad-kinds", &ans), 0);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), nodes);

	/* the lab pool takes only lab: a token into it is pool-attestor */
	struct bct_token_opts to = {.pool = pool};
	char *t = bct_token(&cp, &to, NULL);
	struct bct_join_opts tj = {.token = t};
	assert_int_equal(bct_join(&cp, &tj, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "join:pool-attestor");
	free(t);
	free(csr);
	EVP_PKEY_free(key);
	EVP_PKEY_free(other);
	bct_cp_stop(&cp);
}

static void test_plugin_replaces_join_token(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	char toml[512], pool[64], replaced[64];
	(void)state;

	snprintf(toml, sizeof(toml), "plugins = [\"%s/plugin_replace.so\"]\n", BC_BINARY_DIR);
	assert_int_equal(bct_cp_start(&cp, toml), 0);
	assert_int_equal(bct_pool(&cp, "root", "default", NULL, pool), 0);
	assert_int_equal(bct_pool(&cp, "root", "replaced", NULL, replaced), 0);
	/* a real token no longer admits: the built-in is gone */
	struct bct_token_opts to = {.pool = pool};
	char *t = bct_token(&cp, &to, NULL);
	struct bct_join_opts jo = {.token = t};
	assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "replaced-says-no");
	/* the replacement's own credential does, under the id join-token */
	struct bct_join_opts jr = {.token = "let-me-in"};
	assert_int_equal(bct_join(&cp, &jr, &ans), 0);
	bc_param p[] = {BC_TEXT(ans.node_id), BC_TEXT(replaced)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND pool_id = $2 "
	                           "AND attestor = 'join-token'",
	                           p, 2),
	                 1);
	bc_join_answer_free(&ans);
	free(t);
	bct_cp_stop(&cp);
}

/* A gate join with that evidence: the join's answer, and how many write
 * transactions it began (the refusal event's own included). */
static int gate_join(struct bct_cp *cp, const char *word, uint64_t *writes)
{
	struct bc_join_answer ans;
	uint64_t before = bc_store_tx_begun(bct_store(cp), BC_TX_WRITE);
	struct bct_join_opts jo = {.attestor = "gate",
	                           .attestation = (const uint8_t *)word,
	                           .attestation_len = strlen(word)};
	int rc = bct_join(cp, &jo, &ans);

	*writes = bc_store_tx_begun(bct_store(cp), BC_TX_WRITE) - before;
	if (rc == 0)
		bc_join_answer_free(&ans);
	return rc;
}

/* A control plane that loads the gate plugin. */
static void start_gate(struct bct_cp *cp)
{
	char toml[512];

	snprintf(toml, sizeof(toml), "plugins = [\"%s/plugin_gate.so\"]\n", BC_BINARY_DIR);
	assert_int_equal(bct_cp_start(cp, toml), 0);
}

/* check() runs before the transaction: a check that refuses never opens one (the only
 * write is the refusal event's), while a refusal in verify() rolls one back first; and
 * verify() sees the state check() left. */
static void test_plugin_check_runs_before_the_transaction(void **state)
{
	struct bct_cp cp;
	uint64_t writes = 0;
	(void)state;

	start_gate(&cp);
	assert_int_equal(gate_join(&cp, "stop", &writes), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "gate-check");
	assert_int_equal(writes, 1);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = "
	                           "'security.join.refused'",
	                           NULL, 0),
	                 1);
	assert_int_equal(gate_join(&cp, "late", &writes), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "gate-verify");
	assert_int_equal(writes, 2);
	assert_int_equal(gate_join(&cp, "open", &writes), 0);
	assert_int_equal(writes, 1);
	assert_int_equal(
	    bct_count(&cp, "SELECT COUNT(*) FROM nodes WHERE attestor = 'gate'", NULL, 0), 1);
	bct_cp_stop(&cp);
}

/* A hardware key the attestor proves stays unique across the fleet: the same machine
 * joins one tenant, and another tenant cannot take it. */
static void test_proven_hardware_key_is_unique_across_the_fleet(void **state)
{
	struct bct_cp cp;
	uint64_t writes = 0;
	(void)state;

	start_gate(&cp);
	assert_int_equal(bct_tenant(&cp, "tnt_gate_beta"), 0);
	assert_int_equal(gate_join(&cp, "proven-root", &writes), 0);
	assert_int_equal(gate_join(&cp, "proven-beta", &writes), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "join:reclaim");
	/* the holder is root's node: beta's refusal never names it */
	{
		struct bct_refusal r = bct_last_refusal(&cp);
		assert_string_equal(r.tenant_id, "tnt_gate_beta");
		assert_string_equal(r.node_id, "");
		assert_int_equal(bct_count(&cp,
		                           "SELECT COUNT(*) FROM events WHERE tenant_id = "
		                           "'tnt_gate_beta' AND subject IS NOT NULL",
		                           NULL, 0),
		                 0);
	}
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE hardware_key = "
	                           "'gate:one-machine' AND tenant_id = 'root'",
	                           NULL, 0),
	                 1);
	assert_int_equal(
	    bct_count(&cp, "SELECT COUNT(*) FROM nodes WHERE tenant_id = 'tnt_gate_beta'", NULL, 0),
	    0);
	bct_cp_stop(&cp);
}

static void test_bad_plugin_is_a_clear_error(void **state)
{
	struct bc_join_config jc = {0};
	struct bc_join_service *s = NULL;
	char err[512] = "";
	bc_pki *pki = NULL;
	(void)state;

	assert_int_equal(bc_pki_generate("bc.test", &pki), 0);
	jc.pki = pki;
	jc.store = (bc_store *)1; /* never used by registration */
	assert_int_equal(bc_join_service_new(&jc, &s), 0);
	assert_int_equal(bc_join_load_plugin(s, "/nonexistent/plugin.so", err, sizeof(err)),
	                 BC_ERR_CONFIG);
	assert_non_null(strstr(err, "/nonexistent/plugin.so"));
	/* a shared object without the entry point */
	assert_int_equal(bc_join_load_plugin(s, "libc.so.6", err, sizeof(err)), BC_ERR_CONFIG);
	assert_non_null(strstr(err, "bc_attestor_plugin"));
	bc_join_service_free(s);
	bc_pki_free(pki);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plugin_admits_after_a_challenge),
	    cmocka_unit_test(test_plugin_replaces_join_token),
	    cmocka_unit_test(test_plugin_check_runs_before_the_transaction),
	    cmocka_unit_test(test_proven_hardware_key_is_unique_across_the_fleet),
	    cmocka_unit_test(test_bad_plugin_is_a_clear_error),
	};
	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
