/* Names wherever ids are accepted: the one resolver every command goes through.
 * An argument with the kind's id prefix goes to the server as it is (and the server
 * says NOT_FOUND when there is no such object); anything else is looked up among the
 * tenant's objects by name (a node by hostname, filtered on the server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

struct kind {
	const char *word;   /* "pool" */
	const char *list;   /* "pools": the path segment */
	const char *key;    /* the answer's array: "pools", "apiKeys" */
	const char *prefix; /* "pool_"; NULL: ids have no prefix (tenants) */
	const char *field;  /* what a name matches: "name", "hostname" */
};

static const struct kind KINDS[] = {
    [CLI_K_TENANT] = {"tenant", "tenants", "tenants", NULL, "name"},
    [CLI_K_POOL] = {"pool", "pools", "pools", "pool_", "name"},
    [CLI_K_SITE] = {"site", "sites", "sites", "site_", "name"},
    [CLI_K_NODE] = {"node", "nodes", "nodes", "node_", "hostname"},
    [CLI_K_API_KEY] = {"API key", "api-keys", "apiKeys", "key_", "name"},
};

/* GET the list the name is looked up in; nodes are filtered on the server. */
static int fetch(struct cli *c, const struct kind *k, const char *v, struct cli_resp *r)
{
	const char *kv[4] = {"hostname", v, "limit", "500"};
	char *path = NULL, *q = NULL, *full = NULL;
	int rc;

	if (k == &KINDS[CLI_K_TENANT])
		return cli_api(c, "GET", "/v1/tenants", NULL, r);
	if ((rc = cli_tenant_path(c, &path, k->list, NULL)) != 0)
		return rc;
	if (k == &KINDS[CLI_K_NODE] && (rc = cli_query(c, &q, kv, 2)) != 0)
		goto out;
	if (asprintf(&full, "%s%s", path, q ? q : "") < 0) {
		full = NULL;
		rc = BC_ERR_NOMEM;
		goto out;
	}
	rc = cli_api(c, "GET", full, NULL, r);
out:
	free(full);
	free(q);
	free(path);
	return rc;
}

/* "pool_a, pool_b" of the matches, for the message. */
static void list_ids(const json_t *arr, const struct kind *k, const char *v, int by_id, char *out,
                     size_t len)
{
	size_t i;
	const json_t *o;

	out[0] = '\0';
	json_array_foreach(arr, i, o)
	{
		const char *id = cli_jstr(o, "id"), *name = cli_jstr(o, by_id ? "id" : k->field);

		if (id != NULL && name != NULL && strcmp(name, v) == 0)
			snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? ", " : "",
			         id);
	}
}

static size_t count(const json_t *arr, const char *field, const char *v, const char **id)
{
	size_t i, n = 0;
	const json_t *o;

	json_array_foreach(arr, i, o)
	{
		const char *f = cli_jstr(o, field);

		if (f != NULL && cli_jstr(o, "id") != NULL && strcmp(f, v) == 0) {
			n++;
			*id = cli_jstr(o, "id");
		}
	}
	return n;
}

int cli_resolve(struct cli *c, enum cli_kind kind, const char *v, char **id)
{
	const struct kind *k = &KINDS[kind];
	struct cli_resp r = {0};
	const json_t *arr;
	const char *hit = NULL, *tenant = NULL;
	char ids[512], *safe = NULL;
	size_t n;
	int by_id = 0, rc;

	*id = NULL;
	if (v == NULL || kind == CLI_K_NONE)
		return v == NULL || (*id = strdup(v)) != NULL ? 0 : BC_ERR_NOMEM;
	if (v[0] == '\0' || strcmp(v, ".") == 0 || strcmp(v, "..") == 0)
		return cli_usage(c, "\"%s\" is not an id or a name", v);
	if (k->prefix != NULL && strncmp(v, k->prefix, strlen(k->prefix)) == 0)
		return (*id = strdup(v)) ? 0 : BC_ERR_NOMEM;
	if ((rc = fetch(c, k, v, &r)) != 0)
		return rc;
	arr = json_object_get(r.json, k->key);
	if (!json_is_array(arr)) {
		rc = cli_fail(c, BC_ERR_IO, "GET %s answered without a %s list", k->list, k->key);
		goto out;
	}
	/* a tenant's id ("root") is no prefix's: an id match wins over a name */
	if (k->prefix == NULL && (n = count(arr, "id", v, &hit)) == 1)
		by_id = 1;
	else
		n = count(arr, k->field, v, &hit);
	if (n == 1) {
		rc = (*id = strdup(hit)) ? 0 : BC_ERR_NOMEM;
		goto out;
	}
	if ((safe = strndup(v, 128)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	cli_sanitize(safe);
	if (kind != CLI_K_TENANT && c->tenant != NULL)
		tenant = c->tenant;
	if (n == 0) {
		rc = cli_error(c, BC_ERR_NOT_FOUND, "NOT_FOUND",
		               "no %s with the %s or id \"%s\"%s%s; see `" CLI_NAME " %s list`",
		               k->word, k->field, safe, tenant ? " in tenant " : "",
		               tenant ? tenant : "", k->list);
		goto out;
	}
	list_ids(arr, k, v, by_id, ids, sizeof(ids));
	cli_sanitize(ids);
	rc = cli_error(c, BC_ERR_CONFLICT, "AMBIGUOUS",
	               "%zu %ss have the %s \"%s\": %s; give the id instead", n, k->word, k->field,
	               safe, ids);
out:
	free(safe);
	cli_resp_free(&r);
	return rc;
}

int cli_resolve_arg(struct cli *c, enum cli_kind kind, size_t i)
{
	int rc;

	if (i >= c->n_args)
		return 0;
	free(c->resolved_args[i]);
	if ((rc = cli_resolve(c, kind, c->args[i], &c->resolved_args[i])) != 0)
		return rc;
	c->args[i] = c->resolved_args[i];
	return 0;
}

int64_t cli_parse_time(const char *s)
{
	struct tm tm;
	int ms = 0, used = 0;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	           &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6)
		return -1;
	s += used;
	if (*s == '.') {
		int digits = 0;

		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*s - '0');
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (strcmp(s, "Z") != 0 || tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -1;
	return (int64_t)t * 1000 + ms;
}
