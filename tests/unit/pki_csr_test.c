/* src/pki: the CSR check (DER PKCS#10, P-256, a self-signature that verifies)
 * and bc_csr_make; CSRs of other kinds are built here with OpenSSL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/core_names.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "bc/crypto.h"
#include "bc/pki.h"

#define CN "node_01hzx3k9q8w7e6r5t4y3u2i1o0"

/* A CSR for pub signed by signer (the same key for an honest CSR). */
static uint8_t *raw_csr(EVP_PKEY *pub, EVP_PKEY *signer, const EVP_MD *md, size_t *len)
{
	X509_REQ *req = X509_REQ_new();
	unsigned char *der = NULL;
	int n;

	assert_non_null(req);
	assert_int_equal(X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(req), "CN",
	                                            MBSTRING_ASC, (const unsigned char *)CN, -1, -1,
	                                            0),
	                 1);
	assert_int_equal(X509_REQ_set_pubkey(req, pub), 1);
	assert_true(X509_REQ_sign(req, signer, md) > 0);
	assert_true((n = i2d_X509_REQ(req, &der)) > 0);
	*len = (size_t)n;
	X509_REQ_free(req);
	return der;
}

/* bc_csr_check, and bc_csr_check_point on the same bytes: the same answer, and the
 * same key (or a zeroed point) */
static int check(const uint8_t *der, size_t len)
{
	static const uint8_t zero[65];
	EVP_PKEY *pub = (EVP_PKEY *)0x1;
	int rc = bc_csr_check(der, len, &pub);
	uint8_t pt[65], want[65];

	memset(pt, 0xaa, sizeof(pt));
	assert_int_equal(bc_csr_check_point(der, len, pt), rc);
	if (rc != 0) {
		assert_null(pub);
		assert_memory_equal(pt, zero, 65);
	} else {
		assert_int_equal(bc_key_to_point(pub, want), 0);
		assert_memory_equal(pt, want, 65);
	}
	EVP_PKEY_free(pub);
	return rc;
}

static void test_good_csr(void **state)
{
	EVP_PKEY *key = NULL, *pub = NULL;
	uint8_t *der = NULL;
	size_t len = 0;
	const unsigned char *p;
	X509_REQ *req;
	char cn[64];

	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_csr_make(key, CN, &der, &len), 0);
	assert_int_equal(bc_csr_check(der, len, &pub), 0);
	assert_non_null(pub);
	assert_int_equal(EVP_PKEY_eq(pub, key), 1);
	/* the subject is what was asked for, and there are no attributes */
	p = der;
	assert_non_null(req = d2i_X509_REQ(NULL, &p, (long)len));
	assert_true(X509_NAME_get_text_by_NID(X509_REQ_get_subject_name(req), NID_commonName, cn,
	                                      sizeof(cn)) > 0);
	assert_string_equal(cn, CN);
	assert_int_equal(X509_REQ_get_attr_count(req), 0);
	X509_REQ_free(req);
	EVP_PKEY_free(pub);
	free(der);
	/* a CSR made by OpenSSL directly passes too */
	der = raw_csr(key, key, EVP_sha256(), &len);
	assert_int_equal(check(der, len), 0);
	OPENSSL_free(der);
	EVP_PKEY_free(key);
}

/* A SHA-1 self-signature (chosen-prefix collisions are practical) is refused, even
 * though it verifies; SHA-384 and SHA-512 pass. */
static void test_sha1_signed_csr_is_refused(void **state)
{
	EVP_PKEY *key = NULL;
	uint8_t *der;
	size_t len;

	assert_int_equal(bc_key_generate(&key), 0);
	der = raw_csr(key, key, EVP_sha1(), &len);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);
	/* a P-256 key signs its CSR with SHA-256 (ES256): the longer digests are refused too */
	der = raw_csr(key, key, EVP_sha384(), &len);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);
	der = raw_csr(key, key, EVP_sha512(), &len);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);
	EVP_PKEY_free(key);
}

static void test_other_key_types(void **state)
{
	EVP_PKEY *p384 = EVP_EC_gen("secp384r1");
	EVP_PKEY *rsa = EVP_RSA_gen(2048);
	EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	uint8_t *der;
	size_t len;

	assert_non_null(p384);
	assert_non_null(rsa);
	assert_non_null(ed);
	der = raw_csr(p384, p384, EVP_sha256(), &len);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);
	der = raw_csr(rsa, rsa, EVP_sha256(), &len);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);
	der = raw_csr(ed, ed, NULL, &len);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);
	EVP_PKEY_free(p384);
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(ed);
}

/* P-256 written out as explicit curve parameters instead of the named curve */
static void test_explicit_curve(void **state)
{
	EVP_PKEY *key = NULL;
	uint8_t *der;
	const unsigned char *p;
	X509_REQ *req;
	X509_ALGOR *alg = NULL;
	int ptype = 0;
	size_t len;

	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(EVP_PKEY_set_utf8_string_param(key, OSSL_PKEY_PARAM_EC_ENCODING,
	                                                OSSL_PKEY_EC_ENCODING_EXPLICIT),
	                 1);
	der = raw_csr(key, key, EVP_sha256(), &len);
	/* the CSR really carries the curve as parameters, not as a name */
	p = der;
	assert_non_null(req = d2i_X509_REQ(NULL, &p, (long)len));
	assert_int_equal(
	    X509_PUBKEY_get0_param(NULL, NULL, NULL, &alg, X509_REQ_get_X509_PUBKEY(req)), 1);
	X509_ALGOR_get0(NULL, &ptype, NULL, alg);
	assert_int_equal(ptype, V_ASN1_SEQUENCE);
	X509_REQ_free(req);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);
	EVP_PKEY_free(key);
}

static void test_bad_signatures(void **state)
{
	EVP_PKEY *key = NULL, *other = NULL;
	uint8_t *der, *cn;
	size_t len;

	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_key_generate(&other), 0);
	/* signed by another key than the one it carries */
	der = raw_csr(key, other, EVP_sha256(), &len);
	assert_int_equal(check(der, len), BC_ERR_VERIFY);
	OPENSSL_free(der);

	assert_int_equal(bc_csr_make(key, CN, &der, &len), 0);
	assert_int_equal(check(der, len), 0);
	/* the last byte of the signature's s */
	der[len - 1] ^= 0x01;
	assert_int_equal(check(der, len), BC_ERR_VERIFY);
	der[len - 1] ^= 0x01;
	/* the signed content: one character of the subject */
	assert_non_null(cn = memmem(der, len, CN, strlen(CN)));
	cn[strlen(CN) - 1] ^= 0x01;
	assert_int_equal(check(der, len), BC_ERR_VERIFY);
	free(der);
	EVP_PKEY_free(key);
	EVP_PKEY_free(other);
}

static void test_framing(void **state)
{
	static const uint8_t garbage[] = {0x30, 0x82, 0xff, 0xff, 0x00};
	EVP_PKEY *key = NULL;
	uint8_t *der, *longer, *big;
	size_t len;

	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_csr_make(key, CN, &der, &len), 0);
	longer = malloc(len + 1);
	memcpy(longer, der, len);
	longer[len] = 0;
	assert_int_equal(check(longer, len + 1), BC_ERR_TRAILING);
	assert_int_equal(check(der, len - 1), BC_ERR_INVALID);
	assert_int_equal(check(der, 1), BC_ERR_INVALID);
	assert_int_equal(check(der, 0), BC_ERR_INVALID);
	assert_int_equal(check(NULL, 0), BC_ERR_INVALID);
	assert_int_equal(check(garbage, sizeof(garbage)), BC_ERR_INVALID);
	assert_int_equal(check((const uint8_t *)"hello world", 11), BC_ERR_INVALID);
	big = calloc(1, 70000);
	assert_int_equal(check(big, 70000), BC_ERR_LIMIT);
	free(big);
	free(longer);
	free(der);
	EVP_PKEY_free(key);
}

/* A CSR's bytes rewritten at one place: find the first occurrence of old (n bytes)
 * and put new in its stead (the same length). */
static void patch(uint8_t *der, size_t len, const uint8_t *old, const uint8_t *new, size_t n)
{
	uint8_t *at = memmem(der, len, old, n);

	assert_non_null(at);
	memcpy(at, new, n);
}

/* The DER reader: only the exact shapes of a P-256 ECDSA-SHA256 CSR. */
static void test_der_shapes(void **state)
{
	static const uint8_t sha256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
	static const uint8_t sha384[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03};
	EVP_PKEY *key = NULL;
	uint8_t *der, *copy, *longer;
	size_t len;

	(void)state;
	assert_int_equal(bc_key_generate(&key), 0);
	/* SHA-1 and SHA-384 signatures are refused, whatever OpenSSL would verify */
	der = raw_csr(key, key, EVP_sha1(), &len);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);
	der = raw_csr(key, key, EVP_sha384(), &len);
	assert_int_equal(check(der, len), BC_ERR_INVALID);
	OPENSSL_free(der);

	assert_int_equal(bc_csr_make(key, CN, &der, &len), 0);
	assert_int_equal(check(der, len), 0);
	copy = malloc(len);
	/* the signature algorithm named SHA-384 (the signature is then not looked at) */
	memcpy(copy, der, len);
	patch(copy, len, sha256, sha384, sizeof(sha256));
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* version 1 (v2) */
	memcpy(copy, der, len);
	patch(copy, len, (const uint8_t[]){0x02, 0x01, 0x00}, (const uint8_t[]){0x02, 0x01, 0x01},
	      3);
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* unused bits in the signature's BIT STRING */
	memcpy(copy, der, len);
	{
		uint8_t *bs = copy + len - 1;
		/* the BIT STRING's first content byte follows 03 <len> before the SEQUENCE */
		while (bs > copy && !(bs[0] == 0x03 && bs[2] == 0x00 && bs[3] == 0x30))
			bs--;
		assert_true(bs > copy);
		bs[2] = 0x01;
	}
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* a high tag number as the outer tag */
	memcpy(copy, der, len);
	copy[0] = 0x3f;
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* an indefinite length */
	memcpy(copy, der, len);
	copy[1] = 0x80;
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* the outer length in a longer form than needed: 0x82 00 nn */
	longer = malloc(len + 1);
	assert_true(der[1] == 0x81);
	longer[0] = 0x30;
	longer[1] = 0x82;
	longer[2] = 0x00;
	memcpy(longer + 3, der + 2, len - 2);
	assert_int_equal(check(longer, len + 1), BC_ERR_INVALID);
	free(longer);
	free(copy);
	free(der);
	EVP_PKEY_free(key);
}

/* A CSR whose subject is made by add (NULL: an empty subject), self-signed. */
static uint8_t *csr_with_subject(EVP_PKEY *key, void (*add)(X509_NAME *), size_t *len)
{
	X509_REQ *req = X509_REQ_new();
	unsigned char *der = NULL;
	int n;

	assert_non_null(req);
	if (add != NULL)
		add(X509_REQ_get_subject_name(req));
	assert_int_equal(X509_REQ_set_pubkey(req, key), 1);
	assert_true(X509_REQ_sign(req, key, EVP_sha256()) > 0);
	assert_true((n = i2d_X509_REQ(req, &der)) > 0);
	*len = (size_t)n;
	X509_REQ_free(req);
	return der;
}

static void add_entry(X509_NAME *n, const char *field, const char *value, int set)
{
	assert_int_equal(X509_NAME_add_entry_by_txt(n, field, MBSTRING_ASC,
	                                            (const unsigned char *)value, -1, -1, set),
	                 1);
}

/* three RDNs, the last with two values (a multi-valued RDN) */
static void add_several(X509_NAME *n)
{
	add_entry(n, "C", "DE", 0);
	add_entry(n, "O", "Example", 0);
	add_entry(n, "CN", CN, 0);
	add_entry(n, "OU", "Fleet", -1); /* into the CN's RDN */
}

/* The subject is only framed: any well-formed Name passes; a malformed one is refused
 * before the signature is looked at (BC_ERR_INVALID), a changed value reaches it. */
static void test_subject_shapes(void **state)
{
	static const uint8_t cn_oid[] = {0x06, 0x03, 0x55, 0x04, 0x03};
	EVP_PKEY *key = NULL;
	uint8_t *der, *copy, *at;
	size_t len;

	(void)state;
	assert_int_equal(bc_key_generate(&key), 0);
	der = csr_with_subject(key, NULL, &len);
	assert_int_equal(check(der, len), 0);
	OPENSSL_free(der);
	der = csr_with_subject(key, add_several, &len);
	assert_int_equal(check(der, len), 0);
	OPENSSL_free(der);

	/* bc_csr_make's subject: SEQUENCE { SET { SEQUENCE { 06 03 55 04 03, UTF8String } } } */
	assert_int_equal(bc_csr_make(key, CN, &der, &len), 0);
	assert_non_null(copy = malloc(len));
	assert_non_null(at = memmem(der, len, cn_oid, sizeof(cn_oid)));
	assert_true(at - der >= 4 && at[-4] == 0x31 && at[-2] == 0x30);
	/* the RDN as a SEQUENCE rather than a SET */
	memcpy(copy, der, len);
	copy[at - der - 4] = 0x30;
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* the attribute type as an OCTET STRING rather than an OID */
	memcpy(copy, der, len);
	copy[at - der] = 0x04;
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* an OID whose last arc does not end */
	memcpy(copy, der, len);
	copy[at - der + 4] = 0x83;
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* the value's length one past its end */
	memcpy(copy, der, len);
	copy[at - der + 6]++;
	assert_int_equal(check(copy, len), BC_ERR_INVALID);
	/* well-formed, another name: the signature no longer verifies */
	memcpy(copy, der, len);
	copy[at - der + 7] ^= 0x01;
	assert_int_equal(check(copy, len), BC_ERR_VERIFY);
	free(copy);
	free(der);
	EVP_PKEY_free(key);
}

static void test_make_refusals(void **state)
{
	EVP_PKEY *key = NULL;
	uint8_t *der = (uint8_t *)0x1;
	size_t len = 1;
	char long_cn[300];

	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_csr_make(key, "", &der, &len), BC_ERR_INVALID);
	assert_null(der);
	assert_int_equal(len, 0);
	assert_int_equal(bc_csr_make(key, NULL, &der, &len), BC_ERR_INVALID);
	assert_int_equal(bc_csr_make(NULL, CN, &der, &len), BC_ERR_INVALID);
	memset(long_cn, 'a', sizeof(long_cn) - 1);
	long_cn[sizeof(long_cn) - 1] = '\0';
	assert_int_equal(bc_csr_make(key, long_cn, &der, &len), BC_ERR_INVALID);
	assert_null(der);
	EVP_PKEY_free(key);
}

/* The CertificationRequestInfo TLV of a CSR: the first inside the outer SEQUENCE
 * (both lengths in the short or the 0x81/0x82 long form). */
static const uint8_t *csr_info(const uint8_t *der, size_t *n)
{
	size_t i = 1, l;

	i += der[i] < 0x80 ? 1 : 1 + (der[i] & 0x7f);
	l = der[i + 1] < 0x80    ? der[i + 1]
	    : der[i + 1] == 0x81 ? der[i + 2]
	                         : (size_t)der[i + 2] << 8 | der[i + 3];
	*n = l + (der[i + 1] < 0x80 ? 2 : 2 + (der[i + 1] & 0x7f));
	return der + i;
}

/* bc_csr_make writes a P-256 key's CSR as DER itself: what it signs is byte for byte
 * what OpenSSL's X509_REQ API encodes for the same key and CN (UTF8String, no
 * attributes), and OpenSSL reads and verifies the whole; for every CN length up to
 * the longest, across the one- and two-byte length forms. */
static void test_make_is_openssl_form(void **state)
{
	EVP_PKEY *key = NULL;
	static char cn[256];
	size_t lens[] = {1, 31, 60, 61, 127, 128, 200, 255};

	(void)state;
	assert_int_equal(bc_key_generate(&key), 0);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		X509_REQ *ref = X509_REQ_new(), *back;
		uint8_t *der = NULL, *ref_der = NULL, point[65];
		const uint8_t *p, *a, *b;
		size_t len, na, nb;
		int n;

		memset(cn, 'a' + (int)k, lens[k]);
		cn[lens[k]] = '\0';
		assert_int_equal(bc_csr_make(key, cn, &der, &len), 0);
		assert_non_null(ref);
		assert_int_equal(X509_REQ_set_version(ref, X509_REQ_VERSION_1), 1);
		assert_int_equal(X509_NAME_add_entry_by_NID(X509_REQ_get_subject_name(ref),
		                                            NID_commonName, V_ASN1_UTF8STRING,
		                                            (const unsigned char *)cn, -1, -1, 0),
		                 1);
		assert_int_equal(X509_REQ_set_pubkey(ref, key), 1);
		assert_true(X509_REQ_sign(ref, key, EVP_sha256()) > 0);
		assert_true((n = i2d_X509_REQ(ref, &ref_der)) > 0);
		a = csr_info(der, &na);
		b = csr_info(ref_der, &nb);
		assert_int_equal(na, nb);
		assert_memory_equal(a, b, na);
		/* OpenSSL reads all of it back and the self-signature verifies */
		p = der;
		assert_non_null(back = d2i_X509_REQ(NULL, &p, (long)len));
		assert_ptr_equal(p, der + len);
		assert_int_equal(X509_REQ_verify(back, key), 1);
		assert_int_equal(bc_csr_check_point(der, len, point), 0);
		X509_REQ_free(back);
		X509_REQ_free(ref);
		OPENSSL_free(ref_der);
		free(der);
	}
	EVP_PKEY_free(key);
}

/* A key without its private half cannot sign its CSR; a key of another kind takes
 * OpenSSL's path, and its CSR is refused by the check. */
static void test_make_other_keys(void **state)
{
	EVP_PKEY *key = NULL, *pub = NULL, *p384 = EVP_EC_gen("secp384r1");
	uint8_t *der = NULL, point[65];
	size_t len = 0;

	(void)state;
	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_key_to_point(key, point), 0);
	assert_int_equal(bc_key_from_point(point, &pub), 0);
	assert_int_not_equal(bc_csr_make(pub, CN, &der, &len), 0);
	assert_null(der);
	assert_int_equal(len, 0);
	assert_non_null(p384);
	assert_int_equal(bc_csr_make(p384, CN, &der, &len), 0);
	assert_int_equal(bc_csr_check_point(der, len, point), BC_ERR_INVALID);
	free(der);
	EVP_PKEY_free(p384);
	EVP_PKEY_free(pub);
	EVP_PKEY_free(key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_csr),
	    cmocka_unit_test(test_other_key_types),
	    cmocka_unit_test(test_explicit_curve),
	    cmocka_unit_test(test_bad_signatures),
	    cmocka_unit_test(test_framing),
	    cmocka_unit_test(test_make_refusals),
	    cmocka_unit_test(test_make_is_openssl_form),
	    cmocka_unit_test(test_make_other_keys),
	    cmocka_unit_test(test_der_shapes),
	    cmocka_unit_test(test_subject_shapes),
	    cmocka_unit_test(test_sha1_signed_csr_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
