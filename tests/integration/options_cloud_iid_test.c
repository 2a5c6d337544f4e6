/* cloud-iid resolve rules that see the request (spec: resolve(tx, identity, { role,
 * claims })) and may name a known node: a rule narrowed by role or by the machine's
 * claimed product UUID matches only such requests (unknown-instance otherwise), and a
 * rule naming a node re-keys that node in place (join:node-unknown when there is
 * none). Identity tokens of an OIDC issuer this test signs for, from a JWKS file.
 * Then AWS's "*" certificates (regions not listed, and only those) and the attestor's
 * roles, with EC2 documents this test signs as AWS does (PKCS#7, SHA-256). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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

/* An EC2 identity document of region, pending a minute ago, signed (PKCS#7 SHA-256) by
 * k and x, as evidence. */
static char *aws_evidence(const char *instance, const char *region, EVP_PKEY *k, X509 *x)
{
	char when[32], *doc, *e, *b64;
	time_t t = (time_t)(bc_now_ms() / 1000 - 60);
	struct tm tm;
	uint8_t *p7;
	size_t n;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	assert_true(asprintf(&doc,
	                     "{\"accountId\":\"111111111111\",\"availabilityZone\":\"%sa\","
	                     "\"instanceId\":\"%s\",\"pendingTime\":\"%s\",\"region\":\"%s\"}",
	                     region, instance, when, region) > 0);
	assert_non_null(p7 = bct_pkcs7(x, k, doc, "sha256", &n));
	assert_non_null(b64 = bc_b64_encode(p7, n));
	/* the document's bytes as a JSON string: it holds quotes */
	json_t *j = json_string(doc);
	char *ds = json_dumps(j, JSON_ENCODE_ANY);
	assert_true(
	    asprintf(&e, "{\"provider\":\"aws\",\"document\":%s,\"rsa2048\":\"%s\"}", ds, b64) > 0);
	json_decref(j);
	free(ds);
	free(b64);
	free(p7);
	free(doc);
	return e;
}

/* A join on on with evidence as role: "" admitted, else the reason. */
static const char *join_on(struct bct_cp *on, const char *evidence, const char *role)
{
	struct bc_join_answer ans;
	struct bct_join_opts jo = {.attestor = "cloud-iid",
	                           .role = role,
	                           .attestation = (const uint8_t *)evidence,
	                           .attestation_len = strlen(evidence)};
	int rc = bct_join(on, &jo, &ans);

	if (rc == 0)
		bc_join_answer_free(&ans);
	return rc == 0 ? "" : bct_last_reason(on);
}

/* "*" covers the regions not listed, and no listed one: a listed region is checked
 * with its own certificates only. roles = ["site"] admits site requests only. */
static void test_aws_star_and_roles(void **state)
{
	struct bct_cp on;
	EVP_PKEY *k1 = bct_rsa_key(2048), *ks = bct_rsa_key(2048);
	X509 *x1 = bct_self_cert(k1, "aws us-east-1"), *xs = bct_self_cert(ks, "aws other regions");
	char path[512], toml[2048], site[64], *ev;
	(void)state;

	snprintf(path, sizeof(path), "%s/use1.pem", dir);
	assert_int_equal(bct_write_cert(path, x1), 0);
	snprintf(path, sizeof(path), "%s/star.pem", dir);
	assert_int_equal(bct_write_cert(path, xs), 0);
	assert_int_equal(bc_new_id("site", site, sizeof(site)), 0);
	snprintf(
	    toml, sizeof(toml),
	    "[attestors.cloud-iid]\nroles = [\"site\"]\n"
	    "[attestors.cloud-iid.aws.certificates]\nus-east-1 = \"%s/use1.pem\"\n"
	    "\"*\" = \"%s/star.pem\"\n"
	    "[attestors.cloud-iid.resolve.aws]\nprovider = \"aws\"\naccount = \"111111111111\"\n"
	    "tenant = \"root\"\nsite = \"%s\"\n",
	    dir, dir, site);
	assert_int_equal(bct_cp_start(&on, toml), 0);
	bc_param sp[] = {BC_TEXT(site), BC_INT(bc_now_ms())};
	assert_int_equal(bct_exec(&on,
	                          "INSERT INTO sites (id, tenant_id, name, created_at) VALUES "
	                          "($1, 'root', 'dc', $2)",
	                          sp, 2),
	                 0);

	/* a region not listed, by the "*" certificate */
	ev = aws_evidence("i-0b1", "eu-central-1", ks, xs);
	assert_string_equal(join_on(&on, ev, "site"), "");
	free(ev);
	/* a listed region by the "*" certificate: not its certificate */
	ev = aws_evidence("i-0b2", "us-east-1", ks, xs);
	assert_string_equal(join_on(&on, ev, "site"), "aws-signature");
	free(ev);
	ev = aws_evidence("i-0b3", "us-east-1", k1, x1);
	/* roles: node is not admitted here; site is */
	assert_string_equal(join_on(&on, ev, "node"), "role-not-admitted");
	assert_string_equal(join_on(&on, ev, "site"), "");
	free(ev);
	bct_cp_stop(&on);
	EVP_PKEY_free(k1);
	EVP_PKEY_free(ks);
	X509_free(x1);
	X509_free(xs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules_see_role_and_claims_and_name_a_node),
	    cmocka_unit_test(test_rule_config_errors),
	    cmocka_unit_test(test_aws_star_and_roles),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, setup, teardown);
}
