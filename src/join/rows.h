/* The one home of the queries JoinService and the attestors run on the tables nodes,
 * node_certs, node_bindings, join_tokens and attestation_uses: each written once, in
 * the common dialect of both engines, its columns read by name. Events and audit rows
 * are written by events.h; join_requests are the tpm attestor's own (tpm_place.c).
 * Attestors (src/attest) include this header; it includes nothing of theirs.
 *
 * Every function runs inside the caller's transaction and decides nothing: refusal
 * reasons stay with the caller, who compares the fields for its own reasons.
 * Getters return 1 with the row filled, 0 when there is none (the row zeroed), or a
 * negative BC_ERR_*; other functions 0 or a negative BC_ERR_*. Text columns that are
 * NULL read as "". Rows are plain values of fixed size: nothing to free, unless said. */
#ifndef BC_JOIN_ROWS_H
#define BC_JOIN_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "bc/attestor.h"
#include "bc/store.h"

/* ---- nodes ---- */

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
};

/* A new node, adopted, of generation 1. BC_ERR_CONFLICT when its id or hardware key
 * is already a node's (a claimed key: a node's of the same tenant). */
BC_WUR int bc_row_node_insert(bc_tx *tx, const struct bc_node_write *n);

/* The node n->id taken back by the same machine: its claims, agent, attestor, node
 * key and allowed kinds replaced, its hardware key set when n has one, its identity generation
 * raised by one and every older certificate revoked at n->now_ms. Tenant, pool, site, role and
 * state stay the node's. *generation receives the new generation. */
BC_WUR int bc_row_node_reclaim(bc_tx *tx, const struct bc_node_write *n, int64_t *generation);

/* ---- node_certs ---- */

#define BC_ROW_STATEMENTS_MAX 4200 /* the statements column of a certificate we issue */

/* A certificate row to write. Borrowed for the call. */
struct bc_cert_write {
	const char *serial; /* hex */
	const char *node_id;
	int64_t generation;
	const uint8_t *der;
	size_t der_len;
	int64_t not_before; /* also the row's created_at */
	int64_t not_after;
	const char *const *statements; /* urn:bc: URIs, stored as a JSON array */
	size_t n_statements;
	const char *predecessor;   /* a renewal's: the serial renewed; NULL for a join's */
	const uint8_t *csr_sha256; /* the CSR it answers (32 bytes); may be NULL */
	const uint8_t *point;      /* its key, uncompressed (65 bytes) */
	const char *role;          /* the role its SPIFFE ID names */
};

/* Inserts the row, computing the DER's hex and SHA-256 itself; the key and role are
 * stored beside it, so a presented certificate is read from its row (join/holder.h).
 * BC_ERR_CONFLICT when the serial or the DER is already a row's. */
BC_WUR int bc_row_cert_insert(bc_tx *tx, const struct bc_cert_write *c);

struct bc_cert_row {
	char serial[65];
	int64_t generation; /* the identity generation it was issued for */
	int64_t not_after;
	int revoked; /* revoked_at is set */
	int64_t revoked_at;
	int used;       /* used_at is set: renewed with, or presented to x509pop */
	int superseded; /* superseded_at is set: a newer certificate of the node was used */
	/* as issued; has_key 0 for a row stored without them (read its DER then) */
	int has_key;
	uint8_t point[65];
	char role[16];
	char statements[BC_ROW_STATEMENTS_MAX]; /* a JSON array of urn:bc: URIs */
	struct bc_node_row node;                /* the node it belongs to */
};

/* The node_certs row of node_id (NULL: of any node) that holds exactly the len bytes
 * of der, with its node: the one "is this a certificate we issued" query. 1 found; 0
 * when no row has these bytes. */
BC_WUR int bc_row_cert_find(bc_tx *tx, const char *node_id, const uint8_t *der, size_t len,
                            struct bc_cert_row *row);

/* The lineage (renew.c, x509pop.c). A node's certificate is used when it is renewed
 * with or presented to x509pop; its first use supersedes every other certificate of
 * the node. */

/* Marks serial used at now_ms; on its first use every other certificate of node_id is
 * superseded at now_ms. */
BC_WUR int bc_row_cert_use(bc_tx *tx, const char *node_id, const char *serial, int64_t now_ms);

/* *n receives how many certificates were renewed from serial. */
BC_WUR int bc_row_cert_successors(bc_tx *tx, const char *serial, int64_t *n);

/* Supersedes, at now_ms, every certificate renewed from serial (the predecessor's one
 * extra renewal replaces its unused successor). */
BC_WUR int bc_row_cert_supersede_successors(bc_tx *tx, const char *serial, int64_t now_ms);

/* The certificate renewed from predecessor for the CSR whose SHA-256 is csr_sha256: 1
 * with *der (malloc'd: the caller frees it), *len and *superseded; 0 when none. Either
 * way *successors receives how many certificates were renewed from predecessor, as
 * bc_row_cert_successors counts them, from the same statement. */
BC_WUR int bc_row_cert_issued_for(bc_tx *tx, const char *predecessor, const uint8_t csr_sha256[32],
                                  uint8_t **der, size_t *len, int *superseded, int64_t *successors);

/* Revokes, at now_ms, every certificate of node_id not yet revoked. *revoked (may be
 * NULL) receives how many. */
BC_WUR int bc_row_cert_revoke_all(bc_tx *tx, const char *node_id, int64_t now_ms, int64_t *revoked);

/* Calls fn(ctx, der, len) for each certificate of node_id, the latest to expire first,
 * until fn returns non-zero (that value is returned; 0 when every one was seen).
 * Whether one is current is join/holder.h's to say. */
BC_WUR int bc_row_cert_each(bc_tx *tx, const char *node_id,
                            int (*fn)(void *ctx, const uint8_t *der, size_t len), void *ctx);

/* ---- node_bindings ---- */

struct bc_binding_row {
	char kind[32];
	char key[BC_HWKEY_MAX];
	char node_id[BC_ID_MAX];
	int64_t created_at;
};

/* The binding of (kind, key). */
BC_WUR int bc_row_binding_get(bc_tx *tx, const char *kind, const char *key,
                              struct bc_binding_row *row);

/* Binds (kind, key) to node_id. BC_ERR_CONFLICT when the key is bound already (to
 * whichever node: read it with bc_row_binding_get). */
BC_WUR int bc_row_binding_insert(bc_tx *tx, const char *kind, const char *key, const char *node_id,
                                 int64_t now_ms);

/* ---- join_tokens ---- */

struct bc_token_row {
	char id[BC_ID_MAX];
	char tenant_id[BC_ID_MAX];
	char pool_id[BC_ID_MAX];
	char site_id[BC_ID_MAX];
	char role[16];
	char workflow_id[BC_ID_MAX];
	char node_id[BC_ID_MAX];
	char secret_hash[65]; /* hex sha256 of the secret, as stored: compare in constant time */
	int64_t uses_left;
	int64_t expires_at;
	int revoked; /* revoked_at is set */
};

/* The token id, its row locked until the transaction ends (SELECT ... FOR UPDATE on
 * PostgreSQL; SQLite's write transaction holds the lock already). */
BC_WUR int bc_row_token_lock(bc_tx *tx, const char *id, struct bc_token_row *row);

/* The token's expect binding (a JSON object as text, malloc'd: the caller frees it)
 * and its allowReclaim flag. */
BC_WUR int bc_row_token_expect(bc_tx *tx, const char *id, char **expect, int *allow_reclaim);

/* Spends one use at now_ms. The caller holds the row's lock (bc_row_token_lock) and
 * saw a use left: BC_ERR_INTERNAL when none was, since that is a bug. */
BC_WUR int bc_row_token_consume(bc_tx *tx, const char *id, int64_t now_ms);

/* A token to write. Borrowed for the call. pool_id, site_id, workflow_id, node_id and
 * description: NULL or "" for none; expect: a JSON object as text (NULL: "{}"). */
struct bc_token_write {
	const char *id;
	const char *tenant_id;
	const char *pool_id;
	const char *site_id;
	const char *role;
	const char *secret_hash; /* hex sha256 of the secret */
	int64_t uses;
	int64_t expires_at;
	const char *expect;
	int allow_reclaim;
	const char *workflow_id; /* the workflow whose step minted it */
	const char *node_id;     /* the node it was minted for */
	const char *description;
	int64_t now_ms;
};

/* Inserts the token with uses_left = uses_total = t->uses. */
BC_WUR int bc_row_token_insert(bc_tx *tx, const struct bc_token_write *t);

/* ---- inventory ---- */

#define BC_ROW_INVENTORY_KEEP 100 /* records kept per node, the newest */

/* Records what a join claimed for node_id at now_ms (MACs, product UUID, serial,
 * hostname, arch; MACs and the UUID canonical when they have the shape), as a JSON
 * object; a second record of the same node at the same millisecond replaces the
 * first, so newest-last holds. With prune, records beyond the newest
 * BC_ROW_INVENTORY_KEEP go; a node made in this transaction has only this one, and
 * its join skips that statement. */
BC_WUR int bc_row_inventory_insert(bc_tx *tx, const char *node_id, const struct bc_claims *c,
                                   int64_t now_ms, int prune);

/* The product UUID of node_id's newest inventory record ("" when it claimed none):
 * 1, or 0 when the node has no record. */
BC_WUR int bc_row_inventory_newest_uuid(bc_tx *tx, const char *node_id, char uuid[BC_ID_MAX]);

/* ---- workflows (their kinds, states and data: provision/provision.h) ---- */

/* The columns every reader of workflows selects, in this order (the admin API's
 * answers read them by position): id, tenant_id, node_id, kind, state, data,
 * created_at, updated_at. */
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

/* ---- leases ---- */

/* The row name of a site's site::boot lease: "site::boot/" + the site id. */
#define BC_ROW_SITE_LEASE_FMT "site::boot/%s"

struct bc_lease_row {
	char holder[BC_ID_MAX]; /* "" when nobody holds it */
	int64_t epoch;          /* the last epoch granted: 0 before the first */
	int64_t expires_at;
};

/* The lease name, its row locked until the transaction ends; a lease never granted is
 * made first (holder "", epoch 0), so two replicas racing lock the same row. 1. */
BC_WUR int bc_row_lease_lock(bc_tx *tx, const char *name, struct bc_lease_row *row);

/* Sets the locked lease name to (holder, epoch, expires_at), only while its epoch is
 * still was_epoch: BC_ERR_CONFLICT when another transaction moved it. */
BC_WUR int bc_row_lease_set(bc_tx *tx, const char *name, int64_t was_epoch, const char *holder,
                            int64_t epoch, int64_t expires_at);

/* 1 when holder holds the lease name at exactly epoch, unexpired at now_ms; else 0. */
BC_WUR int bc_row_lease_held(bc_tx *tx, const char *name, const char *holder, int64_t epoch,
                             int64_t now_ms);

/* ---- attestation_uses ---- */

/* Records that attestor accepted subject (hex), kept until expires_at (negative:
 * forever, BC_USE_FOREVER) so that no replica accepts it again. BC_ERR_CONFLICT when it was
 * recorded before: the caller's
 * ...-replay or ...-reused refusal. */
#define BC_USE_FOREVER (-1)
BC_WUR int bc_row_use_insert(bc_tx *tx, const char *attestor, const char *subject_hex,
                             int64_t expires_at, int64_t now_ms);

#endif
