/* Commissioning bare metal: workflows (commission, deploy) and the
 * provisioned attestor's target resolver (provisionedTargetResolver).
 *
 * A workflow is a row of kind "commission" or "deploy", of state running, succeeded,
 * failed or cancelled, whose data is a JSON object:
 *   commission: {"bootEntry": {"siteId", "mac", "productUuid"?, "nodeId"?, "notAfter"}}
 *   deploy:     {"userData": "default"|"template",
 *                "steps": [{"name": "userdata.render", "state", "tokenId", "at"},
 *                          {"name": "join", "state", "at"?}]}
 * The table's queries are rows/workflows.h's (bc_row_workflow_*). Every function runs
 * inside the caller's transaction and returns 0 or a negative BC_ERR_*, unless said. */
#ifndef BC_PROVISION_H
#define BC_PROVISION_H

#include <stdint.h>

#include "bc/attestor.h"
#include "bc/store.h"
#include "rows/nodes.h"
#include "rows/tokens.h"
#include "rows/workflows.h"

#define BC_WF_COMMISSION "commission"
#define BC_WF_DEPLOY     "deploy"
#define BC_WF_RUNNING    "running"
#define BC_WF_SUCCEEDED  "succeeded"
#define BC_WF_FAILED     "failed"
#define BC_WF_CANCELLED  "cancelled"
#define BC_STEP_RENDER   "userdata.render"
#define BC_STEP_JOIN     "join"

/* The deploy workflow's data, as its userdata.render step leaves it (malloc'd). */
BC_WUR int bc_workflow_deploy_data(const char *token_id, int template_given, int64_t now_ms,
                                   char **data);

/* Starts the deploy of node n (deploy.c; the caller checked that n may be deployed):
 * a new deploy workflow of tenant_id, running (its id into wf), and its
 * userdata.render step: a single-use provisioned token for n and the workflow, valid
 * ttl_s seconds (its id into tok; *token the whole token, malloc'd: wipe it with
 * bc_freezero and free it; NULL on an error), recorded in the workflow's data
 * (template_given: the user data is the operator's template). */
BC_WUR int bc_provision_deploy(bc_tx *tx, const char *tenant_id, const struct bc_node_row *n,
                               int template_given, int64_t ttl_s, int64_t now_ms,
                               char wf[BC_ID_MAX], char tok[BC_ID_MAX], char **token);

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
