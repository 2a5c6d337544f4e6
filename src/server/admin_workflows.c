/* Workflows (commission, deploy) and a node's inventory. A deploy's userdata.render
 * step (provision/deploy.c) mints the single-use provisioned token its user data
 * carries; the token is answered once, here, and the CLI renders it into the user
 * data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/canon.h"
#include "bc/json.h"
#include "rows/inventory.h"
#include "rows/nodes.h"
#include "provision/provision.h"
#include "rows/sites.h"
#include "rows/workflows.h"
#include "server/admin_internal.h"

#define TTL_MIN_S            60
#define COMMISSION_TTL_DEF_S 3600
#define COMMISSION_TTL_MAX_S (7 * 86400)
#define DEPLOY_TTL_DEF_S     86400
#define DEPLOY_TTL_MAX_S     (7 * 86400)

static const char *const COMMISSION_FIELDS[] = {"siteId", "mac",        "productUuid",
                                                "nodeId", "ttlSeconds", NULL};
static const char *const DEPLOY_FIELDS[] = {"nodeId", "userDataTemplate", "ttlSeconds", NULL};
static const char *const COMPLETE_FIELDS[] = {"state", NULL};

static json_t *workflow_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:o, s:o}", "id", bc_rows_text(r, 0),
	                 "tenantId", bc_rows_text(r, 1), "nodeId", admin_col_text(r, 2), "kind",
	                 bc_rows_text(r, 3), "state", bc_rows_text(r, 4), "data",
	                 admin_col_json(r, 5, "{}"), "createdAt", admin_time(bc_rows_int(r, 6)),
	                 "updatedAt", admin_time(bc_rows_int(r, 7)));
}

static int answer_workflow(bc_tx *tx, struct admin_call *c, const char *id, int status,
                           json_t **out)
{
	json_t *w = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_workflows_query(tx, c->arg[0], id, &r)) == 0)
		rc = admin_rows_one(r, workflow_json, &w);
	if (rc == BC_ERR_NOT_FOUND)
		return admin_fail(c, rc, "workflow not found");
	if (rc != 0)
		return rc;
	if (out != NULL) {
		*out = w;
		return 0;
	}
	return admin_answer(c, status, w);
}

int admin_workflows_list(bc_tx *tx, struct admin_call *c)
{
	struct admin_page pg;
	bc_rows *r;
	int rc;

	if ((rc = admin_query_page(c, &pg, "workflows", -1, 0, ADMIN_LIST_LIMIT_DEFAULT,
	                           ADMIN_LIST_LIMIT_MAX)) != 0 ||
	    (rc = bc_row_workflows_list(tx, c->arg[0], &pg.rows, &r)) != 0)
		return rc;
	return admin_page_answer(c, &pg, r, workflow_json, "workflows");
}

int admin_workflows_get(bc_tx *tx, struct admin_call *c)
{
	return answer_workflow(tx, c, c->arg[1], 200, NULL);
}

/* running -> state, recorded as workflow.<event>. */
static int finish(bc_tx *tx, struct admin_call *c, const char *state, const char *event)
{
	struct bc_workflow_row w;
	json_t *data = NULL;
	int rc;

	if ((rc = bc_row_workflow_lock(tx, c->arg[0], c->arg[1], &w)) < 0)
		return rc;
	if (rc == 0)
		return admin_fail(c, BC_ERR_NOT_FOUND, "workflow not found");
	if (strcmp(w.state, BC_WF_RUNNING) != 0) {
		rc = admin_fail(c, BC_ERR_CONFLICT, "workflow is %s: only a running one can end",
		                w.state);
		goto out;
	}
	if ((rc = bc_row_workflow_set(tx, w.id, state, NULL, bc_tx_now_ms(tx))) != 0)
		goto out;
	data = json_pack("{s:s, s:s, s:s, s:s?}", "workflowId", w.id, "kind", w.kind, "state",
	                 state, "nodeId", w.node_id[0] ? w.node_id : NULL);
	if ((rc = admin_record(tx, c, c->arg[0], event, w.id, data, 1)) != 0)
		goto out;
	rc = answer_workflow(tx, c, w.id, 200, NULL);
out:
	json_decref(data);
	bc_row_workflow_clear(&w);
	return rc;
}

/* A cancelled deploy's token is refused (workflow-not-running): it stays unrevoked,
 * so the refusal names why. */
int admin_workflows_cancel(bc_tx *tx, struct admin_call *c)
{
	return finish(tx, c, BC_WF_CANCELLED, "workflow.cancelled");
}

int admin_workflows_complete(bc_tx *tx, struct admin_call *c)
{
	const char *state = NULL;
	int rc;

	if (c->body &&
	    ((rc = admin_check_fields(c, c->body, "workflow", COMPLETE_FIELDS)) != 0 ||
	     (rc = admin_get_text(c, c->body, "state", "workflow.state", 0, 16, &state)) != 0))
		return rc;
	if (state == NULL)
		state = BC_WF_SUCCEEDED;
	if (strcmp(state, BC_WF_SUCCEEDED) != 0 && strcmp(state, BC_WF_FAILED) != 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "workflow.state: expected \"succeeded\" or \"failed\"");
	return finish(tx, c, state,
	              strcmp(state, BC_WF_FAILED) == 0 ? "workflow.failed" : "workflow.succeeded");
}

/* ---- references ---- */

static int site_exists(bc_tx *tx, struct admin_call *c, const char *site_id)
{
	int rc;

	if ((rc = bc_row_site_in_tenant(tx, c->arg[0], site_id)) == 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "workflow.siteId: no such site in this tenant");
	return rc < 0 ? rc : 0;
}

/* The node of this tenant, not retired. */
static int node_usable(bc_tx *tx, struct admin_call *c, const char *node_id, struct bc_node_row *n)
{
	int rc;

	if ((rc = bc_row_node_get(tx, BC_NODE_BY_ID, node_id, n)) < 0)
		return rc;
	if (rc == 0 || strcmp(n->tenant_id, c->arg[0]) != 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "workflow.nodeId: no such node in this tenant");
	if (strcmp(n->state, "retired") == 0)
		return admin_fail(c, BC_ERR_CONFLICT, "workflow.nodeId: node %s is retired", n->id);
	return 0;
}

/* ---- commission ---- */

struct commission {
	const char *site_id, *node_id;
	char mac[BC_MAC_LEN + 1], uuid[BC_UUID_LEN + 1];
	int64_t ttl_s;
};

static int read_commission(struct admin_call *c, struct commission *in)
{
	const json_t *b = c->body;
	const char *mac, *uuid;
	int rc;

	memset(in, 0, sizeof(*in));
	if ((rc = admin_check_fields(c, b, "workflow", COMMISSION_FIELDS)) != 0 ||
	    (rc = admin_get_text(c, b, "siteId", "workflow.siteId", 1, ADMIN_ID_MAX - 1,
	                         &in->site_id)) != 0 ||
	    (rc = admin_get_text(c, b, "mac", "workflow.mac", 1, 32, &mac)) != 0 ||
	    (rc = admin_get_text(c, b, "productUuid", "workflow.productUuid", 0, 64, &uuid)) != 0 ||
	    (rc = admin_get_text(c, b, "nodeId", "workflow.nodeId", 0, ADMIN_ID_MAX - 1,
	                         &in->node_id)) != 0 ||
	    (rc = admin_get_int(c, b, "ttlSeconds", "workflow.ttlSeconds", TTL_MIN_S,
	                        COMMISSION_TTL_MAX_S, COMMISSION_TTL_DEF_S, &in->ttl_s)) != 0)
		return rc;
	if (bc_mac_canon(mac, in->mac) != 0)
		return admin_fail(
		    c, BC_ERR_INVALID,
		    "workflow.mac: expected a MAC address (six hex octets joined by ':' "
		    "or '-')");
	if (uuid != NULL && bc_uuid_canon(uuid, in->uuid) != 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "workflow.productUuid: expected a UUID "
		                  "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
	return 0;
}

int admin_machines_commission(bc_tx *tx, struct admin_call *c)
{
	struct commission in;
	struct bc_node_row n;
	char id[ADMIN_ID_MAX], *text = NULL;
	int64_t now = bc_tx_now_ms(tx);
	json_t *data = NULL, *ev = NULL;
	int rc;

	if ((rc = read_commission(c, &in)) != 0 || (rc = site_exists(tx, c, in.site_id)) != 0)
		return rc;
	if (in.node_id != NULL && (rc = node_usable(tx, c, in.node_id, &n)) != 0)
		return rc;
	if ((rc = bc_new_id("wf", id, sizeof(id))) != 0)
		return rc;
	data = json_pack("{s:{s:s, s:s, s:s?, s:s?, s:I}}", "bootEntry", "siteId", in.site_id,
	                 "mac", in.mac, "productUuid", in.uuid[0] ? in.uuid : NULL, "nodeId",
	                 in.node_id, "notAfter", (json_int_t)(now + in.ttl_s * 1000));
	if (data == NULL || (text = bc_json_dump(data)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = bc_row_workflow_insert(tx, id, c->arg[0], in.node_id, BC_WF_COMMISSION, text,
	                                 now)) != 0)
		goto out;
	ev = json_pack("{s:s, s:s, s:s, s:s, s:s?}", "workflowId", id, "kind", BC_WF_COMMISSION,
	               "siteId", in.site_id, "mac", in.mac, "nodeId", in.node_id);
	if ((rc = admin_record(tx, c, c->arg[0], "workflow.created", id, ev, 1)) != 0)
		goto out;
	rc = answer_workflow(tx, c, id, 201, NULL);
out:
	free(text);
	json_decref(data);
	json_decref(ev);
	return rc;
}

/* ---- deploy: userdata.render ---- */

/* The node must be bindable: its newest inventory names its product UUID, and no
 * other deploy of it is running. */
static int deploy_target(bc_tx *tx, struct admin_call *c, const char *node_id,
                         struct bc_node_row *n)
{
	char uuid[BC_ID_MAX], running[BC_ID_MAX];
	int rc;

	if ((rc = node_usable(tx, c, node_id, n)) != 0)
		return rc;
	/* one running deploy per node, also between replicas: the node's row is the lock */
	if ((rc = bc_row_node_lock(tx, n->id)) != 0)
		return rc;
	/* the provisioned attestor admits role node: a site node would come back as one; a
	 * discovered ramdisk becomes one once enrolled in a pool */
	if (strcmp(n->role, "ramdisk") == 0 && n->pool_id[0] == 0)
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "node %s is a discovered ramdisk in no pool: enroll it first "
		                  "(machines enroll --node %s --pool POOL)",
		                  n->id, n->id);
	if (strcmp(n->role, "node") != 0 && strcmp(n->role, "ramdisk") != 0)
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "node %s is of role %s: a deploy re-keys nodes of role node",
		                  n->id, n->role);
	if ((rc = bc_row_inventory_newest_uuid(tx, node_id, uuid)) < 0)
		return rc;
	if (rc == 0 || uuid[0] == 0)
		return admin_fail(
		    c, BC_ERR_CONFLICT,
		    "node %s has no product UUID in its inventory, so its token could "
		    "not be bound to the machine: join it once with a bcd that reports "
		    "one (/sys/class/dmi/id/product_uuid)",
		    n->id);
	if ((rc = bc_row_workflow_running_for(tx, node_id, BC_WF_DEPLOY, running)) < 0)
		return rc;
	if (rc == 1)
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "node %s already has a running deploy (%s): cancel or complete "
		                  "it first",
		                  n->id, running);
	return 0;
}

int admin_machines_deploy(bc_tx *tx, struct admin_call *c)
{
	const char *node_id;
	struct bc_node_row n;
	char wf[ADMIN_ID_MAX], tok[ADMIN_ID_MAX], *secret = NULL;
	int64_t ttl_s, now = bc_tx_now_ms(tx);
	json_t *ev = NULL, *w = NULL;
	int rc, given = 0;

	if ((rc = admin_check_fields(c, c->body, "workflow", DEPLOY_FIELDS)) != 0 ||
	    (rc = admin_get_text(c, c->body, "nodeId", "workflow.nodeId", 1, ADMIN_ID_MAX - 1,
	                         &node_id)) != 0 ||
	    (rc = admin_get_bool(c, c->body, "userDataTemplate", "workflow.userDataTemplate", 0,
	                         &given)) != 0 ||
	    (rc = admin_get_int(c, c->body, "ttlSeconds", "workflow.ttlSeconds", TTL_MIN_S,
	                        DEPLOY_TTL_MAX_S, DEPLOY_TTL_DEF_S, &ttl_s)) != 0)
		return rc;
	if ((rc = deploy_target(tx, c, node_id, &n)) != 0)
		return rc;
	if ((rc = bc_provision_deploy(tx, c->arg[0], &n, given, ttl_s, now, wf, tok, &secret)) != 0)
		goto out;
	ev = json_pack("{s:s, s:s, s:s, s:s}", "workflowId", wf, "kind", BC_WF_DEPLOY, "nodeId",
	               n.id, "tokenId", tok);
	if ((rc = admin_record(tx, c, c->arg[0], "workflow.created", wf, ev, 1)) != 0 ||
	    (rc = answer_workflow(tx, c, wf, 201, &w)) != 0)
		goto out;
	rc = admin_answer(
	    c, 201, json_pack("{s:o, s:s, s:s}", "workflow", w, "tokenId", tok, "token", secret));
out:
	json_decref(ev);
	if (secret != NULL)
		bc_freezero(secret, strlen(secret));
	return rc;
}

/* ---- inventory ---- */

static json_t *inventory_json(bc_rows *r)
{
	return json_pack("{s:o, s:o}", "takenAt", admin_time(bc_rows_int(r, 0)), "claims",
	                 admin_col_json(r, 1, "{}"));
}

int admin_nodes_inventory(bc_tx *tx, struct admin_call *c)
{
	struct bc_node_row n;
	json_t *arr = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_node_get(tx, BC_NODE_BY_ID, c->arg[1], &n)) < 0)
		return rc;
	if (rc == 0 || strcmp(n.tenant_id, c->arg[0]) != 0)
		return admin_fail(c, BC_ERR_NOT_FOUND, "node not found");
	if ((rc = bc_row_inventory_list(tx, c->arg[1], &r)) != 0 ||
	    (rc = admin_rows_list(r, inventory_json, &arr)) != 0)
		return rc;
	return admin_answer(c, 200, json_pack("{s:s, s:o}", "nodeId", n.id, "inventory", arr));
}
