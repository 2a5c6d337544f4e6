/* sites (their site::boot leases: leases.h). See rows/query.h. */
#ifndef BC_ROWS_SITES_H
#define BC_ROWS_SITES_H

#include "rows/query.h"

/* The sites of tenant_id, oldest first (id NULL), or its site id. Columns: id,
 * tenant_id, name, created_at. */
BC_WUR int bc_row_sites_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

/* 1 when site id exists and is tenant_id's, 0 when not. */
BC_WUR int bc_row_site_in_tenant(bc_tx *tx, const char *tenant_id, const char *id);

/* Locks tenant_id's site id until the transaction ends: 1, or 0 when there is none. */
BC_WUR int bc_row_site_lock(bc_tx *tx, const char *tenant_id, const char *id);

/* A new site. BC_ERR_CONFLICT when the tenant has a site of that name. */
BC_WUR int bc_row_site_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *name,
                              int64_t now_ms);

#endif
