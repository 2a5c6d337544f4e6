/* nodes as the admin API shows and changes them (what JoinService reads and writes
 * of a node: join/rows.h). See rows/query.h. */
#ifndef BC_ROWS_NODES_H
#define BC_ROWS_NODES_H

#include "rows/query.h"

/* The columns of a node's view, in this order. The current certificate is the
 * newest unrevoked one; inventory is the newest record. */
enum bc_row_node_col {
	BC_NODE_COL_ID,
	BC_NODE_COL_TENANT_ID,
	BC_NODE_COL_POOL_ID,
	BC_NODE_COL_SITE_ID,
	BC_NODE_COL_ROLE,
	BC_NODE_COL_STATE,
	BC_NODE_COL_GENERATION,
	BC_NODE_COL_PRODUCT_UUID,
	BC_NODE_COL_SERIAL,
	BC_NODE_COL_MACS, /* a JSON array as text */
	BC_NODE_COL_HOSTNAME,
	BC_NODE_COL_ARCH,
	BC_NODE_COL_AGENT_VERSION,
	BC_NODE_COL_ATTESTOR,
	BC_NODE_COL_NODE_KEY,
	BC_NODE_COL_JOINED_AT,
	BC_NODE_COL_UPDATED_AT,
	BC_NODE_COL_IDENTITY_REVOKED_AT,
	BC_NODE_COL_CERT_SERIAL, /* NULL: no current certificate */
	BC_NODE_COL_CERT_NOT_AFTER,
	BC_NODE_COL_INVENTORY_AT,   /* NULL: no inventory */
	BC_NODE_COL_INVENTORY_DATA, /* a JSON object as text */
	BC_NODE_COL_ALLOWED_KINDS,  /* a JSON array as text */
	BC_NODE_COL_POOL_NAME,
	BC_NODE_COL_SITE_NAME,
};

/* The filters of a list; NULL (expiring_before: 0) for none. */
struct bc_row_node_filter {
	const char *pool_id;
	const char *state;
	const char *attestor;
	const char *hostname;
	int64_t expiring_before; /* the current certificate ends at or before this (ms) */
	const char *after;       /* ids greater than this */
	int64_t limit;
};

/* The nodes of tenant_id that pass f, in id order, at most f->limit. */
BC_WUR int bc_row_nodes_list(bc_tx *tx, const char *tenant_id, const struct bc_row_node_filter *f,
                             bc_rows **out);

/* tenant_id's node id. */
BC_WUR int bc_row_nodes_get(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

/* tenant_id's node id, locked until the transaction ends, its state into state: 1,
 * or 0 when there is none. */
BC_WUR int bc_row_node_lock_state(bc_tx *tx, const char *tenant_id, const char *id, char state[16]);

/* Sets node id's state at now_ms. */
BC_WUR int bc_row_node_set_state(bc_tx *tx, const char *id, const char *state, int64_t now_ms);

/* Node id's identity revoked at now_ms: its generation raised by one (certificates
 * are revoked with bc_row_cert_revoke_all). */
BC_WUR int bc_row_node_revoke_identity(bc_tx *tx, const char *id, int64_t now_ms);

/* Node id and its certificates, bindings and inventory deleted. */
BC_WUR int bc_row_node_delete(bc_tx *tx, const char *id);

#endif
