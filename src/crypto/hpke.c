/* HPKE (RFC 9180) base mode, one message: DHKEM(P-256, HKDF-SHA256) 0x0010,
 * HKDF-SHA256 0x0001, AES-128-GCM 0x0001 (the RFC's test vector) or AES-256-GCM
 * 0x0002 (ours). OpenSSL 3.0 has no HPKE, so this is built from ECDH, HKDF and GCM;
 * see shared/notes/CRYPTO.md for the formulas each step follows. */
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/crypto.h"
#include "crypto/internal.h"

#define BC_HPKE_KEM_ID         0x0010
#define BC_HPKE_KDF_ID         0x0001
#define BC_HPKE_AEAD_AES128GCM 0x0001
#define BC_HPKE_AEAD_AES256GCM 0x0002
#define BC_HPKE_TAG_LEN        16

static const uint8_t kem_suite[5] = {'K', 'E', 'M', BC_HPKE_KEM_ID >> 8, BC_HPKE_KEM_ID & 0xff};

static int aead_key_len(uint16_t aead_id, size_t *nk)
{
	switch (aead_id) {
	case BC_HPKE_AEAD_AES128GCM: *nk = 16; return 0;
	case BC_HPKE_AEAD_AES256GCM: *nk = 32; return 0;
	default: *nk = 0; return BC_ERR_UNSUPPORTED;
	}
}

static void hpke_suite(uint16_t aead_id, uint8_t id[static 10])
{
	const uint16_t v[3] = {BC_HPKE_KEM_ID, BC_HPKE_KDF_ID, aead_id};

	memcpy(id, "HPKE", 4);
	for (size_t i = 0; i < 3; i++) {
		id[4 + 2 * i] = (uint8_t)(v[i] >> 8);
		id[5 + 2 * i] = (uint8_t)v[i];
	}
}

/* HKDF-Extract(salt, "HPKE-v1" || suite || label || ikm); the buffer wipes the
 * copy of ikm (a DH output or a secret) when freed. */
static int labeled_extract(const uint8_t *suite, size_t suitelen, const void *salt, size_t saltlen,
                           const char *label, const void *ikm, size_t ikmlen,
                           uint8_t prk[static 32])
{
	bc_buf b;
	int rc;

	bc_buf_init(&b, 0);
	if ((rc = bc_buf_put(&b, "HPKE-v1", 7)) != 0)
		goto out;
	if ((rc = bc_buf_put(&b, suite, suitelen)) != 0)
		goto out;
	if ((rc = bc_buf_put(&b, label, strlen(label))) != 0)
		goto out;
	if ((rc = bc_buf_put(&b, ikm, ikmlen)) != 0)
		goto out;
	rc = bc_crypto_hkdf_extract(salt, saltlen, b.p, b.len, prk);
out:
	bc_buf_free(&b);
	return rc;
}

/* HKDF-Expand(prk, I2OSP(L, 2) || "HPKE-v1" || suite || label || info, L) */
static int labeled_expand(const uint8_t *suite, size_t suitelen, const uint8_t prk[static 32],
                          const char *label, const void *info, size_t infolen, uint8_t *out,
                          size_t outlen)
{
	bc_buf b;
	int rc;

	bc_buf_init(&b, 0);
	if (outlen > UINT16_MAX) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = bc_buf_put_u16(&b, (uint16_t)outlen)) != 0)
		goto out;
	if ((rc = bc_buf_put(&b, "HPKE-v1", 7)) != 0)
		goto out;
	if ((rc = bc_buf_put(&b, suite, suitelen)) != 0)
		goto out;
	if ((rc = bc_buf_put(&b, label, strlen(label))) != 0)
		goto out;
	if ((rc = bc_buf_put(&b, info, infolen)) != 0)
		goto out;
	rc = bc_crypto_hkdf_expand(prk, b.p, b.len, out, outlen);
out:
	bc_buf_free(&b);
	return rc;
}

/* shared_secret = LabeledExpand(LabeledExtract("", "eae_prk", dh), "shared_secret",
 * enc || pkRm, 32) */
static int kem_shared_secret(const uint8_t dhv[static 32], const uint8_t enc[static 65],
                             const uint8_t pkRm[static 65], uint8_t ss[static 32])
{
	uint8_t kem_context[130], prk[32];
	int rc;

	memcpy(kem_context, enc, 65);
	memcpy(kem_context + 65, pkRm, 65);
	if ((rc = labeled_extract(kem_suite, sizeof(kem_suite), NULL, 0, "eae_prk", dhv, 32,
	                          prk)) != 0)
		goto out;
	rc = labeled_expand(kem_suite, sizeof(kem_suite), prk, "shared_secret", kem_context,
	                    sizeof(kem_context), ss, 32);
out:
	OPENSSL_cleanse(prk, sizeof(prk));
	return rc;
}

/* Base mode (psk and psk_id empty): key and base_nonce from ctx->shared_secret. */
static int key_schedule(uint16_t aead_id, const void *info, size_t infolen, struct bc_hpke_ctx *ctx)
{
	uint8_t suite[10], ks_context[65], secret[32];
	int rc;

	hpke_suite(aead_id, suite);
	ks_context[0] = 0x00;
	if ((rc = labeled_extract(suite, sizeof(suite), NULL, 0, "psk_id_hash", NULL, 0,
	                          ks_context + 1)) != 0)
		goto out;
	if ((rc = labeled_extract(suite, sizeof(suite), NULL, 0, "info_hash", info, infolen,
	                          ks_context + 33)) != 0)
		goto out;
	if ((rc = labeled_extract(suite, sizeof(suite), ctx->shared_secret, 32, "secret", NULL, 0,
	                          secret)) != 0)
		goto out;
	if ((rc = labeled_expand(suite, sizeof(suite), secret, "key", ks_context,
	                         sizeof(ks_context), ctx->key, ctx->key_len)) != 0)
		goto out;
	rc = labeled_expand(suite, sizeof(suite), secret, "base_nonce", ks_context,
	                    sizeof(ks_context), ctx->base_nonce, sizeof(ctx->base_nonce));
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	return rc;
}

/* The part both sides share once they hold the DH output. */
static int setup_common(const uint8_t dhv[static 32], const uint8_t pkRm[static 65],
                        uint16_t aead_id, const void *info, size_t infolen, struct bc_hpke_ctx *ctx)
{
	int rc;

	if ((rc = kem_shared_secret(dhv, ctx->enc, pkRm, ctx->shared_secret)) != 0)
		return rc;
	return key_schedule(aead_id, info, infolen, ctx);
}

int bc_hpke_setup_sender(EVP_PKEY *pkR, EVP_PKEY *skE, uint16_t aead_id, const void *info,
                         size_t infolen, struct bc_hpke_ctx *ctx)
{
	uint8_t pkRm[65], dhv[32] = {0};
	int rc;

	OPENSSL_cleanse(ctx, sizeof(*ctx));
	if ((rc = aead_key_len(aead_id, &ctx->key_len)) != 0)
		goto out;
	if (!bc_crypto_is_p256(pkR) || !bc_crypto_is_p256(skE) || (info == NULL && infolen != 0)) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = bc_key_to_point(skE, ctx->enc)) != 0)
		goto out;
	if ((rc = bc_key_to_point(pkR, pkRm)) != 0)
		goto out;
	/* pkR by its point, as the receiver takes enc (bc_p256_ecdh) */
	if ((rc = bc_p256_ecdh(skE, pkRm, dhv)) != 0)
		goto out;
	rc = setup_common(dhv, pkRm, aead_id, info, infolen, ctx);
out:
	OPENSSL_cleanse(dhv, sizeof(dhv));
	if (rc != 0)
		OPENSSL_cleanse(ctx, sizeof(*ctx));
	return rc;
}

/* The recipient's side once pkRm (skR's public point) is known. */
static int setup_receiver(EVP_PKEY *skR, const uint8_t pkRm[static 65],
                          const uint8_t enc[static 65], uint16_t aead_id, const void *info,
                          size_t infolen, struct bc_hpke_ctx *ctx)
{
	uint8_t encbuf[65], dhv[32] = {0};
	int rc;

	/* copied before ctx is cleared: enc may be ctx->enc */
	memcpy(encbuf, enc, sizeof(encbuf));
	OPENSSL_cleanse(ctx, sizeof(*ctx));
	if ((rc = aead_key_len(aead_id, &ctx->key_len)) != 0)
		goto out;
	if (info == NULL && infolen != 0) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	/* skR must be a P-256 private key; enc is untrusted, and bc_p256_ecdh takes it as a
	 * bare point (on the curve, not infinity, uncompressed) rather than as a key made
	 * only to be used once */
	if ((rc = bc_p256_ecdh(skR, encbuf, dhv)) != 0)
		goto out;
	memcpy(ctx->enc, encbuf, sizeof(ctx->enc));
	rc = setup_common(dhv, pkRm, aead_id, info, infolen, ctx);
out:
	OPENSSL_cleanse(dhv, sizeof(dhv));
	if (rc != 0)
		OPENSSL_cleanse(ctx, sizeof(*ctx));
	return rc;
}

int bc_hpke_setup_receiver(EVP_PKEY *skR, const uint8_t enc[static 65], uint16_t aead_id,
                           const void *info, size_t infolen, struct bc_hpke_ctx *ctx)
{
	uint8_t pkRm[65];
	int rc;

	if ((rc = bc_p256_public_point(skR, pkRm)) != 0) {
		OPENSSL_cleanse(ctx, sizeof(*ctx));
		return rc;
	}
	return setup_receiver(skR, pkRm, enc, aead_id, info, infolen, ctx);
}

/* Sequence number 0: the nonce is base_nonce XOR 0, base_nonce itself. */
int bc_hpke_ctx_seal(const struct bc_hpke_ctx *ctx, const void *aad, size_t aadlen, const void *pt,
                     size_t ptlen, uint8_t *out)
{
	return bc_crypto_gcm_seal(ctx->key, ctx->key_len, ctx->base_nonce, aad, aadlen, pt, ptlen,
	                          out);
}

int bc_hpke_ctx_open(const struct bc_hpke_ctx *ctx, const void *aad, size_t aadlen, const void *ct,
                     size_t ctlen, uint8_t *out)
{
	return bc_crypto_gcm_open(ctx->key, ctx->key_len, ctx->base_nonce, aad, aadlen, ct, ctlen,
	                          out);
}

int bc_hpke_seal(EVP_PKEY *pkR, const void *info, size_t infolen, const void *aad, size_t aadlen,
                 const void *pt, size_t ptlen, uint8_t **out, size_t *outlen)
{
	struct bc_hpke_ctx ctx;
	EVP_PKEY *skE = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	int rc;

	*out = NULL;
	*outlen = 0;
	memset(&ctx, 0, sizeof(ctx));
	if (ptlen > (size_t)INT32_MAX - BC_HPKE_ENC_LEN - BC_HPKE_TAG_LEN)
		return BC_ERR_LIMIT;
	if ((rc = bc_key_generate(&skE)) != 0)
		goto out;
	if ((rc = bc_hpke_setup_sender(pkR, skE, BC_HPKE_AEAD_AES256GCM, info, infolen, &ctx)) != 0)
		goto out;
	n = BC_HPKE_ENC_LEN + ptlen + BC_HPKE_TAG_LEN;
	if ((buf = malloc(n)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	memcpy(buf, ctx.enc, BC_HPKE_ENC_LEN);
	if ((rc = bc_hpke_ctx_seal(&ctx, aad, aadlen, pt, ptlen, buf + BC_HPKE_ENC_LEN)) != 0)
		goto out;
	*out = buf;
	*outlen = n;
	buf = NULL;
out:
	free(buf);
	OPENSSL_cleanse(&ctx, sizeof(ctx));
	/* frees the ephemeral scalar, wiped */
	EVP_PKEY_free(skE);
	return rc;
}

int bc_hpke_open(EVP_PKEY *skR, const void *info, size_t infolen, const void *aad, size_t aadlen,
                 const uint8_t *in, size_t inlen, uint8_t **pt, size_t *ptlen)
{
	uint8_t pkRm[65];

	*pt = NULL;
	*ptlen = 0;
	if (bc_p256_public_point(skR, pkRm) != 0)
		return BC_ERR_INVALID;
	return bc_hpke_open_as(skR, pkRm, info, infolen, aad, aadlen, in, inlen, pt, ptlen);
}

int bc_hpke_open_as(EVP_PKEY *skR, const uint8_t pkRm[static 65], const void *info, size_t infolen,
                    const void *aad, size_t aadlen, const uint8_t *in, size_t inlen, uint8_t **pt,
                    size_t *ptlen)
{
	struct bc_hpke_ctx ctx;
	uint8_t *buf = NULL;
	size_t n = 0;
	int rc;

	*pt = NULL;
	*ptlen = 0;
	memset(&ctx, 0, sizeof(ctx));
	if (in == NULL || inlen < BC_HPKE_ENC_LEN + BC_HPKE_TAG_LEN)
		return BC_ERR_INVALID;
	if ((rc = setup_receiver(skR, pkRm, in, BC_HPKE_AEAD_AES256GCM, info, infolen, &ctx)) != 0)
		goto out;
	n = inlen - BC_HPKE_ENC_LEN - BC_HPKE_TAG_LEN;
	/* one byte at least, so an empty message still has a pointer to hand back */
	if ((buf = malloc(n > 0 ? n : 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = bc_hpke_ctx_open(&ctx, aad, aadlen, in + BC_HPKE_ENC_LEN, inlen - BC_HPKE_ENC_LEN,
	                           buf)) != 0)
		goto out;
	*pt = buf;
	*ptlen = n;
	buf = NULL;
out:
	bc_freezero(buf, n);
	OPENSSL_cleanse(&ctx, sizeof(ctx));
	return rc;
}
