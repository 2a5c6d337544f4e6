/* Join requests: machines an attestor deferred for an operator (tpm enrollment,
 * discovery approval). A
 * pending request is approved or denied once; the attestor reads the decision at
 * the machine's next round. An expired request can no longer be decided. */
#include <stdlib.h>
#include <string.h>

#include "bc/json.h"
#include "rows/join_requests.h"
#include "server/admin_internal.h"

static const char *const STATES[] = {"pending", "approved", "denied", "used", NULL};

static json_t *jr_json(bc_rows *r)
{
	/* claims and csrSha256: exactly what an approval admits (the request is bound to
	   both) */
	return json_pack("{s:s, s:s, s:o, s:o, s:s, s:s, s:s, s:o, s:o, s:s, s:o, s:o, s:o, s:o}",
	                 "id", bc_rows_text(r, 0), "tenantId", bc_rows_text(r, 1), "poolId",
	                 admin_col_text(r, 2), "siteId", admin_col_text(r, 3), "attestor",
	                 bc_rows_text(r, 4), "requestKey", bc_rows_text(r, 5), "csrSha256",
	                 bc_rows_text(r, 6), "claims", admin_col_json(r, 13, "{}"), "detail",
	                 admin_col_json(r, 7, "{}"), "state", bc_rows_text(r, 8), "decidedBy",
	                 admin_col_text(r, 9), "createdAt", admin_time(bc_rows_int(r, 10)),
	                 "expiresAt", admin_time(bc_rows_int(r, 11)), "decidedAt",
	                 admin_col_time(r, 12));
}

int admin_join_requests_list(bc_tx *tx, struct admin_call *c)
{
	const char *state = bc_http_query(c->req, "state");
	struct admin_page pg;
	bc_rows *r;
	int rc, known = state == NULL;

	for (size_t i = 0; state && STATES[i]; i++)
		known |= strcmp(state, STATES[i]) == 0;
	if (!known)
		return admin_fail(c, BC_ERR_INVALID,
		                  "state: expected pending, approved, denied or used");
	if ((rc = admin_query_page(c, &pg, "join_requests", -1, 0, ADMIN_LIST_LIMIT_DEFAULT,
	                           ADMIN_LIST_LIMIT_MAX)) != 0 ||
	    (rc = bc_row_join_requests_list(tx, c->arg[0], state, &pg.rows, &r)) != 0)
		return rc;
	return admin_page_answer(c, &pg, r, jr_json, "joinRequests");
}

/* pending -> approved or denied, once, while it has not expired. */
static int decide(bc_tx *tx, struct admin_call *c, const char *to, const char *event)
{
	int64_t now = bc_tx_now_ms(tx), changes = 0;
	json_t *jr = NULL, *data = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_join_request_decide(tx, c->arg[0], c->arg[1], to, c->actor, now,
	                                     &changes)) != 0 ||
	    (rc = bc_row_join_requests_get(tx, c->arg[0], c->arg[1], &r)) != 0)
		return rc;
	if ((rc = admin_rows_one(r, jr_json, &jr)) != 0)
		return rc == BC_ERR_NOT_FOUND ? admin_fail(c, rc, "join request not found") : rc;
	if (changes == 0) {
		json_decref(jr);
		return admin_fail(c, BC_ERR_CONFLICT,
		                  "the join request is not pending (or expired)");
	}
	data = json_pack("{s:s, s:O}", "requestId", c->arg[1], "attestor",
	                 json_object_get(jr, "attestor"));
	if ((rc = admin_record(tx, c, c->arg[0], event, c->arg[1], data, 1)) != 0)
		goto out;
	rc = admin_answer(c, 200, jr);
	jr = NULL;
out:
	json_decref(data);
	json_decref(jr);
	return rc;
}

int admin_join_requests_approve(bc_tx *tx, struct admin_call *c)
{
	return decide(tx, c, "approved", "join-request.approved");
}

int admin_join_requests_deny(bc_tx *tx, struct admin_call *c)
{
	return decide(tx, c, "denied", "join-request.denied");
}

/* Any request of the tenant, in any state: the machine's next round finds none. */
int admin_join_requests_delete(bc_tx *tx, struct admin_call *c)
{
	json_t *jr = NULL, *data = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_join_requests_get(tx, c->arg[0], c->arg[1], &r)) != 0)
		return rc;
	if ((rc = admin_rows_one(r, jr_json, &jr)) != 0)
		return rc == BC_ERR_NOT_FOUND ? admin_fail(c, rc, "join request not found") : rc;
	data = json_pack("{s:s, s:O, s:O}", "requestId", c->arg[1], "attestor",
	                 json_object_get(jr, "attestor"), "state", json_object_get(jr, "state"));
	if (data == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = bc_row_join_request_delete(tx, c->arg[0], c->arg[1])) != 0)
		goto out;
	if ((rc = admin_record(tx, c, c->arg[0], "join-request.deleted", c->arg[1], data, 1)) != 0)
		goto out;
	rc = admin_answer(c, 200, json_pack("{s:s}", "deleted", c->arg[1]));
out:
	json_decref(data);
	json_decref(jr);
	return rc;
}
