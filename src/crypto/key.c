/* P-256 keys: generation, SPKI DER and key ids, the raw private scalar and the
 * uncompressed public point. PEM lives in pem.c. */
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

/* A P-256 SPKI is 91 bytes; anything much longer is not one. */
#define BC_SPKI_MAX 1024

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

int bc_key_spki(EVP_PKEY *key, uint8_t **der, size_t *len)
{
	uint8_t *buf = NULL, *p;
	int n, rc;

	*der = NULL;
	*len = 0;
	if (key == NULL)
		return BC_ERR_INVALID;
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

int bc_key_id(EVP_PKEY *key, char out[static BC_KEY_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t *der = NULL, h[32];
	size_t len = 0;
	int rc;

	memset(out, 0, BC_KEY_ID_LEN + 1);
	if ((rc = bc_key_spki(key, &der, &len)) != 0)
		goto out;
	if ((rc = bc_sha256(der, len, h)) != 0)
		goto out;
	for (size_t i = 0; i < sizeof(h); i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 0x0f];
	}
out:
	free(der);
	return rc;
}

/* Only the one DER encoding bc_key_spki writes for a key we build ourselves is
 * accepted (named curve, uncompressed point): OpenSSL reads and then writes back
 * explicit parameters or a compressed point as it found them, so the comparison is
 * with a key rebuilt from the point. A key then has exactly one SPKI and key id. */
int bc_key_from_spki(const uint8_t *der, size_t len, EVP_PKEY **out)
{
	const uint8_t *p = der;
	EVP_PKEY *key = NULL, *canon = NULL;
	uint8_t *again = NULL, point[65];
	size_t againlen = 0;
	int rc;

	*out = NULL;
	if (der == NULL || len == 0)
		return BC_ERR_INVALID;
	if (len > BC_SPKI_MAX)
		return BC_ERR_LIMIT;
	if ((key = d2i_PUBKEY(NULL, &p, (long)len)) == NULL) {
		rc = bc_crypto_parse_err();
		goto out;
	}
	if (p != der + len) {
		rc = BC_ERR_TRAILING;
		goto out;
	}
	if (!bc_crypto_is_p256(key)) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = bc_key_to_point(key, point)) != 0)
		goto out;
	if ((rc = bc_key_from_point(point, &canon)) != 0)
		goto out;
	if ((rc = bc_key_spki(canon, &again, &againlen)) != 0)
		goto out;
	if (againlen != len || memcmp(again, der, len) != 0) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	*out = canon;
	canon = NULL;
out:
	free(again);
	EVP_PKEY_free(canon);
	EVP_PKEY_free(key);
	return rc;
}

/* d is NULL for a public key. The point must already be validated. */
static int p256_fromdata(const BIGNUM *d, const uint8_t point[static 65], EVP_PKEY **out)
{
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	int sel = d != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY;
	int rc;

	*out = NULL;
	if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, BC_P256_GROUP, 0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, 65) ||
	    (d != NULL && !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, d)) ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    (ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 || EVP_PKEY_fromdata(ctx, out, sel, params) != 1) {
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
	/* x and y rather than the encoded key, which may be in compressed form */
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
	EC_GROUP *g = NULL;
	EC_POINT *pt = NULL;
	int rc;

	*out = NULL;
	if (point[0] != 0x04)
		return BC_ERR_INVALID;
	if ((rc = p256_group(&g)) != 0)
		goto out;
	if ((pt = EC_POINT_new(g)) == NULL) {
		rc = bc_ossl_err();
		goto out;
	}
	/* oct2point refuses coordinates >= p and points off the curve; the checks
	 * after it say so explicitly rather than rely on that. */
	if (!EC_POINT_oct2point(g, pt, point, 65, NULL)) {
		rc = bc_crypto_parse_err();
		goto out;
	}
	if (EC_POINT_is_at_infinity(g, pt) || EC_POINT_is_on_curve(g, pt, NULL) != 1) {
		ERR_clear_error();
		rc = BC_ERR_INVALID;
		goto out;
	}
	rc = p256_fromdata(NULL, point, out);
out:
	EC_POINT_free(pt);
	EC_GROUP_free(g);
	return rc;
}
