/* Nodes (cordon, uncordon, revoke-identity, retire, delete) and the event list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "join/rows.h"
#include "server/admin_internal.h"

#define EVENTS_LIMIT_DEFAULT 100
#define EVENTS_LIMIT_MAX     1000
#define EVENT_TYPE_MAX       64
#define NODES_LIMIT_DEFAULT  100
#define NODES_LIMIT_MAX      500
#define FILTER_MAX           64

/* The current certificate is the newest unrevoked one; both subqueries pick the same
 * row (created_at then serial break ties). */
#define CURRENT_CERT(col)                                                                          \
	"(SELECT c." col " FROM node_certs c WHERE c.node_id = n.id AND c.revoked_at IS NULL "     \
	"ORDER BY c.created_at DESC, c.serial DESC LIMIT 1)"
/* What the node's newest join claimed (inventory, newest last). */
#define NEWEST_INVENTORY(col)                                                                      \
	"(SELECT i." col                                                                           \
	" FROM inventory i WHERE i.node_id = n.id ORDER BY i.taken_at DESC LIMIT 1)"
/* clang-format off */
#define NODE_SELECT                                                                           \
	"SELECT n.id, n.tenant_id, n.pool_id, n.site_id, n.role, n.state, n.generation, "     \
	"n.product_uuid, n.serial, n.macs, n.hostname, n.arch, n.agent_version, n.attestor, " \
	"n.node_key, n.joined_at, n.updated_at, n.identity_revoked_at, "                      \
	CURRENT_CERT("serial") ", " CURRENT_CERT("not_after") ", "                            \
	NEWEST_INVENTORY("taken_at") ", " NEWEST_INVENTORY("data") ", "                       \
	"n.allowed_kinds, (SELECT p.name FROM pools p WHERE p.id = n.pool_id), "              \
	"(SELECT s.name FROM sites s WHERE s.id = n.site_id) FROM nodes n "
/* clang-format on */
#define NODE_ONE NODE_SELECT "WHERE n.tenant_id = $1 AND n.id = $2"

#define EVENT_SELECT "SELECT id, tenant_id, type, subject, data, created_at FROM events "

static json_t *cert_json(bc_rows *r)
{
	if (bc_rows_is_null(r, 18))
		return json_null();
	return json_pack("{s:s, s:o}", "serial", bc_rows_text(r, 18), "notAfter",
	                 admin_time(bc_rows_int(r, 19)));
}

static json_t *inventory_json(bc_rows *r)
{
	if (bc_rows_is_null(r, 20))
		return json_null();
	return json_pack("{s:o, s:o}", "takenAt", admin_time(bc_rows_int(r, 20)), "claims",
	                 admin_col_json(r, 21, "{}"));
}

static json_t *node_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:o, s:o, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:s, "
	                 "s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
	                 "id", bc_rows_text(r, 0), "tenantId", bc_rows_text(r, 1), "poolId",
	                 admin_col_text(r, 2), "siteId", admin_col_text(r, 3), "role",
	                 bc_rows_text(r, 4), "state", bc_rows_text(r, 5), "generation",
	                 (json_int_t)bc_rows_int(r, 6), "productUuid", admin_col_text(r, 7),
	                 "serial", admin_col_text(r, 8), "macs", admin_col_json(r, 9, "[]"),
	                 "hostname", admin_col_text(r, 10), "arch", admin_col_text(r, 11),
	                 "agentVersion", admin_col_text(r, 12), "attestor", bc_rows_text(r, 13),
	                 "nodeKey", bc_rows_text(r, 14), "joinedAt", admin_time(bc_rows_int(r, 15)),
	                 "updatedAt", admin_time(bc_rows_int(r, 16)), "identityRevokedAt",
	                 admin_col_time(r, 17), "certificate", cert_json(r), "inventory",
	                 inventory_json(r), "allowedKinds", admin_col_json(r, 22, "[]"), "poolName",
	                 admin_col_text(r, 23), "siteName", admin_col_text(r, 24));
}

static int answer_node(bc_tx *tx, struct admin_call *c)
{
	json_t *node = NULL;
	int rc;

	bc_param p[] = {BC_TEXT(c->arg[0]), BC_TEXT(c->arg[1])};
	rc = admin_query_one(tx, NODE_ONE, p, 2, node_json, &node);
	if (rc == BC_ERR_NOT_FOUND)
		return admin_fail(c, rc, "node not found");
	return rc != 0 ? rc : admin_answer(c, 200, node);
}

/* Filters (pool, state, attestor, hostname, expiringWithin seconds) and a page of
 * at most limit rows in id order after the cursor `after`, all in SQL; nextCursor is
 * the last id when another page may follow. */
int admin_nodes_list(bc_tx *tx, struct admin_call *c)
{
	const char *pool, *state, *attestor, *hostname, *after, *expiring;
	struct admin_where w;
	json_t *arr = NULL, *last;
	int64_t limit, within_ms = 0;
	int rc;

	if ((rc = admin_query_text(c, "pool", FILTER_MAX, &pool)) != 0 ||
	    (rc = admin_query_text(c, "state", FILTER_MAX, &state)) != 0 ||
	    (rc = admin_query_text(c, "attestor", FILTER_MAX, &attestor)) != 0 ||
	    (rc = admin_query_text(c, "hostname", 255, &hostname)) != 0 ||
	    (rc = admin_query_text(c, "after", FILTER_MAX, &after)) != 0 ||
	    (rc = admin_query_text(c, "expiringWithin", 16, &expiring)) != 0 ||
	    (rc = admin_query_limit(c, NODES_LIMIT_DEFAULT, NODES_LIMIT_MAX, &limit)) != 0)
		return rc;
	if (expiring != NULL && (bc_duration_parse_ms(expiring, &within_ms) != 0 || within_ms < 0 ||
	                         within_ms > 366LL * 86400 * 1000))
		return admin_fail(c, BC_ERR_INVALID,
		                  "expiringWithin: expected a duration such as 2h or 7d");
	admin_where_init(&w, NODE_SELECT "WHERE n.tenant_id = $1", BC_TEXT(c->arg[0]));
	if (pool != NULL)
		admin_where_add(&w, "n.pool_id =", BC_TEXT(pool));
	if (state != NULL)
		admin_where_add(&w, "n.state =", BC_TEXT(state));
	if (attestor != NULL)
		admin_where_add(&w, "n.attestor =", BC_TEXT(attestor));
	if (hostname != NULL)
		admin_where_add(&w, "n.hostname =", BC_TEXT(hostname));
	if (expiring != NULL)
		admin_where_add(
		    &w, CURRENT_CERT("not_after") " <=", BC_INT(bc_tx_now_ms(tx) + within_ms));
	if (after != NULL)
		admin_where_add(&w, "n.id >", BC_TEXT(after));
	admin_where_tail(&w, " ORDER BY n.id LIMIT", BC_INT(limit));
	if ((rc = admin_where_list(tx, &w, node_json, &arr)) != 0)
		return rc;
	last = (int64_t)json_array_size(arr) == limit
	           ? json_array_get(arr, json_array_size(arr) - 1)
	           : NULL;
	return admin_answer(c, 200,
	                    json_pack("{s:o, s:O}", "nodes", arr, "nextCursor",
	                              last ? json_object_get(last, "id") : json_null()));
}

int admin_nodes_get(bc_tx *tx, struct admin_call *c)
{
	return answer_node(tx, c);
}

/* ---- state changes ---- */

/* The node's state, locked for the change. */
static int lock_node(bc_tx *tx, struct admin_call *c, char state[16])
{
	char *s = NULL;
	int rc;

	state[0] = '\0';
	bc_param p[] = {BC_TEXT(c->arg[0]), BC_TEXT(c->arg[1])};
	rc = bc_tx_query_text(
	    tx, "SELECT state FROM nodes WHERE tenant_id = $1 AND id = $2 FOR UPDATE", p, 2, &s);
	if (rc == BC_ERR_NOT_FOUND)
		return admin_fail(c, rc, "node not found");
	if (rc != 0)
		return rc;
	snprintf(state, 16, "%s", s);
	free(s);
	return 0;
}

static int revoke_certs(bc_tx *tx, const char *node_id, int64_t now, int64_t *revoked)
{
	return bc_row_cert_revoke_all(tx, node_id, now, revoked);
}

static int set_state(bc_tx *tx, const char *node_id, const char *state, int64_t now)
{
	bc_param p[] = {BC_TEXT(state), BC_INT(now), BC_TEXT(node_id)};
	return bc_tx_exec(tx, "UPDATE nodes SET state = $1, updated_at = $2 WHERE id = $3", p, 3,
	                  NULL);
}

/* One operation: from the locked state, apply it. *changed 0 means nothing to record
 * (already in the state asked for); data receives the event's details. */
typedef int (*node_apply_fn)(bc_tx *tx, struct admin_call *c, const char *state, int64_t now,
                             int *changed, json_t *data);

static int apply_cordon(bc_tx *tx, struct admin_call *c, const char *state, int64_t now,
                        int *changed, json_t *data)
{
	if (strcmp(state, "retired") == 0)
		return admin_fail(c, BC_ERR_CONFLICT, "node is retired");
	if (strcmp(state, "cordoned") == 0)
		return 0;
	*changed = 1;
	return set_state(tx, c->arg[1], "cordoned", now);
}

static int apply_uncordon(bc_tx *tx, struct admin_call *c, const char *state, int64_t now,
                          int *changed, json_t *data)
{
	if (strcmp(state, "retired") == 0)
		return admin_fail(c, BC_ERR_CONFLICT, "node is retired");
	if (strcmp(state, "cordoned") != 0)
		return 0;
	*changed = 1;
	return set_state(tx, c->arg[1], "adopted", now);
}

static int apply_revoke_identity(bc_tx *tx, struct admin_call *c, const char *state, int64_t now,
                                 int *changed, json_t *data)
{
	int64_t revoked = 0;
	int rc;

	if ((rc = revoke_certs(tx, c->arg[1], now, &revoked)) != 0)
		return rc;
	bc_param p[] = {BC_INT(now), BC_TEXT(c->arg[1])};
	if ((rc = bc_tx_exec(
	         tx,
	         "UPDATE nodes SET generation = generation + 1, identity_revoked_at = $1, "
	         "updated_at = $1 WHERE id = $2",
	         p, 2, NULL)) != 0)
		return rc;
	*changed = 1;
	return json_object_set_new(data, "revokedCertificates", json_integer(revoked))
	           ? BC_ERR_NOMEM
	           : 0;
}

static int apply_retire(bc_tx *tx, struct admin_call *c, const char *state, int64_t now,
                        int *changed, json_t *data)
{
	int64_t revoked = 0;
	int rc;

	if ((rc = revoke_certs(tx, c->arg[1], now, &revoked)) != 0)
		return rc;
	if (strcmp(state, "retired") == 0 && revoked == 0)
		return 0;
	if ((rc = set_state(tx, c->arg[1], "retired", now)) != 0)
		return rc;
	*changed = 1;
	return json_object_set_new(data, "revokedCertificates", json_integer(revoked))
	           ? BC_ERR_NOMEM
	           : 0;
}

struct node_op {
	const char *event;
	node_apply_fn apply;
};

enum { OP_CORDON, OP_UNCORDON, OP_REVOKE_IDENTITY, OP_RETIRE };

static const struct node_op NODE_OPS[] = {
    [OP_CORDON] = {"node.cordoned", apply_cordon},
    [OP_UNCORDON] = {"node.uncordoned", apply_uncordon},
    [OP_REVOKE_IDENTITY] = {"node.identity-revoked", apply_revoke_identity},
    [OP_RETIRE] = {"node.retired", apply_retire},
};

static int node_operate(bc_tx *tx, struct admin_call *c, const struct node_op *op)
{
	char state[16];
	json_t *data = NULL;
	int changed = 0, rc;

	if ((rc = lock_node(tx, c, state)) != 0)
		return rc;
	if ((data = json_pack("{s:s, s:s}", "nodeId", c->arg[1], "from", state)) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = op->apply(tx, c, state, bc_tx_now_ms(tx), &changed, data)) != 0)
		goto out;
	if (changed && (rc = admin_record(tx, c, c->arg[0], op->event, c->arg[1], data, 1)) != 0)
		goto out;
	rc = answer_node(tx, c);
out:
	json_decref(data);
	return rc;
}

int admin_nodes_cordon(bc_tx *tx, struct admin_call *c)
{
	return node_operate(tx, c, &NODE_OPS[OP_CORDON]);
}

int admin_nodes_uncordon(bc_tx *tx, struct admin_call *c)
{
	return node_operate(tx, c, &NODE_OPS[OP_UNCORDON]);
}

int admin_nodes_revoke_identity(bc_tx *tx, struct admin_call *c)
{
	return node_operate(tx, c, &NODE_OPS[OP_REVOKE_IDENTITY]);
}

int admin_nodes_retire(bc_tx *tx, struct admin_call *c)
{
	return node_operate(tx, c, &NODE_OPS[OP_RETIRE]);
}

/* ---- deletion ---- */

static const char *const NODE_ROWS_DELETE[] = {
    "DELETE FROM node_certs WHERE node_id = $1",
    "DELETE FROM node_bindings WHERE node_id = $1",
    "DELETE FROM inventory WHERE node_id = $1",
    "DELETE FROM nodes WHERE id = $1",
};

/* Only a cordoned or retired node. The event and audit row are written first, with
 * what the node held; then its certificates (revoked), bindings and hardware key go
 * with its rows. */
int admin_nodes_delete(bc_tx *tx, struct admin_call *c)
{
	char state[16];
	int64_t revoked = 0, now = bc_tx_now_ms(tx);
	json_t *data = NULL;
	int rc;

	if ((rc = lock_node(tx, c, state)) != 0)
		return rc;
	if (strcmp(state, "cordoned") != 0 && strcmp(state, "retired") != 0)
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "node is %s: only a cordoned or retired node can be deleted",
		                  state);
	if ((rc = revoke_certs(tx, c->arg[1], now, &revoked)) != 0)
		return rc;
	data = json_pack("{s:s, s:s, s:I}", "nodeId", c->arg[1], "from", state,
	                 "revokedCertificates", (json_int_t)revoked);
	if ((rc = admin_record(tx, c, c->arg[0], "node.deleted", c->arg[1], data, 1)) != 0)
		goto out;
	bc_param p[] = {BC_TEXT(c->arg[1])};
	for (size_t i = 0; i < sizeof(NODE_ROWS_DELETE) / sizeof(NODE_ROWS_DELETE[0]); i++)
		if ((rc = bc_tx_exec(tx, NODE_ROWS_DELETE[i], p, 1, NULL)) != 0)
			goto out;
	rc = admin_answer(c, 200, json_pack("{s:s}", "deleted", c->arg[1]));
out:
	json_decref(data);
	return rc;
}

/* ---- events ---- */

static json_t *event_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "id", bc_rows_text(r, 0), "tenantId",
	                 bc_rows_text(r, 1), "type", bc_rows_text(r, 2), "subject",
	                 admin_col_text(r, 3), "data", admin_col_json(r, 4, "{}"), "createdAt",
	                 admin_time(bc_rows_int(r, 5)));
}

/* Events or audit rows of the tenant, newest first: since (a duration back or ms),
 * subject (node), type or action, limit. */
static int history_list(bc_tx *tx, struct admin_call *c, const char *select, const char *kind,
                        const char *what, admin_row_fn fn, json_t **out)
{
	const char *type, *node;
	struct admin_where w;
	int64_t limit, since;
	int present, rc;

	*out = NULL;
	if ((rc = admin_query_limit(c, EVENTS_LIMIT_DEFAULT, EVENTS_LIMIT_MAX, &limit)) != 0 ||
	    (rc = admin_query_text(c, kind, EVENT_TYPE_MAX, &type)) != 0 ||
	    (rc = admin_query_text(c, "node", FILTER_MAX, &node)) != 0 ||
	    (rc = admin_query_since(c, bc_tx_now_ms(tx), &since, &present)) != 0)
		return rc;
	admin_where_init(&w, select, BC_TEXT(c->arg[0]));
	if (type != NULL)
		admin_where_add(&w, what, BC_TEXT(type));
	if (node != NULL)
		admin_where_add(&w, "subject =", BC_TEXT(node));
	if (present)
		admin_where_add(&w, "created_at >=", BC_INT(since));
	admin_where_tail(&w, " ORDER BY created_at DESC, id DESC LIMIT", BC_INT(limit));
	return admin_where_list(tx, &w, fn, out);
}

int admin_events_list(bc_tx *tx, struct admin_call *c)
{
	json_t *arr = NULL;
	int rc;

	if ((rc = history_list(tx, c, EVENT_SELECT "WHERE tenant_id = $1", "type",
	                       "type =", event_json, &arr)) != 0)
		return rc;
	return admin_answer(c, 200, json_pack("{s:o}", "events", arr));
}

static json_t *audit_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "id", bc_rows_text(r, 0),
	                 "tenantId", bc_rows_text(r, 1), "actor", bc_rows_text(r, 6), "action",
	                 bc_rows_text(r, 2), "subject", admin_col_text(r, 3), "data",
	                 admin_col_json(r, 4, "{}"), "createdAt", admin_time(bc_rows_int(r, 5)));
}

int admin_audit_list(bc_tx *tx, struct admin_call *c)
{
	json_t *arr = NULL;
	int rc;

	if ((rc = history_list(tx, c,
	                       "SELECT id, tenant_id, action, subject, data, created_at, actor "
	                       "FROM audit WHERE tenant_id = $1",
	                       "action", "action =", audit_json, &arr)) != 0)
		return rc;
	return admin_answer(c, 200, json_pack("{s:o}", "audit", arr));
}
