/* P-256 keys: generation, SPKI DER and key ids, the raw private scalar and the
 * uncompressed public point. PEM lives in pem.c. */
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

/* Anything much longer than the 91 bytes of a P-256 SPKI is not one. */
#define BC_SPKI_MAX 1024

/* SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) } */
const uint8_t bc_p256_spki_prefix[BC_P256_SPKI_PREFIX_LEN] = {
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00};

static EC_GROUP *p256;
static pthread_once_t p256_once = PTHREAD_ONCE_INIT;

static void make_p256(void)
{
	p256 = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
}

const EC_GROUP *bc_crypto_p256_group(void)
{
	pthread_once(&p256_once, make_p256);
	return p256;
}

int bc_crypto_is_p256(EVP_PKEY *key)
{
	char name[64];
	size_t n = 0;

	if (key == NULL || !EVP_PKEY_is_a(key, "EC"))
		return 0;
	if (!EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, name, sizeof(name),
	                                    &n)) {
		ERR_clear_error();
		return 0;
	}
	return OBJ_sn2nid(name) == NID_X9_62_prime256v1;
}

int bc_key_generate(EVP_PKEY **out)
{
	*out = NULL;
	if ((*out = EVP_EC_gen(BC_P256_GROUP)) == NULL)
		return bc_ossl_err();
	return 0;
}

/* The fixed form of a P-256 key, without OpenSSL's encoder framework. */
static int p256_spki(EVP_PKEY *key, uint8_t **der, size_t *len)
{
	uint8_t *buf;
	int rc;

	if ((buf = malloc(BC_P256_SPKI_LEN)) == NULL)
		return BC_ERR_NOMEM;
	memcpy(buf, bc_p256_spki_prefix, BC_P256_SPKI_PREFIX_LEN);
	if ((rc = bc_key_to_point(key, buf + BC_P256_SPKI_PREFIX_LEN)) != 0) {
		free(buf);
		return rc;
	}
	*der = buf;
	*len = BC_P256_SPKI_LEN;
	return 0;
}

int bc_key_spki(EVP_PKEY *key, uint8_t **der, size_t *len)
{
	uint8_t *buf = NULL, *p;
	int n, rc;

	*der = NULL;
	*len = 0;
	if (key == NULL)
		return BC_ERR_INVALID;
	if (bc_crypto_is_p256(key))
		return p256_spki(key, der, len);
	if ((n = i2d_PUBKEY(key, NULL)) <= 0)
		return bc_ossl_err();
	if ((buf = malloc((size_t)n)) == NULL)
		return BC_ERR_NOMEM;
	p = buf;
	if (i2d_PUBKEY(key, &p) != n) {
		rc = bc_ossl_err();
		goto out;
	}
	*der = buf;
	*len = (size_t)n;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	return rc;
}

int bc_key_spki_sha256(EVP_PKEY *key, uint8_t out[static 32])
{
	uint8_t *der = NULL;
	size_t len = 0;
	int rc;

	memset(out, 0, 32);
	if ((rc = bc_key_spki(key, &der, &len)) == 0)
		rc = bc_sha256(der, len, out);
	free(der);
	return rc;
}

int bc_key_same(EVP_PKEY *a, EVP_PKEY *b)
{
	uint8_t *da = NULL, *db = NULL;
	size_t la = 0, lb = 0;
	int same = 0;

	if (a != NULL && b != NULL && bc_key_spki(a, &da, &la) == 0 &&
	    bc_key_spki(b, &db, &lb) == 0)
		same = la == lb && memcmp(da, db, la) == 0;
	free(da);
	free(db);
	return same;
}

int bc_key_id(EVP_PKEY *key, char out[static BC_KEY_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t h[32];
	int rc;

	memset(out, 0, BC_KEY_ID_LEN + 1);
	if ((rc = bc_key_spki_sha256(key, h)) != 0)
		return rc;
	for (size_t i = 0; i < sizeof(h); i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 0x0f];
	}
	return 0;
}

/* Only the one DER encoding bc_key_spki writes is accepted (named curve,
 * uncompressed point): the fixed prefix and a point on the curve. A key then has
 * exactly one SPKI and key id, and no generic decoder sees the bytes. */
int bc_key_from_spki(const uint8_t *der, size_t len, EVP_PKEY **out)
{
	*out = NULL;
	if (der == NULL || len == 0)
		return BC_ERR_INVALID;
	if (len > BC_SPKI_MAX)
		return BC_ERR_LIMIT;
	if (len < BC_P256_SPKI_LEN ||
	    memcmp(der, bc_p256_spki_prefix, BC_P256_SPKI_PREFIX_LEN) != 0)
		return BC_ERR_INVALID;
	if (len > BC_P256_SPKI_LEN)
		return BC_ERR_TRAILING;
	return bc_key_from_point(der + BC_P256_SPKI_PREFIX_LEN, out);
}

/* d is NULL for a public key. The point must already be validated. */
static int p256_fromdata(const BIGNUM *d, const uint8_t point[static 65], EVP_PKEY **out)
{
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL, pub[3];
	EVP_PKEY_CTX *ctx = NULL;
	int sel = d != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY;
	int rc;

	*out = NULL;
	if (d == NULL) {
		pub[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
		                                          (char *)BC_P256_GROUP, 0);
		pub[1] =
		    OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, 65);
		pub[2] = OSSL_PARAM_construct_end();
	} else if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
	           !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, BC_P256_GROUP,
	                                            0) ||
	           !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, 65) ||
	           !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, d) ||
	           (params = OSSL_PARAM_BLD_to_param(bld)) == NULL) {
		rc = bc_ossl_err();
		goto out;
	}
	if ((ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, out, sel, d != NULL ? params : pub) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = 0;
out:
	EVP_PKEY_CTX_free(ctx);
	/* A secure BIGNUM puts the scalar in the secure block, which this wipes. */
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	return rc;
}

static int p256_group(EC_GROUP **out)
{
	*out = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	return *out != NULL ? 0 : bc_ossl_err();
}

int bc_key_to_raw(EVP_PKEY *key, uint8_t out[static 32])
{
	BIGNUM *d = NULL;
	int rc;

	OPENSSL_cleanse(out, 32);
	if (!bc_crypto_is_p256(key))
		return BC_ERR_INVALID;
	if (!EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &d)) {
		/* a public key has no scalar */
		ERR_clear_error();
		return BC_ERR_INVALID;
	}
	rc = BN_bn2binpad(d, out, 32) == 32 ? 0 : BC_ERR_INTERNAL;
	BN_clear_free(d);
	return rc;
}

int bc_key_from_raw(const uint8_t raw[static 32], EVP_PKEY **out)
{
	EC_GROUP *g = NULL;
	EC_POINT *pub = NULL;
	BIGNUM *d = NULL;
	uint8_t point[65];
	int rc;

	*out = NULL;
	if ((rc = p256_group(&g)) != 0)
		goto out;
	if ((d = BN_secure_new()) == NULL || BN_bin2bn(raw, 32, d) == NULL) {
		rc = bc_ossl_err();
		goto out;
	}
	BN_set_flags(d, BN_FLG_CONSTTIME);
	if (BN_is_zero(d) || BN_cmp(d, EC_GROUP_get0_order(g)) >= 0) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((pub = EC_POINT_new(g)) == NULL || !EC_POINT_mul(g, pub, d, NULL, NULL, NULL) ||
	    EC_POINT_point2oct(g, pub, POINT_CONVERSION_UNCOMPRESSED, point, sizeof(point), NULL) !=
	        sizeof(point)) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = p256_fromdata(d, point, out);
out:
	BN_clear_free(d);
	EC_POINT_free(pub);
	EC_GROUP_free(g);
	return rc;
}

int bc_key_to_point(EVP_PKEY *key, uint8_t out[static 65])
{
	BIGNUM *x = NULL, *y = NULL;
	int rc;

	memset(out, 0, 65);
	if (!bc_crypto_is_p256(key))
		return BC_ERR_INVALID;
	/* the encoded key in one call when it is uncompressed (every key built here) */
	size_t n = 0;
	if (EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, out, 65, &n) ==
	        1 &&
	    n == 65 && out[0] == 0x04)
		return 0;
	ERR_clear_error();
	memset(out, 0, 65);
	/* else x and y: the encoded key is in compressed form */
	if (!EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, &x) ||
	    !EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, &y)) {
		rc = bc_ossl_err();
		goto out;
	}
	out[0] = 0x04;
	if (BN_bn2binpad(x, out + 1, 32) != 32 || BN_bn2binpad(y, out + 33, 32) != 32) {
		memset(out, 0, 65);
		rc = BC_ERR_INTERNAL;
		goto out;
	}
	rc = 0;
out:
	BN_free(x);
	BN_free(y);
	return rc;
}

int bc_key_from_point(const uint8_t point[static 65], EVP_PKEY **out)
{
	int rc;

	*out = NULL;
	/* uncompressed, coordinates below p, on the curve, not infinity (p256.c) */
	if ((rc = bc_p256_point_check(point)) != 0)
		return rc;
	return p256_fromdata(NULL, point, out);
}
