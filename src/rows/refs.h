/* What refers to a pool, a site or a tenant, and their removal (the admin API's
 * DELETE routes: docs/admin-api.md, "Deleting pools, sites and tenants"). The one
 * file of src/rows that reads several tables: the references to an owner are one
 * question, asked of every table that names it. See rows/query.h. */
#ifndef BC_ROWS_REFS_H
#define BC_ROWS_REFS_H

#include "rows/query.h"

enum bc_row_owner {
	BC_ROW_OWNER_POOL,
	BC_ROW_OWNER_SITE,
	BC_ROW_OWNER_TENANT,
};

/* The rows that keep an owner from being deleted. Only a live row counts where a
 * dead one is removed with its owner (tokens, join requests, keys, workflows). */
struct bc_row_refs {
	int64_t nodes;         /* of any state: a retired node still names its pool */
	int64_t tokens;        /* neither revoked, expired nor used up at now_ms */
	int64_t join_requests; /* pending or approved, not expired at now_ms */
	int64_t pools;         /* tenant only */
	int64_t sites;         /* tenant only */
	int64_t api_keys;      /* tenant only: neither revoked nor expired at now_ms */
	int64_t workflows;     /* tenant only: running */
};

/* What refers to owner id (a pool's, a site's or a tenant's id) at now_ms into *out. */
BC_WUR int bc_row_refs_count(bc_tx *tx, enum bc_row_owner owner, const char *id, int64_t now_ms,
                             struct bc_row_refs *out);

/* Deletes owner id and the dead rows that name it: its tokens (all of them: the
 * caller found none live), and for a site its boot lease, for a tenant its API keys,
 * join requests and workflows. Its events and audit rows stay (retention removes
 * them). The caller holds the owner's row locked and found *refs empty: a live row
 * left would fail a foreign key (an error, not a refusal). */
BC_WUR int bc_row_owner_delete(bc_tx *tx, enum bc_row_owner owner, const char *id);

#endif
