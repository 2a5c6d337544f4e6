/* DELETE of a pool, a site or a tenant (docs/admin-api.md, "Deleting pools, sites and
 * tenants"): refused with CONFLICT while anything live refers to it, the message
 * saying what and what to do; otherwise the row goes with the dead rows that name it
 * (rows/refs.h), and an audit row says so. */
#include <stdio.h>
#include <string.h>

#include "bc/json.h"
#include "rows/pools.h"
#include "rows/refs.h"
#include "rows/sites.h"
#include "rows/tenants.h"
#include "rows/workflows.h"
#include "server/admin_internal.h"

/* One kind of reference: how many, its noun, and what the operator does about it. */
struct ref_part {
	int64_t n;
	const char *noun; /* singular; "s" is added for more than one */
	const char *fix;
};

/* "<what> has 3 nodes and 1 live token; retire and delete the nodes and revoke the
 * tokens first", into c->msg as a CONFLICT; 0 when nothing refers to it. */
static int refuse_refs(struct admin_call *c, const char *what, const struct ref_part *parts,
                       size_t n)
{
	char has[256] = "", fix[256] = "";
	size_t k = 0, seen = 0;

	for (size_t i = 0; i < n; i++)
		k += parts[i].n > 0;
	if (k == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *sep;

		if (parts[i].n <= 0)
			continue;
		sep = seen == 0 ? "" : seen + 1 == k ? " and " : ", ";
		seen++;
		snprintf(has + strlen(has), sizeof(has) - strlen(has), "%s%lld %s%s", sep,
		         (long long)parts[i].n, parts[i].noun, parts[i].n > 1 ? "s" : "");
		snprintf(fix + strlen(fix), sizeof(fix) - strlen(fix), "%s%s", sep, parts[i].fix);
	}
	return admin_fail(c, BC_ERR_CONFLICT, "%s has %s; %s first", what, has, fix);
}

/* The deleted row's name for the audit, from a view whose column col is the name. */
static int row_name(bc_rows *r, int col, char *out, size_t len)
{
	int rc = bc_rows_next(r);

	if (rc == 1)
		snprintf(out, len, "%s", bc_rows_text(r, col));
	bc_rows_free(r);
	return rc < 0 ? rc : rc == 1 ? 0 : BC_ERR_NOT_FOUND;
}

/* Audits the deletion of kind id (named name) in tenant_id and answers it. */
static int deleted(bc_tx *tx, struct admin_call *c, const char *tenant_id, const char *kind,
                   const char *id, const char *name)
{
	char type[32], key[32];
	json_t *data;
	int rc;

	snprintf(type, sizeof(type), "%s.deleted", kind);
	snprintf(key, sizeof(key), "%sId", kind);
	if ((data = json_pack("{s:s, s:s}", key, id, "name", name)) == NULL)
		return BC_ERR_NOMEM;
	rc = admin_record(tx, c, tenant_id, type, id, data, 1);
	json_decref(data);
	return rc != 0 ? rc : admin_answer(c, 200, json_pack("{s:s}", "deleted", id));
}

int admin_pools_delete(bc_tx *tx, struct admin_call *c)
{
	struct bc_row_refs refs;
	char what[96], name[160];
	bc_rows *r;
	int rc;

	if ((rc = bc_row_pool_lock(tx, c->arg[0], c->arg[1])) == 0)
		return admin_fail(c, BC_ERR_NOT_FOUND, "pool not found");
	if (rc < 0 || (rc = bc_row_refs_count(tx, BC_ROW_OWNER_POOL, c->arg[1], bc_tx_now_ms(tx),
	                                      &refs)) != 0)
		return rc;
	const struct ref_part parts[] = {
	    {refs.nodes, "node", "retire and delete the nodes (or enroll them elsewhere)"},
	    {refs.tokens, "live token", "revoke the tokens"},
	    {refs.join_requests, "open join request", "deny or delete the join requests"},
	};
	snprintf(what, sizeof(what), "pool %s", c->arg[1]);
	if ((rc = refuse_refs(c, what, parts, sizeof(parts) / sizeof(parts[0]))) != 0)
		return rc;
	if ((rc = bc_row_pools_query(tx, c->arg[0], c->arg[1], &r)) != 0 ||
	    (rc = row_name(r, 2, name, sizeof(name))) != 0 ||
	    (rc = bc_row_owner_delete(tx, BC_ROW_OWNER_POOL, c->arg[1])) != 0)
		return rc;
	return deleted(tx, c, c->arg[0], "pool", c->arg[1], name);
}

/* The tenant's running commission workflows whose boot entry is at site_id. */
static int site_commissions(bc_tx *tx, const char *tenant_id, const char *site_id, int64_t *n)
{
	bc_rows *r;
	int rc;

	*n = 0;
	if ((rc = bc_row_workflows_commissioning(tx, tenant_id, &r)) != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1) {
		const char *text = bc_rows_text(r, 1), *s;
		json_t *d = NULL;

		if (bc_json_parse(text, strlen(text), 0, &d, NULL, 0) != 0)
			d = NULL;
		s = json_string_value(json_object_get(json_object_get(d, "bootEntry"), "siteId"));

		*n += s != NULL && strcmp(s, site_id) == 0;
		json_decref(d);
	}
	bc_rows_free(r);
	return rc < 0 ? rc : 0;
}

int admin_sites_delete(bc_tx *tx, struct admin_call *c)
{
	struct bc_row_refs refs;
	char what[96], name[160];
	bc_rows *r;
	int rc;

	if ((rc = bc_row_site_lock(tx, c->arg[0], c->arg[1])) == 0)
		return admin_fail(c, BC_ERR_NOT_FOUND, "site not found");
	if (rc < 0 ||
	    (rc = bc_row_refs_count(tx, BC_ROW_OWNER_SITE, c->arg[1], bc_tx_now_ms(tx), &refs)) !=
	        0 ||
	    (rc = site_commissions(tx, c->arg[0], c->arg[1], &refs.workflows)) != 0)
		return rc;
	const struct ref_part parts[] = {
	    {refs.nodes, "node", "retire and delete the nodes"},
	    {refs.tokens, "live token", "revoke the tokens"},
	    {refs.join_requests, "open join request", "deny or delete the join requests"},
	    {refs.workflows, "running commission workflow", "cancel or complete the workflows"},
	};
	snprintf(what, sizeof(what), "site %s", c->arg[1]);
	if ((rc = refuse_refs(c, what, parts, sizeof(parts) / sizeof(parts[0]))) != 0)
		return rc;
	if ((rc = bc_row_sites_query(tx, c->arg[0], c->arg[1], &r)) != 0 ||
	    (rc = row_name(r, 2, name, sizeof(name))) != 0 ||
	    (rc = bc_row_owner_delete(tx, BC_ROW_OWNER_SITE, c->arg[1])) != 0)
		return rc;
	return deleted(tx, c, c->arg[0], "site", c->arg[1], name);
}

/* Only the root tenant's keys delete tenants, and never the root tenant: its keys
 * administer every tenant. The audit row is the root tenant's. */
int admin_tenants_delete(bc_tx *tx, struct admin_call *c)
{
	struct bc_row_refs refs;
	char what[96], name[160];
	bc_rows *r;
	int rc;

	if (!admin_is_root(c)) {
		c->err_status = 403;
		return admin_fail(c, BC_ERR_DENIED,
		                  "only a key of the root tenant may delete tenants");
	}
	if (strcmp(c->arg[0], ADMIN_ROOT_TENANT) == 0)
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "the root tenant cannot be deleted: its keys administer every "
		                  "tenant");
	if ((rc = bc_row_tenant_lock(tx, c->arg[0])) == 0)
		return admin_fail(c, BC_ERR_NOT_FOUND, "tenant not found");
	if (rc < 0 || (rc = bc_row_refs_count(tx, BC_ROW_OWNER_TENANT, c->arg[0], bc_tx_now_ms(tx),
	                                      &refs)) != 0)
		return rc;
	const struct ref_part parts[] = {
	    {refs.nodes, "node", "retire and delete the nodes"},
	    {refs.tokens, "live token", "revoke the tokens"},
	    {refs.join_requests, "open join request", "deny or delete the join requests"},
	    {refs.workflows, "running workflow", "cancel or complete the workflows"},
	    {refs.pools, "pool", "delete the pools"},
	    {refs.sites, "site", "delete the sites"},
	    {refs.api_keys, "live API key", "revoke the API keys"},
	};
	snprintf(what, sizeof(what), "tenant %s", c->arg[0]);
	if ((rc = refuse_refs(c, what, parts, sizeof(parts) / sizeof(parts[0]))) != 0)
		return rc;
	if ((rc = bc_row_tenants_query(tx, c->arg[0], &r)) != 0 ||
	    (rc = row_name(r, 1, name, sizeof(name))) != 0 ||
	    (rc = bc_row_owner_delete(tx, BC_ROW_OWNER_TENANT, c->arg[0])) != 0)
		return rc;
	return deleted(tx, c, c->tenant_id, "tenant", c->arg[0], name);
}
