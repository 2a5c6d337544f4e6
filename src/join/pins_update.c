/* The pins-update statement: the pki's join key set (the active pair, then next and
 * retired keys), a sequence and an issue time, in a SignedResponse by the active join
 * signing key under purpose pins-update (bc_join_sign_body: the one envelope of the
 * join service's signatures). Made once per pin set when the service starts, so an
 * answer carries the same bytes and costs no signature of its own. */
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "join/internal.h"

typedef Bettercompute__Join__V1__PinnedKey pinned_key;

struct pin_list {
	pinned_key keys[BC_JOIN_KEYS_MAX];
	pinned_key *ptrs[BC_JOIN_KEYS_MAX];
	uint8_t *spki[BC_JOIN_KEYS_MAX];
	size_t n;
};

static int put_key(struct pin_list *l, enum bc_join_key_use use, enum bc_join_key_state state,
                   EVP_PKEY *key, char *kid)
{
	pinned_key *k = &l->keys[l->n];
	size_t len = 0;
	int rc;

	if (l->n >= BC_JOIN_KEYS_MAX)
		return BC_ERR_LIMIT;
	bettercompute__join__v1__pinned_key__init(k);
	if ((rc = bc_key_spki(key, &l->spki[l->n], &len)) != 0)
		return rc;
	k->use = (char *)bc_join_key_use_name(use);
	k->state = (char *)bc_join_key_state_name(state);
	k->key_id = kid;
	k->spki.data = l->spki[l->n];
	k->spki.len = len;
	l->ptrs[l->n] = k;
	l->n++;
	return 0;
}

static int pack_statement(const bc_pki *pki, int64_t now_ms, uint8_t **out, size_t *len)
{
	Bettercompute__Join__V1__PinsUpdate u = BETTERCOMPUTE__JOIN__V1__PINS_UPDATE__INIT;
	struct pin_list l;
	char enc_kid[BC_KEY_ID_LEN + 1];
	int rc;

	*out = NULL;
	memset(&l, 0, sizeof(l));
	if ((rc = bc_key_id(pki->join_encryption, enc_kid)) != 0 ||
	    (rc = put_key(&l, BC_JOIN_KEY_SIGNING, BC_JOIN_KEY_ACTIVE, pki->join_signing,
	                  (char *)pki->join_signing_kid)) != 0 ||
	    (rc = put_key(&l, BC_JOIN_KEY_ENCRYPTION, BC_JOIN_KEY_ACTIVE, pki->join_encryption,
	                  enc_kid)) != 0)
		goto out;
	for (size_t i = 0; i < pki->n_join_keys; i++) {
		const struct bc_join_key *k = &pki->join_keys[i];
		if ((rc = put_key(&l, k->use, k->state, k->key, (char *)k->kid)) != 0)
			goto out;
	}
	u.sequence = pki->join_keys_version + 1;
	u.issued_at_ms = now_ms;
	u.trust_domain = pki->trust_domain;
	u.keys = l.ptrs;
	u.n_keys = l.n;
	*len = bettercompute__join__v1__pins_update__get_packed_size(&u);
	if ((*out = malloc(*len ? *len : 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	bettercompute__join__v1__pins_update__pack(&u, *out);
out:
	for (size_t i = 0; i < BC_JOIN_KEYS_MAX; i++)
		free(l.spki[i]);
	return rc;
}

int bc_join_pins_update_make(struct bc_join_service *s)
{
	uint8_t *body = NULL;
	size_t len = 0;
	int rc;

	free(s->pins_update);
	s->pins_update = NULL;
	s->pins_update_len = 0;
	if ((rc = pack_statement(s->cfg.pki, bc_now_ms(), &body, &len)) != 0)
		return rc;
	rc = bc_join_sign_body(s, BC_PURPOSE_PINS_UPDATE, body, len, &s->pins_update,
	                       &s->pins_update_len);
	free(body);
	return rc;
}
