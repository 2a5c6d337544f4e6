/* nodes and events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const struct cli_col node_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"TENANT", "tenantId", CLI_STR, 0, 0},
    {"ROLE", "role", CLI_STR, 1, 0},
    {"STATE", "state", CLI_STR, 1, 0},
    {"POOL", "poolId", CLI_STR, 1, 0},
    {"SITE", "siteId", CLI_STR, 0, 0},
    {"HOSTNAME", "hostname", CLI_STR, 1, 32},
    {"ATTESTOR", "attestor", CLI_STR, 1, 0},
    {"GEN", "generation", CLI_STR, 1, 0},
    {"PRODUCT UUID", "productUuid", CLI_STR, 0, 0},
    {"SERIAL", "serial", CLI_STR, 0, 0},
    {"MACS", "macs", CLI_LIST, 0, 0},
    {"ALLOWED KINDS", "allowedKinds", CLI_LIST, 0, 0},
    {"ARCH", "arch", CLI_STR, 0, 0},
    {"AGENT", "agentVersion", CLI_STR, 0, 0},
    {"NODE KEY", "nodeKey", CLI_STR, 0, 0},
    {"JOINED", "joinedAt", CLI_TIME, 1, 0},
    {"UPDATED", "updatedAt", CLI_TIME, 0, 0},
    {"IDENTITY REVOKED", "identityRevokedAt", CLI_TIME, 0, 0},
    {"CERT SERIAL", "certificate.serial", CLI_STR, 0, 0},
    {"CERT EXPIRES", "certificate.notAfter", CLI_TIME, 0, 0},
    {"INVENTORY", "inventory.claims", CLI_JSON, 0, 0},
    {"INVENTORY AT", "inventory.takenAt", CLI_TIME, 0, 0},
};
#define N_NODE_COLS (sizeof(node_cols) / sizeof(node_cols[0]))

static const struct cli_col event_cols[] = {
    {"TIME", "createdAt", CLI_TIME, 1, 0},
    {"TYPE", "type", CLI_STR, 1, 0},
    {"SUBJECT", "subject", CLI_STR, 1, 0},
    {"DATA", "data", CLI_JSON, 1, 80},
};
#define N_EVENT_COLS (sizeof(event_cols) / sizeof(event_cols[0]))

int cli_cmd_nodes_list(struct cli *c)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "nodes", NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", path, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, "nodes", node_cols, N_NODE_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

int cli_cmd_nodes_get(struct cli *c)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "nodes", c->args[0], NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", path, NULL, &r)) == 0) {
		rc = cli_show_object(c, &r, NULL, node_cols, N_NODE_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

/* POST .../nodes/ID/<action>; the answer is the node as it is now. */
static int node_action(struct cli *c, const char *action, const char *done)
{
	struct cli_resp r;
	const json_t *gen;
	char *path = NULL, *state = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "nodes", c->args[0], action, NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "POST", path, NULL, &r)) != 0)
		goto out;
	if (c->json) {
		cli_print_raw(&r);
	} else {
		gen = json_object_get(r.json, "generation");
		if ((state = strdup(cli_jstr(r.json, "state") ? cli_jstr(r.json, "state") : "?")) ==
		    NULL)
			rc = BC_ERR_NOMEM;
		else {
			cli_sanitize(state);
			printf("node %s %s (state %s, identity generation %lld)\n", c->args[0],
			       done, state, (long long)json_integer_value(gen));
		}
	}
	free(state);
	cli_resp_free(&r);
out:
	free(path);
	return rc;
}

int cli_cmd_nodes_cordon(struct cli *c)
{
	return node_action(c, "cordon", "cordoned");
}

int cli_cmd_nodes_uncordon(struct cli *c)
{
	return node_action(c, "uncordon", "uncordoned");
}

int cli_cmd_nodes_revoke_identity(struct cli *c)
{
	return node_action(c, "revoke-identity", "has its identity revoked");
}

int cli_cmd_nodes_retire(struct cli *c)
{
	return node_action(c, "retire", "retired");
}

int cli_cmd_nodes_delete(struct cli *c)
{
	char *path = NULL;
	int rc;

	/* deleting frees the node's hardware key for another node: ask for intent */
	if (!cli_flag(c, "yes")) {
		c->usage_error = 1;
		return cli_fail(
		    c, BC_ERR_INVALID,
		    "nodes delete: would delete node %s (it must be cordoned or retired): "
		    "revoke its certificates and free its bindings and hardware key; run "
		    "again with --yes to do it",
		    c->args[0]);
	}
	if ((rc = cli_tenant_path(c, &path, "nodes", c->args[0], NULL)) != 0)
		return rc;
	return cli_delete(c, path, "node", c->args[0]);
}

int cli_cmd_events_list(struct cli *c)
{
	const char *kv[4] = {"type", cli_opt(c, "type"), "limit", cli_opt(c, "limit")};
	struct cli_resp r;
	char *path = NULL, *q = NULL, *full = NULL;
	int64_t limit;
	int present, rc;

	if ((rc = cli_opt_int(c, "limit", 1, 1000, &limit, &present)) != 0)
		return rc;
	if ((rc = cli_tenant_path(c, &path, "events", NULL)) != 0 ||
	    (rc = cli_query(c, &q, kv, 2)) != 0)
		goto out;
	if (asprintf(&full, "%s%s", path, q) < 0) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = cli_api(c, "GET", full, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, "events", event_cols, N_EVENT_COLS);
		cli_resp_free(&r);
	}
out:
	free(full);
	free(q);
	free(path);
	return rc;
}
