/* join_tokens for the admin API (tokens.h). */
#include "rows/tokens.h"

#define TOKEN_SELECT                                                                               \
	"SELECT id, tenant_id, pool_id, site_id, role, uses_left, uses_total, expires_at, "        \
	"revoked_at, expect, allow_reclaim, description, created_at, last_used_at, "               \
	"(SELECT p.name FROM pools p WHERE p.id = join_tokens.pool_id), "                          \
	"(SELECT s.name FROM sites s WHERE s.id = join_tokens.site_id) "                           \
	"FROM join_tokens "

int bc_row_tokens_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	*out = NULL;
	if (id == NULL)
		return bc_tx_query(tx, TOKEN_SELECT "WHERE tenant_id = $1 ORDER BY created_at, id",
		                   p, 1, out);
	return bc_tx_query(tx, TOKEN_SELECT "WHERE tenant_id = $1 AND id = $2", p, 2, out);
}

int bc_row_token_revoke(bc_tx *tx, const char *tenant_id, const char *id, int64_t now_ms,
                        int64_t *changes)
{
	bc_param p[] = {BC_INT(now_ms), BC_TEXT(tenant_id), BC_TEXT(id)};

	return bc_tx_exec(tx,
	                  "UPDATE join_tokens SET revoked_at = $1 WHERE tenant_id = $2 AND id = $3 "
	                  "AND revoked_at IS NULL",
	                  p, 3, changes);
}
