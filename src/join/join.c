/* JoinService/Join, top to bottom:
 *
 *   decode JoinRequest -> find the attestor -> check the CSR -> open the sealed token
 *   -> the attestor's check -> begin the transaction -> the attestor's verify
 *   -> policy (pool attestors, expect, reclaim, hardware key) -> issue the certificate
 *   -> write node, cert, events -> commit -> sign the response.
 *
 * Work that needs no database runs before the transaction. Every refusal is the same
 * BC_RPC_REFUSED; the reason goes to the security.join.refused event (written in its
 * own transaction after the join's rolled back), the log and on_refusal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/clock.h"
#include "bc/log.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "join/events.h"
#include "join/internal.h"
#include "join/refusal.h"
#include "bc/reasons.h"
#include "rows/bindings.h"
#include "rows/certs.h"
#include "rows/inventory.h"
#include "rows/nodes.h"
#include "lib/utf8.h"

#define MAX_CLAIM_LEN   256
#define MAX_ATTESTOR_ID 32

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
	if (h->n_macs > BC_WIRE_MACS_MAX)
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

void bc_join_decision_reset(struct bc_join_decision *d)
{
	free(d->out.deferral.challenge);
	bc_freezero(d->cert_der, d->cert_len);
	memset(d, 0, sizeof(*d));
}

/* Writes the node's certificate row and the join's event and audit row. */
static int record_join(bc_tx *tx, struct bc_join_state *st, const char *serial, int64_t not_after,
                       int64_t generation)
{
	const struct bc_attest_result *r = &st->d.out.result;
	const char *stmts[1] = {r->node_key_uri};
	json_t *data = NULL;
	int rc;

	struct bc_cert_write cert = {
	    .serial = serial,
	    .node_id = st->d.node_id,
	    .generation = generation,
	    .der = st->d.cert_der,
	    .der_len = st->d.cert_len,
	    .not_before = st->d.now_ms,
	    .not_after = not_after,
	    .statements = stmts,
	    .n_statements = r->node_key_uri[0] ? 1 : 0,
	    .point = st->csr_point,
	    .role = r->role,
	    .node_row_set = 1, /* write_node made it the node's current one */
	};
	if ((rc = bc_row_cert_insert(tx, &cert)) != 0)
		goto out;
	/* the command kinds a relying party must hold the node to (kinds_ok checked them) */
	const char *kinds = st->d.out.allowed_kinds_json[0] ? st->d.out.allowed_kinds_json : "[]";
	data = json_pack(
	    "{s:s, s:s, s:s, s:s, s:I, s:s, s:s?, s:s?, s:s?, s:o}", "nodeId", st->d.node_id,
	    "attestor", st->attestor->id, "role", r->role, "nodeKey",
	    r->node_key_tpm ? "tpm" : "unattested", "generation", (json_int_t)generation, "serial",
	    serial, "poolId", r->pool_id[0] ? r->pool_id : NULL, "siteId",
	    r->site_id[0] ? r->site_id : NULL, "tokenId", r->token_id[0] ? r->token_id : NULL,
	    "allowedKinds", json_loads(kinds, JSON_REJECT_DUPLICATES, NULL));
	if (data == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	const char *type = st->d.reclaimed ? "node.reclaimed" : "node.joined";
	char actor[64];
	snprintf(actor, sizeof(actor), "join:%s", st->attestor->id);
	if ((rc = bc_event_publish(tx, r->tenant_id, type, st->d.node_id, data)) != 0)
		goto out;
	rc = bc_audit(tx, r->tenant_id, actor, type, st->d.node_id, data);
out:
	json_decref(data);
	return rc;
}

/* The attestor's allowed kinds, at the seam: NUL-terminated inside their buffer, and
 * "" or a JSON array of strings. Anything else is the attestor's bug. */
static int kinds_ok(const struct bc_attest_outcome *out)
{
	const char *k = out->allowed_kinds_json;
	json_t *v;
	int ok = 1;

	if (memchr(k, 0, sizeof(out->allowed_kinds_json)) == NULL)
		return 0;
	if (k[0] == 0)
		return 1;
	if ((v = json_loads(k, JSON_REJECT_DUPLICATES, NULL)) == NULL || !json_is_array(v))
		ok = 0;
	for (size_t i = 0; ok && i < json_array_size(v); i++)
		ok = json_is_string(json_array_get(v, i));
	json_decref(v);
	return ok;
}

/* A node row for a new node, or the reclaimed node raised to its next generation with
 * every older certificate revoked. *generation receives the identity generation. */
static int write_node(bc_tx *tx, struct bc_join_state *st, const char *serial, int64_t not_after,
                      int64_t *generation, const char **reason)
{
	const struct bc_attest_result *r = &st->d.out.result;
	int rc;

	if (!kinds_ok(&st->d.out)) {
		bc_log(BC_LOG_ERROR,
		       "attestor result refused: allowed kinds are not a JSON array of "
		       "strings",
		       "attestor", st->attestor->id, NULL);
		return BC_ERR_INTERNAL;
	}
	struct bc_node_write n = {
	    .id = st->d.node_id,
	    .tenant_id = r->tenant_id,
	    .pool_id = r->pool_id,
	    .site_id = r->site_id,
	    .role = r->role,
	    .hardware_key = st->d.hwkey,
	    .hardware_key_claimed = st->d.hwkey_claimed,
	    .claims = &st->in->claims,
	    .agent_version = st->in->agent_version,
	    .attestor = st->attestor->id,
	    .node_key_tpm = r->node_key_tpm,
	    .allowed_kinds = st->d.out.allowed_kinds_json,
	    .now_ms = st->d.now_ms,
	    .cert_serial = serial,
	    .cert_not_after = not_after,
	};
	/* a reclaim keeps the node's state, pool and site; the identity moves on */
	if (st->d.reclaimed) {
		if ((rc = bc_row_node_reclaim(tx, &n, generation)) != 0 || !st->d.role_change)
			return rc;
		return bc_row_node_set_role(tx, n.id, r->role, n.now_ms);
	}
	*generation = 1;
	rc = bc_row_node_insert(tx, &n);
	/* another join took this hardware key first */
	if (rc == BC_ERR_CONFLICT) {
		*reason = BC_R_RECLAIM;
		rc = 0;
	}
	return rc;
}

static int write_binding(bc_tx *tx, struct bc_join_state *st, const char **reason)
{
	const struct bc_attest_result *r = &st->d.out.result;
	struct bc_binding_row b;
	int rc;

	if (r->binding_kind[0] == 0)
		return 0;
	rc =
	    bc_row_binding_insert(tx, r->binding_kind, r->binding_key, st->d.node_id, st->d.now_ms);
	if (rc != BC_ERR_CONFLICT)
		return rc;
	/* Already bound: fine when it is this node. Policy saw no binding to another
	 * node, but on PostgreSQL (READ COMMITTED) a concurrent join of the same key may
	 * have committed one since: read it again, so that one key never admits two. */
	if ((rc = bc_row_binding_get(tx, r->binding_kind, r->binding_key, &b)) <= 0)
		return rc < 0 ? rc : BC_ERR_NOT_FOUND;
	if (strcmp(b.node_id, st->d.node_id) != 0) {
		*reason = BC_R_BOUND_ELSEWHERE;
		snprintf(st->d.refusal_tenant, sizeof(st->d.refusal_tenant), "%s", r->tenant_id);
	}
	return 0;
}

/* The certificate is minted first so that the node's row is written with it as its
 * current one, in the statement that writes the node (rows/nodes.h). */
static int issue(bc_tx *tx, struct bc_join_state *st, const char **reason)
{
	const struct bc_attest_result *r = &st->d.out.result;
	const char *stmts[1] = {r->node_key_uri};
	char serial[33];
	int64_t generation = 0, not_after = 0;
	int rc;

	struct bc_node_cert_req req = {
	    .node_id = st->d.node_id,
	    .role = r->role,
	    .point = st->csr_point,
	    .statements = stmts,
	    .n_statements = r->node_key_uri[0] ? 1 : 0,
	    .not_before_ms = st->d.now_ms,
	    .ttl_ms = r->cert_ttl_ms,
	};
	if ((rc = bc_pki_issue_node_cert_by(st->svc->cfg.pki, st->keys.set, &req, &st->d.cert_der,
	                                    &st->d.cert_len, serial, &not_after)) != 0)
		return rc;
	if ((rc = write_node(tx, st, serial, not_after, &generation, reason)) != 0 || *reason)
		return rc;
	if ((rc = write_binding(tx, st, reason)) != 0 || *reason)
		return rc;
	/* what the machine claimed at this join, beside the node's history */
	/* a node made by this join has no older record to prune */
	if ((rc = bc_row_inventory_insert(tx, st->d.node_id, &st->in->claims, st->d.now_ms,
	                                  st->d.reclaimed)) != 0)
		return rc;
	return record_join(tx, st, serial, not_after, generation);
}

/* What the attestor decided, as JoinService goes on with it: *reason stays NULL for
 * a result or a deferral. */
static void outcome(struct bc_join_state *st, const char **reason)
{
	struct bc_attest_outcome *out = &st->d.out;

	switch (out->kind) {
	case BC_OUTCOME_REFUSE: *reason = out->reason ? out->reason : BC_R_ATTESTOR_REFUSED; break;
	case BC_OUTCOME_DEFER: break;
	case BC_OUTCOME_RESULT:
		if (out->result.role[0] == 0)
			snprintf(out->result.role, sizeof(out->result.role), "%s", st->in->role);
		break;
	case BC_OUTCOME_NONE:
	default: *reason = BC_R_ATTESTOR_NO_OUTCOME; break;
	}
}

static int join_steps(bc_tx *tx, struct bc_join_state *st, const char **reason)
{
	struct bc_join_input *in = (struct bc_join_input *)st->in;
	struct bc_attestor *a = (struct bc_attestor *)st->attestor;
	int rc;

	st->d.now_ms = in->now_ms = bc_tx_now_ms(tx);
	if ((rc = a->verify(a, tx, in, &st->d.out)) != 0)
		return rc;
	outcome(st, reason);
	/* a deferral commits the attestor's rows (a pending request), issues and spends
	 * nothing */
	if (*reason || st->d.out.kind == BC_OUTCOME_DEFER)
		return 0;
	if ((rc = bc_join_policy(tx, st, reason)) != 0 || *reason)
		return rc;
	return issue(tx, st, reason);
}

static int join_tx(bc_tx *tx, void *arg)
{
	struct bc_join_state *st = arg;
	const char *reason = NULL;
	int rc;

	/* a replayed transaction starts from nothing */
	bc_join_decision_reset(&st->d);
	if ((rc = join_steps(tx, st, &reason)) != 0)
		return rc;
	if (reason == NULL)
		return 0;
	st->d.reason = reason;
	return BC_ERR_DENIED;
}

/* A refusal that names no token, node or tenant: no credential backs it (an attestor
 * names a token only once its secret matched, a node only once its proof verified). */
static int refusal_backed(const struct bc_join_state *st)
{
	const struct bc_attest_outcome *out = &st->d.out;

	return st->d.refusal_tenant[0] || out->tenant_id[0] || out->token_id[0] || out->node_id[0];
}

/* The refusal goes to the operator (join/refusal.h), never to the machine. */
static void report_refusal(struct bc_join_service *s, struct bc_join_state *st)
{
	const struct bc_attest_outcome *out = &st->d.out;
	struct bc_refusal_note n = {
	    .kind = BC_REFUSAL_JOIN,
	    .attestor = st->in->attestor,
	    .reason = st->d.reason,
	    .backed = refusal_backed(st),
	    .tenant_id = st->d.refusal_tenant[0] ? st->d.refusal_tenant : out->tenant_id,
	    .token_id = out->token_id,
	    .node_id = st->d.refusal_node[0] ? st->d.refusal_node : out->node_id,
	};

	bc_refusal_publish(s, &n);
}

static int csr_hashes(const Bettercompute__Join__V1__JoinRequest *rq, struct bc_join_state *st,
                      struct bc_join_input *in)
{
	int rc = bc_sha256(rq->csr.data, rq->csr.len, in->csr_sha256);

	return rc != 0 ? rc : bc_p256_spki_sha256(st->csr_point, in->csr_spki_sha256);
}

/* The sealed token opened with the request's encryption keys, tried in the set's order
 * (bc_node_cas_join_openers: the current key first, then the older active and the next
 * ones; never a retired key): a token carries no key id (DESIGN.md: enc || ciphertext),
 * and only the right key's AEAD tag verifies. */
static int open_sealed(const struct bc_join_keys *k, const struct bc_join_input *in,
                       const ProtobufCBinaryData *sealed, uint8_t **pt, size_t *pt_len)
{
	const struct bc_join_key *keys[BC_JOIN_SET_MAX];
	size_t n = bc_node_cas_join_openers(k->join, keys);
	int rc = BC_ERR_VERIFY;

	for (size_t i = 0; i < n && rc != 0 && rc != BC_ERR_NOMEM; i++)
		rc = bc_hpke_open_as(keys[i]->key, keys[i]->point, BC_WIRE_TOKEN_INFO,
		                     strlen(BC_WIRE_TOKEN_INFO), in->csr_sha256, 32, sealed->data,
		                     sealed->len, pt, pt_len);
	return rc;
}

/* The sealed token, opened: text of at most BC_WIRE_TOKEN_MAX bytes without NUL. */
static int open_token(const struct bc_join_state *st,
                      const Bettercompute__Join__V1__JoinRequest *rq, struct bc_join_input *in,
                      char **token, size_t *token_len, const char **reason)
{
	uint8_t *pt = NULL;
	size_t pt_len = 0;
	int rc;

	rc = open_sealed(&st->keys, in, &rq->sealed_token, &pt, &pt_len);
	if (rc == BC_ERR_NOMEM)
		return rc;
	/* a token is text: an embedded NUL would make two tokens look alike; one sealed to
	   a retired key or another server's is unreadable alike */
	if (rc != 0 || memchr(pt, 0, pt_len) != NULL || pt_len > BC_WIRE_TOKEN_MAX) {
		*reason = BC_R_TOKEN_UNREADABLE;
		bc_freezero(pt, pt_len);
		return 0;
	}
	if ((*token = malloc(pt_len + 1)) == NULL) {
		bc_freezero(pt, pt_len);
		return BC_ERR_NOMEM;
	}
	memcpy(*token, pt, pt_len);
	(*token)[pt_len] = 0;
	*token_len = pt_len;
	bc_freezero(pt, pt_len);
	in->token = *token;
	return 0;
}

/* Checks that need no database: the attestor, the role, the CSR, the claims, the
 * token. */
static int precheck(struct bc_join_service *s, const Bettercompute__Join__V1__JoinRequest *rq,
                    struct bc_join_state *st, struct bc_join_input *in, char **token,
                    size_t *token_len, const char **reason)
{
	int ok = 0, rc;

	if ((st->attestor = bc_join_find(s, in->attestor)) == NULL) {
		*reason = BC_R_ATTESTOR_UNKNOWN;
		return 0;
	}
	for (size_t i = 0; i < st->attestor->n_roles; i++)
		ok |= strcmp(st->attestor->roles[i], in->role) == 0;
	if (!ok || !bc_role_valid(in->role) || strcmp(in->role, BC_ROLE_NODE_TENANT) == 0) {
		*reason = BC_R_ROLE_NOT_ADMITTED;
		return 0;
	}
	if (bc_csr_check_point(rq->csr.data, rq->csr.len, st->csr_point) != 0) {
		*reason = BC_R_CSR_INVALID;
		return 0;
	}
	if ((rc = csr_hashes(rq, st, in)) != 0)
		return rc;
	if (!claims_from_request(rq, &in->claims)) {
		*reason = BC_R_CLAIMS_INVALID;
		return 0;
	}
	if (rq->sealed_token.len > 0)
		return open_token(st, rq, in, token, token_len, reason);
	return 0;
}

/* The attestor's checks that need no store, before the transaction: a refusal
 * here never opens one. */
static int attestor_check(struct bc_join_state *st, struct bc_join_input *in, void **state,
                          const char **reason)
{
	struct bc_attestor *a = (struct bc_attestor *)st->attestor;
	int rc;

	*state = NULL;
	if (a->check == NULL)
		return 0;
	in->now_ms = bc_now_ms();
	if ((rc = a->check(a, in, &st->d.out, state)) != 0)
		return rc;
	in->check_state = *state;
	if (st->d.out.kind == BC_OUTCOME_REFUSE)
		*reason = st->d.out.reason ? st->d.out.reason : BC_R_ATTESTOR_REFUSED;
	return 0;
}

/* The request as the attestors see it; the requester's strings stay borrowed from rq. */
static int request_input(struct bc_join_service *s, const Bettercompute__Join__V1__JoinRequest *rq,
                         struct bc_join_input *in)
{
	in->attestor = rq->attestor[0] ? rq->attestor : BC_WIRE_ATTESTOR_JOIN_TOKEN;
	/* the requester's bytes, of any length or encoding, go no further than a refusal
	 * (attestor-unknown): not into the event, the log line or on_refusal's JSON */
	if (!attestor_id_ok(in->attestor))
		in->attestor = "(invalid)";
	in->role = rq->role[0] ? rq->role : BC_ROLE_NODE;
	in->attestation = rq->attestation.data;
	in->attestation_len = rq->attestation.len;
	in->csr = rq->csr.data;
	in->csr_len = rq->csr.len;
	in->agent_version = rq->agent_version;
	in->challenge_key = s->cfg.pki->challenge_key;
	in->trust_domain = s->cfg.pki->trust_domain;
	in->node_pki = s->cfg.pki;
	return bc_random(&in->request_nonce, sizeof(in->request_nonce));
}

/* Decides the join: 0, or BC_ERR_DENIED with st->d.reason set, or another error. */
static int decide(struct bc_join_service *s, const Bettercompute__Join__V1__JoinRequest *rq,
                  struct bc_join_state *st, struct bc_join_input *in, char **token,
                  size_t *token_len, void **check_state)
{
	const char *reason = NULL;
	int rc;

	if ((rc = precheck(s, rq, st, in, token, token_len, &reason)) != 0)
		return rc;
	if (reason == NULL && (rc = attestor_check(st, in, check_state, &reason)) != 0)
		return rc;
	if (reason == NULL)
		return bc_store_run(s->cfg.store, BC_TX_WRITE, join_tx, st);
	st->d.reason = reason;
	return BC_ERR_DENIED;
}

static enum bc_rpc_status answer(struct bc_join_service *s, struct bc_join_state *st, int rc,
                                 uint8_t **resp, size_t *resp_len)
{
	const struct bc_join_decision *d = &st->d;

	if (rc == BC_ERR_DENIED && d->reason) {
		report_refusal(s, st);
		return BC_RPC_REFUSED;
	}
	if (rc != 0) {
		/* the store says BC_ERR_UNAVAILABLE's cause once a minute, not per request */
		if (rc != BC_ERR_UNAVAILABLE)
			bc_log(BC_LOG_ERROR, "join failed", "attestor", st->in->attestor, "error",
			       bc_err_str(rc), "detail", bc_store_errmsg(), NULL);
		return rc == BC_ERR_INTERNAL || rc == BC_ERR_CRYPTO ? BC_RPC_INTERNAL
		                                                    : BC_RPC_UNAVAILABLE;
	}
	if (bc_join_sign_response(s, &st->keys, st->in->csr_sha256, st->attestor, d, resp,
	                          resp_len) != 0)
		return BC_RPC_INTERNAL;
	if (s->cfg.on_outcome) {
		struct bc_join_outcome o = {
		    .type = d->out.kind == BC_OUTCOME_DEFER ? BC_JOIN_OUTCOME_DEFERRED
		            : d->reclaimed                  ? BC_JOIN_OUTCOME_RECLAIMED
		                                            : BC_JOIN_OUTCOME_JOINED,
		    .attestor = st->attestor->id,
		};
		s->cfg.on_outcome(s->cfg.on_outcome_ctx, &o);
	}
	if (d->out.kind == BC_OUTCOME_DEFER)
		bc_log(BC_LOG_INFO, "join deferred", "attestor", st->in->attestor, "kind",
		       d->out.deferral.kind == BC_DEFER_APPROVAL ? "approval" : "challenge",
		       "requestId", d->out.deferral.request_id, NULL);
	else
		bc_log(BC_LOG_INFO, d->reclaimed ? "node reclaimed" : "node joined", "nodeId",
		       d->node_id, "attestor", st->in->attestor, "tenantId",
		       d->out.result.tenant_id, NULL);
	return BC_RPC_OK;
}

enum bc_rpc_status bc_join_handle(struct bc_join_service *s, const uint8_t *body, size_t len,
                                  uint8_t **resp, size_t *resp_len)
{
	Bettercompute__Join__V1__JoinRequest *rq;
	struct bc_join_state st;
	struct bc_join_input in;
	enum bc_rpc_status status;
	void *check_state = NULL;
	char *token = NULL;
	size_t token_len = 0;
	int rc;

	*resp = NULL;
	*resp_len = 0;
	if ((rq = bettercompute__join__v1__join_request__unpack(NULL, len, body)) == NULL)
		return BC_RPC_INVALID;
	memset(&st, 0, sizeof(st));
	memset(&in, 0, sizeof(in));
	st.in = &in;
	st.svc = s;
	if ((rc = bc_join_keys_take(s, &st.keys)) == 0 && (rc = request_input(s, rq, &in)) == 0)
		rc = decide(s, rq, &st, &in, &token, &token_len, &check_state);
	status = answer(s, &st, rc, resp, resp_len);
	bc_join_keys_drop(&st.keys);
	if (check_state && st.attestor->release)
		st.attestor->release((struct bc_attestor *)st.attestor, check_state);
	bc_freezero(token, token_len + 1);
	bc_join_decision_reset(&st.d);
	bettercompute__join__v1__join_request__free_unpacked(rq, NULL);
	return status;
}
