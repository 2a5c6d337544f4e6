/* nodes for the admin API (nodes.h). */
#include "rows/nodes.h"

#include <stdio.h>
#include <stdlib.h>

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

int bc_row_nodes_list(bc_tx *tx, const char *tenant_id, const struct bc_row_node_filter *f,
                      bc_rows **out)
{
	struct bc_row_where w;

	bc_row_where_init(&w, NODE_SELECT "WHERE n.tenant_id = $1", BC_TEXT(tenant_id));
	if (f->pool_id != NULL)
		bc_row_where_add(&w, "n.pool_id =", BC_TEXT(f->pool_id));
	if (f->state != NULL)
		bc_row_where_add(&w, "n.state =", BC_TEXT(f->state));
	if (f->attestor != NULL)
		bc_row_where_add(&w, "n.attestor =", BC_TEXT(f->attestor));
	if (f->hostname != NULL)
		bc_row_where_add(&w, "n.hostname =", BC_TEXT(f->hostname));
	if (f->expiring_before != 0)
		bc_row_where_add(&w, CURRENT_CERT("not_after") " <=", BC_INT(f->expiring_before));
	if (f->after != NULL)
		bc_row_where_add(&w, "n.id >", BC_TEXT(f->after));
	bc_row_where_tail(&w, " ORDER BY n.id LIMIT", BC_INT(f->limit));
	return bc_row_where_query(tx, &w, out);
}

int bc_row_nodes_get(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	return bc_tx_query(tx, NODE_SELECT "WHERE n.tenant_id = $1 AND n.id = $2", p, 2, out);
}

int bc_row_node_lock_state(bc_tx *tx, const char *tenant_id, const char *id, char state[16])
{
	char *s = NULL;
	int rc;

	state[0] = '\0';
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};
	rc = bc_tx_query_text(
	    tx, "SELECT state FROM nodes WHERE tenant_id = $1 AND id = $2 FOR UPDATE", p, 2, &s);
	if (rc == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0)
		return rc;
	snprintf(state, 16, "%s", s);
	free(s);
	return 1;
}

int bc_row_node_set_state(bc_tx *tx, const char *id, const char *state, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(state), BC_INT(now_ms), BC_TEXT(id)};

	return bc_tx_exec(tx, "UPDATE nodes SET state = $1, updated_at = $2 WHERE id = $3", p, 3,
	                  NULL);
}

int bc_row_node_revoke_identity(bc_tx *tx, const char *id, int64_t now_ms)
{
	bc_param p[] = {BC_INT(now_ms), BC_TEXT(id)};

	return bc_tx_exec(tx,
	                  "UPDATE nodes SET generation = generation + 1, identity_revoked_at = $1, "
	                  "updated_at = $1 WHERE id = $2",
	                  p, 2, NULL);
}

/* The node's own rows go last: the others name it. */
static const char *const NODE_ROWS_DELETE[] = {
    "DELETE FROM node_certs WHERE node_id = $1",
    "DELETE FROM node_bindings WHERE node_id = $1",
    "DELETE FROM inventory WHERE node_id = $1",
    "DELETE FROM nodes WHERE id = $1",
};

int bc_row_node_delete(bc_tx *tx, const char *id)
{
	bc_param p[] = {BC_TEXT(id)};
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(NODE_ROWS_DELETE) / sizeof(NODE_ROWS_DELETE[0]);
	     i++)
		rc = bc_tx_exec(tx, NODE_ROWS_DELETE[i], p, 1, NULL);
	return rc;
}
