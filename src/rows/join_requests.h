/* join_requests: machines an attestor deferred for an operator, one row per
 * (tenant, attestor, request_key): a request belongs to the tenant that made it.
 * See rows/query.h. */
#ifndef BC_ROWS_JOIN_REQUESTS_H
#define BC_ROWS_JOIN_REQUESTS_H

#include "rows/query.h"

/* What an attestor reads of its machine's request. */
struct bc_join_request_row {
	char id[64];
	char state[16]; /* pending, approved, denied, used */
	char csr_sha256[65];
	int64_t expires_at;
	char tenant_id[64];
	char pool_id[64]; /* "" for none */
	char site_id[64]; /* "" for none */
	int same_claims;  /* 1: its claims are byte for byte the claims asked about */
};

/* tenant_id's request of (attestor, key), locked until the transaction ends: 1 with
 * *r filled (same_claims compares its claims with claims), 0 when there is none (*r
 * zeroed). */
BC_WUR int bc_row_join_request_lock(bc_tx *tx, const char *tenant_id, const char *attestor,
                                    const char *key, const char *claims,
                                    struct bc_join_request_row *r);

/* A request to write. Borrowed for the call. pool_id, site_id: NULL or "" for none. */
struct bc_join_request_write {
	const char *id;
	const char *tenant_id;
	const char *pool_id;
	const char *site_id;
	const char *attestor;
	const char *request_key;
	const char *csr_sha256; /* hex */
	const char *claims;     /* JSON object text */
	const char *detail;     /* JSON object text */
	int64_t now_ms;
	int64_t expires_at;
};

/* Replaces w->tenant_id's request of (w->attestor, w->request_key), whatever its
 * state, with a new pending one. */
BC_WUR int bc_row_join_request_replace(bc_tx *tx, const struct bc_join_request_write *w);

/* Request id was used: it admitted its machine once. */
BC_WUR int bc_row_join_request_use(bc_tx *tx, const char *id);

/* A page of tenant_id's requests in id order (rows/query.h), in state (NULL: any).
 * Columns: id, tenant_id, pool_id, site_id, attestor, request_key, csr_sha256, detail,
 * state, decided_by, created_at, expires_at, decided_at, claims. */
void bc_row_join_requests_list_sql(const char *tenant_id, const char *state,
                                   const struct bc_row_page *pg, struct bc_row_where *w);
BC_WUR int bc_row_join_requests_list(bc_tx *tx, const char *tenant_id, const char *state,
                                     const struct bc_row_page *pg, bc_rows **out);

/* tenant_id's request id, as listed. */
BC_WUR int bc_row_join_requests_get(bc_tx *tx, const char *tenant_id, const char *id,
                                    bc_rows **out);

/* tenant_id's request id decided (state "approved" or "denied") by actor at now_ms,
 * only while it is pending and unexpired: *changes 1 when it was, 0 when not. */
BC_WUR int bc_row_join_request_decide(bc_tx *tx, const char *tenant_id, const char *id,
                                      const char *state, const char *actor, int64_t now_ms,
                                      int64_t *changes);

/* tenant_id's request id deleted, in any state. */
BC_WUR int bc_row_join_request_delete(bc_tx *tx, const char *tenant_id, const char *id);

/* *n receives how many requests are pending (expired ones included). */
BC_WUR int bc_row_join_requests_pending(bc_tx *tx, int64_t *n);

#endif
