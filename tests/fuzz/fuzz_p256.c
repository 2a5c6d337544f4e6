/* libFuzzer: the bare-point P-256 functions on arbitrary bytes (65 of a point, then a
 * signature), each against OpenSSL's EVP answer for the same input. A point one
 * accepts the other must accept; a signature bc_p256_verify accepts EVP must too, and
 * the other way round; ECDH with a point must give EVP's secret. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

static EVP_PKEY *sk;

static int evp_verify(EVP_PKEY *pub, const uint8_t *msg, size_t len, const uint8_t *sig,
                      size_t siglen)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int ok;

	if (md == NULL)
		abort();
	ok = EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pub) == 1 &&
	     EVP_DigestVerify(md, sig, siglen, msg, len) == 1;
	EVP_MD_CTX_free(md);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t msg[] = "fuzz";
	EVP_PKEY *pub = NULL;
	uint8_t z1[32], z2[32];
	size_t zl = sizeof(z2);
	int a, b;

	if (sk == NULL && bc_key_generate(&sk) != 0)
		abort();
	if (size < 65)
		return 0;
	a = bc_p256_point_check(data);
	b = bc_key_from_point(data, &pub);
	if ((a == 0) != (b == 0))
		abort();
	if (a != 0)
		return 0;
	a = bc_p256_verify(data, msg, sizeof(msg), data + 65, size - 65);
	if ((a == 0) != evp_verify(pub, msg, sizeof(msg), data + 65, size - 65))
		abort();
	if (bc_p256_ecdh(sk, data, z1) == 0) {
		EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(sk, NULL);
		if (ctx == NULL || EVP_PKEY_derive_init(ctx) != 1 ||
		    EVP_PKEY_derive_set_peer(ctx, pub) != 1 || EVP_PKEY_derive(ctx, z2, &zl) != 1 ||
		    zl != 32 || memcmp(z1, z2, 32) != 0)
			abort();
		EVP_PKEY_CTX_free(ctx);
	}
	EVP_PKEY_free(pub);
	return 0;
}
