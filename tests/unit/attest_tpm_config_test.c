/* [attestors.tpm] in server.toml (src/attest/tpm_config.c), read through the shared
 * table reader: each mistake is an error naming the key and what is allowed, and the
 * former challenge_ttl_ms is still read, with a warning naming challenge_ttl_seconds. */
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

#define TABLE "attestors.tpm"
#define OK    "[" TABLE "]\nallow_uncertified_ek = true\n"

static char dir[256];
/* @D@ in a text: a directory of EK root files this test writes */
static const struct bct_config K = {.attestor = bc_attestor_tpm, .table = TABLE, .dir = dir};

static void loads(const char *text)
{
	bct_config_loads(&K, text);
}

/* Refused with an error that holds want. */
static void refused(const char *text, const char *want)
{
	bct_config_refused(&K, text, want);
}

static void test_good_tables(void **state)
{
	(void)state;
	loads(OK);
	loads(OK "challenge_ttl_seconds = 1\npcr_bank = \"sha384\"\npcrs = \"0-7,10\"\n"
	         "node_key = \"any\"\nroles = [\"node\", \"site\"]\n"
	         "enrollment_tenant = \"t\"\nenrollment_site = \"s\"\n"
	         "pending_ttl_seconds = 60\nretry_after_seconds = 3600\n");
	loads(OK "pcrs = [\"0\", \"1\"]\n");
}

static void test_each_mistake(void **state)
{
	(void)state;
	/* unknown key: named, with the known ones */
	refused(OK "ek_root = [\"x\"]\n",
	        "[" TABLE "] ek_root: unknown key (known: ek_roots, allow_uncertified_ek, ");
	refused(OK "[" TABLE ".sub]\n", "[" TABLE "] sub: unknown table (known: ");
	/* wrong type */
	refused(OK "node_key = 1\n", "[" TABLE "] node_key: expected \"certified\" or \"any\"");
	refused(OK "ek_roots = \"ca.pem\"\n",
	        "[" TABLE "] ek_roots: expected an array of certificate files");
	refused("[" TABLE "]\nallow_uncertified_ek = \"yes\"\n",
	        "[" TABLE "] allow_uncertified_ek: expected true or false");
	/* out of range */
	refused(OK "challenge_ttl_seconds = 301\n",
	        "[" TABLE "] challenge_ttl_seconds: expected 1 to 300 (seconds: at most 5 "
	        "minutes)");
	refused(OK "retry_after_seconds = 0\n",
	        "[" TABLE "] retry_after_seconds: expected 1 to 3600 (seconds)");
	refused(OK "roles = []\n", "[" TABLE "] roles: expected node and/or site");
	/* a choice not allowed */
	refused(OK "pcr_bank = \"md5\"\n",
	        "[" TABLE "] pcr_bank: expected \"sha256\", \"sha384\" or \"sha512\"");
	refused(OK "roles = [\"ramdisk\"]\n", "[" TABLE "] roles: expected node and/or site");
	/* required */
	refused("[" TABLE "]\n", "[" TABLE "] ek_roots: required");
	refused(OK "enrollment_site = \"s\"\n",
	        "[" TABLE "] enrollment_tenant: required with enrollment_site/pool");
	refused(OK "enrollment_tenant = \"\"\n", "[" TABLE "] enrollment_tenant: may not be empty");
}

static void test_old_name(void **state)
{
	struct bc_attestor a = *bc_attestor_tpm();
	struct bct_capture c;
	char err[512];

	(void)state;
	assert_int_equal(
	    bct_configure_logged(&K, &a, OK "challenge_ttl_ms = 300000\n", err, sizeof(err), &c),
	    0);
	a.destroy(&a);
	if (strstr(c.text, "[" TABLE "] challenge_ttl_ms is deprecated: write "
	                   "challenge_ttl_seconds instead") == NULL)
		fail_msg("no warning naming challenge_ttl_seconds: %s", c.text);
	refused(OK "challenge_ttl_ms = 300001\n",
	        "[" TABLE "] challenge_ttl_ms: expected an integer from 1000 to 300000");
	refused(OK "challenge_ttl_ms = 1000\nchallenge_ttl_seconds = 1\n",
	        "[" TABLE "] challenge_ttl_ms: set only challenge_ttl_seconds");
}

/* ek_roots decide which TPMs are genuine: a file others may change is refused at
 * start, as the secret and server.toml are, with the chmod that fixes it. */
static void test_ek_roots_modes(void **state)
{
	EVP_PKEY *k = bct_ec_key();
	X509 *x = bct_self_cert(k, "EK root");
	char path[512], *d;
	(void)state;

	assert_non_null(d = bct_tmpdir());
	snprintf(dir, sizeof(dir), "%s", d);
	free(d);
	snprintf(path, sizeof(path), "%s/roots.pem", dir);
	assert_int_equal(bct_write_cert(path, x), 0);
	assert_int_equal(chmod(path, 0644), 0);
	loads("[" TABLE "]\nek_roots = [\"@D@/roots.pem\"]\n");
	assert_int_equal(chmod(path, 0664), 0);
	refused("[" TABLE "]\nek_roots = [\"@D@/roots.pem\"]\n", "[" TABLE "] ek_roots: ");
	refused("[" TABLE "]\nek_roots = [\"@D@/roots.pem\"]\n",
	        "roots.pem: mode 0664 lets its group change it; run `chmod go-w ");
	assert_int_equal(chmod(path, 0646), 0);
	refused("[" TABLE "]\nek_roots = [\"@D@/roots.pem\"]\n",
	        "roots.pem: mode 0646 lets every user change it");
	bct_rmrf(dir);
	X509_free(x);
	EVP_PKEY_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_tables),
	    cmocka_unit_test(test_each_mistake),
	    cmocka_unit_test(test_old_name),
	    cmocka_unit_test(test_ek_roots_modes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
