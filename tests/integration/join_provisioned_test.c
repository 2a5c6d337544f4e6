/* JoinService with the provisioned attestor, in-process over loopback HTTP with the
 * real client: a provider bootstrap's token admits a new node, a deploy's token
 * re-keys its target in place and completes the workflow's join step, every refusal
 * by name (the token stays usable after each), inventory at every join, and one
 * admission out of 32 racing joins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/pki.h"
#include "bctest.h"
#include "provision/provision.h"

#define UUID_A       "6b1f3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e"
#define UUID_A_UPPER "6B1F3C52-0A4E-4D7B-9C1E-2F3A4B5C6D7E"
#define UUID_B       "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"
#define UUID_C       "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
#define UUID_D       "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f60"
#define UUID_E       "3e4f5a6b-7c8d-4e9f-8a1b-2c3d4e5f6071"
#define EXPECT_A     "{\"productUuid\":\"" UUID_A "\"}"
#define EXPECT_C     "{\"productUuid\":\"" UUID_C "\"}"
#define EXPECT_D     "{\"productUuid\":\"" UUID_D "\"}"

static struct bct_cp cp;
static char pool_id[64];

static int setup(void **state)
{
	(void)state;
	if (bct_cp_start(&cp, "[attestors.provisioned]\n") != 0)
		return -1;
	return bct_pool(&cp, "root", "metal", "{}", pool_id);
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	return 0;
}

static int64_t uses_left(const char *tok_id)
{
	bc_param p[] = {BC_TEXT(tok_id)};
	return bct_count(&cp, "SELECT uses_left FROM join_tokens WHERE id = $1", p, 1);
}

static char *prov_token(int64_t uses, const char *expect, char id[64])
{
	struct bct_token_opts to = {
	    .pool = pool_id, .role = "provisioned", .uses = uses, .expect = expect};
	return bct_token(&cp, &to, id);
}

static int prov_join(const char *token, const char *uuid, struct bc_join_answer *ans)
{
	struct bct_join_opts jo = {.attestor = "provisioned",
	                           .token = token,
	                           .product_uuid = uuid,
	                           .mac = "AA-BB-CC-00-11-22"};
	return bct_join(&cp, &jo, ans);
}

/* A refused join, by name, that leaves the token's use in place. */
static void refused(const char *token, const char *tok_id, const char *uuid, const char *reason)
{
	struct bc_join_answer ans;
	int64_t before = uses_left(tok_id);

	assert_int_equal(prov_join(token, uuid, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), reason);
	assert_int_equal(uses_left(tok_id), before);
}

/* A node joined with a node token, claiming uuid. */
static void token_node(const char *uuid, struct bc_join_answer *ans)
{
	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(&cp, &to, NULL);
	struct bct_join_opts jo = {.token = t, .product_uuid = uuid};

	assert_int_equal(bct_join(&cp, &jo, ans), 0);
	free(t);
}

/* What a deploy's userdata.render step leaves: a running deploy of node_id whose
 * render step minted a provisioned token (its secret returned). */
static char *deploy(const char *node_id, char wf[64], char tok_id[64])
{
	char *token = prov_token(1, "{}", tok_id), *data = NULL;

	assert_non_null(token);
	assert_int_equal(bc_new_id("wf", wf, 64), 0);
	assert_int_equal(bc_workflow_deploy_data(tok_id, 0, 1, &data), 0);
	bc_param w[] = {BC_TEXT(wf), BC_TEXT(node_id), BC_TEXT(data)};
	assert_int_equal(
	    bct_exec(&cp,
	             "INSERT INTO workflows (id, tenant_id, node_id, kind, state, data, "
	             "created_at, updated_at) VALUES ($1, 'root', $2, 'deploy', "
	             "'running', $3, 1, 1)",
	             w, 3),
	    0);
	bc_param t[] = {BC_TEXT(wf), BC_TEXT(node_id), BC_TEXT(tok_id)};
	assert_int_equal(
	    bct_exec(&cp, "UPDATE join_tokens SET workflow_id = $1, node_id = $2 WHERE id = $3", t,
	             3),
	    0);
	free(data);
	return token;
}

static void test_bootstrap_joins_a_new_node(void **state)
{
	struct bc_join_answer ans;
	struct bc_node_identity id;
	char tok_id[64];
	char *t = prov_token(1, EXPECT_A, tok_id);
	(void)state;

	/* the firmware's upper case is the same machine */
	assert_int_equal(prov_join(t, UUID_A_UPPER, &ans), 0);
	assert_int_equal(uses_left(tok_id), 0);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	assert_string_equal(id.role, "node");
	bc_node_identity_clear(&id);
	bc_param p[] = {BC_TEXT(ans.node_id), BC_TEXT(pool_id)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND pool_id = $2 AND "
	                           "attestor = 'provisioned' AND generation = 1",
	                           p, 2),
	                 1);
	/* the inventory holds the claims, canonical */
	char *inv = bct_text(&cp, "SELECT data FROM inventory WHERE node_id = $1", p, 1);
	assert_non_null(inv);
	assert_non_null(strstr(inv, "\"productUuid\":\"" UUID_A "\""));
	assert_non_null(strstr(inv, "\"aa:bb:cc:00:11:22\""));
	free(inv);
	/* spent */
	refused(t, tok_id, UUID_A, "token-used-up");
	bc_join_answer_free(&ans);
	free(t);
}

static void test_every_refusal_by_name(void **state)
{
	struct bc_join_answer ans;
	char id[64];
	char *t;
	(void)state;

	t = prov_token(2, EXPECT_C, id);
	refused(t, id, UUID_C, "not-single-use");
	free(t);
	t = prov_token(1, EXPECT_C, id);
	refused(t, id, NULL, "no-product-uuid");
	refused(t, id, "not-a-uuid", "no-product-uuid");
	/* a machine whose join failed keeps its token: the right one still joins */
	refused(t, id, UUID_B, "product-uuid-mismatch");
	assert_int_equal(prov_join(t, UUID_C, &ans), 0);
	bc_join_answer_free(&ans);
	free(t);
	t = prov_token(1, "{}", id);
	refused(t, id, UUID_C, "unbound");
	free(t);
	/* a node token is no machine credential here */
	struct bct_token_opts to = {.pool = pool_id};
	t = bct_token(&cp, &to, id);
	refused(t, id, UUID_C, "not-single-use");
	free(t);
	/* and a provisioned token is no join-token */
	t = prov_token(1, EXPECT_C, id);
	struct bct_join_opts jo = {.token = t, .product_uuid = UUID_C};
	assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "token-role");
	assert_int_equal(uses_left(id), 1);
	free(t);
	/* and the shared token checks */
	t = prov_token(1, EXPECT_C, id);
	bc_param p[] = {BC_TEXT(id)};
	assert_int_equal(bct_exec(&cp, "UPDATE join_tokens SET revoked_at = 1 WHERE id = $1", p, 1),
	                 0);
	refused(t, id, UUID_C, "token-revoked");
	free(t);
}

static void test_deploy_rekeys_the_node_in_place(void **state)
{
	struct bc_join_answer first, again;
	char wf[64], tok_id[64];
	(void)state;

	token_node(UUID_B, &first);
	char *t = deploy(first.node_id, wf, tok_id);
	/* another machine with the same user data is refused, and spends nothing */
	refused(t, tok_id, UUID_A, "product-uuid-mismatch");
	assert_int_equal(prov_join(t, UUID_B, &again), 0);
	assert_string_equal(again.node_id, first.node_id);
	bc_param n[] = {BC_TEXT(first.node_id)};
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", n, 1), 2);
	assert_int_equal(
	    bct_count(&cp, "SELECT COUNT(*) FROM nodes WHERE id = $1 AND state = 'adopted'", n, 1),
	    1);
	/* the first identity's certificate is revoked; the new one is not */
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "generation = 1 AND revoked_at IS NOT NULL",
	                           n, 1),
	                 1);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "generation = 2 AND revoked_at IS NULL",
	                           n, 1),
	                 1);
	/* the workflow's join step, and so the workflow, succeeded */
	bc_param w[] = {BC_TEXT(wf)};
	char *state_s = bct_text(&cp, "SELECT state FROM workflows WHERE id = $1", w, 1);
	char *data = bct_text(&cp, "SELECT data FROM workflows WHERE id = $1", w, 1);
	assert_string_equal(state_s, "succeeded");
	assert_non_null(strstr(data, "\"name\":\"join\",\"state\":\"succeeded\""));
	free(state_s);
	free(data);
	/* two joins, two inventory records, newest last */
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM inventory WHERE node_id = $1", n, 1),
	                 2);
	refused(t, tok_id, UUID_B, "token-used-up");
	bc_join_answer_free(&first);
	bc_join_answer_free(&again);
	free(t);
}

static void test_cancelled_deploy_is_refused(void **state)
{
	struct bc_join_answer first;
	char wf[64], tok_id[64];
	(void)state;

	token_node(UUID_E, &first);
	char *t = deploy(first.node_id, wf, tok_id);
	bc_param w[] = {BC_TEXT(wf)};
	assert_int_equal(
	    bct_exec(&cp, "UPDATE workflows SET state = 'cancelled' WHERE id = $1", w, 1), 0);
	refused(t, tok_id, UUID_E, "workflow-not-running");
	bc_join_answer_free(&first);
	free(t);
}

static void test_target_without_product_uuid_is_unbound(void **state)
{
	struct bc_join_answer first;
	char wf[64], tok_id[64];
	(void)state;

	/* a node whose join claimed no product UUID: the deploy cannot bind its token */
	token_node(NULL, &first);
	char *t = deploy(first.node_id, wf, tok_id);
	refused(t, tok_id, UUID_A, "unbound");
	bc_join_answer_free(&first);
	free(t);
}

static void test_32_joins_race_for_one_token(void **state)
{
	char tok_id[64];
	int admitted = 0, denied = 0;
	(void)state;

	char *t = prov_token(1, EXPECT_D, tok_id);
	struct bct_join_opts jo = {.attestor = "provisioned", .token = t, .product_uuid = UUID_D};
	int64_t before = bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0);
	assert_int_equal(bct_race(&cp, 32, &jo, &admitted, &denied), 0);
	printf("32 racing joins for one provisioned token: %d admitted, %d refused\n", admitted,
	       denied);
	assert_int_equal(admitted, 1);
	assert_int_equal(denied, 31);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), before + 1);
	assert_int_equal(uses_left(tok_id), 0);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bootstrap_joins_a_new_node),
	    cmocka_unit_test(test_every_refusal_by_name),
	    cmocka_unit_test(test_deploy_rekeys_the_node_in_place),
	    cmocka_unit_test(test_cancelled_deploy_is_refused),
	    cmocka_unit_test(test_target_without_product_uuid_is_unbound),
	    cmocka_unit_test(test_32_joins_race_for_one_token),
	};
	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, setup, teardown);
}
