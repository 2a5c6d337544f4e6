/* Join key rotation as the agent sees it: the pins-update statement (opened, checked,
 * applied) and the pin set as bcd keeps it in its pins file.
 *
 * Order matters as in answer.c: the envelope's key id must name a pinned signing key
 * and its signature (purpose pins-update) verify before the body is decoded. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bc/client.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "client/internal.h"

#define PINS_SET_MAX_JSON (16u * 1024)

typedef Bettercompute__Join__V1__SignedResponse signed_response;
typedef Bettercompute__Join__V1__PinsUpdate pins_update;

static void pins_clear(struct bc_client_pin *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		EVP_PKEY_free(keys[i].key);
	memset(keys, 0, n * sizeof(*keys));
}

void bc_pins_update_free(struct bc_pins_update *u)
{
	if (u == NULL)
		return;
	pins_clear(u->keys, u->n_keys);
	memset(u, 0, sizeof(*u));
}

const char *bc_client_pin_state_name(int state)
{
	return state == BC_CLIENT_PIN_KEPT ? "kept" : bc_join_key_state_name(state);
}

static int pin_state_of(const char *name, int allow_kept)
{
	if (allow_kept && name != NULL && strcmp(name, "kept") == 0)
		return BC_CLIENT_PIN_KEPT;
	return bc_join_key_state_of(name);
}

/* One key from its use, state, key id and SPKI: the id must be the key's own. */
static int read_pin(const char *use, const char *state, const char *kid, const uint8_t *spki,
                    size_t spki_len, int allow_kept, struct bc_client_pin *k)
{
	int rc;

	memset(k, 0, sizeof(*k));
	if ((k->use = bc_join_key_use_of(use)) == 0 ||
	    (k->state = pin_state_of(state, allow_kept)) == 0)
		return BC_ERR_INVALID;
	if ((rc = bc_key_from_spki(spki, spki_len, &k->key)) != 0)
		return rc == BC_ERR_NOMEM ? rc : BC_ERR_INVALID;
	if ((rc = bc_key_id(k->key, k->kid)) != 0 ||
	    (rc = bc_p256_public_point(k->key, k->point)) != 0)
		return rc;
	if (kid == NULL || strcmp(kid, k->kid) != 0)
		return BC_ERR_INVALID;
	return 0;
}

/* A set: at least one key, each listed once, exactly one active key of each use. */
static int set_ok(const struct bc_client_pin *keys, size_t n)
{
	int active[3] = {0, 0, 0};

	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < i; j++)
			if (strcmp(keys[i].kid, keys[j].kid) == 0)
				return 0;
		if (keys[i].state == BC_JOIN_KEY_ACTIVE)
			active[keys[i].use]++;
	}
	return active[BC_JOIN_KEY_SIGNING] == 1 && active[BC_JOIN_KEY_ENCRYPTION] == 1;
}

static int read_statement(const pins_update *b, struct bc_pins_update *u)
{
	int rc;

	if (b->sequence < 1 || b->n_keys < 2 || b->n_keys > BC_JOIN_KEYS_MAX)
		return BC_ERR_INVALID;
	for (size_t i = 0; i < b->n_keys; i++) {
		const Bettercompute__Join__V1__PinnedKey *k = b->keys[i];
		rc = read_pin(k->use, k->state, k->key_id, k->spki.data, k->spki.len, 0,
		              &u->keys[i]);
		u->n_keys = i + 1;
		if (rc != 0)
			return rc;
	}
	if (!set_ok(u->keys, u->n_keys))
		return BC_ERR_INVALID;
	u->sequence = b->sequence;
	u->issued_at_ms = b->issued_at_ms;
	return 0;
}

static int refuse(const char **reason, const char *why, int rc, char *err, size_t errlen,
                  const char *what)
{
	*reason = why;
	bc_errf(err, errlen, "pins update: %s (%s)", what, why);
	return rc;
}

/* The envelope: a pinned signer, its signature under pins-update. */
static int open_envelope(const struct bc_client_pins *pins, const uint8_t *stmt, size_t len,
                         signed_response **sr, const char **reason, char *err, size_t errlen)
{
	const uint8_t *point;

	if (len == 0 || len > BC_CLIENT_MAX_RESPONSE ||
	    (*sr = bettercompute__join__v1__signed_response__unpack(NULL, len, stmt)) == NULL)
		return refuse(reason, BC_PINS_R_MALFORMED, BC_ERR_INVALID, err, errlen,
		              "not a SignedResponse");
	if (strlen((*sr)->key_id) > BC_KEY_ID_LEN ||
	    (point = bc_client_pinned_signer(pins, (*sr)->key_id)) == NULL)
		return refuse(reason, BC_PINS_R_SIGNER, BC_ERR_VERIFY, err, errlen,
		              "signed by a key this agent does not pin");
	if (bc_es256_verify(point, BC_PURPOSE_PINS_UPDATE, (*sr)->body.data, (*sr)->body.len,
	                    (*sr)->signature.data, (*sr)->signature.len) != 0)
		return refuse(reason, BC_PINS_R_SIGNATURE, BC_ERR_VERIFY, err, errlen,
		              "the signature does not verify under the pinned key with purpose "
		              "pins-update");
	return 0;
}

static int check_body(const struct bc_client_pins *pins, const pins_update *b,
                      struct bc_pins_update *u, const char **reason, char *err, size_t errlen)
{
	int rc;

	if ((rc = read_statement(b, u)) != 0)
		return rc == BC_ERR_NOMEM ? rc
		                          : refuse(reason, BC_PINS_R_MALFORMED, BC_ERR_INVALID, err,
		                                   errlen, "a malformed key set or sequence");
	if (!bc_trust_domain_valid(b->trust_domain) ||
	    (pins->trust_domain != NULL && strcmp(b->trust_domain, pins->trust_domain) != 0))
		return refuse(reason, BC_PINS_R_TRUST_DOMAIN, BC_ERR_VERIFY, err, errlen,
		              "for another trust domain than the pinned one");
	if (u->sequence < pins->sequence) {
		bc_errf(err, errlen, "pins update: sequence %lld, older than the pins' %lld (%s)",
		        (long long)u->sequence, (long long)pins->sequence, BC_PINS_R_OLDER);
		*reason = BC_PINS_R_OLDER;
		return BC_ERR_VERIFY;
	}
	return 0;
}

int bc_client_pins_update_open(const struct bc_client_pins *pins, const uint8_t *stmt, size_t len,
                               struct bc_pins_update *out, const char **reason, char *err,
                               size_t errlen)
{
	struct bc_pins_update u;
	signed_response *sr = NULL;
	pins_update *b = NULL;
	int rc;

	memset(&u, 0, sizeof(u));
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	bc_errf(err, errlen, "%s", "");
	if (pins == NULL || pins->join_signing_kid == NULL || out == NULL || reason == NULL ||
	    (stmt == NULL && len > 0))
		return BC_ERR_INVALID;
	*reason = NULL;
	if ((rc = open_envelope(pins, stmt, len, &sr, reason, err, errlen)) != 0)
		goto out;
	if ((b = bettercompute__join__v1__pins_update__unpack(NULL, sr->body.len, sr->body.data)) ==
	    NULL) {
		rc = refuse(reason, BC_PINS_R_MALFORMED, BC_ERR_INVALID, err, errlen,
		            "the signed body is not a PinsUpdate");
		goto out;
	}
	if ((rc = check_body(pins, b, &u, reason, err, errlen)) != 0)
		goto out;
	memcpy(u.signer_kid, sr->key_id, strlen(sr->key_id) + 1);
	*out = u;
	memset(&u, 0, sizeof(u));
out:
	if (rc == BC_ERR_NOMEM)
		bc_errf(err, errlen, "pins update: out of memory");
	bc_pins_update_free(&u);
	if (b != NULL)
		bettercompute__join__v1__pins_update__free_unpacked(b, NULL);
	if (sr != NULL)
		bettercompute__join__v1__signed_response__free_unpacked(sr, NULL);
	return rc;
}

static int copy_pin(struct bc_client_pin *dst, const struct bc_client_pin *src, int state)
{
	if (EVP_PKEY_up_ref(src->key) != 1)
		return BC_ERR_NOMEM;
	*dst = *src;
	dst->state = state;
	return 0;
}

static const struct bc_client_pin *find(const struct bc_client_pin *keys, size_t n, const char *kid)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i].kid, kid) == 0)
			return &keys[i];
	return NULL;
}

/* Makes keys[0..n) the pins' set: join_signing, its id and point, join_encryption
 * become the active ones (set_ok: there is one of each). Takes the keys. */
static int install(struct bc_client_pins *pins, struct bc_client_pin *keys, size_t n,
                   int64_t sequence)
{
	const struct bc_client_pin *sign = NULL, *enc = NULL;
	char *kid;

	for (size_t i = 0; i < n; i++) {
		if (keys[i].state == BC_JOIN_KEY_ACTIVE && keys[i].use == BC_JOIN_KEY_SIGNING)
			sign = &keys[i];
		else if (keys[i].state == BC_JOIN_KEY_ACTIVE)
			enc = &keys[i];
	}
	if (sign == NULL || enc == NULL)
		return BC_ERR_INVALID;
	if ((kid = strdup(sign->kid)) == NULL || EVP_PKEY_up_ref(sign->key) != 1 ||
	    EVP_PKEY_up_ref(enc->key) != 1) {
		free(kid); /* an up_ref only fails for an unusable key object: not reached */
		return BC_ERR_NOMEM;
	}
	pins_clear(pins->keys, pins->n_keys);
	EVP_PKEY_free(pins->join_signing);
	EVP_PKEY_free(pins->join_encryption);
	free(pins->join_signing_kid);
	pins->join_signing = sign->key;
	pins->join_signing_kid = kid;
	memcpy(pins->join_signing_point, sign->point, 65);
	pins->join_encryption = enc->key;
	memcpy(pins->keys, keys, n * sizeof(*keys));
	pins->n_keys = n;
	pins->sequence = sequence;
	return 0;
}

int bc_client_pins_apply(struct bc_client_pins *pins, const struct bc_pins_update *u, int *changed)
{
	struct bc_client_pin keys[BC_JOIN_KEYS_MAX];
	size_t n = 0;
	int rc = 0;

	*changed = 0;
	if (u->sequence <= pins->sequence)
		return u->sequence == pins->sequence ? 0 : BC_ERR_INVALID;
	memset(keys, 0, sizeof(keys));
	for (size_t i = 0; rc == 0 && i < u->n_keys; i++)
		if (u->keys[i].state != BC_JOIN_KEY_RETIRED)
			if ((rc = copy_pin(&keys[n], &u->keys[i], u->keys[i].state)) == 0)
				n++;
	/* an earlier pin the statement does not name stays until one marks it retired */
	for (size_t i = 0; rc == 0 && i < pins->n_keys && n < BC_JOIN_KEYS_MAX; i++)
		if (find(u->keys, u->n_keys, pins->keys[i].kid) == NULL)
			if ((rc = copy_pin(&keys[n], &pins->keys[i], BC_CLIENT_PIN_KEPT)) == 0)
				n++;
	if (rc == 0 && (rc = install(pins, keys, n, u->sequence)) == 0) {
		*changed = 1;
		return 0;
	}
	pins_clear(keys, n);
	return rc;
}

int bc_client_pins_set_to_json(const struct bc_client_pins *pins, const char *base, char **json)
{
	json_t *j = NULL, *arr;
	uint8_t *spki = NULL;
	size_t len;
	char *b64 = NULL;
	int rc = BC_ERR_NOMEM;

	*json = NULL;
	if ((j = json_pack("{s:s, s:I, s:[]}", "base", base, "sequence", (json_int_t)pins->sequence,
	                   "keys")) == NULL)
		goto out;
	arr = json_object_get(j, "keys");
	for (size_t i = 0; i < pins->n_keys; i++) {
		const struct bc_client_pin *k = &pins->keys[i];
		if ((rc = bc_key_spki(k->key, &spki, &len)) != 0)
			goto out;
		rc = BC_ERR_NOMEM;
		if ((b64 = bc_b64_encode(spki, len)) == NULL ||
		    json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "use",
		                                         bc_join_key_use_name(k->use), "state",
		                                         bc_client_pin_state_name(k->state),
		                                         "keyId", k->kid, "key", b64)) != 0)
			goto out;
		free(spki);
		free(b64);
		spki = NULL;
		b64 = NULL;
	}
	rc = (*json = bc_json_dump(j)) == NULL ? BC_ERR_NOMEM : 0;
out:
	free(spki);
	free(b64);
	json_decref(j);
	return rc;
}

static int read_set_key(const json_t *o, struct bc_client_pin *k)
{
	const char *use, *state, *kid, *b64;
	uint8_t *der = NULL;
	size_t len = 0;
	int rc;

	memset(k, 0, sizeof(*k));
	if (!json_is_object(o) || json_object_size(o) != 4 || bc_json_get_string(o, "use", &use) ||
	    bc_json_get_string(o, "state", &state) || bc_json_get_string(o, "keyId", &kid) ||
	    bc_json_get_string(o, "key", &b64) || use == NULL || state == NULL || kid == NULL ||
	    b64 == NULL || bc_b64_decode(b64, strlen(b64), &der, &len) != 0)
		return BC_ERR_INVALID;
	rc = read_pin(use, state, kid, der, len, 1, k);
	free(der);
	return rc;
}

int bc_client_pins_set_from_json(struct bc_client_pins *pins, const char *json, size_t len,
                                 const char *base, int *stale, char *err, size_t errlen)
{
	const char *b = NULL;
	struct bc_client_pin keys[BC_JOIN_KEYS_MAX];
	json_t *j = NULL, *arr;
	int64_t seq = 0;
	size_t n = 0;
	char jerr[160];
	int rc = BC_ERR_CONFIG;

	memset(keys, 0, sizeof(keys));
	*stale = 0;
	bc_errf(err, errlen, "%s", "");
	if (bc_json_parse(json, len, PINS_SET_MAX_JSON, &j, jerr, sizeof(jerr)) != 0) {
		bc_errf(err, errlen, "not valid JSON: %s", jerr);
		goto out;
	}
	arr = json_object_get(j, "keys");
	if (!json_is_object(j) || json_object_size(j) != 3 || bc_json_get_string(j, "base", &b) ||
	    b == NULL || bc_json_get_int(j, "sequence", &seq) || seq < 1 || !json_is_array(arr) ||
	    json_array_size(arr) < 2 || json_array_size(arr) > BC_JOIN_KEYS_MAX) {
		bc_errf(err, errlen,
		        "not {\"base\": key id, \"sequence\": 1 or more, \"keys\": [2 to "
		        "%d keys]}",
		        BC_JOIN_KEYS_MAX);
		goto out;
	}
	if (base == NULL || strcmp(b, base) != 0) {
		*stale = 1;
		rc = 0;
		goto out;
	}
	for (n = 0; n < json_array_size(arr); n++) {
		if ((rc = read_set_key(json_array_get(arr, n), &keys[n])) != 0) {
			n++;
			bc_errf(err, errlen,
			        "key %zu: not a join key of a known use and state "
			        "whose keyId is its key's",
			        n);
			rc = rc == BC_ERR_NOMEM ? rc : BC_ERR_CONFIG;
			goto out;
		}
	}
	rc = BC_ERR_CONFIG;
	if (!set_ok(keys, n)) {
		bc_errf(err, errlen, "a key listed twice, or not one active key of each use");
		goto out;
	}
	if ((rc = install(pins, keys, n, seq)) == 0)
		n = 0; /* taken */
out:
	pins_clear(keys, n);
	json_decref(j);
	return rc;
}
