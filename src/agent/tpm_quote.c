/* Quotes by the AK with the PCR values they cover, and the checks every attestation
 * from the TPM passes before bcd sends it (quotes here, certifications in
 * tpm_nodekey.c). */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <tss2/tss2_mu.h>

#include "agent/tpm_internal.h"
#include "bc/buf.h"
#include "bc/crypto.h"

/* A quote whose PCRs changed between the read and the quote is taken again. */
#define QUOTE_TRIES 3

static const EVP_MD *bank_md(uint16_t alg)
{
	switch (alg) {
	case TPM2_ALG_SHA256: return EVP_sha256();
	case TPM2_ALG_SHA384: return EVP_sha384();
	case TPM2_ALG_SHA512: return EVP_sha512();
	default: return NULL;
	}
}

void bcd_tpm_attest_free(struct bcd_tpm_attest *a)
{
	if (a == NULL)
		return;
	free(a->attest);
	free(a->sig);
	memset(a, 0, sizeof(*a));
}

int bcd_tpmi_ecdsa_p1363(const TPMT_SIGNATURE *sig, TPMI_ALG_HASH hash, uint8_t out[static 64])
{
	const TPM2B_ECC_PARAMETER *r = &sig->signature.ecdsa.signatureR;
	const TPM2B_ECC_PARAMETER *s = &sig->signature.ecdsa.signatureS;

	if (sig->sigAlg != TPM2_ALG_ECDSA || sig->signature.ecdsa.hash != hash || r->size == 0 ||
	    r->size > 32 || s->size == 0 || s->size > 32)
		return BC_ERR_INVALID;
	/* P1363 wants each half left-padded to the curve size */
	memset(out, 0, 64);
	memcpy(out + 32 - r->size, r->buffer, r->size);
	memcpy(out + 64 - s->size, s->buffer, s->size);
	return 0;
}

static int take_bytes(const TPM2B_ATTEST *q, const TPMT_SIGNATURE *sig, struct bcd_tpm_attest *out)
{
	uint8_t buf[sizeof(TPMT_SIGNATURE)];
	size_t off = 0;

	if (Tss2_MU_TPMT_SIGNATURE_Marshal(sig, buf, sizeof(buf), &off) != TSS2_RC_SUCCESS)
		return BC_ERR_INVALID;
	if ((out->attest = malloc(q->size)) == NULL || (out->sig = malloc(off)) == NULL)
		return BC_ERR_NOMEM;
	memcpy(out->attest, q->attestationData, q->size);
	out->attest_len = q->size;
	memcpy(out->sig, buf, off);
	out->sig_len = off;
	return 0;
}

int bcd_tpmi_attest_take(struct bcd_tpm *t, const TPM2B_ATTEST *q, const TPMT_SIGNATURE *sig,
                         EVP_PKEY *key, TPM2_ST type, const TPM2B_DATA *extra, TPMS_ATTEST *parsed,
                         struct bcd_tpm_attest *out)
{
	uint8_t rs[64], digest[32], point[65];
	size_t off = 0;
	int rc;

	if (q->size == 0 || q->size > sizeof(q->attestationData) ||
	    Tss2_MU_TPMS_ATTEST_Unmarshal(q->attestationData, q->size, &off, parsed) !=
	        TSS2_RC_SUCCESS ||
	    off != q->size) {
		bcd_tpmi_say(t, "the TPM's attestation is not one TPMS_ATTEST");
		return BC_ERR_INVALID;
	}
	if (parsed->magic != TPM2_GENERATED_VALUE || parsed->type != type ||
	    parsed->extraData.size != extra->size ||
	    memcmp(parsed->extraData.buffer, extra->buffer, extra->size) != 0) {
		bcd_tpmi_say(t, "the TPM's attestation is not the one asked for (type 0x%04x)",
		             (unsigned)parsed->type);
		return BC_ERR_INVALID;
	}
	/* the TPM signs its own structure's SHA-256 (TPM_GENERATED_VALUE first is its
	 * framing), so the check is over that digest as it is */
	if ((rc = bcd_tpmi_ecdsa_p1363(sig, TPM2_ALG_SHA256, rs)) != 0 ||
	    (rc = bc_sha256(q->attestationData, q->size, digest)) != 0 ||
	    (rc = bc_p256_public_point(key, point)) != 0 ||
	    (rc = bc_es256_verify(point, BC_ES256_DIGEST, digest, sizeof(digest), rs,
	                          sizeof(rs))) != 0) {
		bcd_tpmi_say(t, "the TPM's attestation does not verify under the AK");
		return BC_ERR_VERIFY;
	}
	if ((rc = take_bytes(q, sig, out)) != 0) {
		bcd_tpmi_say(t, "the TPM's attestation: %s", bc_err_str(rc));
		free(out->attest);
		out->attest = NULL;
		out->attest_len = 0;
	}
	return rc;
}

/* The selection of one bank as a TPM wants it: 3 bytes of bitmap for PCRs 0-23. */
static int selection(struct bcd_tpm *t, uint16_t alg, const uint32_t *pcrs, size_t n,
                     TPML_PCR_SELECTION *sel)
{
	memset(sel, 0, sizeof(*sel));
	if (bank_md(alg) == NULL) {
		bcd_tpmi_say(t, "quote: PCR bank 0x%04x is not SHA-256, -384 or -512",
		             (unsigned)alg);
		return BC_ERR_UNSUPPORTED;
	}
	if (pcrs == NULL || n == 0 || n > 64) {
		bcd_tpmi_say(t, "quote: no PCRs, or too many indexes");
		return BC_ERR_INVALID;
	}
	sel->count = 1;
	sel->pcrSelections[0].hash = alg;
	sel->pcrSelections[0].sizeofSelect = 3;
	for (size_t i = 0; i < n; i++) {
		if (pcrs[i] >= BCD_TPM_PCR_COUNT) {
			bcd_tpmi_say(t, "quote: PCR %u does not exist", (unsigned)pcrs[i]);
			return BC_ERR_INVALID;
		}
		sel->pcrSelections[0].pcrSelect[pcrs[i] / 8] |= (uint8_t)(1u << (pcrs[i] % 8));
	}
	return 0;
}

/* The values of one PCR_Read answer, for what is still wanted (bitmap want). */
static int take_values(struct bcd_tpm *t, uint16_t alg, size_t dlen, const TPML_PCR_SELECTION *got,
                       const TPML_DIGEST *vals, uint8_t want[3], struct bcd_tpm_attest *out)
{
	const TPMS_PCR_SELECTION *s = &got->pcrSelections[0];
	uint32_t v = 0;

	if (got->count != 1 || s->hash != alg || s->sizeofSelect < 3 || s->sizeofSelect > 4)
		goto bad;
	for (uint32_t pcr = 0; pcr < BCD_TPM_PCR_COUNT; pcr++) {
		if (!(s->pcrSelect[pcr / 8] & (1u << (pcr % 8))))
			continue;
		/* only what was asked for, each once, and a digest of the bank's size */
		if (!(want[pcr / 8] & (1u << (pcr % 8))) || v >= vals->count ||
		    vals->digests[v].size != dlen || out->n_pcrs >= BCD_TPM_PCR_COUNT)
			goto bad;
		out->pcrs[out->n_pcrs].index = pcr;
		memcpy(out->pcrs[out->n_pcrs].digest, vals->digests[v].buffer, dlen);
		out->pcrs[out->n_pcrs].len = dlen;
		out->n_pcrs++;
		want[pcr / 8] &= (uint8_t) ~(1u << (pcr % 8));
		v++;
	}
	if (v == 0 || v != vals->count || (s->sizeofSelect == 4 && s->pcrSelect[3] != 0))
		goto bad;
	return 0;
bad:
	bcd_tpmi_say(t, "PCR_Read: an answer other than the selection asked for");
	return BC_ERR_INVALID;
}

/* PCR_Read returns at most 8 values at a time: ask again for the rest. */
static int pcr_read(struct bcd_tpm *t, const TPML_PCR_SELECTION *sel, struct bcd_tpm_attest *out)
{
	uint16_t alg = sel->pcrSelections[0].hash;
	size_t dlen = (size_t)EVP_MD_get_size(bank_md(alg));
	TPML_PCR_SELECTION ask = *sel, *got = NULL;
	TPML_DIGEST *vals = NULL;
	uint8_t *want = ask.pcrSelections[0].pcrSelect;
	uint32_t counter;
	int rc = 0;

	out->n_pcrs = 0;
	while (rc == 0 && (want[0] | want[1] | want[2]) != 0) {
		rc = bcd_tpmi_rc(t,
		                 Esys_PCR_Read(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
		                               &ask, &counter, &got, &vals),
		                 "PCR_Read");
		if (rc == 0 && got->count == 0) {
			bcd_tpmi_say(t, "PCR_Read: the TPM has no such PCR in bank 0x%04x",
			             (unsigned)alg);
			rc = BC_ERR_UNSUPPORTED;
		} else if (rc == 0) {
			rc = take_values(t, alg, dlen, got, vals, want, out);
		}
		Esys_Free(got);
		Esys_Free(vals);
		got = NULL;
		vals = NULL;
	}
	return rc;
}

/* The quote covers what was read: the selection asked for and H(values). */
static int covers(const TPMS_ATTEST *a, const TPML_PCR_SELECTION *sel,
                  const struct bcd_tpm_attest *out, int *same)
{
	const TPMS_QUOTE_INFO *qi = &a->attested.quote;
	const EVP_MD *md = bank_md(sel->pcrSelections[0].hash);
	uint8_t d[EVP_MAX_MD_SIZE];
	unsigned dlen = 0;
	EVP_MD_CTX *ctx;
	int ok = 1;

	*same = 0;
	if (qi->pcrSelect.count != 1 ||
	    qi->pcrSelect.pcrSelections[0].hash != sel->pcrSelections[0].hash ||
	    qi->pcrSelect.pcrSelections[0].sizeofSelect != 3 ||
	    memcmp(qi->pcrSelect.pcrSelections[0].pcrSelect, sel->pcrSelections[0].pcrSelect, 3) !=
	        0)
		return BC_ERR_INVALID;
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return BC_ERR_NOMEM;
	ok = EVP_DigestInit_ex(ctx, md, NULL) == 1;
	for (size_t i = 0; ok && i < out->n_pcrs; i++)
		ok = EVP_DigestUpdate(ctx, out->pcrs[i].digest, out->pcrs[i].len) == 1;
	ok = ok && EVP_DigestFinal_ex(ctx, d, &dlen) == 1;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return bc_ossl_err();
	*same = qi->pcrDigest.size == dlen && memcmp(qi->pcrDigest.buffer, d, dlen) == 0;
	return 0;
}

/* One try: read, quote, check. *same is 0 when a PCR moved in between. */
static int quote_once(struct bcd_tpm *t, ESYS_TR ak, EVP_PKEY *akkey, const TPML_PCR_SELECTION *sel,
                      const TPM2B_DATA *extra, struct bcd_tpm_attest *out, int *same)
{
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPM2B_ATTEST *q = NULL;
	TPMT_SIGNATURE *sig = NULL;
	TPMS_ATTEST parsed;
	int rc;

	*same = 0;
	if ((rc = pcr_read(t, sel, out)) != 0)
		return rc;
	if ((rc = bcd_tpmi_rc(t,
	                      Esys_Quote(t->esys, ak, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
	                                 extra, &scheme, sel, &q, &sig),
	                      "Quote")) != 0)
		goto out;
	if ((rc = bcd_tpmi_attest_take(t, q, sig, akkey, TPM2_ST_ATTEST_QUOTE, extra, &parsed,
	                               out)) != 0)
		goto out;
	if ((rc = covers(&parsed, sel, out, same)) != 0)
		bcd_tpmi_say(t, "Quote: the selection quoted is not the one asked for");
out:
	Esys_Free(q);
	Esys_Free(sig);
	return rc;
}

int bcd_tpm_quote(struct bcd_tpm *t, uint16_t hash_alg, const uint32_t *pcrs, size_t n,
                  const uint8_t *extra, size_t extra_len, struct bcd_tpm_attest *out)
{
	TPML_PCR_SELECTION sel;
	TPM2B_DATA qd = {.size = 0};
	ESYS_TR ak = ESYS_TR_NONE;
	struct bcd_tpm_ak akinfo;
	EVP_PKEY *akkey = NULL;
	int rc, same = 0;

	memset(out, 0, sizeof(*out));
	if ((rc = selection(t, hash_alg, pcrs, n, &sel)) != 0)
		return rc;
	if ((extra == NULL && extra_len > 0) || extra_len > 64) {
		bcd_tpmi_say(t, "quote: extraData of %zu bytes (at most 64)", extra_len);
		return BC_ERR_INVALID;
	}
	qd.size = (UINT16)extra_len;
	if (extra_len > 0)
		memcpy(qd.buffer, extra, extra_len);
	if ((rc = bcd_tpmi_ak_load(t, &ak, &akinfo, &akkey)) != 0)
		goto out;
	for (int i = 0; i < QUOTE_TRIES && rc == 0 && !same; i++) {
		bcd_tpm_attest_free(out);
		rc = quote_once(t, ak, akkey, &sel, &qd, out, &same);
	}
	if (rc == 0 && !same) {
		bcd_tpmi_say(t, "Quote: the PCRs kept changing while they were read and quoted");
		rc = BC_ERR_RETRY;
	}
	memcpy(out->ak_name, akinfo.name, sizeof(out->ak_name));
	out->pcr_hash_alg = hash_alg;
out:
	bcd_tpmi_flush(t, &ak);
	EVP_PKEY_free(akkey);
	if (rc != 0)
		bcd_tpm_attest_free(out);
	return rc;
}
