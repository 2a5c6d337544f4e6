/* bcd's TPM client: the connection, the TSS2 error adapter, primaries derived from
 * templates, and the AK. The EK and ActivateCredential are in tpm_ek.c, quotes in
 * tpm_quote.c, node keys in tpm_nodekey.c. */
#include <openssl/err.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

#include "agent/tpm_internal.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "tpm/tpm.h"

#define TCTI_MAX          512
#define NV_BUFFER_DEFAULT 512

/* Attributes of the AK (shared/notes/TPM.md): an attestation key, and noDA since its
 * authorization is empty. */
#define AK_ATTRIBUTES                                                                              \
	(TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN |        \
	 TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_RESTRICTED |                    \
	 TPMA_OBJECT_SIGN_ENCRYPT)

const char *bcd_tpm_error(const struct bcd_tpm *t)
{
	return t != NULL ? t->err : "no TPM";
}

uint32_t bcd_tpm_last_rc(const struct bcd_tpm *t)
{
	return t != NULL ? t->last_rc : 0;
}

void bcd_tpmi_say(struct bcd_tpm *t, const char *fmt, ...)
{
	va_list ap;

	t->last_rc = 0;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
}

/* The code's meaning for us: which layer failed, and how. */
static int map_rc(TSS2_RC rc)
{
	TSS2_RC layer = rc & TSS2_RC_LAYER_MASK, base = rc & 0xffffu;

	if (layer == TSS2_TCTI_RC_LAYER)
		return BC_ERR_UNAVAILABLE;
	if (layer == TSS2_TPM_RC_LAYER || layer == TSS2_RESMGR_TPM_RC_LAYER)
		return BC_ERR_IO;
	switch (base) {
	case TSS2_BASE_RC_MEMORY: return BC_ERR_NOMEM;
	case TSS2_BASE_RC_NO_CONNECTION:
	case TSS2_BASE_RC_IO_ERROR:
	case TSS2_BASE_RC_TRY_AGAIN:
	case TSS2_BASE_RC_NO_TPM: return BC_ERR_UNAVAILABLE;
	case TSS2_BASE_RC_MALFORMED_RESPONSE:
	case TSS2_BASE_RC_INSUFFICIENT_RESPONSE:
	case TSS2_BASE_RC_BAD_SIZE:
	case TSS2_BASE_RC_RSP_AUTH_FAILED: return BC_ERR_INVALID;
	default: return BC_ERR_IO;
	}
}

int bcd_tpmi_rc(struct bcd_tpm *t, TSS2_RC rc, const char *what)
{
	if (rc == TSS2_RC_SUCCESS)
		return 0;
	snprintf(t->err, sizeof(t->err), "%s: %s (0x%x)", what, Tss2_RC_Decode(rc), (unsigned)rc);
	t->last_rc = rc;
	return map_rc(rc);
}

void bcd_tpmi_flush(struct bcd_tpm *t, ESYS_TR *h)
{
	if (*h != ESYS_TR_NONE)
		(void)Esys_FlushContext(t->esys, *h);
	*h = ESYS_TR_NONE;
}

/* A TCTI string is config text: printable, bounded. */
static int tcti_valid(const char *tcti)
{
	size_t n;

	if (tcti == NULL || (n = strlen(tcti)) == 0 || n > TCTI_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (tcti[i] < 0x21 || tcti[i] > 0x7e)
			return 0;
	return 1;
}

/* The probe: the TPM answers, and says how much one NV_Read may take. */
static int probe(struct bcd_tpm *t)
{
	TPMS_CAPABILITY_DATA *cap = NULL;
	TPMI_YES_NO more = 0;
	int rc;

	rc = bcd_tpmi_rc(t,
	                 Esys_GetCapability(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
	                                    TPM2_CAP_TPM_PROPERTIES, TPM2_PT_NV_BUFFER_MAX, 1,
	                                    &more, &cap),
	                 "GetCapability");
	if (rc != 0)
		return rc;
	t->nv_max = NV_BUFFER_DEFAULT;
	if (cap->capability == TPM2_CAP_TPM_PROPERTIES && cap->data.tpmProperties.count >= 1 &&
	    cap->data.tpmProperties.tpmProperty[0].property == TPM2_PT_NV_BUFFER_MAX) {
		uint32_t v = cap->data.tpmProperties.tpmProperty[0].value;
		/* a TPM's answer, so bounded: at least 64, at most what a TPM2B_MAX_NV_BUFFER holds
		 */
		if (v >= 64 && v <= TPM2_MAX_NV_BUFFER_SIZE)
			t->nv_max = (uint16_t)v;
	}
	Esys_Free(cap);
	return 0;
}

int bcd_tpm_open(const char *tcti, struct bcd_tpm **out, char *err, size_t errlen)
{
	struct bcd_tpm *t = NULL;
	int rc;

	*out = NULL;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (!tcti_valid(tcti)) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "TPM: the TCTI is empty, too long or not printable");
		return BC_ERR_CONFIG;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return BC_ERR_NOMEM;
	rc = bcd_tpmi_rc(t, Tss2_TctiLdr_Initialize(tcti, &t->tcti), "cannot open the TCTI");
	if (rc == 0)
		rc = bcd_tpmi_rc(t, Esys_Initialize(&t->esys, t->tcti, NULL), "Esys_Initialize");
	if (rc == 0)
		rc = probe(t);
	if (rc != 0) {
		/* whatever the layer said, the caller's question is whether the TPM is there */
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "TPM at %s: cannot connect: %s", tcti, t->err);
		bcd_tpm_close(t);
		return rc == BC_ERR_NOMEM ? rc : BC_ERR_UNAVAILABLE;
	}
	*out = t;
	return 0;
}

void bcd_tpm_close(struct bcd_tpm *t)
{
	if (t == NULL)
		return;
	if (t->esys != NULL)
		Esys_Finalize(&t->esys);
	if (t->tcti != NULL)
		Tss2_TctiLdr_Finalize(&t->tcti);
	free(t);
}

/* The TPM's public area is the template's, but for unique, which has the sizes the
 * algorithm gives it (so a marshaled area stays within our bounds). */
static int public_matches(struct bcd_tpm *t, const TPMT_PUBLIC *tmpl, const TPMT_PUBLIC *got,
                          const char *what)
{
	uint8_t a[BCD_TPM_PUBLIC_MAX], b[BCD_TPM_PUBLIC_MAX], na[BCD_TPM_NAME_LEN];
	size_t alen, blen;
	TPMT_PUBLIC g = *got;
	int ok;

	if (g.type == TPM2_ALG_RSA)
		ok = g.unique.rsa.size == g.parameters.rsaDetail.keyBits / 8;
	else if (g.type == TPM2_ALG_ECC)
		ok = g.parameters.eccDetail.curveID == TPM2_ECC_NIST_P256 &&
		     g.unique.ecc.x.size == 32 && g.unique.ecc.y.size == 32;
	else
		ok = 0;
	g.unique = tmpl->unique;
	if (!ok || bcd_tpmi_public_bytes(tmpl, a, &alen, na) != 0 ||
	    bcd_tpmi_public_bytes(&g, b, &blen, na) != 0 || alen != blen ||
	    memcmp(a, b, alen) != 0) {
		bcd_tpmi_say(t,
		             "%s: the TPM returned a public area other than the template asked for",
		             what);
		return BC_ERR_INVALID;
	}
	return 0;
}

int bcd_tpmi_primary(struct bcd_tpm *t, ESYS_TR hierarchy, const TPMT_PUBLIC *tmpl,
                     const char *what, ESYS_TR *h, TPMT_PUBLIC *pub)
{
	TPM2B_SENSITIVE_CREATE sens;
	TPM2B_PUBLIC in;
	TPM2B_DATA outside = {.size = 0};
	TPML_PCR_SELECTION pcrs = {.count = 0};
	TPM2B_PUBLIC *out = NULL;
	int rc;

	*h = ESYS_TR_NONE;
	memset(&sens, 0, sizeof(sens));
	memset(&in, 0, sizeof(in));
	in.publicArea = *tmpl;
	rc = bcd_tpmi_rc(t,
	                 Esys_CreatePrimary(t->esys, hierarchy, ESYS_TR_PASSWORD, ESYS_TR_NONE,
	                                    ESYS_TR_NONE, &sens, &in, &outside, &pcrs, h, &out,
	                                    NULL, NULL, NULL),
	                 what);
	if (rc != 0) {
		*h = ESYS_TR_NONE;
		goto out;
	}
	if ((rc = public_matches(t, tmpl, &out->publicArea, what)) != 0)
		goto out;
	*pub = out->publicArea;
out:
	if (rc != 0)
		bcd_tpmi_flush(t, h);
	Esys_Free(out);
	return rc;
}

int bcd_tpmi_public_bytes(const TPMT_PUBLIC *pub, uint8_t out[static BCD_TPM_PUBLIC_MAX],
                          size_t *len, uint8_t name[static BCD_TPM_NAME_LEN])
{
	size_t off = 0;

	*len = 0;
	if (pub->nameAlg != TPM2_ALG_SHA256)
		return BC_ERR_UNSUPPORTED;
	if (Tss2_MU_TPMT_PUBLIC_Marshal(pub, out, BCD_TPM_PUBLIC_MAX, &off) != TSS2_RC_SUCCESS)
		return BC_ERR_LIMIT;
	name[0] = TPM2_ALG_SHA256 >> 8;
	name[1] = TPM2_ALG_SHA256 & 0xff;
	if (bc_sha256(out, off, name + 2) != 0)
		return BC_ERR_CRYPTO;
	*len = off;
	return 0;
}

int bcd_tpmi_pkey(const TPMT_PUBLIC *pub, EVP_PKEY **out)
{
	*out = NULL;
	/* what bcd's templates ask the TPM for: RSA 2048 or more, or P-256 */
	if (!(pub->type == TPM2_ALG_RSA && pub->parameters.rsaDetail.keyBits >= 2048) &&
	    !(pub->type == TPM2_ALG_ECC && pub->parameters.eccDetail.curveID == TPM2_ECC_NIST_P256))
		return BC_ERR_UNSUPPORTED;
	return bc_tpm_public_key(pub, out);
}

/* The AK's template: fixed, so the endorsement seed alone decides the key. */
static void ak_template(TPMT_PUBLIC *p)
{
	memset(p, 0, sizeof(*p));
	p->type = TPM2_ALG_ECC;
	p->nameAlg = TPM2_ALG_SHA256;
	p->objectAttributes = AK_ATTRIBUTES;
	p->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
	p->parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA;
	p->parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
	p->parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
	p->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
}

int bcd_tpmi_ak_load(struct bcd_tpm *t, ESYS_TR *h, struct bcd_tpm_ak *ak, EVP_PKEY **key)
{
	TPMT_PUBLIC tmpl, pub;
	int rc;

	*key = NULL;
	memset(ak, 0, sizeof(*ak));
	ak_template(&tmpl);
	if ((rc = bcd_tpmi_primary(t, ESYS_TR_RH_ENDORSEMENT, &tmpl, "CreatePrimary (AK)", h,
	                           &pub)) != 0)
		return rc;
	if ((rc = bcd_tpmi_public_bytes(&pub, ak->pub, &ak->pub_len, ak->name)) != 0 ||
	    (rc = bcd_tpmi_pkey(&pub, key)) != 0) {
		bcd_tpmi_say(t, "the AK's public area: %s", bc_err_str(rc));
		bcd_tpmi_flush(t, h);
	}
	return rc;
}

int bcd_tpm_ak(struct bcd_tpm *t, struct bcd_tpm_ak *out)
{
	ESYS_TR h = ESYS_TR_NONE;
	EVP_PKEY *key = NULL;
	int rc;

	rc = bcd_tpmi_ak_load(t, &h, out, &key);
	bcd_tpmi_flush(t, &h);
	EVP_PKEY_free(key);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}
