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

#include "attest/attest.h"
#include "bct_cloud.h"
#include "bct_config.h"
#include "bctest.h"

static char dir[256];
/* @D@ in a text: the directory of the files setup() writes */
static const struct bct_config K = {
    .attestor = bc_attestor_cloud_iid, .table = "attestors.cloud-iid", .dir = dir};

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
	refused(GCP RULE "[attestors.cloud-iid.aws]\n[attestors.cloud-iid.aws.certificates]\n"
	                 "us-east-1 = \"@D@/weak.pem\"\n",
	        "2048");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good),
	    cmocka_unit_test(test_mistakes),
	    cmocka_unit_test(test_old_name),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
