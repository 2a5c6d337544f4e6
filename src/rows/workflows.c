/* workflows and inventory for the admin API (workflows.h). */
#include "rows/workflows.h"

#define WORKFLOW_SELECT                                                                            \
	"SELECT id, tenant_id, node_id, kind, state, data, created_at, updated_at FROM workflows "

int bc_row_workflows_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	*out = NULL;
	if (id == NULL)
		return bc_tx_query(tx,
		                   WORKFLOW_SELECT "WHERE tenant_id = $1 ORDER BY "
		                                   "created_at, id",
		                   p, 1, out);
	return bc_tx_query(tx, WORKFLOW_SELECT "WHERE tenant_id = $1 AND id = $2", p, 2, out);
}

int bc_row_inventory_list(bc_tx *tx, const char *node_id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(node_id)};

	return bc_tx_query(tx,
	                   "SELECT taken_at, data FROM inventory WHERE node_id = $1 "
	                   "ORDER BY taken_at",
	                   p, 1, out);
}
