/* tenants. See rows/query.h for the conventions. */
#ifndef BC_ROWS_TENANTS_H
#define BC_ROWS_TENANTS_H

#include "rows/query.h"

/* The tenants, oldest first (only_id NULL), or the tenant only_id. Columns: id, name,
 * created_at. */
BC_WUR int bc_row_tenants_query(bc_tx *tx, const char *only_id, bc_rows **out);

/* 1 when the tenant id exists, 0 when not. */
BC_WUR int bc_row_tenant_exists(bc_tx *tx, const char *id);

/* Locks tenant id until the transaction ends: 1, or 0 when there is none. */
BC_WUR int bc_row_tenant_lock(bc_tx *tx, const char *id);

/* A new tenant. BC_ERR_CONFLICT when the id or name is taken. */
BC_WUR int bc_row_tenant_insert(bc_tx *tx, const char *id, const char *name, int64_t now_ms);

/* The root tenant (id and name "root"), as init makes it. */
BC_WUR int bc_row_tenant_insert_root(bc_tx *tx, int64_t now_ms);

#endif
