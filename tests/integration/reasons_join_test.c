/* JoinService's own refusals that no built-in attestor gives on its own: a token that
 * does not open (sealed to another key, or for another CSR), and each bug a plugin can
 * have (tests/plugins/plugin_misbehave.c): no tenant, no reason, no outcome, a pool
 * that is not the tenant's, a node that does not exist or is retired. Each reaches the
 * refusal hook by name, and the same 403 reaches the machine. And a reclaim keeps a
 * cordoned node cordoned: a machine coming back does not undo an operator's cordon. */
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
#include "bettercompute/join/v1/join.pb-c.h"
#include "join/join.h"

/* A Join whose token is sealed to seal_to for the CSR digest bound_to (NULL: the
 * request's own CSR): the HTTP status. */
static long join_sealed(struct bct_cp *cp, const char *token, EVP_PKEY *seal_to,
                        const uint8_t *bound_to)
{
	Bettercompute__Join__V1__JoinRequest rq = BETTERCOMPUTE__JOIN__V1__JOIN_REQUEST__INIT;
	Bettercompute__Join__V1__HardwareClaims hc = BETTERCOMPUTE__JOIN__V1__HARDWARE_CLAIMS__INIT;
	uint8_t *csr = NULL, *sealed = NULL, *wire, d[32];
	size_t csr_len = 0, sealed_len = 0, wire_len;
	char *mac = "52:54:00:00:00:01";
	EVP_PKEY *key = NULL;
	long status;

	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_csr_make(key, BC_WIRE_CSR_CN, &csr, &csr_len), 0);
	assert_int_equal(bc_sha256(csr, csr_len, d), 0);
	assert_int_equal(
	    bc_client_seal_token(seal_to, token, bound_to ? bound_to : d, &sealed, &sealed_len), 0);
	rq.attestor = "join-token";
	rq.role = "node";
	rq.csr.data = csr;
	rq.csr.len = csr_len;
	rq.sealed_token.data = sealed;
	rq.sealed_token.len = sealed_len;
	hc.n_macs = 1;
	hc.macs = &mac;
	rq.claims = &hc;
	wire_len = bettercompute__join__v1__join_request__get_packed_size(&rq);
	assert_non_null(wire = malloc(wire_len));
	bettercompute__join__v1__join_request__pack(&rq, wire);
	status = bct_post(cp, BC_WIRE_PATH_JOIN, wire, wire_len);
	free(wire);
	free(sealed);
	free(csr);
	EVP_PKEY_free(key);
	return status;
}

static void test_a_token_that_does_not_open(void **state)
{
	struct bct_cp *cp = *state;
	EVP_PKEY *other = NULL;
	uint8_t elsewhere[32];
	char id[64];
	char *t = bct_token(cp, &(struct bct_token_opts){0}, id);

	assert_non_null(t);
	/* the control: sealed as the agent seals it, the token admits */
	assert_int_equal(join_sealed(cp, t, cp->pins.join_encryption, NULL), 200);
	free(t);
	t = bct_token(cp, &(struct bct_token_opts){.uses = 5}, id);

	/* sealed to another key than the pinned JoinService key */
	assert_int_equal(bc_key_generate(&other), 0);
	assert_int_equal(join_sealed(cp, t, other, NULL), 403);
	assert_string_equal(bct_last_reason(cp), "token-unreadable");
	/* sealed for another CSR: the CSR digest is the seal's context */
	memset(elsewhere, 0x5a, sizeof(elsewhere));
	assert_int_equal(join_sealed(cp, t, cp->pins.join_encryption, elsewhere), 403);
	assert_string_equal(bct_last_reason(cp), "token-unreadable");
	/* nothing names the token: no credential backs either request */
	struct bct_refusal r = bct_last_refusal(cp);
	assert_string_equal(r.token_id, "");
	bc_param p[] = {BC_TEXT(id)};
	assert_int_equal(bct_count(cp, "SELECT uses_left FROM join_tokens WHERE id = $1", p, 1), 5);
	EVP_PKEY_free(other);
	free(t);
}

/* The plugin's join, claiming serial: the reason the hook saw (the answer is 403). */
static const char *misbehave(struct bct_cp *cp, const char *serial)
{
	struct bc_join_answer ans;
	struct bct_join_opts jo = {.attestor = "misbehave", .serial = serial};

	assert_int_equal(bct_join(cp, &jo, &ans), BC_ERR_DENIED);
	return bct_last_reason(cp);
}

static void test_a_plugin_bug_is_refused_by_name(void **state)
{
	struct bct_cp *cp = *state;
	struct bc_join_answer ans;
	char node[300];

	assert_string_equal(misbehave(cp, "anything"), "misbehave-serial");
	assert_string_equal(misbehave(cp, "no-tenant"), "join:attestor-no-tenant");
	assert_string_equal(misbehave(cp, "refuse-silent"), "attestor-refused");
	assert_string_equal(misbehave(cp, "no-outcome"), "attestor-no-outcome");
	assert_string_equal(misbehave(cp, "pool-unknown"), "join:pool-unknown");
	assert_string_equal(misbehave(cp, "node:node_00000000000000000000000000"),
	                    "join:node-unknown");

	/* a node that exists is reclaimed in place; once retired it is refused */
	char *t = bct_token(cp, &(struct bct_token_opts){0}, NULL);
	struct bct_join_opts tj = {.token = t};
	assert_int_equal(bct_join(cp, &tj, &ans), 0);
	snprintf(node, sizeof(node), "node:%s", ans.node_id);
	bc_param p[] = {BC_TEXT(ans.node_id)};
	assert_int_equal(bct_exec(cp, "UPDATE nodes SET state = 'retired' WHERE id = $1", p, 1), 0);
	assert_string_equal(misbehave(cp, node), "join:node-retired");
	/* the retired node's tenant is named: a credential (the node) backs it */
	struct bct_refusal r = bct_last_refusal(cp);
	assert_string_equal(r.tenant_id, "root");
	assert_int_equal(bct_events(cp, "security.join.refused", "join:node-retired", NULL), 1);
	bc_join_answer_free(&ans);
	free(t);
	/* none of them wrote a node */
	assert_int_equal(bct_count(cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 1);
}

static void test_a_reclaim_keeps_a_cordoned_node_cordoned(void **state)
{
	struct bct_cp *cp = *state;
	const char *uuid = "6b1d0c3e-3333-4000-8000-000000000003";
	struct bc_join_answer a1, a2;
	char pool[64];

	assert_int_equal(bct_pool(cp, "root", "cordon", "{}", pool), 0);
	char *t1 = bct_token(cp, &(struct bct_token_opts){.pool = pool}, NULL);
	char *t2 = bct_token(cp, &(struct bct_token_opts){.pool = pool, .allow_reclaim = 1}, NULL);
	struct bct_join_opts j1 = {.token = t1, .product_uuid = uuid};
	struct bct_join_opts j2 = {.token = t2, .product_uuid = uuid};
	assert_int_equal(bct_join(cp, &j1, &a1), 0);
	bc_param p[] = {BC_TEXT(a1.node_id)};
	assert_int_equal(bct_exec(cp, "UPDATE nodes SET state = 'cordoned' WHERE id = $1", p, 1),
	                 0);
	assert_int_equal(bct_join(cp, &j2, &a2), 0);
	assert_string_equal(a2.node_id, a1.node_id);
	assert_int_equal(bct_count(cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND generation = 2 "
	                           "AND state = 'cordoned'",
	                           p, 1),
	                 1);
	bc_join_answer_free(&a1);
	bc_join_answer_free(&a2);
	free(t1);
	free(t2);
}

int main(void)
{
	static char plugins[512];
	snprintf(plugins, sizeof(plugins), "plugins = [\"%s/plugin_misbehave.so\"]\n",
	         BC_BINARY_DIR);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_prestate_setup_teardown(test_a_token_that_does_not_open, bct_cp_setup,
	                                             bct_cp_teardown, NULL),
	    cmocka_unit_test_prestate_setup_teardown(test_a_plugin_bug_is_refused_by_name,
	                                             bct_cp_setup, bct_cp_teardown, plugins),
	    cmocka_unit_test_setup_teardown(test_a_reclaim_keeps_a_cordoned_node_cordoned,
	                                    bct_cp_setup, bct_cp_teardown),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
