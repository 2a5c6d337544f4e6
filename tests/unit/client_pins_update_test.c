/* Join key rotation on the agent's side: the pins-update statement opened against the
 * pins (each refusal reason by name), applied (next keys pinned, retired keys
 * unpinned, unnamed pins kept), answers verified under any pinned signing key, and the
 * pin set's JSON for bcd's pins file; and the pki's join key set it is made from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bettercompute/join/v1/join.pb-c.h"

#define TD "pins.test"

static struct {
	bc_pki *pki;
	EVP_PKEY *next_sign, *next_enc, *stranger;
	char next_sign_kid[65], next_enc_kid[65], enc_kid[65], stranger_kid[65];
} T;

static char *pub_pem(EVP_PKEY *k)
{
	char *p = NULL;

	assert_int_equal(bc_pubkey_to_pem(k, &p), 0);
	return p;
}

/* The pins of T.pki as `daemon config --json` gives them (http on loopback, no CA). */
static void make_pins(struct bc_client_pins *p)
{
	char *sig = pub_pem(T.pki->join_signing), *enc = pub_pem(T.pki->join_encryption), err[256];
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "server", "http://127.0.0.1:1",
	                      "joinSigningKeyId", T.pki->join_signing_kid, "joinSigningKey", sig,
	                      "joinEncryptionKey", enc, "trustDomain", TD);
	char *s = json_dumps(j, 0);

	assert_int_equal(bc_client_pins_from_json(s, strlen(s), p, err, sizeof(err)), 0);
	free(s);
	free(sig);
	free(enc);
	json_decref(j);
}

struct key_spec {
	const char *use, *state;
	EVP_PKEY *key;
	const char *kid; /* NULL: the key's own */
};

/* A PinsUpdate body with keys, sequence and trust domain (malloc'd). */
static uint8_t *body_of(const struct key_spec *ks, size_t n, int64_t seq, const char *td,
                        size_t *len)
{
	Bettercompute__Join__V1__PinsUpdate u = BETTERCOMPUTE__JOIN__V1__PINS_UPDATE__INIT;
	Bettercompute__Join__V1__PinnedKey keys[BC_JOIN_KEYS_MAX + 2], *ptrs[BC_JOIN_KEYS_MAX + 2];
	uint8_t *spki[BC_JOIN_KEYS_MAX + 2], *out;
	char kids[BC_JOIN_KEYS_MAX + 2][65];

	for (size_t i = 0; i < n; i++) {
		size_t l = 0;
		bettercompute__join__v1__pinned_key__init(&keys[i]);
		assert_int_equal(bc_key_spki(ks[i].key, &spki[i], &l), 0);
		assert_int_equal(bc_key_id(ks[i].key, kids[i]), 0);
		keys[i].use = (char *)ks[i].use;
		keys[i].state = (char *)ks[i].state;
		keys[i].key_id = ks[i].kid != NULL ? (char *)ks[i].kid : kids[i];
		keys[i].spki.data = spki[i];
		keys[i].spki.len = l;
		ptrs[i] = &keys[i];
	}
	u.sequence = seq;
	u.issued_at_ms = 1790000000000LL;
	u.trust_domain = (char *)td;
	u.keys = ptrs;
	u.n_keys = n;
	*len = bettercompute__join__v1__pins_update__get_packed_size(&u);
	out = malloc(*len + 1);
	assert_non_null(out);
	bettercompute__join__v1__pins_update__pack(&u, out);
	for (size_t i = 0; i < n; i++)
		free(spki[i]);
	return out;
}

/* A SignedResponse of body by signer under purpose, naming kid (malloc'd). */
static uint8_t *wrap(const uint8_t *body, size_t blen, EVP_PKEY *signer, const char *purpose,
                     const char *kid, size_t *len)
{
	Bettercompute__Join__V1__SignedResponse sr = BETTERCOMPUTE__JOIN__V1__SIGNED_RESPONSE__INIT;
	struct bc_signer s;
	uint8_t sig[BC_SIG_LEN], *out;

	assert_int_equal(bc_signer_init(&s, signer, NULL, NULL), 0);
	assert_int_equal(bc_es256_sign(&s, purpose, body, blen, sig), 0);
	sr.body.data = (uint8_t *)body;
	sr.body.len = blen;
	sr.signature.data = sig;
	sr.signature.len = sizeof(sig);
	sr.key_id = (char *)kid;
	*len = bettercompute__join__v1__signed_response__get_packed_size(&sr);
	out = malloc(*len);
	assert_non_null(out);
	bettercompute__join__v1__signed_response__pack(&sr, out);
	return out;
}

/* A statement of keys signed by the pki's active signing key under pins-update. */
static uint8_t *statement(const struct key_spec *ks, size_t n, int64_t seq, size_t *len)
{
	size_t blen;
	uint8_t *b = body_of(ks, n, seq, TD, &blen);
	uint8_t *s = wrap(b, blen, T.pki->join_signing, BC_PURPOSE_PINS_UPDATE,
	                  T.pki->join_signing_kid, len);

	free(b);
	return s;
}

/* The pki's active pair plus a next signing key. */
static uint8_t *with_next(int64_t seq, size_t *len)
{
	struct key_spec ks[] = {{"join-signing", "active", T.pki->join_signing, NULL},
	                        {"join-encryption", "active", T.pki->join_encryption, NULL},
	                        {"join-signing", "next", T.next_sign, NULL},
	                        {"join-encryption", "next", T.next_enc, NULL}};
	return statement(ks, 4, seq, len);
}

static int open_st(const struct bc_client_pins *p, const uint8_t *s, size_t len,
                   struct bc_pins_update *u, const char **reason)
{
	char err[512];
	int rc = bc_client_pins_update_open(p, s, len, u, reason, err, sizeof(err));

	if (rc != 0)
		assert_non_null(strstr(err, *reason)); /* the one line names the reason */
	return rc;
}

/* A JoinResponseBody deferral signed by key (kid its own) under join-response, opened. */
static int answer_by(const struct bc_client_pins *p, EVP_PKEY *key, const char *kid)
{
	Bettercompute__Join__V1__JoinResponseBody b =
	    BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__INIT;
	Bettercompute__Join__V1__JoinPending pend = BETTERCOMPUTE__JOIN__V1__JOIN_PENDING__INIT;
	struct bc_join_answer a;
	uint8_t h[32] = {1}, *body, *r;
	size_t blen, len;
	char err[512];
	int rc;

	b.csr_sha256.data = h;
	b.csr_sha256.len = 32;
	pend.request_id = "jr_01";
	b.pending = &pend;
	b.deferral_case = BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__DEFERRAL_PENDING;
	blen = bettercompute__join__v1__join_response_body__get_packed_size(&b);
	body = malloc(blen);
	bettercompute__join__v1__join_response_body__pack(&b, body);
	r = wrap(body, blen, key, BC_PURPOSE_JOIN_RESPONSE, kid, &len);
	rc = bc_client_open_join_response(p, r, len, h, &a, err, sizeof(err));
	bc_join_answer_free(&a);
	free(body);
	free(r);
	return rc;
}

static void test_next_pinned(void **state)
{
	struct bc_client_pins p;
	struct bc_pins_update u;
	const char *reason = NULL;
	uint8_t *s;
	size_t len;
	int changed = 0;

	(void)state;
	make_pins(&p);
	assert_int_equal(p.n_keys, 2);
	assert_int_equal(p.sequence, 0);
	/* not pinned yet: an answer by the next key is refused */
	assert_int_equal(answer_by(&p, T.next_sign, T.next_sign_kid), BC_ERR_VERIFY);
	s = with_next(3, &len);
	assert_int_equal(open_st(&p, s, len, &u, &reason), 0);
	assert_null(reason);
	assert_int_equal(u.sequence, 3);
	assert_int_equal(u.n_keys, 4);
	assert_string_equal(u.signer_kid, T.pki->join_signing_kid);
	assert_int_equal(bc_client_pins_apply(&p, &u, &changed), 0);
	assert_int_equal(changed, 1);
	assert_int_equal(p.sequence, 3);
	assert_int_equal(p.n_keys, 4);
	assert_string_equal(p.join_signing_kid, T.pki->join_signing_kid);
	assert_true(bc_key_same(p.join_encryption, T.pki->join_encryption));
	/* both pinned signing keys verify answers; a stranger's does not */
	assert_int_equal(answer_by(&p, T.pki->join_signing, T.pki->join_signing_kid), 0);
	assert_int_equal(answer_by(&p, T.next_sign, T.next_sign_kid), 0);
	assert_int_equal(answer_by(&p, T.stranger, T.stranger_kid), BC_ERR_VERIFY);
	/* the same statement again: accepted, nothing changes */
	bc_pins_update_free(&u);
	assert_int_equal(open_st(&p, s, len, &u, &reason), 0);
	assert_int_equal(bc_client_pins_apply(&p, &u, &changed), 0);
	assert_int_equal(changed, 0);
	bc_pins_update_free(&u);
	free(s);
	bc_client_pins_free(&p);
}

/* The server switched: the next keys are active and the old ones retired. */
static void test_switch_and_retire(void **state)
{
	struct key_spec ks[] = {{"join-signing", "active", T.next_sign, NULL},
	                        {"join-encryption", "active", T.next_enc, NULL},
	                        {"join-signing", "retired", T.pki->join_signing, NULL},
	                        {"join-encryption", "retired", T.pki->join_encryption, NULL}};
	struct bc_client_pins p;
	struct bc_pins_update u;
	const char *reason = NULL;
	uint8_t *s, *b;
	size_t len, blen;
	int changed;

	(void)state;
	make_pins(&p);
	s = with_next(3, &len);
	assert_int_equal(open_st(&p, s, len, &u, &reason), 0);
	assert_int_equal(bc_client_pins_apply(&p, &u, &changed), 0);
	bc_pins_update_free(&u);
	free(s);
	/* signed by the new key, which the agent pins as next */
	b = body_of(ks, 4, 5, TD, &blen);
	s = wrap(b, blen, T.next_sign, BC_PURPOSE_PINS_UPDATE, T.next_sign_kid, &len);
	assert_int_equal(open_st(&p, s, len, &u, &reason), 0);
	assert_int_equal(bc_client_pins_apply(&p, &u, &changed), 0);
	assert_int_equal(changed, 1);
	assert_int_equal(p.n_keys, 2);
	assert_string_equal(p.join_signing_kid, T.next_sign_kid);
	assert_true(bc_key_same(p.join_encryption, T.next_enc)); /* tokens sealed to it */
	assert_int_equal(answer_by(&p, T.next_sign, T.next_sign_kid), 0);
	/* retired: unpinned */
	assert_int_equal(answer_by(&p, T.pki->join_signing, T.pki->join_signing_kid),
	                 BC_ERR_VERIFY);
	bc_pins_update_free(&u);
	/* older: the statement before the switch, now below the pins' sequence */
	free(s);
	free(b);
	b = body_of(ks, 4, 4, TD, &blen);
	s = wrap(b, blen, T.next_sign, BC_PURPOSE_PINS_UPDATE, T.next_sign_kid, &len);
	assert_int_equal(open_st(&p, s, len, &u, &reason), BC_ERR_VERIFY);
	assert_string_equal(reason, BC_PINS_R_OLDER);
	free(s);
	free(b);
	bc_client_pins_free(&p);
}

/* A pin the statement does not name stays (kept) until one marks it retired. */
static void test_unnamed_kept(void **state)
{
	struct key_spec ks[] = {{"join-signing", "active", T.pki->join_signing, NULL},
	                        {"join-encryption", "active", T.next_enc, NULL}};
	struct bc_client_pins p;
	struct bc_pins_update u;
	const char *reason;
	uint8_t *s;
	size_t len;
	int changed;

	(void)state;
	make_pins(&p);
	s = statement(ks, 2, 2, &len);
	assert_int_equal(open_st(&p, s, len, &u, &reason), 0);
	assert_int_equal(bc_client_pins_apply(&p, &u, &changed), 0);
	assert_int_equal(p.n_keys, 3);
	assert_string_equal(p.keys[2].kid, T.enc_kid);
	assert_int_equal(p.keys[2].state, BC_CLIENT_PIN_KEPT);
	assert_string_equal(bc_client_pin_state_name(p.keys[2].state), "kept");
	assert_true(bc_key_same(p.join_encryption, T.next_enc));
	bc_pins_update_free(&u);
	free(s);
	bc_client_pins_free(&p);
}

static void expect_refused(const uint8_t *s, size_t len, int rc, const char *why)
{
	struct bc_client_pins p;
	struct bc_pins_update u;
	const char *reason = NULL;

	make_pins(&p);
	assert_int_equal(open_st(&p, s, len, &u, &reason), rc);
	assert_non_null(reason);
	assert_string_equal(reason, why);
	assert_int_equal(u.n_keys, 0); /* nothing handed out */
	bc_client_pins_free(&p);
}

static void test_wrong_signer(void **state)
{
	size_t blen, len;
	struct key_spec ks[] = {{"join-signing", "active", T.stranger, NULL},
	                        {"join-encryption", "active", T.pki->join_encryption, NULL}};
	uint8_t *b = body_of(ks, 2, 9, TD, &blen), *s;

	(void)state;
	/* a key the agent does not pin, under its own key id */
	s = wrap(b, blen, T.stranger, BC_PURPOSE_PINS_UPDATE, T.stranger_kid, &len);
	expect_refused(s, len, BC_ERR_VERIFY, BC_PINS_R_SIGNER);
	free(s);
	/* a stranger's signature under the pinned key id: the signature fails */
	s = wrap(b, blen, T.stranger, BC_PURPOSE_PINS_UPDATE, T.pki->join_signing_kid, &len);
	expect_refused(s, len, BC_ERR_VERIFY, BC_PINS_R_SIGNATURE);
	free(s);
	free(b);
}

static void test_wrong_purpose(void **state)
{
	size_t blen, len;
	struct key_spec ks[] = {{"join-signing", "active", T.pki->join_signing, NULL},
	                        {"join-encryption", "active", T.pki->join_encryption, NULL}};
	uint8_t *b = body_of(ks, 2, 2, TD, &blen), *s;

	(void)state;
	/* the pinned key's signature, but as a join answer's */
	s = wrap(b, blen, T.pki->join_signing, BC_PURPOSE_JOIN_RESPONSE, T.pki->join_signing_kid,
	         &len);
	expect_refused(s, len, BC_ERR_VERIFY, BC_PINS_R_SIGNATURE);
	free(s);
	free(b);
}

static void test_trust_domain(void **state)
{
	size_t blen, len;
	struct key_spec ks[] = {{"join-signing", "active", T.pki->join_signing, NULL},
	                        {"join-encryption", "active", T.pki->join_encryption, NULL}};
	uint8_t *b = body_of(ks, 2, 2, "other.test", &blen), *s;

	(void)state;
	s = wrap(b, blen, T.pki->join_signing, BC_PURPOSE_PINS_UPDATE, T.pki->join_signing_kid,
	         &len);
	expect_refused(s, len, BC_ERR_VERIFY, BC_PINS_R_TRUST_DOMAIN);
	free(s);
	free(b);
}

static void malformed_set(const struct key_spec *ks, size_t n, int64_t seq)
{
	size_t len;
	uint8_t *s = statement(ks, n, seq, &len);

	expect_refused(s, len, BC_ERR_INVALID, BC_PINS_R_MALFORMED);
	free(s);
}

static void test_malformed(void **state)
{
	EVP_PKEY *sg = T.pki->join_signing, *en = T.pki->join_encryption;
	struct key_spec good[] = {{"join-signing", "active", sg, NULL},
	                          {"join-encryption", "active", en, NULL}};
	struct key_spec bad_use[] = {{"join-signing", "active", sg, NULL},
	                             {"join-encryption", "active", en, NULL},
	                             {"node-ca", "next", T.next_sign, NULL}};
	struct key_spec bad_state[] = {{"join-signing", "active", sg, NULL},
	                               {"join-encryption", "active", en, NULL},
	                               {"join-signing", "kept", T.next_sign, NULL}};
	struct key_spec bad_kid[] = {{"join-signing", "active", sg, NULL},
	                             {"join-encryption", "active", en, T.stranger_kid}};
	struct key_spec two_active[] = {{"join-signing", "active", sg, NULL},
	                                {"join-encryption", "active", en, NULL},
	                                {"join-signing", "active", T.next_sign, NULL}};
	struct key_spec no_enc[] = {{"join-signing", "active", sg, NULL},
	                            {"join-encryption", "next", en, NULL}};
	struct key_spec twice[] = {{"join-signing", "active", sg, NULL},
	                           {"join-encryption", "active", en, NULL},
	                           {"join-signing", "next", sg, NULL}};
	struct key_spec many[BC_JOIN_KEYS_MAX + 1];
	static const uint8_t junk[] = {0xff, 0x01, 0x02};
	size_t len;
	uint8_t *s;

	(void)state;
	expect_refused(junk, sizeof(junk), BC_ERR_INVALID, BC_PINS_R_MALFORMED);
	malformed_set(good, 2, 0);
	malformed_set(good, 1, 2);
	malformed_set(bad_use, 3, 2);
	malformed_set(bad_state, 3, 2);
	malformed_set(bad_kid, 2, 2);
	malformed_set(two_active, 3, 2);
	malformed_set(no_enc, 2, 2);
	malformed_set(twice, 3, 2);
	for (size_t i = 0; i < BC_JOIN_KEYS_MAX + 1; i++)
		many[i] = (struct key_spec){"join-signing", "next", T.next_sign, NULL};
	many[0] = good[0];
	many[1] = good[1];
	malformed_set(many, BC_JOIN_KEYS_MAX + 1, 2);
	/* a signed body that is not a PinsUpdate */
	s = wrap(junk, sizeof(junk), T.pki->join_signing, BC_PURPOSE_PINS_UPDATE,
	         T.pki->join_signing_kid, &len);
	expect_refused(s, len, BC_ERR_INVALID, BC_PINS_R_MALFORMED);
	free(s);
}

static void test_set_json(void **state)
{
	struct bc_client_pins p, q;
	struct bc_pins_update u;
	const char *reason;
	char *json = NULL, err[256];
	uint8_t *s;
	size_t len;
	int changed, stale = 1;

	(void)state;
	make_pins(&p);
	make_pins(&q);
	s = with_next(3, &len);
	assert_int_equal(open_st(&p, s, len, &u, &reason), 0);
	assert_int_equal(bc_client_pins_apply(&p, &u, &changed), 0);
	assert_int_equal(bc_client_pins_set_to_json(&p, "base-kid", &json), 0);
	/* another base: stale, nothing changes */
	assert_int_equal(bc_client_pins_set_from_json(&q, json, strlen(json), "other-kid", &stale,
	                                              err, sizeof(err)),
	                 0);
	assert_int_equal(stale, 1);
	assert_int_equal(q.n_keys, 2);
	assert_int_equal(bc_client_pins_set_from_json(&q, json, strlen(json), "base-kid", &stale,
	                                              err, sizeof(err)),
	                 0);
	assert_int_equal(stale, 0);
	assert_int_equal(q.sequence, 3);
	assert_int_equal(q.n_keys, 4);
	assert_int_equal(answer_by(&q, T.next_sign, T.next_sign_kid), 0);
	/* refused: not JSON, a key id not its key's, no active signing key */
	assert_int_equal(
	    bc_client_pins_set_from_json(&q, "{", 1, "base-kid", &stale, err, sizeof(err)),
	    BC_ERR_CONFIG);
	char *bad = strdup(json), *at = strstr(bad, T.next_sign_kid);
	at[0] = at[0] == '0' ? '1' : '0';
	assert_int_equal(bc_client_pins_set_from_json(&q, bad, strlen(bad), "base-kid", &stale, err,
	                                              sizeof(err)),
	                 BC_ERR_CONFIG);
	assert_string_equal(err, "key 3: not a join key of a known use and state whose keyId is "
	                         "its key's");
	free(bad);
	bad = strdup(json);
	at = strstr(bad, "\"active\"");
	memcpy(at, "\"next\"  ", 8);
	assert_int_equal(bc_client_pins_set_from_json(&q, bad, strlen(bad), "base-kid", &stale, err,
	                                              sizeof(err)),
	                 BC_ERR_CONFIG);
	free(bad);
	assert_int_equal(q.sequence, 3); /* unchanged by the refusals */
	free(json);
	bc_pins_update_free(&u);
	free(s);
	bc_client_pins_free(&p);
	bc_client_pins_free(&q);
}

/* A set's join keys: the current key of each use is the active one activated last,
 * tokens are tried with the current encryption key first and never a retired one, the
 * statement names the current pair, the next keys and the retired ones (not an older
 * active key), and a set that breaks the rules is refused. */
static struct bc_join_key jk(enum bc_join_key_use use, enum bc_join_key_state state, EVP_PKEY *key,
                             int64_t id, int64_t activated)
{
	struct bc_join_key k = {.use = use, .state = state, .id = id, .activated_ms = activated};

	assert_int_equal(EVP_PKEY_up_ref(key), 1);
	k.key = key;
	return k;
}

static void test_set_join_keys(void **state)
{
	struct bc_node_cas *cas = NULL;
	const struct bc_join_key *keys[BC_JOIN_SET_MAX], *cur;
	EVP_PKEY *old_enc = NULL;
	size_t n;

	(void)state;
	assert_int_equal(bc_pki_bundle_set(T.pki, &cas), 0);
	assert_int_equal(cas->n_join, 2);
	cur = bc_node_cas_join_current(cas, BC_JOIN_KEY_SIGNING);
	assert_string_equal(cur->kid, T.pki->join_signing_kid);
	/* a set of the bundle's pair plus: a next signing key, an older active encryption
	   key, a retired one */
	assert_int_equal(bc_node_cas_add_join(cas, &(struct bc_join_key){0}), 0);
	assert_int_equal(bc_node_cas_finish_join(cas), BC_ERR_INVALID); /* no key */
	cas->n_join--;
	assert_int_equal(bc_key_generate(&old_enc), 0);
	struct bc_join_key more[] = {
	    jk(BC_JOIN_KEY_SIGNING, BC_JOIN_KEY_NEXT, T.next_sign, 7, 0),
	    jk(BC_JOIN_KEY_ENCRYPTION, BC_JOIN_KEY_ACTIVE, old_enc, 1, -5),
	    jk(BC_JOIN_KEY_ENCRYPTION, BC_JOIN_KEY_RETIRED, T.stranger, 5, -9),
	};
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(bc_node_cas_add_join(cas, &more[i]), 0);
	assert_int_equal(bc_node_cas_finish_join(cas), 0);
	cur = bc_node_cas_join_current(cas, BC_JOIN_KEY_ENCRYPTION);
	assert_string_equal(cur->kid, T.enc_kid); /* activated after old_enc */
	n = bc_node_cas_join_openers(cas, keys);
	assert_int_equal(n, 2);
	assert_string_equal(keys[0]->kid, T.enc_kid);
	assert_true(bc_key_same(keys[1]->key, old_enc));
	n = bc_node_cas_join_announced(cas, keys);
	assert_int_equal(n, 4);
	assert_int_equal(keys[0]->use, BC_JOIN_KEY_SIGNING);
	assert_int_equal(keys[0]->state, BC_JOIN_KEY_ACTIVE);
	assert_string_equal(keys[2]->kid, T.next_sign_kid);
	assert_int_equal(keys[3]->state, BC_JOIN_KEY_RETIRED);
	assert_string_equal(keys[3]->kid, T.stranger_kid);
	/* the same key twice, or a next key without its private part: refused */
	struct bc_join_key twice = jk(BC_JOIN_KEY_SIGNING, BC_JOIN_KEY_NEXT, T.next_sign, 8, 0);
	assert_int_equal(bc_node_cas_add_join(cas, &twice), 0);
	assert_int_equal(bc_node_cas_finish_join(cas), BC_ERR_INVALID);
	EVP_PKEY_free(cas->join[--cas->n_join].key);
	assert_int_equal(bc_node_cas_finish_join(cas), 0);
	uint8_t *spki = NULL;
	size_t spki_len = 0;
	struct bc_join_key pub = {
	    .use = BC_JOIN_KEY_ENCRYPTION, .state = BC_JOIN_KEY_NEXT, .id = 9};
	assert_int_equal(bc_key_spki(T.next_enc, &spki, &spki_len), 0);
	assert_int_equal(bc_key_from_spki(spki, spki_len, &pub.key), 0);
	free(spki);
	assert_int_equal(bc_node_cas_add_join(cas, &pub), 0);
	assert_int_equal(bc_node_cas_finish_join(cas), BC_ERR_INVALID);
	bc_node_cas_put(cas);
	EVP_PKEY_free(old_enc);
	assert_string_equal(bc_join_key_use_name(BC_JOIN_KEY_ENCRYPTION), "join-encryption");
	assert_null(bc_join_key_state_name(0));
	assert_int_equal(bc_join_key_state_of("next"), BC_JOIN_KEY_NEXT);
	assert_int_equal(bc_join_key_use_of("node-ca"), 0);
}

static int setup(void **state)
{
	(void)state;
	if (bc_pki_generate(TD, &T.pki) != 0 || bc_key_generate(&T.next_sign) != 0 ||
	    bc_key_generate(&T.next_enc) != 0 || bc_key_generate(&T.stranger) != 0 ||
	    bc_key_id(T.next_sign, T.next_sign_kid) != 0 ||
	    bc_key_id(T.next_enc, T.next_enc_kid) != 0 ||
	    bc_key_id(T.pki->join_encryption, T.enc_kid) != 0 ||
	    bc_key_id(T.stranger, T.stranger_kid) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bc_pki_free(T.pki);
	EVP_PKEY_free(T.next_sign);
	EVP_PKEY_free(T.next_enc);
	EVP_PKEY_free(T.stranger);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_next_pinned),   cmocka_unit_test(test_switch_and_retire),
	    cmocka_unit_test(test_unnamed_kept),  cmocka_unit_test(test_wrong_signer),
	    cmocka_unit_test(test_wrong_purpose), cmocka_unit_test(test_trust_domain),
	    cmocka_unit_test(test_malformed),     cmocka_unit_test(test_set_json),
	    cmocka_unit_test(test_set_join_keys),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
