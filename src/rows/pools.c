/* pools (pools.h). */
#include "rows/pools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_SELECT "SELECT id, tenant_id, name, policy, created_at, updated_at FROM pools "

int bc_row_pools_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	*out = NULL;
	if (id == NULL)
		return bc_tx_query(tx, POOL_SELECT "WHERE tenant_id = $1 ORDER BY created_at, id",
		                   p, 1, out);
	return bc_tx_query(tx, POOL_SELECT "WHERE tenant_id = $1 AND id = $2", p, 2, out);
}

int bc_row_pool_in_tenant(bc_tx *tx, const char *tenant_id, const char *id)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant_id)};

	return bc_row_exists(tx, "SELECT 1 FROM pools WHERE id = $1 AND tenant_id = $2", p, 2);
}

int bc_row_pool_lock(bc_tx *tx, const char *tenant_id, const char *id)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	return bc_row_exists(tx, "SELECT 1 FROM pools WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
	                     p, 2);
}

int bc_row_pool_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *name,
                       const char *policy, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant_id), BC_TEXT(name), BC_TEXT(policy),
	                BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "INSERT INTO pools (id, tenant_id, name, policy, created_at, updated_at) "
	                  "VALUES ($1, $2, $3, $4, $5, $5)",
	                  p, 5, NULL);
}

int bc_row_pool_set_name(bc_tx *tx, const char *id, const char *name, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(name), BC_INT(now_ms), BC_TEXT(id)};

	return bc_tx_exec(tx, "UPDATE pools SET name = $1, updated_at = $2 WHERE id = $3", p, 3,
	                  NULL);
}

int bc_row_pool_set_policy(bc_tx *tx, const char *id, const char *policy, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(policy), BC_INT(now_ms), BC_TEXT(id)};

	return bc_tx_exec(tx, "UPDATE pools SET policy = $1, updated_at = $2 WHERE id = $3", p, 3,
	                  NULL);
}

int bc_row_pool_policy(bc_tx *tx, const char *id, char tenant_id[64], char **policy)
{
	bc_rows *rows = NULL;
	int rc;

	tenant_id[0] = '\0';
	*policy = NULL;
	bc_param p[] = {BC_TEXT(id)};
	if ((rc = bc_tx_query(tx, "SELECT tenant_id, policy FROM pools WHERE id = $1", p, 1,
	                      &rows)) != 0)
		return rc;
	if ((rc = bc_rows_next(rows)) == 1) {
		/* a longer id is no tenant's: "" matches none */
		if (strlen(bc_rows_text(rows, 0)) < 64)
			snprintf(tenant_id, 64, "%s", bc_rows_text(rows, 0));
		if ((*policy = strdup(bc_rows_text(rows, 1))) == NULL)
			rc = BC_ERR_NOMEM;
	}
	bc_rows_free(rows);
	return rc;
}
