/* cloud-iid resolve rules that see the request (spec: resolve(tx, identity, { role,
 * claims })) and may name a known node: a rule narrowed by role or by the machine's
 * claimed product UUID matches only such requests (unknown-instance otherwise), and a
 * rule naming a node re-keys that node in place (join:node-unknown when there is
 * none). Identity tokens of an OIDC issuer this test signs for, from a JWKS file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "attest/attest.h"
#include "bct_cloud.h"
#include "bct_config.h"
#include "bctest.h"

#define UUID_M "4c4c4544-0042-3010-8052-b4c04f4b4b31"

static struct bct_cp cp;
static char dir[256], known[64], absent[64];
static EVP_PKEY *key;
static int serial;

static int setup(void **state)
{
	char *d, *j, *set, path[512], toml[4096];
	(void)state;

	if ((d = bct_tmpdir()) == NULL)
		return -1;
	snprintf(dir, sizeof(dir), "%s", d);
	free(d);
	key = bct_ec_key();
	j = bct_jwk(key, "o1", "ES256");
	set = bct_jwks((const char *const *)&j, 1);
	snprintf(path, sizeof(path), "%s/oidc.jwks", dir);
	if (bct_write_file(path, set) != 0)
		return -1;
	free(j);
	free(set);
	if (bc_new_id("node", known, sizeof(known)) != 0 ||
	    bc_new_id("node", absent, sizeof(absent)) != 0)
		return -1;
	/* tried in file order: the narrow rules first */
	snprintf(toml, sizeof(toml),
	         "[attestors.cloud-iid]\nroles = [\"node\", \"site\"]\n"
	         "[attestors.cloud-iid.oidc.lab]\nissuer = \"https://oidc.test\"\n"
	         "jwks = \"%s\"\naudience = \"https://bc.test\"\n"
	         "account_claim = \"tenant\"\ninstance_claim = \"vm\"\n"
	         "[attestors.cloud-iid.resolve.known]\nprovider = \"oidc.lab\"\n"
	         "account = \"acme\"\nrole = \"node\"\nproduct_uuid = \"%s\"\n"
	         "tenant = \"root\"\nnode = \"%s\"\n"
	         "[attestors.cloud-iid.resolve.gone]\nprovider = \"oidc.lab\"\n"
	         "account = \"gone\"\ntenant = \"root\"\nnode = \"%s\"\n"
	         "[attestors.cloud-iid.resolve.nodes]\nprovider = \"oidc.lab\"\n"
	         "account = \"acme\"\nrole = \"node\"\ntenant = \"root\"\n",
	         path, "4C4C4544-0042-3010-8052-B4C04F4B4B31", known, absent);
	if (bct_cp_start(&cp, toml) != 0)
		return -1;
	bc_param p[] = {BC_TEXT(known), BC_INT(bc_now_ms())};
	return bct_exec(&cp,
	                "INSERT INTO nodes (id, tenant_id, role, state, attestor, joined_at, "
	                "updated_at) VALUES ($1, 'root', 'node', 'adopted', 'join-token', $2, $2)",
	                p, 2);
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	bct_rmrf(dir);
	EVP_PKEY_free(key);
	return 0;
}

/* A join of a fresh instance of account as role, claiming uuid (NULL: none): 0 and
 * the node id into node, or BC_ERR_DENIED. */
static int join(const char *account, const char *role, const char *uuid, char node[64])
{
	struct bc_join_answer ans;
	EVP_PKEY *k = NULL;
	uint8_t *csr = NULL, d[32];
	size_t len;
	char hex[65], hdr[] = "{\"alg\":\"ES256\",\"kid\":\"o1\",\"typ\":\"JWT\"}", body[512], *jwt,
	              *ev;
	int64_t now = bc_now_ms() / 1000;
	int rc;

	assert_int_equal(bc_key_generate(&k), 0);
	assert_int_equal(bc_csr_make(k, BC_WIRE_CSR_CN, &csr, &len), 0);
	assert_int_equal(bc_sha256(csr, len, d), 0);
	bc_hex_encode_to(d, 32, hex);
	snprintf(body, sizeof(body),
	         "{\"iss\":\"https://oidc.test\",\"aud\":\"https://bc.test#%s\",\"iat\":%lld,"
	         "\"exp\":%lld,\"tenant\":\"%s\",\"vm\":\"vm-%d\"}",
	         hex, (long long)now, (long long)(now + 600), account, ++serial);
	assert_non_null(jwt = bct_jwt(key, hdr, body));
	assert_true(asprintf(&ev, "{\"provider\":\"oidc\",\"document\":\"%s\"}", jwt) > 0);
	struct bct_join_opts jo = {.attestor = "cloud-iid",
	                           .role = role,
	                           .key = k,
	                           .csr = csr,
	                           .csr_len = len,
	                           .product_uuid = uuid,
	                           .attestation = (const uint8_t *)ev,
	                           .attestation_len = strlen(ev)};
	rc = bct_join(&cp, &jo, &ans);
	if (rc == 0) {
		snprintf(node, 64, "%s", ans.node_id);
		bc_join_answer_free(&ans);
	}
	free(ev);
	free(jwt);
	free(csr);
	EVP_PKEY_free(k);
	return rc;
}

static void test_rules_see_role_and_claims_and_name_a_node(void **state)
{
	char node[64];
	(void)state;

	/* the machine's UUID (any case): the rule's node, re-keyed in place */
	assert_int_equal(join("acme", "node", UUID_M, node), 0);
	assert_string_equal(node, known);
	bc_param p[] = {BC_TEXT(known)};
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", p, 1), 2);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = 'node.reclaimed' AND "
	                           "subject = $1",
	                           p, 1),
	                 1);
	/* another UUID, or none: the next rule, a new node */
	assert_int_equal(join("acme", "node", "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a", node), 0);
	assert_string_not_equal(node, known);
	assert_int_equal(join("acme", "node", NULL, node), 0);
	assert_string_not_equal(node, known);
	/* as site: no rule takes that role */
	assert_int_equal(join("acme", "site", UUID_M, node), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "unknown-instance");
	/* a rule naming a node that does not exist */
	assert_int_equal(join("gone", "node", NULL, node), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "join:node-unknown");
}

/* role and product_uuid of another shape stop the server, naming the key */
static void test_rule_config_errors(void **state)
{
	const struct bct_config k = {
	    .attestor = bc_attestor_cloud_iid, .table = "attestors.cloud-iid", .dir = dir};
	static const char head[] =
	    "[attestors.cloud-iid.oidc.lab]\nissuer = \"https://oidc.test\"\n"
	    "jwks = \"@D@/oidc.jwks\"\naudience = \"https://bc.test\"\n"
	    "account_claim = \"tenant\"\ninstance_claim = \"vm\"\n"
	    "[attestors.cloud-iid.resolve.r]\nprovider = \"oidc.lab\"\naccount = \"a\"\n"
	    "tenant = \"root\"\n";
	char toml[1024];
	(void)state;

	snprintf(toml, sizeof(toml), "%snode = \"%s\"\nrole = \"site\"\n", head, known);
	bct_config_loads(&k, toml);
	snprintf(toml, sizeof(toml), "%srole = \"ramdisk\"\n", head);
	bct_config_refused(&k, toml, "[attestors.cloud-iid.resolve.r] role: expected node or site");
	snprintf(toml, sizeof(toml), "%sproduct_uuid = \"not-a-uuid\"\n", head);
	bct_config_refused(&k, toml,
	                   "[attestors.cloud-iid.resolve.r] product_uuid: expected a UUID");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules_see_role_and_claims_and_name_a_node),
	    cmocka_unit_test(test_rule_config_errors),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, setup, teardown);
}
