/* Public areas as OpenSSL keys, and TPMT_SIGNATURE verification over attest bytes. */
#include <openssl/err.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "tpm/tpm.h"

static int rsa_key(const TPMT_PUBLIC *pub, EVP_PKEY **out)
{
	const TPM2B_PUBLIC_KEY_RSA *n = &pub->unique.rsa;
	uint32_t e =
	    pub->parameters.rsaDetail.exponent ? pub->parameters.rsaDetail.exponent : 65537;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	BIGNUM *bn = NULL, *be = NULL;
	int rc = BC_ERR_CRYPTO;

	if (n->size * 8u != pub->parameters.rsaDetail.keyBits || e < 3 || (e & 1) == 0)
		return BC_ERR_INVALID;
	if ((bn = BN_bin2bn(n->buffer, n->size, NULL)) == NULL || (be = BN_new()) == NULL ||
	    BN_set_word(be, e) != 1 || (bld = OSSL_PARAM_BLD_new()) == NULL ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) != 1 ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) != 1 ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    (ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	/* the modulus' top bit set: keyBits is its real size */
	rc = BN_num_bits(bn) == (int)pub->parameters.rsaDetail.keyBits ? 0 : BC_ERR_INVALID;
out:
	if (rc != 0) {
		EVP_PKEY_free(*out);
		*out = NULL;
	}
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	return rc;
}

static int ecc_key(const TPMT_PUBLIC *pub, EVP_PKEY **out)
{
	const TPMS_ECC_POINT *q = &pub->unique.ecc;
	const char *group;
	uint8_t point[1 + 2 * 48];
	size_t fs;
	EVP_PKEY_CTX *ctx = NULL, *chk = NULL;
	OSSL_PARAM params[3];
	int rc = BC_ERR_CRYPTO;

	if (pub->parameters.eccDetail.curveID == TPM2_ECC_NIST_P256) {
		group = "prime256v1";
		fs = 32;
	} else if (pub->parameters.eccDetail.curveID == TPM2_ECC_NIST_P384) {
		group = "secp384r1";
		fs = 48;
	} else {
		return BC_ERR_INVALID;
	}
	/* the TPM writes coordinates at full size; accept nothing longer */
	if (q->x.size == 0 || q->y.size == 0 || q->x.size > fs || q->y.size > fs)
		return BC_ERR_INVALID;
	memset(point, 0, sizeof(point));
	point[0] = 0x04;
	memcpy(point + 1 + fs - q->x.size, q->x.buffer, q->x.size);
	memcpy(point + 1 + 2 * fs - q->y.size, q->y.buffer, q->y.size);
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, 1 + 2 * fs);
	params[2] = OSSL_PARAM_construct_end();
	if ((ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) != 1) {
		/* an invalid point is the input's fault */
		ERR_clear_error();
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((chk = EVP_PKEY_CTX_new_from_pkey(NULL, *out, NULL)) == NULL ||
	    EVP_PKEY_public_check(chk) != 1) {
		ERR_clear_error();
		rc = BC_ERR_INVALID;
		goto out;
	}
	rc = 0;
out:
	if (rc != 0) {
		EVP_PKEY_free(*out);
		*out = NULL;
	}
	EVP_PKEY_CTX_free(chk);
	EVP_PKEY_CTX_free(ctx);
	return rc;
}

int bc_tpm_public_key(const TPMT_PUBLIC *pub, EVP_PKEY **out)
{
	*out = NULL;
	switch (pub->type) {
	case TPM2_ALG_RSA: return rsa_key(pub, out);
	case TPM2_ALG_ECC: return ecc_key(pub, out);
	default: return BC_ERR_INVALID;
	}
}

int bc_tpm_signature_verify(EVP_PKEY *key, const TPMT_SIGNATURE *sig, const uint8_t *msg,
                            size_t len)
{
	uint8_t digest[EVP_MAX_MD_SIZE], *der = NULL;
	const uint8_t *s;
	unsigned int dlen = 0;
	size_t slen;
	size_t derlen = 0;
	int rc = BC_ERR_VERIFY, is_rsa = EVP_PKEY_is_a(key, "RSA");
	EVP_PKEY_CTX *ctx = NULL;
	const EVP_MD *md;

	switch (sig->sigAlg) {
	case TPM2_ALG_RSASSA:
	case TPM2_ALG_RSAPSS:
		if (!is_rsa)
			return BC_ERR_VERIFY;
		md = bc_tpm_md(sig->signature.rsassa.hash);
		s = sig->signature.rsassa.sig.buffer;
		slen = sig->signature.rsassa.sig.size;
		break;
	case TPM2_ALG_ECDSA:
		if (!EVP_PKEY_is_a(key, "EC"))
			return BC_ERR_VERIFY;
		md = bc_tpm_md(sig->signature.ecdsa.hash);
		/* r and s as the DER ECDSA-Sig-Value OpenSSL verifies */
		if ((rc = bc_ecdsa_rs_to_der(sig->signature.ecdsa.signatureR.buffer,
		                             sig->signature.ecdsa.signatureR.size,
		                             sig->signature.ecdsa.signatureS.buffer,
		                             sig->signature.ecdsa.signatureS.size, &der,
		                             &derlen)) != 0)
			return rc == BC_ERR_INVALID ? BC_ERR_VERIFY : rc;
		s = der;
		slen = derlen;
		break;
	default: return BC_ERR_VERIFY;
	}
	rc = BC_ERR_VERIFY;
	if (md == NULL)
		goto out;
	if (EVP_Digest(msg, len, digest, &dlen, md, NULL) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL)) == NULL ||
	    EVP_PKEY_verify_init(ctx) != 1 || EVP_PKEY_CTX_set_signature_md(ctx, md) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	if (sig->sigAlg == TPM2_ALG_RSAPSS &&
	    (EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PSS_PADDING) != 1 ||
	     EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_AUTO) != 1)) {
		rc = bc_ossl_err();
		goto out;
	}
	if (sig->sigAlg == TPM2_ALG_RSASSA &&
	    EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = EVP_PKEY_verify(ctx, s, slen, digest, dlen) == 1 ? 0 : BC_ERR_VERIFY;
	if (rc != 0)
		ERR_clear_error();
out:
	EVP_PKEY_CTX_free(ctx);
	free(der);
	return rc;
}
