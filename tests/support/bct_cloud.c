/* bct_cloud.h over OpenSSL. */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bct_cloud.h"

EVP_PKEY *bct_rsa_key(int bits)
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	EVP_PKEY *k = NULL;

	if (c && EVP_PKEY_keygen_init(c) == 1 && EVP_PKEY_CTX_set_rsa_keygen_bits(c, bits) == 1)
		(void)EVP_PKEY_keygen(c, &k);
	EVP_PKEY_CTX_free(c);
	return k;
}

EVP_PKEY *bct_ec_key(void)
{
	EVP_PKEY *k = NULL;

	return bc_key_generate(&k) == 0 ? k : NULL;
}

static char *b64url_bn(EVP_PKEY *k, const char *name)
{
	BIGNUM *bn = NULL;
	uint8_t buf[1024];
	int n;
	char *s = NULL;

	if (EVP_PKEY_get_bn_param(k, name, &bn) == 1 && (n = BN_bn2bin(bn, buf)) > 0)
		s = bc_b64url_encode(buf, (size_t)n);
	BN_free(bn);
	return s;
}

char *bct_jwk(EVP_PKEY *k, const char *kid, const char *alg)
{
	char *out = NULL, *a = NULL, *b = NULL, algs[64] = "";

	if (alg)
		snprintf(algs, sizeof(algs), ",\"alg\":\"%s\"", alg);
	if (EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA) {
		a = b64url_bn(k, OSSL_PKEY_PARAM_RSA_N);
		b = b64url_bn(k, OSSL_PKEY_PARAM_RSA_E);
		if (a && b &&
		    asprintf(&out,
		             "{\"kty\":\"RSA\",\"kid\":\"%s\",\"use\":\"sig\"%s,"
		             "\"n\":\"%s\",\"e\":\"%s\"}",
		             kid, algs, a, b) < 0)
			out = NULL;
	} else {
		uint8_t pt[65];
		if (bc_key_to_point(k, pt) == 0) {
			a = bc_b64url_encode(pt + 1, 32);
			b = bc_b64url_encode(pt + 33, 32);
		}
		if (a && b &&
		    asprintf(&out,
		             "{\"kty\":\"EC\",\"kid\":\"%s\",\"crv\":\"P-256\"%s,"
		             "\"x\":\"%s\",\"y\":\"%s\"}",
		             kid, algs, a, b) < 0)
			out = NULL;
	}
	free(a);
	free(b);
	return out;
}

char *bct_jwks(const char *const *jwks, size_t n)
{
	size_t len = 16;
	char *out;

	for (size_t i = 0; i < n; i++)
		len += strlen(jwks[i]) + 1;
	if ((out = malloc(len)) == NULL)
		return NULL;
	strcpy(out, "{\"keys\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(out, ",");
		strcat(out, jwks[i]);
	}
	strcat(out, "]}");
	return out;
}

static uint8_t *sign(EVP_PKEY *k, const void *p, size_t n, size_t *len)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint8_t *sig = NULL;

	*len = 0;
	if (md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k) == 1 &&
	    EVP_DigestSign(md, NULL, len, p, n) == 1 && (sig = malloc(*len)) != NULL &&
	    EVP_DigestSign(md, sig, len, p, n) != 1) {
		free(sig);
		sig = NULL;
	}
	EVP_MD_CTX_free(md);
	return sig;
}

uint8_t *bct_rsa_sign(EVP_PKEY *k, const char *doc, size_t *len)
{
	return sign(k, doc, strlen(doc), len);
}

char *bct_jwt(EVP_PKEY *k, const char *header_json, const char *payload_json)
{
	char *h = bc_b64url_encode(header_json, strlen(header_json));
	char *p = bc_b64url_encode(payload_json, strlen(payload_json));
	char *input = NULL, *s = NULL, *out = NULL;
	uint8_t *sig = NULL, p1363[64];
	size_t len = 0;

	if (h == NULL || p == NULL || asprintf(&input, "%s.%s", h, p) < 0)
		goto out;
	if ((sig = sign(k, input, strlen(input), &len)) == NULL)
		goto out;
	if (EVP_PKEY_get_base_id(k) == EVP_PKEY_EC) {
		if (bc_ecdsa_der_to_p1363(sig, len, p1363) != 0)
			goto out;
		s = bc_b64url_encode(p1363, 64);
	} else {
		s = bc_b64url_encode(sig, len);
	}
	if (s && asprintf(&out, "%s.%s", input, s) < 0)
		out = NULL;
out:
	free(h);
	free(p);
	free(input);
	free(sig);
	free(s);
	return out;
}

X509 *bct_self_cert(EVP_PKEY *k, const char *cn)
{
	X509 *x = X509_new();
	X509_NAME *n;

	if (x == NULL || X509_set_version(x, 2) != 1 ||
	    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(random() & 0xffffff) + 1) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 365) == NULL ||
	    X509_set_pubkey(x, k) != 1 || (n = X509_get_subject_name(x)) == NULL ||
	    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
	                               0) != 1 ||
	    X509_set_issuer_name(x, n) != 1 || X509_sign(x, k, EVP_sha256()) == 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int bct_write_cert(const char *path, X509 *x)
{
	FILE *f = fopen(path, "w");
	int ok = f && PEM_write_X509(f, x) == 1;

	if (f)
		fclose(f);
	return ok ? 0 : -1;
}

int bct_write_certs(const char *path, X509 *const *xs, size_t n)
{
	FILE *f = fopen(path, "w");
	int ok = f != NULL;

	for (size_t i = 0; ok && i < n; i++)
		ok = PEM_write_X509(f, xs[i]) == 1;
	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

uint8_t *bct_pkcs7(X509 *x, EVP_PKEY *k, const char *doc, const char *md, size_t *len)
{
	BIO *in = BIO_new_mem_buf(doc, (int)strlen(doc));
	PKCS7 *p7 = NULL;
	uint8_t *der = NULL, *p;
	int n;

	*len = 0;
	p7 = PKCS7_sign(NULL, NULL, NULL, NULL, PKCS7_BINARY | PKCS7_PARTIAL | PKCS7_NOCERTS);
	if (p7 == NULL ||
	    PKCS7_sign_add_signer(p7, x, k, EVP_get_digestbyname(md),
	                          PKCS7_BINARY | PKCS7_NOCERTS) == NULL ||
	    PKCS7_final(p7, in, PKCS7_BINARY) != 1 || (n = i2d_PKCS7(p7, NULL)) <= 0 ||
	    (der = p = malloc((size_t)n)) == NULL || i2d_PKCS7(p7, &p) != n) {
		free(der);
		der = NULL;
	} else {
		*len = (size_t)n;
	}
	PKCS7_free(p7);
	BIO_free(in);
	return der;
}
