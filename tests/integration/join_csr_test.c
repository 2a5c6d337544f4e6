/* A CSR signed with SHA-1 verifies, but is refused as csr-invalid before any token is
 * looked at, over loopback HTTP to an in-process control plane. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bctest.h"

static struct bct_cp cp;
static char pool_id[64];

static uint8_t *csr_signed_with(EVP_PKEY *key, const EVP_MD *md, size_t *len)
{
	X509_REQ *req = X509_REQ_new();
	unsigned char *der = NULL;
	int n;

	assert_non_null(req);
	assert_int_equal(X509_REQ_set_pubkey(req, key), 1);
	assert_true(X509_REQ_sign(req, key, md) > 0);
	assert_true((n = i2d_X509_REQ(req, &der)) > 0);
	X509_REQ_free(req);
	*len = (size_t)n;
	return der;
}

static void test_sha1_signed_csr_is_refused(void **state)
{
	struct bct_token_opts to = {.pool = pool_id};
	struct bc_join_answer ans;
	EVP_PKEY *key = NULL;
	char tok_id[64];
	char *token = bct_token(&cp, &to, tok_id);
	uint8_t *der;
	size_t len;
	(void)state;

	assert_non_null(token);
	assert_int_equal(bc_key_generate(&key), 0);
	der = csr_signed_with(key, EVP_sha1(), &len);
	struct bct_join_opts sha1 = {.token = token, .key = key, .csr = der, .csr_len = len};
	uint8_t *body = NULL;
	size_t body_len = 0;
	long status = 0;
	/* the real client would not send it: the raw request */
	assert_int_equal(bct_join_raw(&cp, &sha1, &status, &body, &body_len), 0);
	assert_int_equal(status, 403);
	assert_string_equal(bct_last_reason(&cp), "csr-invalid");
	free(body);
	OPENSSL_free(der);
	/* the token was not spent: the same machine with a SHA-256 CSR joins */
	der = csr_signed_with(key, EVP_sha256(), &len);
	struct bct_join_opts sha256 = {.token = token, .key = key, .csr = der, .csr_len = len};
	assert_int_equal(bct_join(&cp, &sha256, &ans), 0);
	bc_join_answer_free(&ans);
	OPENSSL_free(der);
	EVP_PKEY_free(key);
	free(token);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sha1_signed_csr_is_refused),
	};
	int rc;

	if (bct_engine_skip())
		return BCT_SKIP;
	if (bct_cp_start(&cp, NULL) != 0 || bct_pool(&cp, "root", "default", "{}", pool_id) != 0)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_cp_stop(&cp);
	return rc;
}
