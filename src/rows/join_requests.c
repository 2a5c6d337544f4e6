/* join_requests (join_requests.h). */
#include "rows/join_requests.h"

#include <stdio.h>
#include <string.h>

#define JR_SELECT                                                                                  \
	"SELECT id, tenant_id, pool_id, site_id, attestor, request_key, csr_sha256, detail, "      \
	"state, decided_by, created_at, expires_at, decided_at, claims FROM join_requests "

static const char *none_if_empty(const char *s)
{
	return s && s[0] ? s : NULL;
}

int bc_row_join_request_lock(bc_tx *tx, const char *tenant_id, const char *attestor,
                             const char *key, const char *claims, struct bc_join_request_row *r)
{
	bc_rows *rows = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	bc_param q[] = {BC_TEXT(tenant_id), BC_TEXT(attestor), BC_TEXT(key), BC_TEXT(claims)};
	if ((rc = bc_tx_query(tx,
	                      "SELECT id, state, csr_sha256, expires_at, tenant_id, pool_id, "
	                      "site_id, CASE WHEN claims = $4 THEN 1 ELSE 0 END FROM join_requests "
	                      "WHERE tenant_id = $1 AND attestor = $2 AND request_key = $3 "
	                      "FOR UPDATE",
	                      q, 4, &rows)) != 0)
		return rc;
	if ((rc = bc_rows_next(rows)) == 1) {
		snprintf(r->id, sizeof(r->id), "%s", bc_rows_text(rows, 0));
		snprintf(r->state, sizeof(r->state), "%s", bc_rows_text(rows, 1));
		snprintf(r->csr_sha256, sizeof(r->csr_sha256), "%s", bc_rows_text(rows, 2));
		r->expires_at = bc_rows_int(rows, 3);
		snprintf(r->tenant_id, sizeof(r->tenant_id), "%s", bc_rows_text(rows, 4));
		snprintf(r->pool_id, sizeof(r->pool_id), "%s", bc_rows_text(rows, 5));
		snprintf(r->site_id, sizeof(r->site_id), "%s", bc_rows_text(rows, 6));
		r->same_claims = bc_rows_int(rows, 7) == 1;
	}
	bc_rows_free(rows);
	return rc;
}

int bc_row_join_request_replace(bc_tx *tx, const struct bc_join_request_write *w)
{
	int rc;

	bc_param del[] = {BC_TEXT(w->tenant_id), BC_TEXT(w->attestor), BC_TEXT(w->request_key)};
	if ((rc = bc_tx_exec(tx,
	                     "DELETE FROM join_requests WHERE tenant_id = $1 AND attestor = $2 "
	                     "AND request_key = $3",
	                     del, 3, NULL)) != 0)
		return rc;
	bc_param q[] = {BC_TEXT(w->id),
	                BC_TEXT(w->tenant_id),
	                BC_TEXT(none_if_empty(w->pool_id)),
	                BC_TEXT(none_if_empty(w->site_id)),
	                BC_TEXT(w->attestor),
	                BC_TEXT(w->request_key),
	                BC_TEXT(w->csr_sha256),
	                BC_TEXT(w->claims),
	                BC_TEXT(w->detail),
	                BC_INT(w->now_ms),
	                BC_INT(w->expires_at)};
	return bc_tx_exec(tx,
	                  "INSERT INTO join_requests (id, tenant_id, pool_id, site_id, attestor, "
	                  "request_key, csr_sha256, claims, detail, state, created_at, "
	                  "expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', "
	                  "$10, $11)",
	                  q, 11, NULL);
}

int bc_row_join_request_use(bc_tx *tx, const char *id)
{
	bc_param u[] = {BC_TEXT(id)};

	return bc_tx_exec(tx, "UPDATE join_requests SET state = 'used' WHERE id = $1", u, 1, NULL);
}

void bc_row_join_requests_list_sql(const char *tenant_id, const char *state,
                                   const struct bc_row_page *pg, struct bc_row_where *w)
{
	bc_row_where_init(w, JR_SELECT "WHERE tenant_id = $1", BC_TEXT(tenant_id));
	if (state != NULL)
		bc_row_where_add(w, "state =", BC_TEXT(state));
	bc_row_where_page(w, NULL, "id", 0, pg);
}

int bc_row_join_requests_list(bc_tx *tx, const char *tenant_id, const char *state,
                              const struct bc_row_page *pg, bc_rows **out)
{
	struct bc_row_where w;

	bc_row_join_requests_list_sql(tenant_id, state, pg, &w);
	return bc_row_where_query(tx, &w, out);
}

int bc_row_join_requests_get(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	return bc_tx_query(tx, JR_SELECT "WHERE tenant_id = $1 AND id = $2", p, 2, out);
}

int bc_row_join_request_decide(bc_tx *tx, const char *tenant_id, const char *id, const char *state,
                               const char *actor, int64_t now_ms, int64_t *changes)
{
	bc_param p[] = {BC_TEXT(state), BC_TEXT(actor), BC_INT(now_ms), BC_TEXT(tenant_id),
	                BC_TEXT(id)};

	return bc_tx_exec(tx,
	                  "UPDATE join_requests SET state = $1, decided_by = $2, decided_at = $3 "
	                  "WHERE tenant_id = $4 AND id = $5 AND state = 'pending' AND "
	                  "expires_at > $3",
	                  p, 5, changes);
}

int bc_row_join_request_delete(bc_tx *tx, const char *tenant_id, const char *id)
{
	bc_param q[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	return bc_tx_exec(tx, "DELETE FROM join_requests WHERE tenant_id = $1 AND id = $2", q, 2,
	                  NULL);
}

int bc_row_join_requests_pending(bc_tx *tx, int64_t *n)
{
	return bc_tx_query_int(tx, "SELECT COUNT(*) FROM join_requests WHERE state = 'pending'",
	                       NULL, 0, n);
}
