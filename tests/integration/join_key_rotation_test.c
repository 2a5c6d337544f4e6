/* Join key rotation on two replicas of one store: a rotated key is announced as next in
 * the other replica's answers once it read the store, answers are signed by the key
 * activated last and verify under the pins an agent grew from the statements, a token
 * sealed to a next key (or an older active one) opens, one sealed to a retired key is
 * refused token-unreadable, a forced retire hands over to the prepared key at once, and
 * every refusal of the changes is reached by its sentence. Each replica reads the
 * store's set when the test says so (bc_node_cas_refresh), never on a timer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/reasons.h"
#include "bctest.h"
#include "server/admin.h"
#include "server/config.h"
#include "server/node_cas.h"
#include "server/pki_changes.h"
#include "server/server.h"

static struct bct_cp cp, rep;
static char pool_id[64];
static uint8_t secret[32];

static int setup(void **state)
{
	char err[256];

	(void)state;
	if (bct_cp_start(&cp, "") != 0 || bct_cp_replica(&cp, &rep) != 0)
		return -1;
	if (bc_server_secret_load(cp.cfg.secret_file, secret, err, sizeof(err)) != 0)
		return -1;
	return bct_pool(&cp, "root", "default", "{}", pool_id);
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&rep);
	bct_cp_stop(&cp);
	return 0;
}

static const bc_pki *pki_of(struct bct_cp *c)
{
	return bc_server_pki(c->srv);
}

/* Both replicas read the store's set now. */
static void refresh(void)
{
	int64_t known = 0;

	assert_int_equal(bc_node_cas_refresh(bct_store(&cp), pki_of(&cp), secret, &known), 0);
	known = 0;
	assert_int_equal(bc_node_cas_refresh(bct_store(&rep), pki_of(&rep), secret, &known), 0);
}

/* One change on the store: 0 or the error, the refusal in c->why. */
static int change(int (*fn)(bc_store *, struct bc_pki_change *), struct bc_pki_change *c,
                  const char *kind, int64_t id, int force)
{
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->id = id;
	c->force = force;
	return fn(bct_store(&cp), c);
}

static int rotate(struct bc_pki_change *c, const char *kind)
{
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	return bc_pki_key_rotate(bct_store(&cp), pki_of(&cp), secret, c);
}

/* The key of generation id in c's installed set (a reference), NULL when not in it. */
static EVP_PKEY *key_of(struct bct_cp *c, int64_t id)
{
	struct bc_node_cas *cas = bc_pki_node_cas_get(pki_of(c));
	EVP_PKEY *k = NULL;

	assert_non_null(cas);
	for (size_t i = 0; i < cas->n_join; i++)
		if (cas->join[i].id == id && EVP_PKEY_up_ref(cas->join[i].key) == 1)
			k = cas->join[i].key;
	bc_node_cas_put(cas);
	return k;
}

/* A token join on c, the token sealed to seal_to (NULL: c's pinned key): 0 and the
 * verified answer, or BC_ERR_DENIED (the reason in bct_last_reason). */
static int join_on(struct bct_cp *c, EVP_PKEY *seal_to, struct bc_join_answer *ans)
{
	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(&cp, &to, NULL);
	EVP_PKEY *pinned = c->pins.join_encryption;
	int rc;

	if (seal_to != NULL)
		c->pins.join_encryption = seal_to;
	rc = bct_join(c, &(struct bct_join_opts){.token = t}, ans);
	c->pins.join_encryption = pinned;
	free(t);
	return rc;
}

/* The statement of ans opened with c's pins and applied to them, as bcd does. */
static void learn(struct bct_cp *c, const struct bc_join_answer *ans, struct bc_pins_update *u)
{
	const char *reason = NULL;
	char err[256];
	int changed = 0;

	assert_non_null(ans->pins_update);
	assert_int_equal(bc_client_pins_update_open(&c->pins, ans->pins_update,
	                                            ans->pins_update_len, u, &reason, err,
	                                            sizeof(err)),
	                 0);
	assert_int_equal(bc_client_pins_apply(&c->pins, u, &changed), 0);
}

/* The state u announces for the key of kid, 0 when it does not name it. */
static int announced(const struct bc_pins_update *u, const char *kid)
{
	for (size_t i = 0; i < u->n_keys; i++)
		if (strcmp(u->keys[i].kid, kid) == 0)
			return u->keys[i].state;
	return 0;
}

/* 1 when pins hold the key of kid. */
static int pinned(const struct bc_client_pins *pins, const char *kid)
{
	for (size_t i = 0; i < pins->n_keys; i++)
		if (strcmp(pins->keys[i].kid, kid) == 0)
			return 1;
	return 0;
}

static void kid_of(EVP_PKEY *key, char kid[static 65])
{
	assert_int_equal(bc_key_id(key, kid), 0);
}

static void test_signing_key(void **state)
{
	struct bc_join_answer a = {0};
	struct bc_pins_update u = {0};
	struct bc_pki_change c;
	char old[65], next[65];
	int64_t old_id, next_id;
	EVP_PKEY *k;

	(void)state;
	refresh();
	assert_int_equal(join_on(&cp, NULL, &a), 0);
	learn(&cp, &a, &u);
	memcpy(old, u.signer_kid, sizeof(old));
	bc_pins_update_free(&u);
	bc_join_answer_free(&a);

	/* nothing prepared: nothing to activate; the one that signs is not retired */
	assert_int_equal(change(bc_pki_key_activate, &c, BC_PKI_KIND_JOIN_SIGNING, 0, 0),
	                 BC_ERR_CONFLICT);
	assert_non_null(strstr(c.why, "no prepared join signing key to activate"));
	assert_int_equal(change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_SIGNING, 0, 0),
	                 BC_ERR_CONFLICT);
	assert_non_null(strstr(c.why, "only the one that signs answers is active"));

	/* rotate: the other replica announces it as next once it read the store */
	assert_int_equal(rotate(&c, BC_PKI_KIND_JOIN_SIGNING), 0);
	next_id = c.id;
	assert_int_equal(rotate(&c, BC_PKI_KIND_JOIN_SIGNING), BC_ERR_CONFLICT);
	assert_non_null(strstr(c.why, "a join signing key is already prepared"));
	refresh();
	assert_non_null(k = key_of(&rep, next_id));
	kid_of(k, next);
	EVP_PKEY_free(k);
	assert_int_equal(join_on(&rep, NULL, &a), 0);
	learn(&rep, &a, &u);
	assert_string_equal(u.signer_kid, old);
	assert_int_equal(announced(&u, next), BC_JOIN_KEY_NEXT);
	assert_int_equal(announced(&u, old), BC_JOIN_KEY_ACTIVE);
	bc_pins_update_free(&u);
	bc_join_answer_free(&a);

	/* the current key is retired only by force, and only with a next key (there is one
	   now, so that refusal comes later) */
	assert_int_equal(change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_SIGNING, 2, 0),
	                 BC_ERR_CONFLICT);
	assert_non_null(strstr(c.why, "or retire it now with --force if its key is compromised"));

	/* activate: answers on both replicas are signed by it and verify under the pins
	   that learned it; the old key is no longer announced active */
	assert_int_equal(change(bc_pki_key_activate, &c, BC_PKI_KIND_JOIN_SIGNING, 0, 0), 0);
	assert_int_equal(c.id, next_id);
	refresh();
	assert_int_equal(join_on(&rep, NULL, &a), 0);
	learn(&rep, &a, &u);
	assert_string_equal(u.signer_kid, next);
	assert_int_equal(announced(&u, next), BC_JOIN_KEY_ACTIVE);
	assert_int_equal(announced(&u, old), 0); /* kept by agents until retired */
	bc_pins_update_free(&u);
	bc_join_answer_free(&a);
	/* cp's pins never learned the next key: its answer does not verify */
	assert_int_equal(join_on(&cp, NULL, &a), BC_ERR_VERIFY);

	/* retire the old one: announced retired, unpinned */
	old_id = 2;
	assert_int_equal(change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_SIGNING, 0, 0), 0);
	assert_int_equal(c.id, old_id);
	assert_int_equal(c.forced, 0);
	refresh();
	assert_int_equal(join_on(&rep, NULL, &a), 0);
	learn(&rep, &a, &u);
	assert_int_equal(announced(&u, old), BC_JOIN_KEY_RETIRED);
	assert_false(pinned(&rep.pins, old));
	assert_true(pinned(&rep.pins, next));
	bc_pins_update_free(&u);
	bc_join_answer_free(&a);

	/* a compromise of the current key with no next key: refused, then explained */
	assert_int_equal(change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_SIGNING, next_id, 1),
	                 BC_ERR_CONFLICT);
	assert_non_null(strstr(c.why, "no next key is prepared to take over"));
	assert_int_equal(change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_SIGNING, 999, 0),
	                 BC_ERR_CONFLICT);
	assert_non_null(strstr(c.why, "no join signing key of that generation"));
}

static void test_encryption_key(void **state)
{
	struct bc_join_answer a = {0};
	struct bc_pki_change c;
	EVP_PKEY *bundle_enc = pki_of(&cp)->join_encryption, *next = NULL, *third = NULL;
	int64_t next_id, third_id, known;
	char *cfg, b64[65];
	char *pem = NULL;

	(void)state;
	/* rotate: a token sealed to the next key opens on the other replica once it read
	   the store (before, it is unreadable there) */
	assert_int_equal(rotate(&c, BC_PKI_KIND_JOIN_ENCRYPTION), 0);
	next_id = c.id;
	known = 0;
	assert_int_equal(bc_node_cas_refresh(bct_store(&cp), pki_of(&cp), secret, &known), 0);
	assert_non_null(next = key_of(&cp, next_id));
	assert_int_equal(join_on(&rep, next, &a), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&rep), BC_R_TOKEN_UNREADABLE);
	refresh();
	assert_int_equal(join_on(&rep, next, &a), 0);
	bc_join_answer_free(&a);

	/* activate: tokens sealed to either open; daemon config gives the new key */
	assert_int_equal(change(bc_pki_key_activate, &c, BC_PKI_KIND_JOIN_ENCRYPTION, 0, 0), 0);
	refresh();
	assert_int_equal(join_on(&rep, bundle_enc, &a), 0);
	bc_join_answer_free(&a);
	assert_int_equal(join_on(&rep, next, &a), 0);
	bc_join_answer_free(&a);
	assert_int_equal(bc_pubkey_to_pem(next, &pem), 0);
	assert_non_null(cfg = bc_admin_daemon_config_json(pki_of(&rep), NULL));
	/* the PEM's first line of base64 (JSON escapes its line ends) */
	snprintf(b64, sizeof(b64), "%s", strchr(pem, '\n') + 1);
	assert_non_null(strstr(cfg, b64));
	free(cfg);
	free(pem);

	/* retire the bundle's: a token sealed to it is refused by the existing reason */
	assert_int_equal(change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_ENCRYPTION, 0, 0), 0);
	assert_int_equal(c.id, 3);
	refresh();
	assert_int_equal(join_on(&rep, bundle_enc, &a), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&rep), BC_R_TOKEN_UNREADABLE);

	/* too many in use: three active ones and a fourth refused */
	assert_int_equal(rotate(&c, BC_PKI_KIND_JOIN_ENCRYPTION), 0);
	third_id = c.id;
	assert_int_equal(change(bc_pki_key_activate, &c, BC_PKI_KIND_JOIN_ENCRYPTION, 0, 0), 0);
	assert_int_equal(rotate(&c, BC_PKI_KIND_JOIN_ENCRYPTION), 0);
	assert_int_equal(change(bc_pki_key_activate, &c, BC_PKI_KIND_JOIN_ENCRYPTION, 0, 0), 0);
	assert_int_equal(rotate(&c, BC_PKI_KIND_JOIN_ENCRYPTION), BC_ERR_CONFLICT);
	assert_non_null(strstr(c.why, "too many join encryption keys in use"));
	/* the two older ones go, then a compromise of the current one: the prepared key
	   takes over in the same change, and a token sealed to the old one is refused */
	assert_int_equal(change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_ENCRYPTION, 0, 0), 0);
	assert_int_equal(c.id, next_id);
	assert_int_equal(change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_ENCRYPTION, 0, 0), 0);
	assert_int_equal(c.id, third_id);
	refresh();
	assert_int_equal(join_on(&rep, next, &a), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&rep), BC_R_TOKEN_UNREADABLE);
	third = NULL;
	{
		struct bc_node_cas *cas = bc_pki_node_cas_get(pki_of(&cp));
		const struct bc_join_key *cur =
		    bc_node_cas_join_current(cas, BC_JOIN_KEY_ENCRYPTION);
		int64_t cur_id = cur->id;
		assert_int_equal(EVP_PKEY_up_ref(cur->key), 1);
		third = cur->key;
		bc_node_cas_put(cas);
		assert_int_equal(rotate(&c, BC_PKI_KIND_JOIN_ENCRYPTION), 0);
		int64_t prepared = c.id;
		assert_int_equal(
		    change(bc_pki_key_retire, &c, BC_PKI_KIND_JOIN_ENCRYPTION, cur_id, 1), 0);
		assert_int_equal(c.took_over, prepared);
		assert_int_equal(c.forced, 1);
	}
	refresh();
	assert_int_equal(join_on(&rep, third, &a), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&rep), BC_R_TOKEN_UNREADABLE);
	assert_int_equal(join_on(&rep, NULL, &a), BC_ERR_DENIED); /* rep's pin: the bundle's */
	EVP_PKEY_free(next);
	EVP_PKEY_free(third);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_signing_key),
	    cmocka_unit_test(test_encryption_key),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, setup, teardown);
}
