/* pki rotate, activate, retire and status: the generations of the node CA and the two
 * join keys, on the store directly (no server needed; every replica follows within
 * BC_NODE_CAS_REFRESH_MS). One implementation for the three kinds (server/pki_changes.c);
 * what this file says of each is in words[]. See docs/server.md, "PKI lifecycle". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bc/clock.h"
#include "bc/pki.h"
#include "cli/cli.h"
#include "server/config.h"
#include "server/node_cas.h"
#include "server/pki_changes.h"
#include "server/server.h"

struct rot {
	struct bc_server_config cfg;
	bc_pki *pki;
	bc_store *st;
	uint8_t secret[32];
};

static void rot_free(struct rot *r)
{
	bc_store_close(r->st);
	if (r->pki != NULL)
		bc_pki_free(r->pki);
	bc_server_config_free(&r->cfg);
	OPENSSL_cleanse(r->secret, sizeof(r->secret));
}

/* The key kind named (for rotate, activate and retire), then server.toml, the bundle,
 * the secret and the store, with generation 1 of each kind seeded. */
static int rot_open(struct cli *c, struct rot *r, int kind_arg)
{
	const char *config;
	char err[512] = "";
	int rc;

	memset(r, 0, sizeof(*r));
	if (kind_arg && !bc_pki_kind_known(c->args[0]))
		return cli_usage(c,
		                 "\"%s\": not a key that rotates: name node-ca, join-signing or "
		                 "join-encryption",
		                 c->args[0]);
	if ((rc = cli_config_path(c, "whose store to use", &config)) != 0)
		return rc;
	if ((rc = bc_server_config_load(config, &r->cfg, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s; check --config", err);
	if ((rc = bc_server_pki_load(&r->cfg, &r->pki, err, sizeof(err))) != 0 ||
	    (rc = bc_server_secret_load(r->cfg.secret_file, r->secret, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s", err);
	if ((rc = bc_store_open(r->cfg.database, &r->st, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "cannot open the database of server.toml: %s",
		                err[0] ? err : bc_err_str(rc));
	if ((rc = bc_pki_keys_seed(r->st, r->pki, r->secret)) != 0)
		return cli_fail(c, rc, "cannot record the PKI bundle's keys in the store: %s",
		                bc_err_str(rc));
	return 0;
}

int cli_pki_store_cas(struct cli *c, const struct bc_server_config *cfg, const bc_pki *pki)
{
	uint8_t secret[32];
	bc_store *st = NULL;
	char err[512] = "";
	int64_t known = 0;
	int rc;

	if ((rc = bc_server_secret_load(cfg->secret_file, secret, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s", err);
	if ((rc = bc_store_open(cfg->database, &st, err, sizeof(err))) != 0)
		rc = cli_fail(c, rc, "cannot open the database of server.toml: %s",
		              err[0] ? err : bc_err_str(rc));
	else if ((rc = bc_node_cas_refresh(st, pki, secret, &known)) != 0)
		rc = cli_fail(c, rc, "cannot read the node CAs from the store: %s", bc_err_str(rc));
	bc_store_close(st);
	OPENSSL_cleanse(secret, sizeof(secret));
	return rc;
}

static int opt_id(struct cli *c, int64_t *id)
{
	int given = 0;

	*id = 0;
	return cli_opt_int(c, "id", 1, INT64_MAX, id, &given);
}

static int refused(struct cli *c, int rc, const char *why)
{
	return cli_fail(c, rc, "%s", why[0] != '\0' ? why : bc_err_str(rc));
}

/* What the commands say of each kind. */
struct words {
	const char *kind, *what, *column, *json_list, *current;
	const char *prepared, *activated, *retired, *took_over;
};

static const struct words words[] = {
    {BC_PKI_KIND_NODE_CA, "node CA", "NODE CA", "nodeCAs", "active (issuing)",
     "it is in the trust bundle (/bundle) and signs nothing yet.\nOnce relying parties have "
     "fetched the bundle (they refresh every 300 s), run `pki activate node-ca`.",
     "it signs every new node certificate (within 2 s on every replica); the CAs before it "
     "still verify until retired.",
     "it verifies nothing and leaves the trust bundle", NULL},
    {BC_PKI_KIND_JOIN_SIGNING, "join signing key", "JOIN SIGNING KEY", "joinSigningKeys",
     "active (signing)",
     "every join and renewal answer announces it as next (within 2 s on every replica) and "
     "bcd pins it at its next renewal.\nOnce agents have renewed (bcd doctor shows the pin), "
     "run `pki activate join-signing`.",
     "it signs every answer (within 2 s on every replica). Agents that pinned it renew with "
     "no action; once they have, run `pki retire join-signing` so that they unpin the key "
     "before it.",
     "answers announce it retired and agents unpin it",
     "it signs every answer from now on. Agents that pinned it renew with no action; the "
     "others are told to join again with a token."},
    {BC_PKI_KIND_JOIN_ENCRYPTION, "join encryption key", "JOIN ENCRYPTION KEY",
     "joinEncryptionKeys", "active (sealed to)",
     "answers announce it as next (within 2 s on every replica) and tokens sealed to it "
     "open already.\nOnce agents have renewed, run `pki activate join-encryption`.",
     "`daemon config` gives it and new tokens are sealed to it (within 2 s on every "
     "replica); tokens sealed to the keys before it still open until they are retired.",
     "tokens sealed to it are refused (token-unreadable) and agents unpin it",
     "new tokens are sealed to it: `daemon config` gives it. Tokens sealed to the retired "
     "key are refused (token-unreadable): make new ones."},
};

static const struct words *words_of(const char *kind)
{
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(kind, words[i].kind) == 0)
			return &words[i];
	return &words[0]; /* not reached: rot_open checked the kind */
}

static int print_change(struct cli *c, const struct bc_pki_change *ch, const char *state)
{
	if (!c->json)
		return 0;
	return cli_print_json(json_pack("{s:s,s:I,s:s,s:b,s:I}", "kind", ch->kind, "generation",
	                                (json_int_t)ch->id, "state", state, "forced", ch->forced,
	                                "tookOver", (json_int_t)ch->took_over));
}

int cli_cmd_pki_rotate(struct cli *c)
{
	struct bc_pki_change ch = {0};
	const struct words *w;
	struct rot r;
	int rc;

	if ((rc = rot_open(c, &r, 1)) != 0)
		goto out;
	ch.kind = c->args[0];
	w = words_of(ch.kind);
	if ((rc = bc_pki_key_rotate(r.st, r.pki, r.secret, &ch)) != 0) {
		rc = refused(c, rc, ch.why);
		goto out;
	}
	if ((rc = print_change(c, &ch, BC_PKI_PREPARED)) == 0 && !c->json)
		printf("Prepared %s generation %lld: %s\n", w->what, (long long)ch.id, w->prepared);
out:
	rot_free(&r);
	return rc;
}

int cli_cmd_pki_activate(struct cli *c)
{
	struct bc_pki_change ch = {0};
	const struct words *w;
	struct rot r;
	int rc;

	if ((rc = opt_id(c, &ch.id)) != 0 || (rc = rot_open(c, &r, 1)) != 0)
		goto out;
	ch.kind = c->args[0];
	w = words_of(ch.kind);
	if ((rc = bc_pki_key_activate(r.st, &ch)) != 0) {
		rc = refused(c, rc, ch.why);
		goto out;
	}
	if ((rc = print_change(c, &ch, BC_PKI_ACTIVE)) == 0 && !c->json)
		printf("Activated %s generation %lld: %s\n", w->what, (long long)ch.id,
		       w->activated);
out:
	rot_free(&r);
	return rc;
}

static void print_retired(const struct words *w, const struct bc_pki_change *ch)
{
	if (ch->took_over != 0)
		printf("Retired %s generation %lld at once and activated generation %lld in its "
		       "place: %s\n",
		       w->what, (long long)ch->id, (long long)ch->took_over, w->took_over);
	else
		printf("Retired %s generation %lld: %s%s.\n", w->what, (long long)ch->id,
		       w->retired,
		       ch->forced ? "; certificates it signed are refused from now on "
		                    "(renew-malformed, x509pop-malformed): those nodes join again "
		                    "with a token"
		                  : "");
}

int cli_cmd_pki_retire(struct cli *c)
{
	struct bc_pki_change ch = {.force = cli_flag(c, "force")};
	struct rot r;
	char at[32];
	int rc;

	if ((rc = opt_id(c, &ch.id)) != 0 || (rc = rot_open(c, &r, 1)) != 0)
		goto out;
	ch.kind = c->args[0];
	rc = bc_pki_key_retire(r.st, &ch);
	bc_time_format_ms(ch.until, at, sizeof(at));
	if (rc == BC_ERR_CONFLICT && ch.until > 0) {
		rc = cli_fail(
		    c, rc,
		    "node CA generation %lld signed certificates that may be unexpired until "
		    "%s: retire it after then, or now with --force if its key is compromised",
		    (long long)ch.id, at);
		goto out;
	} else if (rc != 0) {
		rc = refused(c, rc, ch.why);
		goto out;
	}
	if ((rc = print_change(c, &ch, BC_PKI_RETIRED)) == 0 && !c->json)
		print_retired(words_of(ch.kind), &ch);
out:
	rot_free(&r);
	return rc;
}

static json_t *status_json(const struct bc_pki_key_row *k, int current, int64_t until)
{
	return json_pack("{s:I,s:s,s:b,s:I,s:I,s:I,s:I,s:b,s:s}", "generation", (json_int_t)k->id,
	                 "state", k->state, "issuing", current, "createdAt",
	                 (json_int_t)k->created_at, "activatedAt", (json_int_t)k->activated_at,
	                 "retiredAt", (json_int_t)k->retired_at, "lastCertificateExpiresBy",
	                 (json_int_t)(k->retired_at ? 0 : until), "forced", k->forced, "keyId",
	                 k->public_sha256);
}

/* One row: for a node CA the last column is when its certificates are all expired, for
 * a join key its key id (what bcd doctor shows, 16 characters). */
static void status_line(json_t *list, const struct words *w, const struct bc_pki_key_row *rows,
                        size_t n, size_t i, int current)
{
	const struct bc_pki_key_row *k = &rows[i];
	int node_ca = strcmp(w->kind, BC_PKI_KIND_NODE_CA) == 0;
	int64_t until = node_ca ? bc_node_ca_last_cert(rows, n, i) : 0;
	char created[32], act[32] = "-", ret[32] = "-", last[32] = "-";

	bc_time_format_ms(k->created_at, created, sizeof(created));
	if (k->activated_at)
		bc_time_format_ms(k->activated_at, act, sizeof(act));
	if (k->retired_at)
		bc_time_format_ms(k->retired_at, ret, sizeof(ret));
	if (!node_ca)
		snprintf(last, sizeof(last), "%.16s", k->public_sha256);
	else if (until && !k->retired_at)
		bc_time_format_ms(until, last, sizeof(last));
	if (list != NULL)
		json_array_append_new(list, status_json(k, current, until));
	else
		printf("%-4lld %-20s %-24.24s %-24.24s %-24.24s %s%s\n", (long long)k->id,
		       current ? w->current : k->state, created, act, ret, last,
		       k->forced ? " (forced)" : "");
}

/* The generations of one kind: a table, or its list into out. */
static int status_kind(struct cli *c, struct rot *r, const struct words *w, json_t *out)
{
	struct bc_pki_key_row *rows = NULL;
	json_t *list = NULL;
	size_t n = 0, current;
	int64_t now = 0;
	int rc;

	if ((rc = bc_pki_keys_list(r->st, w->kind, &rows, &n, &now)) != 0)
		return cli_fail(c, rc, "cannot read the %ss: %s", w->what, bc_err_str(rc));
	current = bc_pki_key_current(rows, n);
	if (c->json && (list = json_array()) == NULL) {
		bc_row_pki_keys_free(rows, n);
		return cli_fail(c, BC_ERR_NOMEM, "out of memory");
	}
	if (!c->json)
		printf("%s%-4s %-20s %-24s %-24s %-24s %s\n", w == &words[0] ? "" : "\n", "GEN",
		       w->column, "CREATED", "ACTIVATED", "RETIRED",
		       w == &words[0] ? "ITS CERTIFICATES EXPIRED BY" : "KEY ID");
	for (size_t i = 0; i < n; i++)
		status_line(list, w, rows, n, i, i == current);
	if (list != NULL)
		json_object_set_new(out, w->json_list, list);
	bc_row_pki_keys_free(rows, n);
	return 0;
}

int cli_cmd_pki_status(struct cli *c)
{
	struct rot r;
	json_t *out = NULL;
	int rc;

	if ((rc = rot_open(c, &r, 0)) != 0)
		goto out;
	if (c->json && (out = json_object()) == NULL) {
		rc = cli_fail(c, BC_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; rc == 0 && i < sizeof(words) / sizeof(words[0]); i++)
		rc = status_kind(c, &r, &words[i], out);
	if (rc == 0 && c->json) {
		rc = cli_print_json(out);
		out = NULL;
	}
out:
	json_decref(out);
	rot_free(&r);
	return rc;
}
