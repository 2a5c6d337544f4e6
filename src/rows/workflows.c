/* workflows (workflows.h). */
#include "rows/workflows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rows/internal.h"

void bc_row_workflows_list_sql(const char *tenant_id, const struct bc_row_page *pg,
                               struct bc_row_where *w)
{
	bc_row_where_init(w, BC_ROW_WORKFLOW_SELECT "WHERE tenant_id = $1", BC_TEXT(tenant_id));
	bc_row_where_page(w, NULL, "id", 0, pg);
}

int bc_row_workflows_list(bc_tx *tx, const char *tenant_id, const struct bc_row_page *pg,
                          bc_rows **out)
{
	struct bc_row_where w;

	bc_row_workflows_list_sql(tenant_id, pg, &w);
	return bc_row_where_query(tx, &w, out);
}

int bc_row_workflows_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	*out = NULL;
	if (id == NULL)
		return bc_tx_query(tx,
		                   BC_ROW_WORKFLOW_SELECT "WHERE tenant_id = $1 ORDER BY "
		                                          "created_at, id",
		                   p, 1, out);
	return bc_tx_query(tx, BC_ROW_WORKFLOW_SELECT "WHERE tenant_id = $1 AND id = $2", p, 2,
	                   out);
}

void bc_row_workflow_clear(struct bc_workflow_row *row)
{
	free(row->data);
	memset(row, 0, sizeof(*row));
}

int bc_row_workflow_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *node_id,
                           const char *kind, const char *data, int64_t now_ms)
{
	bc_param p[] = {
	    BC_TEXT(id),   BC_TEXT(tenant_id), BC_TEXT(node_id && node_id[0] ? node_id : NULL),
	    BC_TEXT(kind), BC_TEXT(data),      BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "INSERT INTO workflows (id, tenant_id, node_id, kind, state, data, "
	                  "created_at, updated_at) VALUES ($1, $2, $3, $4, 'running', $5, $6, $6)",
	                  p, 6, NULL);
}

int bc_row_workflow_lock(bc_tx *tx, const char *tenant_id, const char *id,
                         struct bc_workflow_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant_id)};
	if ((rc = bc_row_first(tx,
	                       BC_ROW_WORKFLOW_SELECT
	                       "WHERE id = $1 AND ($2 IS NULL OR tenant_id = $2) "
	                       "FOR UPDATE",
	                       p, 2, &r)) != 1)
		return rc;
	bc_row_copy_col(row->id, sizeof(row->id), r, "id");
	bc_row_copy_col(row->tenant_id, sizeof(row->tenant_id), r, "tenant_id");
	bc_row_copy_col(row->node_id, sizeof(row->node_id), r, "node_id");
	bc_row_copy_col(row->kind, sizeof(row->kind), r, "kind");
	bc_row_copy_col(row->state, sizeof(row->state), r, "state");
	row->created_at = bc_rows_int_named(r, "created_at");
	row->updated_at = bc_rows_int_named(r, "updated_at");
	if ((row->data = strdup(bc_rows_text_named(r, "data"))) == NULL)
		rc = BC_ERR_NOMEM;
	bc_rows_free(r);
	return rc;
}

int bc_row_workflow_running_for(bc_tx *tx, const char *node_id, const char *kind,
                                char id[BC_ID_MAX])
{
	char *s = NULL;
	int rc;

	id[0] = 0;
	bc_param p[] = {BC_TEXT(node_id), BC_TEXT(kind)};
	rc = bc_tx_query_text(tx,
	                      "SELECT id FROM workflows WHERE node_id = $1 AND kind = $2 AND "
	                      "state = 'running' ORDER BY created_at DESC, id DESC LIMIT 1",
	                      p, 2, &s);
	if (rc == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0)
		return rc;
	snprintf(id, BC_ID_MAX, "%s", s);
	free(s);
	return 1;
}

int bc_row_workflow_set(bc_tx *tx, const char *id, const char *state, const char *data,
                        int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(state), BC_TEXT(data), BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "UPDATE workflows SET state = $2, data = COALESCE($3, data), "
	                  "updated_at = $4 WHERE id = $1",
	                  p, 4, NULL);
}

int bc_row_workflows_commissioning(bc_tx *tx, const char *tenant_id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id)};

	*out = NULL;
	return bc_tx_query(tx,
	                   "SELECT id, data FROM workflows WHERE tenant_id = $1 AND kind = "
	                   "'commission' AND state = 'running' ORDER BY created_at",
	                   p, 1, out);
}
