/* ES256 with purposes, key ids and P-256 key encodings (src/crypto/es256.c, key.c, pem.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "bc/buf.h"
#include "bc/crypto.h"

static const char *const purposes[] = {
    BC_PURPOSE_JOIN_RESPONSE, BC_PURPOSE_SECRET_RESPONSE, BC_PURPOSE_X509POP,
    BC_PURPOSE_RENEW,         BC_PURPOSE_SECRET_REQUEST,  BC_PURPOSE_DISCOVERY_ASSERTION,
};
#define NPURPOSES (sizeof(purposes) / sizeof(purposes[0]))

/* RFC 9180 A.3.1's recipient key: a scalar with a published point. */
static const char rfc_skRm[] = "f3ce7fdae57e1a310d87f1ebbde6f328be0a99cdbcadf4d6589cf29de4b8ffd2";
static const char rfc_pkRm[] = "04fe8c19ce0905191ebc298a9245792531f26f0cece2460639e8bc39cb7f706a82"
                               "6a779b4cf969b8a0e539c7f62fb3d30ad6aa8f80e30f1d128aafd68a2ce72ea0";

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

static EVP_PKEY *new_key(void)
{
	EVP_PKEY *k = NULL;

	assert_int_equal(bc_key_generate(&k), 0);
	assert_non_null(k);
	return k;
}

/* ES256 by a key in memory (a signer of it), and a check by its point: what every
 * caller holding an EVP_PKEY does with the one sign and the one verify. */
static int sign_k(EVP_PKEY *k, const char *purpose, const void *payload, size_t len,
                  uint8_t sig[BC_SIG_LEN])
{
	struct bc_signer s;
	int rc;

	if ((rc = bc_signer_init(&s, k, NULL, NULL)) != 0)
		return rc;
	return bc_es256_sign(&s, purpose, payload, len, sig);
}

static int verify_k(EVP_PKEY *k, const char *purpose, const void *payload, size_t len,
                    const uint8_t *sig, size_t siglen)
{
	uint8_t pt[65];
	int rc;

	if ((rc = bc_p256_public_point(k, pt)) != 0)
		return rc;
	return bc_es256_verify(pt, purpose, payload, len, sig, siglen);
}

/* Keys of other kinds, made with OpenSSL directly. */
static EVP_PKEY *foreign_key(int which)
{
	EVP_PKEY *k = NULL;

	switch (which) {
	case 0: k = EVP_EC_gen("secp384r1"); break;
	case 1: k = EVP_RSA_gen(2048); break;
	case 2: k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"); break;
	default: fail();
	}
	assert_non_null(k);
	return k;
}
#define NFOREIGN 3

static char *bio_string(BIO *bio)
{
	char *data = NULL, *s;
	long n = BIO_get_mem_data(bio, &data);

	assert_true(n > 0);
	s = malloc((size_t)n + 1);
	assert_non_null(s);
	memcpy(s, data, (size_t)n);
	s[n] = '\0';
	return s;
}

static char *openssl_pem(EVP_PKEY *k, int kind)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *s;
	int ok = 0;

	assert_non_null(bio);
	switch (kind) {
	case 0: ok = PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL); break;
	case 1: ok = PEM_write_bio_PUBKEY(bio, k); break;
	case 2: ok = PEM_write_bio_PrivateKey_traditional(bio, k, NULL, NULL, 0, NULL, NULL); break;
	case 3:
		ok = PEM_write_bio_PKCS8PrivateKey(bio, k, EVP_aes_256_cbc(), NULL, 0, NULL,
		                                   (void *)"pass phrase");
		break;
	default: fail();
	}
	assert_int_equal(ok, 1);
	s = bio_string(bio);
	BIO_free(bio);
	return s;
}

static size_t openssl_spki(EVP_PKEY *k, uint8_t *out, size_t max)
{
	uint8_t *p = out;
	int n = i2d_PUBKEY(k, NULL);

	assert_true(n > 0 && (size_t)n <= max);
	assert_int_equal(i2d_PUBKEY(k, &p), n);
	return (size_t)n;
}

/* DER bytes as PEM with 64-column lines. */
static char *der_to_pem(const char *label, const uint8_t *der, size_t len)
{
	size_t b64len = 4 * ((len + 2) / 3), cap = b64len + b64len / 64 + 128;
	unsigned char *b64 = malloc(b64len + 1);
	char *pem = malloc(cap);
	size_t off;

	assert_non_null(b64);
	assert_non_null(pem);
	assert_int_equal(EVP_EncodeBlock(b64, der, (int)len), (int)b64len);
	off = (size_t)snprintf(pem, cap, "-----BEGIN %s-----\n", label);
	for (size_t i = 0; i < b64len; i += 64) {
		size_t n = b64len - i < 64 ? b64len - i : 64;

		memcpy(pem + off, b64 + i, n);
		off += n;
		pem[off++] = '\n';
	}
	snprintf(pem + off, cap - off, "-----END %s-----\n", label);
	free(b64);
	return pem;
}

static void test_sign_verify_purposes(void **state)
{
	EVP_PKEY *k = new_key();
	const char *payload = "the body bytes";
	uint8_t sig[BC_SIG_LEN];

	(void)state;
	for (size_t i = 0; i < NPURPOSES; i++) {
		assert_int_equal(sign_k(k, purposes[i], payload, strlen(payload), sig), 0);
		assert_int_equal(
		    verify_k(k, purposes[i], payload, strlen(payload), sig, sizeof(sig)), 0);
		/* the signature holds for its purpose only */
		for (size_t j = 0; j < NPURPOSES; j++) {
			if (j != i)
				assert_int_equal(verify_k(k, purposes[j], payload, strlen(payload),
				                          sig, sizeof(sig)),
				                 BC_ERR_VERIFY);
		}
		assert_int_equal(
		    verify_k(k, purposes[i], "the body byteS", strlen(payload), sig, sizeof(sig)),
		    BC_ERR_VERIFY);
		assert_int_equal(
		    verify_k(k, purposes[i], payload, strlen(payload) - 1, sig, sizeof(sig)),
		    BC_ERR_VERIFY);
	}
	/* the purpose/payload boundary is not movable: "renew" + "x" != "renewx" + "" */
	assert_int_equal(sign_k(k, "renew", "x", 1, sig), 0);
	assert_int_equal(verify_k(k, "renewx", NULL, 0, sig, sizeof(sig)), BC_ERR_VERIFY);
	/* an empty payload signs */
	assert_int_equal(sign_k(k, BC_PURPOSE_RENEW, NULL, 0, sig), 0);
	assert_int_equal(verify_k(k, BC_PURPOSE_RENEW, NULL, 0, sig, sizeof(sig)), 0);
	/* no purpose, no signature */
	assert_int_equal(sign_k(k, NULL, "x", 1, sig), BC_ERR_INVALID);
	assert_int_equal(sign_k(k, "", "x", 1, sig), BC_ERR_INVALID);
	assert_int_equal(sign_k(k, "renew", NULL, 1, sig), BC_ERR_INVALID);
	EVP_PKEY_free(k);
}

static void test_verify_refuses_bad_signatures(void **state)
{
	EVP_PKEY *k = new_key(), *other = new_key();
	uint8_t sig[BC_SIG_LEN + 1] = {0}, bad[BC_SIG_LEN];

	(void)state;
	assert_int_equal(sign_k(k, BC_PURPOSE_X509POP, "p", 1, sig), 0);
	assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, sig, 64), 0);
	assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, sig, 63), BC_ERR_VERIFY);
	assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, sig, 65), BC_ERR_VERIFY);
	assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, sig, 0), BC_ERR_VERIFY);
	assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, NULL, 64), BC_ERR_VERIFY);
	assert_int_equal(verify_k(other, BC_PURPOSE_X509POP, "p", 1, sig, 64), BC_ERR_VERIFY);
	for (size_t i = 0; i < BC_SIG_LEN * 8; i++) {
		memcpy(bad, sig, sizeof(bad));
		bad[i / 8] ^= (uint8_t)(1u << (i % 8));
		assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, bad, sizeof(bad)),
		                 BC_ERR_VERIFY);
	}
	/* r = 0, s = 0, and values at or above the order */
	memcpy(bad, sig, sizeof(bad));
	memset(bad, 0, 32);
	assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, bad, 64), BC_ERR_VERIFY);
	memcpy(bad, sig, sizeof(bad));
	memset(bad + 32, 0, 32);
	assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, bad, 64), BC_ERR_VERIFY);
	memset(bad, 0xff, sizeof(bad));
	assert_int_equal(verify_k(k, BC_PURPOSE_X509POP, "p", 1, bad, 64), BC_ERR_VERIFY);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
}

/* The signed message, built here by hand and checked with OpenSSL directly. */
static void test_message_format_independent(void **state)
{
	EVP_PKEY *k = new_key();
	static const char msg[] = "bettercompute/v1\0join-response\0payload";
	uint8_t sig[BC_SIG_LEN], *der = NULL, osig[80];
	size_t derlen = 0, osiglen = sizeof(osig);
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	(void)state;
	assert_non_null(md);
	assert_int_equal(sign_k(k, BC_PURPOSE_JOIN_RESPONSE, "payload", 7, sig), 0);
	assert_int_equal(bc_ecdsa_p1363_to_der(sig, &der, &derlen), 0);
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k), 1);
	assert_int_equal(EVP_DigestVerify(md, der, derlen, (const uint8_t *)msg, sizeof(msg) - 1),
	                 1);

	/* and the other way: OpenSSL signs, we verify */
	EVP_MD_CTX_reset(md);
	assert_int_equal(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k), 1);
	assert_int_equal(EVP_DigestSign(md, osig, &osiglen, (const uint8_t *)msg, sizeof(msg) - 1),
	                 1);
	assert_int_equal(bc_ecdsa_der_to_p1363(osig, osiglen, sig), 0);
	assert_int_equal(verify_k(k, BC_PURPOSE_JOIN_RESPONSE, "payload", 7, sig, 64), 0);
	assert_int_equal(verify_k(k, BC_PURPOSE_SECRET_RESPONSE, "payload", 7, sig, 64),
	                 BC_ERR_VERIFY);
	EVP_MD_CTX_free(md);
	free(der);
	EVP_PKEY_free(k);
}

/* The key id, checked against `openssl pkey -pubout -outform DER | sha256sum`. */
static void test_key_id_matches_openssl_cli(void **state)
{
	EVP_PKEY *k = new_key();
	char id[BC_KEY_ID_LEN + 1], path[] = "/tmp/bc_es256_test_XXXXXX", cmd[256], line[128] = "";
	char *pem = NULL;
	uint8_t spki[128], h[32];
	size_t n;
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(bc_key_id(k, id), 0);
	assert_int_equal(strlen(id), BC_KEY_ID_LEN);
	assert_int_equal(strspn(id, "0123456789abcdef"), BC_KEY_ID_LEN);

	assert_int_equal(bc_key_to_pem(k, &pem), 0);
	assert_true((fd = mkstemp(path)) >= 0);
	assert_int_equal(write(fd, pem, strlen(pem)), (ssize_t)strlen(pem));
	close(fd);
	snprintf(cmd, sizeof(cmd), "openssl pkey -in %s -pubout -outform DER | sha256sum", path);
	assert_non_null(f = popen(cmd, "r"));
	assert_non_null(fgets(line, sizeof(line), f));
	assert_int_equal(pclose(f), 0);
	unlink(path);
	assert_memory_equal(line, id, BC_KEY_ID_LEN);

	/* and recomputed from OpenSSL's own encoding */
	n = openssl_spki(k, spki, sizeof(spki));
	assert_int_equal(n, 91);
	assert_int_equal(EVP_Digest(spki, n, h, NULL, EVP_sha256(), NULL), 1);
	for (size_t i = 0; i < 32; i++) {
		char two[3];

		snprintf(two, sizeof(two), "%02x", h[i]);
		assert_memory_equal(id + 2 * i, two, 2);
	}
	bc_freezero(pem, strlen(pem));
	EVP_PKEY_free(k);
}

static void test_pem_round_trips(void **state)
{
	EVP_PKEY *k = new_key(), *back = NULL, *pub = NULL;
	char *pem = NULL, *pubpem = NULL, *padded = NULL;
	char id1[65], id2[65];
	uint8_t raw1[32], raw2[32], pt1[65], pt2[65];
	size_t plen;

	(void)state;
	assert_int_equal(bc_key_to_pem(k, &pem), 0);
	assert_non_null(strstr(pem, "-----BEGIN PRIVATE KEY-----\n"));
	assert_int_equal(bc_key_from_pem(pem, strlen(pem), &back), 0);
	assert_int_equal(bc_key_to_raw(k, raw1), 0);
	assert_int_equal(bc_key_to_raw(back, raw2), 0);
	assert_memory_equal(raw1, raw2, 32);

	assert_int_equal(bc_pubkey_to_pem(k, &pubpem), 0);
	assert_non_null(strstr(pubpem, "-----BEGIN PUBLIC KEY-----\n"));
	assert_int_equal(bc_pubkey_from_pem(pubpem, strlen(pubpem), &pub), 0);
	assert_int_equal(bc_key_to_point(k, pt1), 0);
	assert_int_equal(bc_key_to_point(pub, pt2), 0);
	assert_memory_equal(pt1, pt2, 65);
	assert_int_equal(bc_key_id(k, id1), 0);
	assert_int_equal(bc_key_id(pub, id2), 0);
	assert_string_equal(id1, id2);
	/* a public key has no scalar to give */
	assert_int_equal(bc_key_to_raw(pub, raw2), BC_ERR_INVALID);
	assert_true(raw2[0] == 0 && raw2[31] == 0);
	EVP_PKEY_free(back);
	back = NULL;

	/* white space around the block is fine */
	plen = strlen(pem);
	assert_non_null(padded = malloc(plen + 8));
	snprintf(padded, plen + 8, "\n  %s\r\n\n", pem);
	assert_int_equal(bc_key_from_pem(padded, strlen(padded), &back), 0);
	assert_non_null(back);

	bc_freezero(pem, strlen(pem));
	free(padded);
	free(pubpem);
	EVP_PKEY_free(back);
	EVP_PKEY_free(pub);
	EVP_PKEY_free(k);
}

static void expect_pem_refused(const char *pem, size_t len, int want)
{
	EVP_PKEY *out = (EVP_PKEY *)1;
	int rc = bc_key_from_pem(pem, len, &out);

	assert_null(out);
	if (want != 0)
		assert_int_equal(rc, want);
	else
		assert_true(rc < 0);
}

static void expect_pubpem_refused(const char *pem, size_t len, int want)
{
	EVP_PKEY *out = (EVP_PKEY *)1;
	int rc = bc_pubkey_from_pem(pem, len, &out);

	assert_null(out);
	if (want != 0)
		assert_int_equal(rc, want);
	else
		assert_true(rc < 0);
}

static void test_pem_refused(void **state)
{
	EVP_PKEY *k = new_key();
	char *pem = NULL, *pubpem = NULL, *sec1, *enc, buf[4096];
	size_t n;

	(void)state;
	assert_int_equal(bc_key_to_pem(k, &pem), 0);
	assert_int_equal(bc_pubkey_to_pem(k, &pubpem), 0);
	n = strlen(pem);

	expect_pem_refused("", 0, BC_ERR_INVALID);
	expect_pem_refused(NULL, 10, BC_ERR_INVALID);
	expect_pem_refused("garbage", 7, BC_ERR_INVALID);
	expect_pem_refused("-----BEGIN PRIVATE KEY-----\n", 28, 0);
	/* the other kind of block, each way */
	expect_pem_refused(pubpem, strlen(pubpem), BC_ERR_INVALID);
	expect_pubpem_refused(pem, n, BC_ERR_INVALID);
	/* truncated anywhere */
	for (size_t cut = 0; cut < n - 1; cut += 7)
		expect_pem_refused(pem, cut, 0);
	/* text after or before the block */
	snprintf(buf, sizeof(buf), "%sx", pem);
	expect_pem_refused(buf, strlen(buf), BC_ERR_TRAILING);
	snprintf(buf, sizeof(buf), "%s%s", pem, pem);
	expect_pem_refused(buf, strlen(buf), BC_ERR_TRAILING);
	snprintf(buf, sizeof(buf), "%sjunk\n", pubpem);
	expect_pubpem_refused(buf, strlen(buf), BC_ERR_TRAILING);
	snprintf(buf, sizeof(buf), "comment\n%s", pem);
	expect_pem_refused(buf, strlen(buf), BC_ERR_INVALID);
	/* an embedded NUL, even at the end */
	memcpy(buf, pem, n + 1);
	expect_pem_refused(buf, n + 1, BC_ERR_INVALID);
	/* a base64 character changed */
	memcpy(buf, pem, n + 1);
	buf[40] = buf[40] == 'A' ? '*' : 'A';
	expect_pem_refused(buf, n, 0);
	/* headers (an old-style encrypted key) */
	snprintf(buf, sizeof(buf),
	         "-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
	         "DEK-Info: AES-256-CBC,00000000000000000000000000000000\n\n%s",
	         pem + strlen("-----BEGIN PRIVATE KEY-----\n"));
	expect_pem_refused(buf, strlen(buf), 0);
	/* SEC1 "EC PRIVATE KEY" and encrypted PKCS#8: refused, with no prompt */
	sec1 = openssl_pem(k, 2);
	assert_non_null(strstr(sec1, "BEGIN EC PRIVATE KEY"));
	expect_pem_refused(sec1, strlen(sec1), BC_ERR_INVALID);
	enc = openssl_pem(k, 3);
	assert_non_null(strstr(enc, "BEGIN ENCRYPTED PRIVATE KEY"));
	expect_pem_refused(enc, strlen(enc), BC_ERR_INVALID);

	free(sec1);
	free(enc);
	bc_freezero(pem, strlen(pem));
	free(pubpem);
	EVP_PKEY_free(k);
}

/* A PKCS#8 whose embedded public point is another key's: the pair check refuses it. */
static void test_pem_mismatched_pair_refused(void **state)
{
	EVP_PKEY *a = new_key(), *b = new_key(), *out = NULL;
	uint8_t pa[65], pb[65], *der = NULL, *p;
	PKCS8_PRIV_KEY_INFO *p8;
	char *pem;
	int n;

	(void)state;
	assert_int_equal(bc_key_to_point(a, pa), 0);
	assert_int_equal(bc_key_to_point(b, pb), 0);
	assert_non_null(p8 = EVP_PKEY2PKCS8(a));
	assert_true((n = i2d_PKCS8_PRIV_KEY_INFO(p8, &der)) > 0);
	assert_non_null(p = memmem(der, (size_t)n, pa, sizeof(pa)));
	memcpy(p, pb, sizeof(pb));
	pem = der_to_pem("PRIVATE KEY", der, (size_t)n);
	assert_int_equal(bc_key_from_pem(pem, strlen(pem), &out), BC_ERR_INVALID);
	assert_null(out);
	/* the same bytes unedited are accepted, so the edit is what was refused */
	memcpy(p, pa, sizeof(pa));
	free(pem);
	pem = der_to_pem("PRIVATE KEY", der, (size_t)n);
	assert_int_equal(bc_key_from_pem(pem, strlen(pem), &out), 0);
	assert_non_null(out);

	EVP_PKEY_free(out);
	free(pem);
	OPENSSL_clear_free(der, (size_t)n);
	PKCS8_PRIV_KEY_INFO_free(p8);
	EVP_PKEY_free(a);
	EVP_PKEY_free(b);
}

/* A key from the openssl command line reads, and signs. */
static void test_pem_from_openssl_cli(void **state)
{
	char pem[2048];
	size_t n;
	EVP_PKEY *k = NULL;
	uint8_t sig[64];
	FILE *f;

	(void)state;
	f = popen("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 2>/dev/null",
	          "r");
	assert_non_null(f);
	n = fread(pem, 1, sizeof(pem), f);
	assert_int_equal(pclose(f), 0);
	assert_true(n > 0 && n < sizeof(pem));
	assert_int_equal(bc_key_from_pem(pem, n, &k), 0);
	assert_int_equal(sign_k(k, BC_PURPOSE_RENEW, "x", 1, sig), 0);
	assert_int_equal(verify_k(k, BC_PURPOSE_RENEW, "x", 1, sig, 64), 0);
	OPENSSL_cleanse(pem, sizeof(pem));
	EVP_PKEY_free(k);
}

/* A PKCS#8 with explicit curve parameters or a compressed point format is read as
 * the same key with our encoding: one SPKI, one key id. */
static void test_pem_other_encodings_normalized(void **state)
{
	static const char *const params[][2] = {
	    {"point-format", "compressed"},
	    {"encoding", "explicit"},
	};
	char id[65], id2[65], *pem;
	uint8_t *spki = NULL;
	size_t spkilen = 0;
	EVP_PKEY *k, *back = NULL;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		k = new_key();
		assert_int_equal(bc_key_id(k, id), 0);
		assert_int_equal(EVP_PKEY_set_utf8_string_param(k, params[i][0], params[i][1]), 1);
		/* the one SPKI, whatever encoding the key would have OpenSSL write */
		assert_int_equal(bc_key_spki(k, &spki, &spkilen), 0);
		assert_int_equal(spkilen, 91);
		assert_int_equal(bc_key_id(k, id2), 0);
		assert_string_equal(id, id2);
		free(spki);
		pem = openssl_pem(k, 0);
		assert_int_equal(bc_key_from_pem(pem, strlen(pem), &back), 0);
		assert_int_equal(bc_key_spki(back, &spki, &spkilen), 0);
		assert_int_equal(spkilen, 91);
		assert_int_equal(bc_key_id(back, id2), 0);
		assert_string_equal(id, id2);
		free(spki);
		bc_freezero(pem, strlen(pem));
		EVP_PKEY_free(back);
		EVP_PKEY_free(k);
	}
}

static void test_spki(void **state)
{
	EVP_PKEY *k = new_key(), *back = NULL;
	uint8_t *der = NULL, *der2 = NULL, buf[256];
	size_t len = 0, len2 = 0;

	(void)state;
	assert_int_equal(bc_key_spki(k, &der, &len), 0);
	assert_int_equal(len, 91);
	assert_int_equal(bc_key_from_spki(der, len, &back), 0);
	assert_int_equal(bc_key_spki(back, &der2, &len2), 0);
	assert_int_equal(len2, len);
	assert_memory_equal(der, der2, len);
	assert_true(EVP_PKEY_eq(k, back) == 1);
	EVP_PKEY_free(back);
	back = (EVP_PKEY *)1;

	assert_int_equal(bc_key_from_spki(NULL, 0, &back), BC_ERR_INVALID);
	assert_null(back);
	/* a trailing byte */
	memcpy(buf, der, len);
	buf[len] = 0;
	assert_int_equal(bc_key_from_spki(buf, len + 1, &back), BC_ERR_TRAILING);
	assert_null(back);
	/* every truncation */
	for (size_t cut = 0; cut < len; cut++) {
		assert_true(bc_key_from_spki(der, cut, &back) < 0);
		assert_null(back);
	}
	/* every single-byte change: length, OIDs, the point */
	for (size_t i = 0; i < len; i++) {
		memcpy(buf, der, len);
		buf[i] ^= 0x01;
		assert_true(bc_key_from_spki(buf, len, &back) < 0);
		assert_null(back);
	}
	assert_int_equal(bc_key_from_spki(der, 4096, &back), BC_ERR_LIMIT);
	free(der);
	free(der2);
	EVP_PKEY_free(k);
}

/* The same P-256 key encoded other ways: explicit curve parameters, a compressed
 * point. Refused, so a key has one SPKI and one key id. */
static void test_spki_other_encodings_refused(void **state)
{
	EVP_PKEY *k = new_key(), *out = NULL;
	uint8_t buf[512];
	size_t n;

	(void)state;
	assert_int_equal(EVP_PKEY_set_utf8_string_param(k, "point-format", "compressed"), 1);
	n = openssl_spki(k, buf, sizeof(buf));
	assert_int_equal(n, 59);
	assert_int_equal(bc_key_from_spki(buf, n, &out), BC_ERR_INVALID);
	assert_null(out);
	assert_int_equal(EVP_PKEY_set_utf8_string_param(k, "point-format", "uncompressed"), 1);
	assert_int_equal(EVP_PKEY_set_utf8_string_param(k, "encoding", "explicit"), 1);
	n = openssl_spki(k, buf, sizeof(buf));
	assert_true(n > 91);
	assert_int_equal(bc_key_from_spki(buf, n, &out), BC_ERR_INVALID);
	assert_null(out);
	EVP_PKEY_free(k);
}

static void test_raw_scalar(void **state)
{
	EVP_PKEY *k = new_key(), *back = NULL, *rfc = NULL;
	uint8_t raw[32], raw2[32], pt[65], pt2[65], want[65];
	const BIGNUM *order;
	EC_GROUP *g;
	char id1[65], id2[65];

	(void)state;
	assert_int_equal(bc_key_to_raw(k, raw), 0);
	assert_int_equal(bc_key_from_raw(raw, &back), 0);
	assert_int_equal(bc_key_to_raw(back, raw2), 0);
	assert_memory_equal(raw, raw2, 32);
	assert_int_equal(bc_key_to_point(k, pt), 0);
	assert_int_equal(bc_key_to_point(back, pt2), 0);
	assert_memory_equal(pt, pt2, 65);
	assert_int_equal(bc_key_id(k, id1), 0);
	assert_int_equal(bc_key_id(back, id2), 0);
	assert_string_equal(id1, id2);
	EVP_PKEY_free(back);

	/* a published scalar and its point */
	unhex(rfc_skRm, raw, 32);
	unhex(rfc_pkRm, want, 65);
	assert_int_equal(bc_key_from_raw(raw, &rfc), 0);
	assert_int_equal(bc_key_to_point(rfc, pt), 0);
	assert_memory_equal(pt, want, 65);
	EVP_PKEY_free(rfc);

	/* 0, n and above are not scalars; n - 1 is */
	back = (EVP_PKEY *)1;
	memset(raw, 0, 32);
	assert_int_equal(bc_key_from_raw(raw, &back), BC_ERR_INVALID);
	assert_null(back);
	memset(raw, 0xff, 32);
	assert_int_equal(bc_key_from_raw(raw, &back), BC_ERR_INVALID);
	assert_non_null(g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1));
	order = EC_GROUP_get0_order(g);
	assert_int_equal(BN_bn2binpad(order, raw, 32), 32);
	assert_int_equal(bc_key_from_raw(raw, &back), BC_ERR_INVALID);
	raw[31] -= 1;
	assert_int_equal(bc_key_from_raw(raw, &back), 0);
	assert_int_equal(bc_key_to_raw(back, raw2), 0);
	assert_memory_equal(raw, raw2, 32);
	EVP_PKEY_free(back);
	EC_GROUP_free(g);
	EVP_PKEY_free(k);
}

static void expect_point_refused(const uint8_t pt[65])
{
	EVP_PKEY *out = (EVP_PKEY *)1;

	assert_int_equal(bc_key_from_point(pt, &out), BC_ERR_INVALID);
	assert_null(out);
}

static void test_point(void **state)
{
	EVP_PKEY *k = new_key(), *pub = NULL;
	uint8_t pt[65], pt2[65], bad[65];
	EC_GROUP *g;
	BIGNUM *p;

	(void)state;
	assert_int_equal(bc_key_to_point(k, pt), 0);
	assert_int_equal(pt[0], 0x04);
	assert_int_equal(bc_key_from_point(pt, &pub), 0);
	assert_int_equal(bc_key_to_point(pub, pt2), 0);
	assert_memory_equal(pt, pt2, 65);
	assert_true(EVP_PKEY_eq(k, pub) == 1);

	memcpy(bad, pt, 65);
	bad[0] = 0x02;
	expect_point_refused(bad);
	bad[0] = 0x03;
	expect_point_refused(bad);
	bad[0] = 0x00;
	expect_point_refused(bad);
	memcpy(bad, pt, 65);
	bad[64] ^= 0x01; /* off the curve */
	expect_point_refused(bad);
	memcpy(bad, pt, 65);
	bad[1] ^= 0x01;
	expect_point_refused(bad);
	memset(bad, 0, 65);
	bad[0] = 0x04; /* (0, 0) */
	expect_point_refused(bad);
	memset(bad, 0xff, 65);
	bad[0] = 0x04; /* coordinates above p */
	expect_point_refused(bad);
	/* x = p: the same residue as x = 0, but not a field element */
	assert_non_null(g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1));
	assert_non_null(p = BN_new());
	assert_int_equal(EC_GROUP_get_curve(g, p, NULL, NULL, NULL), 1);
	memcpy(bad, pt, 65);
	assert_int_equal(BN_bn2binpad(p, bad + 1, 32), 32);
	expect_point_refused(bad);
	BN_free(p);
	EC_GROUP_free(g);
	EVP_PKEY_free(pub);
	EVP_PKEY_free(k);
}

static void test_foreign_keys_refused(void **state)
{
	struct bc_signer s;
	uint8_t sig[64] = {1}, raw[32], pt[65], *spki = NULL;
	size_t spkilen = 0;
	EVP_PKEY *out = NULL;
	char *pem = NULL, *opem;

	(void)state;
	for (int i = 0; i < NFOREIGN; i++) {
		EVP_PKEY *f = foreign_key(i);

		/* no signer of it, nor a key in memory written in one by hand; no point */
		assert_int_equal(bc_signer_init(&s, f, NULL, NULL), BC_ERR_INVALID);
		assert_int_equal(
		    bc_es256_sign(&(struct bc_signer){.key = f}, BC_PURPOSE_RENEW, "x", 1, sig),
		    BC_ERR_INVALID);
		assert_int_equal(bc_p256_public_point(f, pt), BC_ERR_INVALID);
		assert_int_equal(bc_key_to_raw(f, raw), BC_ERR_INVALID);
		assert_int_equal(bc_key_to_point(f, pt), BC_ERR_INVALID);
		assert_int_equal(bc_key_to_pem(f, &pem), BC_ERR_INVALID);
		assert_null(pem);
		assert_int_equal(bc_pubkey_to_pem(f, &pem), BC_ERR_INVALID);
		assert_null(pem);
		/* its SPKI can be written (a key id names any key) but is not read back */
		assert_int_equal(bc_key_spki(f, &spki, &spkilen), 0);
		assert_int_equal(bc_key_from_spki(spki, spkilen, &out), BC_ERR_INVALID);
		assert_null(out);
		free(spki);
		/* nor as PEM, private or public */
		opem = openssl_pem(f, 0);
		assert_non_null(strstr(opem, "BEGIN PRIVATE KEY"));
		assert_int_equal(bc_key_from_pem(opem, strlen(opem), &out), BC_ERR_INVALID);
		assert_null(out);
		free(opem);
		opem = openssl_pem(f, 1);
		assert_int_equal(bc_pubkey_from_pem(opem, strlen(opem), &out), BC_ERR_INVALID);
		assert_null(out);
		free(opem);
		EVP_PKEY_free(f);
	}
	assert_int_equal(bc_signer_init(&s, NULL, NULL, NULL), BC_ERR_INVALID);
	assert_int_equal(bc_es256_sign(NULL, BC_PURPOSE_RENEW, "x", 1, sig), BC_ERR_INVALID);
	assert_int_equal(
	    bc_es256_sign(&(struct bc_signer){.key = NULL}, BC_PURPOSE_RENEW, "x", 1, sig),
	    BC_ERR_INVALID);
}

static void expect_der_refused(const char *hex)
{
	uint8_t der[128], sig[64];
	size_t n = unhex(hex, der, sizeof(der));

	memset(sig, 0xaa, sizeof(sig));
	assert_true(bc_ecdsa_der_to_p1363(der, n, sig) < 0);
	for (size_t i = 0; i < sizeof(sig); i++)
		assert_int_equal(sig[i], 0);
}

static void test_der_p1363(void **state)
{
	EVP_PKEY *k = new_key();
	uint8_t der[128], sig[64], sig2[64], want[64] = {0}, *out = NULL;
	size_t n, outlen = 0;

	(void)state;
	/* r = 1, s = 1 */
	n = unhex("3006020101020101", der, sizeof(der));
	assert_int_equal(bc_ecdsa_der_to_p1363(der, n, sig), 0);
	want[31] = 1;
	want[63] = 1;
	assert_memory_equal(sig, want, 64);
	assert_int_equal(bc_ecdsa_p1363_to_der(sig, &out, &outlen), 0);
	assert_int_equal(outlen, n);
	assert_memory_equal(out, der, n);
	free(out);
	/* a 32-byte r with its top bit set takes a 0x00 in DER */
	memset(sig, 0x80, 64);
	assert_int_equal(bc_ecdsa_p1363_to_der(sig, &out, &outlen), 0);
	assert_int_equal(outlen, 2 + 2 * 35);
	assert_int_equal(bc_ecdsa_der_to_p1363(out, outlen, sig2), 0);
	assert_memory_equal(sig, sig2, 64);
	free(out);
	/* real signatures both ways */
	for (int i = 0; i < 16; i++) {
		assert_int_equal(sign_k(k, BC_PURPOSE_RENEW, &i, sizeof(i), sig), 0);
		assert_int_equal(bc_ecdsa_p1363_to_der(sig, &out, &outlen), 0);
		assert_int_equal(bc_ecdsa_der_to_p1363(out, outlen, sig2), 0);
		assert_memory_equal(sig, sig2, 64);
		free(out);
	}

	expect_der_refused("");
	expect_der_refused("30");
	expect_der_refused("300602010102010100"); /* trailing byte */
	expect_der_refused("30060201010201");     /* truncated */
	expect_der_refused("3007020101020101");   /* length beyond the input */
	expect_der_refused("3106020101020101");   /* a SET */
	expect_der_refused("30060201ff020101");   /* r negative */
	expect_der_refused("3007020200010201"
	                   "01"); /* r with a needless 0x00 */
	expect_der_refused("308006020101020101"
	                   "0000");                   /* indefinite length */
	expect_der_refused("3003020101");             /* s missing */
	expect_der_refused("3009020101020101020101"); /* a third integer */
	/* r of 33 significant bytes */
	expect_der_refused("3026"
	                   "0221"
	                   "01"
	                   "0000000000000000000000000000000000000000000000000000000000000000"
	                   "020101");
	EVP_PKEY_free(k);
}

/* A signer whose key is held elsewhere: fn gets the digest bc_es256_sign frames, and a
 * signature the signer's point refuses is never returned. */
struct signer_ctx {
	EVP_PKEY *key;
	int fail;
	int calls;
	uint8_t last[32];
};

static int digest_signer(void *ctx, const uint8_t digest[static 32], uint8_t sig[static BC_SIG_LEN])
{
	struct signer_ctx *s = ctx;
	EVP_PKEY_CTX *c;
	uint8_t der[80];
	size_t dl = sizeof(der);

	s->calls++;
	memcpy(s->last, digest, 32);
	if (s->fail)
		return BC_ERR_UNAVAILABLE;
	c = EVP_PKEY_CTX_new_from_pkey(NULL, s->key, NULL);
	assert_non_null(c);
	assert_int_equal(EVP_PKEY_sign_init(c), 1);
	assert_int_equal(EVP_PKEY_sign(c, der, &dl, digest, 32), 1);
	EVP_PKEY_CTX_free(c);
	return bc_ecdsa_der_to_p1363(der, dl, sig);
}

/* SHA-256("bettercompute/v1" 0x00 purpose 0x00 payload), by hand. */
static void framed(const char *purpose, const void *payload, size_t len, uint8_t out[32])
{
	uint8_t m[256];
	size_t n = 0;

	memcpy(m, "bettercompute/v1", 17);
	n = 17;
	memcpy(m + n, purpose, strlen(purpose) + 1);
	n += strlen(purpose) + 1;
	assert_true(n + len <= sizeof(m));
	memcpy(m + n, payload, len);
	assert_int_equal(bc_sha256(m, n + len, out), 0);
}

static void test_signer_fn(void **state)
{
	EVP_PKEY *k = new_key(), *other = new_key();
	struct signer_ctx c = {.key = k};
	struct bc_signer s, bare;
	uint8_t sig[BC_SIG_LEN], zero[BC_SIG_LEN] = {0}, d[32], pt[65];

	(void)state;
	assert_int_equal(bc_signer_init(&s, k, digest_signer, &c), 0);
	assert_int_equal(bc_p256_public_point(k, pt), 0);
	assert_memory_equal(s.point, pt, 65);
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_RENEW, "abc", 3, sig), 0);
	assert_int_equal(c.calls, 1);
	/* fn was handed the framed digest, and the signature is ES256 under the purpose */
	framed(BC_PURPOSE_RENEW, "abc", 3, d);
	assert_memory_equal(c.last, d, 32);
	assert_int_equal(bc_es256_verify(pt, BC_PURPOSE_RENEW, "abc", 3, sig, 64), 0);
	assert_int_equal(bc_es256_verify(pt, BC_PURPOSE_X509POP, "abc", 3, sig, 64), BC_ERR_VERIFY);
	/* a signer holding another key than its point says: refused, nothing returned */
	c.key = other;
	memset(sig, 0xaa, sizeof(sig));
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_RENEW, "abc", 3, sig), BC_ERR_VERIFY);
	assert_memory_equal(sig, zero, sizeof(sig));
	/* a failing signer's error passes through */
	c.key = k;
	c.fail = 1;
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_RENEW, "abc", 3, sig), BC_ERR_UNAVAILABLE);
	assert_memory_equal(sig, zero, sizeof(sig));
	c.fail = 0;
	/* fn is never asked without a purpose, nor for a digest the caller names */
	c.calls = 0;
	assert_int_equal(bc_es256_sign(&s, NULL, "abc", 3, sig), BC_ERR_INVALID);
	assert_int_equal(bc_es256_sign(&s, "", "abc", 3, sig), BC_ERR_INVALID);
	assert_int_equal(bc_es256_sign(&s, BC_ES256_DIGEST, d, 32, sig), BC_ERR_INVALID);
	assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_RENEW, NULL, 3, sig), BC_ERR_INVALID);
	/* nor without a point to check its answer under */
	bare = (struct bc_signer){.key = k, .fn = digest_signer, .ctx = &c};
	assert_int_equal(bc_es256_sign(&bare, BC_PURPOSE_RENEW, "abc", 3, sig), BC_ERR_INVALID);
	assert_int_equal(c.calls, 0);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
}

/* A signature over a digest framed elsewhere (what a TPM signs): checked as given, and
 * never under a purpose's framing, nor the other way round. */
static void test_verify_digest(void **state)
{
	EVP_PKEY *k = new_key(), *other = new_key();
	struct signer_ctx c = {.key = k};
	uint8_t sig[BC_SIG_LEN], d[32], pt[65], opt[65];
	const char *impostor = "(a digest framed elsewhere)";

	(void)state;
	assert_int_equal(bc_p256_public_point(k, pt), 0);
	assert_int_equal(bc_p256_public_point(other, opt), 0);
	assert_int_equal(bc_sha256("TPM structure", 13, d), 0);
	assert_int_equal(digest_signer(&c, d, sig), 0);
	assert_int_equal(bc_es256_verify(pt, BC_ES256_DIGEST, d, 32, sig, 64), 0);
	assert_int_equal(bc_es256_verify(opt, BC_ES256_DIGEST, d, 32, sig, 64), BC_ERR_VERIFY);
	assert_int_equal(bc_es256_verify(pt, BC_ES256_DIGEST, d, 31, sig, 64), BC_ERR_INVALID);
	assert_int_equal(bc_es256_verify(pt, BC_ES256_DIGEST, NULL, 32, sig, 64), BC_ERR_INVALID);
	assert_int_equal(bc_es256_verify(pt, BC_ES256_DIGEST, d, 32, sig, 63), BC_ERR_VERIFY);
	/* the same bytes as a purpose's payload, or the sentinel's text as a purpose: its
	 * address is what names it, and framed it is another message */
	assert_int_equal(bc_es256_verify(pt, BC_PURPOSE_RENEW, d, 32, sig, 64), BC_ERR_VERIFY);
	assert_int_equal(bc_es256_verify(pt, impostor, d, 32, sig, 64), BC_ERR_VERIFY);
	/* an ES256 signature is over the framed digest (so BC_ES256_DIGEST is never for
	 * this protocol's messages: the caller would be doing the framing), not over any
	 * other digest of it */
	assert_int_equal(sign_k(k, BC_PURPOSE_RENEW, "x", 1, sig), 0);
	framed(BC_PURPOSE_RENEW, "x", 1, d);
	assert_int_equal(bc_es256_verify(pt, BC_ES256_DIGEST, d, 32, sig, 64), 0);
	assert_int_equal(bc_sha256(d, 32, d), 0);
	assert_int_equal(bc_es256_verify(pt, BC_ES256_DIGEST, d, 32, sig, 64), BC_ERR_VERIFY);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sign_verify_purposes),
	    cmocka_unit_test(test_verify_refuses_bad_signatures),
	    cmocka_unit_test(test_message_format_independent),
	    cmocka_unit_test(test_key_id_matches_openssl_cli),
	    cmocka_unit_test(test_pem_round_trips),
	    cmocka_unit_test(test_pem_refused),
	    cmocka_unit_test(test_pem_mismatched_pair_refused),
	    cmocka_unit_test(test_pem_from_openssl_cli),
	    cmocka_unit_test(test_pem_other_encodings_normalized),
	    cmocka_unit_test(test_spki),
	    cmocka_unit_test(test_spki_other_encodings_refused),
	    cmocka_unit_test(test_raw_scalar),
	    cmocka_unit_test(test_point),
	    cmocka_unit_test(test_foreign_keys_refused),
	    cmocka_unit_test(test_der_p1363),
	    cmocka_unit_test(test_signer_fn),
	    cmocka_unit_test(test_verify_digest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
