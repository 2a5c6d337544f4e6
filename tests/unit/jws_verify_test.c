/* src/crypto/jws.c: a good RS256 and ES256 token, then every refusal by name, strict
 * base64url, trailing bytes, duplicate keys, weak and mismatched keys, the times, and
 * JWKS parsing. Tokens are signed here with the test's own keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/jws.h"
#include "bc/reasons.h"
#include "bct_cloud.h"

#define NOW_S 1790000000LL

static EVP_PKEY *rsa, *ec, *weak, *other;
static bc_jwks *keys;
static const char *const both[] = {"RS256", "ES256"};

static int setup(void **state)
{
	char *j[6], *set;
	(void)state;

	rsa = bct_rsa_key(2048);
	weak = bct_rsa_key(1024);
	other = bct_rsa_key(2048);
	ec = bct_ec_key();
	j[0] = bct_jwk(rsa, "rsa", "RS256");
	j[1] = bct_jwk(ec, "ec", NULL);
	j[2] = bct_jwk(weak, "weak", NULL);
	j[3] = bct_jwk(rsa, "rsa-384", "RS384");
	j[4] = strdup("{\"kty\":\"oct\",\"kid\":\"hmac\",\"k\":\"c2VjcmV0\"}");
	j[5] = bct_jwk(ec, "enc", NULL);
	/* a key meant for encryption */
	char *enc = malloc(strlen(j[5]) + 16);
	sprintf(enc, "{\"use\":\"enc\",%s", j[5] + 1);
	free(j[5]);
	j[5] = enc;
	set = bct_jwks((const char *const *)j, 6);
	if (bc_jwks_parse(set, strlen(set), &keys) != 0)
		return -1;
	for (int i = 0; i < 6; i++)
		free(j[i]);
	free(set);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bc_jwks_free(keys);
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(ec);
	EVP_PKEY_free(weak);
	EVP_PKEY_free(other);
	return 0;
}

static struct bc_jws_policy policy(void)
{
	struct bc_jws_policy p = {.algs = both,
	                          .n_algs = 2,
	                          .issuer = "https://issuer.test",
	                          .audience = "aud#1",
	                          .now_ms = NOW_S * 1000,
	                          .leeway_ms = 60000,
	                          .max_age_ms = 600000};
	return p;
}

static char *claims(const char *extra)
{
	char *s;
	assert_true(asprintf(&s,
	                     "{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"iat\":%lld,"
	                     "\"exp\":%lld%s}",
	                     NOW_S - 10, NOW_S + 3590, extra ? extra : "") > 0);
	return s;
}

static char *token(EVP_PKEY *k, const char *header, const char *payload)
{
	char *t = bct_jwt(k, header, payload);
	assert_non_null(t);
	return t;
}

/* The reason token gets under p ("" when accepted). */
static const char *verdict(const char *t, const struct bc_jws_policy *p)
{
	json_t *c = NULL;
	const char *why = NULL;

	assert_int_equal(bc_jws_verify(t, strlen(t), keys, p, &c, &why), 0);
	if (why == NULL) {
		assert_non_null(c);
		json_decref(c);
		return "";
	}
	assert_null(c);
	return why;
}

static void expect(EVP_PKEY *k, const char *header, const char *extra, const char *want)
{
	struct bc_jws_policy p = policy();
	char *pl = claims(extra), *t = token(k, header, pl);

	assert_string_equal(verdict(t, &p), want);
	free(t);
	free(pl);
}

static void test_accepts_rs256_and_es256(void **state)
{
	(void)state;
	expect(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\",\"typ\":\"JWT\"}", NULL, "");
	expect(ec, "{\"alg\":\"ES256\",\"kid\":\"ec\"}", NULL, "");
	/* aud as an array that contains the value */
	struct bc_jws_policy p = policy();
	char *pl, *t;
	assert_true(
	    asprintf(&pl,
	             "{\"iss\":\"https://issuer.test\",\"aud\":[\"x\",\"aud#1\"],\"iat\":%lld,"
	             "\"exp\":%lld}",
	             NOW_S, NOW_S + 60) > 0);
	t = token(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", pl);
	assert_string_equal(verdict(t, &p), "");
	char kid[BC_JWS_KID_MAX];
	assert_int_equal(bc_jws_kid(t, strlen(t), kid), 0);
	assert_string_equal(kid, "rsa");
	free(t);
	free(pl);
}

static void test_alg_refusals(void **state)
{
	(void)state;
	expect(rsa, "{\"alg\":\"none\",\"kid\":\"rsa\"}", NULL, BC_R_JWS_ALG);
	expect(rsa, "{\"alg\":\"HS256\",\"kid\":\"rsa\"}", NULL, BC_R_JWS_ALG);
	expect(rsa, "{\"alg\":\"HS256\",\"kid\":\"hmac\"}", NULL, BC_R_JWS_ALG);
	expect(rsa, "{\"kid\":\"rsa\"}", NULL, BC_R_JWS_ALG);
	/* alg and the key's type disagree: an RSA header on the EC key, and back */
	expect(ec, "{\"alg\":\"RS256\",\"kid\":\"ec\"}", NULL, BC_R_JWS_ALG);
	expect(rsa, "{\"alg\":\"ES256\",\"kid\":\"rsa\"}", NULL, BC_R_JWS_ALG);
	/* the JWK's own alg is RS384 */
	expect(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa-384\"}", NULL, BC_R_JWS_ALG);
	/* not in this provider's allow-list */
	struct bc_jws_policy p = policy();
	static const char *const only_rs[] = {"RS256"};
	p.algs = only_rs;
	p.n_algs = 1;
	char *pl = claims(NULL), *t = token(ec, "{\"alg\":\"ES256\",\"kid\":\"ec\"}", pl);
	assert_string_equal(verdict(t, &p), BC_R_JWS_ALG);
	/* a caller's list naming none or HS256 is not honoured */
	static const char *const bad[] = {"none", "HS256"};
	p.algs = bad;
	p.n_algs = 2;
	free(t);
	t = token(rsa, "{\"alg\":\"none\",\"kid\":\"rsa\"}", pl);
	assert_string_equal(verdict(t, &p), BC_R_JWS_ALG);
	free(t);
	free(pl);
}

static void test_header_refusals(void **state)
{
	(void)state;
	expect(rsa, "{\"alg\":\"RS256\"}", NULL, BC_R_JWS_KID);
	expect(rsa, "{\"alg\":\"RS256\",\"kid\":\"nobody\"}", NULL, BC_R_JWS_KID);
	expect(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\",\"crit\":[\"exp\"]}", NULL, BC_R_JWS_CRIT);
	/* a 1024-bit RSA key, and a key for encryption */
	expect(weak, "{\"alg\":\"RS256\",\"kid\":\"weak\"}", NULL, BC_R_JWS_KEY);
	expect(ec, "{\"alg\":\"ES256\",\"kid\":\"enc\"}", NULL, BC_R_JWS_KEY);
	/* duplicate keys in the header */
	expect(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\",\"kid\":\"rsa\"}", NULL,
	       BC_R_JWS_MALFORMED);
}

static void test_signature_refusals(void **state)
{
	struct bc_jws_policy p = policy();
	char *pl = claims(NULL), *t;
	(void)state;

	/* another key under the same kid */
	t = token(other, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", pl);
	assert_string_equal(verdict(t, &p), BC_R_JWS_SIGNATURE);
	free(t);
	/* a payload changed after signing */
	t = token(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", pl);
	char *dot = strchr(t, '.') + 1;
	*dot = *dot == 'e' ? 'f' : 'e';
	assert_string_equal(verdict(t, &p), BC_R_JWS_SIGNATURE);
	free(t);
	/* a truncated signature (still valid base64url) */
	t = token(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", pl);
	{
		char *sig = strrchr(t, '.') + 1, *out, *e;
		uint8_t *raw;
		size_t n;
		assert_int_equal(bc_b64url_decode(sig, strlen(sig), &raw, &n), 0);
		e = bc_b64url_encode(raw, n - 1);
		sig[-1] = 0;
		assert_true(asprintf(&out, "%s.%s", t, e) > 0);
		assert_string_equal(verdict(out, &p), BC_R_JWS_SIGNATURE);
		free(out);
		free(e);
		free(raw);
	}
	free(t);
	/* ES256 as DER rather than 64 bytes R||S */
	t = token(ec, "{\"alg\":\"ES256\",\"kid\":\"ec\"}", pl);
	{
		char *sig = strrchr(t, '.') + 1, *out;
		uint8_t *raw;
		size_t n, dn;
		uint8_t *der;
		assert_int_equal(bc_b64url_decode(sig, strlen(sig), &raw, &n), 0);
		assert_int_equal(bc_ecdsa_p1363_to_der(raw, &der, &dn), 0);
		char *d = bc_b64url_encode(der, dn);
		sig[-1] = 0;
		assert_true(asprintf(&out, "%s.%s", t, d) > 0);
		assert_string_equal(verdict(out, &p), BC_R_JWS_SIGNATURE);
		free(out);
		free(d);
		free(der);
		free(raw);
	}
	free(t);
	free(pl);
}

static void test_encoding_refusals(void **state)
{
	struct bc_jws_policy p = policy();
	char *pl = claims(NULL), *t = token(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", pl), *m;
	size_t n = strlen(t);
	(void)state;

	assert_string_equal(verdict(t, &p), "");
	/* cut before the signature, and in the header */
	m = strndup(t, (size_t)(strrchr(t, '.') - t + 1));
	assert_string_equal(verdict(m, &p), BC_R_JWS_MALFORMED);
	free(m);
	m = strndup(t, 5);
	assert_string_equal(verdict(m, &p), BC_R_JWS_MALFORMED);
	free(m);
	/* padding, standard-base64 characters, white space, trailing parts and bytes */
	const char *suffix[] = {"=", "==", ".", ".x", "\n", " "};
	for (size_t i = 0; i < sizeof(suffix) / sizeof(*suffix); i++) {
		assert_true(asprintf(&m, "%s%s", t, suffix[i]) > 0);
		assert_string_equal(verdict(m, &p), BC_R_JWS_MALFORMED);
		free(m);
	}
	m = strdup(t);
	m[strchr(m, '.') - m - 1] = '+';
	assert_string_equal(verdict(m, &p), BC_R_JWS_MALFORMED);
	m[strchr(m, '.') - m - 1] = '/';
	assert_string_equal(verdict(m, &p), BC_R_JWS_MALFORMED);
	free(m);
	/* padding inside: the header's base64url with '=' */
	char *dot = strchr(t, '.');
	assert_true(asprintf(&m, "%.*s=%s", (int)(dot - t), t, dot) > 0);
	assert_string_equal(verdict(m, &p), BC_R_JWS_MALFORMED);
	free(m);
	/* a NUL byte inside the length */
	m = strdup(t);
	m[n / 2] = 0;
	json_t *c = NULL;
	const char *why = NULL;
	assert_int_equal(bc_jws_verify(m, n, keys, &p, &c, &why), 0);
	assert_string_equal(why, BC_R_JWS_MALFORMED);
	free(m);
	free(t);
	free(pl);
	/* duplicate claims, and a payload that is no object: refused once signed */
	t = token(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}",
	          "{\"iss\":\"https://issuer.test\",\"iss\":\"https://issuer.test\"}");
	assert_string_equal(verdict(t, &p), BC_R_JWS_MALFORMED);
	free(t);
	t = token(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", "[1,2]");
	assert_string_equal(verdict(t, &p), BC_R_JWS_MALFORMED);
	free(t);
	t = token(rsa, "[\"alg\"]", "{}");
	assert_string_equal(verdict(t, &p), BC_R_JWS_MALFORMED);
	free(t);
}

static void with_claims(const char *json, const char *want)
{
	struct bc_jws_policy p = policy();
	char *t = token(rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa\"}", json);

	assert_string_equal(verdict(t, &p), want);
	free(t);
}

static void test_claim_refusals(void **state)
{
	char b[512];
	(void)state;

#define C(fmt, ...) (snprintf(b, sizeof(b), fmt, __VA_ARGS__), b)
	with_claims(C("{\"iss\":\"https://other\",\"aud\":\"aud#1\",\"iat\":%lld,\"exp\":%lld}",
	              NOW_S, NOW_S + 60),
	            BC_R_JWS_ISSUER);
	with_claims(
	    C("{\"iss\":\"https://issuer.test/\",\"aud\":\"aud#1\",\"iat\":%lld,\"exp\":%lld}",
	      NOW_S, NOW_S + 60),
	    BC_R_JWS_ISSUER);
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#2\",\"iat\":%lld,\"exp\":%lld}",
	      NOW_S, NOW_S + 60),
	    BC_R_JWS_AUDIENCE);
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"iat\":%lld,\"exp\":%lld}", NOW_S, NOW_S + 60),
	    BC_R_JWS_AUDIENCE);
	/* expired beyond the leeway; within it still good; no exp */
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"iat\":%lld,\"exp\":%lld}",
	      NOW_S - 200, NOW_S - 61),
	    BC_R_JWS_EXPIRED);
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"iat\":%lld,\"exp\":%lld}",
	      NOW_S - 200, NOW_S - 30),
	    "");
	with_claims(C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"iat\":%lld}", NOW_S),
	            BC_R_JWS_EXPIRED);
	/* not yet valid: nbf, or iat in the future */
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"iat\":%lld,\"exp\":%lld,"
	      "\"nbf\":%lld}",
	      NOW_S, NOW_S + 600, NOW_S + 120),
	    BC_R_JWS_NOT_YET_VALID);
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"iat\":%lld,\"exp\":%lld}",
	      NOW_S + 120, NOW_S + 600),
	    BC_R_JWS_NOT_YET_VALID);
	/* older than max_age, or no iat */
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"iat\":%lld,\"exp\":%lld}",
	      NOW_S - 601, NOW_S + 600),
	    BC_R_JWS_TOO_OLD);
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"exp\":%lld}", NOW_S + 60),
	    BC_R_JWS_TOO_OLD);
	/* times that are not integers */
	with_claims(
	    C("{\"iss\":\"https://issuer.test\",\"aud\":\"aud#1\",\"iat\":%lld,\"exp\":\"%lld\"}",
	      NOW_S, NOW_S + 60),
	    BC_R_JWS_EXPIRED);
#undef C
}

static void parse_fails(const char *json)
{
	bc_jwks *k = NULL;

	assert_int_not_equal(bc_jwks_parse(json, strlen(json), &k), 0);
	assert_null(k);
}

static void test_jwks_parsing(void **state)
{
	char *a = bct_jwk(rsa, "a", NULL), *set, *two[2];
	bc_jwks *k = NULL;
	(void)state;

	assert_int_equal(bc_jwks_count(keys), 5); /* the oct key skipped */
	assert_true(bc_jwks_has(keys, "rsa"));
	assert_false(bc_jwks_has(keys, "hmac"));
	/* a kid twice */
	two[0] = two[1] = a;
	set = bct_jwks((const char *const *)two, 2);
	parse_fails(set);
	free(set);
	parse_fails("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}");
	parse_fails("{\"keys\":[{\"kty\":\"EC\",\"kid\":\"x\",\"crv\":\"P-256\",\"x\":\"AQAB\","
	            "\"y\":\"AQAB\"}]}");
	parse_fails("{\"keys\":{}}");
	parse_fails("{\"keys\":[]} x");
	parse_fails("{\"keys\":[],\"keys\":[]}");
	/* padded base64url in n */
	parse_fails("{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"p\",\"n\":\"AQAB=\",\"e\":\"AQAB\"}]}");
	/* another curve is skipped */
	const char *p384 = "{\"keys\":[{\"kty\":\"EC\",\"kid\":\"x\",\"crv\":\"P-384\"}]}";
	assert_int_equal(bc_jwks_parse(p384, strlen(p384), &k), 0);
	assert_int_equal(bc_jwks_count(k), 0);
	bc_jwks_free(k);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accepts_rs256_and_es256),
	    cmocka_unit_test(test_alg_refusals),
	    cmocka_unit_test(test_header_refusals),
	    cmocka_unit_test(test_signature_refusals),
	    cmocka_unit_test(test_encoding_refusals),
	    cmocka_unit_test(test_claim_refusals),
	    cmocka_unit_test(test_jwks_parsing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
