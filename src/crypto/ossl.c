/* The OpenSSL error adapter and the small primitives: random bytes, SHA-256,
 * constant-time comparison. */
#include <limits.h>
#include <pthread.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

int bc_ossl_err(void)
{
	unsigned long e;
	int rc = BC_ERR_CRYPTO;

	/* Empty the whole queue: a stale entry would be blamed on the next failure. */
	while ((e = ERR_get_error()) != 0) {
		if (ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE)
			rc = BC_ERR_NOMEM;
	}
	return rc;
}

int bc_random(void *p, size_t len)
{
	uint8_t *q = p;

	if (p == NULL && len != 0)
		return BC_ERR_INVALID;
	/* RAND_bytes takes an int: draw large requests in pieces. */
	while (len > 0) {
		int n = len > INT_MAX ? INT_MAX : (int)len;

		if (RAND_bytes(q, n) != 1)
			return bc_ossl_err();
		q += n;
		len -= (size_t)n;
	}
	return 0;
}

static const EVP_MD *sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
	sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

const EVP_MD *bc_crypto_sha256(void)
{
	pthread_once(&sha256_once, fetch_sha256);
	return sha256;
}

int bc_sha256(const void *p, size_t len, uint8_t out[static 32])
{
	static const uint8_t empty;
	unsigned int n = 0;

	OPENSSL_cleanse(out, 32);
	if (p == NULL && len != 0)
		return BC_ERR_INVALID;
	if (bc_crypto_sha256() == NULL)
		return BC_ERR_CRYPTO;
	if (EVP_Digest(p != NULL ? p : &empty, len, out, &n, bc_crypto_sha256(), NULL) != 1)
		return bc_ossl_err();
	if (n != 32)
		return BC_ERR_INTERNAL;
	return 0;
}

int bc_ct_equal(const void *a, const void *b, size_t len)
{
	if (len == 0)
		return 1;
	return CRYPTO_memcmp(a, b, len) == 0;
}

int bc_crypto_parse_err(void)
{
	int rc = bc_ossl_err();

	return rc == BC_ERR_NOMEM ? rc : BC_ERR_INVALID;
}
