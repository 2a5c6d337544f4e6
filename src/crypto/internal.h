/* Internal to src/crypto: pieces shared between its files, not part of the API.
 *
 * bc_crypto_gcm_seal/open: AES-GCM with a 16- or 32-byte key and a 12-byte nonce,
 * the tag (16 bytes) after the ciphertext; open wipes out when the tag does not
 * verify (BC_ERR_VERIFY) and refuses ctlen < 16 (BC_ERR_INVALID).
 * bc_crypto_hkdf_extract/expand: HKDF-SHA256's two halves (RFC 5869).
 * bc_crypto_is_p256: 1 when key is an EC key on the named curve P-256.
 * bc_crypto_parse_err: for an OpenSSL parse of untrusted bytes that failed: empties
 * the error queue, BC_ERR_NOMEM when an allocation failed, BC_ERR_INVALID otherwise. */
#ifndef BC_CRYPTO_INTERNAL_H
#define BC_CRYPTO_INTERNAL_H

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

#define BC_P256_GROUP "prime256v1"

int bc_crypto_is_p256(EVP_PKEY *key);

/* The P-256 group, built once; callers never free it. */
const EC_GROUP *bc_crypto_p256_group(void);

/* The DER SubjectPublicKeyInfo of a P-256 key on the named curve with an
 * uncompressed point is this 26-byte prefix and the 65-byte point: the only SPKI
 * this project writes or accepts. */
#define BC_P256_SPKI_PREFIX_LEN 26
#define BC_P256_SPKI_LEN        (BC_P256_SPKI_PREFIX_LEN + 65)
extern const uint8_t bc_p256_spki_prefix[BC_P256_SPKI_PREFIX_LEN];
BC_WUR int bc_crypto_parse_err(void);

/* The ECDSA primitives under ES256 (bc/crypto.h's one verify and sign), and what the
 * pki module checks X.509 signatures with (csr.c) and signs certificates with
 * (node_der.c); src/crypto/p256.c. A point is the 65-byte uncompressed form, one not
 * on P-256 BC_ERR_INVALID; BC_ERR_VERIFY for a signature that does not verify.
 * bc_p256_verify: ECDSA-SHA256 over msg by point's key; sig is a DER ECDSA-Sig-Value
 *   (at most BC_ECDSA_DER_MAX bytes), exactly DER. _digest takes the SHA-256 already
 *   made.
 * bc_p256_verify_p1363: the same over a digest, sig r||s (64 bytes).
 * bc_p256_sign_p1363: ECDSA over a SHA-256 digest by a P-256 private key, r||s, through
 *   the key's EC_KEY; BC_ERR_UNSUPPORTED for a key OpenSSL does not give as a P-256
 *   EC_KEY with its scalar (es256.c signs through EVP then). */
#define BC_ECDSA_DER_MAX 72
BC_WUR int bc_p256_verify(const uint8_t point[static 65], const void *msg, size_t len,
                          const uint8_t *sig, size_t siglen);
BC_WUR int bc_p256_verify_digest(const uint8_t point[static 65], const uint8_t digest[static 32],
                                 const uint8_t *sig, size_t siglen);
BC_WUR int bc_p256_verify_p1363(const uint8_t point[static 65], const uint8_t digest[static 32],
                                const uint8_t sig[static 64]);
BC_WUR int bc_p256_sign_p1363(EVP_PKEY *key, const uint8_t digest[static 32],
                              uint8_t sig[static 64]);

BC_WUR int bc_crypto_gcm_seal(const uint8_t *key, size_t keylen, const uint8_t nonce[static 12],
                              const void *aad, size_t aadlen, const void *pt, size_t ptlen,
                              uint8_t *out);
BC_WUR int bc_crypto_gcm_open(const uint8_t *key, size_t keylen, const uint8_t nonce[static 12],
                              const void *aad, size_t aadlen, const void *ct, size_t ctlen,
                              uint8_t *out);

BC_WUR int bc_crypto_hkdf_extract(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                                  uint8_t prk[static 32]);
BC_WUR int bc_crypto_hkdf_expand(const uint8_t prk[static 32], const void *info, size_t infolen,
                                 uint8_t *out, size_t outlen);

#endif
