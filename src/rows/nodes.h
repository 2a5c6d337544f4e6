/* nodes: as the admin API shows and changes them, and as JoinService and the
 * attestors read and write them (their certificates: rows/certs.h). See
 * rows/query.h. Getters return 1 with the row filled, 0 when there is none (the row
 * zeroed), or a negative BC_ERR_*; text columns that are NULL read as "". */
#ifndef BC_ROWS_NODES_H
#define BC_ROWS_NODES_H

#include <stdint.h>

#include "bc/attestor.h"
#include "rows/query.h"

/* The columns of a node's view, in this order. The current certificate is the
 * newest unrevoked one (kept on the node's row: rows/certs.h); inventory is the
 * newest record. */
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

/* The filters of a list; NULL (expiring_before: 0) for none. Each is served by an
 * index of (tenant, filter, id) (migration 007). */
struct bc_row_node_filter {
	const char *pool_id;
	const char *site_id;
	const char *role;
	const char *state;
	const char *attestor;
	const char *hostname;
	const char *product_uuid;
	const char *serial;
	const char *mac;         /* canonical (bc_mac_canon) */
	int64_t expiring_before; /* the current certificate ends at or before this (ms) */
};

/* A page of the nodes of tenant_id that pass f (rows/query.h): in id order, or with
 * expiring_before in order of (the current certificate's notAfter, id), the key a
 * cursor of it carries. */
void bc_row_nodes_list_sql(const char *tenant_id, const struct bc_row_node_filter *f,
                           const struct bc_row_page *pg, struct bc_row_where *w);
BC_WUR int bc_row_nodes_list(bc_tx *tx, const char *tenant_id, const struct bc_row_node_filter *f,
                             const struct bc_row_page *pg, bc_rows **out);

/* The fleet's nodes, every tenant's, by state: the rows (state, count, then for each
 * of the BC_ROW_FLEET_WINDOWS times in until[] how many of them hold a current
 * certificate that ends in (now_ms, until]), read from the index nodes_state_expiry
 * alone. */
#define BC_ROW_FLEET_WINDOWS 3
BC_WUR int bc_row_nodes_fleet(bc_tx *tx, int64_t now_ms,
                              const int64_t until[static BC_ROW_FLEET_WINDOWS], bc_rows **out);

/* How many nodes tenant_id has in each state: the rows (state, count). */
BC_WUR int bc_row_nodes_count(bc_tx *tx, const char *tenant_id, bc_rows **out);
/* How many nodes tenant_id has by one of its columns: the rows (value, count), value
 * NULL for nodes without one (a node in no pool). Each is an index scan. */
enum bc_node_count_by { BC_NODE_COUNT_ROLE, BC_NODE_COUNT_ATTESTOR, BC_NODE_COUNT_POOL };
BC_WUR int bc_row_nodes_count_by(bc_tx *tx, const char *tenant_id, enum bc_node_count_by by,
                                 bc_rows **out);
/* How many of tenant_id's nodes have a current certificate that expires at or before
 * before_ms (expired ones too), into *n. */
BC_WUR int bc_row_nodes_count_expiring(bc_tx *tx, const char *tenant_id, int64_t before_ms,
                                       int64_t *n);
/* How many of tenant_id's nodes that are not retired have no current certificate (an
 * identity revoked, or every certificate expired past its lineage), into *n. */
BC_WUR int bc_row_nodes_count_uncertified(bc_tx *tx, const char *tenant_id, int64_t *n);

/* tenant_id's node id. */
BC_WUR int bc_row_nodes_get(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

/* tenant_id's node id, locked until the transaction ends, its state into state: 1,
 * or 0 when there is none. */
BC_WUR int bc_row_node_lock_state(bc_tx *tx, const char *tenant_id, const char *id, char state[16]);

/* Sets node id's state at now_ms. */
BC_WUR int bc_row_node_set_state(bc_tx *tx, const char *id, const char *state, int64_t now_ms);

/* Node id enrolled in pool_id at now_ms (machines enroll: a discovered ramdisk node
 * becomes a machine of that pool; the caller checked both). */
BC_WUR int bc_row_node_enroll(bc_tx *tx, const char *id, const char *pool_id, int64_t now_ms);

/* Node id's role set at now_ms (an enrolled ramdisk node re-keyed as a node). */
BC_WUR int bc_row_node_set_role(bc_tx *tx, const char *id, const char *role, int64_t now_ms);

/* Node id's identity revoked at now_ms: its generation raised by one (certificates
 * are revoked with bc_row_cert_revoke_all). */
BC_WUR int bc_row_node_revoke_identity(bc_tx *tx, const char *id, int64_t now_ms);

/* Node id and its certificates, bindings and inventory deleted. */
BC_WUR int bc_row_node_delete(bc_tx *tx, const char *id);

/* ---- what JoinService reads and writes of a node ---- */

struct bc_node_row {
	char id[BC_ID_MAX];
	char tenant_id[BC_ID_MAX];
	char pool_id[BC_ID_MAX]; /* "" for none */
	char site_id[BC_ID_MAX]; /* "" for none */
	char role[16];
	char state[16]; /* adopted, cordoned, retired */
	int64_t generation;
};

enum bc_node_by { BC_NODE_BY_ID = 1, BC_NODE_BY_HARDWARE_KEY = 2 };

/* The node whose id, or whose proven hardware key (unique across the fleet), is key. */
BC_WUR int bc_row_node_get(bc_tx *tx, enum bc_node_by by, const char *key, struct bc_node_row *row);

/* The node of tenant_id whose claimed hardware key (unique within its tenant) is key. */
BC_WUR int bc_row_node_get_claimed(bc_tx *tx, const char *tenant_id, const char *key,
                                   struct bc_node_row *row);

/* Locks the node's row until the transaction ends: the renewals and x509pop joins of one
 * node, and so its certificate lineage, run one at a time. 0 also when there is none. */
BC_WUR int bc_row_node_lock(bc_tx *tx, const char *id);

/* What a join writes of a node. Borrowed for the call. pool_id, site_id and
 * hardware_key: "" for none. */
struct bc_node_write {
	const char *id;
	const char *tenant_id;
	const char *pool_id;
	const char *site_id;
	const char *role;
	const char *hardware_key; /* proven by the attestor: unique across the fleet */
	int hardware_key_claimed; /* hardware_key comes from the claims: unique in the tenant */
	const struct bc_claims *claims; /* macs are stored as a JSON array */
	const char *agent_version;
	const char *attestor;
	int node_key_tpm;          /* node_key "tpm", else "unattested" */
	const char *allowed_kinds; /* a JSON array of command kinds; "" or NULL: [] */
	int64_t now_ms;
	/* the certificate the join issues, stored as the node's current one in the same
	 * statement (its node_certs row follows with node_row_set, rows/certs.h) */
	const char *cert_serial;
	int64_t cert_not_after;
};

/* A new node, adopted, of generation 1. BC_ERR_CONFLICT when its id or hardware key
 * is already a node's (a claimed key: a node's of the same tenant). */
BC_WUR int bc_row_node_insert(bc_tx *tx, const struct bc_node_write *n);

/* The node n->id taken back by the same machine: its claims, agent, attestor, node
 * key and allowed kinds replaced, its hardware key set when n has one, its identity generation
 * raised by one and every older certificate revoked at n->now_ms. Tenant, pool, site, role and
 * state stay the node's. n->cert_serial (NULL: none) becomes its current certificate.
 * *generation receives the new generation. */
BC_WUR int bc_row_node_reclaim(bc_tx *tx, const struct bc_node_write *n, int64_t *generation);

#endif
