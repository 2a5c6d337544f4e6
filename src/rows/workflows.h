/* workflows as the admin API shows them, and a node's inventory records (what
 * JoinService and provisioning read and write of them: join/rows.h). See
 * rows/query.h. */
#ifndef BC_ROWS_WORKFLOWS_H
#define BC_ROWS_WORKFLOWS_H

#include "rows/query.h"

/* The workflows of tenant_id, oldest first (id NULL), or its workflow id. Columns, as
 * join/rows.h's BC_ROW_WORKFLOW_SELECT: id, tenant_id, node_id, kind, state, data,
 * created_at, updated_at. */
BC_WUR int bc_row_workflows_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

/* The inventory records of node_id, oldest first. Columns: taken_at, data. */
BC_WUR int bc_row_inventory_list(bc_tx *tx, const char *node_id, bc_rows **out);

#endif
