/* libFuzzer: the bare-point P-256 functions on arbitrary bytes (65 of a point, then a
 * signature), each against OpenSSL's EVP answer for the same input. A point one
 * accepts the other must accept; a signature bc_p256_verify accepts EVP must too, and
 * the other way round; the same for bc_es256_verify by the point, of a P1363 signature
 * under a purpose and over a digest given as is (BC_ES256_DIGEST); ECDH with a point
 * must give EVP's secret. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

static EVP_PKEY *sk;

/* EVP's verdict on a P1363 signature over a digest: through its DER form. */
static int evp_verify_digest(EVP_PKEY *pub, const uint8_t digest[32], const uint8_t sig[64])
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pub, NULL);
	uint8_t *der = NULL;
	size_t len = 0;
	int ok;

	if (ctx == NULL || EVP_PKEY_verify_init(ctx) != 1 ||
	    bc_ecdsa_p1363_to_der(sig, &der, &len) != 0)
		abort();
	ok = EVP_PKEY_verify(ctx, der, len, digest, 32) == 1;
	free(der);
	EVP_PKEY_CTX_free(ctx);
	return ok;
}

/* The one verify of the API against EVP, for a 64-byte signature by the point. */
static void check_es256(const uint8_t point[65], EVP_PKEY *pub, const uint8_t sig[64])
{
	static const uint8_t msg[] = "bettercompute/v1\0renew\0fuzz";
	uint8_t d[32];

	if (bc_sha256(msg, sizeof(msg) - 1, d) != 0)
		abort();
	if ((bc_es256_verify(point, BC_PURPOSE_RENEW, "fuzz", 4, sig, 64) == 0) !=
	    evp_verify_digest(pub, d, sig))
		abort();
	if ((bc_es256_verify(point, BC_ES256_DIGEST, d, 32, sig, 64) == 0) !=
	    evp_verify_digest(pub, d, sig))
		abort();
}

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
	if (size - 65 == 64)
		check_es256(data, pub, data + 65);
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
