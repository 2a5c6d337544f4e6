/* pki rotate, activate, retire and status: the node CA generations, on the store
 * directly (no server needed; every replica follows within BC_NODE_CAS_REFRESH_MS).
 * See docs/server.md, "PKI lifecycle". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bc/clock.h"
#include "bc/pki.h"
#include "cli/cli.h"
#include "server/config.h"
#include "server/node_cas.h"
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

/* The key kind named (node-ca only for now), then server.toml, the bundle, the secret and
 * the store, with generation 1 seeded. */
static int rot_open(struct cli *c, struct rot *r, int kind_arg)
{
	const char *config = cli_opt(c, "config");
	char err[512] = "";
	int rc;

	memset(r, 0, sizeof(*r));
	if (kind_arg && strcmp(c->args[0], BC_PKI_KIND_NODE_CA) != 0)
		return cli_usage(c,
		                 "\"%s\": only node-ca rotates with pki so far (the join keys' "
		                 "rotation is not built yet)",
		                 c->args[0]);
	if (config == NULL)
		return cli_usage(c,
		                 "--config is missing: name the server.toml whose store to change");
	if ((rc = bc_server_config_load(config, &r->cfg, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s; check --config", err);
	if ((rc = bc_server_pki_load(&r->cfg, &r->pki, err, sizeof(err))) != 0 ||
	    (rc = bc_server_secret_load(r->cfg.secret_file, r->secret, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s", err);
	if ((rc = bc_store_open(r->cfg.database, &r->st, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "cannot open the database of server.toml: %s",
		                err[0] ? err : bc_err_str(rc));
	if ((rc = bc_node_cas_seed(r->st, r->pki, r->secret)) != 0)
		return cli_fail(c, rc, "cannot record the PKI bundle's node CA in the store: %s",
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
	return cli_fail(c, rc, "%s", why != NULL ? why : bc_err_str(rc));
}

int cli_cmd_pki_rotate(struct cli *c)
{
	struct rot r;
	const char *why = NULL;
	int64_t id = 0;
	int rc;

	if ((rc = rot_open(c, &r, 1)) != 0)
		goto out;
	if ((rc = bc_node_ca_rotate(r.st, r.pki, r.secret, &id, &why)) != 0) {
		rc = refused(c, rc, why);
		goto out;
	}
	if (c->json)
		rc = cli_print_json(json_pack("{s:s,s:I,s:s}", "kind", BC_PKI_KIND_NODE_CA,
		                              "generation", (json_int_t)id, "state", "prepared"));
	else
		printf("Prepared node CA generation %lld: it is in the trust bundle (/bundle) and "
		       "signs nothing yet.\nOnce relying parties have fetched the bundle (they "
		       "refresh every 300 s), run `pki activate node-ca`.\n",
		       (long long)id);
out:
	rot_free(&r);
	return rc;
}

int cli_cmd_pki_activate(struct cli *c)
{
	struct rot r;
	const char *why = NULL;
	int64_t id = 0;
	int rc;

	if ((rc = opt_id(c, &id)) != 0 || (rc = rot_open(c, &r, 1)) != 0)
		goto out;
	if ((rc = bc_node_ca_activate(r.st, &id, &why)) != 0) {
		rc = refused(c, rc, why);
		goto out;
	}
	if (c->json)
		rc = cli_print_json(json_pack("{s:s,s:I,s:s}", "kind", BC_PKI_KIND_NODE_CA,
		                              "generation", (json_int_t)id, "state", "active"));
	else
		printf("Activated node CA generation %lld: it signs every new node certificate "
		       "(within %d s on every replica); the CAs before it still verify until "
		       "retired.\n",
		       (long long)id, BC_NODE_CAS_REFRESH_MS / 1000);
out:
	rot_free(&r);
	return rc;
}

int cli_cmd_pki_retire(struct cli *c)
{
	struct rot r;
	const char *why = NULL;
	int64_t id = 0, until = 0;
	char at[32];
	int rc, force = cli_flag(c, "force");

	if ((rc = opt_id(c, &id)) != 0 || (rc = rot_open(c, &r, 1)) != 0)
		goto out;
	rc = bc_node_ca_retire(r.st, &id, force, &until, &why);
	bc_time_format_ms(until, at, sizeof(at));
	if (rc == BC_ERR_CONFLICT && until > 0) {
		rc = cli_fail(
		    c, rc,
		    "node CA generation %lld signed certificates that may be unexpired until "
		    "%s: retire it after then, or now with --force if its key is compromised",
		    (long long)id, at);
		goto out;
	} else if (rc != 0) {
		rc = refused(c, rc, why);
		goto out;
	}
	if (c->json)
		rc = cli_print_json(json_pack("{s:s,s:I,s:s,s:b}", "kind", BC_PKI_KIND_NODE_CA,
		                              "generation", (json_int_t)id, "state", "retired",
		                              "forced", force && until > bc_now_ms()));
	else
		printf("Retired node CA generation %lld: it verifies nothing and leaves the trust "
		       "bundle%s.\n",
		       (long long)id,
		       force && until > bc_now_ms()
		           ? "; certificates it signed are refused from now on (renew-malformed, "
		             "x509pop-malformed): those nodes join again with a token"
		           : "");
out:
	rot_free(&r);
	return rc;
}

static void status_line(struct cli *c, json_t *list, const struct bc_pki_key_row *rows, size_t n,
                        size_t i, int issuing)
{
	const struct bc_pki_key_row *k = &rows[i];
	int64_t until = bc_node_ca_last_cert(rows, n, i);
	char created[32], act[32] = "-", ret[32] = "-", un[32] = "-";
	const char *state = issuing ? "active (issuing)" : k->state;

	bc_time_format_ms(k->created_at, created, sizeof(created));
	if (k->activated_at)
		bc_time_format_ms(k->activated_at, act, sizeof(act));
	if (k->retired_at)
		bc_time_format_ms(k->retired_at, ret, sizeof(ret));
	if (until && !k->retired_at)
		bc_time_format_ms(until, un, sizeof(un));
	if (list != NULL)
		json_array_append_new(
		    list,
		    json_pack("{s:I,s:s,s:b,s:I,s:I,s:I,s:I,s:b}", "generation", (json_int_t)k->id,
		              "state", k->state, "issuing", issuing, "createdAt",
		              (json_int_t)k->created_at, "activatedAt", (json_int_t)k->activated_at,
		              "retiredAt", (json_int_t)k->retired_at, "lastCertificateExpiresBy",
		              (json_int_t)(k->retired_at ? 0 : until), "forced", k->forced));
	else
		printf("%-4lld %-17s %-24.24s %-24.24s %-24.24s %s%s\n", (long long)k->id, state,
		       created, act, ret, un, k->forced ? " (forced)" : "");
	(void)c;
}

int cli_cmd_pki_status(struct cli *c)
{
	struct bc_pki_key_row *rows = NULL;
	struct rot r;
	json_t *list = NULL;
	size_t n = 0, issuing = 0;
	int64_t now = 0;
	int rc;

	if ((rc = rot_open(c, &r, 0)) != 0)
		goto out;
	if ((rc = bc_node_cas_list(r.st, &rows, &n, &now)) != 0) {
		rc = cli_fail(c, rc, "cannot read the node CAs: %s", bc_err_str(rc));
		goto out;
	}
	/* the active one activated last issues */
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].state, BC_PKI_ACTIVE) == 0 &&
		    rows[i].activated_at >= rows[issuing].activated_at)
			issuing = i;
	if (c->json && (list = json_array()) == NULL) {
		rc = cli_fail(c, BC_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!c->json)
		printf("%-4s %-17s %-24s %-24s %-24s %s\n", "GEN", "NODE CA", "CREATED",
		       "ACTIVATED", "RETIRED", "ITS CERTIFICATES EXPIRED BY");
	for (size_t i = 0; i < n; i++)
		status_line(c, list, rows, n, i, i == issuing);
	if (c->json)
		rc = cli_print_json(json_pack("{s:o}", "nodeCAs", list));
out:
	bc_row_pki_keys_free(rows, n);
	rot_free(&r);
	return rc;
}
