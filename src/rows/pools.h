/* pools: a name and a policy (a JSON object as text). See rows/query.h. */
#ifndef BC_ROWS_POOLS_H
#define BC_ROWS_POOLS_H

#include "rows/query.h"

/* The pools of tenant_id, oldest first (id NULL), or its pool id. Columns: id,
 * tenant_id, name, policy, created_at, updated_at. */
BC_WUR int bc_row_pools_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

/* 1 when pool id exists and is tenant_id's, 0 when not. */
BC_WUR int bc_row_pool_in_tenant(bc_tx *tx, const char *tenant_id, const char *id);

/* Locks tenant_id's pool id until the transaction ends: 1, or 0 when there is none. */
BC_WUR int bc_row_pool_lock(bc_tx *tx, const char *tenant_id, const char *id);

/* A new pool; policy: a JSON object as text. BC_ERR_CONFLICT when the tenant has a
 * pool of that name. */
BC_WUR int bc_row_pool_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *name,
                              const char *policy, int64_t now_ms);

/* Renames pool id (BC_ERR_CONFLICT as above) / replaces its policy, at now_ms. */
BC_WUR int bc_row_pool_set_name(bc_tx *tx, const char *id, const char *name, int64_t now_ms);
BC_WUR int bc_row_pool_set_policy(bc_tx *tx, const char *id, const char *policy, int64_t now_ms);

/* Pool id's tenant and policy (malloc'd JSON text: the caller frees it): 1 with both
 * set, 0 when there is none (*policy NULL). */
BC_WUR int bc_row_pool_policy(bc_tx *tx, const char *id, char tenant_id[64], char **policy);

#endif
