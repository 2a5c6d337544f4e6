/* The pins-update statement: a set's join keys as bc_node_cas_join_announced names them
 * (the current pair, then next and retired keys), a sequence (the store's change
 * counter: it rises with every change of the set) and an issue time, in a
 * SignedResponse by the current join signing key under purpose pins-update
 * (bc_join_sign_body: the one envelope of the join service's signatures). Made once per
 * set, so an answer carries the same bytes and costs no signature of its own. */
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

static int put_key(struct pin_list *l, const struct bc_join_key *jk, char *kid)
{
	pinned_key *k = &l->keys[l->n];
	size_t len = 0;
	int rc;

	if (l->n >= BC_JOIN_KEYS_MAX)
		return BC_ERR_LIMIT;
	bettercompute__join__v1__pinned_key__init(k);
	if ((rc = bc_key_spki(jk->key, &l->spki[l->n], &len)) != 0)
		return rc;
	k->use = (char *)bc_join_key_use_name(jk->use);
	k->state = (char *)bc_join_key_state_name(jk->state);
	k->key_id = kid;
	k->spki.data = l->spki[l->n];
	k->spki.len = len;
	l->ptrs[l->n] = k;
	l->n++;
	return 0;
}

static int pack_statement(const struct bc_node_cas *set, const char *trust_domain, int64_t now_ms,
                          uint8_t **out, size_t *len)
{
	Bettercompute__Join__V1__PinsUpdate u = BETTERCOMPUTE__JOIN__V1__PINS_UPDATE__INIT;
	const struct bc_join_key *keys[BC_JOIN_KEYS_MAX];
	size_t n = bc_node_cas_join_announced(set, keys);
	struct pin_list l;
	int rc = 0;

	*out = NULL;
	memset(&l, 0, sizeof(l));
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = put_key(&l, keys[i], (char *)keys[i]->kid);
	if (rc != 0)
		goto out;
	/* the bundle's set (sequence 0) is announced as 1, a store's above it */
	u.sequence = set->sequence + 1;
	u.issued_at_ms = now_ms;
	u.trust_domain = (char *)trust_domain;
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

void bc_join_pins_put(struct bc_join_pins *p)
{
	if (p == NULL || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	bc_node_cas_put(p->set);
	free(p);
}

/* A new statement for set, signed. */
static int pins_make(struct bc_join_service *s, struct bc_node_cas *set, struct bc_join_pins **out)
{
	struct bc_join_keys k = {.join = set};
	uint8_t *body = NULL, *signed_ = NULL;
	size_t len = 0, slen = 0;
	int rc;

	*out = NULL;
	if ((rc = pack_statement(set, s->cfg.pki->trust_domain, bc_now_ms(), &body, &len)) != 0 ||
	    (rc = bc_join_sign_body(&k, BC_PURPOSE_PINS_UPDATE, body, len, &signed_, &slen)) != 0)
		goto out;
	if ((*out = malloc(sizeof(**out) + slen)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	(*out)->refs = 1;
	(*out)->set = set;
	__atomic_add_fetch(&set->refs, 1, __ATOMIC_ACQ_REL);
	(*out)->len = slen;
	memcpy((*out)->bytes, signed_, slen);
out:
	free(body);
	free(signed_);
	return rc;
}

int bc_join_pins_get(struct bc_join_service *s, struct bc_node_cas *set, struct bc_join_pins **out)
{
	struct bc_join_pins *p, *old;
	int rc;

	pthread_mutex_lock(&s->pins_mu);
	if ((p = s->pins) != NULL && p->set == set)
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
	else
		p = NULL;
	pthread_mutex_unlock(&s->pins_mu);
	if ((*out = p) != NULL)
		return 0;
	/* a set seen for the first time: two requests may both sign, one copy is kept */
	if ((rc = pins_make(s, set, &p)) != 0)
		return rc;
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&s->pins_mu);
	old = s->pins;
	s->pins = p;
	pthread_mutex_unlock(&s->pins_mu);
	bc_join_pins_put(old);
	*out = p;
	return 0;
}
