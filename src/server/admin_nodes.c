/* Nodes (cordon, uncordon, revoke-identity, retire, delete) and the event list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/canon.h"
#include "bc/clock.h"
#include "bc/wire.h"
#include "join/join.h"
#include "rows/bindings.h"
#include "rows/certs.h"
#include "rows/history.h"
#include "rows/nodes.h"
#include "rows/pools.h"
#include "server/admin_internal.h"

#define EVENTS_LIMIT_DEFAULT 100
#define EVENTS_LIMIT_MAX     1000
#define EVENT_TYPE_MAX       64
#define NODES_LIMIT_DEFAULT  100
#define NODES_LIMIT_MAX      500
#define FILTER_MAX           64

/* a node's states (the nodes table's state column) */
static const char *const NODE_STATES[] = {"adopted", "cordoned", "retired", NULL};

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
	bc_rows *r;
	int rc;

	if ((rc = bc_row_nodes_get(tx, c->arg[0], c->arg[1], &r)) == 0)
		rc = admin_rows_one(r, node_json, &node);
	if (rc == BC_ERR_NOT_FOUND)
		return admin_fail(c, rc, "node not found");
	return rc != 0 ? rc : admin_answer(c, 200, node);
}

static int known_state(const char *state)
{
	for (size_t i = 0; NODE_STATES[i] != NULL; i++)
		if (strcmp(state, NODE_STATES[i]) == 0)
			return 1;
	return 0;
}

/* Filters (pool, site, role, state, attestor, hostname, productUuid, serial, mac,
 * expiringWithin)
 * and a page of at most limit rows, each served by an index (rows/nodes.h): in id
 * order, or with expiringWithin by the certificate's expiry then id. ?after= (an id)
 * is the older form of a cursor, in id order only. */
int admin_nodes_list(bc_tx *tx, struct admin_call *c)
{
	const char *expiring, *after, *mac;
	char mac_canon[BC_MAC_LEN + 1];
	struct bc_row_node_filter f = {0};
	struct admin_page pg;
	int64_t within_ms = 0;
	bc_rows *r;
	int rc;

	if ((rc = admin_query_text(c, "pool", FILTER_MAX, &f.pool_id)) != 0 ||
	    (rc = admin_query_text(c, "site", FILTER_MAX, &f.site_id)) != 0 ||
	    (rc = admin_query_text(c, "role", FILTER_MAX, &f.role)) != 0 ||
	    (rc = admin_query_text(c, "state", FILTER_MAX, &f.state)) != 0 ||
	    (rc = admin_query_text(c, "attestor", FILTER_MAX, &f.attestor)) != 0 ||
	    (rc = admin_query_text(c, "hostname", 255, &f.hostname)) != 0 ||
	    (rc = admin_query_text(c, "productUuid", FILTER_MAX, &f.product_uuid)) != 0 ||
	    (rc = admin_query_text(c, "serial", FILTER_MAX, &f.serial)) != 0 ||
	    (rc = admin_query_text(c, "mac", FILTER_MAX, &mac)) != 0 ||
	    (rc = admin_query_text(c, "after", FILTER_MAX, &after)) != 0 ||
	    (rc = admin_query_text(c, "expiringWithin", 16, &expiring)) != 0)
		return rc;
	/* MACs are kept canonical (rows/nodes.c): any case, ':' or '-' finds them */
	if (mac != NULL && bc_mac_canon(mac, mac_canon) != 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "mac: expected a MAC such as 52:54:00:12:34:56");
	f.mac = mac != NULL ? mac_canon : NULL;
	if (f.state != NULL && !known_state(f.state))
		return admin_fail(c, BC_ERR_INVALID,
		                  "state: expected adopted, cordoned or retired");
	if (expiring != NULL && (bc_duration_parse_ms(expiring, &within_ms) != 0 || within_ms < 0 ||
	                         within_ms > 366LL * 86400 * 1000))
		return admin_fail(c, BC_ERR_INVALID,
		                  "expiringWithin: expected a duration such as 2h or 7d");
	if ((rc = admin_query_page(c, &pg, expiring ? "nodes_expiring" : "nodes",
	                           expiring ? BC_NODE_COL_CERT_NOT_AFTER : -1, BC_NODE_COL_ID,
	                           NODES_LIMIT_DEFAULT, NODES_LIMIT_MAX)) != 0)
		return rc;
	if (after != NULL && expiring != NULL)
		return admin_fail(c, BC_ERR_INVALID,
		                  "after: not with expiringWithin (ordered by expiry); use cursor");
	if (after != NULL && (rc = admin_page_after(c, &pg, after)) != 0)
		return rc;
	if (expiring != NULL)
		f.expiring_before = bc_tx_now_ms(tx) + within_ms;
	if ((rc = bc_row_nodes_list(tx, c->arg[0], &f, &pg.rows, &r)) != 0)
		return rc;
	return admin_page_answer(c, &pg, r, node_json, "nodes");
}

/* The rows (value, count) of r into obj (a NULL value under none); frees r. */
static int count_rows(bc_rows *r, json_t *obj, const char *none, json_int_t *total)
{
	int rc;

	while ((rc = bc_rows_next(r)) == 1) {
		json_int_t n = (json_int_t)bc_rows_int(r, 1);
		if (total != NULL)
			*total += n;
		if (json_object_set_new(obj, bc_rows_is_null(r, 0) ? none : bc_rows_text(r, 0),
		                        json_integer(n)) != 0) {
			rc = BC_ERR_NOMEM;
			break;
		}
	}
	bc_rows_free(r);
	return rc < 0 ? rc : 0;
}

#define DAY_MS (86400LL * 1000)

/* How many nodes the tenant has, in all and by state, role, attestor and pool, and
 * how many certificates expire soon: what a console shows without walking pages.
 * Every count is an index scan of the tenant's nodes. */
int admin_nodes_counts(bc_tx *tx, struct admin_call *c)
{
	static const struct {
		const char *key;
		enum bc_node_count_by by;
	} groups[] = {
	    {"byRole", BC_NODE_COUNT_ROLE},
	    {"byAttestor", BC_NODE_COUNT_ATTESTOR},
	    {"byPool", BC_NODE_COUNT_POOL},
	};
	json_t *answer = json_object(), *states = json_object();
	json_int_t total = 0;
	int64_t now = bc_tx_now_ms(tx), expired = 0, day = 0, week = 0, none = 0;
	bc_rows *r;
	int rc;

	if (answer == NULL || states == NULL) {
		rc = BC_ERR_NOMEM;
		goto fail;
	}
	if ((rc = bc_row_nodes_count(tx, c->arg[0], &r)) != 0 ||
	    (rc = count_rows(r, states, "none", &total)) != 0)
		goto fail;
	json_object_set_new(answer, "total", json_integer(total));
	json_object_set_new(answer, "byState", states);
	states = NULL;
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		json_t *obj = json_object();
		if (obj == NULL || json_object_set_new(answer, groups[i].key, obj) != 0) {
			rc = BC_ERR_NOMEM;
			goto fail;
		}
		if ((rc = bc_row_nodes_count_by(tx, c->arg[0], groups[i].by, &r)) != 0 ||
		    (rc = count_rows(r, obj, "none", NULL)) != 0)
			goto fail;
	}
	if ((rc = bc_row_nodes_count_expiring(tx, c->arg[0], now, &expired)) != 0 ||
	    (rc = bc_row_nodes_count_expiring(tx, c->arg[0], now + DAY_MS, &day)) != 0 ||
	    (rc = bc_row_nodes_count_expiring(tx, c->arg[0], now + 7 * DAY_MS, &week)) != 0 ||
	    (rc = bc_row_nodes_count_uncertified(tx, c->arg[0], &none)) != 0)
		goto fail;
	json_object_set_new(answer, "certificates",
	                    json_pack("{s:I, s:I, s:I, s:I}", "expired", (json_int_t)expired,
	                              "expiringWithin1d", (json_int_t)day, "expiringWithin7d",
	                              (json_int_t)week, "none", (json_int_t)none));
	return admin_answer(c, 200, answer);
fail:
	json_decref(states);
	json_decref(answer);
	return rc;
}

int admin_nodes_get(bc_tx *tx, struct admin_call *c)
{
	return answer_node(tx, c);
}

#define NODE_CERTS_MAX 100

static json_t *node_cert_json(bc_rows *r)
{
	return json_pack("{s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "serial",
	                 bc_rows_text(r, BC_CERT_COL_SERIAL), "generation",
	                 (json_int_t)bc_rows_int(r, BC_CERT_COL_GENERATION), "notBefore",
	                 admin_col_time(r, BC_CERT_COL_NOT_BEFORE), "notAfter",
	                 admin_col_time(r, BC_CERT_COL_NOT_AFTER), "revokedAt",
	                 admin_col_time(r, BC_CERT_COL_REVOKED_AT), "usedAt",
	                 admin_col_time(r, BC_CERT_COL_USED_AT), "supersededAt",
	                 admin_col_time(r, BC_CERT_COL_SUPERSEDED_AT), "predecessor",
	                 admin_col_text(r, BC_CERT_COL_PREDECESSOR), "role",
	                 admin_col_text(r, BC_CERT_COL_ROLE));
}

static json_t *binding_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:o}", "kind", bc_rows_text(r, 0), "key", bc_rows_text(r, 1),
	                 "createdAt", admin_time(bc_rows_int(r, 2)));
}

/* A node's certificates, the latest to expire first (at most NODE_CERTS_MAX), with
 * the serial of its current one (null when it has none), and the hardware keys bound
 * to it (at most NODE_CERTS_MAX): a node's page. */
int admin_nodes_certificates(bc_tx *tx, struct admin_call *c)
{
	json_t *list = NULL, *bindings = NULL, *current;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_nodes_get(tx, c->arg[0], c->arg[1], &r)) != 0)
		return rc;
	if ((rc = bc_rows_next(r)) != 1) {
		bc_rows_free(r);
		return rc < 0 ? rc : admin_fail(c, BC_ERR_NOT_FOUND, "node not found");
	}
	current = bc_rows_is_null(r, BC_NODE_COL_CERT_SERIAL)
	              ? json_null()
	              : json_string(bc_rows_text(r, BC_NODE_COL_CERT_SERIAL));
	bc_rows_free(r);
	if ((rc = bc_row_certs_of_node(tx, c->arg[1], NODE_CERTS_MAX, &r)) != 0 ||
	    (rc = admin_rows_list(r, node_cert_json, &list)) != 0 ||
	    (rc = bc_row_bindings_of_node(tx, c->arg[1], NODE_CERTS_MAX, &r)) != 0 ||
	    (rc = admin_rows_list(r, binding_json, &bindings)) != 0) {
		json_decref(current);
		json_decref(list);
		return rc;
	}
	return admin_answer(c, 200,
	                    json_pack("{s:o, s:o, s:o, s:I}", "certificates", list, "currentSerial",
	                              current, "bindings", bindings, "max",
	                              (json_int_t)NODE_CERTS_MAX));
}

/* ---- state changes ---- */

/* The node's state, locked for the change. */
static int lock_node(bc_tx *tx, struct admin_call *c, char state[16])
{
	int rc;

	if ((rc = bc_row_node_lock_state(tx, c->arg[0], c->arg[1], state)) == 0)
		return admin_fail(c, BC_ERR_NOT_FOUND, "node not found");
	return rc < 0 ? rc : 0;
}

static int revoke_certs(bc_tx *tx, const char *node_id, int64_t now, int64_t *revoked)
{
	return bc_row_cert_revoke_all(tx, node_id, now, revoked);
}

static int set_state(bc_tx *tx, const char *node_id, const char *state, int64_t now)
{
	return bc_row_node_set_state(tx, node_id, state, now);
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
	if ((rc = bc_row_node_revoke_identity(tx, c->arg[1], now)) != 0)
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
	if ((rc = bc_row_node_delete(tx, c->arg[1])) != 0)
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

typedef int (*history_fn)(bc_tx *tx, const char *tenant_id, const struct bc_row_history_filter *f,
                          const struct bc_row_page *pg, bc_rows **out);

/* Events or audit rows of the tenant, newest first, a page at a time: since and until
 * (a duration back or ms), subject (node), type or action. */
static int history_list(bc_tx *tx, struct admin_call *c, history_fn list, const char *kind,
                        admin_row_fn fn, const char *key)
{
	struct bc_row_history_filter f = {0};
	struct admin_page pg;
	int64_t now = bc_tx_now_ms(tx);
	bc_rows *r;
	int rc;

	if ((rc = admin_query_page(c, &pg, key, 5, 0, EVENTS_LIMIT_DEFAULT, EVENTS_LIMIT_MAX)) !=
	        0 ||
	    (rc = admin_query_text(c, kind, EVENT_TYPE_MAX, &f.type)) != 0 ||
	    (rc = admin_query_text(c, "node", FILTER_MAX, &f.subject)) != 0 ||
	    (rc = admin_query_since(c, "since", now, &f.since, &f.has_since)) != 0 ||
	    (rc = admin_query_since(c, "until", now, &f.until, &f.has_until)) != 0)
		return rc;
	if ((rc = list(tx, c->arg[0], &f, &pg.rows, &r)) != 0)
		return rc;
	return admin_page_answer(c, &pg, r, fn, key);
}

int admin_events_list(bc_tx *tx, struct admin_call *c)
{
	return history_list(tx, c, bc_row_events_list, "type", event_json, "events");
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
	return history_list(tx, c, bc_row_audit_list, "action", audit_json, "audit");
}

/* ---- machines enroll: a discovered machine becomes a machine of a pool ---- */

static const char *const ENROLL_FIELDS[] = {"nodeId", "poolId", NULL};

/* The pool of this tenant, and its policy admits the deploy's provisioned join (the
 * rule is JoinService's: bc_join_pool_admits). */
static int enroll_pool(bc_tx *tx, struct admin_call *c, const char *pool_id)
{
	char tenant[64], *policy = NULL;
	int rc;

	if ((rc = bc_row_pool_policy(tx, pool_id, tenant, &policy)) < 0)
		return rc;
	if (rc == 0 || strcmp(tenant, c->arg[0]) != 0)
		rc = admin_fail(c, BC_ERR_INVALID, "enroll.poolId: no such pool in this tenant");
	else if (!bc_join_pool_admits(policy, BC_WIRE_ATTESTOR_PROVISIONED))
		rc = admin_fail(c, BC_ERR_CONFLICT,
		                "pool %s does not admit provisioned joins (joinAttestors), so the "
		                "deploy's join would be refused: add provisioned to its policy, or "
		                "enroll in another pool",
		                pool_id);
	else
		rc = 0;
	free(policy);
	return rc;
}

/* The node: a ramdisk node of this tenant, not retired, in no pool yet. Locked. */
static int enroll_node(bc_tx *tx, struct admin_call *c, const char *node_id)
{
	struct bc_node_row n;
	int rc;

	if ((rc = bc_row_node_get(tx, BC_NODE_BY_ID, node_id, &n)) < 0)
		return rc;
	if (rc == 0 || strcmp(n.tenant_id, c->arg[0]) != 0)
		return admin_fail(c, BC_ERR_NOT_FOUND, "node not found");
	if ((rc = bc_row_node_lock(tx, n.id)) != 0)
		return rc;
	if (strcmp(n.state, "retired") == 0)
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "node %s is retired: delete it (nodes delete) and boot the "
		                  "machine through discovery again to enroll it",
		                  n.id);
	if (strcmp(n.role, "ramdisk") != 0)
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "node %s is of role %s, not a discovered ramdisk: only a ramdisk "
		                  "node is enrolled; deploy it as it is (machines deploy)",
		                  n.id, n.role);
	if (n.pool_id[0])
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "node %s is already enrolled in pool %s: deploy it (machines "
		                  "deploy), or delete it and boot it again to start over",
		                  n.id, n.pool_id);
	return 0;
}

/* Records the pool on the ramdisk node, which keeps its id, inventory and history; its
 * deploy's provisioned join re-keys it in place as a node of that pool. */
int admin_machines_enroll(bc_tx *tx, struct admin_call *c)
{
	const char *node_id, *pool_id;
	json_t *ev = NULL;
	int rc;

	if ((rc = admin_check_fields(c, c->body, "enroll", ENROLL_FIELDS)) != 0 ||
	    (rc = admin_get_text(c, c->body, "nodeId", "enroll.nodeId", 1, ADMIN_ID_MAX - 1,
	                         &node_id)) != 0 ||
	    (rc = admin_get_text(c, c->body, "poolId", "enroll.poolId", 1, ADMIN_ID_MAX - 1,
	                         &pool_id)) != 0)
		return rc;
	if ((rc = enroll_node(tx, c, node_id)) != 0 || (rc = enroll_pool(tx, c, pool_id)) != 0 ||
	    (rc = bc_row_node_enroll(tx, node_id, pool_id, bc_tx_now_ms(tx))) != 0)
		return rc;
	ev = json_pack("{s:s, s:s}", "nodeId", node_id, "poolId", pool_id);
	if ((rc = admin_record(tx, c, c->arg[0], "node.enrolled", node_id, ev, 1)) != 0)
		goto out;
	snprintf(c->arg[1], sizeof(c->arg[1]), "%s", node_id);
	rc = answer_node(tx, c);
out:
	json_decref(ev);
	return rc;
}
