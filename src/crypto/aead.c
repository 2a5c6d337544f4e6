/* AES-GCM (a 16-byte tag after the ciphertext) and HKDF-SHA256 over EVP. */
#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <string.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

#define BC_GCM_TAG_LEN 16
/* RFC 5869: at most 255 blocks of output. OpenSSL 3.0 also bounds the info. */
#define BC_HKDF_MAX_OUT  (255 * 32)
#define BC_HKDF_MAX_INFO 1024

static const EVP_CIPHER *gcm_cipher(size_t keylen)
{
	switch (keylen) {
	case 16: return EVP_aes_128_gcm();
	case 32: return EVP_aes_256_gcm();
	default: return NULL;
	}
}

static int gcm_args(size_t keylen, const void *aad, size_t aadlen, const void *in, size_t inlen)
{
	if (gcm_cipher(keylen) == NULL || (aad == NULL && aadlen != 0) ||
	    (in == NULL && inlen != 0))
		return BC_ERR_INVALID;
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

/* One EVP_KDF "HKDF" call with SHA-256 in the given mode; empty salt or info are
 * left out, which HKDF defines as a zero salt and an empty info. */
static int hkdf(int mode, const void *salt, size_t saltlen, const void *key, size_t keylen,
                const void *info, size_t infolen, uint8_t *out, size_t outlen)
{
	static const uint8_t empty[1];
	OSSL_PARAM params[6], *p = params;
	EVP_KDF_CTX *kctx = NULL;
	EVP_KDF *kdf = NULL;
	int rc;

	if ((salt == NULL && saltlen != 0) || (key == NULL && keylen != 0) ||
	    (info == NULL && infolen != 0) || out == NULL || outlen == 0 ||
	    outlen > BC_HKDF_MAX_OUT)
		return BC_ERR_INVALID;
	if (infolen > BC_HKDF_MAX_INFO)
		return BC_ERR_LIMIT;
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0);
	*p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	/* An empty IKM is allowed (RFC 5869), but OpenSSL wants a pointer for it. */
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
	                                         (void *)(key != NULL ? key : empty), keylen);
	if (saltlen > 0)
		*p++ =
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, saltlen);
	if (infolen > 0)
		*p++ =
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, infolen);
	*p = OSSL_PARAM_construct_end();
	if ((kdf = EVP_KDF_fetch(NULL, "HKDF", NULL)) == NULL ||
	    (kctx = EVP_KDF_CTX_new(kdf)) == NULL ||
	    EVP_KDF_derive(kctx, out, outlen, params) != 1) {
		OPENSSL_cleanse(out, outlen);
		rc = bc_ossl_err();
		goto out;
	}
	rc = 0;
out:
	/* frees the context's copy of the key, wiped */
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	return rc;
}

int bc_hkdf_sha256(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                   const void *info, size_t infolen, uint8_t *out, size_t outlen)
{
	return hkdf(EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND, salt, saltlen, ikm, ikmlen, info, infolen,
	            out, outlen);
}

int bc_crypto_hkdf_extract(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                           uint8_t prk[static 32])
{
	return hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, salt, saltlen, ikm, ikmlen, NULL, 0, prk, 32);
}

int bc_crypto_hkdf_expand(const uint8_t prk[static 32], const void *info, size_t infolen,
                          uint8_t *out, size_t outlen)
{
	return hkdf(EVP_KDF_HKDF_MODE_EXPAND_ONLY, NULL, 0, prk, 32, info, infolen, out, outlen);
}
