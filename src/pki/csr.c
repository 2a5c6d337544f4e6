/* PKCS#10 CSRs: the one check of an untrusted CSR, and making one. */
#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

#define CN_MAX 255

/* The CSR's key, refused unless its SPKI says id-ecPublicKey on the named
 * curve P-256 (explicit curve parameters are refused too). */
static int csr_key(X509_REQ *req, EVP_PKEY **out)
{
	X509_PUBKEY *xpk;
	ASN1_OBJECT *alg = NULL;
	X509_ALGOR *algor = NULL;
	const void *param = NULL;
	unsigned char *spki = NULL;
	int ptype = 0, n, rc;

	*out = NULL;
	if ((xpk = X509_REQ_get_X509_PUBKEY(req)) == NULL)
		return BC_ERR_INVALID;
	if (X509_PUBKEY_get0_param(&alg, NULL, NULL, &algor, xpk) != 1 ||
	    OBJ_obj2nid(alg) != NID_X9_62_id_ecPublicKey)
		return BC_ERR_INVALID;
	X509_ALGOR_get0(NULL, &ptype, &param, algor);
	if (ptype != V_ASN1_OBJECT || OBJ_obj2nid(param) != NID_X9_62_prime256v1)
		return BC_ERR_INVALID;
	if ((n = i2d_X509_PUBKEY(xpk, &spki)) <= 0)
		return BC_ERR_INVALID;
	rc = bc_key_from_spki(spki, (size_t)n, out);
	OPENSSL_free(spki);
	return rc;
}

/* ECDSA over SHA-256 or longer: a SHA-1 signature (collisions are practical) or any
 * other algorithm is refused. */
static int csr_sig_alg_ok(const X509_REQ *req)
{
	const X509_ALGOR *alg = NULL;
	const ASN1_OBJECT *oid = NULL;

	X509_REQ_get0_signature(req, NULL, &alg);
	if (alg == NULL)
		return 0;
	X509_ALGOR_get0(&oid, NULL, NULL, alg);
	switch (OBJ_obj2nid(oid)) {
	case NID_ecdsa_with_SHA256:
	case NID_ecdsa_with_SHA384:
	case NID_ecdsa_with_SHA512: return 1;
	default: return 0;
	}
}

int bc_csr_check(const uint8_t *der, size_t len, EVP_PKEY **pub)
{
	const unsigned char *p = der;
	X509_REQ *req = NULL;
	EVP_PKEY *key = NULL;
	int rc;

	*pub = NULL;
	if (der == NULL || len == 0)
		return BC_ERR_INVALID;
	if (len > PKI_MAX_DER)
		return BC_ERR_LIMIT;
	if ((req = d2i_X509_REQ(NULL, &p, (long)len)) == NULL) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if (p != der + len) {
		rc = BC_ERR_TRAILING;
		goto out;
	}
	if (!csr_sig_alg_ok(req)) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = csr_key(req, &key)) != 0) {
		rc = rc == BC_ERR_NOMEM ? rc : BC_ERR_INVALID;
		goto out;
	}
	if (X509_REQ_verify(req, key) != 1) {
		rc = BC_ERR_VERIFY;
		goto out;
	}
	*pub = key;
	key = NULL;
out:
	EVP_PKEY_free(key);
	X509_REQ_free(req);
	ERR_clear_error();
	return rc;
}

int bc_csr_make(EVP_PKEY *key, const char *cn, uint8_t **der, size_t *len)
{
	X509_REQ *req = NULL;
	X509_NAME *name;
	unsigned char *p;
	size_t cnlen;
	int n, rc = BC_ERR_CRYPTO;

	*der = NULL;
	*len = 0;
	if (key == NULL || cn == NULL || (cnlen = strlen(cn)) == 0 || cnlen > CN_MAX)
		return BC_ERR_INVALID;
	if ((req = X509_REQ_new()) == NULL)
		return BC_ERR_NOMEM;
	if (X509_REQ_set_version(req, X509_REQ_VERSION_1) != 1)
		goto out;
	if ((name = X509_REQ_get_subject_name(req)) == NULL ||
	    X509_NAME_add_entry_by_NID(name, NID_commonName, V_ASN1_UTF8STRING,
	                               (const unsigned char *)cn, (int)cnlen, -1, 0) != 1)
		goto out;
	if (X509_REQ_set_pubkey(req, key) != 1 || X509_REQ_sign(req, key, EVP_sha256()) <= 0)
		goto out;
	if ((n = i2d_X509_REQ(req, NULL)) <= 0)
		goto out;
	rc = BC_ERR_NOMEM;
	if ((*der = malloc((size_t)n)) == NULL)
		goto out;
	p = *der;
	if (i2d_X509_REQ(req, &p) != n) {
		free(*der);
		*der = NULL;
		rc = BC_ERR_CRYPTO;
		goto out;
	}
	*len = (size_t)n;
	rc = 0;
out:
	X509_REQ_free(req);
	if (rc != 0)
		ERR_clear_error();
	return rc;
}
