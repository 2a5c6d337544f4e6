/* The node CA set read from the store: one snapshot at a time, shared by reference
 * between the threads that issue and verify, swapped whole by the one that reads the
 * store (src/server/node_cas.c). */
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

#define DAY_MS         (24LL * 3600 * 1000)
#define CA_VALIDITY_MS (3653 * DAY_MS)

struct bc_pki_live {
	pthread_mutex_t mu;
	struct bc_node_cas *cur;
};

struct bc_pki_live *pki_live_new(void)
{
	struct bc_pki_live *l = calloc(1, sizeof(*l));

	if (l != NULL)
		pthread_mutex_init(&l->mu, NULL);
	return l;
}

void pki_live_free(struct bc_pki_live *l)
{
	if (l == NULL)
		return;
	bc_node_cas_put(l->cur);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

int bc_node_cas_new(int64_t sequence, struct bc_node_cas **out)
{
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return BC_ERR_NOMEM;
	(*out)->sequence = sequence;
	(*out)->refs = 1;
	return 0;
}

int bc_node_cas_add(struct bc_node_cas *cas, const struct bc_node_ca *ca)
{
	if (cas->n >= BC_NODE_CAS_MAX)
		return BC_ERR_LIMIT;
	cas->ca[cas->n] = *ca;
	cas->ca[cas->n].der = NULL;
	cas->ca[cas->n].der_len = 0;
	cas->n++;
	return 0;
}

static int ca_check(struct bc_node_ca *ca)
{
	EVP_PKEY *pub = X509_get0_pubkey(ca->cert);

	if (pub == NULL || !pki_key_is_p256(pub) ||
	    (ca->state != BC_CA_RETIRED && (ca->key == NULL || EVP_PKEY_eq(pub, ca->key) != 1))) {
		ERR_clear_error();
		return BC_ERR_INVALID;
	}
	return bc_x509_to_der(ca->cert, &ca->der, &ca->der_len);
}

int bc_node_cas_finish(struct bc_node_cas *cas)
{
	int found = 0, rc;

	for (size_t i = 0; i < cas->n; i++) {
		struct bc_node_ca *ca = &cas->ca[i];

		if ((rc = ca_check(ca)) != 0)
			return rc;
		if (ca->state == BC_CA_ACTIVE &&
		    (!found || ca->activated_ms > cas->ca[cas->issuing].activated_ms ||
		     (ca->activated_ms == cas->ca[cas->issuing].activated_ms &&
		      ca->id > cas->ca[cas->issuing].id))) {
			cas->issuing = i;
			found = 1;
		}
	}
	return found ? bc_node_cas_finish_join(cas) : BC_ERR_INVALID;
}

void bc_node_cas_put(struct bc_node_cas *cas)
{
	if (cas == NULL || __atomic_sub_fetch(&cas->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (size_t i = 0; i < cas->n; i++) {
		X509_free(cas->ca[i].cert);
		EVP_PKEY_free(cas->ca[i].key);
		free(cas->ca[i].der);
	}
	for (size_t i = 0; i < cas->n_join; i++)
		EVP_PKEY_free(cas->join[i].key);
	free(cas);
}

void bc_pki_node_cas_install(const bc_pki *pki, struct bc_node_cas *cas)
{
	struct bc_node_cas *old;

	pthread_mutex_lock(&pki->live->mu);
	old = pki->live->cur;
	pki->live->cur = cas;
	pthread_mutex_unlock(&pki->live->mu);
	bc_node_cas_put(old);
}

struct bc_node_cas *bc_pki_node_cas_get(const bc_pki *pki)
{
	struct bc_node_cas *cas;

	if (pki == NULL || pki->live == NULL)
		return NULL;
	pthread_mutex_lock(&pki->live->mu);
	if ((cas = pki->live->cur) != NULL)
		__atomic_add_fetch(&cas->refs, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&pki->live->mu);
	return cas;
}

int bc_pki_node_ca_retired(const bc_pki *pki, const uint8_t *der, size_t len)
{
	struct bc_node_cas *cas = bc_pki_node_cas_get(pki);
	X509 *x = NULL;
	int retired = 0, any = 0;

	for (size_t i = 0; cas != NULL && i < cas->n; i++)
		any |= cas->ca[i].state == BC_CA_RETIRED;
	/* the decode only while a retired CA's leaves may still be unexpired */
	if (any && bc_x509_from_der(der, len, &x) == 0)
		for (size_t i = 0; i < cas->n && !retired; i++)
			retired = cas->ca[i].state == BC_CA_RETIRED &&
			          X509_check_issued(cas->ca[i].cert, x) == X509_V_OK;
	ERR_clear_error();
	X509_free(x);
	bc_node_cas_put(cas);
	return retired;
}

/* A reference more to key, for a set that holds it as the bundle does. */
static EVP_PKEY *ref(EVP_PKEY *key)
{
	return key != NULL && EVP_PKEY_up_ref(key) == 1 ? key : NULL;
}

int bc_pki_bundle_set(const bc_pki *pki, struct bc_node_cas **out)
{
	struct bc_node_ca ca = {.id = 1, .state = BC_CA_ACTIVE};
	struct bc_join_key sign = {.use = BC_JOIN_KEY_SIGNING,
	                           .state = BC_JOIN_KEY_ACTIVE,
	                           .id = 2},
	                   enc = {
	                       .use = BC_JOIN_KEY_ENCRYPTION, .state = BC_JOIN_KEY_ACTIVE, .id = 3};
	int rc;

	*out = NULL;
	if (pki == NULL || pki->node_ca == NULL)
		return BC_ERR_INVALID;
	if ((rc = bc_node_cas_new(0, out)) != 0)
		return rc;
	if (X509_up_ref(pki->node_ca) != 1 || (ca.key = ref(pki->node_ca_key)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto fail;
	}
	ca.cert = pki->node_ca;
	if ((rc = bc_node_cas_add(*out, &ca)) != 0) {
		X509_free(ca.cert);
		EVP_PKEY_free(ca.key);
		goto fail;
	}
	sign.key = ref(pki->join_signing);
	enc.key = ref(pki->join_encryption);
	if ((rc = bc_node_cas_add_join(*out, &sign)) != 0 ||
	    (rc = bc_node_cas_add_join(*out, &enc)) != 0 || (rc = bc_node_cas_finish(*out)) != 0)
		goto fail;
	return 0;
fail:
	bc_node_cas_put(*out);
	*out = NULL;
	return rc;
}

int bc_pki_new_node_ca(const bc_pki *pki, int64_t now_ms, X509 **cert, EVP_PKEY **key)
{
	struct pki_cert_spec spec = {0};
	uint8_t serial[PKI_SERIAL_LEN];
	char cn[320];
	int rc;

	*cert = NULL;
	*key = NULL;
	if (pki == NULL || now_ms < DAY_MS)
		return BC_ERR_INVALID;
	/* a name of its own: relying parties holding several CAs tell them apart */
	snprintf(cn, sizeof(cn), "%s node CA %lld", pki->trust_domain, (long long)(now_ms / 1000));
	if ((rc = bc_key_generate(key)) != 0)
		return rc;
	spec.pub = *key;
	spec.cn = cn;
	spec.issuer_key = *key;
	spec.not_before_ms = now_ms - DAY_MS;
	spec.not_after_ms = now_ms + CA_VALIDITY_MS;
	spec.basic_constraints = "critical,CA:TRUE,pathlen:0";
	spec.key_usage = "critical,keyCertSign,cRLSign";
	if ((rc = pki_cert_build(&spec, cert, serial)) != 0) {
		EVP_PKEY_free(*key);
		*key = NULL;
	}
	return rc;
}
