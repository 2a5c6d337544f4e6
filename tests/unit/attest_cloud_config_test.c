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

#include "attest/cloud_iid.h"
#include "bc/toml.h"
#include "bct_capture.h"
#include "bct_cloud.h"
#include "bctest.h"

static char dir[256];

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

/* Loads fmt (with @D@ the test directory); 0 or the error into err. */
static int load(const char *fmt, char *err, size_t errlen)
{
	char text[4096], perr[256];
	struct cloud_cfg *c = NULL;
	bc_toml *t = NULL;
	int rc;

	size_t n = 0;
	for (const char *p = fmt; *p && n + sizeof(dir) < sizeof(text); p++) {
		if (strncmp(p, "@D@", 3) == 0) {
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", dir);
			p += 2;
		} else {
			text[n++] = *p;
		}
	}
	text[n] = 0;
	assert_int_equal(bc_toml_parse(text, strlen(text), &t, perr, sizeof(perr)), 0);
	err[0] = 0;
	rc = cloud_cfg_load(t, "attestors.cloud-iid", &c, err, errlen);
	if (rc == 0)
		assert_non_null(c);
	else
		assert_null(c);
	cloud_cfg_free(c);
	bc_toml_free(t);
	return rc;
}

#define RULE                                                                                       \
	"[attestors.cloud-iid.resolve.r]\nprovider = \"gcp\"\naccount = \"p\"\ntenant = "          \
	"\"root\"\n"
#define GCP "[attestors.cloud-iid.gcp]\naudience = \"https://bc\"\njwks = \"@D@/keys.jwks\"\n"

static void refused(const char *fmt, const char *names)
{
	char err[512];

	assert_int_equal(load(fmt, err, sizeof(err)), BC_ERR_CONFIG);
	if (strstr(err, names) == NULL)
		fail_msg("error \"%s\" does not name %s", err, names);
}

/* The former max_age_ms is read, in milliseconds, with a warning naming the new key. */
static void test_old_name(void **state)
{
	struct bct_capture c;
	char err[512];
	int rc;

	(void)state;
	assert_int_equal(bct_capture_start(&c), 0);
	rc = load(GCP "max_age_ms = 600000\n" RULE, err, sizeof(err));
	bct_capture_end(&c);
	assert_int_equal(rc, 0);
	if (strstr(c.text, "[attestors.cloud-iid.gcp] max_age_ms is deprecated: write "
	                   "max_age_seconds instead") == NULL)
		fail_msg("no warning naming max_age_seconds: %s", c.text);
	assert_int_equal(load(GCP "max_age_seconds = 600\n" RULE, err, sizeof(err)), 0);
}

static void test_good(void **state)
{
	char err[512];
	(void)state;

	assert_int_equal(
	    load(GCP RULE "[attestors.cloud-iid.aws]\naccounts = [\"1\"]\n"
	                  "[attestors.cloud-iid.aws.certificates]\nus-east-1 = \"@D@/region.pem\"\n"
	                  "\"*\" = \"@D@/region.pem\"\n"
	                  "[attestors.cloud-iid.oidc.x]\nissuer = \"https://i\"\n"
	                  "jwks = \"http://127.0.0.1:9/keys\"\naudience = \"a\"\n"
	                  "account_claim = \"sub.account\"\ninstance_claim = \"sub.vm\"\n",
	         err, sizeof(err)),
	    0);
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
