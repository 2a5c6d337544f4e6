/* AES-GCM (a 16-byte tag after the ciphertext) over EVP, and HKDF-SHA256 (RFC 5869) over
 * HMAC-SHA256 on the process's one SHA-256. */
#include <limits.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

#define BC_GCM_TAG_LEN 16
/* RFC 5869: at most 255 blocks of output. OpenSSL 3.0 also bounds the info. */
#define BC_HKDF_MAX_OUT  (255 * 32)
#define BC_HKDF_MAX_INFO 1024

/* The two ciphers, fetched once per process: EVP_aes_*_gcm() are fetched again by
 * every EVP_EncryptInit_ex in OpenSSL 3.0. NULL when the provider has none. */
static EVP_CIPHER *aes128gcm, *aes256gcm;
static pthread_once_t gcm_once = PTHREAD_ONCE_INIT;

static void fetch_gcm(void)
{
	aes128gcm = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
	aes256gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
	ERR_clear_error();
}

static const EVP_CIPHER *gcm_cipher(size_t keylen)
{
	pthread_once(&gcm_once, fetch_gcm);
	switch (keylen) {
	case 16: return aes128gcm;
	case 32: return aes256gcm;
	default: return NULL;
	}
}

static int gcm_args(size_t keylen, const void *aad, size_t aadlen, const void *in, size_t inlen)
{
	if ((keylen != 16 && keylen != 32) || (aad == NULL && aadlen != 0) ||
	    (in == NULL && inlen != 0))
		return BC_ERR_INVALID;
	if (gcm_cipher(keylen) == NULL)
		return BC_ERR_CRYPTO;
	/* EVP takes int lengths */
	if (aadlen > INT_MAX || inlen > INT_MAX - BC_GCM_TAG_LEN)
		return BC_ERR_LIMIT;
	return 0;
}

int bc_crypto_gcm_seal(const uint8_t *key, size_t keylen, const uint8_t nonce[static 12],
                       const void *aad, size_t aadlen, const void *pt, size_t ptlen, uint8_t *out)
{
	EVP_CIPHER_CTX *c = NULL;
	uint8_t fin[BC_GCM_TAG_LEN];
	int n = 0, m = 0, rc;

	if ((rc = gcm_args(keylen, aad, aadlen, pt, ptlen)) != 0)
		return rc;
	if ((c = EVP_CIPHER_CTX_new()) == NULL)
		return bc_ossl_err();
	/* The GCM default nonce length is the 12 bytes we use. */
	if (EVP_EncryptInit_ex(c, gcm_cipher(keylen), NULL, key, nonce) != 1 ||
	    (aadlen > 0 && EVP_EncryptUpdate(c, NULL, &m, aad, (int)aadlen) != 1) ||
	    (ptlen > 0 && EVP_EncryptUpdate(c, out, &n, pt, (int)ptlen) != 1) ||
	    EVP_EncryptFinal_ex(c, fin, &m) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, BC_GCM_TAG_LEN, out + ptlen) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = (size_t)n == ptlen && m == 0 ? 0 : BC_ERR_INTERNAL;
out:
	EVP_CIPHER_CTX_free(c);
	return rc;
}

int bc_crypto_gcm_open(const uint8_t *key, size_t keylen, const uint8_t nonce[static 12],
                       const void *aad, size_t aadlen, const void *ct, size_t ctlen, uint8_t *out)
{
	EVP_CIPHER_CTX *c = NULL;
	uint8_t fin[BC_GCM_TAG_LEN], tag[BC_GCM_TAG_LEN];
	size_t ptlen;
	int n = 0, m = 0, rc;

	if (ct == NULL || ctlen < BC_GCM_TAG_LEN)
		return BC_ERR_INVALID;
	ptlen = ctlen - BC_GCM_TAG_LEN;
	if ((rc = gcm_args(keylen, aad, aadlen, ct, ptlen)) != 0)
		return rc;
	/* copied first: out may overlap ct */
	memcpy(tag, (const uint8_t *)ct + ptlen, sizeof(tag));
	if ((c = EVP_CIPHER_CTX_new()) == NULL)
		return bc_ossl_err();
	if (EVP_DecryptInit_ex(c, gcm_cipher(keylen), NULL, key, nonce) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, BC_GCM_TAG_LEN, tag) != 1 ||
	    (aadlen > 0 && EVP_DecryptUpdate(c, NULL, &m, aad, (int)aadlen) != 1) ||
	    (ptlen > 0 && EVP_DecryptUpdate(c, out, &n, ct, (int)ptlen) != 1)) {
		rc = bc_ossl_err();
		goto out;
	}
	if (EVP_DecryptFinal_ex(c, fin, &m) != 1) {
		ERR_clear_error();
		rc = BC_ERR_VERIFY;
		goto out;
	}
	rc = (size_t)n == ptlen && m == 0 ? 0 : BC_ERR_INTERNAL;
out:
	/* Nothing of a message that did not verify is handed out. */
	if (rc != 0 && ptlen > 0)
		OPENSSL_cleanse(out, ptlen);
	EVP_CIPHER_CTX_free(c);
	return rc;
}

int bc_aes256gcm_seal(const uint8_t key[static 32], const uint8_t nonce[static 12], const void *aad,
                      size_t aadlen, const void *pt, size_t ptlen, uint8_t *out)
{
	return bc_crypto_gcm_seal(key, 32, nonce, aad, aadlen, pt, ptlen, out);
}

int bc_aes256gcm_open(const uint8_t key[static 32], const uint8_t nonce[static 12], const void *aad,
                      size_t aadlen, const void *ct, size_t ctlen, uint8_t *out)
{
	return bc_crypto_gcm_open(key, 32, nonce, aad, aadlen, ct, ctlen, out);
}

/* HMAC-SHA256 (RFC 2104) of the concatenation of up to three parts, on the SHA-256
 * fetched once (bc_crypto_sha256). OpenSSL 3.0's EVP_KDF HKDF fetches the KDF, a MAC
 * and the digest on every call, which cost more than the hashing of a short input:
 * an HPKE open runs seven of them. The padded key blocks are wiped. */
struct part {
	const void *p;
	size_t n;
};

static int hmac_sha256(const void *key, size_t keylen, const struct part *parts, size_t n_parts,
                       uint8_t out[static 32])
{
	uint8_t k0[64] = {0}, pad[64], inner[32];
	const EVP_MD *md = bc_crypto_sha256();
	EVP_MD_CTX *c = NULL;
	unsigned int len = 0;
	int rc = BC_ERR_CRYPTO;

	if (md == NULL)
		return BC_ERR_CRYPTO;
	if ((c = EVP_MD_CTX_new()) == NULL)
		return BC_ERR_NOMEM;
	/* a key longer than the block is hashed first */
	if (keylen > sizeof(k0)) {
		if (EVP_DigestInit_ex(c, md, NULL) != 1 || EVP_DigestUpdate(c, key, keylen) != 1 ||
		    EVP_DigestFinal_ex(c, k0, &len) != 1)
			goto out;
	} else if (keylen > 0) {
		memcpy(k0, key, keylen);
	}
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k0[i] ^ 0x36;
	if (EVP_DigestInit_ex(c, md, NULL) != 1 || EVP_DigestUpdate(c, pad, sizeof(pad)) != 1)
		goto out;
	for (size_t i = 0; i < n_parts; i++) {
		if (parts[i].n > 0 && EVP_DigestUpdate(c, parts[i].p, parts[i].n) != 1)
			goto out;
	}
	if (EVP_DigestFinal_ex(c, inner, &len) != 1)
		goto out;
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k0[i] ^ 0x5c;
	if (EVP_DigestInit_ex(c, md, NULL) != 1 || EVP_DigestUpdate(c, pad, sizeof(pad)) != 1 ||
	    EVP_DigestUpdate(c, inner, sizeof(inner)) != 1 || EVP_DigestFinal_ex(c, out, &len) != 1)
		goto out;
	rc = len == 32 ? 0 : BC_ERR_INTERNAL;
out:
	if (rc != 0) {
		ERR_clear_error();
		OPENSSL_cleanse(out, 32);
	}
	OPENSSL_cleanse(k0, sizeof(k0));
	OPENSSL_cleanse(pad, sizeof(pad));
	OPENSSL_cleanse(inner, sizeof(inner));
	EVP_MD_CTX_free(c);
	return rc;
}

static int hkdf_args(const void *salt, size_t saltlen, const void *key, size_t keylen,
                     const void *info, size_t infolen, const uint8_t *out, size_t outlen)
{
	if ((salt == NULL && saltlen != 0) || (key == NULL && keylen != 0) ||
	    (info == NULL && infolen != 0) || out == NULL || outlen == 0 ||
	    outlen > BC_HKDF_MAX_OUT)
		return BC_ERR_INVALID;
	if (infolen > BC_HKDF_MAX_INFO)
		return BC_ERR_LIMIT;
	return 0;
}

/* HKDF-Extract: HMAC(salt, ikm); an empty salt is HashLen zeros, which HMAC pads to the
 * same block as no key at all. */
static int extract(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                   uint8_t prk[static 32])
{
	const struct part m = {ikm, ikmlen};

	return hmac_sha256(salt, saltlen, &m, 1, prk);
}

/* HKDF-Expand: T(i) = HMAC(prk, T(i-1) || info || i), the first outlen bytes of
 * T(1) || T(2) || ... */
static int expand(const uint8_t *prk, size_t prklen, const void *info, size_t infolen, uint8_t *out,
                  size_t outlen)
{
	uint8_t t[32];
	size_t have = 0, tlen = 0;
	int rc = 0;

	for (unsigned i = 1; have < outlen; i++) {
		const uint8_t counter = (uint8_t)i;
		const struct part m[3] = {{t, tlen}, {info, infolen}, {&counter, 1}};
		size_t n;
		if ((rc = hmac_sha256(prk, prklen, m, 3, t)) != 0)
			break;
		tlen = sizeof(t);
		n = outlen - have < sizeof(t) ? outlen - have : sizeof(t);
		memcpy(out + have, t, n);
		have += n;
	}
	OPENSSL_cleanse(t, sizeof(t));
	if (rc != 0)
		OPENSSL_cleanse(out, outlen);
	return rc;
}

int bc_hkdf_sha256(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                   const void *info, size_t infolen, uint8_t *out, size_t outlen)
{
	uint8_t prk[32];
	int rc;

	if ((rc = hkdf_args(salt, saltlen, ikm, ikmlen, info, infolen, out, outlen)) != 0)
		return rc;
	if ((rc = extract(salt, saltlen, ikm, ikmlen, prk)) == 0)
		rc = expand(prk, sizeof(prk), info, infolen, out, outlen);
	OPENSSL_cleanse(prk, sizeof(prk));
	return rc;
}

int bc_crypto_hkdf_extract(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                           uint8_t prk[static 32])
{
	int rc;

	if ((rc = hkdf_args(salt, saltlen, ikm, ikmlen, NULL, 0, prk, 32)) != 0)
		return rc;
	return extract(salt, saltlen, ikm, ikmlen, prk);
}

int bc_crypto_hkdf_expand(const uint8_t prk[static 32], const void *info, size_t infolen,
                          uint8_t *out, size_t outlen)
{
	int rc;

	if ((rc = hkdf_args(NULL, 0, prk, 32, info, infolen, out, outlen)) != 0)
		return rc;
	return expand(prk, 32, info, infolen, out, outlen);
}
