/* join tokens. A token's secret is in the answer to its creation and nowhere else:
 * it is printed once (or written to --out FILE, mode 0600) and wiped. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/canon.h"
#include "bc/clock.h"
#include "cli/cli.h"

static const struct cli_col token_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"TENANT", "tenantId", CLI_STR, 0, 0},
    {"ROLE", "role", CLI_STR, 1, 0},
    {"POOL/SITE", NULL, CLI_TARGET, 1, 0},
    {"USES", NULL, CLI_USES, 1, 0},
    {"STATE", NULL, CLI_TOKEN_STATE, 1, 0},
    {"EXPIRES", "expiresAt", CLI_TIME, 1, 0},
    {"REVOKED", "revokedAt", CLI_TIME, 0, 0},
    {"EXPECT", "expect", CLI_JSON, 0, 0},
    {"RECLAIM", "allowReclaim", CLI_STR, 0, 0},
    {"DESCRIPTION", "description", CLI_STR, 1, 40},
    {"CREATED", "createdAt", CLI_TIME, 0, 0},
    {"LAST USED", "lastUsedAt", CLI_TIME, 0, 0},
};
#define N_TOKEN_COLS (sizeof(token_cols) / sizeof(token_cols[0]))

static int add_expect(struct cli *c, json_t *body)
{
	const char *uuid = cli_opt(c, "expect-product-uuid"), *mac = cli_opt(c, "expect-mac");
	const char *serial = cli_opt(c, "expect-serial");
	char u[BC_UUID_LEN + 1], m[BC_MAC_LEN + 1];
	json_t *e;
	int rc = 0;

	if (uuid == NULL && mac == NULL && serial == NULL)
		return 0;
	if ((e = json_object()) == NULL)
		return BC_ERR_NOMEM;
	/* the API wants the canonical form: accept what people copy from a BIOS screen;
	 * anything else goes as given, for the server to refuse and say why */
	if (uuid != NULL)
		rc = json_object_set_new(e, "productUuid",
		                         json_string(bc_uuid_canon(uuid, u) == 0 ? u : uuid))
		         ? BC_ERR_NOMEM
		         : 0;
	if (rc == 0 && mac != NULL)
		rc = json_object_set_new(e, "mac", json_string(bc_mac_canon(mac, m) == 0 ? m : mac))
		         ? BC_ERR_NOMEM
		         : 0;
	if (rc == 0 && serial != NULL)
		rc = json_object_set_new(e, "serial", json_string(serial)) ? BC_ERR_NOMEM : 0;
	if (rc == 0)
		rc = json_object_set_new(body, "expect", e) ? BC_ERR_NOMEM : 0;
	else
		json_decref(e);
	return rc;
}

static int set_str(json_t *body, const char *key, const char *v)
{
	if (v == NULL)
		return 0;
	return json_object_set_new(body, key, json_string(v)) ? BC_ERR_NOMEM : 0;
}

static int add_limits(struct cli *c, json_t *body)
{
	int64_t uses;
	int present, rc;

	if ((rc = cli_opt_int(c, "uses", 1, 10000, &uses, &present)) != 0)
		return rc;
	if (present && json_object_set_new(body, "uses", json_integer(uses)) != 0)
		return BC_ERR_NOMEM;
	return cli_opt_ttl(c, body);
}

static int token_body(struct cli *c, json_t **out)
{
	const char *role = cli_opt(c, "role"), *pool_arg = cli_opt(c, "pool"),
	           *site_arg = cli_opt(c, "site");
	char *pool = NULL, *site = NULL;
	json_t *b = NULL;
	int rc;

	*out = NULL;
	if (role == NULL || (strcmp(role, "node") != 0 && strcmp(role, "site") != 0 &&
	                     strcmp(role, "provisioned") != 0))
		return cli_usage(c, "--role must be node, site or provisioned");
	if (strcmp(role, "provisioned") == 0 &&
	    (pool_arg == NULL || cli_opt(c, "expect-product-uuid") == NULL))
		return cli_usage(c, "a provisioned token needs --pool and --expect-product-uuid "
		                    "(the machine it admits)");
	if ((pool_arg == NULL) == (site_arg == NULL))
		return cli_usage(
		    c, "give one of --pool (a node token) or --site (a site token), by id or name");
	if ((b = json_pack("{s:s}", "role", role)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	/* every option is checked before a name costs a request */
	if ((rc = add_limits(c, b)) != 0 || (rc = add_expect(c, b)) != 0 ||
	    (rc = set_str(b, "description", cli_opt(c, "description"))) != 0)
		goto out;
	if ((rc = cli_resolve(c, CLI_K_POOL, pool_arg, &pool)) != 0 ||
	    (rc = cli_resolve(c, CLI_K_SITE, site_arg, &site)) != 0 ||
	    (rc = set_str(b, "poolId", pool)) != 0 || (rc = set_str(b, "siteId", site)) != 0)
		goto out;
	if (cli_flag(c, "allow-reclaim") &&
	    json_object_set_new(b, "allowReclaim", json_true()) != 0) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	*out = b;
	b = NULL;
out:
	free(pool);
	free(site);
	json_decref(b);
	return rc;
}

static void describe(const json_t *tok, const char *tail)
{
	const json_t *left = json_object_get(tok, "usesTotal");
	const char *pool = cli_jstr(tok, "poolId"), *id = cli_jstr(tok, "id");
	const char *role = cli_jstr(tok, "role"), *exp = cli_jstr(tok, "expiresAt");
	char when[32];
	char *line = NULL;

	cli_time_short(exp ? exp : "?", when);
	if (asprintf(&line, "Token %s (role %s, %s %s, %lld use%s, expires %s)", id ? id : "?",
	             role ? role : "?", pool ? "pool" : "site",
	             pool ? pool : (cli_jstr(tok, "siteId") ? cli_jstr(tok, "siteId") : "?"),
	             (long long)json_integer_value(left), json_integer_value(left) == 1 ? "" : "s",
	             when) < 0)
		return;
	cli_sanitize(line);
	printf("%s%s\n", line, tail);
	free(line);
}

/* The secret could not be kept: revoke the token rather than leave a valid secret
 * nobody has seen. */
static int revoke_unseen(struct cli *c, const char *id)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "tokens", id, "revoke", NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "POST", path, NULL, &r)) == 0)
		cli_resp_free(&r);
	free(path);
	return rc;
}

static int save_secret(struct cli *c, const json_t *ans, const char *file)
{
	const json_t *tok = json_object_get(ans, "token");
	const char *secret = cli_jstr(ans, "secret"), *id = cli_jstr(tok, "id");
	char *line = NULL;
	int rc, saved;

	if (asprintf(&line, "%s\n", secret) < 0)
		return BC_ERR_NOMEM;
	rc = cli_write_file(file, line, strlen(line), 0600, cli_out_flags(c));
	saved = errno;
	bc_freezero(line, strlen(line));
	if (rc != 0) {
		int rrc = id ? revoke_unseen(c, id) : BC_ERR_INVALID;

		return cli_fail(c, rc, "cannot write the token's secret to %s: %s; token %s was %s",
		                file, rc == BC_ERR_CONFLICT ? "the file exists" : strerror(saved),
		                id ? id : "?",
		                rrc == 0 ? "revoked, create another" : "NOT revoked: revoke it");
	}
	if (c->json)
		return cli_print_json(json_pack("{s:O,s:s}", "token", tok, "secretFile", file));
	describe(tok, "");
	printf("Its secret is in %s (mode 0600) and is not shown again.\n", file);
	return 0;
}

static int print_secret(const json_t *ans)
{
	char *secret = strdup(cli_jstr(ans, "secret"));

	if (secret == NULL)
		return BC_ERR_NOMEM;
	cli_sanitize(secret);
	describe(json_object_get(ans, "token"), ":");
	printf("%s\nIt is shown only this once: the server keeps only its hash.\n", secret);
	bc_freezero(secret, strlen(secret));
	return 0;
}

int cli_cmd_tokens_create(struct cli *c)
{
	const char *file = cli_opt(c, "out");
	struct cli_resp r;
	json_t *body = NULL;
	char *path = NULL;
	int rc;

	if ((rc = token_body(c, &body)) != 0)
		return rc;
	/* before the token exists, so that a name taken already costs nothing */
	if ((rc = cli_out_check(c, file)) != 0)
		goto out;
	if ((rc = cli_tenant_path(c, &path, "tokens", NULL)) != 0 ||
	    (rc = cli_api(c, "POST", path, body, &r)) != 0)
		goto out;
	if (cli_jstr(r.json, "secret") == NULL || !json_is_object(json_object_get(r.json, "token")))
		rc = cli_fail(c, BC_ERR_IO,
		              "the control plane's answer holds no token and secret; "
		              "is --server a `" CLI_NAME " serve` of this version?");
	else if (file != NULL)
		rc = save_secret(c, r.json, file);
	else if (c->json)
		cli_print_raw(&r);
	else
		rc = print_secret(r.json);
	cli_wipe_member(r.json, "secret");
	cli_resp_free(&r);
out:
	json_decref(body);
	free(path);
	return rc;
}

int cli_cmd_tokens_list(struct cli *c)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_list_path(c, &path, "tokens", NULL, 0)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", path, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, "tokens", token_cols, N_TOKEN_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

int cli_cmd_tokens_revoke(struct cli *c)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "tokens", c->args[0], "revoke", NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "POST", path, NULL, &r)) == 0) {
		rc = cli_show_object(c, &r, NULL, token_cols, N_TOKEN_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}
