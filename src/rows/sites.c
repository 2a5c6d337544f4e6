/* sites (sites.h). */
#include "rows/sites.h"

#define SITE_SELECT "SELECT id, tenant_id, name, created_at FROM sites "

int bc_row_sites_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	*out = NULL;
	if (id == NULL)
		return bc_tx_query(tx, SITE_SELECT "WHERE tenant_id = $1 ORDER BY created_at, id",
		                   p, 1, out);
	return bc_tx_query(tx, SITE_SELECT "WHERE tenant_id = $1 AND id = $2", p, 2, out);
}

int bc_row_site_in_tenant(bc_tx *tx, const char *tenant_id, const char *id)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant_id)};

	return bc_row_exists(tx, "SELECT 1 FROM sites WHERE id = $1 AND tenant_id = $2", p, 2);
}

int bc_row_site_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *name,
                       int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant_id), BC_TEXT(name), BC_INT(now_ms)};

	return bc_tx_exec(
	    tx, "INSERT INTO sites (id, tenant_id, name, created_at) VALUES ($1, $2, $3, $4)", p, 4,
	    NULL);
}

int bc_row_site_lock(bc_tx *tx, const char *tenant_id, const char *id)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	return bc_row_exists(tx, "SELECT 1 FROM sites WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
	                     p, 2);
}
