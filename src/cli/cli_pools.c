/* pools and sites. A pool's policy is replaced whole by the API, so
 * --join-attestors on update reads the policy first and changes only that key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/json.h"
#include "cli/cli.h"

#define MAX_POLICY (64u * 1024)

static const struct cli_col pool_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"TENANT", "tenantId", CLI_STR, 0, 0},
    {"NAME", "name", CLI_STR, 1, 0},
    {"ATTESTORS", "policy.joinAttestors", CLI_LIST, 1, 40},
    {"POLICY", "policy", CLI_JSON, 0, 0},
    {"CREATED", "createdAt", CLI_TIME, 1, 0},
    {"UPDATED", "updatedAt", CLI_TIME, 0, 0},
};
#define N_POOL_COLS (sizeof(pool_cols) / sizeof(pool_cols[0]))

static const struct cli_col site_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"TENANT", "tenantId", CLI_STR, 0, 0},
    {"NAME", "name", CLI_STR, 1, 0},
    {"CREATED", "createdAt", CLI_TIME, 1, 0},
};
#define N_SITE_COLS (sizeof(site_cols) / sizeof(site_cols[0]))

/* --policy JSON: a JSON object, said plainly when it is not one. */
static int parse_policy(struct cli *c, json_t **out)
{
	const char *text = cli_opt(c, "policy");
	char err[200];

	*out = NULL;
	if (text == NULL)
		return 0;
	if (bc_json_parse(text, strlen(text), MAX_POLICY, out, err, sizeof(err)) != 0)
		return cli_usage(c, "--policy is not valid JSON (%s)", err);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return cli_usage(c, "--policy must be a JSON object, like "
		                    "'{\"joinAttestors\":[\"tpm\"]}'");
	}
	return 0;
}

/* "a,b" -> ["a","b"]; the server checks the ids, and its message names the field. */
static int set_attestors(json_t *policy, const char *list)
{
	json_t *arr = json_array();
	const char *p = list;

	if (arr == NULL)
		return BC_ERR_NOMEM;
	for (;;) {
		size_t n = strcspn(p, ",");
		const char *s = p, *e = p + n;

		while (s < e && *s == ' ')
			s++;
		while (e > s && e[-1] == ' ')
			e--;
		if (json_array_append_new(arr, json_stringn(s, (size_t)(e - s))) != 0) {
			json_decref(arr);
			return BC_ERR_NOMEM;
		}
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	return json_object_set_new(policy, "joinAttestors", arr) == 0 ? 0 : BC_ERR_NOMEM;
}

static int show_pool(struct cli *c, const char *method, const char *path, json_t *body)
{
	struct cli_resp r;
	int rc;

	if ((rc = cli_api(c, method, path, body, &r)) != 0)
		return rc;
	rc = cli_show_object(c, &r, NULL, pool_cols, N_POOL_COLS);
	cli_resp_free(&r);
	return rc;
}

int cli_cmd_pools_create(struct cli *c)
{
	const char *attestors = cli_opt(c, "join-attestors");
	json_t *policy = NULL, *body = NULL;
	char *path = NULL;
	int rc;

	if ((rc = parse_policy(c, &policy)) != 0)
		return rc;
	if (attestors != NULL && policy == NULL && (policy = json_object()) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if (attestors != NULL && (rc = set_attestors(policy, attestors)) != 0)
		goto out;
	if ((body = json_pack("{s:s}", "name", c->args[0])) == NULL ||
	    (policy != NULL && json_object_set(body, "policy", policy) != 0)) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = cli_tenant_path(c, &path, "pools", NULL)) != 0)
		goto out;
	rc = show_pool(c, "POST", path, body);
out:
	free(path);
	json_decref(body);
	json_decref(policy);
	return rc;
}

int cli_cmd_pools_get(struct cli *c)
{
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "pools", c->args[0], NULL)) != 0)
		return rc;
	rc = show_pool(c, "GET", path, NULL);
	free(path);
	return rc;
}

int cli_cmd_pools_list(struct cli *c)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "pools", NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", path, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, "pools", pool_cols, N_POOL_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

/* The pool's current policy, for a change of one key. Another admin's change between
 * this read and the update would be lost: the API has no compare-and-set. */
static int current_policy(struct cli *c, const char *path, json_t **out)
{
	struct cli_resp r;
	json_t *p;
	int rc;

	*out = NULL;
	if ((rc = cli_api(c, "GET", path, NULL, &r)) != 0)
		return rc;
	p = json_object_get(r.json, "policy");
	*out = json_is_object(p) ? json_deep_copy(p) : json_object();
	cli_resp_free(&r);
	return *out != NULL ? 0 : BC_ERR_NOMEM;
}

int cli_cmd_pools_update(struct cli *c)
{
	const char *name = cli_opt(c, "name"), *attestors = cli_opt(c, "join-attestors");
	json_t *policy = NULL, *body = NULL;
	char *path = NULL;
	int rc;

	if (name == NULL && attestors == NULL && cli_opt(c, "policy") == NULL)
		return cli_usage(c, "nothing to update: give --name, --policy or --join-attestors");
	if ((rc = parse_policy(c, &policy)) != 0)
		return rc;
	if ((rc = cli_tenant_path(c, &path, "pools", c->args[0], NULL)) != 0)
		goto out;
	if (attestors != NULL && policy == NULL && (rc = current_policy(c, path, &policy)) != 0)
		goto out;
	if (attestors != NULL && (rc = set_attestors(policy, attestors)) != 0)
		goto out;
	if ((body = json_object()) == NULL ||
	    (name != NULL && json_object_set_new(body, "name", json_string(name)) != 0) ||
	    (policy != NULL && json_object_set(body, "policy", policy) != 0)) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	rc = show_pool(c, "PATCH", path, body);
out:
	free(path);
	json_decref(body);
	json_decref(policy);
	return rc;
}

int cli_cmd_sites_create(struct cli *c)
{
	struct cli_resp r;
	json_t *body = NULL;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "sites", NULL)) != 0)
		return rc;
	if ((body = json_pack("{s:s}", "name", c->args[0])) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = cli_api(c, "POST", path, body, &r)) != 0)
		goto out;
	rc = cli_show_object(c, &r, NULL, site_cols, N_SITE_COLS);
	cli_resp_free(&r);
out:
	json_decref(body);
	free(path);
	return rc;
}

int cli_cmd_sites_list(struct cli *c)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "sites", NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", path, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, "sites", site_cols, N_SITE_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

/* Refused (CONFLICT) while nodes, live tokens or open join requests name the pool:
 * the server's message says which. */
int cli_cmd_pools_delete(struct cli *c)
{
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "pools", c->args[0], NULL)) != 0)
		return rc;
	return cli_delete(c, path, "pool", c->args[0]);
}
