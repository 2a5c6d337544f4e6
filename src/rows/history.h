/* events and audit: written by join/events.h (inside the change they describe), read
 * by the admin API. See rows/query.h. */
#ifndef BC_ROWS_HISTORY_H
#define BC_ROWS_HISTORY_H

#include "rows/query.h"

/* The filters of a list; NULL (has_since: 0) for none. */
struct bc_row_history_filter {
	const char *type;    /* events: the type; audit: the action */
	const char *subject; /* a node id */
	int has_since;
	int64_t since; /* created at or after (ms) */
	int64_t limit;
};

/* tenant_id's events, newest first. Columns: id, tenant_id, type, subject, data,
 * created_at. */
BC_WUR int bc_row_events_list(bc_tx *tx, const char *tenant_id,
                              const struct bc_row_history_filter *f, bc_rows **out);

/* tenant_id's audit rows, newest first. Columns: id, tenant_id, action, subject, data,
 * created_at, actor. */
BC_WUR int bc_row_audit_list(bc_tx *tx, const char *tenant_id,
                             const struct bc_row_history_filter *f, bc_rows **out);

/* An event row: data is a JSON object as text. */
BC_WUR int bc_row_event_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *type,
                               const char *subject, const char *data, int64_t now_ms);

/* An audit row: data is a JSON object as text. */
BC_WUR int bc_row_audit_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *actor,
                               const char *action, const char *subject, const char *data,
                               int64_t now_ms);

#endif
