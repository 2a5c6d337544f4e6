/* tenants (tenants.h). */
#include "rows/tenants.h"

#define TENANT_SELECT "SELECT id, name, created_at FROM tenants "

int bc_row_tenants_query(bc_tx *tx, const char *only_id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(only_id)};

	*out = NULL;
	if (only_id == NULL)
		return bc_tx_query(tx, TENANT_SELECT "ORDER BY created_at, id", NULL, 0, out);
	return bc_tx_query(tx, TENANT_SELECT "WHERE id = $1", p, 1, out);
}

int bc_row_tenant_exists(bc_tx *tx, const char *id)
{
	bc_param p[] = {BC_TEXT(id)};

	return bc_row_exists(tx, "SELECT 1 FROM tenants WHERE id = $1", p, 1);
}

int bc_row_tenant_insert(bc_tx *tx, const char *id, const char *name, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(name), BC_INT(now_ms)};

	return bc_tx_exec(tx, "INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)", p,
	                  3, NULL);
}

int bc_row_tenant_insert_root(bc_tx *tx, int64_t now_ms)
{
	bc_param p[] = {BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "INSERT INTO tenants (id, name, created_at) "
	                  "VALUES ('root', 'root', $1)",
	                  p, 1, NULL);
}

int bc_row_tenant_lock(bc_tx *tx, const char *id)
{
	bc_param p[] = {BC_TEXT(id)};

	return bc_row_exists(tx, "SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE", p, 1);
}
