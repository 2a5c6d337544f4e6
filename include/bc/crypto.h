/* ES256 with purposes, key ids, HPKE base mode (RFC 9180), AES-256-GCM, SHA-256,
 * random bytes and constant-time comparison, over OpenSSL 3.
 *
 * Keys are EVP_PKEY (P-256 unless stated); the caller owns what it passes in and
 * frees with EVP_PKEY_free() what it gets out. Signatures on the wire are IEEE
 * P1363 (r||s, 64 bytes). A signed message is
 *   SHA-256("bettercompute/v1" 0x00 purpose 0x00 payload)
 * and the purposes are the BC_PURPOSE_* strings below. */
#ifndef BC_CRYPTO_H
#define BC_CRYPTO_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/buf.h"
#include "bc/err.h"

#define BC_PURPOSE_JOIN_RESPONSE       "join-response"
#define BC_PURPOSE_SECRET_RESPONSE     "secret-response"
#define BC_PURPOSE_X509POP             "x509pop"
#define BC_PURPOSE_RENEW               "renew"
#define BC_PURPOSE_SECRET_REQUEST      "secret-request"
#define BC_PURPOSE_DISCOVERY_ASSERTION "discovery-assertion"
#define BC_PURPOSE_SITE_RESPONSE       "site-response"
#define BC_PURPOSE_PINS_UPDATE         "pins-update"
/* one purpose per lease operation: a proof for one is no proof for another (the
 * older single "lease-request" is refused) */
#define BC_PURPOSE_LEASE_ACQUIRE "lease-acquire"
#define BC_PURPOSE_LEASE_RENEW   "lease-renew"
#define BC_PURPOSE_LEASE_RELEASE "lease-release"
#define BC_PURPOSE_BOOT_ENTRIES  "boot-entries-request"

#define BC_SIG_LEN    64
#define BC_KEY_ID_LEN 64 /* hex characters, without the NUL */

BC_WUR int bc_random(void *p, size_t len);
BC_WUR int bc_sha256(const void *p, size_t len, uint8_t out[static 32]);
/* 1 when equal, 0 otherwise; time depends only on len. */
int bc_ct_equal(const void *a, const void *b, size_t len);

/* P-256 keys */
BC_WUR int bc_key_generate(EVP_PKEY **out);
/* DER SubjectPublicKeyInfo, malloc'd. */
BC_WUR int bc_key_spki(EVP_PKEY *key, uint8_t **der, size_t *len);
/* Lower-case hex SHA-256 of the SPKI DER, into out[65]. */
BC_WUR int bc_key_id(EVP_PKEY *key, char out[static BC_KEY_ID_LEN + 1]);
/* SHA-256 of bc_key_spki's DER: what a key id spells in hex, as raw bytes. */
BC_WUR int bc_key_spki_sha256(EVP_PKEY *key, uint8_t out[static 32]);
/* 1 when a and b have the same DER SubjectPublicKeyInfo; 0 when they differ or either
 * is NULL or cannot be encoded (so a failure never reads as a match). */
int bc_key_same(EVP_PKEY *a, EVP_PKEY *b);
/* A P-256 public key from SPKI DER; BC_ERR_INVALID for any other curve or type.
 * Only the encoding bc_key_spki writes is accepted (named curve, uncompressed
 * point), so a key has one key id; BC_ERR_TRAILING for bytes after the DER. */
BC_WUR int bc_key_from_spki(const uint8_t *der, size_t len, EVP_PKEY **out);
/* PKCS#8 PEM of the private key (malloc'd NUL-terminated, caller wipes with
 * bc_freezero(p, strlen(p))) and back. bc_key_from_pem refuses non-P-256 keys.
 * The *_from_pem functions read exactly one block of their kind ("PRIVATE KEY",
 * "PUBLIC KEY") with only white space around it and no headers (so no encrypted
 * key); len excludes any NUL. A private key's pair is checked, and the key is
 * rebuilt from its scalar, so its SPKI is the canonical one. */
BC_WUR int bc_key_to_pem(EVP_PKEY *key, char **pem);
/* The strict start of a PEM text: no NUL byte, at most max bytes (else
 * BC_ERR_LIMIT), white space (space, tab, CR, LF), then "-----BEGIN " at *start
 * (PEM_read_bio would skip any text before a block). BC_ERR_INVALID otherwise. */
BC_WUR int bc_pem_prefix(const char *pem, size_t len, size_t max, size_t *start);
/* 1 when p[n] is only PEM white space (what may follow the one block), else 0. */
int bc_pem_blank(const char *p, size_t n);
BC_WUR int bc_key_from_pem(const char *pem, size_t len, EVP_PKEY **out);
/* Public key PEM (SPKI) and back. */
BC_WUR int bc_pubkey_to_pem(EVP_PKEY *key, char **pem);
BC_WUR int bc_pubkey_from_pem(const char *pem, size_t len, EVP_PKEY **out);
/* Raw 32-byte private scalar (for sealing into the bundle) and back. */
BC_WUR int bc_key_to_raw(EVP_PKEY *key, uint8_t out[static 32]);
BC_WUR int bc_key_from_raw(const uint8_t raw[static 32], EVP_PKEY **out);
/* The uncompressed point 0x04||x||y (65 bytes) and back (public only, validated). */
BC_WUR int bc_key_to_point(EVP_PKEY *key, uint8_t out[static 65]);
BC_WUR int bc_key_from_point(const uint8_t point[static 65], EVP_PKEY **out);

/* P-256 by bare points (src/crypto/p256.c). A point is the 65-byte uncompressed form;
 * one that is not on the curve is BC_ERR_INVALID.
 * bc_p256_point_check: 0 for a point on P-256 (coordinates below p, not infinity).
 * bc_p256_ecdh: the x coordinate of sk times peer (sk a P-256 private key);
 *   BC_ERR_INVALID for a bad point or a zero output; out is wiped on error.
 * bc_p256_public_point: a P-256 EVP_PKEY's public point.
 * bc_p256_spki_sha256: SHA-256 of the point's SPKI DER (bc_key_spki_sha256's value).
 * The one P-256 signature verify and sign of the API are ES256's, below; the ECDSA
 * primitives under them are src/crypto/internal.h's. */
BC_WUR int bc_p256_point_check(const uint8_t point[static 65]);
BC_WUR int bc_p256_ecdh(EVP_PKEY *sk, const uint8_t peer[static 65], uint8_t out[static 32]);
BC_WUR int bc_p256_public_point(EVP_PKEY *key, uint8_t out[static 65]);
BC_WUR int bc_p256_spki_sha256(const uint8_t point[static 65], uint8_t out[static 32]);

/* ES256 under a purpose: the one P-256 signature sign and verify of the API (the ECDSA
 * primitives under them are src/crypto/internal.h's).
 *
 * A signer is a key in memory or a key held elsewhere (a TPM, bcd helper):
 *   key: fn NULL: a P-256 private key, used here; else the public half of fn's key.
 *   fn, ctx: signs a 32-byte SHA-256 digest with that key into P1363 r||s (0 or a
 *     negative BC_ERR_*). The digest is all it is given: what it signs is framed here.
 *   point: key's public point (65 bytes, uncompressed). fn's signature is checked
 *     under it before bc_es256_sign returns it: a TPM, a helper or a socket peer that
 *     answers with another key's or a wrong signature is caught at the one place every
 *     such signature passes, so a fn need not check its own answer.
 * Why one struct: every caller above (x509pop, renew, the site calls, the join
 * service's answers) takes either kind of key without knowing which, and the answer of
 * a key held elsewhere is checked in this one place, not by each caller or each fn.
 * bc_signer_init: s for key (fn NULL) or for fn with key its public half; point filled
 *   from key (bc_key_to_point, which any provider's key gives). BC_ERR_INVALID for no
 *   key or one that is not P-256. s borrows key and
 *   ctx (the caller keeps them alive while s is used). The client's functions (renew,
 *   x509pop, the site calls) read point, so they take a signer made here.
 * bc_es256_sign: sig = ES256(s, purpose, payload). BC_ERR_INVALID for a NULL or empty
 *   purpose, payload NULL with len > 0, no key, a key that is not P-256, or fn without
 *   point; BC_ERR_VERIFY when fn's signature does not verify under point; fn's own
 *   error passes through. sig is zeroed on any failure. */
typedef int (*bc_sign_fn)(void *ctx, const uint8_t digest[static 32],
                          uint8_t sig[static BC_SIG_LEN]);
struct bc_signer {
	EVP_PKEY *key;
	bc_sign_fn fn;
	void *ctx;
	uint8_t point[65];
};
BC_WUR int bc_signer_init(struct bc_signer *s, EVP_PKEY *key, bc_sign_fn fn, void *ctx);
BC_WUR int bc_es256_sign(const struct bc_signer *s, const char *purpose, const void *payload,
                         size_t len, uint8_t sig[static BC_SIG_LEN]);
/* bc_es256_verify: 0 when sig (P1363 r||s) is ES256 of (purpose, payload) by the key
 * whose uncompressed point is point. BC_ERR_VERIFY for a bad signature: any length
 * other than 64, r or s zero or not below the order, another key, purpose or payload.
 * BC_ERR_INVALID for a point not on P-256, a NULL or empty purpose, payload NULL with
 * len > 0. A caller holding an EVP_PKEY computes its point once (bc_p256_public_point).
 * purpose BC_ES256_DIGEST (compared by address, so no string, NULL or "" ever means it):
 *   payload is a SHA-256 digest someone else framed (len 32, else BC_ERR_INVALID), what
 *   a TPM signs over its own structures (the agent's check of a TPM attestation under
 *   the AK). Never a purpose of this protocol's messages: those are framed here. */
extern const char bc_es256_digest_purpose[];
#define BC_ES256_DIGEST bc_es256_digest_purpose
BC_WUR int bc_es256_verify(const uint8_t point[static 65], const char *purpose, const void *payload,
                           size_t len, const uint8_t *sig, size_t siglen);
/* The payload of the x509pop and renew proofs: sha256(csr) || node id || 0x00 ||
 * client time (8 bytes big-endian). b is initialized here; the caller frees it
 * (bc_buf_free) whatever the result. */
BC_WUR int bc_proof_payload(bc_buf *b, const uint8_t csr_sha256[static 32], const char *node_id,
                            int64_t client_time_ms);
/* The payloads of a site node's requests (DESIGN.md "Crypto conventions"), into b
 * (initialised here; the caller frees it): lease-request site_id name epoch
 * ttl_seconds client_time_ms; boot-entries-request site_id epoch client_time_ms;
 * secret-request workflow_id kind mac client_time_ms. */
BC_WUR int bc_lease_payload(bc_buf *b, const char *site_id, const char *name, uint64_t epoch,
                            uint64_t ttl_seconds, int64_t client_time_ms);
BC_WUR int bc_boot_entries_payload(bc_buf *b, const char *site_id, uint64_t epoch,
                                   int64_t client_time_ms);
BC_WUR int bc_secret_payload(bc_buf *b, const char *workflow_id, const char *kind, const char *mac,
                             int64_t client_time_ms);

/* P1363 <-> DER ECDSA-Sig-Value for P-256. *der is malloc'd (free()). */
BC_WUR int bc_ecdsa_p1363_to_der(const uint8_t sig[static 64], uint8_t **der, size_t *len);
/* r and s as unsigned big-endian integers (1 to BC_ECDSA_INT_MAX bytes each, as a TPM
 * or P1363 gives them) into a DER ECDSA-Sig-Value, *der malloc'd (free()).
 * BC_ERR_INVALID for an empty or oversized integer. */
#define BC_ECDSA_INT_MAX 66 /* P-521 */
BC_WUR int bc_ecdsa_rs_to_der(const uint8_t *r, size_t rlen, const uint8_t *s, size_t slen,
                              uint8_t **der, size_t *len);
BC_WUR int bc_ecdsa_der_to_p1363(const uint8_t *der, size_t len, uint8_t sig[static 64]);

/* AES-256-GCM with a 12-byte nonce; out has ptlen+16 (seal) or ctlen-16 (open) bytes.
 * open returns BC_ERR_VERIFY when the tag does not verify (out is then wiped). */
BC_WUR int bc_aes256gcm_seal(const uint8_t key[static 32], const uint8_t nonce[static 12],
                             const void *aad, size_t aadlen, const void *pt, size_t ptlen,
                             uint8_t *out);
BC_WUR int bc_aes256gcm_open(const uint8_t key[static 32], const uint8_t nonce[static 12],
                             const void *aad, size_t aadlen, const void *ct, size_t ctlen,
                             uint8_t *out);

/* HKDF-SHA256 (extract then expand). */
BC_WUR int bc_hkdf_sha256(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                          const void *info, size_t infolen, uint8_t *out, size_t outlen);

/* HPKE base mode, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, one message.
 * seal: out = enc (65 bytes) || ciphertext || tag (malloc'd).
 * open: refuses an input shorter than 65+16, an invalid point or a zero shared
 * secret (BC_ERR_INVALID), a bad tag (BC_ERR_VERIFY); pt is malloc'd and the
 * caller wipes it (bc_freezero). */
#define BC_HPKE_ENC_LEN 65
BC_WUR int bc_hpke_seal(EVP_PKEY *pkR, const void *info, size_t infolen, const void *aad,
                        size_t aadlen, const void *pt, size_t ptlen, uint8_t **out, size_t *outlen);
BC_WUR int bc_hpke_open(EVP_PKEY *skR, const void *info, size_t infolen, const void *aad,
                        size_t aadlen, const uint8_t *in, size_t inlen, uint8_t **pt,
                        size_t *ptlen);
/* bc_hpke_open with skR's public point given (bc_p256_public_point, computed once by a
 * recipient that opens many messages: encoding it costs a field inversion). A pkRm
 * that is not skR's only makes every open fail (BC_ERR_VERIFY). */
BC_WUR int bc_hpke_open_as(EVP_PKEY *skR, const uint8_t pkRm[static 65], const void *info,
                           size_t infolen, const void *aad, size_t aadlen, const uint8_t *in,
                           size_t inlen, uint8_t **pt, size_t *ptlen);

/* For the RFC 9180 test vector: the KEM and key schedule with a given ephemeral key.
 * aead_key_len is 16 (the RFC's AES-128-GCM vector) or 32 (ours). */
struct bc_hpke_ctx {
	uint8_t enc[65];
	uint8_t shared_secret[32];
	uint8_t key[32];
	size_t key_len;
	uint8_t base_nonce[12];
};
BC_WUR int bc_hpke_setup_sender(EVP_PKEY *pkR, EVP_PKEY *skE, uint16_t aead_id, const void *info,
                                size_t infolen, struct bc_hpke_ctx *ctx);
/* The recipient's side of the same: decapsulates enc with skR (enc validated as in
 * bc_hpke_open: BC_ERR_INVALID for an invalid point or a zero shared secret).
 * Both setup functions: aead_id 0x0001 or 0x0002, BC_ERR_UNSUPPORTED otherwise;
 * ctx holds secrets and the caller wipes it (OPENSSL_cleanse) when done; on
 * failure it is already wiped. */
BC_WUR int bc_hpke_setup_receiver(EVP_PKEY *skR, const uint8_t enc[static 65], uint16_t aead_id,
                                  const void *info, size_t infolen, struct bc_hpke_ctx *ctx);
/* One message (sequence number 0) under a context, with AES-128-GCM when
 * ctx->key_len is 16 and AES-256-GCM when 32. seal: out has ptlen+16 bytes
 * (ciphertext || tag); open: out has ctlen-16 bytes, BC_ERR_INVALID when ctlen < 16,
 * BC_ERR_VERIFY for a bad tag (out is then wiped). */
BC_WUR int bc_hpke_ctx_seal(const struct bc_hpke_ctx *ctx, const void *aad, size_t aadlen,
                            const void *pt, size_t ptlen, uint8_t *out);
BC_WUR int bc_hpke_ctx_open(const struct bc_hpke_ctx *ctx, const void *aad, size_t aadlen,
                            const void *ct, size_t ctlen, uint8_t *out);

/* The one OpenSSL error adapter: empties this thread's OpenSSL error queue and
 * returns BC_ERR_NOMEM when an allocation failed, BC_ERR_CRYPTO otherwise. Call it
 * where an OpenSSL call has failed; other modules (pki, client) use it too. */
BC_WUR int bc_ossl_err(void);

/* SHA-256, fetched once per process and never freed: an implicit fetch (EVP_sha256()
 * in an init call) takes the provider store's locks on every call, which every thread
 * of the server contends for. NULL only when OpenSSL cannot provide it. */
const EVP_MD *bc_crypto_sha256(void);

#endif
