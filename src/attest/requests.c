/* Join requests (requests.h): one row per machine key, approved once by an operator. */
#include "attest/requests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bc/codec.h"
#include "bc/json.h"
#include "bc/reasons.h"
#include "join/events.h"

static void defer(struct bc_attest_outcome *out, const char *id, uint32_t retry_after_s)
{
	out->kind = BC_OUTCOME_DEFER;
	out->deferral.kind = BC_DEFER_APPROVAL;
	snprintf(out->deferral.request_id, BC_ID_MAX, "%s", id);
	out->deferral.retry_after_seconds = retry_after_s;
}

static const char *none_if_empty(const char *s)
{
	return s && s[0] ? s : NULL;
}

static int created_event(bc_tx *tx, const struct bc_join_request_place *p, const char *id)
{
	json_t *d = json_pack("{s:s, s:s, s:s?}", "requestId", id, "attestor", p->attestor,
	                      "siteId", none_if_empty(p->site));
	int rc = bc_event_publish(tx, p->tenant, "join.request.created", id, d);
	json_decref(d);
	return rc;
}

/* A new pending request, replacing an expired or used one. */
static int new_request(bc_tx *tx, const struct bc_join_request_place *p,
                       const struct bc_join_input *in, struct bc_attest_outcome *out)
{
	char id[BC_ID_MAX], csr_hex[65];
	int rc;

	bc_hex_encode_to(in->csr_sha256, 32, csr_hex);
	bc_param del[] = {BC_TEXT(p->attestor), BC_TEXT(p->key)};
	if ((rc = bc_tx_exec(tx,
	                     "DELETE FROM join_requests WHERE attestor = $1 AND request_key = $2",
	                     del, 2, NULL)) != 0)
		return rc;
	if ((rc = bc_new_id("jr", id, sizeof(id))) != 0)
		return rc;
	bc_param q[] = {BC_TEXT(id),
	                BC_TEXT(p->tenant),
	                BC_TEXT(none_if_empty(p->pool)),
	                BC_TEXT(none_if_empty(p->site)),
	                BC_TEXT(p->attestor),
	                BC_TEXT(p->key),
	                BC_TEXT(csr_hex),
	                BC_TEXT(p->claims ? p->claims : "{}"),
	                BC_TEXT(p->detail ? p->detail : "{}"),
	                BC_INT(in->now_ms),
	                BC_INT(in->now_ms + p->pending_ttl_s * 1000)};
	if ((rc =
	         bc_tx_exec(tx,
	                    "INSERT INTO join_requests (id, tenant_id, pool_id, site_id, attestor, "
	                    "request_key, csr_sha256, claims, detail, state, created_at, "
	                    "expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', "
	                    "$10, $11)",
	                    q, 11, NULL)) != 0 ||
	    (rc = created_event(tx, p, id)) != 0)
		return rc;
	defer(out, id, p->retry_after_s);
	return 0;
}

int bc_join_request_place(bc_tx *tx, const struct bc_join_request_place *p,
                          const struct bc_join_input *in, const char *denied_reason,
                          struct bc_attest_outcome *out)
{
	char id[BC_ID_MAX], state[16], csr[65], csr_hex[65];
	struct bc_attest_result *r = &out->result;
	int64_t expires;
	bc_rows *rows = NULL;
	int rc;

	bc_param q[] = {BC_TEXT(p->attestor), BC_TEXT(p->key)};
	if ((rc = bc_tx_query(
	         tx,
	         "SELECT id, state, csr_sha256, expires_at, tenant_id, pool_id, site_id "
	         "FROM join_requests WHERE attestor = $1 AND request_key = $2 FOR UPDATE",
	         q, 2, &rows)) != 0)
		return rc;
	if ((rc = bc_rows_next(rows)) <= 0) {
		bc_rows_free(rows);
		return rc < 0 ? rc : new_request(tx, p, in, out);
	}
	snprintf(id, sizeof(id), "%s", bc_rows_text(rows, 0));
	snprintf(state, sizeof(state), "%s", bc_rows_text(rows, 1));
	snprintf(csr, sizeof(csr), "%s", bc_rows_text(rows, 2));
	expires = bc_rows_int(rows, 3);
	snprintf(r->tenant_id, BC_ID_MAX, "%s", bc_rows_text(rows, 4));
	snprintf(r->pool_id, BC_ID_MAX, "%s", bc_rows_text(rows, 5));
	snprintf(r->site_id, BC_ID_MAX, "%s", bc_rows_text(rows, 6));
	bc_rows_free(rows);
	snprintf(out->tenant_id, BC_ID_MAX, "%s", r->tenant_id);
	if (expires <= in->now_ms || strcmp(state, "used") == 0)
		return new_request(tx, p, in, out);
	if (strcmp(state, "denied") == 0) {
		bc_refuse(out, denied_reason);
		return 0;
	}
	bc_hex_encode_to(in->csr_sha256, 32, csr_hex);
	if (strcasecmp(csr, csr_hex) != 0 && p->renew_pending_csr &&
	    strcmp(state, "pending") == 0) {
		bc_param c[] = {BC_TEXT(id), BC_TEXT(csr_hex)};
		if ((rc = bc_tx_exec(tx, "UPDATE join_requests SET csr_sha256 = $2 WHERE id = $1",
		                     c, 2, NULL)) != 0)
			return rc;
		defer(out, id, p->retry_after_s);
		return 0;
	}
	if (strcasecmp(csr, csr_hex) != 0) {
		bc_refuse(out, BC_R_ENROLLMENT_CSR);
		return 0;
	}
	if (strcmp(state, "approved") != 0) {
		defer(out, id, p->retry_after_s);
		return 0;
	}
	bc_param u[] = {BC_TEXT(id)};
	if ((rc = bc_tx_exec(tx, "UPDATE join_requests SET state = 'used' WHERE id = $1", u, 1,
	                     NULL)) != 0)
		return rc;
	out->kind = BC_OUTCOME_RESULT;
	return 0;
}
