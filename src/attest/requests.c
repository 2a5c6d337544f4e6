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
#include "rows/join_requests.h"

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
	if ((rc = bc_new_id("jr", id, sizeof(id))) != 0)
		return rc;
	struct bc_join_request_write w = {
	    .id = id,
	    .tenant_id = p->tenant,
	    .pool_id = p->pool,
	    .site_id = p->site,
	    .attestor = p->attestor,
	    .request_key = p->key,
	    .csr_sha256 = csr_hex,
	    .claims = p->claims ? p->claims : "{}",
	    .detail = p->detail ? p->detail : "{}",
	    .now_ms = in->now_ms,
	    .expires_at = in->now_ms + p->pending_ttl_s * 1000,
	};
	if ((rc = bc_row_join_request_replace(tx, &w)) != 0 || (rc = created_event(tx, p, id)) != 0)
		return rc;
	defer(out, id, p->retry_after_s);
	return 0;
}

int bc_join_request_place(bc_tx *tx, const struct bc_join_request_place *p,
                          const struct bc_join_input *in, const char *denied_reason,
                          struct bc_attest_outcome *out, const char **reason)
{
	struct bc_join_request_row jr;
	const char *id = jr.id, *state = jr.state, *csr = jr.csr_sha256;
	char csr_hex[65];
	struct bc_attest_result *r = &out->result;
	int rc;

	*reason = NULL;
	/* the request is the tenant's own: another tenant's for the same key is never
	   found here, so it neither defers nor refuses this machine */
	if ((rc = bc_row_join_request_lock(tx, p->tenant, p->attestor, p->key,
	                                   p->claims ? p->claims : "{}", &jr)) <= 0)
		return rc < 0 ? rc : new_request(tx, p, in, out);
	snprintf(r->tenant_id, BC_ID_MAX, "%s", jr.tenant_id);
	snprintf(r->pool_id, BC_ID_MAX, "%s", jr.pool_id);
	snprintf(r->site_id, BC_ID_MAX, "%s", jr.site_id);
	snprintf(out->tenant_id, BC_ID_MAX, "%s", r->tenant_id);
	if (jr.expires_at <= in->now_ms || strcmp(state, "used") == 0)
		return new_request(tx, p, in, out);
	if (strcmp(state, "denied") == 0) {
		*reason = denied_reason;
		return 0;
	}
	/* the operator decides on the first CSR and claims: another CSR, or other claims,
	   never take the request over (an approval admits the machine it showed) */
	bc_hex_encode_to(in->csr_sha256, 32, csr_hex);
	if (strcasecmp(csr, csr_hex) != 0 || !jr.same_claims) {
		*reason = BC_R_ENROLLMENT_CSR;
		return 0;
	}
	if (strcmp(state, "approved") != 0) {
		defer(out, id, p->retry_after_s);
		return 0;
	}
	if ((rc = bc_row_join_request_use(tx, id)) != 0)
		return rc;
	out->kind = BC_OUTCOME_RESULT;
	return 0;
}
