/* Symmetric pieces of src/crypto: SHA-256, random bytes, constant-time comparison,
 * AES-256-GCM (McGrew-Viega / SP 800-38D vectors) and HKDF-SHA256 (RFC 5869). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

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

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != 0)
			return 0;
	}
	return 1;
}

static void test_sha256_known(void **state)
{
	uint8_t h[32], want[32];

	(void)state;
	assert_int_equal(bc_sha256("abc", 3, h), 0);
	unhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", want, 32);
	assert_memory_equal(h, want, 32);
	assert_int_equal(bc_sha256(NULL, 0, h), 0);
	unhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", want, 32);
	assert_memory_equal(h, want, 32);
	assert_int_equal(bc_sha256(NULL, 1, h), BC_ERR_INVALID);
}

static void test_random_and_ct_equal(void **state)
{
	uint8_t a[32], b[32];

	(void)state;
	assert_int_equal(bc_random(a, sizeof(a)), 0);
	assert_int_equal(bc_random(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
	assert_int_equal(bc_random(NULL, 0), 0);

	memcpy(b, a, sizeof(a));
	assert_int_equal(bc_ct_equal(a, b, sizeof(a)), 1);
	b[31] ^= 0x80;
	assert_int_equal(bc_ct_equal(a, b, sizeof(a)), 0);
	b[31] ^= 0x80;
	b[0] ^= 0x01;
	assert_int_equal(bc_ct_equal(a, b, sizeof(a)), 0);
	assert_int_equal(bc_ct_equal(a, b, 0), 1);
}

struct gcm_vec {
	const char *key, *iv, *pt, *aad, *ct, *tag;
};

/* The GCM spec's AES-256 cases 13, 14 and 16 (SP 800-38D). */
static const struct gcm_vec gcm_vecs[] = {
    {"0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
     "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
     "00000000000000000000000000000000", "", "cea7403d4d606b6e074ec5d3baf39d18",
     "d0d1c8a799996bf0265b98b5d48ab919"},
    {"feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
     "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
     "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
};

static void test_gcm_known_answers(void **state)
{
	(void)state;
	for (size_t v = 0; v < sizeof(gcm_vecs) / sizeof(gcm_vecs[0]); v++) {
		uint8_t key[32], iv[12], pt[64], aad[32], want[96], out[96], back[64];
		size_t ptlen, aadlen, ctlen;

		unhex(gcm_vecs[v].key, key, sizeof(key));
		unhex(gcm_vecs[v].iv, iv, sizeof(iv));
		ptlen = unhex(gcm_vecs[v].pt, pt, sizeof(pt));
		aadlen = unhex(gcm_vecs[v].aad, aad, sizeof(aad));
		ctlen = unhex(gcm_vecs[v].ct, want, sizeof(want));
		assert_int_equal(ctlen, ptlen);
		unhex(gcm_vecs[v].tag, want + ctlen, 16);

		assert_int_equal(bc_aes256gcm_seal(key, iv, aad, aadlen, pt, ptlen, out), 0);
		assert_memory_equal(out, want, ptlen + 16);
		assert_int_equal(bc_aes256gcm_open(key, iv, aad, aadlen, want, ptlen + 16, back),
		                 0);
		if (ptlen > 0)
			assert_memory_equal(back, pt, ptlen);
	}
}

static void test_gcm_tamper(void **state)
{
	uint8_t key[32], nonce[12], ct[16 + 16], out[16];
	const char *pt = "sixteen bytes!!!", *aad = "the aad";

	(void)state;
	assert_int_equal(bc_random(key, sizeof(key)), 0);
	assert_int_equal(bc_random(nonce, sizeof(nonce)), 0);
	assert_int_equal(bc_aes256gcm_seal(key, nonce, aad, strlen(aad), pt, 16, ct), 0);
	assert_memory_not_equal(ct, pt, 16);
	assert_int_equal(bc_aes256gcm_open(key, nonce, aad, strlen(aad), ct, sizeof(ct), out), 0);
	assert_memory_equal(out, pt, 16);

	/* every bit of ciphertext and tag matters, and a refusal hands out nothing */
	for (size_t i = 0; i < sizeof(ct) * 8; i++) {
		ct[i / 8] ^= (uint8_t)(1u << (i % 8));
		memset(out, 0xaa, sizeof(out));
		assert_int_equal(
		    bc_aes256gcm_open(key, nonce, aad, strlen(aad), ct, sizeof(ct), out),
		    BC_ERR_VERIFY);
		assert_true(all_zero(out, sizeof(out)));
		ct[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	assert_int_equal(bc_aes256gcm_open(key, nonce, "the aaD", 7, ct, sizeof(ct), out),
	                 BC_ERR_VERIFY);
	assert_int_equal(bc_aes256gcm_open(key, nonce, NULL, 0, ct, sizeof(ct), out),
	                 BC_ERR_VERIFY);
	nonce[11] ^= 1;
	assert_int_equal(bc_aes256gcm_open(key, nonce, aad, strlen(aad), ct, sizeof(ct), out),
	                 BC_ERR_VERIFY);
	nonce[11] ^= 1;
	key[0] ^= 1;
	assert_int_equal(bc_aes256gcm_open(key, nonce, aad, strlen(aad), ct, sizeof(ct), out),
	                 BC_ERR_VERIFY);
	key[0] ^= 1;
	/* shorter than a tag */
	assert_int_equal(bc_aes256gcm_open(key, nonce, aad, strlen(aad), ct, 15, out),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_aes256gcm_open(key, nonce, aad, strlen(aad), ct, 0, out),
	                 BC_ERR_INVALID);
	/* the whole tag cut off: what is left is 16 bytes of "tag" that does not verify */
	assert_int_equal(bc_aes256gcm_open(key, nonce, aad, strlen(aad), ct, 16, out),
	                 BC_ERR_VERIFY);
	/* still intact after all that */
	assert_int_equal(bc_aes256gcm_open(key, nonce, aad, strlen(aad), ct, sizeof(ct), out), 0);
}

static void test_gcm_in_place_and_args(void **state)
{
	uint8_t key[32] = {1}, nonce[12] = {2}, buf[5 + 16];

	(void)state;
	memcpy(buf, "hello", 5);
	assert_int_equal(bc_aes256gcm_seal(key, nonce, NULL, 0, buf, 5, buf), 0);
	assert_memory_not_equal(buf, "hello", 5);
	assert_int_equal(bc_aes256gcm_open(key, nonce, NULL, 0, buf, sizeof(buf), buf), 0);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(bc_aes256gcm_seal(key, nonce, NULL, 3, "abc", 3, buf), BC_ERR_INVALID);
	assert_int_equal(bc_aes256gcm_seal(key, nonce, NULL, 0, NULL, 3, buf), BC_ERR_INVALID);
	assert_int_equal(bc_aes256gcm_open(key, nonce, NULL, 0, NULL, 20, buf), BC_ERR_INVALID);
}

static void test_hkdf_rfc5869(void **state)
{
	uint8_t ikm[22], salt[13], info[10], prk[32], okm[42], want[42];

	(void)state;
	memset(ikm, 0x0b, sizeof(ikm));
	unhex("000102030405060708090a0b0c", salt, sizeof(salt));
	unhex("f0f1f2f3f4f5f6f7f8f9", info, sizeof(info));

	/* A.1 */
	assert_int_equal(bc_hkdf_sha256(salt, sizeof(salt), ikm, sizeof(ikm), info, sizeof(info),
	                                okm, sizeof(okm)),
	                 0);
	unhex(
	    "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
	    want, sizeof(want));
	assert_memory_equal(okm, want, sizeof(okm));
	/* the two halves HPKE uses, apart */
	assert_int_equal(bc_crypto_hkdf_extract(salt, sizeof(salt), ikm, sizeof(ikm), prk), 0);
	unhex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5", want, 32);
	assert_memory_equal(prk, want, 32);
	memset(okm, 0, sizeof(okm));
	assert_int_equal(bc_crypto_hkdf_expand(prk, info, sizeof(info), okm, sizeof(okm)), 0);
	unhex(
	    "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
	    want, sizeof(want));
	assert_memory_equal(okm, want, sizeof(okm));

	/* A.3: empty salt and info */
	assert_int_equal(bc_hkdf_sha256(NULL, 0, ikm, sizeof(ikm), NULL, 0, okm, sizeof(okm)), 0);
	unhex(
	    "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8",
	    want, sizeof(want));
	assert_memory_equal(okm, want, sizeof(okm));
}

static void test_hkdf_limits(void **state)
{
	static uint8_t big[255 * 32 + 1];
	uint8_t ikm[32] = {7}, info[1025] = {0}, a[32], b[32];

	(void)state;
	assert_int_equal(bc_hkdf_sha256(NULL, 0, ikm, sizeof(ikm), NULL, 0, big, 0),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_hkdf_sha256(NULL, 0, ikm, sizeof(ikm), NULL, 0, big, sizeof(big)),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_hkdf_sha256(NULL, 0, ikm, sizeof(ikm), NULL, 0, big, sizeof(big) - 1),
	                 0);
	assert_false(all_zero(big, sizeof(big) - 1));
	assert_int_equal(bc_hkdf_sha256(NULL, 0, ikm, sizeof(ikm), info, sizeof(info), big, 32),
	                 BC_ERR_LIMIT);
	assert_int_equal(bc_hkdf_sha256(NULL, 3, ikm, sizeof(ikm), NULL, 0, big, 32),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_hkdf_sha256(NULL, 0, NULL, 3, NULL, 0, big, 32), BC_ERR_INVALID);
	/* an empty IKM is allowed, however it is passed */
	assert_int_equal(bc_hkdf_sha256("s", 1, NULL, 0, NULL, 0, a, 32), 0);
	assert_int_equal(bc_hkdf_sha256("s", 1, "", 0, NULL, 0, b, 32), 0);
	assert_memory_equal(a, b, 32);
	assert_false(all_zero(a, 32));
	/* different inputs, different keys */
	assert_int_equal(bc_hkdf_sha256("s", 1, ikm, sizeof(ikm), "i", 1, a, 32), 0);
	assert_int_equal(bc_hkdf_sha256("s", 1, ikm, sizeof(ikm), "j", 1, b, 32), 0);
	assert_memory_not_equal(a, b, 32);
}

/* OpenSSL's own HKDF (EVP_KDF), in one of its modes: the reference ours is held to. */
static void openssl_hkdf(int mode, const uint8_t *salt, size_t saltlen, const uint8_t *key,
                         size_t keylen, const uint8_t *info, size_t infolen, uint8_t *out,
                         size_t outlen)
{
	static const uint8_t empty[1];
	OSSL_PARAM params[6], *p = params;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx;

	assert_non_null(kdf);
	assert_non_null(kctx = EVP_KDF_CTX_new(kdf));
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0);
	*p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
	                                         (void *)(keylen > 0 ? key : empty), keylen);
	if (saltlen > 0)
		*p++ =
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, saltlen);
	if (infolen > 0)
		*p++ =
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, infolen);
	*p = OSSL_PARAM_construct_end();
	assert_int_equal(EVP_KDF_derive(kctx, out, outlen, params), 1);
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
}

/* Ours (HMAC-SHA256 on one fetched SHA-256) gives OpenSSL's bytes for every salt
 * length around the block (a salt over 64 bytes is hashed first), empty and long
 * inputs, and every output length class up to the 255-block limit; each half too. */
static void test_hkdf_matches_openssl(void **state)
{
	static const size_t salts[] = {0, 1, 32, 63, 64, 65, 130};
	static const size_t ikms[] = {0, 1, 32, 100};
	static const size_t infos[] = {0, 1, 80, 1024};
	static const size_t outs[] = {1, 12, 31, 32, 33, 64, 100, 255 * 32};
	static uint8_t salt[130], ikm[100], info[1024], a[255 * 32], b[255 * 32];
	uint8_t prk[32], ref_prk[32];
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(salt); i++)
		salt[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(ikm); i++)
		ikm[i] = (uint8_t)(i * 13 + 5);
	for (size_t i = 0; i < sizeof(info); i++)
		info[i] = (uint8_t)(i * 31 + 3);
	for (size_t s = 0; s < sizeof(salts) / sizeof(salts[0]); s++) {
		for (size_t k = 0; k < sizeof(ikms) / sizeof(ikms[0]); k++) {
			assert_int_equal(bc_crypto_hkdf_extract(salts[s] ? salt : NULL, salts[s],
			                                        ikms[k] ? ikm : NULL, ikms[k], prk),
			                 0);
			openssl_hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, salt, salts[s], ikm, ikms[k],
			             NULL, 0, ref_prk, 32);
			assert_memory_equal(prk, ref_prk, 32);
			for (size_t f = 0; f < sizeof(infos) / sizeof(infos[0]); f++) {
				for (size_t o = 0; o < sizeof(outs) / sizeof(outs[0]); o++) {
					assert_int_equal(bc_hkdf_sha256(salts[s] ? salt : NULL,
					                                salts[s], ikm, ikms[k],
					                                infos[f] ? info : NULL,
					                                infos[f], a, outs[o]),
					                 0);
					openssl_hkdf(EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND, salt,
					             salts[s], ikm, ikms[k], info, infos[f], b,
					             outs[o]);
					assert_memory_equal(a, b, outs[o]);
					assert_int_equal(
					    bc_crypto_hkdf_expand(prk, info, infos[f], a, outs[o]),
					    0);
					assert_memory_equal(a, b, outs[o]);
					n++;
				}
			}
		}
	}
	print_message("%zu HKDF derivations equal to OpenSSL's\n", n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sha256_known),
	    cmocka_unit_test(test_random_and_ct_equal),
	    cmocka_unit_test(test_gcm_known_answers),
	    cmocka_unit_test(test_gcm_tamper),
	    cmocka_unit_test(test_gcm_in_place_and_args),
	    cmocka_unit_test(test_hkdf_rfc5869),
	    cmocka_unit_test(test_hkdf_limits),
	    cmocka_unit_test(test_hkdf_matches_openssl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
