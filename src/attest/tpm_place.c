/* Where a proven EK joins, keyed by sha256(EK): a resolve entry that names a node,
 * else the node the EK is bound to (a reclaim), else a resolve entry's tenant, pool
 * and site, else operator enrollment through a join request, else unknown-ek.
 * JoinService then binds the EK to the node (bound-elsewhere when a named node is
 * not the bound one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attest/tpm_internal.h"
#include "bc/codec.h"
#include "bc/json.h"
#include "bc/reasons.h"
#include "bc/wire.h"
#include "join/rows.h"

static const struct tpm_place_entry *find_entry(const struct tpm_cfg *c, const struct tpm_proven *p)
{
	for (size_t i = 0; i < c->n_resolve; i++)
		if (strcmp(c->resolve[i].ek_sha256, p->ek_hex) == 0)
			return &c->resolve[i];
	if (p->issuer == NULL)
		return NULL;
	for (size_t i = 0; i < c->n_resolve; i++) {
		const struct tpm_place_entry *e = &c->resolve[i];
		if (e->issuer && strcmp(e->issuer, p->issuer) == 0 &&
		    strcmp(e->serial, p->serial) == 0)
			return e;
	}
	return NULL;
}

static int bound_node(bc_tx *tx, const char *ek_hex, char out[BC_ID_MAX])
{
	struct bc_binding_row b;
	int rc;

	out[0] = 0;
	if ((rc = bc_row_binding_get(tx, TPM_BINDING_KIND, ek_hex, &b)) == 1)
		snprintf(out, BC_ID_MAX, "%s", b.node_id);
	return rc < 0 ? rc : 0;
}

static void result_where(struct bc_attest_outcome *out, const char *tenant, const char *pool,
                         const char *site)
{
	out->kind = BC_OUTCOME_RESULT;
	snprintf(out->result.tenant_id, BC_ID_MAX, "%s", tenant);
	snprintf(out->result.pool_id, BC_ID_MAX, "%s", pool);
	snprintf(out->result.site_id, BC_ID_MAX, "%s", site);
}

static void defer(struct bc_attest_outcome *out, const char *id, const struct tpm_cfg *c)
{
	out->kind = BC_OUTCOME_DEFER;
	out->deferral.kind = BC_DEFER_APPROVAL;
	snprintf(out->deferral.request_id, BC_ID_MAX, "%s", id);
	out->deferral.retry_after_seconds = (uint32_t)c->retry_after_s;
}

/* A new pending request, replacing an expired or used one. */
static int new_request(bc_tx *tx, const struct tpm_cfg *c, const struct bc_join_input *in,
                       const struct tpm_proven *p, struct bc_attest_outcome *out)
{
	char id[BC_ID_MAX], csr_hex[65], ak_hex[2 * BC_TPM_NAME_MAX + 1], *detail;
	json_t *d;
	int rc;

	bc_hex_encode_to(in->csr_sha256, 32, csr_hex);
	bc_hex_encode_to(p->ak_name, p->ak_name_len, ak_hex);
	bc_param del[] = {BC_TEXT("tpm"), BC_TEXT(p->ek_hex)};
	if ((rc = bc_tx_exec(tx,
	                     "DELETE FROM join_requests WHERE attestor = $1 AND request_key = $2",
	                     del, 2, NULL)) != 0)
		return rc;
	if ((rc = bc_new_id("jr", id, sizeof(id))) != 0)
		return rc;
	d = json_pack("{s:s, s:s, s:s?, s:s?, s:b}", "ekSha256", p->ek_hex, "akName", ak_hex,
	              "ekIssuer", p->issuer, "ekSerial", p->issuer ? p->serial : NULL,
	              "nodeKeyCertified", p->certified);
	detail = d ? bc_json_dump(d) : NULL;
	json_decref(d);
	if (detail == NULL)
		return BC_ERR_NOMEM;
	bc_param q[] = {BC_TEXT(id),
	                BC_TEXT(c->enroll_tenant),
	                BC_TEXT(c->enroll_pool[0] ? c->enroll_pool : NULL),
	                BC_TEXT(c->enroll_site[0] ? c->enroll_site : NULL),
	                BC_TEXT("tpm"),
	                BC_TEXT(p->ek_hex),
	                BC_TEXT(csr_hex),
	                BC_TEXT(detail),
	                BC_INT(in->now_ms),
	                BC_INT(in->now_ms + c->pending_ttl_s * 1000)};
	rc = bc_tx_exec(tx,
	                "INSERT INTO join_requests (id, tenant_id, pool_id, site_id, attestor, "
	                "request_key, csr_sha256, detail, state, created_at, expires_at) VALUES "
	                "($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10)",
	                q, 10, NULL);
	free(detail);
	if (rc == 0)
		defer(out, id, c);
	return rc;
}

/* The EK's join request: approved admits once (it becomes used), pending waits,
 * denied refuses; an expired or used one is replaced by a new pending request. */
static int enrollment(bc_tx *tx, const struct tpm_cfg *c, const struct bc_join_input *in,
                      const struct tpm_proven *p, struct bc_attest_outcome *out)
{
	char id[BC_ID_MAX], state[16], csr[65], csr_hex[65], tenant[BC_ID_MAX], pool[BC_ID_MAX],
	    site[BC_ID_MAX];
	int64_t expires;
	bc_rows *rows = NULL;
	int rc;

	bc_param q[] = {BC_TEXT("tpm"), BC_TEXT(p->ek_hex)};
	if ((rc = bc_tx_query(
	         tx,
	         "SELECT id, state, csr_sha256, expires_at, tenant_id, pool_id, site_id "
	         "FROM join_requests WHERE attestor = $1 AND request_key = $2 FOR UPDATE",
	         q, 2, &rows)) != 0)
		return rc;
	if ((rc = bc_rows_next(rows)) <= 0) {
		bc_rows_free(rows);
		return rc < 0 ? rc : new_request(tx, c, in, p, out);
	}
	snprintf(id, sizeof(id), "%s", bc_rows_text(rows, 0));
	snprintf(state, sizeof(state), "%s", bc_rows_text(rows, 1));
	snprintf(csr, sizeof(csr), "%s", bc_rows_text(rows, 2));
	expires = bc_rows_int(rows, 3);
	snprintf(tenant, sizeof(tenant), "%s", bc_rows_text(rows, 4));
	snprintf(pool, sizeof(pool), "%s", bc_rows_text(rows, 5));
	snprintf(site, sizeof(site), "%s", bc_rows_text(rows, 6));
	bc_rows_free(rows);
	snprintf(out->tenant_id, BC_ID_MAX, "%s", tenant);
	if (expires <= in->now_ms || strcmp(state, "used") == 0)
		return new_request(tx, c, in, p, out);
	if (strcmp(state, "denied") == 0) {
		bc_refuse(out, BC_R_ENROLLMENT_DENIED);
		return 0;
	}
	bc_hex_encode_to(in->csr_sha256, 32, csr_hex);
	if (strcasecmp(csr, csr_hex) != 0) {
		bc_refuse(out, BC_R_ENROLLMENT_CSR);
		return 0;
	}
	if (strcmp(state, "approved") != 0) {
		defer(out, id, c);
		return 0;
	}
	bc_param u[] = {BC_TEXT(id)};
	if ((rc = bc_tx_exec(tx, "UPDATE join_requests SET state = 'used' WHERE id = $1", u, 1,
	                     NULL)) != 0)
		return rc;
	result_where(out, tenant, pool, site);
	return 0;
}

int tpm_place(bc_tx *tx, const struct tpm_cfg *c, const struct bc_join_input *in,
              const struct tpm_proven *p, struct bc_attest_outcome *out)
{
	const struct tpm_place_entry *e = find_entry(c, p);
	char bound[BC_ID_MAX];
	int rc;

	if ((rc = bound_node(tx, p->ek_hex, bound)) != 0)
		return rc;
	if (e && e->node[0]) {
		/* JoinService refuses it (bound-elsewhere) when the EK is bound to another */
		out->kind = BC_OUTCOME_RESULT;
		snprintf(out->result.node_id, BC_ID_MAX, "%s", e->node);
		snprintf(out->result.tenant_id, BC_ID_MAX, "%s", e->tenant);
	} else if (bound[0]) {
		out->kind = BC_OUTCOME_RESULT;
		snprintf(out->result.node_id, BC_ID_MAX, "%s", bound);
	} else if (e) {
		result_where(out, e->tenant, e->pool, e->site);
	} else if (c->enroll_tenant[0]) {
		if ((rc = enrollment(tx, c, in, p, out)) != 0 || out->kind != BC_OUTCOME_RESULT)
			return rc;
	} else {
		bc_refuse(out, BC_R_UNKNOWN_EK);
		return 0;
	}
	snprintf(out->node_id, BC_ID_MAX, "%s", out->result.node_id);
	snprintf(out->result.binding_kind, sizeof(out->result.binding_kind), "%s",
	         TPM_BINDING_KIND);
	snprintf(out->result.binding_key, sizeof(out->result.binding_key), "%s", p->ek_hex);
	snprintf(out->result.role, sizeof(out->result.role), "%s", in->role);
	if (p->certified) {
		char hex[2 * BC_TPM_NAME_MAX + 1];
		bc_hex_encode_to(p->ak_name, p->ak_name_len, hex);
		out->result.node_key_tpm = 1;
		snprintf(out->result.node_key_uri, sizeof(out->result.node_key_uri), "%s%s",
		         BC_WIRE_TPM_AK_URN_SHA256, hex);
	}
	return 0;
}
