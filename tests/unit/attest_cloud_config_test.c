/* [attestors.cloud-iid] in server.toml (src/attest/cloud_iid_config.c): a good table
 * loads, and each mistake an operator can make is an error that names the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attest/attest.h"
#include "bct_cloud.h"
#include "bct_config.h"
#include "bctest.h"

static char dir[256];
/* @D@ in a text: the directory of the files setup() writes */
static const struct bct_config K = {
    .attestor = bc_attestor_cloud_iid, .table = "attestors.cloud-iid", .dir = dir};

/* A DSA key as AWS's pkcs7 certificates hold. */
static EVP_PKEY *dsa_key(void)
{
	EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new_from_name(NULL, "DSA", NULL), *kc = NULL;
	EVP_PKEY *params = NULL, *k = NULL;

	if (pc && EVP_PKEY_paramgen_init(pc) == 1 &&
	    EVP_PKEY_CTX_set_dsa_paramgen_bits(pc, 1024) == 1 &&
	    EVP_PKEY_CTX_set_dsa_paramgen_q_bits(pc, 160) == 1 &&
	    EVP_PKEY_paramgen(pc, &params) == 1 &&
	    (kc = EVP_PKEY_CTX_new_from_pkey(NULL, params, NULL)) != NULL &&
	    EVP_PKEY_keygen_init(kc) == 1)
		(void)EVP_PKEY_keygen(kc, &k);
	EVP_PKEY_CTX_free(kc);
	EVP_PKEY_CTX_free(pc);
	EVP_PKEY_free(params);
	return k;
}

/* AWS's region files: a 1024-bit "signature" certificate, a 2048-bit rsa2048 one,
 * the DSA pkcs7 one; and what no region file may hold. */
static void write_region_files(X509 *x, X509 *w)
{
	EVP_PKEY *tiny = bct_rsa_key(768), *ec = bct_ec_key(), *dsa = dsa_key();
	X509 *t = bct_self_cert(tiny, "tiny"), *e = bct_self_cert(ec, "ec"),
	     *d = bct_self_cert(dsa, "dsa");
	char path[512];

	assert_non_null(t);
	assert_non_null(e);
	assert_non_null(d);
	snprintf(path, sizeof(path), "%s/both.pem", dir);
	assert_int_equal(bct_write_certs(path, (X509 *[]){w, x}, 2), 0);
	snprintf(path, sizeof(path), "%s/published.pem", dir);
	assert_int_equal(bct_write_certs(path, (X509 *[]){d, w, x}, 3), 0);
	snprintf(path, sizeof(path), "%s/dsa.pem", dir);
	assert_int_equal(bct_write_cert(path, d), 0);
	snprintf(path, sizeof(path), "%s/tiny.pem", dir);
	assert_int_equal(bct_write_certs(path, (X509 *[]){x, t}, 2), 0);
	snprintf(path, sizeof(path), "%s/ec.pem", dir);
	assert_int_equal(bct_write_cert(path, e), 0);
	/* the trust, writable by others */
	snprintf(path, sizeof(path), "%s/shared.pem", dir);
	assert_int_equal(bct_write_cert(path, x), 0);
	assert_int_equal(chmod(path, 0664), 0);
	X509_free(t);
	X509_free(e);
	X509_free(d);
	EVP_PKEY_free(tiny);
	EVP_PKEY_free(ec);
	EVP_PKEY_free(dsa);
}

static int setup(void **state)
{
	char path[512], *d, *j[1];
	EVP_PKEY *k = bct_rsa_key(2048), *weak = bct_rsa_key(1024);
	X509 *x = bct_self_cert(k, "region"), *w = bct_self_cert(weak, "weak");
	(void)state;

	if ((d = bct_tmpdir()) == NULL)
		return -1;
	snprintf(dir, sizeof(dir), "%s", d);
	free(d);
	j[0] = bct_jwk(k, "k1", NULL);
	char *set = bct_jwks((const char *const *)j, 1);
	snprintf(path, sizeof(path), "%s/keys.jwks", dir);
	bct_write_file(path, set);
	snprintf(path, sizeof(path), "%s/bad.jwks", dir);
	bct_write_file(path, "{\"keys\":[{\"kty\":\"RSA\"}]}");
	snprintf(path, sizeof(path), "%s/region.pem", dir);
	bct_write_cert(path, x);
	snprintf(path, sizeof(path), "%s/weak.pem", dir);
	bct_write_cert(path, w);
	snprintf(path, sizeof(path), "%s/shared.jwks", dir);
	bct_write_file(path, set);
	assert_int_equal(chmod(path, 0666), 0);
	snprintf(path, sizeof(path), "%s/group.jwks", dir);
	bct_write_file(path, set);
	assert_int_equal(chmod(path, 0620), 0);
	write_region_files(x, w);
	free(set);
	free(j[0]);
	X509_free(x);
	X509_free(w);
	EVP_PKEY_free(k);
	EVP_PKEY_free(weak);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bct_rmrf(dir);
	return 0;
}

#define RULE                                                                                       \
	"[attestors.cloud-iid.resolve.r]\nprovider = \"gcp\"\naccount = \"p\"\ntenant = "          \
	"\"root\"\n"
#define GCP "[attestors.cloud-iid.gcp]\naudience = \"https://bc\"\njwks = \"@D@/keys.jwks\"\n"

/* Refused with an error that names names. */
static void refused(const char *text, const char *names)
{
	bct_config_refused(&K, text, names);
}

/* The former max_age_ms is read, in milliseconds, with a warning naming the new key. */
static void test_old_name(void **state)
{
	struct bc_attestor a = *bc_attestor_cloud_iid();
	struct bct_capture c;
	char err[512];

	(void)state;
	assert_int_equal(
	    bct_configure_logged(&K, &a, GCP "max_age_ms = 600000\n" RULE, err, sizeof(err), &c),
	    0);
	a.destroy(&a);
	if (strstr(c.text, "[attestors.cloud-iid.gcp] max_age_ms is deprecated: write "
	                   "max_age_seconds instead") == NULL)
		fail_msg("no warning naming max_age_seconds: %s", c.text);
	bct_config_loads(&K, GCP "max_age_seconds = 600\n" RULE);
}

static void test_good(void **state)
{
	(void)state;
	bct_config_loads(&K, GCP RULE
	                 "[attestors.cloud-iid.aws]\naccounts = [\"1\"]\n"
	                 "[attestors.cloud-iid.aws.certificates]\nus-east-1 = \"@D@/region.pem\"\n"
	                 "\"*\" = \"@D@/region.pem\"\n"
	                 "[attestors.cloud-iid.oidc.x]\nissuer = \"https://i\"\n"
	                 "jwks = \"http://127.0.0.1:9/keys\"\naudience = \"a\"\n"
	                 "account_claim = \"sub.account\"\ninstance_claim = \"sub.vm\"\n");
}

static void test_mistakes(void **state)
{
	(void)state;
	refused("[attestors.cloud-iid]\n", "configure at least one provider");
	refused(GCP, "resolve");
	refused(GCP RULE "[attestors.cloud-iid.gcp2]\n", "gcp2: unknown table");
	refused("[attestors.cloud-iid.gcp]\njwks = \"@D@/keys.jwks\"\n" RULE, "audience");
	refused("[attestors.cloud-iid.gcp]\naudience = \"a\"\njwks = \"@D@/bad.jwks\"\n" RULE,
	        "jwks");
	refused("[attestors.cloud-iid.gcp]\naudience = \"a\"\njwks = \"@D@/none.jwks\"\n" RULE,
	        "jwks");
	/* plain http off loopback */
	refused(
	    "[attestors.cloud-iid.gcp]\naudience = \"a\"\njwks = \"http://198.51.100.1/k\"\n" RULE,
	    "https");
	refused(GCP "algs = [\"none\"]\n" RULE, "algs");
	refused(GCP "algs = [\"HS256\"]\n" RULE, "algs");
	refused(GCP "max_age_ms = 5\n" RULE,
	        "max_age_ms: expected an integer from 1000 to 86400000");
	refused(GCP "max_age_seconds = 0\n" RULE, "max_age_seconds: expected 1 to 86400 (seconds)");
	refused(GCP "max_age_seconds = 60\nmax_age_ms = 60000\n" RULE,
	        "max_age_ms: set only max_age_seconds");
	refused(GCP "jwks_ca = \"\"\n" RULE, "jwks_ca: may not be empty");
	refused(GCP "projects = []\n" RULE, "projects");
	refused(GCP "colour = \"blue\"\n" RULE,
	        "colour: unknown key (known: audience, jwks, jwks_ca, projects, algs, "
	        "max_age_seconds)");
	refused(GCP RULE "[attestors.cloud-iid.oidc]\nissuer = \"x\"\n",
	        "[attestors.cloud-iid.oidc] issuer: unknown key (known: [<name>])");
	refused(GCP "[attestors.cloud-iid.resolve.r]\nprovider = \"gcp\"\ntenant = \"root\"\n",
	        "provider/account");
	refused(GCP "[attestors.cloud-iid.resolve.r]\nprovider = \"gcp\"\naccount = \"p\"\n",
	        "tenant");
	refused(GCP RULE "[attestors.cloud-iid.aws]\n", "certificates");
	/* under 1024 bits, not RSA, only DSA (which nothing verifies with) */
	refused(GCP RULE "[attestors.cloud-iid.aws]\n[attestors.cloud-iid.aws.certificates]\n"
	                 "us-east-1 = \"@D@/tiny.pem\"\n",
	        "tiny.pem: expected PEM RSA certificates of at least 1024 bits");
	refused(GCP RULE "[attestors.cloud-iid.aws]\n[attestors.cloud-iid.aws.certificates]\n"
	                 "us-east-1 = \"@D@/ec.pem\"\n",
	        "ec.pem: expected PEM RSA certificates of at least 1024 bits");
	refused(GCP RULE "[attestors.cloud-iid.aws]\n[attestors.cloud-iid.aws.certificates]\n"
	                 "us-east-1 = \"@D@/dsa.pem\"\n",
	        "dsa.pem: expected PEM RSA certificates");
	refused(GCP RULE "[attestors.cloud-iid.aws]\n[attestors.cloud-iid.aws.certificates]\n"
	                 "us-east-1 = \"@D@/keys.jwks\"\n",
	        "us-east-1");
	/* an OIDC mapping that names no account */
	refused(GCP RULE "[attestors.cloud-iid.oidc.x]\nissuer = \"https://i\"\n"
	                 "jwks = \"@D@/keys.jwks\"\naudience = \"a\"\ninstance_claim = \"vm\"\n",
	        "account_claim");
	refused(GCP RULE "[attestors.cloud-iid.oidc.x]\nissuer = \"https://i\"\n"
	                 "jwks = \"@D@/keys.jwks\"\naudience = \"a\"\naccount_claim = \"p\"\n",
	        "instance_claim");
	refused(GCP RULE "[attestors.cloud-iid.oidc.x]\nissuer = \"https://i\"\n"
	                 "jwks = \"@D@/keys.jwks\"\naudience = \"a\"\naccount_claim = \"p\"\n"
	                 "instance_claim = \"v\"\n"
	                 "[attestors.cloud-iid.oidc.y]\nissuer = \"https://i\"\n"
	                 "jwks = \"@D@/keys.jwks\"\naudience = \"a\"\naccount_claim = \"p\"\n"
	                 "instance_claim = \"v\"\n",
	        "another");
	refused(GCP RULE "[attestors.cloud-iid]\nroles = [\"ramdisk\"]\n", "roles");
}

/* A region file as AWS publishes it loads: the 1024-bit "signature" certificate with
 * the 2048-bit rsa2048 one (and the DSA one, skipped). */
static void test_aws_region_files(void **state)
{
	(void)state;
	bct_config_loads(&K, GCP RULE
	                 "[attestors.cloud-iid.aws]\n[attestors.cloud-iid.aws.certificates]\n"
	                 "us-east-1 = \"@D@/both.pem\"\neu-west-1 = \"@D@/published.pem\"\n"
	                 "\"*\" = \"@D@/weak.pem\"\n");
}

/* Trust files others may change are refused, as the secret and config are. */
static void test_trust_file_modes(void **state)
{
	(void)state;
	refused(GCP RULE "[attestors.cloud-iid.aws]\n[attestors.cloud-iid.aws.certificates]\n"
	                 "us-east-1 = \"@D@/shared.pem\"\n",
	        "shared.pem: mode 0664 lets its group change it; run `chmod go-w ");
	refused("[attestors.cloud-iid.gcp]\naudience = \"a\"\njwks = \"@D@/shared.jwks\"\n" RULE,
	        "[attestors.cloud-iid.gcp] jwks: ");
	refused("[attestors.cloud-iid.gcp]\naudience = \"a\"\njwks = \"@D@/shared.jwks\"\n" RULE,
	        "shared.jwks: mode 0666 lets every user change it; run `chmod go-w ");
	refused(GCP RULE "[attestors.cloud-iid.oidc.x]\nissuer = \"https://i\"\n"
	                 "jwks = \"@D@/group.jwks\"\naudience = \"a\"\naccount_claim = \"p\"\n"
	                 "instance_claim = \"v\"\n",
	        "group.jwks: mode 0620 lets its group change it");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good),
	    cmocka_unit_test(test_aws_region_files),
	    cmocka_unit_test(test_trust_file_modes),
	    cmocka_unit_test(test_mistakes),
	    cmocka_unit_test(test_old_name),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
