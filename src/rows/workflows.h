/* workflows: as the admin API shows them, and as provisioning, JoinService and
 * SiteService read and write them (their kinds, states and data:
 * provision/provision.h). See rows/query.h. */
#ifndef BC_ROWS_WORKFLOWS_H
#define BC_ROWS_WORKFLOWS_H

#include <stdint.h>

#include "bc/attestor.h"
#include "rows/query.h"

/* A page of tenant_id's workflows in id order (rows/query.h), columns as
 * bc_row_workflows_query's. */
void bc_row_workflows_list_sql(const char *tenant_id, const struct bc_row_page *pg,
                               struct bc_row_where *w);
BC_WUR int bc_row_workflows_list(bc_tx *tx, const char *tenant_id, const struct bc_row_page *pg,
                                 bc_rows **out);

/* The workflows of tenant_id, oldest first (id NULL), or its workflow id. Columns, as
 * BC_ROW_WORKFLOW_SELECT: id, tenant_id, node_id, kind, state, data, created_at,
 * updated_at. */
BC_WUR int bc_row_workflows_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

/* A workflow's columns, in this order: bc_row_workflows_query's answer (the admin API
 * reads it by position) and bc_row_workflow_lock (which reads them by name) select
 * them with this. id, tenant_id, node_id, kind, state, data, created_at,
 * updated_at. */
#define BC_ROW_WORKFLOW_SELECT                                                                     \
	"SELECT id, tenant_id, node_id, kind, state, data, created_at, updated_at FROM workflows "

struct bc_workflow_row {
	char id[BC_ID_MAX];
	char tenant_id[BC_ID_MAX];
	char node_id[BC_ID_MAX]; /* "" for none */
	char kind[16];
	char state[16];
	char *data; /* malloc'd JSON text: bc_row_workflow_clear() frees it */
	int64_t created_at;
	int64_t updated_at;
};

void bc_row_workflow_clear(struct bc_workflow_row *row);

/* A new workflow, running, at now_ms. data: a JSON object as text. */
BC_WUR int bc_row_workflow_insert(bc_tx *tx, const char *id, const char *tenant_id,
                                  const char *node_id, const char *kind, const char *data,
                                  int64_t now_ms);

/* The workflow id of tenant_id (NULL: of any tenant), its row locked until the
 * transaction ends. */
BC_WUR int bc_row_workflow_lock(bc_tx *tx, const char *tenant_id, const char *id,
                                struct bc_workflow_row *row);

/* The id of node_id's running workflow of that kind (the newest): 1, or 0. */
BC_WUR int bc_row_workflow_running_for(bc_tx *tx, const char *node_id, const char *kind,
                                       char id[BC_ID_MAX]);

/* Sets the state (and, when data is not NULL, the data) of workflow id at now_ms. */
BC_WUR int bc_row_workflow_set(bc_tx *tx, const char *id, const char *state, const char *data,
                               int64_t now_ms);

/* The running commission workflows of tenant_id, oldest first (SiteService's boot
 * entries). Columns: id, data. */
BC_WUR int bc_row_workflows_commissioning(bc_tx *tx, const char *tenant_id, bc_rows **out);

#endif
