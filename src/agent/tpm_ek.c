/* The endorsement key from the TCG default templates (EK Credential Profile, low range),
 * its certificate from NV, and ActivateCredential under it. */
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <tss2/tss2_mu.h>

#include "agent/tpm_internal.h"
#include "bc/buf.h"
#include "bc/crypto.h"

/* fixedTPM, fixedParent, sensitiveDataOrigin, adminWithPolicy, restricted, decrypt */
#define EK_ATTRIBUTES 0x000300B2u

/* PolicySecret(TPM_RH_ENDORSEMENT): the default EK's authPolicy. */
static const uint8_t ek_policy[32] = {
    0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xB3, 0xF8, 0x1A, 0x90, 0xCC, 0x8D, 0x46, 0xA5, 0xD7, 0x24,
    0xFD, 0x52, 0xD7, 0x6E, 0x06, 0x52, 0x0B, 0x64, 0xF2, 0xA1, 0xDA, 0x1B, 0x33, 0x14, 0x69, 0xAA};

static void ek_template(enum bcd_tpm_ek_type type, TPMT_PUBLIC *p)
{
	memset(p, 0, sizeof(*p));
	p->nameAlg = TPM2_ALG_SHA256;
	p->objectAttributes = EK_ATTRIBUTES;
	p->authPolicy.size = sizeof(ek_policy);
	memcpy(p->authPolicy.buffer, ek_policy, sizeof(ek_policy));
	if (type == BCD_TPM_EK_ECC_P256) {
		/* L-2: unique x and y of 32 zero bytes */
		p->type = TPM2_ALG_ECC;
		p->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
		p->parameters.eccDetail.symmetric.keyBits.aes = 128;
		p->parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
		p->parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
		p->parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
		p->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
		p->unique.ecc.x.size = 32;
		p->unique.ecc.y.size = 32;
	} else {
		/* L-1: exponent 0 (65537), unique 256 zero bytes */
		p->type = TPM2_ALG_RSA;
		p->parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_AES;
		p->parameters.rsaDetail.symmetric.keyBits.aes = 128;
		p->parameters.rsaDetail.symmetric.mode.aes = TPM2_ALG_CFB;
		p->parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
		p->parameters.rsaDetail.keyBits = 2048;
		p->parameters.rsaDetail.exponent = 0;
		p->unique.rsa.size = 256;
	}
}

static int ek_load(struct bcd_tpm *t, enum bcd_tpm_ek_type type, ESYS_TR *h, TPMT_PUBLIC *pub)
{
	TPMT_PUBLIC tmpl;

	*h = ESYS_TR_NONE;
	if (type != BCD_TPM_EK_RSA2048 && type != BCD_TPM_EK_ECC_P256) {
		bcd_tpmi_say(t, "EK: unknown type %d", (int)type);
		return BC_ERR_INVALID;
	}
	ek_template(type, &tmpl);
	return bcd_tpmi_primary(t, ESYS_TR_RH_ENDORSEMENT, &tmpl, "CreatePrimary (EK)", h, pub);
}

/* A TPM_RC_HANDLE: no such NV index. */
static int no_such_handle(TSS2_RC rc)
{
	return (rc & TSS2_RC_LAYER_MASK) == TSS2_TPM_RC_LAYER && (rc & TPM2_RC_FMT1) != 0 &&
	       (rc & 0x3f) == (TPM2_RC_HANDLE & 0x3f);
}

/* The NV index's bytes, size bounded, read in chunks the TPM takes. */
static int nv_read(struct bcd_tpm *t, ESYS_TR nv, uint8_t **out, size_t *len)
{
	TPM2B_NV_PUBLIC *np = NULL;
	TPM2B_MAX_NV_BUFFER *data = NULL;
	ESYS_TR auth;
	uint8_t *buf = NULL;
	uint16_t size, off = 0;
	int rc;

	*out = NULL;
	*len = 0;
	if ((rc = bcd_tpmi_rc(t,
	                      Esys_NV_ReadPublic(t->esys, nv, ESYS_TR_NONE, ESYS_TR_NONE,
	                                         ESYS_TR_NONE, &np, NULL),
	                      "NV_ReadPublic (EK certificate)")) != 0)
		return rc;
	size = np->nvPublic.dataSize;
	if (np->nvPublic.attributes & TPMA_NV_AUTHREAD)
		auth = nv;
	else if (np->nvPublic.attributes & TPMA_NV_OWNERREAD)
		auth = ESYS_TR_RH_OWNER;
	else
		auth = ESYS_TR_NONE;
	Esys_Free(np);
	if (size == 0 || size > BCD_TPM_EK_CERT_MAX || auth == ESYS_TR_NONE) {
		bcd_tpmi_say(t, "EK certificate: an NV index of %u bytes that we cannot read",
		             (unsigned)size);
		return BC_ERR_INVALID;
	}
	if ((buf = malloc(size)) == NULL)
		return BC_ERR_NOMEM;
	while (off < size) {
		uint16_t n =
		    (uint16_t)(size - off) < t->nv_max ? (uint16_t)(size - off) : t->nv_max;

		if ((rc = bcd_tpmi_rc(t,
		                      Esys_NV_Read(t->esys, auth, nv, ESYS_TR_PASSWORD,
		                                   ESYS_TR_NONE, ESYS_TR_NONE, n, off, &data),
		                      "NV_Read (EK certificate)")) != 0)
			goto out;
		if (data->size != n) {
			bcd_tpmi_say(t,
			             "NV_Read (EK certificate): %u bytes where %u were asked for",
			             (unsigned)data->size, (unsigned)n);
			rc = BC_ERR_INVALID;
			goto out;
		}
		memcpy(buf + off, data->buffer, n);
		off += n;
		Esys_Free(data);
		data = NULL;
	}
	*out = buf;
	*len = size;
	buf = NULL;
out:
	Esys_Free(data);
	free(buf);
	return rc;
}

/* One certificate DER at the start of raw (NV areas may be padded after it) whose key
 * is ek: BC_ERR_NOT_FOUND when the index holds another key's certificate. */
static int cert_for(struct bcd_tpm *t, uint32_t index, const uint8_t *raw, size_t len, EVP_PKEY *ek,
                    uint8_t **der, size_t *der_len)
{
	const unsigned char *p = raw;
	X509 *x;
	int rc = 0;

	if ((x = d2i_X509(NULL, &p, (long)len)) == NULL) {
		bcd_tpmi_say(t, "EK certificate at 0x%08X: not a DER certificate", index);
		return BC_ERR_INVALID;
	}
	if (EVP_PKEY_eq(X509_get0_pubkey(x), ek) != 1) {
		bcd_tpmi_say(t, "EK certificate at 0x%08X: certifies another key than this EK",
		             index);
		rc = BC_ERR_NOT_FOUND;
	} else if ((*der = malloc((size_t)(p - raw))) == NULL) {
		rc = BC_ERR_NOMEM;
	} else {
		memcpy(*der, raw, (size_t)(p - raw));
		*der_len = (size_t)(p - raw);
	}
	X509_free(x);
	return rc;
}

/* The EK certificate at index, BC_ERR_NOT_FOUND when there is none for this EK. */
static int ek_cert_at(struct bcd_tpm *t, uint32_t index, EVP_PKEY *ek, uint8_t **der, size_t *len)
{
	ESYS_TR nv = ESYS_TR_NONE;
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	TSS2_RC trc;
	int rc;

	trc = Esys_TR_FromTPMPublic(t->esys, index, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &nv);
	if (no_such_handle(trc)) {
		bcd_tpmi_say(t, "no EK certificate at NV index 0x%08X", index);
		return BC_ERR_NOT_FOUND;
	}
	if ((rc = bcd_tpmi_rc(t, trc, "TR_FromTPMPublic (EK certificate)")) != 0)
		return rc;
	if ((rc = nv_read(t, nv, &raw, &rawlen)) == 0)
		rc = cert_for(t, index, raw, rawlen, ek, der, len);
	free(raw);
	/* an NV index is no transient object: close the ESYS handle, do not flush */
	(void)Esys_TR_Close(t->esys, &nv);
	return rc;
}

int bcd_tpm_ek(struct bcd_tpm *t, enum bcd_tpm_ek_type type, struct bcd_tpm_ek *out)
{
	static const uint32_t rsa_idx[] = {BCD_TPM_NV_EK_CERT_RSA2048};
	static const uint32_t ecc_idx[] = {BCD_TPM_NV_EK_CERT_ECC_P256,
	                                   BCD_TPM_NV_EK_CERT_ECC_P384_H};
	const uint32_t *idx = type == BCD_TPM_EK_ECC_P256 ? ecc_idx : rsa_idx;
	size_t n_idx = type == BCD_TPM_EK_ECC_P256 ? 2 : 1;
	uint8_t name[BCD_TPM_NAME_LEN];
	ESYS_TR h = ESYS_TR_NONE;
	EVP_PKEY *key = NULL;
	TPMT_PUBLIC pub;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = ek_load(t, type, &h, &pub)) != 0)
		return rc;
	bcd_tpmi_flush(t, &h);
	if ((rc = bcd_tpmi_public_bytes(&pub, out->pub, &out->pub_len, name)) != 0 ||
	    (rc = bcd_tpmi_pkey(&pub, &key)) != 0) {
		bcd_tpmi_say(t, "the EK's public area: %s", bc_err_str(rc));
		goto out;
	}
	/* a missing certificate is normal: rc stays NOT_FOUND only while we look */
	rc = BC_ERR_NOT_FOUND;
	for (size_t i = 0; i < n_idx && rc == BC_ERR_NOT_FOUND; i++)
		rc = ek_cert_at(t, idx[i], key, &out->cert, &out->cert_len);
	if (rc == BC_ERR_NOT_FOUND)
		rc = 0;
out:
	EVP_PKEY_free(key);
	if (rc != 0)
		bcd_tpm_ek_free(out);
	return rc;
}

void bcd_tpm_ek_free(struct bcd_tpm_ek *ek)
{
	if (ek == NULL)
		return;
	free(ek->cert);
	memset(ek, 0, sizeof(*ek));
}

/* A policy session satisfied by PolicySecret(TPM_RH_ENDORSEMENT): the EK's policy. */
static int ek_policy_session(struct bcd_tpm *t, ESYS_TR *s)
{
	TPMT_SYM_DEF sym = {.algorithm = TPM2_ALG_NULL};
	int rc;

	*s = ESYS_TR_NONE;
	rc = bcd_tpmi_rc(t,
	                 Esys_StartAuthSession(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
	                                       ESYS_TR_NONE, ESYS_TR_NONE, NULL, TPM2_SE_POLICY,
	                                       &sym, TPM2_ALG_SHA256, s),
	                 "StartAuthSession (policy)");
	if (rc != 0) {
		*s = ESYS_TR_NONE;
		return rc;
	}
	rc = bcd_tpmi_rc(t,
	                 Esys_PolicySecret(t->esys, ESYS_TR_RH_ENDORSEMENT, *s, ESYS_TR_PASSWORD,
	                                   ESYS_TR_NONE, ESYS_TR_NONE, NULL, NULL, NULL, 0, NULL,
	                                   NULL),
	                 "PolicySecret (endorsement)");
	if (rc != 0)
		bcd_tpmi_flush(t, s);
	return rc;
}

/* The challenge's two TPM2Bs, exactly. */
static int parse_challenge(struct bcd_tpm *t, const uint8_t *id_object, size_t id_len,
                           const uint8_t *enc_secret, size_t enc_len, TPM2B_ID_OBJECT *cred,
                           TPM2B_ENCRYPTED_SECRET *sec)
{
	size_t off = 0;

	if (id_object == NULL || enc_secret == NULL)
		return BC_ERR_INVALID;
	if (Tss2_MU_TPM2B_ID_OBJECT_Unmarshal(id_object, id_len, &off, cred) != TSS2_RC_SUCCESS ||
	    cred->size == 0) {
		bcd_tpmi_say(t, "the credential blob is not a TPM2B_ID_OBJECT");
		return BC_ERR_INVALID;
	}
	if (off != id_len) {
		bcd_tpmi_say(t, "the credential blob has bytes after its TPM2B_ID_OBJECT");
		return BC_ERR_TRAILING;
	}
	off = 0;
	if (Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal(enc_secret, enc_len, &off, sec) !=
	        TSS2_RC_SUCCESS ||
	    sec->size == 0) {
		bcd_tpmi_say(t, "the encrypted secret is not a TPM2B_ENCRYPTED_SECRET");
		return BC_ERR_INVALID;
	}
	if (off != enc_len) {
		bcd_tpmi_say(t, "the encrypted secret has bytes after its TPM2B_ENCRYPTED_SECRET");
		return BC_ERR_TRAILING;
	}
	return 0;
}

int bcd_tpm_activate(struct bcd_tpm *t, enum bcd_tpm_ek_type ek_type, const uint8_t *id_object,
                     size_t id_len, const uint8_t *enc_secret, size_t enc_len, uint8_t **secret,
                     size_t *secret_len)
{
	ESYS_TR ek = ESYS_TR_NONE, ak = ESYS_TR_NONE, s = ESYS_TR_NONE;
	TPM2B_ID_OBJECT cred;
	TPM2B_ENCRYPTED_SECRET sec;
	TPM2B_DIGEST *cv = NULL;
	struct bcd_tpm_ak akinfo;
	EVP_PKEY *akkey = NULL;
	TPMT_PUBLIC ekpub;
	int rc;

	*secret = NULL;
	*secret_len = 0;
	if ((rc = parse_challenge(t, id_object, id_len, enc_secret, enc_len, &cred, &sec)) != 0)
		return rc;
	/* three slots: the EK, the AK and the session */
	if ((rc = ek_load(t, ek_type, &ek, &ekpub)) != 0 ||
	    (rc = bcd_tpmi_ak_load(t, &ak, &akinfo, &akkey)) != 0 ||
	    (rc = ek_policy_session(t, &s)) != 0)
		goto out;
	if ((rc = bcd_tpmi_rc(t,
	                      Esys_ActivateCredential(t->esys, ak, ek, ESYS_TR_PASSWORD, s,
	                                              ESYS_TR_NONE, &cred, &sec, &cv),
	                      "ActivateCredential")) != 0)
		goto out;
	if (cv->size == 0 || cv->size > 64) {
		bcd_tpmi_say(t, "ActivateCredential: a secret of %u bytes", (unsigned)cv->size);
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((*secret = malloc(cv->size)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	memcpy(*secret, cv->buffer, cv->size);
	*secret_len = cv->size;
out:
	if (cv != NULL) {
		OPENSSL_cleanse(cv, sizeof(*cv));
		Esys_Free(cv);
	}
	bcd_tpmi_flush(t, &s);
	bcd_tpmi_flush(t, &ak);
	bcd_tpmi_flush(t, &ek);
	EVP_PKEY_free(akkey);
	return rc;
}
