/* HPKE base mode (src/crypto/hpke.c): RFC 9180 Appendix A.3.1 and our AES-256-GCM suite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>

#include "bc/buf.h"
#include "bc/crypto.h"
#include "bc/wire.h"

/* RFC 9180 A.3.1: DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode,
 * and its first encryption (sequence number 0). */
static const char a31_info[] = "4f6465206f6e2061204772656369616e2055726e";
static const char a31_skEm[] = "4995788ef4b9d6132b249ce59a77281493eb39af373d236a1fe415cb0c2d7beb";
static const char a31_pkEm[] = "04a92719c6195d5085104f469a8b9814d5838ff72b60501e2c4466e5e67b325ac9"
                               "8536d7b61a1af4b78e5b7f951c0900be863c403ce65c9bfcb9382657222d18c4";
static const char a31_skRm[] = "f3ce7fdae57e1a310d87f1ebbde6f328be0a99cdbcadf4d6589cf29de4b8ffd2";
static const char a31_pkRm[] = "04fe8c19ce0905191ebc298a9245792531f26f0cece2460639e8bc39cb7f706a82"
                               "6a779b4cf969b8a0e539c7f62fb3d30ad6aa8f80e30f1d128aafd68a2ce72ea0";
static const char a31_shared_secret[] =
    "c0d26aeab536609a572b07695d933b589dcf363ff9d93c93adea537aeabb8cb8";
static const char a31_key[] = "868c066ef58aae6dc589b6cfdd18f97e";
static const char a31_base_nonce[] = "4e0bc5018beba4bf004cca59";
static const char a31_aad0[] = "436f756e742d30";
static const char a31_pt0[] = "4265617574792069732074727574682c20747275746820626561757479";
static const char a31_ct0[] = "5ad590bb8baa577f8619db35a36311226a896e7342a6d836d8b7bcd2f20b6c7f"
                              "9076ac232e3ab2523f39513434";

static const char token_info[] = BC_WIRE_TOKEN_INFO;

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s) / 2;

	assert_true(strlen(s) % 2 == 0);
	assert_true(n <= max);
	for (size_t i = 0; i < n; i++) {
		unsigned int v;

		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

static int all_zero(const void *p, size_t n)
{
	const uint8_t *q = p;

	for (size_t i = 0; i < n; i++) {
		if (q[i] != 0)
			return 0;
	}
	return 1;
}

static EVP_PKEY *raw_key(const char *hex)
{
	uint8_t raw[32];
	EVP_PKEY *k = NULL;

	unhex(hex, raw, sizeof(raw));
	assert_int_equal(bc_key_from_raw(raw, &k), 0);
	return k;
}

static EVP_PKEY *point_key(const char *hex)
{
	uint8_t pt[65];
	EVP_PKEY *k = NULL;

	unhex(hex, pt, sizeof(pt));
	assert_int_equal(bc_key_from_point(pt, &k), 0);
	return k;
}

static void expect_a31_context(const struct bc_hpke_ctx *ctx)
{
	uint8_t want[65];

	unhex(a31_pkEm, want, sizeof(want));
	assert_memory_equal(ctx->enc, want, 65);
	unhex(a31_shared_secret, want, sizeof(want));
	assert_memory_equal(ctx->shared_secret, want, 32);
	assert_int_equal(ctx->key_len, 16);
	unhex(a31_key, want, sizeof(want));
	assert_memory_equal(ctx->key, want, 16);
	unhex(a31_base_nonce, want, sizeof(want));
	assert_memory_equal(ctx->base_nonce, want, 12);
}

static void test_rfc9180_a31_sender(void **state)
{
	EVP_PKEY *skE = raw_key(a31_skEm), *pkR = point_key(a31_pkRm);
	uint8_t info[32], aad[16], pt[64], want[64 + 16], ct[64 + 16], pkE[65];
	size_t infolen, aadlen, ptlen, ctlen;
	struct bc_hpke_ctx ctx;

	(void)state;
	/* the ephemeral scalar's point is the published enc */
	assert_int_equal(bc_key_to_point(skE, pkE), 0);
	unhex(a31_pkEm, want, sizeof(want));
	assert_memory_equal(pkE, want, 65);

	infolen = unhex(a31_info, info, sizeof(info));
	assert_int_equal(bc_hpke_setup_sender(pkR, skE, 0x0001, info, infolen, &ctx), 0);
	expect_a31_context(&ctx);

	aadlen = unhex(a31_aad0, aad, sizeof(aad));
	ptlen = unhex(a31_pt0, pt, sizeof(pt));
	ctlen = unhex(a31_ct0, want, sizeof(want));
	assert_int_equal(ctlen, ptlen + 16);
	assert_int_equal(bc_hpke_ctx_seal(&ctx, aad, aadlen, pt, ptlen, ct), 0);
	assert_memory_equal(ct, want, ctlen);

	OPENSSL_cleanse(&ctx, sizeof(ctx));
	EVP_PKEY_free(skE);
	EVP_PKEY_free(pkR);
}

static void test_rfc9180_a31_receiver(void **state)
{
	EVP_PKEY *skR = raw_key(a31_skRm);
	uint8_t info[32], aad[16], pt[64], ct[64 + 16], out[64], enc[65], pkR[65];
	size_t infolen, aadlen, ptlen, ctlen;
	struct bc_hpke_ctx ctx;

	(void)state;
	assert_int_equal(bc_key_to_point(skR, pkR), 0);
	unhex(a31_pkRm, enc, sizeof(enc));
	assert_memory_equal(pkR, enc, 65);

	infolen = unhex(a31_info, info, sizeof(info));
	unhex(a31_pkEm, enc, sizeof(enc));
	assert_int_equal(bc_hpke_setup_receiver(skR, enc, 0x0001, info, infolen, &ctx), 0);
	expect_a31_context(&ctx);

	aadlen = unhex(a31_aad0, aad, sizeof(aad));
	ptlen = unhex(a31_pt0, pt, sizeof(pt));
	ctlen = unhex(a31_ct0, ct, sizeof(ct));
	assert_int_equal(bc_hpke_ctx_open(&ctx, aad, aadlen, ct, ctlen, out), 0);
	assert_memory_equal(out, pt, ptlen);
	ct[0] ^= 1;
	assert_int_equal(bc_hpke_ctx_open(&ctx, aad, aadlen, ct, ctlen, out), BC_ERR_VERIFY);
	assert_true(all_zero(out, ptlen));
	ct[0] ^= 1;
	/* the next sequence number's aad ("Count-1") does not open message 0 */
	aad[aadlen - 1] = '1';
	assert_int_equal(bc_hpke_ctx_open(&ctx, aad, aadlen, ct, ctlen, out), BC_ERR_VERIFY);

	OPENSSL_cleanse(&ctx, sizeof(ctx));
	EVP_PKEY_free(skR);
}

/* The KEM does not depend on the AEAD: same shared secret; the schedule does. */
static void test_rfc_inputs_with_aes256(void **state)
{
	EVP_PKEY *skE = raw_key(a31_skEm), *pkR = point_key(a31_pkRm), *skR = raw_key(a31_skRm);
	uint8_t info[32], want[32];
	struct bc_hpke_ctx s, r;
	size_t infolen;

	(void)state;
	infolen = unhex(a31_info, info, sizeof(info));
	assert_int_equal(bc_hpke_setup_sender(pkR, skE, 0x0002, info, infolen, &s), 0);
	unhex(a31_shared_secret, want, sizeof(want));
	assert_memory_equal(s.shared_secret, want, 32);
	assert_int_equal(s.key_len, 32);
	unhex(a31_key, want, sizeof(want));
	assert_memory_not_equal(s.key, want, 16);
	unhex(a31_base_nonce, want, sizeof(want));
	assert_memory_not_equal(s.base_nonce, want, 12);

	assert_int_equal(bc_hpke_setup_receiver(skR, s.enc, 0x0002, info, infolen, &r), 0);
	assert_memory_equal(&r, &s, sizeof(r));

	/* other AEAD ids are not ours; the context is left empty */
	memset(&s, 0xaa, sizeof(s));
	assert_int_equal(bc_hpke_setup_sender(pkR, skE, 0x0003, info, infolen, &s),
	                 BC_ERR_UNSUPPORTED);
	assert_true(all_zero(&s, sizeof(s)));
	assert_int_equal(bc_hpke_setup_sender(pkR, skE, 0x0000, info, infolen, &s),
	                 BC_ERR_UNSUPPORTED);
	assert_int_equal(bc_hpke_setup_receiver(skR, r.enc, 0xffff, info, infolen, &s),
	                 BC_ERR_UNSUPPORTED);

	OPENSSL_cleanse(&r, sizeof(r));
	EVP_PKEY_free(skE);
	EVP_PKEY_free(pkR);
	EVP_PKEY_free(skR);
}

static void seal_token(EVP_PKEY *pkR, const void *pt, size_t ptlen, uint8_t **out, size_t *outlen)
{
	assert_int_equal(bc_hpke_seal(pkR, token_info, strlen(token_info), "csr-hash", 8, pt, ptlen,
	                              out, outlen),
	                 0);
	assert_int_equal(*outlen, BC_HPKE_ENC_LEN + ptlen + 16);
}

static int open_token(EVP_PKEY *skR, const uint8_t *in, size_t inlen, uint8_t **pt, size_t *ptlen)
{
	return bc_hpke_open(skR, token_info, strlen(token_info), "csr-hash", 8, in, inlen, pt,
	                    ptlen);
}

static void test_seal_open_round_trip(void **state)
{
	static const size_t lens[] = {0, 1, 16, 100, 5000};
	EVP_PKEY *skR = NULL, *pkR = NULL;
	uint8_t point[65], msg[5000], *ct = NULL, *ct2 = NULL, *pt = NULL;
	size_t ctlen = 0, ct2len = 0, ptlen = 0;

	(void)state;
	assert_int_equal(bc_key_generate(&skR), 0);
	assert_int_equal(bc_key_to_point(skR, point), 0);
	assert_int_equal(bc_key_from_point(point, &pkR), 0);
	assert_int_equal(bc_random(msg, sizeof(msg)), 0);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		seal_token(pkR, msg, lens[i], &ct, &ctlen);
		assert_int_equal(ct[0], 0x04);
		assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), 0);
		assert_non_null(pt);
		assert_int_equal(ptlen, lens[i]);
		if (lens[i] > 0)
			assert_memory_equal(pt, msg, lens[i]);
		/* a fresh ephemeral key every time */
		seal_token(pkR, msg, lens[i], &ct2, &ct2len);
		assert_memory_not_equal(ct, ct2, BC_HPKE_ENC_LEN);
		bc_freezero(pt, ptlen);
		free(ct);
		free(ct2);
	}
	EVP_PKEY_free(skR);
	EVP_PKEY_free(pkR);
}

static void test_tamper_refused(void **state)
{
	EVP_PKEY *skR = NULL;
	uint8_t *ct = NULL, *pt = (uint8_t *)1;
	size_t ctlen = 0, ptlen = 1;
	int rc;

	(void)state;
	assert_int_equal(bc_key_generate(&skR), 0);
	seal_token(skR, "bct_tok_secret", 14, &ct, &ctlen);
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), 0);
	bc_freezero(pt, ptlen);

	/* every bit: enc (refused as a point, or as a tag), ciphertext, tag */
	for (size_t i = 0; i < ctlen * 8; i++) {
		ct[i / 8] ^= (uint8_t)(1u << (i % 8));
		pt = (uint8_t *)1;
		ptlen = 1;
		rc = open_token(skR, ct, ctlen, &pt, &ptlen);
		if (i / 8 < BC_HPKE_ENC_LEN)
			assert_true(rc == BC_ERR_INVALID || rc == BC_ERR_VERIFY);
		else
			assert_int_equal(rc, BC_ERR_VERIFY);
		assert_null(pt);
		assert_int_equal(ptlen, 0);
		ct[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	/* aad and info */
	assert_int_equal(bc_hpke_open(skR, token_info, strlen(token_info), "csr-hasH", 8, ct, ctlen,
	                              &pt, &ptlen),
	                 BC_ERR_VERIFY);
	assert_int_equal(
	    bc_hpke_open(skR, token_info, strlen(token_info), NULL, 0, ct, ctlen, &pt, &ptlen),
	    BC_ERR_VERIFY);
	assert_int_equal(bc_hpke_open(skR, "bettercompute join token v2", 27, "csr-hash", 8, ct,
	                              ctlen, &pt, &ptlen),
	                 BC_ERR_VERIFY);
	assert_int_equal(bc_hpke_open(skR, NULL, 0, "csr-hash", 8, ct, ctlen, &pt, &ptlen),
	                 BC_ERR_VERIFY);
	/* a byte more or less */
	assert_int_equal(open_token(skR, ct, ctlen - 1, &pt, &ptlen), BC_ERR_VERIFY);
	ct = realloc(ct, ctlen + 1);
	assert_non_null(ct);
	ct[ctlen] = 0;
	assert_int_equal(open_token(skR, ct, ctlen + 1, &pt, &ptlen), BC_ERR_VERIFY);
	/* untouched, it still opens */
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), 0);
	assert_memory_equal(pt, "bct_tok_secret", 14);
	bc_freezero(pt, ptlen);
	free(ct);
	EVP_PKEY_free(skR);
}

static void test_wrong_key_refused(void **state)
{
	EVP_PKEY *skR = NULL, *other = NULL, *p384 = EVP_EC_gen("secp384r1");
	uint8_t *ct = NULL, *pt = NULL;
	size_t ctlen = 0, ptlen = 0;

	(void)state;
	assert_non_null(p384);
	assert_int_equal(bc_key_generate(&skR), 0);
	assert_int_equal(bc_key_generate(&other), 0);
	seal_token(skR, "secret", 6, &ct, &ctlen);
	assert_int_equal(open_token(other, ct, ctlen, &pt, &ptlen), BC_ERR_VERIFY);
	assert_null(pt);
	assert_int_equal(open_token(p384, ct, ctlen, &pt, &ptlen), BC_ERR_INVALID);
	assert_null(pt);
	assert_int_equal(open_token(NULL, ct, ctlen, &pt, &ptlen), BC_ERR_INVALID);
	/* nor can one seal to a key that is not P-256 */
	free(ct);
	ct = (uint8_t *)1;
	assert_int_equal(bc_hpke_seal(p384, NULL, 0, NULL, 0, "x", 1, &ct, &ctlen), BC_ERR_INVALID);
	assert_null(ct);
	assert_int_equal(ctlen, 0);
	EVP_PKEY_free(p384);
	EVP_PKEY_free(skR);
	EVP_PKEY_free(other);
}

static void test_short_input_refused(void **state)
{
	static const size_t lens[] = {0, 1, 64, 65, 66, 80};
	uint8_t buf[81] = {0}, *pt = NULL;
	EVP_PKEY *skR = NULL;
	size_t ptlen = 0;

	(void)state;
	assert_int_equal(bc_key_generate(&skR), 0);
	assert_int_equal(bc_key_to_point(skR, buf), 0); /* a valid enc */
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		assert_int_equal(open_token(skR, buf, lens[i], &pt, &ptlen), BC_ERR_INVALID);
		assert_null(pt);
	}
	assert_int_equal(open_token(skR, NULL, 100, &pt, &ptlen), BC_ERR_INVALID);
	/* 81 bytes is long enough to be tried, and this one's tag is wrong */
	assert_int_equal(open_token(skR, buf, 81, &pt, &ptlen), BC_ERR_VERIFY);
	EVP_PKEY_free(skR);
}

static void test_invalid_point_refused(void **state)
{
	EVP_PKEY *skR = NULL;
	uint8_t *ct = NULL, *pt = NULL, good[65];
	size_t ctlen = 0, ptlen = 0;
	struct bc_hpke_ctx ctx;
	EC_GROUP *g;
	BIGNUM *p;

	(void)state;
	assert_int_equal(bc_key_generate(&skR), 0);
	seal_token(skR, "secret", 6, &ct, &ctlen);
	memcpy(good, ct, 65);

	ct[0] = 0x02; /* compressed */
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), BC_ERR_INVALID);
	ct[0] = 0x00; /* the point at infinity's encoding */
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), BC_ERR_INVALID);
	memset(ct, 0, 65); /* infinity as 65 zero bytes */
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), BC_ERR_INVALID);
	ct[0] = 0x04; /* (0, 0) */
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), BC_ERR_INVALID);
	memcpy(ct, good, 65);
	ct[64] ^= 0x01; /* off the curve */
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), BC_ERR_INVALID);
	/* x = p */
	assert_non_null(g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1));
	assert_non_null(p = BN_new());
	assert_int_equal(EC_GROUP_get_curve(g, p, NULL, NULL, NULL), 1);
	memcpy(ct, good, 65);
	assert_int_equal(BN_bn2binpad(p, ct + 1, 32), 32);
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), BC_ERR_INVALID);
	assert_null(pt);
	/* the receiver setup says the same, and leaves nothing in the context */
	memset(&ctx, 0xaa, sizeof(ctx));
	assert_int_equal(bc_hpke_setup_receiver(skR, ct, 0x0002, NULL, 0, &ctx), BC_ERR_INVALID);
	assert_true(all_zero(&ctx, sizeof(ctx)));
	/* restored, it opens */
	memcpy(ct, good, 65);
	assert_int_equal(open_token(skR, ct, ctlen, &pt, &ptlen), 0);
	bc_freezero(pt, ptlen);
	BN_free(p);
	EC_GROUP_free(g);
	free(ct);
	EVP_PKEY_free(skR);
}

/* bc_hpke_open_as with the recipient's point computed once opens what bc_hpke_open
 * opens; with another key's point every message fails its tag. */
static void test_open_as_known_point(void **state)
{
	EVP_PKEY *skR = NULL, *other = NULL;
	uint8_t point[65], wrong[65], *ct = NULL, *pt = NULL;
	size_t ctlen = 0, ptlen = 0;

	(void)state;
	assert_int_equal(bc_key_generate(&skR), 0);
	assert_int_equal(bc_key_generate(&other), 0);
	assert_int_equal(bc_p256_public_point(skR, point), 0);
	assert_int_equal(bc_p256_public_point(other, wrong), 0);
	seal_token(skR, "bct_tok_secret", 14, &ct, &ctlen);
	assert_int_equal(bc_hpke_open_as(skR, point, token_info, strlen(token_info), "csr-hash", 8,
	                                 ct, ctlen, &pt, &ptlen),
	                 0);
	assert_int_equal(ptlen, 14);
	assert_memory_equal(pt, "bct_tok_secret", 14);
	bc_freezero(pt, ptlen);
	pt = (uint8_t *)1;
	assert_int_equal(bc_hpke_open_as(skR, wrong, token_info, strlen(token_info), "csr-hash", 8,
	                                 ct, ctlen, &pt, &ptlen),
	                 BC_ERR_VERIFY);
	assert_null(pt);
	assert_int_equal(ptlen, 0);
	free(ct);
	EVP_PKEY_free(skR);
	EVP_PKEY_free(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rfc9180_a31_sender),
	    cmocka_unit_test(test_rfc9180_a31_receiver),
	    cmocka_unit_test(test_rfc_inputs_with_aes256),
	    cmocka_unit_test(test_seal_open_round_trip),
	    cmocka_unit_test(test_tamper_refused),
	    cmocka_unit_test(test_wrong_key_refused),
	    cmocka_unit_test(test_short_input_refused),
	    cmocka_unit_test(test_invalid_point_refused),
	    cmocka_unit_test(test_open_as_known_point),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
