/* join_tokens as the admin API shows them (what JoinService reads and writes of a
 * token: join/rows.h). See rows/query.h. */
#ifndef BC_ROWS_TOKENS_H
#define BC_ROWS_TOKENS_H

#include "rows/query.h"

/* The tokens of tenant_id, oldest first (id NULL), or its token id. Columns: id,
 * tenant_id, pool_id, site_id, role, uses_left, uses_total, expires_at, revoked_at,
 * expect, allow_reclaim, description, created_at, last_used_at, the pool's name, the
 * site's name (never the hash). */
BC_WUR int bc_row_tokens_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

/* Revokes tenant_id's token id at now_ms unless revoked already; *changes (may be
 * NULL) 1 when it was revoked now, 0 otherwise. */
BC_WUR int bc_row_token_revoke(bc_tx *tx, const char *tenant_id, const char *id, int64_t now_ms,
                               int64_t *changes);

#endif
