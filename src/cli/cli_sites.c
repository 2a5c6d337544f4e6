/* sites get S (the site and its site::boot lease) and sites release-lease S (an
 * operator ends the lease: another site node takes it at the next epoch). */
#include <stdlib.h>

#include "cli/cli.h"

static const struct cli_col site_lease_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"TENANT", "tenantId", CLI_STR, 0, 0},
    {"NAME", "name", CLI_STR, 1, 0},
    {"LEASE HOLDER", "lease.holder", CLI_STR, 1, 0},
    {"LEASE EPOCH", "lease.epoch", CLI_STR, 1, 0},
    {"LEASE EXPIRES", "lease.expiresAt", CLI_TIME, 1, 0},
    {"CREATED", "createdAt", CLI_TIME, 0, 0},
};

static int site_call(struct cli *c, const char *method, const char *verb)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "sites", c->args[0], verb, NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, method, path, NULL, &r)) == 0) {
		rc = cli_show_object(c, &r, NULL, site_lease_cols,
		                     sizeof(site_lease_cols) / sizeof(site_lease_cols[0]));
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

int cli_cmd_sites_get(struct cli *c)
{
	return site_call(c, "GET", NULL);
}

int cli_cmd_sites_release_lease(struct cli *c)
{
	return site_call(c, "POST", "release-lease");
}

/* Refused (CONFLICT) while anything names the site: the server's message says what. */
int cli_cmd_sites_delete(struct cli *c)
{
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "sites", c->args[0], NULL)) != 0)
		return rc;
	return cli_delete(c, path, "site", c->args[0]);
}
