/* The node key in the TPM: derived from its 32-byte unique, signing digests and CSRs,
 * certified by the AK. node.key's record of it is in tpm_record.c. */
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "agent/tpm_internal.h"
#include "bc/buf.h"
#include "bc/crypto.h"

#define NODE_KEY_ATTRIBUTES                                                                        \
	(TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN |        \
	 TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_SIGN_ENCRYPT)
#define CN_MAX 255

struct bcd_tpm_nodekey {
	struct bcd_tpm *t;
	ESYS_TR h;
	uint8_t pub[BCD_TPM_PUBLIC_MAX];
	size_t pub_len;
	uint8_t name[BCD_TPM_NAME_LEN];
	EVP_PKEY *pkey;
};

int bcd_tpm_unique_new(uint8_t unique[static BCD_TPM_UNIQUE_LEN])
{
	return bc_random(unique, BCD_TPM_UNIQUE_LEN);
}

/* The template; the unique is the key's seed, so it goes in x and y stays empty. */
static void nodekey_template(const uint8_t unique[static BCD_TPM_UNIQUE_LEN], TPMT_PUBLIC *p)
{
	memset(p, 0, sizeof(*p));
	p->type = TPM2_ALG_ECC;
	p->nameAlg = TPM2_ALG_SHA256;
	p->objectAttributes = NODE_KEY_ATTRIBUTES;
	p->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
	p->parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
	p->parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
	p->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
	p->unique.ecc.x.size = BCD_TPM_UNIQUE_LEN;
	memcpy(p->unique.ecc.x.buffer, unique, BCD_TPM_UNIQUE_LEN);
}

int bcd_tpm_nodekey_load(struct bcd_tpm *t, const uint8_t unique[static BCD_TPM_UNIQUE_LEN],
                         struct bcd_tpm_nodekey **out)
{
	struct bcd_tpm_nodekey *k = NULL;
	TPMT_PUBLIC tmpl, pub;
	int rc;

	*out = NULL;
	if ((k = calloc(1, sizeof(*k))) == NULL)
		return BC_ERR_NOMEM;
	k->t = t;
	k->h = ESYS_TR_NONE;
	nodekey_template(unique, &tmpl);
	rc = bcd_tpmi_primary(t, ESYS_TR_RH_OWNER, &tmpl, "CreatePrimary (node key)", &k->h, &pub);
	OPENSSL_cleanse(&tmpl, sizeof(tmpl));
	if (rc != 0)
		goto out;
	if ((rc = bcd_tpmi_public_bytes(&pub, k->pub, &k->pub_len, k->name)) != 0 ||
	    (rc = bcd_tpmi_pkey(&pub, &k->pkey)) != 0) {
		bcd_tpmi_say(t, "the node key's public area: %s", bc_err_str(rc));
		goto out;
	}
	*out = k;
	k = NULL;
out:
	bcd_tpm_nodekey_free(k);
	return rc;
}

void bcd_tpm_nodekey_free(struct bcd_tpm_nodekey *k)
{
	if (k == NULL)
		return;
	bcd_tpmi_flush(k->t, &k->h);
	EVP_PKEY_free(k->pkey);
	free(k);
}

EVP_PKEY *bcd_tpm_nodekey_pkey(const struct bcd_tpm_nodekey *k)
{
	return k->pkey;
}

const uint8_t *bcd_tpm_nodekey_public(const struct bcd_tpm_nodekey *k, size_t *len)
{
	*len = k->pub_len;
	return k->pub;
}

const uint8_t *bcd_tpm_nodekey_name(const struct bcd_tpm_nodekey *k)
{
	return k->name;
}

static int same_tpm(struct bcd_tpm *t, const struct bcd_tpm_nodekey *k)
{
	return t != NULL && k != NULL && k->t == t && k->h != ESYS_TR_NONE;
}

int bcd_tpm_nodekey_sign(struct bcd_tpm *t, struct bcd_tpm_nodekey *k, const uint8_t *digest,
                         size_t len, uint8_t sig[static 64])
{
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_ECDSA};
	TPMT_TK_HASHCHECK none = {.tag = TPM2_ST_HASHCHECK, .hierarchy = TPM2_RH_NULL};
	TPMT_SIGNATURE *s = NULL;
	TPM2B_DIGEST d;
	int rc;

	memset(sig, 0, 64);
	if (!same_tpm(t, k) || digest == NULL)
		return BC_ERR_INVALID;
	switch (len) {
	case 32: scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256; break;
	case 48: scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA384; break;
	case 64: scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA512; break;
	default:
		bcd_tpmi_say(t, "sign: a digest of %zu bytes (32, 48 or 64)", len);
		return BC_ERR_INVALID;
	}
	d.size = (UINT16)len;
	memcpy(d.buffer, digest, len);
	if ((rc = bcd_tpmi_rc(t,
	                      Esys_Sign(t->esys, k->h, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
	                                &d, &scheme, &none, &s),
	                      "Sign (node key)")) != 0)
		return rc;
	if ((rc = bcd_tpmi_ecdsa_p1363(s, scheme.details.ecdsa.hashAlg, sig)) != 0) {
		bcd_tpmi_say(t,
		             "Sign (node key): the TPM's answer is not an ECDSA P-256 signature");
		memset(sig, 0, 64);
	}
	Esys_Free(s);
	return rc;
}

/* The request's to-be-signed part: subject CN = cn and the key, as bc_csr_make. */
static int csr_body(X509_REQ *req, EVP_PKEY *key, const char *cn)
{
	X509_NAME *name;

	if (X509_REQ_set_version(req, X509_REQ_VERSION_1) != 1 ||
	    (name = X509_REQ_get_subject_name(req)) == NULL ||
	    X509_NAME_add_entry_by_NID(name, NID_commonName, V_ASN1_UTF8STRING,
	                               (const unsigned char *)cn, (int)strlen(cn), -1, 0) != 1 ||
	    X509_REQ_set_pubkey(req, key) != 1)
		return bc_ossl_err();
	return 0;
}

/* Signs the to-be-signed part through sign and sets the signature and its algorithm. */
static int csr_sign(const struct bc_signer *s, X509_REQ *req)
{
	unsigned char *tbs = NULL;
	uint8_t digest[32], rs[64], *der = NULL;
	size_t derlen = 0;
	X509_ALGOR *alg = NULL;
	ASN1_BIT_STRING *bits = NULL;
	int n, rc;

	if ((n = i2d_re_X509_REQ_tbs(req, &tbs)) <= 0)
		return bc_ossl_err();
	rc = bc_sha256(tbs, (size_t)n, digest);
	OPENSSL_free(tbs);
	if (rc != 0 || (rc = s->fn(s->ctx, digest, rs)) != 0 ||
	    (rc = bc_ecdsa_p1363_to_der(rs, &der, &derlen)) != 0)
		goto out;
	if ((alg = X509_ALGOR_new()) == NULL ||
	    X509_ALGOR_set0(alg, OBJ_nid2obj(NID_ecdsa_with_SHA256), V_ASN1_UNDEF, NULL) != 1 ||
	    X509_REQ_set1_signature_algo(req, alg) != 1 || (bits = ASN1_BIT_STRING_new()) == NULL ||
	    ASN1_BIT_STRING_set(bits, der, (int)derlen) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	/* a signature is whole bytes: no unused bits (as OpenSSL's own signing sets it) */
	bits->flags &= ~(ASN1_STRING_FLAG_BITS_LEFT | 0x07);
	bits->flags |= ASN1_STRING_FLAG_BITS_LEFT;
	X509_REQ_set0_signature(req, bits);
	bits = NULL;
out:
	ASN1_BIT_STRING_free(bits);
	X509_ALGOR_free(alg);
	free(der);
	return rc;
}

int bcd_csr_signed(const struct bc_signer *s, const char *cn, uint8_t **der, size_t *len)
{
	EVP_PKEY *pub = s != NULL ? s->key : NULL;
	X509_REQ *req = NULL;
	unsigned char *p;
	size_t cnlen;
	int n, rc;

	*der = NULL;
	*len = 0;
	if (pub == NULL || s->fn == NULL || cn == NULL || (cnlen = strlen(cn)) == 0 ||
	    cnlen > CN_MAX)
		return BC_ERR_INVALID;
	if ((req = X509_REQ_new()) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = csr_body(req, pub, cn)) != 0 || (rc = csr_sign(s, req)) != 0)
		goto out;
	if (X509_REQ_verify(req, pub) != 1) {
		rc = BC_ERR_VERIFY;
		goto out;
	}
	if ((n = i2d_X509_REQ(req, NULL)) <= 0) {
		rc = bc_ossl_err();
		goto out;
	}
	if ((*der = malloc((size_t)n)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	p = *der;
	if (i2d_X509_REQ(req, &p) != n) {
		free(*der);
		*der = NULL;
		rc = bc_ossl_err();
		goto out;
	}
	*len = (size_t)n;
out:
	X509_REQ_free(req);
	ERR_clear_error();
	return rc;
}

struct tpm_signer {
	struct bcd_tpm *t;
	struct bcd_tpm_nodekey *k;
};

static int tpm_sign_digest(void *ctx, const uint8_t digest[static 32], uint8_t sig[static 64])
{
	struct tpm_signer *s = ctx;

	return bcd_tpm_nodekey_sign(s->t, s->k, digest, 32, sig);
}

int bcd_tpm_nodekey_csr(struct bcd_tpm *t, struct bcd_tpm_nodekey *k, const char *cn, uint8_t **der,
                        size_t *len)
{
	struct tpm_signer ts = {.t = t, .k = k};
	struct bc_signer s = {.key = NULL};
	int rc;

	*der = NULL;
	*len = 0;
	if (!same_tpm(t, k))
		return BC_ERR_INVALID;
	if ((rc = bc_signer_init(&s, k->pkey, tpm_sign_digest, &ts)) != 0)
		return rc;
	if ((rc = bcd_csr_signed(&s, cn, der, len)) == BC_ERR_VERIFY)
		bcd_tpmi_say(t, "CSR: the TPM-signed request does not verify");
	return rc;
}

int bcd_tpm_certify(struct bcd_tpm *t, struct bcd_tpm_nodekey *k, const uint8_t *qualifying,
                    size_t len, struct bcd_tpm_attest *out)
{
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPM2B_DATA qd = {.size = 0};
	TPM2B_ATTEST *info = NULL;
	TPMT_SIGNATURE *sig = NULL;
	ESYS_TR ak = ESYS_TR_NONE;
	struct bcd_tpm_ak akinfo;
	EVP_PKEY *akkey = NULL;
	TPMS_ATTEST parsed;
	const TPM2B_NAME *nm;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!same_tpm(t, k) || (qualifying == NULL && len > 0) || len > 64)
		return BC_ERR_INVALID;
	qd.size = (UINT16)len;
	if (len > 0)
		memcpy(qd.buffer, qualifying, len);
	if ((rc = bcd_tpmi_ak_load(t, &ak, &akinfo, &akkey)) != 0)
		goto out;
	if ((rc = bcd_tpmi_rc(t,
	                      Esys_Certify(t->esys, k->h, ak, ESYS_TR_PASSWORD, ESYS_TR_PASSWORD,
	                                   ESYS_TR_NONE, &qd, &scheme, &info, &sig),
	                      "Certify (node key by the AK)")) != 0)
		goto out;
	if ((rc = bcd_tpmi_attest_take(t, info, sig, akkey, TPM2_ST_ATTEST_CERTIFY, &qd, &parsed,
	                               out)) != 0)
		goto out;
	nm = &parsed.attested.certify.name;
	if (nm->size != BCD_TPM_NAME_LEN || memcmp(nm->name, k->name, BCD_TPM_NAME_LEN) != 0) {
		bcd_tpmi_say(t,
		             "Certify: the certification names another object than the node key");
		rc = BC_ERR_INVALID;
		goto out;
	}
	memcpy(out->ak_name, akinfo.name, sizeof(out->ak_name));
out:
	Esys_Free(info);
	Esys_Free(sig);
	bcd_tpmi_flush(t, &ak);
	EVP_PKEY_free(akkey);
	if (rc != 0)
		bcd_tpm_attest_free(out);
	return rc;
}
