/* src/pki: generating the bundle, sealing it under the server secret and
 * opening it again; every way an opened text can be wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>
#include <openssl/x509v3.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"

#define TD   "example.org"
#define INFO "bettercompute pki bundle v1"

static const uint8_t secret[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

struct fixture {
	bc_pki *pki;
	char *text;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL || bc_pki_generate(TD, &f->pki) != 0 ||
	    bc_pki_seal(f->pki, secret, &f->text) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	bc_pki_free(f->pki);
	free(f->text);
	free(f);
	return 0;
}

static void assert_cn(X509 *x, const char *want)
{
	char cn[512];

	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn,
	                                      sizeof(cn)) > 0);
	assert_string_equal(cn, want);
}

/* A CA as the design wants it: self-signed by its key, CA:TRUE pathlen 0,
 * keyCertSign|cRLSign, at least ten years, a positive 16-byte serial. */
static void assert_ca(X509 *x, EVP_PKEY *key, const char *cn)
{
	const ASN1_INTEGER *serial = X509_get0_serialNumber(x);
	int day = 0, sec = 0;

	assert_non_null(x);
	assert_cn(x, cn);
	assert_int_equal(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);
	assert_int_equal(X509_verify(x, key), 1);
	assert_int_equal(X509_check_private_key(x, key), 1);
	assert_int_equal(X509_check_ca(x), 1);
	assert_int_equal(X509_get_pathlen(x), 0);
	assert_int_equal(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_int_equal(X509_get_version(x), X509_VERSION_3);
	assert_int_equal(ASN1_STRING_type(serial), V_ASN1_INTEGER);
	assert_int_equal(ASN1_STRING_length(serial), 16);
	assert_true(ASN1_TIME_diff(&day, &sec, X509_get0_notBefore(x), X509_get0_notAfter(x)));
	assert_true(day >= 3650);
	assert_non_null(X509_get0_subject_key_id(x));
}

static void test_generate(void **state)
{
	struct fixture *f = *state;
	bc_pki *p = f->pki;
	char kid[BC_KEY_ID_LEN + 1];
	uint8_t zero[32] = {0};

	assert_string_equal(p->trust_domain, TD);
	assert_ca(p->node_ca, p->node_ca_key, TD " node CA");
	assert_ca(p->tls_ca, p->tls_ca_key, TD " server CA");
	assert_int_equal(X509_cmp(p->node_ca, p->tls_ca) != 0, 1);
	assert_int_equal(EVP_PKEY_eq(p->node_ca_key, p->tls_ca_key), 0);
	assert_non_null(p->join_signing);
	assert_non_null(p->join_encryption);
	assert_int_equal(EVP_PKEY_eq(p->join_signing, p->join_encryption), 0);
	assert_int_equal(bc_key_id(p->join_signing, kid), 0);
	assert_string_equal(p->join_signing_kid, kid);
	assert_int_equal(strlen(p->join_signing_kid), 64);
	assert_memory_not_equal(p->challenge_key, zero, 32);
}

static void test_generate_trust_domains(void **state)
{
	static const char *const bad[] = {"",    "Example.org",    "a/b", "a b",
	                                  "a_b", "ex\xc3\xa9.org", "a:1"};
	char long_td[257];
	bc_pki *p = (bc_pki *)0x1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(bc_pki_generate(bad[i], &p), BC_ERR_INVALID);
		assert_null(p);
		assert_int_equal(bc_trust_domain_valid(bad[i]), 0);
	}
	assert_int_equal(bc_pki_generate(NULL, &p), BC_ERR_INVALID);
	memset(long_td, 'a', 256);
	long_td[256] = '\0';
	assert_int_equal(bc_pki_generate(long_td, &p), BC_ERR_INVALID);
	/* 255 characters is still a trust domain, and its CA names carry it */
	long_td[255] = '\0';
	assert_int_equal(bc_pki_generate(long_td, &p), 0);
	assert_string_equal(p->trust_domain, long_td);
	bc_pki_free(p);
	assert_int_equal(bc_pki_generate("a-b.c0", &p), 0);
	bc_pki_free(p);
	bc_pki_free(NULL);
}

static void assert_same_pki(const bc_pki *a, const bc_pki *b)
{
	assert_string_equal(a->trust_domain, b->trust_domain);
	assert_int_equal(X509_cmp(a->node_ca, b->node_ca), 0);
	assert_int_equal(X509_cmp(a->tls_ca, b->tls_ca), 0);
	assert_int_equal(EVP_PKEY_eq(a->node_ca_key, b->node_ca_key), 1);
	assert_int_equal(EVP_PKEY_eq(a->tls_ca_key, b->tls_ca_key), 1);
	assert_int_equal(EVP_PKEY_eq(a->join_signing, b->join_signing), 1);
	assert_int_equal(EVP_PKEY_eq(a->join_encryption, b->join_encryption), 1);
	assert_string_equal(a->join_signing_kid, b->join_signing_kid);
	assert_memory_equal(a->challenge_key, b->challenge_key, 32);
}

static void test_seal_open(void **state)
{
	struct fixture *f = *state;
	bc_pki *q = NULL;
	struct bc_signer s;
	uint8_t sig[BC_SIG_LEN], point[65];

	assert_int_equal(bc_pki_open(f->text, strlen(f->text), secret, &q), 0);
	assert_non_null(q);
	assert_same_pki(f->pki, q);
	/* the opened private keys work: sign with one, verify with the other */
	assert_int_equal(bc_signer_init(&s, q->join_signing, NULL, NULL), 0);
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_JOIN_RESPONSE, "x", 1, sig), 0);
	assert_int_equal(bc_p256_public_point(f->pki->join_signing, point), 0);
	assert_int_equal(bc_es256_verify(point, BC_PURPOSE_JOIN_RESPONSE, "x", 1, sig, sizeof(sig)),
	                 0);
	bc_pki_free(q);
}

static void test_envelope_shape(void **state)
{
	struct fixture *f = *state;
	json_t *env = json_loads(f->text, 0, NULL);
	char *again = NULL;

	assert_non_null(env);
	assert_int_equal(json_object_size(env), 4);
	assert_int_equal(json_integer_value(json_object_get(env, "v")), 1);
	assert_string_equal(json_string_value(json_object_get(env, "alg")), "A256GCM");
	assert_non_null(json_string_value(json_object_get(env, "nonce")));
	assert_non_null(json_string_value(json_object_get(env, "ct")));
	/* no key material in the clear */
	assert_null(strstr(f->text, "PRIVATE"));
	assert_null(strstr(f->text, TD));
	json_decref(env);
	/* a fresh nonce each time */
	assert_int_equal(bc_pki_seal(f->pki, secret, &again), 0);
	assert_string_not_equal(again, f->text);
	free(again);
}

static void test_open_wrong_secret(void **state)
{
	struct fixture *f = *state;
	uint8_t other[32];
	bc_pki *q = (bc_pki *)0x1;

	memcpy(other, secret, 32);
	other[31] ^= 0x01;
	assert_int_equal(bc_pki_open(f->text, strlen(f->text), other, &q), BC_ERR_VERIFY);
	assert_null(q);
	memset(other, 0, sizeof(other));
	assert_int_equal(bc_pki_open(f->text, strlen(f->text), other, &q), BC_ERR_VERIFY);
	assert_null(q);
}

/* Every single-bit change anywhere in the text, and every truncation point,
 * is BC_ERR_VERIFY. */
static void test_open_flipped_bytes(void **state)
{
	struct fixture *f = *state;
	size_t n = strlen(f->text);
	char *t = malloc(n + 1);
	static const uint8_t masks[] = {0x01, 0x02, 0x20, 0x80};
	bc_pki *q = NULL;

	assert_non_null(t);
	for (size_t i = 0; i < n; i++) {
		for (size_t m = 0; m < sizeof(masks); m++) {
			memcpy(t, f->text, n + 1);
			t[i] ^= (char)masks[m];
			assert_int_equal(bc_pki_open(t, n, secret, &q), BC_ERR_VERIFY);
			assert_null(q);
		}
	}
	for (size_t i = 0; i < n; i += 7) {
		assert_int_equal(bc_pki_open(f->text, i, secret, &q), BC_ERR_VERIFY);
		assert_null(q);
	}
	free(t);
}

static void test_open_malformed(void **state)
{
	static const char *const bad[] = {
	    "",
	    "{",
	    "[]",
	    "null",
	    "{}",
	    "{\"v\":1}",
	    "{\"v\":1,\"alg\":\"A256GCM\",\"nonce\":\"AAAAAAAAAAAAAAAA\"}",
	    /* ciphertext shorter than a tag */
	    "{\"v\":1,\"alg\":\"A256GCM\",\"nonce\":\"AAAAAAAAAAAAAAAA\",\"ct\":\"AAAA\"}",
	    /* nonce of 9 bytes */
	    "{\"v\":1,\"alg\":\"A256GCM\",\"nonce\":\"AAAAAAAAAAAA\",\"ct\":"
	    "\"AAAAAAAAAAAAAAAAAAAAAA==\"}",
	    "{\"v\":2,\"alg\":\"A256GCM\",\"nonce\":\"AAAAAAAAAAAAAAAA\",\"ct\":"
	    "\"AAAAAAAAAAAAAAAAAAAAAA==\"}",
	    "{\"v\":\"1\",\"alg\":\"A256GCM\",\"nonce\":\"AAAAAAAAAAAAAAAA\",\"ct\":"
	    "\"AAAAAAAAAAAAAAAAAAAAAA==\"}",
	    "{\"v\":1,\"alg\":\"A128GCM\",\"nonce\":\"AAAAAAAAAAAAAAAA\",\"ct\":"
	    "\"AAAAAAAAAAAAAAAAAAAAAA==\"}",
	    "{\"v\":1,\"alg\":\"A256GCM\",\"nonce\":\"AAAAAAAAAAAAAAAA\",\"ct\":\"not base64!\"}",
	    "{\"v\":1,\"alg\":\"A256GCM\",\"nonce\":7,\"ct\":\"AAAAAAAAAAAAAAAAAAAAAA==\"}",
	    "{\"v\":1,\"alg\":\"A256GCM\",\"nonce\":\"AAAAAAAAAAAAAAAA\",\"ct\":"
	    "\"AAAAAAAAAAAAAAAAAAAAAA==\",\"x\":1}",
	    "{\"v\":1,\"v\":1,\"alg\":\"A256GCM\",\"nonce\":\"AAAAAAAAAAAAAAAA\",\"ct\":"
	    "\"AAAAAAAAAAAAAAAAAAAAAA==\"}",
	};
	bc_pki *q = (bc_pki *)0x1;
	char *big;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(bc_pki_open(bad[i], strlen(bad[i]), secret, &q), BC_ERR_VERIFY);
		assert_null(q);
	}
	/* a NUL inside the text */
	assert_int_equal(bc_pki_open("{}\0{}", 5, secret, &q), BC_ERR_VERIFY);
	big = malloc(70000);
	assert_non_null(big);
	memset(big, ' ', 70000);
	assert_int_equal(bc_pki_open(big, 70000, secret, &q), BC_ERR_LIMIT);
	assert_null(q);
	free(big);
}

/* The plaintext of an envelope sealed under secret (the test's own opener). */
static json_t *open_plain(const char *text)
{
	json_t *env = json_loads(text, 0, NULL), *pt_json;
	const char *n64 = json_string_value(json_object_get(env, "nonce"));
	const char *c64 = json_string_value(json_object_get(env, "ct"));
	uint8_t key[32], *nonce = NULL, *ct = NULL, *pt;
	size_t nlen, ctlen;

	assert_int_equal(bc_b64_decode(n64, strlen(n64), &nonce, &nlen), 0);
	assert_int_equal(bc_b64_decode(c64, strlen(c64), &ct, &ctlen), 0);
	assert_int_equal(nlen, 12);
	assert_int_equal(bc_hkdf_sha256("", 0, secret, 32, INFO, strlen(INFO), key, 32), 0);
	pt = malloc(ctlen);
	assert_int_equal(bc_aes256gcm_open(key, nonce, INFO, strlen(INFO), ct, ctlen, pt), 0);
	pt_json = json_loadb((const char *)pt, ctlen - 16, 0, NULL);
	assert_non_null(pt_json);
	free(pt);
	free(nonce);
	free(ct);
	json_decref(env);
	return pt_json;
}

/* An authentic envelope around plaintext bytes of our choosing. */
static char *seal_plain(const void *pt, size_t ptlen)
{
	uint8_t key[32], nonce[12] = {9};
	uint8_t *ct = malloc(ptlen + 16);
	char *n64, *c64, *text;
	json_t *env;

	assert_int_equal(bc_hkdf_sha256("", 0, secret, 32, INFO, strlen(INFO), key, 32), 0);
	assert_int_equal(bc_aes256gcm_seal(key, nonce, INFO, strlen(INFO), pt, ptlen, ct), 0);
	n64 = bc_b64_encode(nonce, 12);
	c64 = bc_b64_encode(ct, ptlen + 16);
	env = json_pack("{s:i,s:s,s:s,s:s}", "v", 1, "alg", "A256GCM", "nonce", n64, "ct", c64);
	text = json_dumps(env, JSON_COMPACT);
	json_decref(env);
	free(n64);
	free(c64);
	free(ct);
	return text;
}

static int open_json(json_t *pt, bc_pki **q)
{
	char *s = json_dumps(pt, JSON_COMPACT);
	char *text = seal_plain(s, strlen(s));
	int rc = bc_pki_open(text, strlen(text), secret, q);

	free(s);
	free(text);
	return rc;
}

static void expect_invalid(json_t *base, const char *key, json_t *value)
{
	json_t *pt = json_deep_copy(base);
	bc_pki *q = (bc_pki *)0x1;

	if (value == NULL)
		assert_int_equal(json_object_del(pt, key), 0);
	else
		assert_int_equal(json_object_set_new(pt, key, value), 0);
	assert_int_equal(open_json(pt, &q), BC_ERR_INVALID);
	assert_null(q);
	json_decref(pt);
}

static void test_open_bad_plaintext(void **state)
{
	struct fixture *f = *state;
	json_t *pt = open_plain(f->text), *o;
	bc_pki *q = NULL, *other = NULL;
	char *text;

	/* control: the test's own sealing of the real plaintext opens */
	assert_int_equal(open_json(pt, &q), 0);
	assert_same_pki(f->pki, q);
	bc_pki_free(q);
	assert_int_equal(bc_pki_generate(TD, &other), 0);
	assert_int_equal(bc_pki_seal(other, secret, &text), 0);
	o = open_plain(text);
	free(text);

	expect_invalid(pt, "v", json_integer(2));
	expect_invalid(pt, "v", NULL);
	expect_invalid(pt, "extra", json_string("x"));
	expect_invalid(pt, "trust_domain", json_string("Example.org"));
	expect_invalid(pt, "trust_domain", json_integer(3));
	expect_invalid(pt, "challenge_key", json_string("00"));
	expect_invalid(
	    pt, "challenge_key",
	    json_string("zz"
	                "00000000000000000000000000000000000000000000000000000000000000"));
	expect_invalid(pt, "challenge_key", NULL);
	expect_invalid(pt, "join_signing_kid", json_string(other->join_signing_kid));
	/* a key that does not match its CA certificate */
	expect_invalid(pt, "node_ca_key", json_incref(json_object_get(o, "node_ca_key")));
	expect_invalid(pt, "tls_ca", json_incref(json_object_get(o, "tls_ca")));
	/* a CA key in the place of the other CA's */
	expect_invalid(pt, "tls_ca_key", json_incref(json_object_get(pt, "node_ca_key")));
	/* a join signing key whose id is not the one stored */
	expect_invalid(pt, "join_signing_key", json_incref(json_object_get(o, "join_signing_key")));
	expect_invalid(
	    pt, "join_encryption_key",
	    json_string("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"));
	expect_invalid(pt, "node_ca", json_string("not a certificate"));
	expect_invalid(pt, "node_ca", NULL);
	json_decref(o);
	bc_pki_free(other);
	json_decref(pt);

	/* authentic bytes that are not a JSON object */
	text = seal_plain("[1,2]", 5);
	assert_int_equal(bc_pki_open(text, strlen(text), secret, &q), BC_ERR_INVALID);
	free(text);
	text = seal_plain("{\"v\":1", 6);
	assert_int_equal(bc_pki_open(text, strlen(text), secret, &q), BC_ERR_INVALID);
	free(text);
	text = seal_plain("", 0);
	assert_int_equal(bc_pki_open(text, strlen(text), secret, &q), BC_ERR_INVALID);
	free(text);
	assert_null(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generate),          cmocka_unit_test(test_generate_trust_domains),
	    cmocka_unit_test(test_seal_open),         cmocka_unit_test(test_envelope_shape),
	    cmocka_unit_test(test_open_wrong_secret), cmocka_unit_test(test_open_flipped_bytes),
	    cmocka_unit_test(test_open_malformed),    cmocka_unit_test(test_open_bad_plaintext),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
