/* src/agent/nodekey.c: bcd's node key, a file or in the TPM, against a real swtpm
 * (scripts/swtpm.sh): which TPM a config names, new keys in the TPM only when allowed
 * (BCD_FAKEHW_TPM_KEYS=1), the node.key record read back to the same key, signatures
 * and CSRs made in the TPM, a TPM that cannot hold the key (a file key, or an error
 * when the TPM is required), a key the TPM no longer derives, and the AK statement
 * of a leaf. Skipped (77) without swtpm. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_swtpm.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "agent/agent.h"
#include "agent/nodekey.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"

/* A fakehw config naming the swtpm (or t). */
static void config(struct bcd_config *c, const char *t)
{
	memset(c, 0, sizeof(*c));
	c->path = "test.toml";
	c->has_fakehw = 1;
	c->fakehw_tpm = (char *)t;
}

static void write_key(const struct bcd_nodekey *k, const char *path)
{
	char *pem = NULL;
	FILE *f;

	assert_int_equal(bcd_nodekey_pem(k, &pem), 0);
	assert_non_null(f = fopen(path, "w"));
	fputs(pem, f);
	fclose(f);
	assert_int_equal(chmod(path, 0600), 0);
	bc_freezero(pem, strlen(pem));
}

static void test_tcti(void **state)
{
	struct bcd_config c;
	struct bcd_msg m = {""};
	char out[BCD_TCTI_MAX];
	(void)state;

	config(&c, tcti);
	unsetenv("BCD_FAKEHW_TPM_KEYS");
	assert_int_equal(bcd_tpm_tcti(&c, BCD_TPM_ANY, out, sizeof(out), &m), 0);
	assert_string_equal(out, tcti);
	assert_int_equal(bcd_tpm_tcti(&c, BCD_TPM_NEW_KEYS, out, sizeof(out), &m),
	                 BC_ERR_NOT_FOUND);
	assert_non_null(strstr(m.text, "BCD_FAKEHW_TPM_KEYS=1"));
	setenv("BCD_FAKEHW_TPM_KEYS", "1", 1);
	assert_int_equal(bcd_tpm_tcti(&c, BCD_TPM_NEW_KEYS, out, sizeof(out), &m), 0);
	/* only swtpm TCTIs: the loader would load any libtss2-tcti-<name> */
	config(&c, "device:/dev/tpm0");
	assert_int_equal(bcd_tpm_tcti(&c, BCD_TPM_ANY, out, sizeof(out), &m), BC_ERR_CONFIG);
	config(&c, "swtpm:port=1\nx");
	assert_int_equal(bcd_tpm_tcti(&c, BCD_TPM_ANY, out, sizeof(out), &m), BC_ERR_CONFIG);
	config(&c, "");
	assert_int_equal(bcd_tpm_tcti(&c, BCD_TPM_ANY, out, sizeof(out), &m), BC_ERR_NOT_FOUND);
}

static void test_key_in_tpm(void **state)
{
	struct bcd_config c;
	struct bcd_msg m = {""};
	struct bcd_nodekey k, back;
	char path[512];
	uint8_t sig[64], point[65], *csr = NULL;
	size_t csr_len = 0;
	struct bc_signer s;
	EVP_PKEY *pub = NULL;
	(void)state;

	config(&c, tcti);
	setenv("BCD_FAKEHW_TPM_KEYS", "1", 1);
	assert_int_equal(bcd_nodekey_new(&c, 1, &k, &m), 0);
	assert_int_equal(k.in_tpm, 1);
	snprintf(path, sizeof(path), "%s/node.key", dir);
	write_key(&k, path);
	assert_int_equal(
	    sh("grep -q 'BEGIN BCD TPM NODE KEY' %s && ! grep -q PRIVATE %s", path, path), 0);
	/* read back: derived again, the same key; loading needs no BCD_FAKEHW_TPM_KEYS */
	unsetenv("BCD_FAKEHW_TPM_KEYS");
	assert_int_equal(bcd_nodekey_read(&c, path, &back, &m), 0);
	assert_int_equal(back.in_tpm, 1);
	assert_int_equal(EVP_PKEY_eq(k.key, back.key), 1);
	/* signed in the TPM, checked under the public half */
	assert_int_equal(bcd_nodekey_signer(&back, &s), 0);
	assert_non_null(s.fn);
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_RENEW, "payload", 7, sig), 0);
	assert_int_equal(bc_p256_public_point(k.key, point), 0);
	assert_int_equal(bc_es256_verify(point, BC_PURPOSE_RENEW, "payload", 7, sig, 64), 0);
	assert_int_equal(bcd_nodekey_csr(&back, BC_WIRE_CSR_CN, &csr, &csr_len, &m), 0);
	assert_int_equal(bc_csr_check(csr, csr_len, &pub), 0);
	assert_int_equal(EVP_PKEY_eq(pub, k.key), 1);
	EVP_PKEY_free(pub);
	free(csr);
	/* a key the TPM no longer derives (as after TPM2_Clear): never signs */
	EVP_PKEY_free(back.key);
	assert_int_equal(bc_key_generate(&back.key), 0);
	assert_int_equal(bcd_nodekey_signer(&back, &s), 0);
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_RENEW, "p", 1, sig), BC_ERR_VERIFY);
	bcd_nodekey_free(&back);
	bcd_nodekey_free(&k);
	/* the TPM unavailable: the record does not load, and says why */
	config(&c, "swtpm:host=127.0.0.1,port=1");
	assert_int_equal(bcd_nodekey_read(&c, path, &back, &m), BC_ERR_UNAVAILABLE);
	assert_non_null(strstr(m.text, "the node key is in the TPM"));
	/* a corrupt record */
	assert_int_equal(sh("printf -- '-----BEGIN BCD TPM NODE KEY-----\\nAAAA\\n-----END BCD TPM "
	                    "NODE KEY-----\\n' >%s",
	                    path),
	                 0);
	config(&c, tcti);
	assert_int_equal(bcd_nodekey_read(&c, path, &back, &m), BC_ERR_INVALID);
	assert_non_null(strstr(m.text, "corrupt"));
}

static void test_file_key(void **state)
{
	struct bcd_config c;
	struct bcd_msg m = {""};
	struct bcd_nodekey k, back;
	struct bc_signer s;
	char path[512];
	uint8_t sig[64];
	(void)state;

	/* node keys may not use the fakehw TPM: a file key */
	config(&c, tcti);
	unsetenv("BCD_FAKEHW_TPM_KEYS");
	assert_int_equal(bcd_nodekey_new(&c, 1, &k, &m), 0);
	assert_int_equal(k.in_tpm, 0);
	snprintf(path, sizeof(path), "%s/file.key", dir);
	write_key(&k, path);
	assert_int_equal(sh("grep -q 'BEGIN PRIVATE KEY' %s", path), 0);
	assert_int_equal(bcd_nodekey_read(&c, path, &back, &m), 0);
	assert_int_equal(back.in_tpm, 0);
	assert_int_equal(EVP_PKEY_eq(k.key, back.key), 1);
	assert_int_equal(bcd_nodekey_signer(&back, &s), 0);
	assert_null(s.fn); /* signed in memory */
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_X509POP, "p", 1, sig), 0);
	assert_int_equal(bc_es256_verify(s.point, BC_PURPOSE_X509POP, "p", 1, sig, 64), 0);
	bcd_nodekey_free(&back);
	bcd_nodekey_free(&k);
	/* the TPM cannot hold it: a file key with a warning, or the error when required */
	setenv("BCD_FAKEHW_TPM_KEYS", "1", 1);
	config(&c, "swtpm:host=127.0.0.1,port=1");
	assert_int_equal(bcd_nodekey_new(&c, 0, &k, &m), 0);
	assert_int_equal(k.in_tpm, 0);
	assert_non_null(k.key);
	bcd_nodekey_free(&k);
	assert_int_equal(bcd_nodekey_new(&c, 1, &k, &m), BC_ERR_UNAVAILABLE);
	assert_non_null(strstr(m.text, "the node key in the TPM"));
	assert_null(k.key);
	unsetenv("BCD_FAKEHW_TPM_KEYS");
}

/* A node key other users can read (or change) is refused, with the chmod to run. */
static void test_node_key_readable_by_others_is_refused(void **state)
{
	struct bcd_config c;
	struct bcd_msg m = {""};
	struct bcd_nodekey k, back;
	char path[512];
	(void)state;

	config(&c, tcti);
	unsetenv("BCD_FAKEHW_TPM_KEYS");
	assert_int_equal(bcd_nodekey_new(&c, 1, &k, &m), 0);
	snprintf(path, sizeof(path), "%s/shared.key", dir);
	write_key(&k, path);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(bcd_nodekey_read(&c, path, &back, &m), BC_ERR_DENIED);
	assert_non_null(strstr(m.text, "lets every user read it; run `chmod 600"));
	assert_null(back.key);
	assert_int_equal(chmod(path, 0620), 0);
	assert_int_equal(bcd_nodekey_read(&c, path, &back, &m), BC_ERR_DENIED);
	assert_non_null(strstr(m.text, "lets its group change it"));
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(bcd_nodekey_read(&c, path, &back, &m), 0);
	bcd_nodekey_free(&back);
	bcd_nodekey_free(&k);
}

static void test_leaf_names_ak(void **state)
{
	char cmd[1024], path[512];
	uint8_t der[4096];
	size_t n;
	FILE *f;
	(void)state;

	for (int ak = 0; ak < 2; ak++) {
		snprintf(path, sizeof(path), "%s/leaf%d.der", dir, ak);
		snprintf(cmd, sizeof(cmd),
		         "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		         "-keyout /dev/null -subj /CN=x -days 1 -outform der -out %s "
		         "-addext 'subjectAltName=URI:spiffe://td/node/n%s' 2>/dev/null",
		         path, ak ? ",URI:" BC_WIRE_TPM_AK_URN_SHA256 "000b00" : "");
		assert_int_equal(sh("%s", cmd), 0);
		assert_non_null(f = fopen(path, "rb"));
		n = fread(der, 1, sizeof(der), f);
		fclose(f);
		assert_int_equal(bcd_leaf_names_ak(der, n), ak);
	}
	assert_int_equal(bcd_leaf_names_ak(der, 10), 0);
	assert_int_equal(bcd_leaf_names_ak(NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tcti),
	    cmocka_unit_test(test_key_in_tpm),
	    cmocka_unit_test(test_file_key),
	    cmocka_unit_test(test_node_key_readable_by_others_is_refused),
	    cmocka_unit_test(test_leaf_names_ak),
	};

	return agent_swtpm_run("agent_nodekey_test", tests, sizeof(tests) / sizeof(tests[0]));
}
