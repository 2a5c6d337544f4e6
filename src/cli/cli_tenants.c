/* tenants, api-keys and daemon config: the commands about who may do what and
 * what agents pin. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "cli/cli.h"

static const struct cli_col tenant_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"NAME", "name", CLI_STR, 1, 0},
    {"CREATED", "createdAt", CLI_TIME, 1, 0},
};
#define N_TENANT_COLS (sizeof(tenant_cols) / sizeof(tenant_cols[0]))

int cli_cmd_tenants_list(struct cli *c)
{
	struct cli_resp r;
	int rc;

	if ((rc = cli_api(c, "GET", "/v1/tenants", NULL, &r)) != 0)
		return rc;
	rc = cli_show_list(c, &r, "tenants", tenant_cols, N_TENANT_COLS);
	cli_resp_free(&r);
	return rc;
}

int cli_cmd_tenants_create(struct cli *c)
{
	struct cli_resp r;
	json_t *body;
	int rc;

	if ((body = json_pack("{s:s}", "name", c->args[0])) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = cli_api(c, "POST", "/v1/tenants", body, &r)) == 0) {
		rc = cli_show_object(c, &r, NULL, tenant_cols, N_TENANT_COLS);
		cli_resp_free(&r);
	}
	json_decref(body);
	return rc;
}

static int print_api_key(const json_t *ans)
{
	const char *id = cli_jstr(ans, "id"), *t = cli_jstr(ans, "tenantId");
	char *text = NULL;

	if (asprintf(&text, "API key %s for tenant %s, role %s:\n%s\n", id ? id : "?", t ? t : "?",
	             cli_jstr(ans, "role") ? cli_jstr(ans, "role") : "?", cli_jstr(ans, "key")) < 0)
		return BC_ERR_NOMEM;
	cli_sanitize_lines(text);
	fputs(text, stdout);
	bc_freezero(text, strlen(text));
	printf("It is shown only this once: the server keeps only its hash. Store it now, "
	       "e.g. in a file for --api-key-file.\n");
	return 0;
}

int cli_cmd_api_keys_create(struct cli *c)
{
	const char *name = cli_opt(c, "name");
	struct cli_resp r;
	json_t *body = NULL;
	char *path = NULL;
	int rc;

	if (name == NULL)
		return cli_usage(c, "--name is missing: name the key after who or what uses it");
	if ((rc = cli_tenant_path(c, &path, "api-keys", NULL)) != 0)
		return rc;
	if ((body = json_pack("{s:s, s:s?}", "name", name, "role", cli_opt(c, "role"))) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	/* the server refuses less than a minute (apiKey.ttlSeconds) */
	if ((rc = cli_opt_ttl(c, body)) != 0)
		goto out;
	if ((rc = cli_api(c, "POST", path, body, &r)) != 0)
		goto out;
	if (c->json)
		cli_print_raw(&r);
	else if (cli_jstr(r.json, "key") == NULL)
		rc = cli_fail(c, BC_ERR_IO,
		              "the control plane's answer holds no key; "
		              "is --server a `" CLI_NAME " serve` of this version?");
	else
		rc = print_api_key(r.json);
	cli_wipe_member(r.json, "key");
	cli_resp_free(&r);
out:
	json_decref(body);
	free(path);
	return rc;
}

static const struct cli_col key_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"TENANT", "tenantId", CLI_STR, 0, 0},
    {"NAME", "name", CLI_STR, 1, 40},
    {"ROLE", "role", CLI_STR, 1, 0},
    {"CREATED", "createdAt", CLI_TIME, 1, 0},
    {"EXPIRES", "expiresAt", CLI_TIME, 1, 0},
    {"LAST USED", "lastUsedAt", CLI_TIME, 1, 0},
    {"REVOKED", "revokedAt", CLI_TIME, 1, 0},
};
#define N_KEY_COLS (sizeof(key_cols) / sizeof(key_cols[0]))

int cli_cmd_api_keys_list(struct cli *c)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "api-keys", NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", path, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, "apiKeys", key_cols, N_KEY_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

int cli_cmd_api_keys_revoke(struct cli *c)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "api-keys", c->args[0], "revoke", NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "POST", path, NULL, &r)) == 0) {
		rc = cli_show_object(c, &r, NULL, key_cols, N_KEY_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

int cli_cmd_daemon_config(struct cli *c)
{
	const char *out = cli_opt(c, "out");
	struct cli_resp r;
	char *text = NULL;
	int rc;

	if (cli_opt(c, "bcd-dir") != NULL)
		return cli_daemon_config_bcd(c, cli_opt(c, "bcd-dir"));
	if (cli_opt(c, "data-dir") != NULL)
		return cli_usage(c, "--data-dir goes with --bcd-dir");
	if ((rc = cli_out_check(c, out)) != 0 ||
	    (rc = cli_api(c, "GET", "/v1/daemon-config", NULL, &r)) != 0)
		return rc;
	if (out == NULL) {
		cli_print_raw(&r);
		goto done;
	}
	if (asprintf(&text, "%s%s", r.body, r.len && r.body[r.len - 1] == '\n' ? "" : "\n") < 0) {
		rc = BC_ERR_NOMEM;
		goto done;
	}
	/* public keys and certificates only: readable by the agent's user */
	if ((rc = cli_write_file(out, text, strlen(text), 0644, cli_out_flags(c))) != 0)
		rc = cli_fail(c, rc, "cannot write %s: %s; check --out", out,
		              rc == BC_ERR_CONFLICT ? "it exists (give --force)" : strerror(errno));
	else if (!c->json)
		printf("Wrote the agent's pins (server URL, join keys, CA bundle) to %s.\n", out);
	else
		rc = cli_print_json(json_pack("{s:s}", "file", out));
done:
	free(text);
	cli_resp_free(&r);
	return rc;
}

/* DELETE /v1/tenants/T: the tenant the command names is the path's, not --tenant. */
int cli_cmd_tenants_delete(struct cli *c)
{
	char *path = NULL;
	int rc;

	free(c->tenant);
	if ((c->tenant = strdup(c->args[0])) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = cli_tenant_path(c, &path, NULL)) != 0)
		return rc;
	return cli_delete(c, path, "tenant", c->args[0]);
}
