/* events and audit: written by join/events.h (inside the change they describe), read
 * by the admin API. See rows/query.h. */
#ifndef BC_ROWS_HISTORY_H
#define BC_ROWS_HISTORY_H

#include "rows/query.h"

/* The filters of a list; NULL (has_since, has_until: 0) for none. Each is served by
 * an index of (tenant, filter, created_at, id) (migration 007). */
struct bc_row_history_filter {
	const char *type;    /* events: the type; audit: the action */
	const char *subject; /* a node id */
	int has_since, has_until;
	int64_t since; /* created at or after (ms) */
	int64_t until; /* created before (ms) */
};

/* A page of tenant_id's events (rows/query.h), newest first by (created_at, id), the
 * key a cursor of it carries. Columns: id, tenant_id, type, subject, data,
 * created_at. */
void bc_row_events_list_sql(const char *tenant_id, const struct bc_row_history_filter *f,
                            const struct bc_row_page *pg, struct bc_row_where *w);
BC_WUR int bc_row_events_list(bc_tx *tx, const char *tenant_id,
                              const struct bc_row_history_filter *f, const struct bc_row_page *pg,
                              bc_rows **out);

/* A page of tenant_id's audit rows, as events. Columns: id, tenant_id, action,
 * subject, data, created_at, actor. */
void bc_row_audit_list_sql(const char *tenant_id, const struct bc_row_history_filter *f,
                           const struct bc_row_page *pg, struct bc_row_where *w);
BC_WUR int bc_row_audit_list(bc_tx *tx, const char *tenant_id,
                             const struct bc_row_history_filter *f, const struct bc_row_page *pg,
                             bc_rows **out);

/* An event row: data is a JSON object as text. */
BC_WUR int bc_row_event_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *type,
                               const char *subject, const char *data, int64_t now_ms);

/* An audit row: data is a JSON object as text. */
BC_WUR int bc_row_audit_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *actor,
                               const char *action, const char *subject, const char *data,
                               int64_t now_ms);

#endif
