/* The join keys of a set (struct bc_node_cas): which one signs answers, which open
 * sealed tokens and in what order, and which a pins-update statement announces
 * (src/join/pins_update.c); bcd pins what it announces. */
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/pki.h"

static const char *const use_names[] = {
    [BC_JOIN_KEY_SIGNING] = "join-signing", [BC_JOIN_KEY_ENCRYPTION] = "join-encryption"};
static const char *const state_names[] = {[BC_JOIN_KEY_ACTIVE] = "active",
                                          [BC_JOIN_KEY_NEXT] = "next",
                                          [BC_JOIN_KEY_RETIRED] = "retired"};

const char *bc_join_key_use_name(enum bc_join_key_use use)
{
	return use == BC_JOIN_KEY_SIGNING || use == BC_JOIN_KEY_ENCRYPTION ? use_names[use] : NULL;
}

const char *bc_join_key_state_name(enum bc_join_key_state state)
{
	return state >= BC_JOIN_KEY_ACTIVE && state <= BC_JOIN_KEY_RETIRED ? state_names[state]
	                                                                   : NULL;
}

enum bc_join_key_use bc_join_key_use_of(const char *name)
{
	for (int u = BC_JOIN_KEY_SIGNING; name != NULL && u <= BC_JOIN_KEY_ENCRYPTION; u++)
		if (strcmp(name, use_names[u]) == 0)
			return (enum bc_join_key_use)u;
	return 0;
}

enum bc_join_key_state bc_join_key_state_of(const char *name)
{
	for (int s = BC_JOIN_KEY_ACTIVE; name != NULL && s <= BC_JOIN_KEY_RETIRED; s++)
		if (strcmp(name, state_names[s]) == 0)
			return (enum bc_join_key_state)s;
	return 0;
}

int bc_node_cas_add_join(struct bc_node_cas *cas, const struct bc_join_key *k)
{
	if (cas->n_join >= BC_JOIN_SET_MAX) {
		EVP_PKEY_free(k->key);
		return BC_ERR_LIMIT;
	}
	cas->join[cas->n_join] = *k;
	cas->join[cas->n_join].kid[0] = '\0';
	cas->n_join++;
	return 0;
}

/* 1 when key holds a private part (a key the server can sign or open with). */
static int has_private(EVP_PKEY *key)
{
	uint8_t raw[32];
	int ok = bc_key_to_raw(key, raw) == 0;

	OPENSSL_cleanse(raw, sizeof(raw));
	ERR_clear_error();
	return ok;
}

/* 1 when a was activated after b (the generation breaks a tie). */
static int later(const struct bc_join_key *a, const struct bc_join_key *b)
{
	return a->activated_ms > b->activated_ms ||
	       (a->activated_ms == b->activated_ms && a->id > b->id);
}

int bc_node_cas_finish_join(struct bc_node_cas *cas)
{
	int found[3] = {0, 0, 0};

	for (size_t i = 0; i < cas->n_join; i++) {
		struct bc_join_key *k = &cas->join[i];
		size_t *cur = &cas->join_current[k->use == BC_JOIN_KEY_SIGNING ? 1 : 2];

		if (bc_join_key_use_name(k->use) == NULL ||
		    bc_join_key_state_name(k->state) == NULL || k->key == NULL ||
		    bc_p256_public_point(k->key, k->point) != 0 || bc_key_id(k->key, k->kid) != 0 ||
		    (k->state != BC_JOIN_KEY_RETIRED && !has_private(k->key)))
			return BC_ERR_INVALID;
		for (size_t j = 0; j < i; j++)
			if (strcmp(cas->join[j].kid, k->kid) == 0)
				return BC_ERR_INVALID;
		if (k->state == BC_JOIN_KEY_ACTIVE &&
		    (!found[k->use] || later(k, &cas->join[*cur]))) {
			*cur = i;
			found[k->use] = 1;
		}
	}
	if (cas->n_join > 0 && (!found[BC_JOIN_KEY_SIGNING] || !found[BC_JOIN_KEY_ENCRYPTION]))
		return BC_ERR_INVALID;
	return 0;
}

const struct bc_join_key *bc_node_cas_join_current(const struct bc_node_cas *cas,
                                                   enum bc_join_key_use use)
{
	if (cas == NULL || cas->n_join == 0 || bc_join_key_use_name(use) == NULL)
		return NULL;
	return &cas->join[cas->join_current[use == BC_JOIN_KEY_SIGNING ? 1 : 2]];
}

size_t bc_node_cas_join_openers(const struct bc_node_cas *cas,
                                const struct bc_join_key *out[static BC_JOIN_SET_MAX])
{
	const struct bc_join_key *cur = bc_node_cas_join_current(cas, BC_JOIN_KEY_ENCRYPTION);
	size_t n = 0;

	if (cur == NULL)
		return 0;
	out[n++] = cur; /* what tokens are sealed to: almost every token opens at once */
	for (size_t i = 0; i < cas->n_join; i++)
		if (&cas->join[i] != cur && cas->join[i].use == BC_JOIN_KEY_ENCRYPTION &&
		    cas->join[i].state != BC_JOIN_KEY_RETIRED)
			out[n++] = &cas->join[i];
	return n;
}

size_t bc_node_cas_join_announced(const struct bc_node_cas *cas,
                                  const struct bc_join_key *out[static BC_JOIN_KEYS_MAX])
{
	size_t n = 0;

	for (int u = BC_JOIN_KEY_SIGNING; u <= BC_JOIN_KEY_ENCRYPTION; u++)
		if ((out[n] = bc_node_cas_join_current(cas, (enum bc_join_key_use)u)) != NULL)
			n++;
	for (size_t i = 0; cas != NULL && i < cas->n_join && n < BC_JOIN_KEYS_MAX; i++)
		if (cas->join[i].state == BC_JOIN_KEY_NEXT)
			out[n++] = &cas->join[i];
	/* then the keys retired last, as many as fit: agents unpin them */
	while (cas != NULL && n < BC_JOIN_KEYS_MAX) {
		const struct bc_join_key *best = NULL;
		for (size_t i = 0; i < cas->n_join; i++) {
			const struct bc_join_key *k = &cas->join[i];
			int taken = 0;
			for (size_t j = 0; j < n; j++)
				taken |= out[j] == k;
			if (k->state == BC_JOIN_KEY_RETIRED && !taken &&
			    (best == NULL || k->retired_ms > best->retired_ms ||
			     (k->retired_ms == best->retired_ms && k->id > best->id)))
				best = k;
		}
		if (best == NULL)
			break;
		out[n++] = best;
	}
	return n;
}

int bc_pki_join_current(const bc_pki *pki, enum bc_join_key_use use, EVP_PKEY **key,
                        char kid[static 65])
{
	struct bc_node_cas *cas = bc_pki_node_cas_get(pki);
	const struct bc_join_key *k = bc_node_cas_join_current(cas, use);
	EVP_PKEY *pick = k != NULL                    ? k->key
	                 : use == BC_JOIN_KEY_SIGNING ? pki->join_signing
	                                              : pki->join_encryption;
	int rc = BC_ERR_NOMEM;

	*key = NULL;
	if (pick != NULL && EVP_PKEY_up_ref(pick) == 1) {
		*key = pick;
		if ((rc = bc_key_id(pick, kid)) != 0) {
			EVP_PKEY_free(pick);
			*key = NULL;
		}
	}
	bc_node_cas_put(cas);
	return rc;
}
