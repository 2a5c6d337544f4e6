/* nodes and events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "cli/cli.h"

/* The table fits 100 columns: a node id (31), state, pool, hostname, expiry. */
static const struct cli_col node_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"TENANT", "tenantId", CLI_STR, 0, 0},
    {"ROLE", "role", CLI_STR, 0, 0},
    {"STATE", "state", CLI_STR, 1, 9},
    {"POOL", "poolName", CLI_STR, 1, 12},
    {"POOL ID", "poolId", CLI_STR, 0, 0},
    {"SITE", "siteName", CLI_STR, 0, 0},
    {"SITE ID", "siteId", CLI_STR, 0, 0},
    {"HOSTNAME", "hostname", CLI_STR, 1, 16},
    {"EXPIRES", "certificate.notAfter", CLI_EXPIRY, 1, 16},
    {"ATTESTOR", "attestor", CLI_STR, 0, 0},
    {"GEN", "generation", CLI_STR, 0, 0},
    {"PRODUCT UUID", "productUuid", CLI_STR, 0, 0},
    {"SERIAL", "serial", CLI_STR, 0, 0},
    {"MACS", "macs", CLI_LIST, 0, 0},
    {"ALLOWED KINDS", "allowedKinds", CLI_LIST, 0, 0},
    {"ARCH", "arch", CLI_STR, 0, 0},
    {"AGENT", "agentVersion", CLI_STR, 0, 0},
    {"NODE KEY", "nodeKey", CLI_STR, 0, 0},
    {"JOINED", "joinedAt", CLI_TIME, 0, 0},
    {"UPDATED", "updatedAt", CLI_TIME, 0, 0},
    {"IDENTITY REVOKED", "identityRevokedAt", CLI_TIME, 0, 0},
    {"CERT SERIAL", "certificate.serial", CLI_STR, 0, 0},
    {"CERT EXPIRES", "certificate.notAfter", CLI_TIME, 0, 0},
    {"INVENTORY", "inventory.claims", CLI_JSON, 0, 0},
    {"INVENTORY AT", "inventory.takenAt", CLI_TIME, 0, 0},
};
#define N_NODE_COLS (sizeof(node_cols) / sizeof(node_cols[0]))

static const struct cli_col audit_cols[] = {
    {"TIME", "createdAt", CLI_TIME, 1, 0}, {"ACTOR", "actor", CLI_STR, 1, 0},
    {"ACTION", "action", CLI_STR, 1, 0},   {"SUBJECT", "subject", CLI_STR, 1, 0},
    {"DATA", "data", CLI_JSON, 1, 60},
};
#define N_AUDIT_COLS (sizeof(audit_cols) / sizeof(audit_cols[0]))

static const struct cli_col event_cols[] = {
    {"TIME", "createdAt", CLI_TIME, 1, 0},
    {"TYPE", "type", CLI_STR, 1, 0},
    {"SUBJECT", "subject", CLI_STR, 1, 0},
    {"DATA", "data", CLI_JSON, 1, 80},
};
#define N_EVENT_COLS (sizeof(event_cols) / sizeof(event_cols[0]))

/* GET path + query of the pairs given, shown as the list under key. */
static int get_list(struct cli *c, const char *what, const char *const *kv, size_t n,
                    const char *key, const struct cli_col *cols, size_t ncols,
                    struct cli_resp *keep)
{
	struct cli_resp r;
	char *full = NULL;
	int rc;

	if ((rc = cli_list_path(c, &full, what, kv, n)) != 0)
		goto out;
	if ((rc = cli_api(c, "GET", full, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, key, cols, ncols);
		if (keep != NULL)
			*keep = r;
		else
			cli_resp_free(&r);
	}
out:
	free(full);
	return rc;
}

/* --since 1h | RFC 3339: the server takes a duration back from its own now, or ms. */
static int since_param(struct cli *c, char buf[static 24], const char **out)
{
	const char *v = cli_opt(c, "since");
	int64_t ms;

	*out = NULL;
	if (v == NULL)
		return 0;
	if (bc_duration_parse_ms(v, &ms) == 0 && ms >= 0 && strspn(v, "0123456789") != strlen(v)) {
		*out = v;
		return 0;
	}
	if ((ms = cli_parse_time(v)) < 0)
		return cli_usage(c,
		                 "--since: expected a duration like 1h or 30m, or a time like "
		                 "2026-11-29T10:00:00Z, got \"%s\"",
		                 v);
	snprintf(buf, 24, "%lld", (long long)ms);
	*out = buf;
	return 0;
}

int cli_cmd_nodes_list(struct cli *c)
{
	const char *kv[20] = {"pool",
	                      NULL,
	                      "state",
	                      cli_opt(c, "state"),
	                      "attestor",
	                      cli_opt(c, "attestor"),
	                      "expiringWithin",
	                      cli_opt(c, "expiring-within"),
	                      "limit",
	                      cli_opt(c, "limit"),
	                      "after",
	                      cli_opt(c, "after"),
	                      "cursor",
	                      cli_opt(c, "cursor"),
	                      "productUuid",
	                      cli_opt(c, "product-uuid"),
	                      "mac",
	                      cli_opt(c, "mac"),
	                      "serial",
	                      cli_opt(c, "serial")};
	struct cli_resp r = {0};
	char *pool = NULL;
	int64_t limit, ms;
	int present, rc;

	if ((rc = cli_opt_int(c, "limit", 1, 500, &limit, &present)) != 0)
		return rc;
	if (kv[7] != NULL && (bc_duration_parse_ms(kv[7], &ms) != 0 || ms <= 0))
		return cli_usage(
		    c, "--expiring-within: expected a duration like 2h or 7d, got \"%s\"", kv[7]);
	if ((rc = cli_resolve(c, CLI_K_POOL, cli_opt(c, "pool"), &pool)) != 0)
		return rc;
	kv[1] = pool;
	rc = get_list(c, "nodes", kv, 10, "nodes", node_cols, N_NODE_COLS, &r);
	cli_resp_free(&r);
	free(pool);
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

/* events list and audit list: the same filters, newest first. */
static int history(struct cli *c, const char *what, const char *kind, const struct cli_col *cols,
                   size_t n)
{
	const char *kv[8] = {
	    kind, cli_opt(c, "type"), "limit", cli_opt(c, "limit"), "since", NULL, "node", NULL};
	/* --cursor: cli_list_path */
	char buf[24], *node = NULL;
	int64_t limit;
	int present, rc;

	if (strcmp(kind, "action") == 0)
		kv[1] = cli_opt(c, "action");
	if ((rc = cli_opt_int(c, "limit", 1, 1000, &limit, &present)) != 0 ||
	    (rc = since_param(c, buf, &kv[5])) != 0 ||
	    (rc = cli_resolve(c, CLI_K_NODE, cli_opt(c, "node"), &node)) != 0)
		return rc;
	kv[7] = node;
	rc = get_list(c, what, kv, 4, what, cols, n, NULL);
	free(node);
	return rc;
}

int cli_cmd_events_list(struct cli *c)
{
	return history(c, "events", "type", event_cols, N_EVENT_COLS);
}

int cli_cmd_audit_list(struct cli *c)
{
	return history(c, "audit", "action", audit_cols, N_AUDIT_COLS);
}

/* machines enroll: a discovered (ramdisk) node becomes a machine of a pool; the answer
 * is the node, its id, inventory and history kept. */
int cli_cmd_machines_enroll(struct cli *c)
{
	struct cli_resp r;
	char *node = NULL, *pool = NULL, *path = NULL;
	json_t *b = NULL;
	int rc;

	if (cli_opt(c, "node") == NULL || cli_opt(c, "pool") == NULL)
		return cli_usage(c, "give --node ID and --pool NAME");
	if ((rc = cli_resolve(c, CLI_K_NODE, cli_opt(c, "node"), &node)) != 0 ||
	    (rc = cli_resolve(c, CLI_K_POOL, cli_opt(c, "pool"), &pool)) != 0 ||
	    (rc = cli_tenant_path(c, &path, "machines", "enroll", NULL)) != 0)
		goto out;
	if ((b = json_pack("{s:s, s:s}", "nodeId", node, "poolId", pool)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = cli_api(c, "POST", path, b, &r)) == 0) {
		rc = cli_show_object(c, &r, NULL, node_cols, N_NODE_COLS);
		cli_resp_free(&r);
	}
out:
	json_decref(b);
	free(path);
	free(pool);
	free(node);
	return rc;
}
