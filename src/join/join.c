/* JoinService/Join, top to bottom:
 *
 *   decode JoinRequest -> find the attestor -> check the CSR -> open the sealed token
 *   -> begin the transaction -> attestor verify -> policy (pool attestors, expect,
 *   reclaim, hardware key) -> issue the certificate -> write node, cert, events
 *   -> commit -> sign the response.
 *
 * Work that needs no database runs before the transaction. Every refusal answers the
 * same bytes; the reason goes to the security.join.refused event (written in its own
 * transaction after the join's rolled back), the log and on_refusal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/log.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "join/events.h"
#include "join/internal.h"
#include "join/reasons.h"
#include "join/rows.h"
#include "lib/utf8.h"

const char bc_connect_permission_denied[] =
    "{\"code\":\"permission_denied\",\"message\":\"access denied\"}";
static const char connect_invalid[] =
    "{\"code\":\"invalid_argument\",\"message\":\"the request is not a JoinRequest\"}";
static const char connect_unavailable[] =
    "{\"code\":\"unavailable\",\"message\":\"the control plane cannot reach its store; retry\"}";
static const char connect_internal[] = "{\"code\":\"internal\",\"message\":\"internal error\"}";

#define TOKEN_INFO      "bettercompute join token v1"
#define MAX_MACS        64
#define MAX_CLAIM_LEN   256
#define MAX_ATTESTOR_ID 32

static void answer_text(int status, const char *text, int *st, const char **ct, uint8_t **resp,
                        size_t *len)
{
	*st = status;
	*ct = "application/json";
	*len = strlen(text);
	*resp = malloc(*len);
	if (*resp)
		memcpy(*resp, text, *len);
	else
		*len = 0;
}

/* Bounded, printable, well-formed UTF-8: PostgreSQL refuses to store anything else,
 * which would turn a malformed claim into a failed transaction instead of a refusal. */
static int claim_ok(const char *s)
{
	if (s == NULL)
		return 1;
	size_t n = strnlen(s, MAX_CLAIM_LEN + 1), k;
	if (n > MAX_CLAIM_LEN)
		return 0;
	for (size_t i = 0; i < n; i += k) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
		if ((k = bc_utf8_seq_len((const uint8_t *)s + i, n - i)) == 0)
			return 0;
	}
	return 1;
}

/* The shape every attestor id has (registry.c): anything else names none. */
static int attestor_id_ok(const char *s)
{
	size_t n = strnlen(s, MAX_ATTESTOR_ID + 1);

	if (n == 0 || n > MAX_ATTESTOR_ID)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* Claims are not proof, but they land in rows and logs: bound their shape. */
static int claims_from_request(const Bettercompute__Join__V1__JoinRequest *rq, struct bc_claims *c)
{
	static const char *const none[1] = {NULL};
	const Bettercompute__Join__V1__HardwareClaims *h = rq->claims;

	memset(c, 0, sizeof(*c));
	c->macs = none;
	c->product_uuid = c->serial = c->hostname = c->arch = "";
	/* the agent's version is not a claim of the hardware, but lands in the node row */
	if (!claim_ok(rq->agent_version))
		return 0;
	if (h == NULL)
		return 1;
	if (h->n_macs > MAX_MACS)
		return 0;
	for (size_t i = 0; i < h->n_macs; i++)
		if (!claim_ok(h->macs[i]) || strlen(h->macs[i]) > 32)
			return 0;
	if (!claim_ok(h->product_uuid) || !claim_ok(h->serial) || !claim_ok(h->hostname) ||
	    !claim_ok(h->arch))
		return 0;
	c->macs = (const char *const *)h->macs;
	c->n_macs = h->n_macs;
	c->product_uuid = h->product_uuid;
	c->serial = h->serial;
	c->hostname = h->hostname;
	c->arch = h->arch;
	return 1;
}

static void refuse(struct bc_join_state *st, const char *reason, int policy)
{
	st->reason = reason;
	st->policy_reason = policy;
}

/* Writes the node's certificate row and the join's event and audit row. */
static int record_join(bc_tx *tx, struct bc_join_state *st, const char *serial, int64_t not_after,
                       int64_t generation)
{
	const struct bc_attest_result *r = &st->out.result;
	const char *stmts[1] = {r->node_key_uri};
	json_t *data = NULL;
	int rc;

	struct bc_cert_write cert = {
	    .serial = serial,
	    .node_id = st->node_id,
	    .generation = generation,
	    .der = st->cert_der,
	    .der_len = st->cert_len,
	    .not_before = st->now_ms,
	    .not_after = not_after,
	    .statements = stmts,
	    .n_statements = r->node_key_uri[0] ? 1 : 0,
	};
	if ((rc = bc_row_cert_insert(tx, &cert)) != 0)
		goto out;
	data = json_pack(
	    "{s:s, s:s, s:s, s:s, s:I, s:s, s:s?, s:s?, s:s?}", "nodeId", st->node_id, "attestor",
	    st->attestor->id, "role", r->role, "nodeKey", r->node_key_tpm ? "tpm" : "unattested",
	    "generation", (json_int_t)generation, "serial", serial, "poolId",
	    r->pool_id[0] ? r->pool_id : NULL, "siteId", r->site_id[0] ? r->site_id : NULL,
	    "tokenId", r->token_id[0] ? r->token_id : NULL);
	if (data == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	const char *type = st->reclaimed ? "node.reclaimed" : "node.joined";
	char actor[64];
	snprintf(actor, sizeof(actor), "join:%s", st->attestor->id);
	if ((rc = bc_event_publish(tx, r->tenant_id, type, st->node_id, data)) != 0)
		goto out;
	rc = bc_audit(tx, r->tenant_id, actor, type, st->node_id, data);
out:
	json_decref(data);
	return rc;
}

/* A node row for a new node, or the reclaimed node raised to its next generation with
 * every older certificate revoked. *generation receives the identity generation. */
static int write_node(bc_tx *tx, struct bc_join_state *st, const char *hwkey, int64_t *generation)
{
	const struct bc_attest_result *r = &st->out.result;
	int rc;

	struct bc_node_write n = {
	    .id = st->node_id,
	    .tenant_id = r->tenant_id,
	    .pool_id = r->pool_id,
	    .site_id = r->site_id,
	    .role = r->role,
	    .hardware_key = hwkey,
	    .claims = &st->in->claims,
	    .agent_version = st->in->agent_version,
	    .attestor = st->attestor->id,
	    .node_key_tpm = r->node_key_tpm,
	    .now_ms = st->now_ms,
	};
	/* a reclaim keeps the node's state, pool and site; the identity moves on */
	if (st->reclaimed)
		return bc_row_node_reclaim(tx, &n, generation);
	*generation = 1;
	rc = bc_row_node_insert(tx, &n);
	/* another join took this hardware key first */
	if (rc == BC_ERR_CONFLICT) {
		refuse(st, BC_R_RECLAIM, 1);
		rc = 0;
	}
	return rc;
}

static int write_binding(bc_tx *tx, struct bc_join_state *st)
{
	const struct bc_attest_result *r = &st->out.result;
	struct bc_binding_row b;
	int rc;

	if (r->binding_kind[0] == 0)
		return 0;
	rc = bc_row_binding_insert(tx, r->binding_kind, r->binding_key, st->node_id, st->now_ms);
	if (rc != BC_ERR_CONFLICT)
		return rc;
	/* Already bound: fine when it is this node. Policy saw no binding to another
	 * node, but on PostgreSQL (READ COMMITTED) a concurrent join of the same key may
	 * have committed one since: read it again, so that one key never admits two. */
	if ((rc = bc_row_binding_get(tx, r->binding_kind, r->binding_key, &b)) <= 0)
		return rc < 0 ? rc : BC_ERR_NOT_FOUND;
	if (strcmp(b.node_id, st->node_id) != 0) {
		refuse(st, BC_R_BOUND_ELSEWHERE, 1);
		snprintf(st->refusal_tenant, sizeof(st->refusal_tenant), "%s", r->tenant_id);
	}
	return 0;
}

static int issue(bc_tx *tx, struct bc_join_state *st, const char *hwkey)
{
	const struct bc_attest_result *r = &st->out.result;
	const char *stmts[1] = {r->node_key_uri};
	char serial[33];
	int64_t generation = 0, not_after = 0;
	int rc;

	if ((rc = write_node(tx, st, hwkey, &generation)) != 0 || st->reason)
		return rc;
	if ((rc = write_binding(tx, st)) != 0 || st->reason)
		return rc;
	struct bc_node_cert_req req = {
	    .node_id = st->node_id,
	    .role = r->role,
	    .pub = st->csr_key,
	    .statements = stmts,
	    .n_statements = r->node_key_uri[0] ? 1 : 0,
	    .not_before_ms = st->now_ms,
	    .ttl_ms = r->cert_ttl_ms,
	};
	if ((rc = bc_pki_issue_node_cert(st->svc->cfg.pki, &req, &st->cert_der, &st->cert_len,
	                                 serial, &not_after)) != 0)
		return rc;
	return record_join(tx, st, serial, not_after, generation);
}

static int join_tx(bc_tx *tx, void *arg)
{
	struct bc_join_state *st = arg;
	struct bc_join_input *in = (struct bc_join_input *)st->in;
	char hwkey[BC_HWKEY_MAX] = "";
	int rc;

	/* a replayed transaction starts from nothing */
	free(st->out.deferral.challenge);
	bc_freezero(st->cert_der, st->cert_len);
	st->cert_der = NULL;
	st->cert_len = 0;
	memset(&st->out, 0, sizeof(st->out));
	st->reason = NULL;
	st->policy_reason = 0;
	st->reclaimed = 0;
	st->node_id[0] = 0;
	st->refusal_tenant[0] = 0;
	st->now_ms = in->now_ms = bc_tx_now_ms(tx);

	if ((rc = st->attestor->verify((struct bc_attestor *)st->attestor, tx, in, &st->out)) != 0)
		return rc;
	switch (st->out.kind) {
	case BC_OUTCOME_REFUSE:
		refuse(st, st->out.reason ? st->out.reason : "attestor-refused", 0);
		return BC_ERR_DENIED;
	case BC_OUTCOME_DEFER:
		/* commit the attestor's rows (a pending request), issue and spend nothing */
		return 0;
	case BC_OUTCOME_RESULT: break;
	default: refuse(st, "attestor-no-outcome", 0); return BC_ERR_DENIED;
	}
	if (st->out.result.role[0] == 0)
		snprintf(st->out.result.role, sizeof(st->out.result.role), "%s", in->role);
	if ((rc = bc_join_policy(tx, st, st->node_id, &st->reclaimed, hwkey)) != 0)
		return rc;
	if (st->reason)
		return BC_ERR_DENIED;
	if ((rc = issue(tx, st, hwkey)) != 0)
		return rc;
	return st->reason ? BC_ERR_DENIED : 0;
}

struct refusal_ev {
	struct bc_join_state *st;
	const char *published;
};

static int refusal_tx(bc_tx *tx, void *arg)
{
	struct refusal_ev *ev = arg;
	struct bc_join_state *st = ev->st;
	const char *tenant = st->refusal_tenant[0] ? st->refusal_tenant : "root";
	json_t *data =
	    json_pack("{s:s, s:s, s:s?, s:s?}", "attestor", st->in->attestor, "reason",
	              ev->published, "tokenId", st->out.token_id[0] ? st->out.token_id : NULL,
	              "nodeId", st->out.node_id[0] ? st->out.node_id : NULL);
	int rc;

	if (data == NULL)
		return BC_ERR_NOMEM;
	rc = bc_event_publish(tx, tenant, "security.join.refused",
	                      st->out.node_id[0] ? st->out.node_id : NULL, data);
	json_decref(data);
	return rc;
}

/* The refusal goes to the operator: an event in the owner's tenant, a log line and
 * on_refusal. Never to the machine. */
static void report_refusal(struct bc_join_service *s, struct bc_join_state *st)
{
	char published[96];
	struct refusal_ev ev = {st, published};

	if (st->refusal_tenant[0] == 0 && st->out.tenant_id[0])
		snprintf(st->refusal_tenant, sizeof(st->refusal_tenant), "%s", st->out.tenant_id);
	snprintf(published, sizeof(published), "%s%s", st->policy_reason ? "join:" : "",
	         st->reason);
	if (bc_store_run(s->cfg.store, BC_TX_WRITE, refusal_tx, &ev) != 0)
		bc_log(BC_LOG_ERROR, "refusal event not recorded", "reason", published, "error",
		       bc_store_errmsg(), NULL);
	bc_log(BC_LOG_WARN, "join refused", "attestor", st->in->attestor, "reason", published,
	       "tokenId", st->out.token_id, "nodeId", st->out.node_id, "tenantId",
	       st->refusal_tenant[0] ? st->refusal_tenant : "root", NULL);
	if (s->cfg.on_refusal) {
		struct bc_refusal r = {
		    .attestor = st->in->attestor,
		    .reason = published,
		    .token_id = st->out.token_id[0] ? st->out.token_id : NULL,
		    .node_id = st->out.node_id[0] ? st->out.node_id : NULL,
		    .tenant_id = st->refusal_tenant[0] ? st->refusal_tenant : "root",
		};
		s->cfg.on_refusal(s->cfg.on_refusal_ctx, &r);
	}
}

/* Checks that need no database: the attestor, the role, the CSR, the claims, the token. */
static const char *precheck(struct bc_join_service *s,
                            const Bettercompute__Join__V1__JoinRequest *rq,
                            struct bc_join_state *st, struct bc_join_input *in, uint8_t **token,
                            size_t *token_len)
{
	uint8_t *spki = NULL;
	size_t spki_len;
	int ok = 0;

	if ((st->attestor = bc_join_find(s, in->attestor)) == NULL)
		return BC_R_ATTESTOR_UNKNOWN;
	for (size_t i = 0; i < st->attestor->n_roles; i++)
		ok |= strcmp(st->attestor->roles[i], in->role) == 0;
	if (!ok || !bc_role_valid(in->role) || strcmp(in->role, BC_ROLE_NODE_TENANT) == 0)
		return BC_R_ROLE_NOT_ADMITTED;
	if (bc_csr_check(rq->csr.data, rq->csr.len, &st->csr_key) != 0)
		return BC_R_CSR_INVALID;
	if (bc_sha256(rq->csr.data, rq->csr.len, in->csr_sha256) != 0 ||
	    bc_key_spki(st->csr_key, &spki, &spki_len) != 0 ||
	    bc_sha256(spki, spki_len, in->csr_spki_sha256) != 0) {
		free(spki);
		return BC_R_CSR_INVALID;
	}
	free(spki);
	if (!claims_from_request(rq, &in->claims))
		return BC_R_CLAIMS_INVALID;
	if (rq->sealed_token.len > 0) {
		uint8_t *pt = NULL;
		size_t pt_len = 0;
		if (bc_hpke_open(s->cfg.pki->join_encryption, TOKEN_INFO, strlen(TOKEN_INFO),
		                 in->csr_sha256, 32, rq->sealed_token.data, rq->sealed_token.len,
		                 &pt, &pt_len) != 0)
			return BC_R_TOKEN_UNREADABLE;
		/* a token is text: an embedded NUL would make two tokens look alike */
		if (memchr(pt, 0, pt_len) != NULL || pt_len > 512 ||
		    (*token = malloc(pt_len + 1)) == NULL) {
			bc_freezero(pt, pt_len);
			return BC_R_TOKEN_UNREADABLE;
		}
		memcpy(*token, pt, pt_len);
		(*token)[pt_len] = 0;
		*token_len = pt_len;
		bc_freezero(pt, pt_len);
		in->token = (const char *)*token;
	}
	return NULL;
}

void bc_join_handle(struct bc_join_service *s, const uint8_t *body, size_t len, int *status,
                    const char **ct, uint8_t **resp, size_t *resp_len)
{
	Bettercompute__Join__V1__JoinRequest *rq;
	struct bc_join_state st;
	struct bc_join_input in;
	uint8_t *token = NULL;
	size_t token_len = 0;
	const char *why;
	int rc;

	*resp = NULL;
	*resp_len = 0;
	memset(&st, 0, sizeof(st));
	memset(&in, 0, sizeof(in));
	if ((rq = bettercompute__join__v1__join_request__unpack(NULL, len, body)) == NULL) {
		answer_text(400, connect_invalid, status, ct, resp, resp_len);
		return;
	}
	in.attestor = rq->attestor[0] ? rq->attestor : "join-token";
	/* the requester's bytes, of any length or encoding, go no further than a refusal
	 * (attestor-unknown): not into the event, the log line or on_refusal's JSON */
	if (!attestor_id_ok(in.attestor))
		in.attestor = "(invalid)";
	in.role = rq->role[0] ? rq->role : BC_ROLE_NODE;
	in.attestation = rq->attestation.data;
	in.attestation_len = rq->attestation.len;
	in.csr = rq->csr.data;
	in.csr_len = rq->csr.len;
	in.agent_version = rq->agent_version;
	in.challenge_key = s->cfg.pki->challenge_key;
	in.trust_domain = s->cfg.pki->trust_domain;
	if (bc_random(&in.request_nonce, sizeof(in.request_nonce)) != 0) {
		answer_text(500, connect_internal, status, ct, resp, resp_len);
		bettercompute__join__v1__join_request__free_unpacked(rq, NULL);
		return;
	}
	st.in = &in;
	st.svc = s;

	if ((why = precheck(s, rq, &st, &in, &token, &token_len)) != NULL) {
		refuse(&st, why, 0);
		rc = BC_ERR_DENIED;
	} else {
		rc = bc_store_run(s->cfg.store, BC_TX_WRITE, join_tx, &st);
	}
	if (rc == BC_ERR_DENIED && st.reason) {
		report_refusal(s, &st);
		answer_text(403, bc_connect_permission_denied, status, ct, resp, resp_len);
	} else if (rc != 0) {
		bc_log(BC_LOG_ERROR, "join failed", "attestor", in.attestor, "error",
		       bc_err_str(rc), "detail", bc_store_errmsg(), NULL);
		answer_text(rc == BC_ERR_INTERNAL || rc == BC_ERR_CRYPTO ? 500 : 503,
		            rc == BC_ERR_INTERNAL || rc == BC_ERR_CRYPTO ? connect_internal
		                                                         : connect_unavailable,
		            status, ct, resp, resp_len);
	} else if (bc_join_sign_response(s, &st, resp, resp_len) != 0) {
		answer_text(500, connect_internal, status, ct, resp, resp_len);
	} else {
		*status = 200;
		*ct = "application/proto";
		if (st.out.kind == BC_OUTCOME_DEFER)
			bc_log(BC_LOG_INFO, "join deferred", "attestor", in.attestor, "kind",
			       st.out.deferral.kind == BC_DEFER_APPROVAL ? "approval" : "challenge",
			       "requestId", st.out.deferral.request_id, NULL);
		else
			bc_log(BC_LOG_INFO, st.reclaimed ? "node reclaimed" : "node joined",
			       "nodeId", st.node_id, "attestor", in.attestor, "tenantId",
			       st.out.result.tenant_id, NULL);
	}
	bc_freezero(token, token_len + 1);
	free(st.out.deferral.challenge);
	bc_freezero(st.cert_der, st.cert_len);
	EVP_PKEY_free(st.csr_key);
	bettercompute__join__v1__join_request__free_unpacked(rq, NULL);
}
