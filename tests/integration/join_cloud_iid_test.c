/* The cloud-iid attestor in-process over loopback HTTP, with identity tokens and EC2
 * documents this test signs with its own keys: a JWKS for "Google" and an OIDC
 * issuer, and "region certificates" for AWS. Every refusal is reached by name, an
 * instance joins once (also across two replicas), and the identity is read only from
 * the bytes that were verified. */
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
#include <sys/stat.h>
#include <time.h>

#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/reasons.h"
#include "bc/reload.h"
#include "bc/wire.h"
#include "bc/x509pop.h"
#include "bct_cloud.h"
#include "bctest.h"

static struct bct_cp cp;
static char dir[256], toml[6144];
static EVP_PKEY *gcp_key, *gcp_key2, *weak_key, *oidc_key, *evil_key, *use1_key, *west_key;
static X509 *use1_cert, *west_cert, *evil_cert;
/* eu-west-1 as AWS publishes it: a 1024-bit certificate for "signature" and a
 * 2048-bit one for rsa2048, in one file */
static EVP_PKEY *euw_sig_key, *euw_p7_key;
static X509 *euw_sig_cert, *euw_p7_cert;
static int serial;

static void write_jwks(const char *name, const char *const *jwks, size_t n)
{
	char path[512], *set = bct_jwks(jwks, n);

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(bct_write_file(path, set), 0);
	free(set);
}

static void make_keys(void)
{
	char *j[3], path[512];

	gcp_key = bct_rsa_key(2048);
	gcp_key2 = bct_rsa_key(2048);
	weak_key = bct_rsa_key(1024);
	oidc_key = bct_ec_key();
	evil_key = bct_rsa_key(2048);
	use1_key = bct_rsa_key(2048);
	west_key = bct_rsa_key(2048);
	use1_cert = bct_self_cert(use1_key, "aws us-east-1");
	west_cert = bct_self_cert(west_key, "aws us-west-2");
	evil_cert = bct_self_cert(evil_key, "aws us-east-1");
	j[0] = bct_jwk(gcp_key, "g1", "RS256");
	j[1] = bct_jwk(weak_key, "weak", NULL);
	write_jwks("gcp.jwks", (const char *const *)j, 2);
	free(j[0]);
	free(j[1]);
	j[0] = bct_jwk(oidc_key, "o1", "ES256");
	write_jwks("oidc.jwks", (const char *const *)j, 1);
	free(j[0]);
	snprintf(path, sizeof(path), "%s/use1.pem", dir);
	assert_int_equal(bct_write_cert(path, use1_cert), 0);
	snprintf(path, sizeof(path), "%s/west.pem", dir);
	assert_int_equal(bct_write_cert(path, west_cert), 0);
	euw_sig_key = bct_rsa_key(1024);
	euw_p7_key = bct_rsa_key(2048);
	euw_sig_cert = bct_self_cert(euw_sig_key, "aws eu-west-1 signature");
	euw_p7_cert = bct_self_cert(euw_p7_key, "aws eu-west-1 rsa2048");
	snprintf(path, sizeof(path), "%s/euw.pem", dir);
	assert_int_equal(bct_write_certs(path, (X509 *[]){euw_sig_cert, euw_p7_cert}, 2), 0);
}

static int setup(void **state)
{
	char *d;
	(void)state;

	if ((d = bct_tmpdir()) == NULL)
		return -1;
	snprintf(dir, sizeof(dir), "%s", d);
	free(d);
	make_keys();
	snprintf(toml, sizeof(toml),
	         "[attestors.x509pop]\n"
	         "[attestors.cloud-iid.gcp]\naudience = \"https://bc.test\"\n"
	         "jwks = \"%s/gcp.jwks\"\nprojects = [\"proj-a\", \"proj-b\"]\n"
	         "[attestors.cloud-iid.aws]\naccounts = [\"111111111111\", \"222222222222\"]\n"
	         "[attestors.cloud-iid.aws.certificates]\nus-east-1 = \"%s/use1.pem\"\n"
	         "us-west-2 = \"%s/west.pem\"\neu-west-1 = \"%s/euw.pem\"\n"
	         "[attestors.cloud-iid.oidc.lab]\nissuer = \"https://oidc.test\"\n"
	         "jwks = \"%s/oidc.jwks\"\naudience = \"https://bc.test\"\n"
	         "account_claim = \"tenant\"\ninstance_claim = \"vm.id\"\n"
	         "accounts = [\"acme\", \"other\"]\n"
	         "[attestors.cloud-iid.oidc.down]\nissuer = \"https://down.test\"\n"
	         "jwks = \"http://127.0.0.1:1/jwks\"\naudience = \"https://bc.test\"\n"
	         "account_claim = \"tenant\"\ninstance_claim = \"sub\"\n"
	         "[attestors.cloud-iid.resolve.gcp-a]\nprovider = \"gcp\"\naccount = \"proj-a\"\n"
	         "tenant = \"root\"\n"
	         "[attestors.cloud-iid.resolve.aws-1]\nprovider = \"aws\"\n"
	         "account = \"111111111111\"\ntenant = \"root\"\n"
	         "[attestors.cloud-iid.resolve.lab]\nprovider = \"oidc.lab\"\naccount = \"acme\"\n"
	         "tenant = \"root\"\n"
	         "[attestors.cloud-iid.resolve.down]\nprovider = \"oidc.down\"\n"
	         "account = \"acme\"\ntenant = \"root\"\n",
	         dir, dir, dir, dir, dir);
	return bct_cp_start(&cp, toml);
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	bct_rmrf(dir);
	EVP_PKEY_free(gcp_key);
	EVP_PKEY_free(gcp_key2);
	EVP_PKEY_free(weak_key);
	EVP_PKEY_free(oidc_key);
	EVP_PKEY_free(evil_key);
	EVP_PKEY_free(use1_key);
	EVP_PKEY_free(west_key);
	X509_free(use1_cert);
	X509_free(west_cert);
	X509_free(evil_cert);
	EVP_PKEY_free(euw_sig_key);
	EVP_PKEY_free(euw_p7_key);
	X509_free(euw_sig_cert);
	X509_free(euw_p7_cert);
	return 0;
}

struct csr {
	EVP_PKEY *key;
	uint8_t *der;
	size_t len;
	char hex[65];
};

static void csr_new(struct csr *c)
{
	uint8_t d[32];

	assert_int_equal(bc_key_generate(&c->key), 0);
	assert_int_equal(bc_csr_make(c->key, BC_WIRE_CSR_CN, &c->der, &c->len), 0);
	assert_int_equal(bc_sha256(c->der, c->len, d), 0);
	bc_hex_encode_to(d, 32, c->hex);
}

static void csr_free(struct csr *c)
{
	EVP_PKEY_free(c->key);
	free(c->der);
}

/* A join with this evidence: 0 admitted (node id into node), else BC_ERR_DENIED. */
static int join(const struct csr *c, const char *evidence, char node[64])
{
	struct bc_join_answer ans;
	struct bct_join_opts jo = {.attestor = "cloud-iid",
	                           .key = c->key,
	                           .csr = c->der,
	                           .csr_len = c->len,
	                           .attestation = (const uint8_t *)evidence,
	                           .attestation_len = strlen(evidence)};
	int rc = bct_join(&cp, &jo, &ans);

	if (rc == 0) {
		if (node)
			snprintf(node, 64, "%s", ans.node_id);
		bc_join_answer_free(&ans);
	}
	return rc;
}

static char *jwt_evidence(const char *provider, const char *jwt)
{
	char *e;

	assert_true(asprintf(&e, "{\"provider\":\"%s\",\"document\":\"%s\"}", provider, jwt) > 0);
	return e;
}

struct gcp {
	const char *kid;
	EVP_PKEY *key;
	const char *alg, *iss, *project, *aud, *extra_header;
	int64_t iat_off_s, exp_off_s;
	int no_google;
	char instance[32];
};

static void gcp_defaults(struct gcp *g)
{
	memset(g, 0, sizeof(*g));
	g->kid = "g1";
	g->key = gcp_key;
	g->alg = "RS256";
	g->iss = "https://accounts.google.com";
	g->project = "proj-a";
	g->exp_off_s = 3600;
	snprintf(g->instance, sizeof(g->instance), "%d", 4000000 + ++serial);
}

static char *gcp_jwt(const struct gcp *g, const struct csr *c)
{
	char hdr[256], body[1024], aud[256];
	int64_t now = bc_now_ms() / 1000;

	snprintf(aud, sizeof(aud), "https://bc.test#%s", c->hex);
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"kid\":\"%s\",\"typ\":\"JWT\"%s}", g->alg,
	         g->kid, g->extra_header ? g->extra_header : "");
	if (g->no_google)
		snprintf(body, sizeof(body),
		         "{\"iss\":\"%s\",\"aud\":\"%s\",\"iat\":%lld,\"exp\":%lld,\"sub\":\"1\"}",
		         g->iss, g->aud ? g->aud : aud, (long long)(now + g->iat_off_s),
		         (long long)(now + g->exp_off_s));
	else
		snprintf(body, sizeof(body),
		         "{\"iss\":\"%s\",\"aud\":\"%s\",\"azp\":\"1\",\"email\":\"x@test\","
		         "\"iat\":%lld,"
		         "\"exp\":%lld,\"sub\":\"1\",\"google\":{\"compute_engine\":{\"project_"
		         "id\":\"%s\","
		         "\"project_number\":42,\"zone\":\"europe-west1-b\",\"instance_id\":\"%s\","
		         "\"instance_name\":\"vm\"}}}",
		         g->iss, g->aud ? g->aud : aud, (long long)(now + g->iat_off_s),
		         (long long)(now + g->exp_off_s), g->project, g->instance);
	return bct_jwt(g->key, hdr, body);
}

/* The reason a GCP token made from g is refused with ("" when admitted). */
static const char *gcp_try(const struct gcp *g)
{
	struct csr c;
	char *jwt, *ev;
	int rc;

	csr_new(&c);
	jwt = gcp_jwt(g, &c);
	ev = jwt_evidence("gcp", jwt);
	rc = join(&c, ev, NULL);
	free(ev);
	free(jwt);
	csr_free(&c);
	return rc == 0 ? "" : bct_last_reason(&cp);
}

static void test_gcp_admits_once(void **state)
{
	struct gcp g;
	struct csr c, c2;
	char node[64], *jwt, *ev;
	(void)state;

	gcp_defaults(&g);
	csr_new(&c);
	jwt = gcp_jwt(&g, &c);
	ev = jwt_evidence("gcp", jwt);
	assert_int_equal(join(&c, ev, node), 0);
	/* bound to the node, and the use kept forever */
	bc_param q[] = {BC_TEXT(node)};
	assert_int_equal(
	    bct_count(&cp,
	              "SELECT COUNT(*) FROM node_bindings WHERE kind = 'cloud-iid' AND "
	              "node_id = $1",
	              q, 1),
	    1);
	assert_int_equal(
	    bct_count(&cp,
	              "SELECT COUNT(*) FROM attestation_uses WHERE attestor = 'cloud-iid' "
	              "AND expires_at IS NULL",
	              NULL, 0) >= 1,
	    1);
	/* the same token again, and a fresh token for the same instance and a new CSR */
	assert_int_equal(join(&c, ev, NULL), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), BC_R_INSTANCE_REUSED);
	assert_string_equal(bct_last_refusal(&cp).node_id, node);
	free(ev);
	free(jwt);
	csr_new(&c2);
	jwt = gcp_jwt(&g, &c2);
	ev = jwt_evidence("gcp", jwt);
	assert_int_equal(join(&c2, ev, NULL), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), BC_R_INSTANCE_REUSED);
	free(ev);
	free(jwt);
	csr_free(&c);
	csr_free(&c2);
}

/* A known instance whose certificate expired re-joins with x509pop, as the same node. */
static void test_known_instance_rejoins_with_x509pop(void **state)
{
	struct bc_join_answer first, again;
	struct bc_signer cs;
	struct gcp g;
	struct csr c, next;
	char *jwt, *ev, *pop;
	uint8_t d[32];
	(void)state;

	gcp_defaults(&g);
	csr_new(&c);
	jwt = gcp_jwt(&g, &c);
	ev = jwt_evidence("gcp", jwt);
	struct bct_join_opts jo = {.attestor = "cloud-iid",
	                           .key = c.key,
	                           .csr = c.der,
	                           .csr_len = c.len,
	                           .attestation = (const uint8_t *)ev,
	                           .attestation_len = strlen(ev)};
	assert_int_equal(bct_join(&cp, &jo, &first), 0);
	/* two days later */
	bc_clock_set_offset_ms(48LL * 3600 * 1000);
	csr_new(&next);
	assert_int_equal(bc_sha256(next.der, next.len, d), 0);
	assert_int_equal(bc_signer_init(&cs, c.key, NULL, NULL), 0);
	assert_int_equal(bc_x509pop_evidence(first.chain, first.chain_lens, first.n_chain, &cs,
	                                     first.node_id, d, bc_now_ms(), &pop),
	                 0);
	struct bct_join_opts po = {.attestor = "x509pop",
	                           .key = next.key,
	                           .csr = next.der,
	                           .csr_len = next.len,
	                           .attestation = (const uint8_t *)pop,
	                           .attestation_len = strlen(pop)};
	assert_int_equal(bct_join(&cp, &po, &again), 0);
	assert_string_equal(again.node_id, first.node_id);
	bc_clock_set_offset_ms(0);
	bc_join_answer_free(&first);
	bc_join_answer_free(&again);
	free(pop);
	free(ev);
	free(jwt);
	csr_free(&c);
	csr_free(&next);
}

static void test_gcp_refusals(void **state)
{
	struct gcp g;
	(void)state;

	gcp_defaults(&g);
	assert_string_equal(gcp_try(&g), "");
	gcp_defaults(&g);
	g.alg = "none";
	assert_string_equal(gcp_try(&g), BC_R_JWS_ALG);
	gcp_defaults(&g);
	g.alg = "HS256";
	assert_string_equal(gcp_try(&g), BC_R_JWS_ALG);
	gcp_defaults(&g);
	g.kid = "nobody";
	assert_string_equal(gcp_try(&g), BC_R_JWS_KID);
	gcp_defaults(&g);
	g.extra_header = ",\"crit\":[\"x\"]";
	assert_string_equal(gcp_try(&g), BC_R_JWS_CRIT);
	gcp_defaults(&g);
	g.kid = "weak";
	g.key = weak_key;
	assert_string_equal(gcp_try(&g), BC_R_JWS_KEY);
	gcp_defaults(&g);
	g.key = evil_key;
	assert_string_equal(gcp_try(&g), BC_R_JWS_SIGNATURE);
	gcp_defaults(&g);
	g.iss = "https://accounts.google.com.evil";
	assert_string_equal(gcp_try(&g), BC_R_JWS_ISSUER);
	/* the audience alone, and the audience of another CSR */
	gcp_defaults(&g);
	g.aud = "https://bc.test";
	assert_string_equal(gcp_try(&g), BC_R_JWS_AUDIENCE);
	gcp_defaults(&g);
	g.aud = "https://bc.test#0000000000000000000000000000000000000000000000000000000000000000";
	assert_string_equal(gcp_try(&g), BC_R_JWS_AUDIENCE);
	gcp_defaults(&g);
	g.iat_off_s = -7200;
	g.exp_off_s = -3600;
	assert_string_equal(gcp_try(&g), BC_R_JWS_EXPIRED);
	gcp_defaults(&g);
	g.iat_off_s = 300;
	assert_string_equal(gcp_try(&g), BC_R_JWS_NOT_YET_VALID);
	/* within exp, but older than max_age_ms (10 minutes) */
	gcp_defaults(&g);
	g.iat_off_s = -700;
	assert_string_equal(gcp_try(&g), BC_R_JWS_TOO_OLD);
	gcp_defaults(&g);
	g.no_google = 1;
	assert_string_equal(gcp_try(&g), BC_R_GCP_CLAIMS);
	gcp_defaults(&g);
	g.project = "proj-c";
	assert_string_equal(gcp_try(&g), BC_R_GCP_PROJECT);
	/* allowed, but no rule places it */
	gcp_defaults(&g);
	g.project = "proj-b";
	assert_string_equal(gcp_try(&g), BC_R_UNKNOWN_INSTANCE);
}

static void test_evidence_refusals(void **state)
{
	struct csr c;
	static const char *const bad[] = {
	    "",
	    "{}",
	    "[]",
	    "{\"provider\":\"gcp\"}",
	    "{\"provider\":\"gcp\",\"document\":\"\"}",
	    "{\"provider\":\"gcp\",\"document\":\"x\",\"extra\":1}",
	    "{\"provider\":\"gcp\",\"provider\":\"gcp\",\"document\":\"x\"}",
	    "{\"provider\":\"gcp\",\"document\":\"x\",\"signature\":\"!!\"}"};
	(void)state;

	csr_new(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		if (bad[i][0] == 0)
			continue;
		assert_int_equal(join(&c, bad[i], NULL), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&cp), BC_R_CLOUD_MALFORMED);
	}
	assert_int_equal(join(&c, "{\"provider\":\"azure\",\"document\":\"x\"}", NULL),
	                 BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), BC_R_CLOUD_PROVIDER);
	assert_int_equal(join(&c, "{\"provider\":\"gcp\",\"document\":\"a.b\"}", NULL),
	                 BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), BC_R_JWS_MALFORMED);
	/* a padded token */
	struct gcp g;
	gcp_defaults(&g);
	char *jwt = gcp_jwt(&g, &c), *padded, *ev;
	assert_true(asprintf(&padded, "%s=", jwt) > 0);
	ev = jwt_evidence("gcp", padded);
	assert_int_equal(join(&c, ev, NULL), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), BC_R_JWS_MALFORMED);
	free(ev);
	/* a GCP token sent as an OIDC one: no [oidc.<id>] has Google's issuer */
	ev = jwt_evidence("oidc", jwt);
	assert_int_equal(join(&c, ev, NULL), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), BC_R_CLOUD_PROVIDER);
	free(ev);
	free(padded);
	free(jwt);
	csr_free(&c);
}

/* A JWKS file is read when the server starts and after a SIGHUP, never on its own: a
 * key appended to it (a forged identity, by whoever can write the file) admits
 * nothing, on an unknown kid, a minute or an hour later; a server started afterwards
 * reads it, and so does this one after a SIGHUP (what `serve` does on one:
 * bc_reload_request). A file others may change is not read on SIGHUP: the set read
 * before stays. */
static void test_jwks_file_read_at_start_only(void **state)
{
	struct bct_cp replica;
	struct gcp g;
	char *j[3];
	(void)state;

	j[0] = bct_jwk(gcp_key, "g1", "RS256");
	j[1] = bct_jwk(weak_key, "weak", NULL);
	j[2] = bct_jwk(evil_key, "forged", "RS256");
	write_jwks("gcp.jwks", (const char *const *)j, 3);
	gcp_defaults(&g);
	g.kid = "forged";
	g.key = evil_key;
	assert_string_equal(gcp_try(&g), BC_R_JWS_KID);
	bc_clock_set_offset_ms(61000);
	gcp_defaults(&g);
	g.kid = "forged";
	g.key = evil_key;
	assert_string_equal(gcp_try(&g), BC_R_JWS_KID);
	bc_clock_set_offset_ms(3601000);
	gcp_defaults(&g);
	g.kid = "forged";
	g.key = evil_key;
	assert_string_equal(gcp_try(&g), BC_R_JWS_KID);
	/* the set read at start still admits */
	gcp_defaults(&g);
	assert_string_equal(gcp_try(&g), "");
	bc_clock_set_offset_ms(0);
	/* a server started now reads the file as it is */
	assert_int_equal(bct_cp_replica_toml(&cp, &replica, toml), 0);
	gcp_defaults(&g);
	g.kid = "forged";
	g.key = evil_key;
	struct csr c;
	char *jwt, *ev;
	csr_new(&c);
	jwt = gcp_jwt(&g, &c);
	ev = jwt_evidence("gcp", jwt);
	struct bct_join_opts jo = {.attestor = "cloud-iid",
	                           .key = c.key,
	                           .csr = c.der,
	                           .csr_len = c.len,
	                           .attestation = (const uint8_t *)ev,
	                           .attestation_len = strlen(ev)};
	struct bc_join_answer ans;
	assert_int_equal(bct_join(&replica, &jo, &ans), 0);
	bc_join_answer_free(&ans);
	bct_cp_stop(&replica);
	free(ev);
	free(jwt);
	csr_free(&c);
	/* SIGHUP: this server reads it too */
	bc_reload_request();
	gcp_defaults(&g);
	g.kid = "forged";
	g.key = evil_key;
	assert_string_equal(gcp_try(&g), "");
	/* the set as setup wrote it, but writable by its group: not read on SIGHUP */
	char path[512];
	snprintf(path, sizeof(path), "%s/gcp.jwks", dir);
	write_jwks("gcp.jwks", (const char *const *)j, 2);
	assert_int_equal(chmod(path, 0664), 0);
	bc_reload_request();
	gcp_defaults(&g);
	g.kid = "forged";
	g.key = evil_key;
	assert_string_equal(gcp_try(&g), "");
	assert_int_equal(chmod(path, 0644), 0);
	bc_reload_request();
	gcp_defaults(&g);
	g.kid = "forged";
	g.key = evil_key;
	assert_string_equal(gcp_try(&g), BC_R_JWS_KID);
	gcp_defaults(&g);
	assert_string_equal(gcp_try(&g), "");
	for (int i = 0; i < 3; i++)
		free(j[i]);
}

/* ---- OIDC ---- */

static const char *oidc_try(const char *iss, const char *claims_tail, EVP_PKEY *key)
{
	struct csr c;
	char hdr[128], body[1024], *jwt, *ev;
	int64_t now = bc_now_ms() / 1000;
	int rc;

	csr_new(&c);
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"kid\":\"o1\"}",
	         EVP_PKEY_get_base_id(key) == EVP_PKEY_EC ? "ES256" : "RS256");
	snprintf(body, sizeof(body),
	         "{\"iss\":\"%s\",\"aud\":\"https://bc.test#%s\",\"iat\":%lld,\"exp\":%lld%s}", iss,
	         c.hex, (long long)now, (long long)(now + 600), claims_tail);
	jwt = bct_jwt(key, hdr, body);
	ev = jwt_evidence("oidc", jwt);
	rc = join(&c, ev, NULL);
	free(ev);
	free(jwt);
	csr_free(&c);
	return rc == 0 ? "" : bct_last_reason(&cp);
}

static void test_oidc(void **state)
{
	(void)state;
	assert_string_equal(oidc_try("https://oidc.test",
	                             ",\"tenant\":\"acme\",\"vm\":{\"id\":\"vm-1\"}", oidc_key),
	                    "");
	assert_string_equal(oidc_try("https://oidc.test",
	                             ",\"tenant\":\"acme\",\"vm\":{\"id\":\"vm-1\"}", oidc_key),
	                    BC_R_INSTANCE_REUSED);
	/* the same instance name in another account is another instance */
	assert_string_equal(oidc_try("https://oidc.test",
	                             ",\"tenant\":\"other\",\"vm\":{\"id\":\"vm-1\"}", oidc_key),
	                    BC_R_UNKNOWN_INSTANCE);
	assert_string_equal(oidc_try("https://oidc.test", ",\"tenant\":\"acme\"", oidc_key),
	                    BC_R_OIDC_CLAIMS);
	assert_string_equal(oidc_try("https://oidc.test", ",\"vm\":{\"id\":\"vm-2\"}", oidc_key),
	                    BC_R_OIDC_CLAIMS);
	assert_string_equal(oidc_try("https://oidc.test",
	                             ",\"tenant\":\"evil\",\"vm\":{\"id\":\"vm-2\"}", oidc_key),
	                    BC_R_OIDC_ACCOUNT);
	assert_string_equal(oidc_try("https://oidc.test",
	                             ",\"tenant\":\"acme\",\"vm\":{\"id\":\"vm-3\"}", evil_key),
	                    BC_R_JWS_ALG);
	/* an issuer whose JWKS URL does not answer */
	assert_string_equal(
	    oidc_try("https://down.test", ",\"tenant\":\"acme\",\"sub\":\"vm-4\"", oidc_key),
	    BC_R_JWKS_UNAVAILABLE);
}

/* ---- AWS ---- */

static char *aws_doc(const char *account, const char *instance, const char *region,
                     int64_t pending_off_s)
{
	char when[32], *d;
	time_t t = (time_t)(bc_now_ms() / 1000 + pending_off_s);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	assert_true(asprintf(&d,
	                     "{\n  \"accountId\" : \"%s\",\n  \"architecture\" : \"x86_64\",\n"
	                     "  \"availabilityZone\" : \"%sa\",\n  \"imageId\" : \"ami-1\",\n"
	                     "  \"instanceId\" : \"%s\",\n  \"instanceType\" : \"t3.micro\",\n"
	                     "  \"pendingTime\" : \"%s\",\n  \"privateIp\" : \"10.0.0.1\",\n"
	                     "  \"region\" : \"%s\",\n  \"version\" : \"2017-09-30\"\n}",
	                     account, region, instance, when, region) > 0);
	return d;
}

static char *json_str(const char *s)
{
	json_t *j = json_string(s);
	char *out = json_dumps(j, JSON_ENCODE_ANY);

	json_decref(j);
	return out;
}

/* Evidence with the document's bytes, and a signature and/or rsa2048 (NULL: left out). */
static char *aws_evidence(const char *doc, const uint8_t *sig, size_t siglen, const uint8_t *p7,
                          size_t p7len)
{
	char *d = json_str(doc), *s = sig ? bc_b64_encode(sig, siglen) : NULL,
	     *p = p7 ? bc_b64_encode(p7, p7len) : NULL, *e, sigs[8192] = "";

	if (s)
		snprintf(sigs, sizeof(sigs), ",\"signature\":\"%s\"", s);
	if (p)
		snprintf(sigs + strlen(sigs), sizeof(sigs) - strlen(sigs), ",\"rsa2048\":\"%s\"",
		         p);
	assert_true(asprintf(&e, "{\"provider\":\"aws\",\"document\":%s%s}", d, sigs) > 0);
	free(d);
	free(s);
	free(p);
	return e;
}

static const char *aws_try(const char *evidence, char node[64])
{
	struct csr c;
	int rc;

	csr_new(&c);
	rc = join(&c, evidence, node);
	csr_free(&c);
	return rc == 0 ? "" : bct_last_reason(&cp);
}

static const char *aws_signed(const char *doc, EVP_PKEY *k, X509 *x, int use_p7, const char *md)
{
	uint8_t *sig = NULL, *p7 = NULL;
	size_t sl = 0, pl = 0;
	const char *why;
	char *ev;

	if (use_p7)
		assert_non_null(p7 = bct_pkcs7(x, k, doc, md, &pl));
	else
		assert_non_null(sig = bct_rsa_sign(k, doc, &sl));
	ev = aws_evidence(doc, sig, sl, p7, pl);
	why = aws_try(ev, NULL);
	free(ev);
	free(sig);
	free(p7);
	return why;
}

static void test_aws(void **state)
{
	char *doc, id[32];
	(void)state;

	/* rsa2048, then signature alone, each its own instance */
	doc = aws_doc("111111111111", "i-0a1", "us-east-1", -60);
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 1, "SHA256"), "");
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 1, "SHA256"),
	                    BC_R_INSTANCE_REUSED);
	free(doc);
	doc = aws_doc("111111111111", "i-0a2", "us-west-2", -60);
	assert_string_equal(aws_signed(doc, west_key, west_cert, 0, NULL), "");
	assert_string_equal(aws_signed(doc, west_key, west_cert, 0, NULL), BC_R_INSTANCE_REUSED);
	free(doc);
	/* a key we do not trust, another region's certificate, SHA-1 */
	snprintf(id, sizeof(id), "i-0b%d", ++serial);
	doc = aws_doc("111111111111", id, "us-east-1", -60);
	assert_string_equal(aws_signed(doc, evil_key, evil_cert, 1, "SHA256"), BC_R_AWS_SIGNATURE);
	assert_string_equal(aws_signed(doc, evil_key, evil_cert, 0, NULL), BC_R_AWS_SIGNATURE);
	assert_string_equal(aws_signed(doc, west_key, west_cert, 1, "SHA256"), BC_R_AWS_SIGNATURE);
	assert_string_equal(aws_signed(doc, west_key, west_cert, 0, NULL), BC_R_AWS_SIGNATURE);
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 1, "SHA1"), BC_R_AWS_SIGNATURE);
	free(doc);
	/* no certificate for the region */
	doc = aws_doc("111111111111", id, "ap-south-1", -60);
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 1, "SHA256"), BC_R_AWS_REGION);
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 0, NULL), BC_R_AWS_REGION);
	free(doc);
	/* pendingTime 31 minutes ago, or ahead */
	doc = aws_doc("111111111111", id, "us-east-1", -31 * 60);
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 1, "SHA256"), BC_R_AWS_TOO_OLD);
	free(doc);
	doc = aws_doc("111111111111", id, "us-east-1", 600);
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 0, NULL), BC_R_AWS_TOO_OLD);
	free(doc);
	doc = aws_doc("333333333333", id, "us-east-1", -60);
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 1, "SHA256"), BC_R_AWS_ACCOUNT);
	free(doc);
	doc = aws_doc("222222222222", id, "us-east-1", -60);
	assert_string_equal(aws_signed(doc, use1_key, use1_cert, 1, "SHA256"),
	                    BC_R_UNKNOWN_INSTANCE);
	free(doc);
	/* not the document's JSON; no signature at all */
	assert_string_equal(
	    aws_signed("{\"accountId\":\"111111111111\"}", use1_key, use1_cert, 0, NULL),
	    BC_R_AWS_MALFORMED);
	assert_string_equal(
	    aws_signed("{\"accountId\":\"111111111111\"}", use1_key, use1_cert, 1, "SHA256"),
	    BC_R_AWS_MALFORMED);
	doc = aws_doc("111111111111", id, "us-east-1", -60);
	char *ev = aws_evidence(doc, NULL, 0, NULL, 0);
	assert_string_equal(aws_try(ev, NULL), BC_R_AWS_MALFORMED);
	free(ev);
	free(doc);
}

/* The subject recorded for an AWS instance (provider 0x00 account 0x00 instance). */
static void aws_subject(const char *account, const char *instance, char hex[65])
{
	uint8_t d[32];
	bc_buf b;

	bc_buf_init(&b, 0);
	assert_int_equal(bc_buf_put_cstr(&b, "aws"), 0);
	assert_int_equal(bc_buf_put_cstr(&b, account), 0);
	assert_int_equal(bc_buf_put(&b, instance, strlen(instance)), 0);
	assert_int_equal(bc_sha256(b.p, b.len, d), 0);
	bc_buf_free(&b);
	bc_hex_encode_to(d, 32, hex);
}

static int aws_uses(const char *account, const char *instance)
{
	char hex[65];

	aws_subject(account, instance, hex);
	bc_param q[] = {BC_TEXT(hex)};
	return bct_count(&cp,
	                 "SELECT COUNT(*) FROM attestation_uses WHERE attestor = 'cloud-iid' AND "
	                 "subject = $1",
	                 q, 1);
}

/* The identity comes from the bytes rsa2048 verified, and the document beside it must
 * be those bytes: a valid PKCS#7 for one instance with the document of another is
 * refused (aws-document-mismatch) and admits neither; with its own document it admits
 * the instance it signed. */
static void test_aws_identity_from_verified_bytes(void **state)
{
	char *signed_doc = aws_doc("111111111111", "i-signed", "us-east-1", -60);
	char *other_doc = aws_doc("111111111111", "i-claimed", "us-east-1", -60);
	char node[64], hex[65], *ev;
	uint8_t *p7, *sig;
	size_t pl, sl;
	(void)state;

	assert_non_null(p7 = bct_pkcs7(use1_cert, use1_key, signed_doc, "SHA256", &pl));
	ev = aws_evidence(other_doc, NULL, 0, p7, pl);
	assert_string_equal(aws_try(ev, NULL), BC_R_AWS_DOCUMENT_MISMATCH);
	free(ev);
	assert_int_equal(aws_uses("111111111111", "i-signed"), 0);
	assert_int_equal(aws_uses("111111111111", "i-claimed"), 0);
	ev = aws_evidence(signed_doc, NULL, 0, p7, pl);
	assert_string_equal(aws_try(ev, node), "");
	free(ev);
	/* the subject recorded is i-signed's */
	aws_subject("111111111111", "i-signed", hex);
	bc_param q[] = {BC_TEXT(hex), BC_TEXT(node)};
	assert_int_equal(
	    bct_count(&cp,
	              "SELECT COUNT(*) FROM node_bindings WHERE kind = 'cloud-iid' AND "
	              "key = $1 AND node_id = $2",
	              q, 2),
	    1);
	/* a signature over one document sent with another */
	assert_non_null(sig = bct_rsa_sign(use1_key, signed_doc, &sl));
	ev = aws_evidence(other_doc, sig, sl, NULL, 0);
	assert_string_equal(aws_try(ev, NULL), BC_R_AWS_SIGNATURE);
	free(ev);
	free(sig);
	free(p7);
	free(signed_doc);
	free(other_doc);
}

/* A document as AWS signs it: "signature" under the region's 1024-bit certificate,
 * rsa2048 under its 2048-bit one, both from one region file. Admitted; with one byte
 * of the document changed, refused; a 1024-bit key never verifies a PKCS#7. */
static void test_aws_as_aws_signs_it(void **state)
{
	char *doc = aws_doc("111111111111", "i-0aws1", "eu-west-1", -60), *bad, *ev;
	char *doc2 = aws_doc("111111111111", "i-0aws2", "eu-west-1", -60);
	uint8_t *sig, *p7, *sig2, *p7w;
	size_t sl, pl, sl2, pwl;
	(void)state;

	assert_non_null(sig = bct_rsa_sign(euw_sig_key, doc, &sl));
	assert_int_equal(sl, 128); /* 1024 bits, as AWS's */
	assert_non_null(p7 = bct_pkcs7(euw_p7_cert, euw_p7_key, doc, "SHA256", &pl));
	/* one byte changed: "t3.micro" becomes "t3.nicro" */
	bad = strdup(doc);
	*strstr(bad, "micro\"") = 'n';
	ev = aws_evidence(bad, sig, sl, p7, pl);
	assert_string_equal(aws_try(ev, NULL), BC_R_AWS_DOCUMENT_MISMATCH);
	free(ev);
	ev = aws_evidence(bad, sig, sl, NULL, 0);
	assert_string_equal(aws_try(ev, NULL), BC_R_AWS_SIGNATURE);
	free(ev);
	assert_int_equal(aws_uses("111111111111", "i-0aws1"), 0);
	/* both, as bcd sends them: admitted once */
	ev = aws_evidence(doc, sig, sl, p7, pl);
	assert_string_equal(aws_try(ev, NULL), "");
	assert_string_equal(aws_try(ev, NULL), BC_R_INSTANCE_REUSED);
	free(ev);
	/* "signature" alone under the 1024-bit certificate (regions without rsa2048) */
	assert_non_null(sig2 = bct_rsa_sign(euw_sig_key, doc2, &sl2));
	/* the same document in a PKCS#7 by the 1024-bit key: never accepted */
	assert_non_null(p7w = bct_pkcs7(euw_sig_cert, euw_sig_key, doc2, "SHA256", &pwl));
	ev = aws_evidence(doc2, sig2, sl2, p7w, pwl);
	assert_string_equal(aws_try(ev, NULL), BC_R_AWS_SIGNATURE);
	free(ev);
	ev = aws_evidence(doc2, sig2, sl2, NULL, 0);
	assert_string_equal(aws_try(ev, NULL), "");
	free(ev);
	free(bad);
	free(sig);
	free(p7);
	free(sig2);
	free(p7w);
	free(doc);
	free(doc2);
}

struct racer {
	struct bct_cp *cp;
	const struct csr *c;
	const char *ev;
	int rc;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct bc_join_answer ans;
	struct bct_join_opts jo = {.attestor = "cloud-iid",
	                           .key = r->c->key,
	                           .csr = r->c->der,
	                           .csr_len = r->c->len,
	                           .attestation = (const uint8_t *)r->ev,
	                           .attestation_len = strlen(r->ev)};

	r->rc = bct_join(r->cp, &jo, &ans);
	if (r->rc == 0)
		bc_join_answer_free(&ans);
	return NULL;
}

/* Two replicas on one store: one instance's token sent to both at once joins once. */
static void test_two_replicas_admit_an_instance_once(void **state)
{
	struct bct_cp replica;
	struct racer r[16];
	pthread_t th[16];
	struct gcp g;
	struct csr c;
	char *jwt, *ev;
	int admitted = 0, refused = 0;
	(void)state;

	assert_int_equal(bct_cp_replica_toml(&cp, &replica, toml), 0);
	gcp_defaults(&g);
	csr_new(&c);
	jwt = gcp_jwt(&g, &c);
	ev = jwt_evidence("gcp", jwt);
	size_t before = bct_refusal_count(&cp);
	for (int i = 0; i < 16; i++) {
		r[i] = (struct racer){.cp = i % 2 ? &replica : &cp, .c = &c, .ev = ev};
		assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 16; i++) {
		pthread_join(th[i], NULL);
		admitted += r[i].rc == 0;
		refused += r[i].rc == BC_ERR_DENIED;
	}
	assert_int_equal(admitted, 1);
	assert_int_equal(refused, 15);
	/* every refusal, on either replica, is the instance joining again */
	size_t seen = 0;
	struct bct_cp *both[] = {&cp, &replica};
	for (int k = 0; k < 2; k++) {
		struct bct_cp *x = both[k];
		pthread_mutex_lock(&x->mu);
		for (size_t i = k == 0 ? before : 0; i < x->n_refusals; i++)
			seen += strcmp(x->refusals[i].reason, BC_R_INSTANCE_REUSED) == 0;
		pthread_mutex_unlock(&x->mu);
	}
	assert_int_equal(seen, 15);
	bct_cp_stop(&replica);
	free(ev);
	free(jwt);
	csr_free(&c);
}

int main(void)
{
	if (bct_engine_skip())
		return BCT_SKIP;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gcp_admits_once),
	    cmocka_unit_test(test_known_instance_rejoins_with_x509pop),
	    cmocka_unit_test(test_gcp_refusals),
	    cmocka_unit_test(test_evidence_refusals),
	    cmocka_unit_test(test_jwks_file_read_at_start_only),
	    cmocka_unit_test(test_oidc),
	    cmocka_unit_test(test_aws),
	    cmocka_unit_test(test_aws_identity_from_verified_bytes),
	    cmocka_unit_test(test_aws_as_aws_signs_it),
	    cmocka_unit_test(test_two_replicas_admit_an_instance_once),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
