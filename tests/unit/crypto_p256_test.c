/* P-256 by bare points (src/crypto/p256.c): each function against OpenSSL's EVP
 * result for the same keys, and each refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

static EVP_PKEY *new_key(void)
{
	EVP_PKEY *k = NULL;

	assert_int_equal(bc_key_generate(&k), 0);
	return k;
}

static void point_of(EVP_PKEY *k, uint8_t pt[65])
{
	assert_int_equal(bc_key_to_point(k, pt), 0);
}

/* A DER ECDSA signature over msg by k, made with EVP. */
static size_t evp_sign(EVP_PKEY *k, const void *msg, size_t len, uint8_t *sig, size_t max)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t n = max;

	assert_non_null(md);
	assert_int_equal(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k), 1);
	assert_int_equal(EVP_DigestSign(md, sig, &n, msg, len), 1);
	EVP_MD_CTX_free(md);
	return n;
}

/* Points that are not P-256 points, each refused as BC_ERR_INVALID. */
static void bad_points(const uint8_t good[65], uint8_t out[][65], size_t *n)
{
	*n = 0;
	memcpy(out[*n], good, 65);
	out[(*n)++][0] = 0x02; /* compressed */
	memcpy(out[*n], good, 65);
	out[(*n)++][0] = 0x00;
	memcpy(out[*n], good, 65);
	out[(*n)++][64] ^= 0x01; /* off the curve */
	memset(out[*n], 0, 65);
	out[(*n)++][0] = 0x04; /* (0, 0) */
	memset(out[*n], 0xff, 65);
	out[(*n)++][0] = 0x04; /* coordinates above p */
}

static void test_point_check(void **state)
{
	EVP_PKEY *k = new_key();
	uint8_t pt[65], bad[5][65];
	size_t n;

	(void)state;
	point_of(k, pt);
	assert_int_equal(bc_p256_point_check(pt), 0);
	bad_points(pt, bad, &n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(bc_p256_point_check(bad[i]), BC_ERR_INVALID);
	EVP_PKEY_free(k);
}

static void test_verify_matches_evp(void **state)
{
	static const char msg[] = "certification request info";
	EVP_PKEY *k = new_key(), *other = new_key();
	uint8_t pt[65], opt[65], sig[80], digest[32], bad[5][65];
	size_t siglen, n;

	(void)state;
	point_of(k, pt);
	point_of(other, opt);
	siglen = evp_sign(k, msg, sizeof(msg), sig, sizeof(sig));
	assert_int_equal(bc_p256_verify(pt, msg, sizeof(msg), sig, siglen), 0);
	assert_int_equal(bc_sha256(msg, sizeof(msg), digest), 0);
	assert_int_equal(bc_p256_verify_digest(pt, digest, sig, siglen), 0);

	/* another key, another message, a changed signature */
	assert_int_equal(bc_p256_verify(opt, msg, sizeof(msg), sig, siglen), BC_ERR_VERIFY);
	assert_int_equal(bc_p256_verify(pt, msg, sizeof(msg) - 1, sig, siglen), BC_ERR_VERIFY);
	for (size_t i = 0; i < siglen; i++) {
		sig[i] ^= 0x01;
		assert_int_equal(bc_p256_verify(pt, msg, sizeof(msg), sig, siglen), BC_ERR_VERIFY);
		sig[i] ^= 0x01;
	}
	/* a byte after the DER, none, too long */
	sig[siglen] = 0;
	assert_int_equal(bc_p256_verify(pt, msg, sizeof(msg), sig, siglen + 1), BC_ERR_VERIFY);
	assert_int_equal(bc_p256_verify(pt, msg, sizeof(msg), sig, 0), BC_ERR_VERIFY);
	assert_int_equal(bc_p256_verify(pt, msg, sizeof(msg), NULL, siglen), BC_ERR_VERIFY);
	assert_int_equal(bc_p256_verify(pt, msg, sizeof(msg), sig, BC_ECDSA_DER_MAX + 1),
	                 BC_ERR_VERIFY);
	/* the key's point not on the curve */
	bad_points(pt, bad, &n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(bc_p256_verify(bad[i], msg, sizeof(msg), sig, siglen),
		                 BC_ERR_INVALID);
	EVP_PKEY_free(other);
	EVP_PKEY_free(k);
}

/* The same signature in a BER form (a length in long form) is not DER: refused, as
 * EVP refuses it. */
static void test_verify_refuses_ber(void **state)
{
	static const char msg[] = "m";
	EVP_PKEY *k = new_key();
	uint8_t pt[65], sig[80], ber[82];
	size_t siglen;

	(void)state;
	point_of(k, pt);
	siglen = evp_sign(k, msg, sizeof(msg), sig, sizeof(sig));
	assert_true(sig[0] == 0x30 && sig[1] < 0x80);
	ber[0] = 0x30;
	ber[1] = 0x81;
	ber[2] = sig[1];
	memcpy(ber + 3, sig + 2, siglen - 2);
	assert_int_equal(bc_p256_verify(pt, msg, sizeof(msg), ber, siglen + 1), BC_ERR_VERIFY);
	EVP_PKEY_free(k);
}

static void test_verify_p1363(void **state)
{
	static const char payload[] = "renewal proof";
	EVP_PKEY *k = new_key(), *other = new_key();
	uint8_t pt[65], opt[65], sig[BC_SIG_LEN], bad[BC_SIG_LEN], order[32], d[32];
	uint8_t badpt[5][65];
	struct bc_signer s;
	const BIGNUM *n;
	EC_GROUP *g;
	size_t nbad;

	(void)state;
	point_of(k, pt);
	point_of(other, opt);
	assert_int_equal(bc_signer_init(&s, k, NULL, NULL), 0);
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_RENEW, payload, sizeof(payload), sig), 0);
	assert_int_equal(
	    bc_es256_verify(pt, BC_PURPOSE_RENEW, payload, sizeof(payload), sig, sizeof(sig)), 0);
	assert_int_equal(
	    bc_es256_verify(opt, BC_PURPOSE_RENEW, payload, sizeof(payload), sig, sizeof(sig)),
	    BC_ERR_VERIFY);
	assert_int_equal(
	    bc_es256_verify(pt, BC_PURPOSE_X509POP, payload, sizeof(payload), sig, sizeof(sig)),
	    BC_ERR_VERIFY);
	assert_int_equal(
	    bc_es256_verify(pt, BC_PURPOSE_RENEW, payload, sizeof(payload), sig, sizeof(sig) - 1),
	    BC_ERR_VERIFY);
	/* a point off the curve (or not a point at all) verifies nothing */
	bad_points(pt, badpt, &nbad);
	for (size_t i = 0; i < nbad; i++)
		assert_int_equal(bc_es256_verify(badpt[i], BC_PURPOSE_RENEW, payload,
		                                 sizeof(payload), sig, sizeof(sig)),
		                 BC_ERR_INVALID);
	/* a signature over a digest framed elsewhere, by the point */
	assert_int_equal(bc_sha256(payload, sizeof(payload), d), 0);
	assert_int_equal(bc_p256_sign_p1363(k, d, sig), 0);
	assert_int_equal(bc_es256_verify(pt, BC_ES256_DIGEST, d, sizeof(d), sig, sizeof(sig)), 0);
	assert_int_equal(bc_es256_verify(opt, BC_ES256_DIGEST, d, sizeof(d), sig, sizeof(sig)),
	                 BC_ERR_VERIFY);
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_RENEW, payload, sizeof(payload), sig), 0);
	/* r = 0, s = 0, s = n: never a signature */
	assert_non_null(g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1));
	assert_non_null(n = EC_GROUP_get0_order(g));
	assert_int_equal(BN_bn2binpad(n, order, 32), 32);
	EC_GROUP_free(g);
	for (int i = 0; i < 3; i++) {
		memcpy(bad, sig, sizeof(bad));
		if (i == 0)
			memset(bad, 0, 32);
		else if (i == 1)
			memset(bad + 32, 0, 32);
		else
			memcpy(bad + 32, order, 32);
		assert_int_equal(bc_es256_verify(pt, BC_PURPOSE_RENEW, payload, sizeof(payload),
		                                 bad, sizeof(bad)),
		                 BC_ERR_VERIFY);
	}
	EVP_PKEY_free(other);
	EVP_PKEY_free(k);
}

static void test_ecdh_matches_evp(void **state)
{
	EVP_PKEY *a = new_key(), *b = new_key(), *pub = NULL;
	uint8_t pa[65], pb[65], z1[32], z2[32], z3[32], bad[5][65];
	EVP_PKEY_CTX *ctx;
	size_t zl = sizeof(z3), n;

	(void)state;
	point_of(a, pa);
	point_of(b, pb);
	assert_int_equal(bc_p256_ecdh(a, pb, z1), 0);
	assert_int_equal(bc_p256_ecdh(b, pa, z2), 0);
	assert_memory_equal(z1, z2, 32);
	assert_non_null(ctx = EVP_PKEY_CTX_new(a, NULL));
	assert_int_equal(EVP_PKEY_derive_init(ctx), 1);
	assert_int_equal(EVP_PKEY_derive_set_peer(ctx, b), 1);
	assert_int_equal(EVP_PKEY_derive(ctx, z3, &zl), 1);
	assert_int_equal(zl, 32);
	assert_memory_equal(z1, z3, 32);
	EVP_PKEY_CTX_free(ctx);

	/* a peer off the curve; a public key as the private one; a key of another curve */
	bad_points(pb, bad, &n);
	for (size_t i = 0; i < n; i++) {
		memset(z1, 0xaa, sizeof(z1));
		assert_int_equal(bc_p256_ecdh(a, bad[i], z1), BC_ERR_INVALID);
		for (size_t j = 0; j < sizeof(z1); j++)
			assert_int_equal(z1[j], 0);
	}
	assert_int_equal(bc_key_from_point(pa, &pub), 0);
	assert_int_equal(bc_p256_ecdh(pub, pb, z1), BC_ERR_INVALID);
	EVP_PKEY_free(pub);
	pub = EVP_EC_gen("secp384r1");
	assert_non_null(pub);
	assert_int_equal(bc_p256_ecdh(pub, pb, z1), BC_ERR_INVALID);
	assert_int_equal(bc_p256_public_point(pub, pa), BC_ERR_INVALID);
	EVP_PKEY_free(pub);
	assert_int_equal(bc_p256_ecdh(NULL, pb, z1), BC_ERR_INVALID);
	EVP_PKEY_free(a);
	EVP_PKEY_free(b);
}

static void test_public_point_and_spki_hash(void **state)
{
	EVP_PKEY *k = new_key(), *pub = NULL;
	uint8_t pt[65], pt2[65], h1[32], h2[32];

	(void)state;
	point_of(k, pt);
	assert_int_equal(bc_p256_public_point(k, pt2), 0);
	assert_memory_equal(pt, pt2, 65);
	assert_int_equal(bc_key_from_point(pt, &pub), 0);
	assert_int_equal(bc_p256_public_point(pub, pt2), 0);
	assert_memory_equal(pt, pt2, 65);
	assert_int_equal(bc_key_spki_sha256(k, h1), 0);
	assert_int_equal(bc_p256_spki_sha256(pt, h2), 0);
	assert_memory_equal(h1, h2, 32);
	EVP_PKEY_free(pub);
	EVP_PKEY_free(k);
}

static void test_sign(void **state)
{
	EVP_PKEY *k = new_key(), *pub = NULL, *p384 = EVP_EC_gen("secp384r1");
	uint8_t pt[65], digest[32], sig[BC_SIG_LEN], *der = NULL;
	EVP_PKEY_CTX *ctx;
	size_t len = 0;

	(void)state;
	assert_non_null(p384);
	point_of(k, pt);
	assert_int_equal(bc_sha256("tbs", 3, digest), 0);
	/* r||s that the bare-point verifier and EVP both accept */
	assert_int_equal(bc_p256_sign_p1363(k, digest, sig), 0);
	assert_int_equal(bc_p256_verify_p1363(pt, digest, sig), 0);
	/* its DER (what a certificate carries) EVP verifies over the digest */
	assert_int_equal(bc_ecdsa_p1363_to_der(sig, &der, &len), 0);
	assert_true(len > 8 && len <= BC_ECDSA_DER_MAX);
	assert_non_null(ctx = EVP_PKEY_CTX_new(k, NULL));
	assert_int_equal(EVP_PKEY_verify_init(ctx), 1);
	assert_int_equal(EVP_PKEY_verify(ctx, der, len, digest, sizeof(digest)), 1);
	EVP_PKEY_CTX_free(ctx);
	assert_int_equal(bc_p256_verify_digest(pt, digest, der, len), 0);
	free(der);
	/* two signatures of the same digest differ: a fresh nonce each */
	{
		uint8_t again[BC_SIG_LEN];
		assert_int_equal(bc_p256_sign_p1363(k, digest, again), 0);
		assert_memory_not_equal(sig, again, sizeof(sig));
	}
	/* a public key, another curve, no key: for EVP to sign or refuse */
	assert_int_equal(bc_key_from_point(pt, &pub), 0);
	assert_int_equal(bc_p256_sign_p1363(pub, digest, sig), BC_ERR_UNSUPPORTED);
	assert_int_equal(bc_p256_sign_p1363(p384, digest, sig), BC_ERR_UNSUPPORTED);
	assert_int_equal(bc_p256_sign_p1363(NULL, digest, sig), BC_ERR_UNSUPPORTED);
	assert_int_equal(
	    bc_es256_sign(&(struct bc_signer){.key = p384}, BC_PURPOSE_RENEW, "x", 1, sig),
	    BC_ERR_INVALID);
	assert_int_equal(
	    bc_es256_sign(&(struct bc_signer){.key = pub}, BC_PURPOSE_RENEW, "x", 1, sig) != 0, 1);
	EVP_PKEY_free(pub);
	EVP_PKEY_free(p384);
	EVP_PKEY_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_point_check),
	    cmocka_unit_test(test_verify_matches_evp),
	    cmocka_unit_test(test_verify_refuses_ber),
	    cmocka_unit_test(test_verify_p1363),
	    cmocka_unit_test(test_ecdh_matches_evp),
	    cmocka_unit_test(test_public_point_and_spki_hash),
	    cmocka_unit_test(test_sign),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
