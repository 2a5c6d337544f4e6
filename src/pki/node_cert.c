/* Issuing node certificates under the node CA, and checking one was. */
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

/* 0 means the role's maximum; anything longer is cut to it. */
static int64_t effective_ttl(const char *role, int64_t ttl_ms)
{
	int64_t max =
	    strcmp(role, BC_ROLE_RAMDISK) == 0 ? BC_RAMDISK_CERT_TTL_MS : BC_NODE_CERT_TTL_MS;

	return (ttl_ms == 0 || ttl_ms > max) ? max : ttl_ms;
}

static int req_valid(const struct bc_node_cert_req *req)
{
	if (!bc_node_id_valid(req->node_id) || !bc_role_valid(req->role))
		return BC_ERR_INVALID;
	if ((req->pub == NULL) == (req->point == NULL))
		return BC_ERR_INVALID;
	if (req->pub != NULL ? !pki_key_is_p256(req->pub) : bc_p256_point_check(req->point) != 0)
		return BC_ERR_INVALID;
	if (req->not_before_ms < 0 || req->ttl_ms < 0 ||
	    req->not_before_ms > PKI_MAX_TIME_MS - BC_NODE_CERT_TTL_MS)
		return BC_ERR_INVALID;
	if (req->n_statements > BC_MAX_URIS - 1 ||
	    (req->n_statements > 0 && req->statements == NULL))
		return BC_ERR_INVALID;
	for (size_t i = 0; i < req->n_statements; i++) {
		const char *s = req->statements[i];
		if (s == NULL || !pki_statement_valid(s, strlen(s)))
			return BC_ERR_INVALID;
	}
	return 0;
}

int bc_pki_issue_node_cert(const bc_pki *pki, const struct bc_node_cert_req *req, uint8_t **der,
                           size_t *len, char serial_hex[static 33], int64_t *not_after_ms)
{
	/* the installed set's issuing CA, else the bundle's */
	struct bc_node_cas *cas = bc_pki_node_cas_get(pki);
	int rc = bc_pki_issue_node_cert_by(pki, cas, req, der, len, serial_hex, not_after_ms);

	bc_node_cas_put(cas);
	return rc;
}

int bc_pki_issue_node_cert_by(const bc_pki *pki, const struct bc_node_cas *cas,
                              const struct bc_node_cert_req *req, uint8_t **der, size_t *len,
                              char serial_hex[static 33], int64_t *not_after_ms)
{
	struct pki_node_fields f = {0};
	X509 *ca;
	EVP_PKEY *ca_key;
	char *spiffe = NULL;
	int rc;

	*der = NULL;
	*len = 0;
	serial_hex[0] = '\0';
	*not_after_ms = 0;
	if (pki == NULL || pki->node_ca == NULL || pki->node_ca_key == NULL || req == NULL)
		return BC_ERR_INVALID;
	if ((rc = req_valid(req)) != 0)
		return rc;
	/* the SPIFFE ID first, then the statements in the order given */
	if ((spiffe = bc_spiffe_id(pki->trust_domain, req->role, req->node_id)) == NULL)
		return BC_ERR_INVALID;
	f.uris[f.n_uris++] = spiffe;
	for (size_t i = 0; i < req->n_statements; i++)
		f.uris[f.n_uris++] = req->statements[i];
	f.cn = req->node_id;
	/* backdated for clocks behind ours; the lifetime still counts from now */
	f.not_before_ms = req->not_before_ms > BC_NODE_CERT_BACKDATE_MS
	                      ? req->not_before_ms - BC_NODE_CERT_BACKDATE_MS
	                      : 0;
	f.not_after_ms = req->not_before_ms + effective_ttl(req->role, req->ttl_ms);
	if (req->point != NULL)
		memcpy(f.point, req->point, sizeof(f.point));
	else if ((rc = bc_key_to_point(req->pub, f.point)) != 0)
		goto out;
	if ((rc = pki_serial_draw(f.serial)) != 0)
		goto out;
	ca = cas != NULL ? cas->ca[cas->issuing].cert : pki->node_ca;
	ca_key = cas != NULL ? cas->ca[cas->issuing].key : pki->node_ca_key;
	if ((rc = pki_node_cert_der(&f, ca, ca_key, der, len)) != 0)
		goto out;
	bc_hex_encode_to(f.serial, sizeof(f.serial), serial_hex);
	/* what the certificate says: whole seconds */
	*not_after_ms = f.not_after_ms / 1000 * 1000;
out:
	free(spiffe);
	return rc;
}

int bc_pki_verify_node_cert(const bc_pki *pki, const uint8_t *der, size_t len)
{
	X509 *x = NULL;
	int rc;

	if (pki == NULL || pki->node_ca == NULL)
		return BC_ERR_INVALID;
	if ((rc = bc_x509_from_der(der, len, &x)) == 0)
		rc = bc_pki_verify_node_x509(pki, x);
	X509_free(x);
	return rc;
}

/* 0 when ca issued x (names and key identifiers) and signed it. */
static int issued_by(X509 *ca, X509 *x)
{
	EVP_PKEY *ca_pub;

	if (X509_check_issued(ca, x) != X509_V_OK)
		return BC_ERR_VERIFY;
	if ((ca_pub = X509_get0_pubkey(ca)) == NULL || X509_verify(x, ca_pub) != 1)
		return BC_ERR_VERIFY;
	return 0;
}

int bc_pki_verify_node_x509(const bc_pki *pki, X509 *x)
{
	struct bc_node_cas *cas;
	int rc = BC_ERR_VERIFY;

	if (pki == NULL || pki->node_ca == NULL || x == NULL)
		return BC_ERR_INVALID;
	/* names and key identifiers first, then the signature itself: the installed set's
	   active CAs (a prepared one has signed nothing, a retired one verifies nothing),
	   else the bundle's CA */
	if ((cas = bc_pki_node_cas_get(pki)) == NULL) {
		rc = issued_by(pki->node_ca, x);
	} else {
		for (size_t i = 0; i < cas->n && rc != 0; i++)
			if (cas->ca[i].state == BC_CA_ACTIVE)
				rc = issued_by(cas->ca[i].cert, x);
		bc_node_cas_put(cas);
	}
	ERR_clear_error();
	return rc;
}
