/* The trust bundle relying parties fetch: the node CAs as PEM, and as a SPIFFE trust
 * bundle (SPIFFE Trust Domain and Bundle, section 4): a JWK set whose keys are the CAs'
 * public keys with "use":"x509-svid" and the certificate in "x5c", and the
 * "spiffe_sequence" and "spiffe_refresh_hint" members. Public material only: nothing
 * here reads a private key. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

static int cas_valid(X509 *const *cas, size_t n)
{
	if (cas == NULL || n == 0 || n > BC_TRUST_MAX_CAS)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (cas[i] == NULL)
			return 0;
	return 1;
}

int bc_pki_trust_pem(X509 *const *cas, size_t n, char **out)
{
	char *all = NULL, *pem = NULL;
	size_t used = 0;
	int rc = 0;

	*out = NULL;
	if (!cas_valid(cas, n))
		return BC_ERR_INVALID;
	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t l;
		char *grown;

		if ((rc = bc_x509_to_pem(cas[i], &pem)) != 0)
			break;
		l = strlen(pem);
		if ((grown = realloc(all, used + l + 1)) == NULL) {
			rc = BC_ERR_NOMEM;
		} else {
			all = grown;
			memcpy(all + used, pem, l + 1);
			used += l;
		}
		free(pem);
		pem = NULL;
	}
	if (rc != 0) {
		free(all);
		return rc;
	}
	*out = all;
	return 0;
}

/* One x509-svid JWK: kty, crv, x, y from the CA's key (RFC 7518 6.2.1), use, and
 * x5c with the CA certificate alone (standard base64 of its DER, RFC 7517 4.7). */
static int ca_jwk(X509 *ca, json_t **out)
{
	uint8_t point[65], *der = NULL;
	size_t len = 0;
	char *x = NULL, *y = NULL, *c = NULL;
	EVP_PKEY *pub = X509_get0_pubkey(ca);
	int rc;

	*out = NULL;
	if (pub == NULL || !pki_key_is_p256(pub))
		return BC_ERR_INVALID;
	if ((rc = bc_key_to_point(pub, point)) != 0 || (rc = bc_x509_to_der(ca, &der, &len)) != 0)
		return rc;
	x = bc_b64url_encode(point + 1, 32);
	y = bc_b64url_encode(point + 33, 32);
	c = bc_b64_encode(der, len);
	if (x == NULL || y == NULL || c == NULL ||
	    (*out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:[s]}", "kty", "EC", "use", "x509-svid",
	                      "crv", "P-256", "x", x, "y", y, "x5c", c)) == NULL)
		rc = BC_ERR_NOMEM;
	free(x);
	free(y);
	free(c);
	free(der);
	return rc;
}

int bc_pki_trust_spiffe(X509 *const *cas, size_t n, int64_t sequence, int64_t refresh_hint_s,
                        char **out)
{
	json_t *keys = NULL, *set = NULL, *k;
	int rc = 0;

	*out = NULL;
	if (!cas_valid(cas, n) || sequence < 0 || refresh_hint_s <= 0)
		return BC_ERR_INVALID;
	if ((keys = json_array()) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; i < n && rc == 0; i++)
		if ((rc = ca_jwk(cas[i], &k)) == 0 && json_array_append_new(keys, k) != 0)
			rc = BC_ERR_NOMEM;
	if (rc != 0) {
		json_decref(keys);
		return rc;
	}
	set = json_pack("{s:o, s:I, s:I}", "keys", keys, "spiffe_sequence", (json_int_t)sequence,
	                "spiffe_refresh_hint", (json_int_t)refresh_hint_s);
	if (set == NULL || (*out = bc_json_dump(set)) == NULL)
		rc = BC_ERR_NOMEM;
	json_decref(set);
	return rc;
}

int64_t bc_pki_trust_sequence(X509 *const *cas, size_t n)
{
	int64_t newest = 0;

	if (!cas_valid(cas, n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		int64_t ms;

		if (pki_read_time(X509_get0_notBefore(cas[i]), &ms) == 0 && ms / 1000 > newest)
			newest = ms / 1000;
	}
	return newest;
}

int bc_pki_trust_bundle(const bc_pki *pki, int spiffe, char **out)
{
	X509 *cas[BC_NODE_CAS_MAX];
	struct bc_node_cas *set;
	size_t n = 0;
	int64_t seq;
	int rc;

	*out = NULL;
	if (pki == NULL || pki->node_ca == NULL)
		return BC_ERR_INVALID;
	/* the installed set's CAs in use (prepared and active), else the bundle's CA */
	if ((set = bc_pki_node_cas_get(pki)) == NULL) {
		cas[n++] = pki->node_ca;
		seq = bc_pki_trust_sequence(cas, n);
	} else {
		for (size_t i = 0; i < set->n; i++)
			if (set->ca[i].state != BC_CA_RETIRED)
				cas[n++] = set->ca[i].cert;
		seq = set->sequence;
	}
	rc = !spiffe ? bc_pki_trust_pem(cas, n, out)
	             : bc_pki_trust_spiffe(cas, n, seq, BC_TRUST_REFRESH_HINT_S, out);
	bc_node_cas_put(set);
	return rc;
}
