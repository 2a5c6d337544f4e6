/* P-256 on bare points: ECDSA verification by a key given as its uncompressed point,
 * and ECDH with a peer's point, without an EVP_PKEY for the other side's key.
 *
 * Why not EVP: OpenSSL 3.0 makes every EVP_PKEY through its key-management framework,
 * which builds a new EC group for each key (EC_GROUP_new_from_params) and looks the
 * provider up: about 14 us a key here, a quarter of a verify and a third of an ECDH. A
 * join imports two keys it uses once (the CSR's, the token's ephemeral one), a renewal
 * two more. The EC_KEY functions below are the same ECDSA and ECDH code the default
 * provider runs (it calls them on its own EC_KEY), on the one P-256 group of this
 * process. They are deprecated in OpenSSL 3.0 and still in every 3.x; this file is the
 * only one that uses them, so moving off them is one file's change. */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdh.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <string.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

/* The point as an EC_POINT of the shared group: uncompressed, coordinates below p, on
 * the curve, not infinity. oct2point refuses coordinates >= p and points off the
 * curve; the checks after it say so explicitly rather than rely on that. */
static int load_point(const uint8_t point[static 65], EC_POINT **out)
{
	const EC_GROUP *g = bc_crypto_p256_group();
	EC_POINT *pt = NULL;
	int rc;

	*out = NULL;
	if (point[0] != 0x04)
		return BC_ERR_INVALID;
	if (g == NULL)
		return BC_ERR_CRYPTO;
	if ((pt = EC_POINT_new(g)) == NULL)
		return bc_ossl_err();
	if (!EC_POINT_oct2point(g, pt, point, 65, NULL)) {
		rc = bc_crypto_parse_err();
		goto out;
	}
	if (EC_POINT_is_at_infinity(g, pt) || EC_POINT_is_on_curve(g, pt, NULL) != 1) {
		ERR_clear_error();
		rc = BC_ERR_INVALID;
		goto out;
	}
	*out = pt;
	pt = NULL;
	rc = 0;
out:
	EC_POINT_free(pt);
	return rc;
}

int bc_p256_point_check(const uint8_t point[static 65])
{
	EC_POINT *pt = NULL;
	int rc = load_point(point, &pt);

	EC_POINT_free(pt);
	return rc;
}

/* A public EC_KEY for the point, on a copy of the shared group. */
static int public_key(const uint8_t point[static 65], EC_KEY **out)
{
	EC_POINT *pt = NULL;
	EC_KEY *k = NULL;
	int rc;

	*out = NULL;
	if ((rc = load_point(point, &pt)) != 0)
		return rc;
	if ((k = EC_KEY_new()) == NULL || EC_KEY_set_group(k, bc_crypto_p256_group()) != 1 ||
	    EC_KEY_set_public_key(k, pt) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	*out = k;
	k = NULL;
out:
	EC_KEY_free(k);
	EC_POINT_free(pt);
	return rc;
}

/* ECDSA_verify refuses a signature that is not DER (it re-encodes and compares) and r
 * or s outside 1..n-1; 0 and -1 are both refusals. */
static int der_verify(const EC_KEY *k, const uint8_t digest[static 32], const uint8_t *sig,
                      size_t siglen)
{
	int rc =
	    ECDSA_verify(0, digest, 32, sig, (int)siglen, (EC_KEY *)k) == 1 ? 0 : BC_ERR_VERIFY;

	ERR_clear_error();
	return rc;
}

int bc_p256_verify_digest(const uint8_t point[static 65], const uint8_t digest[static 32],
                          const uint8_t *sig, size_t siglen)
{
	EC_KEY *k = NULL;
	int rc;

	if (sig == NULL || siglen == 0 || siglen > BC_ECDSA_DER_MAX)
		return BC_ERR_VERIFY;
	if ((rc = public_key(point, &k)) != 0)
		return rc;
	rc = der_verify(k, digest, sig, siglen);
	EC_KEY_free(k);
	return rc;
}

int bc_p256_verify(const uint8_t point[static 65], const void *msg, size_t len, const uint8_t *sig,
                   size_t siglen)
{
	uint8_t digest[32];
	int rc;

	if ((rc = bc_sha256(msg, len, digest)) != 0)
		return rc;
	return bc_p256_verify_digest(point, digest, sig, siglen);
}

/* r||s by the key: r or s of zero or not below the order is a refusal. */
static int p1363_verify(const EC_KEY *k, const uint8_t digest[static 32],
                        const uint8_t sig[static BC_SIG_LEN])
{
	ECDSA_SIG *s = NULL;
	BIGNUM *r = NULL, *ss = NULL;
	int rc;

	if ((s = ECDSA_SIG_new()) == NULL || (r = BN_bin2bn(sig, 32, NULL)) == NULL ||
	    (ss = BN_bin2bn(sig + 32, 32, NULL)) == NULL || !ECDSA_SIG_set0(s, r, ss)) {
		BN_free(r);
		BN_free(ss);
		rc = bc_ossl_err();
		goto out;
	}
	/* s owns r and ss now */
	rc = ECDSA_do_verify(digest, 32, s, (EC_KEY *)k) == 1 ? 0 : BC_ERR_VERIFY;
	ERR_clear_error();
out:
	ECDSA_SIG_free(s);
	return rc;
}

int bc_p256_verify_p1363(const uint8_t point[static 65], const uint8_t digest[static 32],
                         const uint8_t sig[static BC_SIG_LEN])
{
	EC_KEY *k = NULL;
	int rc;

	if ((rc = public_key(point, &k)) != 0)
		return rc;
	rc = p1363_verify(k, digest, sig);
	EC_KEY_free(k);
	return rc;
}

/* The EC_KEY inside a P-256 EVP_PKEY. OpenSSL keeps it with the EVP_PKEY (made on the
 * first call, under the key's lock) and frees it, scalar wiped, with the EVP_PKEY. */
static const EC_KEY *ec_of(EVP_PKEY *key)
{
	const EC_KEY *k;
	const EC_GROUP *g;

	if (key == NULL || EVP_PKEY_get_base_id(key) != EVP_PKEY_EC ||
	    (k = EVP_PKEY_get0_EC_KEY(key)) == NULL || (g = EC_KEY_get0_group(k)) == NULL ||
	    EC_GROUP_get_curve_name(g) != NID_X9_62_prime256v1) {
		ERR_clear_error();
		return NULL;
	}
	return k;
}

int bc_p256_public_point(EVP_PKEY *key, uint8_t out[static 65])
{
	const EC_KEY *k = ec_of(key);
	const EC_POINT *pub;

	memset(out, 0, 65);
	if (k == NULL || (pub = EC_KEY_get0_public_key(k)) == NULL)
		return BC_ERR_INVALID;
	if (EC_POINT_point2oct(EC_KEY_get0_group(k), pub, POINT_CONVERSION_UNCOMPRESSED, out, 65,
	                       NULL) != 65) {
		memset(out, 0, 65);
		return bc_ossl_err();
	}
	return 0;
}

int bc_p256_ecdh(EVP_PKEY *sk, const uint8_t peer[static 65], uint8_t out[static 32])
{
	static const uint8_t zero[32];
	const EC_KEY *k = ec_of(sk);
	EC_POINT *pt = NULL;
	int rc;

	OPENSSL_cleanse(out, 32);
	if (k == NULL || EC_KEY_get0_private_key(k) == NULL)
		return BC_ERR_INVALID;
	/* The peer's point is on the curve and not infinity; P-256's cofactor is 1, so it
	 * has the group's order, and no further check of it is needed. */
	if ((rc = load_point(peer, &pt)) != 0)
		return rc;
	if (ECDH_compute_key(out, 32, pt, k, NULL) != 32) {
		rc = bc_ossl_err();
		goto out;
	}
	/* RFC 9180: a DH output of zero carries no secret */
	rc = bc_ct_equal(out, zero, sizeof(zero)) ? BC_ERR_INVALID : 0;
out:
	if (rc != 0)
		OPENSSL_cleanse(out, 32);
	EC_POINT_free(pt);
	return rc;
}

/* The private EC_KEY of a P-256 EVP_PKEY, or NULL when OpenSSL cannot give one (a key
 * held by another provider): the caller then signs through EVP. */
static const EC_KEY *private_ec_of(EVP_PKEY *key)
{
	const EC_KEY *k = ec_of(key);

	return k != NULL && EC_KEY_get0_private_key(k) != NULL ? k : NULL;
}

int bc_p256_sign_p1363(EVP_PKEY *key, const uint8_t digest[static 32],
                       uint8_t sig[static BC_SIG_LEN])
{
	const EC_KEY *k = private_ec_of(key);
	const BIGNUM *r, *s;
	ECDSA_SIG *es;
	int rc = 0;

	memset(sig, 0, BC_SIG_LEN);
	if (k == NULL)
		return BC_ERR_UNSUPPORTED;
	/* the same signer the default provider runs, with its nonce from the DRBG */
	if ((es = ECDSA_do_sign(digest, 32, (EC_KEY *)k)) == NULL)
		return bc_ossl_err();
	ECDSA_SIG_get0(es, &r, &s);
	if (BN_bn2binpad(r, sig, 32) != 32 || BN_bn2binpad(s, sig + 32, 32) != 32) {
		memset(sig, 0, BC_SIG_LEN);
		rc = BC_ERR_INTERNAL;
	}
	ECDSA_SIG_free(es);
	return rc;
}

int bc_p256_spki_sha256(const uint8_t point[static 65], uint8_t out[static 32])
{
	uint8_t spki[BC_P256_SPKI_LEN];

	memcpy(spki, bc_p256_spki_prefix, BC_P256_SPKI_PREFIX_LEN);
	memcpy(spki + BC_P256_SPKI_PREFIX_LEN, point, 65);
	return bc_sha256(spki, sizeof(spki), out);
}
