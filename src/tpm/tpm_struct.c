/* TPM structures from untrusted bytes: public areas, names, attributes, TPMS_ATTEST,
 * TPMT_SIGNATURE, through libtss2-mu with trailing bytes refused. */
#include <string.h>
#include <tss2/tss2_mu.h>

#include "bc/buf.h"
#include "tpm/tpm.h"

int bc_tpm_err(uint32_t rc)
{
	if (rc == TSS2_RC_SUCCESS)
		return 0;
	if ((rc & 0xffffu) == TSS2_BASE_RC_INSUFFICIENT_BUFFER)
		return BC_ERR_TRUNCATED;
	return BC_ERR_INVALID;
}

const EVP_MD *bc_tpm_md(uint16_t alg)
{
	switch (alg) {
	case TPM2_ALG_SHA256: return EVP_sha256();
	case TPM2_ALG_SHA384: return EVP_sha384();
	case TPM2_ALG_SHA512: return EVP_sha512();
	default: return NULL;
	}
}

size_t bc_tpm_hash_size(uint16_t alg)
{
	const EVP_MD *md = bc_tpm_md(alg);

	return md ? (size_t)EVP_MD_get_size(md) : 0;
}

int bc_tpm_public_parse(const uint8_t *p, size_t len, TPMT_PUBLIC *out)
{
	uint8_t back[BC_TPM_MAX_STRUCT];
	size_t off = 0, n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return BC_ERR_TRUNCATED;
	if (len > BC_TPM_MAX_STRUCT)
		return BC_ERR_LIMIT;
	if ((rc = bc_tpm_err(Tss2_MU_TPMT_PUBLIC_Unmarshal(p, len, &off, out))) != 0)
		goto fail;
	if (off != len) {
		rc = BC_ERR_TRAILING;
		goto fail;
	}
	/* one encoding per object: its name is the hash of these very bytes */
	if ((rc = bc_tpm_err(Tss2_MU_TPMT_PUBLIC_Marshal(out, back, sizeof(back), &n))) != 0)
		goto fail;
	if (n != len || memcmp(back, p, len) != 0) {
		rc = BC_ERR_INVALID;
		goto fail;
	}
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return rc;
}

int bc_tpm_name(const TPMT_PUBLIC *pub, const uint8_t *bytes, size_t n,
                uint8_t name[static BC_TPM_NAME_MAX], size_t *len)
{
	const EVP_MD *md = bc_tpm_md(pub->nameAlg);
	unsigned int dlen = 0;

	*len = 0;
	if (md == NULL)
		return BC_ERR_INVALID;
	name[0] = (uint8_t)(pub->nameAlg >> 8);
	name[1] = (uint8_t)pub->nameAlg;
	if (EVP_Digest(bytes, n, name + 2, &dlen, md, NULL) != 1)
		return BC_ERR_CRYPTO;
	*len = 2 + dlen;
	return 0;
}

static int attrs(const TPMT_PUBLIC *pub, uint32_t set, uint32_t clear)
{
	uint32_t a = pub->objectAttributes;

	return (a & set) == set && (a & clear) == 0;
}

/* A key type and size we can turn into an OpenSSL key. */
static int supported_key(const TPMT_PUBLIC *pub)
{
	switch (pub->type) {
	case TPM2_ALG_RSA:
		return pub->parameters.rsaDetail.keyBits >= 2048 &&
		       pub->parameters.rsaDetail.keyBits <= 4096;
	case TPM2_ALG_ECC:
		return pub->parameters.eccDetail.curveID == TPM2_ECC_NIST_P256 ||
		       pub->parameters.eccDetail.curveID == TPM2_ECC_NIST_P384;
	default: return 0;
	}
}

int bc_tpm_check_ak(const TPMT_PUBLIC *pub)
{
	uint16_t scheme;

	if (!supported_key(pub) || bc_tpm_md(pub->nameAlg) == NULL)
		return BC_ERR_INVALID;
	if (!attrs(pub,
	           BC_TPMA_RESTRICTED | BC_TPMA_SIGN | BC_TPMA_FIXED_TPM | BC_TPMA_FIXED_PARENT |
	               BC_TPMA_SENSITIVE_DATA_ORIGIN,
	           BC_TPMA_DECRYPT))
		return BC_ERR_INVALID;
	/* a restricted signing key names its scheme; the TPM signs with no other */
	if (pub->type == TPM2_ALG_RSA) {
		scheme = pub->parameters.rsaDetail.scheme.scheme;
		if (scheme != TPM2_ALG_RSASSA && scheme != TPM2_ALG_RSAPSS)
			return BC_ERR_INVALID;
	} else if (pub->parameters.eccDetail.scheme.scheme != TPM2_ALG_ECDSA) {
		return BC_ERR_INVALID;
	}
	return 0;
}

int bc_tpm_check_node_key(const TPMT_PUBLIC *pub)
{
	if (!attrs(pub,
	           BC_TPMA_FIXED_TPM | BC_TPMA_FIXED_PARENT | BC_TPMA_SENSITIVE_DATA_ORIGIN |
	               BC_TPMA_SIGN,
	           BC_TPMA_DECRYPT))
		return BC_ERR_INVALID;
	return 0;
}

int bc_tpm_check_ek(const TPMT_PUBLIC *pub)
{
	const TPMT_SYM_DEF_OBJECT *sym;

	if (!attrs(pub,
	           BC_TPMA_FIXED_TPM | BC_TPMA_FIXED_PARENT | BC_TPMA_SENSITIVE_DATA_ORIGIN |
	               BC_TPMA_RESTRICTED | BC_TPMA_DECRYPT,
	           BC_TPMA_SIGN))
		return BC_ERR_INVALID;
	if (pub->nameAlg != TPM2_ALG_SHA256 && pub->nameAlg != TPM2_ALG_SHA384)
		return BC_ERR_INVALID;
	if (pub->type == TPM2_ALG_RSA) {
		if (pub->parameters.rsaDetail.keyBits != 2048)
			return BC_ERR_INVALID;
		sym = &pub->parameters.rsaDetail.symmetric;
	} else if (pub->type == TPM2_ALG_ECC && supported_key(pub)) {
		sym = &pub->parameters.eccDetail.symmetric;
	} else {
		return BC_ERR_INVALID;
	}
	if (sym->algorithm != TPM2_ALG_AES || sym->mode.aes != TPM2_ALG_CFB ||
	    (sym->keyBits.aes != 128 && sym->keyBits.aes != 256))
		return BC_ERR_INVALID;
	return 0;
}

int bc_tpm_attest_parse(const uint8_t *p, size_t len, TPMS_ATTEST *out)
{
	size_t off = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return BC_ERR_TRUNCATED;
	if (len > BC_TPM_MAX_STRUCT)
		return BC_ERR_LIMIT;
	if ((rc = bc_tpm_err(Tss2_MU_TPMS_ATTEST_Unmarshal(p, len, &off, out))) == 0 && off != len)
		rc = BC_ERR_TRAILING;
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

int bc_tpm_signature_parse(const uint8_t *p, size_t len, TPMT_SIGNATURE *out)
{
	uint16_t hash = 0;
	size_t off = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return BC_ERR_TRUNCATED;
	if (len > BC_TPM_MAX_STRUCT)
		return BC_ERR_LIMIT;
	if ((rc = bc_tpm_err(Tss2_MU_TPMT_SIGNATURE_Unmarshal(p, len, &off, out))) == 0 &&
	    off != len)
		rc = BC_ERR_TRAILING;
	/* RSASSA, RSAPSS and ECDSA only, with a hash we know */
	if (rc == 0)
		hash = bc_tpm_signature_hash(out);
	if (rc == 0 && bc_tpm_md(hash) == NULL)
		rc = BC_ERR_INVALID;
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

int bc_tpm_selection(const TPML_PCR_SELECTION *s, uint16_t alg, const uint32_t *want, size_t n_want,
                     uint32_t sel[static 24], size_t *n)
{
	const TPMS_PCR_SELECTION *b;

	*n = 0;
	if (s->count != 1 || s->pcrSelections[0].hash != alg)
		return BC_ERR_INVALID;
	b = &s->pcrSelections[0];
	if (b->sizeofSelect < 3 || b->sizeofSelect > sizeof(b->pcrSelect))
		return BC_ERR_INVALID;
	/* PCRs past 23 do not exist on a PC client TPM: a bit there is an odd quote */
	for (size_t i = 3; i < b->sizeofSelect; i++)
		if (b->pcrSelect[i] != 0)
			return BC_ERR_INVALID;
	for (uint32_t i = 0; i < 24; i++)
		if (b->pcrSelect[i / 8] & (1u << (i % 8)))
			sel[(*n)++] = i;
	for (size_t w = 0; w < n_want; w++) {
		if (want[w] >= 24 || !(b->pcrSelect[want[w] / 8] & (1u << (want[w] % 8)))) {
			*n = 0;
			return BC_ERR_INVALID;
		}
	}
	return 0;
}

uint16_t bc_tpm_signature_hash(const TPMT_SIGNATURE *sig)
{
	switch (sig->sigAlg) {
	case TPM2_ALG_RSASSA:
	case TPM2_ALG_RSAPSS: return sig->signature.rsassa.hash;
	case TPM2_ALG_ECDSA: return sig->signature.ecdsa.hash;
	default: return 0;
	}
}

int bc_tpm_pcr_digest(uint16_t bank, uint16_t hash, const uint8_t *const *values, size_t n,
                      uint8_t *out, size_t *out_len)
{
	const EVP_MD *md = bc_tpm_md(hash);
	size_t hs = bc_tpm_hash_size(bank);
	EVP_MD_CTX *ctx = NULL;
	unsigned int dl = 0;
	int rc = BC_ERR_CRYPTO;

	*out_len = 0;
	if (md == NULL || hs == 0)
		return BC_ERR_INVALID;
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return BC_ERR_NOMEM;
	if (EVP_DigestInit_ex(ctx, md, NULL) != 1)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (EVP_DigestUpdate(ctx, values[i], hs) != 1)
			goto out;
	if (EVP_DigestFinal_ex(ctx, out, &dl) != 1)
		goto out;
	*out_len = dl;
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}
