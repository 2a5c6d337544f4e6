/* The signed JoinResponseBody: a certificate chain, or a deferral. The signature
 * (purpose join-response) covers the body bytes; csr_sha256 binds it to the request. */
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "join/internal.h"

int bc_join_keys_take(struct bc_join_service *s, struct bc_join_keys *k)
{
	int rc;

	k->set = bc_pki_node_cas_get(s->cfg.pki);
	if (k->set == NULL) {
		k->set = s->bundle_set;
		__atomic_add_fetch(&k->set->refs, 1, __ATOMIC_ACQ_REL);
	}
	/* a set made for its CAs alone signs with the bundle's join keys */
	k->join = k->set->n_join > 0 ? k->set : s->bundle_set;
	__atomic_add_fetch(&k->join->refs, 1, __ATOMIC_ACQ_REL);
	k->pins = NULL;
	if ((rc = bc_join_pins_get(s, k->join, &k->pins)) != 0)
		bc_join_keys_drop(k);
	return rc;
}

void bc_join_keys_drop(struct bc_join_keys *k)
{
	bc_join_pins_put(k->pins);
	bc_node_cas_put(k->join);
	bc_node_cas_put(k->set);
	memset(k, 0, sizeof(*k));
}

static int pack_body(const struct bc_join_service *s, const struct bc_join_keys *k,
                     const uint8_t csr_sha256[32], const struct bc_attestor *attestor,
                     const struct bc_join_decision *d, uint8_t **out, size_t *len)
{
	Bettercompute__Join__V1__JoinResponseBody b =
	    BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__INIT;
	Bettercompute__Join__V1__JoinPending pend = BETTERCOMPUTE__JOIN__V1__JOIN_PENDING__INIT;
	Bettercompute__Join__V1__JoinChallenge chal = BETTERCOMPUTE__JOIN__V1__JOIN_CHALLENGE__INIT;
	ProtobufCBinaryData chain[2], bundle[BC_NODE_CAS_MAX];
	/* the request's set: the issuing CA after the leaf (the one that signed it), every
	   CA in use in the trust bundle */
	const struct bc_node_cas *cas = k->set;
	uint8_t *ca = cas->ca[cas->issuing].der;
	size_t ca_len = cas->ca[cas->issuing].der_len, nb = 0;
	int rc = 0;

	*out = NULL;
	b.csr_sha256.data = (uint8_t *)csr_sha256;
	b.csr_sha256.len = 32;
	b.issued_at_ms = d->now_ms;
	b.trust_domain = s->cfg.pki->trust_domain;
	for (size_t i = 0; i < cas->n; i++)
		if (cas->ca[i].state != BC_CA_RETIRED) {
			bundle[nb].data = cas->ca[i].der;
			bundle[nb++].len = cas->ca[i].der_len;
		}
	if (nb == 0) {
		bundle[0].data = ca;
		bundle[nb++].len = ca_len;
	}
	b.trust_bundle = bundle;
	b.n_trust_bundle = nb;
	b.pins_update.data = k->pins->bytes;
	b.pins_update.len = k->pins->len;
	if (d->out.kind == BC_OUTCOME_DEFER) {
		const struct bc_attest_deferral *df = &d->out.deferral;
		if (df->kind == BC_DEFER_APPROVAL) {
			pend.request_id = (char *)df->request_id;
			pend.retry_after_seconds =
			    df->retry_after_seconds ? df->retry_after_seconds : 30;
			b.deferral_case =
			    BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__DEFERRAL_PENDING;
			b.pending = &pend;
		} else {
			chal.attestor = (char *)attestor->id;
			chal.payload.data = df->challenge;
			chal.payload.len = df->challenge_len;
			chal.not_after_ms = df->not_after_ms;
			b.deferral_case =
			    BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__DEFERRAL_CHALLENGE;
			b.challenge = &chal;
		}
	} else {
		b.node_id = (char *)d->node_id;
		chain[0].data = d->cert_der;
		chain[0].len = d->cert_len;
		chain[1].data = ca;
		chain[1].len = ca_len;
		b.chain = chain;
		b.n_chain = 2;
	}
	*len = bettercompute__join__v1__join_response_body__get_packed_size(&b);
	if ((*out = malloc(*len ? *len : 1)) == NULL)
		rc = BC_ERR_NOMEM;
	else
		bettercompute__join__v1__join_response_body__pack(&b, *out);
	return rc;
}

int bc_join_sign_body(const struct bc_join_keys *k, const char *purpose, const uint8_t *body,
                      size_t body_len, uint8_t **out, size_t *len)
{
	Bettercompute__Join__V1__SignedResponse sr = BETTERCOMPUTE__JOIN__V1__SIGNED_RESPONSE__INIT;
	const struct bc_join_key *key = bc_node_cas_join_current(k->join, BC_JOIN_KEY_SIGNING);
	struct bc_signer signer = {0};
	uint8_t sig[BC_SIG_LEN];
	int rc;

	*out = NULL;
	*len = 0;
	if (key == NULL)
		return BC_ERR_INVALID;
	/* the set computed its point once: no bc_signer_init per answer */
	signer.key = key->key;
	memcpy(signer.point, key->point, sizeof(signer.point));
	if ((rc = bc_es256_sign(&signer, purpose, body, body_len, sig)) != 0)
		return rc;
	sr.body.data = (uint8_t *)body;
	sr.body.len = body_len;
	sr.signature.data = sig;
	sr.signature.len = sizeof(sig);
	sr.key_id = (char *)key->kid;
	*len = bettercompute__join__v1__signed_response__get_packed_size(&sr);
	if ((*out = malloc(*len)) == NULL)
		return BC_ERR_NOMEM;
	bettercompute__join__v1__signed_response__pack(&sr, *out);
	return 0;
}

int bc_join_sign_response(const struct bc_join_service *s, const struct bc_join_keys *k,
                          const uint8_t csr_sha256[32], const struct bc_attestor *attestor,
                          const struct bc_join_decision *d, uint8_t **out, size_t *len)
{
	uint8_t *body = NULL;
	size_t body_len = 0;
	int rc;

	*out = NULL;
	*len = 0;
	if ((rc = pack_body(s, k, csr_sha256, attestor, d, &body, &body_len)) != 0)
		return rc;
	rc = bc_join_sign_body(k, BC_PURPOSE_JOIN_RESPONSE, body, body_len, out, len);
	free(body);
	return rc;
}
