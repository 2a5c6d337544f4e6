/* ES256 under a purpose: SHA-256("bettercompute/v1" 0x00 purpose 0x00 payload),
 * ECDSA P-256, signatures as P1363 r||s. The API's one sign (by a signer: a key in
 * memory, or a key held elsewhere whose answer is checked here) and its one verify (by
 * a point), over the primitives of p256.c. */
#include <limits.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/wire.h"
#include "crypto/internal.h"

static const char bc_sig_domain[] = BC_WIRE_SIG_DOMAIN;

/* A purpose is a non-empty C string: the 0x00 after it keeps the fields apart. */
static int purpose_digest(const char *purpose, const void *payload, size_t len,
                          uint8_t out[static 32])
{
	EVP_MD_CTX *md = NULL;
	unsigned int n = 0;
	int rc;

	OPENSSL_cleanse(out, 32);
	if (purpose == NULL || purpose[0] == '\0' || (payload == NULL && len != 0))
		return BC_ERR_INVALID;
	if ((md = EVP_MD_CTX_new()) == NULL)
		return bc_ossl_err();
	if (bc_crypto_sha256() == NULL || EVP_DigestInit_ex(md, bc_crypto_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(md, bc_sig_domain, sizeof(bc_sig_domain)) != 1 ||
	    EVP_DigestUpdate(md, purpose, strlen(purpose) + 1) != 1 ||
	    (len > 0 && EVP_DigestUpdate(md, payload, len) != 1) ||
	    EVP_DigestFinal_ex(md, out, &n) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = n == 32 ? 0 : BC_ERR_INTERNAL;
out:
	EVP_MD_CTX_free(md);
	return rc;
}

const char bc_es256_digest_purpose[] = "(a digest framed elsewhere)";

/* The digest a signature is over: the purpose's framing, or a digest given as is. */
static int message_digest(const char *purpose, const void *payload, size_t len,
                          uint8_t out[static 32])
{
	if (purpose != bc_es256_digest_purpose)
		return purpose_digest(purpose, payload, len, out);
	OPENSSL_cleanse(out, 32);
	if (payload == NULL || len != 32)
		return BC_ERR_INVALID;
	memcpy(out, payload, 32);
	return 0;
}

/* A key in memory: through its EC_KEY when OpenSSL gives one (no EVP context of its
 * own), else through EVP (a key of another provider; anything but P-256 refused). */
static int key_sign(EVP_PKEY *key, const uint8_t digest[static 32], uint8_t sig[static BC_SIG_LEN])
{
	EVP_PKEY_CTX *ctx = NULL;
	uint8_t der[80];
	size_t derlen = sizeof(der);
	int rc;

	if ((rc = bc_p256_sign_p1363(key, digest, sig)) != BC_ERR_UNSUPPORTED)
		return rc;
	if (!bc_crypto_is_p256(key))
		return BC_ERR_INVALID;
	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL)) == NULL ||
	    EVP_PKEY_sign_init(ctx) != 1 || EVP_PKEY_sign(ctx, der, &derlen, digest, 32) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = bc_ecdsa_der_to_p1363(der, derlen, sig);
out:
	EVP_PKEY_CTX_free(ctx);
	return rc;
}

int bc_signer_init(struct bc_signer *s, EVP_PKEY *key, bc_sign_fn fn, void *ctx)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if (key == NULL)
		return BC_ERR_INVALID;
	if ((rc = bc_key_to_point(key, s->point)) != 0)
		return rc;
	s->key = key;
	s->fn = fn;
	s->ctx = ctx;
	return 0;
}

int bc_es256_sign(const struct bc_signer *s, const char *purpose, const void *payload, size_t len,
                  uint8_t sig[static BC_SIG_LEN])
{
	uint8_t digest[32];
	int rc;

	memset(sig, 0, BC_SIG_LEN);
	if (s == NULL || (s->fn == NULL && s->key == NULL) || purpose == bc_es256_digest_purpose)
		return BC_ERR_INVALID;
	/* a point that cannot be one is refused before anything is asked of fn */
	if (s->fn != NULL && s->point[0] != 0x04)
		return BC_ERR_INVALID;
	if ((rc = purpose_digest(purpose, payload, len, digest)) != 0)
		return rc;
	if (s->fn == NULL)
		rc = key_sign(s->key, digest, sig);
	else if ((rc = s->fn(s->ctx, digest, sig)) == 0)
		rc = bc_p256_verify_p1363(s->point, digest, sig);
	if (rc != 0)
		memset(sig, 0, BC_SIG_LEN);
	return rc;
}

int bc_es256_verify(const uint8_t point[static 65], const char *purpose, const void *payload,
                    size_t len, const uint8_t *sig, size_t siglen)
{
	uint8_t digest[32];
	int rc;

	if (sig == NULL || siglen != BC_SIG_LEN)
		return BC_ERR_VERIFY;
	if ((rc = message_digest(purpose, payload, len, digest)) != 0)
		return rc;
	return bc_p256_verify_p1363(point, digest, sig);
}

int bc_ecdsa_rs_to_der(const uint8_t *r, size_t rlen, const uint8_t *s, size_t slen, uint8_t **der,
                       size_t *len)
{
	ECDSA_SIG *sig = NULL;
	BIGNUM *br = NULL, *bs = NULL;
	uint8_t *buf = NULL;
	int n, rc;

	*der = NULL;
	*len = 0;
	if (rlen == 0 || slen == 0 || rlen > BC_ECDSA_INT_MAX || slen > BC_ECDSA_INT_MAX)
		return BC_ERR_INVALID;
	if ((sig = ECDSA_SIG_new()) == NULL || (br = BN_bin2bn(r, (int)rlen, NULL)) == NULL ||
	    (bs = BN_bin2bn(s, (int)slen, NULL)) == NULL || !ECDSA_SIG_set0(sig, br, bs)) {
		BN_free(br);
		BN_free(bs);
		rc = bc_ossl_err();
		goto out;
	}
	/* sig owns br and bs now */
	if ((n = i2d_ECDSA_SIG(sig, &buf)) <= 0) {
		rc = bc_ossl_err();
		goto out;
	}
	if ((*der = malloc((size_t)n)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	memcpy(*der, buf, (size_t)n);
	*len = (size_t)n;
	rc = 0;
out:
	OPENSSL_free(buf);
	ECDSA_SIG_free(sig);
	return rc;
}

int bc_ecdsa_p1363_to_der(const uint8_t sig[static 64], uint8_t **der, size_t *len)
{
	return bc_ecdsa_rs_to_der(sig, 32, sig + 32, 32, der, len);
}

/* Strict DER only: the value must re-encode to the same bytes, so BER forms and
 * padded integers are refused, and r and s must be non-negative and fit 32 bytes. */
int bc_ecdsa_der_to_p1363(const uint8_t *der, size_t len, uint8_t sig[static 64])
{
	ECDSA_SIG *s = NULL;
	const uint8_t *p = der;
	const BIGNUM *r, *sv;
	uint8_t *again = NULL;
	int n, rc;

	memset(sig, 0, 64);
	if (der == NULL || len == 0 || len > 128)
		return BC_ERR_INVALID;
	if ((s = d2i_ECDSA_SIG(NULL, &p, (long)len)) == NULL) {
		rc = bc_crypto_parse_err();
		goto out;
	}
	if (p != der + len) {
		rc = BC_ERR_TRAILING;
		goto out;
	}
	if ((n = i2d_ECDSA_SIG(s, &again)) <= 0 || (size_t)n != len ||
	    memcmp(again, der, len) != 0) {
		ERR_clear_error();
		rc = BC_ERR_INVALID;
		goto out;
	}
	ECDSA_SIG_get0(s, &r, &sv);
	if (BN_is_negative(r) || BN_is_negative(sv) || BN_num_bytes(r) > 32 ||
	    BN_num_bytes(sv) > 32) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if (BN_bn2binpad(r, sig, 32) != 32 || BN_bn2binpad(sv, sig + 32, 32) != 32) {
		memset(sig, 0, 64);
		rc = BC_ERR_INTERNAL;
		goto out;
	}
	rc = 0;
out:
	OPENSSL_free(again);
	ECDSA_SIG_free(s);
	return rc;
}

int bc_proof_payload(bc_buf *b, const uint8_t csr_sha256[static 32], const char *node_id,
                     int64_t client_time_ms)
{
	int rc;

	bc_buf_init(b, 512);
	if ((rc = bc_buf_put(b, csr_sha256, 32)) == 0 && (rc = bc_buf_put_cstr(b, node_id)) == 0)
		rc = bc_buf_put_u64(b, (uint64_t)client_time_ms);
	return rc;
}

int bc_lease_payload(bc_buf *b, const char *site_id, const char *name, uint64_t epoch,
                     uint64_t ttl_seconds, int64_t client_time_ms)
{
	int rc;

	bc_buf_init(b, 512);
	if ((rc = bc_buf_put_cstr(b, site_id)) == 0 && (rc = bc_buf_put_cstr(b, name)) == 0 &&
	    (rc = bc_buf_put_u64(b, epoch)) == 0 && (rc = bc_buf_put_u64(b, ttl_seconds)) == 0)
		rc = bc_buf_put_u64(b, (uint64_t)client_time_ms);
	return rc;
}

int bc_boot_entries_payload(bc_buf *b, const char *site_id, uint64_t epoch, int64_t client_time_ms)
{
	int rc;

	bc_buf_init(b, 512);
	if ((rc = bc_buf_put_cstr(b, site_id)) == 0 && (rc = bc_buf_put_u64(b, epoch)) == 0)
		rc = bc_buf_put_u64(b, (uint64_t)client_time_ms);
	return rc;
}

int bc_secret_payload(bc_buf *b, const char *workflow_id, const char *kind, const char *mac,
                      int64_t client_time_ms)
{
	int rc;

	bc_buf_init(b, 1024);
	if ((rc = bc_buf_put_cstr(b, workflow_id)) == 0 && (rc = bc_buf_put_cstr(b, kind)) == 0 &&
	    (rc = bc_buf_put_cstr(b, mac)) == 0)
		rc = bc_buf_put_u64(b, (uint64_t)client_time_ms);
	return rc;
}
