/* node_bindings (bindings.h). */
#include "rows/bindings.h"

#include <string.h>

#include "rows/internal.h"

int bc_row_binding_get(bc_tx *tx, const char *kind, const char *key, struct bc_binding_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	bc_param p[] = {BC_TEXT(kind), BC_TEXT(key)};
	if ((rc = bc_row_first(tx,
	                       "SELECT kind, key, node_id, created_at FROM node_bindings "
	                       "WHERE kind = $1 AND key = $2",
	                       p, 2, &r)) != 1)
		return rc;
	bc_row_copy_col(row->kind, sizeof(row->kind), r, "kind");
	bc_row_copy_col(row->key, sizeof(row->key), r, "key");
	bc_row_copy_col(row->node_id, sizeof(row->node_id), r, "node_id");
	row->created_at = bc_rows_int_named(r, "created_at");
	bc_rows_free(r);
	return 1;
}

int bc_row_binding_insert(bc_tx *tx, const char *kind, const char *key, const char *node_id,
                          int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(kind), BC_TEXT(key), BC_TEXT(node_id), BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "INSERT INTO node_bindings (kind, key, node_id, created_at) VALUES "
	                  "($1, $2, $3, $4)",
	                  p, 4, NULL);
}

int bc_row_bindings_of_node(bc_tx *tx, const char *node_id, int64_t limit, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(node_id), BC_INT(limit)};

	return bc_tx_query(tx,
	                   "SELECT kind, key, created_at FROM node_bindings WHERE node_id = $1 "
	                   "ORDER BY created_at, kind LIMIT $2",
	                   p, 2, out);
}
