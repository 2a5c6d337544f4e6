/* The join key set of a pki: the bundle's active pair plus next and retired keys, what
 * a pins-update statement announces (src/join/pins_update.c) and bcd pins. */
#include <openssl/crypto.h>
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

static int in_set(const bc_pki *pki, const char *kid)
{
	char k[BC_KEY_ID_LEN + 1];

	if (strcmp(kid, pki->join_signing_kid) == 0)
		return 1;
	if (pki->join_encryption != NULL && bc_key_id(pki->join_encryption, k) == 0 &&
	    strcmp(kid, k) == 0)
		return 1;
	for (size_t i = 0; i < pki->n_join_keys; i++)
		if (strcmp(kid, pki->join_keys[i].kid) == 0)
			return 1;
	return 0;
}

int bc_pki_join_key_add(bc_pki *pki, enum bc_join_key_use use, enum bc_join_key_state state,
                        EVP_PKEY *key)
{
	struct bc_join_key *k;
	char kid[BC_KEY_ID_LEN + 1];
	uint8_t point[65];
	int rc = BC_ERR_INVALID;

	if (pki == NULL || key == NULL || bc_join_key_use_name(use) == NULL ||
	    (state != BC_JOIN_KEY_NEXT && state != BC_JOIN_KEY_RETIRED))
		goto fail;
	if (bc_p256_public_point(key, point) != 0 || (rc = bc_key_id(key, kid)) != 0) {
		rc = BC_ERR_INVALID;
		goto fail;
	}
	if (in_set(pki, kid)) {
		rc = BC_ERR_INVALID;
		goto fail;
	}
	if (pki->n_join_keys >= BC_JOIN_KEYS_MAX - 2) {
		rc = BC_ERR_LIMIT;
		goto fail;
	}
	k = &pki->join_keys[pki->n_join_keys++];
	k->use = use;
	k->state = state;
	k->key = key;
	memcpy(k->kid, kid, sizeof(k->kid));
	pki->join_keys_version++;
	return 0;
fail:
	EVP_PKEY_free(key);
	return rc;
}

/* 1 when key holds a private part (a key the server can sign or open with). */
static int has_private(EVP_PKEY *key)
{
	uint8_t raw[32];
	int ok = bc_key_to_raw(key, raw) == 0;

	OPENSSL_cleanse(raw, sizeof(raw));
	return ok;
}

int bc_pki_join_key_activate(bc_pki *pki, const char *kid)
{
	struct bc_join_key *k = NULL;
	EVP_PKEY **active;
	char old_kid[BC_KEY_ID_LEN + 1], new_kid[BC_KEY_ID_LEN + 1];
	EVP_PKEY *old;

	for (size_t i = 0; pki != NULL && kid != NULL && i < pki->n_join_keys; i++)
		if (pki->join_keys[i].state == BC_JOIN_KEY_NEXT &&
		    strcmp(pki->join_keys[i].kid, kid) == 0)
			k = &pki->join_keys[i];
	if (k == NULL)
		return BC_ERR_NOT_FOUND;
	if (!has_private(k->key))
		return BC_ERR_INVALID;
	active = k->use == BC_JOIN_KEY_SIGNING ? &pki->join_signing : &pki->join_encryption;
	if (bc_key_id(*active, old_kid) != 0)
		return BC_ERR_INVALID;
	memcpy(new_kid, k->kid, sizeof(new_kid)); /* kid may be k->kid itself */
	/* swap: the new key becomes the bundle's, the old one stays announced as retired */
	old = *active;
	*active = k->key;
	k->key = old;
	k->state = BC_JOIN_KEY_RETIRED;
	memcpy(k->kid, old_kid, sizeof(k->kid));
	if (active == &pki->join_signing)
		memcpy(pki->join_signing_kid, new_kid, sizeof(new_kid));
	pki->join_keys_version++;
	return 0;
}

void bc_pki_join_keys_clear(bc_pki *pki)
{
	if (pki == NULL)
		return;
	for (size_t i = 0; i < pki->n_join_keys; i++)
		EVP_PKEY_free(pki->join_keys[i].key);
	memset(pki->join_keys, 0, sizeof(pki->join_keys));
	pki->n_join_keys = 0;
}
