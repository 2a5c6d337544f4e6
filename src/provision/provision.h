/* Commissioning bare metal: the workflows table (commission, deploy) and the
 * provisioned attestor's target resolver (provisionedTargetResolver).
 *
 * A workflow is a row of kind "commission" or "deploy", of state running, succeeded,
 * failed or cancelled, whose data is a JSON object:
 *   commission: {"bootEntry": {"siteId", "mac", "productUuid"?, "nodeId"?, "notAfter"}}
 *   deploy:     {"userData": "default"|"template",
 *                "steps": [{"name": "userdata.render", "state", "tokenId", "at"},
 *                          {"name": "join", "state", "at"?}]}
 * Every function runs inside the caller's transaction. Getters return 1 with the row
 * filled, 0 when there is none, or a negative BC_ERR_*; others 0 or a negative
 * BC_ERR_*. */
#ifndef BC_PROVISION_H
#define BC_PROVISION_H

#include <stdint.h>

#include "bc/attestor.h"
#include "bc/store.h"
#include "join/rows.h"

#define BC_WF_COMMISSION "commission"
#define BC_WF_DEPLOY     "deploy"
#define BC_WF_RUNNING    "running"
#define BC_WF_SUCCEEDED  "succeeded"
#define BC_WF_FAILED     "failed"
#define BC_WF_CANCELLED  "cancelled"
#define BC_STEP_RENDER   "userdata.render"
#define BC_STEP_JOIN     "join"

/* The columns every reader of workflows selects, in this order (the admin API's
 * answers read them by position): id, tenant_id, node_id, kind, state, data,
 * created_at, updated_at. */
#define BC_WORKFLOW_SELECT                                                                         \
	"SELECT id, tenant_id, node_id, kind, state, data, created_at, updated_at FROM workflows "

struct bc_workflow_row {
	char id[BC_ID_MAX];
	char tenant_id[BC_ID_MAX];
	char node_id[BC_ID_MAX]; /* "" for none */
	char kind[16];
	char state[16];
	char *data; /* malloc'd JSON text: bc_workflow_row_clear() frees it */
	int64_t created_at;
	int64_t updated_at;
};

void bc_workflow_row_clear(struct bc_workflow_row *row);

/* A new workflow, running, at now_ms. data: a JSON object as text. */
BC_WUR int bc_workflow_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *node_id,
                              const char *kind, const char *data, int64_t now_ms);

/* The workflow id of tenant_id (NULL: of any tenant), its row locked until the
 * transaction ends. */
BC_WUR int bc_workflow_lock(bc_tx *tx, const char *tenant_id, const char *id,
                            struct bc_workflow_row *row);

/* The id of node_id's running workflow of that kind (the newest), or 0. */
BC_WUR int bc_workflow_running_for(bc_tx *tx, const char *node_id, const char *kind,
                                   char id[BC_ID_MAX]);

/* Sets the state (and, when data is not NULL, the data) of workflow id at now_ms. */
BC_WUR int bc_workflow_set(bc_tx *tx, const char *id, const char *state, const char *data,
                           int64_t now_ms);

/* The deploy workflow's data, as its userdata.render step leaves it (malloc'd). */
BC_WUR int bc_workflow_deploy_data(const char *token_id, int template_given, int64_t now_ms,
                                   char **data);

/* ---- the provisioned attestor's target (provisionedTargetResolver) ---- */

struct bc_provision_target {
	char workflow_id[BC_ID_MAX];
	char node_id[BC_ID_MAX];
	char product_uuid[BC_ID_MAX]; /* the node's newest inventory's; "" when none */
};

/* For a token a deploy's userdata.render step minted (t->workflow_id set): the
 * running deploy workflow names the node, and that node's newest inventory gives the
 * product UUID. Returns 1 with *target filled; 0 when the token names no workflow (a
 * provider bootstrap: no target); 0 with *reason set when the workflow is no longer
 * running, is no deploy, or is not the token's tenant's; < 0 on a database error. */
BC_WUR int bc_provision_resolve_target(bc_tx *tx, const struct bc_token_row *t,
                                       struct bc_provision_target *target, const char **reason);

/* The target joined: the workflow's join step, and so the workflow, succeeded. */
BC_WUR int bc_provision_target_joined(bc_tx *tx, const struct bc_provision_target *target,
                                      int64_t now_ms);

#endif
