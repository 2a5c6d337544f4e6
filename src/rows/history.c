/* events and audit (history.h). */
#include "rows/history.h"

static void history_sql(const char *select, const char *what, const char *tenant_id,
                        const struct bc_row_history_filter *f, const struct bc_row_page *pg,
                        struct bc_row_where *w)
{
	bc_row_where_init(w, select, BC_TEXT(tenant_id));
	if (f->type != NULL)
		bc_row_where_add(w, what, BC_TEXT(f->type));
	if (f->subject != NULL)
		bc_row_where_add(w, "subject =", BC_TEXT(f->subject));
	if (f->has_since)
		bc_row_where_add(w, "created_at >=", BC_INT(f->since));
	if (f->has_until)
		bc_row_where_add(w, "created_at <", BC_INT(f->until));
	bc_row_where_page(w, "created_at", "id", 1, pg);
}

void bc_row_events_list_sql(const char *tenant_id, const struct bc_row_history_filter *f,
                            const struct bc_row_page *pg, struct bc_row_where *w)
{
	history_sql("SELECT id, tenant_id, type, subject, data, created_at FROM events "
	            "WHERE tenant_id = $1",
	            "type =", tenant_id, f, pg, w);
}

int bc_row_events_list(bc_tx *tx, const char *tenant_id, const struct bc_row_history_filter *f,
                       const struct bc_row_page *pg, bc_rows **out)
{
	struct bc_row_where w;

	bc_row_events_list_sql(tenant_id, f, pg, &w);
	return bc_row_where_query(tx, &w, out);
}

void bc_row_audit_list_sql(const char *tenant_id, const struct bc_row_history_filter *f,
                           const struct bc_row_page *pg, struct bc_row_where *w)
{
	history_sql("SELECT id, tenant_id, action, subject, data, created_at, actor "
	            "FROM audit WHERE tenant_id = $1",
	            "action =", tenant_id, f, pg, w);
}

int bc_row_audit_list(bc_tx *tx, const char *tenant_id, const struct bc_row_history_filter *f,
                      const struct bc_row_page *pg, bc_rows **out)
{
	struct bc_row_where w;

	bc_row_audit_list_sql(tenant_id, f, pg, &w);
	return bc_row_where_query(tx, &w, out);
}

int bc_row_event_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *type,
                        const char *subject, const char *data, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id),      BC_TEXT(tenant_id), BC_TEXT(type),
	                BC_TEXT(subject), BC_TEXT(data),      BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "INSERT INTO events (id, tenant_id, type, subject, data, created_at) "
	                  "VALUES ($1, $2, $3, $4, $5, $6)",
	                  p, 6, NULL);
}

int bc_row_audit_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *actor,
                        const char *action, const char *subject, const char *data, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id),      BC_TEXT(tenant_id), BC_TEXT(actor), BC_TEXT(action),
	                BC_TEXT(subject), BC_TEXT(data),      BC_INT(now_ms)};

	return bc_tx_exec(
	    tx,
	    "INSERT INTO audit (id, tenant_id, actor, action, subject, data, created_at) "
	    "VALUES ($1, $2, $3, $4, $5, $6, $7)",
	    p, 7, NULL);
}
