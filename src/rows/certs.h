/* node_certs: the certificates issued to nodes and their lineage (renew.c,
 * x509pop.c; whether one is current is join/holder.h's to say). See rows/query.h.
 * Getters return 1 with the row filled, 0 when there is none, or a negative
 * BC_ERR_*. */
#ifndef BC_ROWS_CERTS_H
#define BC_ROWS_CERTS_H

#include <stddef.h>
#include <stdint.h>

#include "rows/nodes.h"
#include "rows/query.h"

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
	/* 1 when the caller's own statement on the node row already made this the node's
	 * current certificate (bc_node_write's cert_serial); 0 to set it here */
	int node_row_set;
};

/* Inserts the row, computing the DER's SHA-256 itself; the key and role are stored
 * beside it, so a presented certificate is read from its row (join/holder.h). The
 * new certificate becomes the node row's current one (cert_serial, cert_not_after)
 * unless c->node_row_set says the caller's node statement did that.
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

/* Locks node_id's row until the transaction ends when one of its node_certs rows has
 * der's SHA-256 (a no-op where a write transaction holds the whole database): the
 * lineage of a node is read and written under its lock, and bytes that are no
 * certificate of the node lock nothing, whatever node they name. */
BC_WUR int bc_row_cert_lock_node(bc_tx *tx, const char *node_id, const uint8_t *der, size_t len);

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

/* The certificates of node_id, the latest to expire first, at most limit: the rows
 * (serial, generation, not_before, not_after, revoked_at, used_at, superseded_at,
 * predecessor, role), NULL columns where unset. What a node's page shows. */
enum {
	BC_CERT_COL_SERIAL,
	BC_CERT_COL_GENERATION,
	BC_CERT_COL_NOT_BEFORE,
	BC_CERT_COL_NOT_AFTER,
	BC_CERT_COL_REVOKED_AT,
	BC_CERT_COL_USED_AT,
	BC_CERT_COL_SUPERSEDED_AT,
	BC_CERT_COL_PREDECESSOR,
	BC_CERT_COL_ROLE,
};
BC_WUR int bc_row_certs_of_node(bc_tx *tx, const char *node_id, int64_t limit, bc_rows **out);

#endif
