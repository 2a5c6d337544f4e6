/* Where a proven EK joins, keyed by sha256(EK): a resolve entry that names a node,
 * else the node the EK is bound to (a reclaim), else a resolve entry's tenant, pool
 * and site, else operator enrollment through a join request, else unknown-ek.
 * JoinService then binds the EK to the node (bound-elsewhere when a named node is
 * not the bound one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attest/requests.h"
#include "attest/tpm_internal.h"
#include "bc/codec.h"
#include "bc/json.h"
#include "bc/reasons.h"
#include "bc/wire.h"
#include "rows/bindings.h"

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

/* The EK's join request (requests.c), placed where [attestors.tpm] enrolls; a refusal
 * in *reason. */
static int enrollment(bc_tx *tx, const struct tpm_cfg *c, const struct bc_join_input *in,
                      const struct tpm_proven *p, struct bc_attest_outcome *out,
                      const char **reason)
{
	char ak_hex[2 * BC_TPM_NAME_MAX + 1], *detail;
	json_t *d;
	int rc;

	bc_hex_encode_to(p->ak_name, p->ak_name_len, ak_hex);
	d = json_pack("{s:s, s:s, s:s?, s:s?, s:b}", "ekSha256", p->ek_hex, "akName", ak_hex,
	              "ekIssuer", p->issuer, "ekSerial", p->issuer ? p->serial : NULL,
	              "nodeKeyCertified", p->certified);
	detail = d ? bc_json_dump(d) : NULL;
	json_decref(d);
	if (detail == NULL)
		return BC_ERR_NOMEM;
	struct bc_join_request_place jr = {.attestor = BC_WIRE_ATTESTOR_TPM,
	                                   .key = p->ek_hex,
	                                   .tenant = c->enroll_tenant,
	                                   .pool = c->enroll_pool,
	                                   .site = c->enroll_site,
	                                   .detail = detail,
	                                   .pending_ttl_s = c->pending_ttl_s,
	                                   .retry_after_s = (uint32_t)c->retry_after_s};
	rc = bc_join_request_place(tx, &jr, in, BC_R_ENROLLMENT_DENIED, out, reason);
	free(detail);
	return rc;
}

int tpm_place(bc_tx *tx, const struct tpm_cfg *c, const struct bc_join_input *in,
              const struct tpm_proven *p, struct bc_attest_outcome *out, const char **reason)
{
	const struct tpm_place_entry *e = find_entry(c, p);
	char bound[BC_ID_MAX];
	int rc;

	*reason = NULL;
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
		/* approved: the result holds the request's tenant, pool and site */
		if ((rc = enrollment(tx, c, in, p, out, reason)) != 0 || *reason ||
		    out->kind != BC_OUTCOME_RESULT)
			return rc;
	} else {
		*reason = BC_R_UNKNOWN_EK;
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
