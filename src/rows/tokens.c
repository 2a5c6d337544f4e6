/* join_tokens (tokens.h). */
#include "rows/tokens.h"

#include <stdlib.h>
#include <string.h>

#include "rows/internal.h"

#define TOKEN_SELECT                                                                               \
	"SELECT id, tenant_id, pool_id, site_id, role, uses_left, uses_total, expires_at, "        \
	"revoked_at, expect, allow_reclaim, description, created_at, last_used_at, "               \
	"(SELECT p.name FROM pools p WHERE p.id = join_tokens.pool_id), "                          \
	"(SELECT s.name FROM sites s WHERE s.id = join_tokens.site_id) "                           \
	"FROM join_tokens "

void bc_row_tokens_list_sql(const char *tenant_id, const struct bc_row_page *pg,
                            struct bc_row_where *w)
{
	bc_row_where_init(w, TOKEN_SELECT "WHERE tenant_id = $1", BC_TEXT(tenant_id));
	bc_row_where_page(w, NULL, "id", 0, pg);
}

int bc_row_tokens_list(bc_tx *tx, const char *tenant_id, const struct bc_row_page *pg,
                       bc_rows **out)
{
	struct bc_row_where w;

	bc_row_tokens_list_sql(tenant_id, pg, &w);
	return bc_row_where_query(tx, &w, out);
}

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

int bc_row_token_lock(bc_tx *tx, const char *id, struct bc_token_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	if ((rc = bc_row_first(
	         tx,
	         "SELECT id, tenant_id, pool_id, site_id, role, secret_hash, uses_left, "
	         "expires_at, revoked_at, workflow_id, node_id FROM join_tokens "
	         "WHERE id = $1 FOR UPDATE",
	         (bc_param[]){BC_TEXT(id)}, 1, &r)) != 1)
		return rc;
	bc_row_copy_col(row->id, sizeof(row->id), r, "id");
	bc_row_copy_col(row->tenant_id, sizeof(row->tenant_id), r, "tenant_id");
	bc_row_copy_col(row->pool_id, sizeof(row->pool_id), r, "pool_id");
	bc_row_copy_col(row->site_id, sizeof(row->site_id), r, "site_id");
	bc_row_copy_col(row->role, sizeof(row->role), r, "role");
	bc_row_copy_col(row->secret_hash, sizeof(row->secret_hash), r, "secret_hash");
	row->uses_left = bc_rows_int_named(r, "uses_left");
	row->expires_at = bc_rows_int_named(r, "expires_at");
	row->revoked = !bc_rows_null_named(r, "revoked_at");
	bc_row_copy_col(row->workflow_id, sizeof(row->workflow_id), r, "workflow_id");
	bc_row_copy_col(row->node_id, sizeof(row->node_id), r, "node_id");
	bc_rows_free(r);
	return 1;
}

int bc_row_token_expect(bc_tx *tx, const char *id, char **expect, int *allow_reclaim)
{
	bc_rows *r = NULL;
	int rc;

	*expect = NULL;
	*allow_reclaim = 0;
	if ((rc = bc_row_first(tx, "SELECT expect, allow_reclaim FROM join_tokens WHERE id = $1",
	                       (bc_param[]){BC_TEXT(id)}, 1, &r)) != 1)
		return rc;
	*allow_reclaim = bc_rows_int_named(r, "allow_reclaim") != 0;
	if ((*expect = strdup(bc_rows_text_named(r, "expect"))) == NULL)
		rc = BC_ERR_NOMEM;
	bc_rows_free(r);
	return rc;
}

int bc_row_token_consume(bc_tx *tx, const char *id, int64_t now_ms)
{
	int64_t changes = 0;
	int rc;

	bc_param p[] = {BC_TEXT(id), BC_INT(now_ms)};
	if ((rc = bc_tx_exec(tx,
	                     "UPDATE join_tokens SET uses_left = uses_left - 1, last_used_at = $2 "
	                     "WHERE id = $1 AND uses_left > 0",
	                     p, 2, &changes)) != 0)
		return rc;
	/* the row is locked: a use that vanished between check and spend is a bug */
	return changes == 1 ? 0 : BC_ERR_INTERNAL;
}

int bc_row_token_insert(bc_tx *tx, const struct bc_token_write *t)
{
	bc_param p[] = {BC_TEXT(t->id),
	                BC_TEXT(t->tenant_id),
	                BC_TEXT(bc_row_none_if_empty(t->pool_id)),
	                BC_TEXT(bc_row_none_if_empty(t->site_id)),
	                BC_TEXT(t->role),
	                BC_TEXT(t->secret_hash),
	                BC_INT(t->uses),
	                BC_INT(t->expires_at),
	                BC_TEXT(t->expect ? t->expect : "{}"),
	                BC_INT(t->allow_reclaim),
	                BC_TEXT(bc_row_none_if_empty(t->workflow_id)),
	                BC_TEXT(bc_row_none_if_empty(t->node_id)),
	                BC_TEXT(bc_row_none_if_empty(t->description)),
	                BC_INT(t->now_ms)};

	return bc_tx_exec(
	    tx,
	    "INSERT INTO join_tokens (id, tenant_id, pool_id, site_id, role, secret_hash, "
	    "uses_left, uses_total, expires_at, expect, allow_reclaim, workflow_id, node_id, "
	    "description, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, "
	    "$12, $13, $14)",
	    p, sizeof(p) / sizeof(p[0]), NULL);
}

int bc_row_tokens_discovery_live(bc_tx *tx, const char *site_id, int64_t now_ms,
                                 const char *workflow_id, int64_t *n)
{
	bc_param p[] = {BC_TEXT(site_id), BC_INT(now_ms), BC_TEXT(workflow_id)};

	*n = 0;
	return bc_tx_query_int(tx,
	                       "SELECT COUNT(*) FROM join_tokens WHERE site_id = $1 AND role = "
	                       "'discovery' AND COALESCE(workflow_id, '') = $3 AND uses_left > 0 "
	                       "AND revoked_at IS NULL AND expires_at > $2",
	                       p, 3, n);
}
