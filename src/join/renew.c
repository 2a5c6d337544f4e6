/* JoinService/Renew: the next certificate for a node that holds a current one.
 *
 * The presented leaf is read without the CA's signature (bc_holder_peek: our own form,
 * without OpenSSL's decoder); the proof (purpose renew, over sha256(csr) || node id ||
 * client time) verifies under its key; then, in the one write transaction,
 * join/holder.h finds the row holding its exact bytes, which makes it ours, and holds
 * it to that row:
 * of the node's current identity generation, unexpired, unrevoked, not superseded, the
 * node not retired, the client's time within 60 s of database time. The new
 * certificate carries the leaf's statements forward, never the CSR's. Every refusal
 * answers the same bytes; the reason goes to join/refusal.h (the log, on_refusal as
 * attestor "renew" and security.renew.refused, summarized until the proof verified).
 *
 * The lineage (docs/attestation.md): a renewal issues the leaf's successor and marks
 * the leaf used; the first use of a certificate supersedes every other certificate of
 * its node (renew-superseded, x509pop-superseded). Until its successor is used, the
 * leaf may renew once more with another CSR (an agent that crashed before saving the
 * successor): that re-issue supersedes the unused successor, and a third CSR is
 * refused. A replayed request (the same leaf and CSR) answers the certificate already
 * issued for that CSR and mints nothing.
 *
 * check_only (bcd doctor): the same proof and the same checks of the leaf against its
 * row, in a read transaction, without the statements (nothing is issued); the answer
 * is the presented leaf itself, signed as a renewal's, or the same refusal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/log.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "join/events.h"
#include "join/holder.h"
#include "join/internal.h"
#include "join/refusal.h"
#include "bc/reasons.h"
#include "rows/certs.h"

#define RENEW_WINDOW_MS 60000

/* The statement schemes of this project (bc/wire.h): one without a verifier here is
 * key-statement-unsupported rather than unknown. */
static const char *const known_schemes[] = {BC_WIRE_TPM_AK_URN_SCHEME};

/* What one try of the renewal transaction decides; reset before each try. */
struct renew_decision {
	const char *reason;
	char tenant_id[BC_ID_MAX];
	char serial[65];                /* the leaf's */
	int replayed;                   /* answered the certificate issued before for this CSR */
	struct bc_join_decision issued; /* the certificate, as Join answers one */
};

struct renew_state {
	struct bc_join_service *svc;
	struct bc_join_keys keys; /* taken once for the whole request */
	const Bettercompute__Join__V1__RenewRequest *rq;
	struct bc_holder h;    /* the presented leaf (h.id its identity, h.point its key) */
	uint8_t csr_point[65]; /* the CSR's key */
	uint8_t csr_sha256[32];
	uint8_t csr_spki_sha256[32];
	int proved; /* the proof verified under the leaf's key */
	int ours;   /* the leaf's row was found (set by each try of the transaction) */
	int backed; /* the leaf is ours and the proof verified under its key */
	struct renew_decision d;
};

static void renew_decision_reset(struct renew_decision *d)
{
	bc_join_decision_reset(&d->issued);
	memset(d, 0, sizeof(*d));
}

/* A statement no verifier here claims: unsupported when it is of a scheme this
 * project defines, else unknown. */
static const char *unclaimed(const char *statement)
{
	for (size_t i = 0; i < sizeof(known_schemes) / sizeof(*known_schemes); i++)
		if (strncmp(statement, known_schemes[i], strlen(known_schemes[i])) == 0)
			return BC_R_KEY_STATEMENT_UNSUPPORTED;
	return BC_R_KEY_STATEMENT_UNKNOWN;
}

/* Each statement of the leaf is proven again by its verifier (the tpm attestor's for
 * urn:bc:tpm-ak:, with the AK's certification of the next key); statements are read
 * from the leaf, never from the CSR. */
static int check_statements(const struct renew_state *st, const char **reason)
{
	const Bettercompute__Join__V1__TpmKeyAttestation *rka = st->rq->key_attestation;
	struct bc_key_attestation ka;
	struct bc_statement_input in;
	int rc;

	memset(&in, 0, sizeof(in));
	memcpy(in.csr_sha256, st->csr_sha256, 32);
	memcpy(in.csr_spki_sha256, st->csr_spki_sha256, 32);
	if (rka != NULL) {
		ka = (struct bc_key_attestation){
		    .ak_public = rka->ak_public.data,
		    .ak_public_len = rka->ak_public.len,
		    .key_public = rka->key_public.data,
		    .key_public_len = rka->key_public.len,
		    .certify_info = rka->certify_info.data,
		    .certify_info_len = rka->certify_info.len,
		    .signature = rka->signature.data,
		    .signature_len = rka->signature.len,
		};
		in.ka = &ka;
	}
	for (size_t i = 0; i < st->h.id.n_statements; i++) {
		const struct bc_statement_verifier *v;
		in.statement = st->h.id.statements[i];
		if ((v = bc_join_find_statement(st->svc, in.statement)) == NULL) {
			*reason = unclaimed(in.statement);
			return 0;
		}
		if ((rc = v->verify(v->ctx, &in, reason)) != 0 || *reason)
			return rc;
	}
	return 0;
}

/* The proof under the leaf's key: BC_HOLDER_OK or BC_HOLDER_PROOF, or an error. */
static int verify_proof(struct renew_state *st)
{
	bc_buf b;
	int rc;

	if ((rc = bc_proof_payload(&b, st->csr_sha256, st->h.id.node_id, st->rq->client_time_ms)) ==
	    0)
		rc = bc_holder_prove(&st->h, BC_PURPOSE_RENEW, b.p, b.len, st->rq->proof.data,
		                     st->rq->proof.len);
	bc_buf_free(&b);
	return rc;
}

/* Checks that need no database: the leaf as presented (peeked: the row the transaction
 * finds for its bytes is what makes it ours), the CSR, the proof, the statements. */
static int precheck(struct renew_state *st, const char **reason)
{
	const Bettercompute__Join__V1__RenewRequest *rq = st->rq;
	int rc = 0;

	if (rq->n_chain == 0 ||
	    (rc = bc_holder_peek(&st->h, st->svc->cfg.pki->trust_domain, rq->chain[0].data,
	                         rq->chain[0].len, NULL)) != BC_HOLDER_OK) {
		*reason = BC_R_RENEW_MALFORMED;
		return rc < 0 ? rc : 0;
	}
	if (bc_csr_check_point(rq->csr.data, rq->csr.len, st->csr_point) != 0) {
		*reason = BC_R_CSR_INVALID;
		goto out;
	}
	/* a check is answered with the leaf itself: its CSR is for the leaf's key */
	if (rq->check_only && memcmp(st->csr_point, st->h.point, 65) != 0) {
		*reason = BC_R_RENEW_MALFORMED;
		goto out;
	}
	if ((rc = bc_sha256(rq->csr.data, rq->csr.len, st->csr_sha256)) != 0 ||
	    (rc = bc_p256_spki_sha256(st->csr_point, st->csr_spki_sha256)) != 0)
		goto out;
	/* the proof first: what follows is reported as the node's own */
	if ((rc = verify_proof(st)) != BC_HOLDER_OK) {
		if (rc > 0)
			*reason = BC_R_RENEW_PROOF;
		rc = rc < 0 ? rc : 0;
		goto out;
	}
	st->proved = 1;
	/* a check issues nothing, so no statement is carried forward to prove */
	if (!rq->check_only)
		rc = check_statements(st, reason);
out:
	return rc;
}

/* What the holder check found, as Renew's reasons. */
static const char *holder_reason(int status)
{
	switch (status) {
	case BC_HOLDER_OK: return NULL;
	case BC_HOLDER_RETIRED: return BC_R_RENEW_RETIRED;
	case BC_HOLDER_GENERATION: return BC_R_RENEW_GENERATION;
	case BC_HOLDER_REVOKED: return BC_R_RENEW_REVOKED;
	case BC_HOLDER_SUPERSEDED: return BC_R_RENEW_SUPERSEDED;
	case BC_HOLDER_EXPIRED: return BC_R_RENEW_EXPIRED;
	case BC_HOLDER_CLIENT_TIME: return BC_R_RENEW_CLIENT_TIME;
	case BC_HOLDER_ROLE: return BC_R_RENEW_ROLE;
	case BC_HOLDER_MALFORMED: return BC_R_RENEW_MALFORMED;
	case BC_HOLDER_NOT_CURRENT:
	default: return BC_R_RENEW_NOT_CURRENT;
	}
}

/* The leaf against its row and its node, at database time (join/holder.h). */
static int check_current(bc_tx *tx, struct renew_state *st, int64_t *generation,
                         const char **reason)
{
	struct bc_holder_want w = {.now_ms = st->d.issued.now_ms,
	                           .window_ms = RENEW_WINDOW_MS,
	                           .client_time_ms = st->rq->client_time_ms,
	                           /* a ramdisk identity ends with its first certificate */
	                           .not_role = BC_ROLE_RAMDISK,
	                           /* one renewal of a node at a time: its lineage is read
	                              and written under the lock */
	                           .lock = !st->rq->check_only,
	                           .pki = st->svc->cfg.pki};
	struct bc_cert_row c;
	int rc = bc_holder_current(tx, &st->h, &w, &c);

	*generation = c.node.generation;
	if (rc < 0)
		return rc;
	st->ours = rc != BC_HOLDER_NOT_CURRENT;
	snprintf(st->d.tenant_id, sizeof(st->d.tenant_id), "%s", c.node.tenant_id);
	snprintf(st->d.serial, sizeof(st->d.serial), "%s", c.serial);
	*reason = holder_reason(rc);
	return 0;
}

static int record(bc_tx *tx, struct renew_state *st, const char *serial, int64_t not_after,
                  int64_t generation)
{
	json_t *data = NULL;
	int rc;

	struct bc_cert_write cert = {
	    .serial = serial,
	    .node_id = st->h.id.node_id,
	    .generation = generation,
	    .der = st->d.issued.cert_der,
	    .der_len = st->d.issued.cert_len,
	    .not_before = st->d.issued.now_ms,
	    .not_after = not_after,
	    .statements = (const char *const *)st->h.id.statements,
	    .n_statements = st->h.id.n_statements,
	    .predecessor = st->d.serial,
	    .csr_sha256 = st->csr_sha256,
	    .point = st->csr_point,
	    .role = st->h.id.role,
	};
	if ((rc = bc_row_cert_insert(tx, &cert)) != 0)
		return rc;
	data = json_pack("{s:s, s:s, s:I}", "nodeId", st->h.id.node_id, "serial", serial,
	                 "generation", (json_int_t)generation);
	if ((rc = bc_event_publish(tx, st->d.tenant_id, "node.renewed", st->h.id.node_id, data)) ==
	    0)
		rc = bc_audit(tx, st->d.tenant_id, "join:renew", "node.renewed", st->h.id.node_id,
		              data);
	json_decref(data);
	return rc;
}

/* renew-superseded once the leaf's one extra renewal is spent (n: the certificates it
 * was renewed into), else NULL */
static const char *spent(int64_t n)
{
	return n >= 2 ? BC_R_RENEW_SUPERSEDED : NULL;
}

/* How many certificates the leaf has been renewed into; *reason renew-superseded once
 * its one extra renewal is spent. */
static int successors_of(bc_tx *tx, struct renew_state *st, int64_t *n, const char **reason)
{
	int rc = bc_row_cert_successors(tx, st->d.serial, n);
	const char *refusal = rc == 0 ? spent(*n) : NULL;

	if (refusal != NULL)
		*reason = refusal;
	return rc;
}

/* The leaf's place in its node's lineage, once check_current accepted it: 1 when the
 * CSR was answered before (st->d.issued holds that certificate), 0 to issue a successor
 * (the leaf marked used, an unused successor superseded), or a refusal. */
static int lineage(bc_tx *tx, struct renew_state *st, const char **reason)
{
	struct bc_join_decision *is = &st->d.issued;
	int64_t successors = 0;
	int superseded = 0, rc;

	rc = bc_row_cert_issued_for(tx, st->d.serial, st->csr_sha256, &is->cert_der, &is->cert_len,
	                            &superseded, &successors);
	if (rc < 0)
		return rc;
	if (rc == 1 && superseded)
		*reason = BC_R_RENEW_SUPERSEDED;
	if (rc == 1)
		return *reason ? 0 : 1;
	/* the successors were counted by the same statement */
	if ((*reason = spent(successors)) != NULL)
		return 0;
	if (successors == 1 &&
	    (rc = bc_row_cert_supersede_successors(tx, st->d.serial, is->now_ms)) != 0)
		return rc;
	return bc_row_cert_use(tx, st->h.id.node_id, st->d.serial, is->now_ms);
}

static int renew_steps(bc_tx *tx, struct renew_state *st, const char **reason)
{
	struct bc_join_decision *is = &st->d.issued;
	char serial[33];
	int64_t generation = 0, not_after = 0;
	int rc;

	is->now_ms = bc_tx_now_ms(tx);
	if ((rc = check_current(tx, st, &generation, reason)) != 0 || *reason)
		return rc;
	if ((rc = lineage(tx, st, reason)) < 0 || *reason)
		return rc;
	if (rc == 1) {
		/* a replay: the same answer, nothing minted or recorded */
		is->out.kind = BC_OUTCOME_RESULT;
		snprintf(is->node_id, sizeof(is->node_id), "%s", st->h.id.node_id);
		st->d.replayed = 1;
		return 0;
	}
	struct bc_node_cert_req req = {
	    .node_id = st->h.id.node_id,
	    .role = st->h.id.role,
	    .point = st->csr_point,
	    .statements = (const char *const *)st->h.id.statements,
	    .n_statements = st->h.id.n_statements,
	    .not_before_ms = is->now_ms,
	};
	if ((rc = bc_pki_issue_node_cert_by(st->svc->cfg.pki, st->keys.set, &req, &is->cert_der,
	                                    &is->cert_len, serial, &not_after)) != 0)
		return rc;
	is->out.kind = BC_OUTCOME_RESULT;
	snprintf(is->node_id, sizeof(is->node_id), "%s", st->h.id.node_id);
	return record(tx, st, serial, not_after, generation);
}

static int renew_tx(bc_tx *tx, void *arg)
{
	struct renew_state *st = arg;
	const char *reason = NULL;
	int rc;

	/* a replayed transaction starts from nothing */
	renew_decision_reset(&st->d);
	st->ours = 0;
	if ((rc = renew_steps(tx, st, &reason)) != 0)
		return rc;
	if (reason == NULL)
		return 0;
	st->d.reason = reason;
	return BC_ERR_DENIED;
}

/* check_only: the leaf current or a refusal; the answer is the leaf itself. */
static int check_tx(bc_tx *tx, void *arg)
{
	struct renew_state *st = arg;
	const ProtobufCBinaryData *leaf = &st->rq->chain[0];
	struct bc_join_decision *is = &st->d.issued;
	const char *reason = NULL;
	int64_t generation = 0, successors = 0;
	int rc;

	renew_decision_reset(&st->d);
	st->ours = 0;
	is->now_ms = bc_tx_now_ms(tx);
	if ((rc = check_current(tx, st, &generation, &reason)) != 0)
		return rc;
	/* as lineage(): a leaf whose one extra renewal is spent renews no more */
	if (reason == NULL && (rc = successors_of(tx, st, &successors, &reason)) != 0)
		return rc;
	if (reason != NULL) {
		st->d.reason = reason;
		return BC_ERR_DENIED;
	}
	if ((is->cert_der = malloc(leaf->len)) == NULL)
		return BC_ERR_NOMEM;
	memcpy(is->cert_der, leaf->data, leaf->len);
	is->cert_len = leaf->len;
	is->out.kind = BC_OUTCOME_RESULT;
	snprintf(is->node_id, sizeof(is->node_id), "%s", st->h.id.node_id);
	return 0;
}

/* Refusals before the proof verified under a leaf of ours (no chain, a certificate
 * the node CA did not sign, a CSR out of shape, a proof by another key) are backed by
 * no credential: anyone holding a node's certificate, which is no secret, could send
 * them (join/refusal.h summarizes them). */
static void report(struct renew_state *st)
{
	struct bc_refusal_note n = {.kind = BC_REFUSAL_RENEW,
	                            .attestor = "renew",
	                            .reason = st->d.reason,
	                            .backed = st->backed,
	                            .tenant_id = st->d.tenant_id,
	                            .node_id = st->h.id.node_id,
	                            .check_only = (int)st->rq->check_only};

	bc_refusal_publish(st->svc, &n);
}

/* Decides the renewal: 0, or BC_ERR_DENIED with st->d.reason set, or another error. */
static int decide(struct renew_state *st)
{
	const char *reason = NULL;
	int rc;

	if ((rc = precheck(st, &reason)) != 0)
		return rc;
	if (reason == NULL) {
		rc = st->rq->check_only
		         ? bc_store_run(st->svc->cfg.store, BC_TX_READ, check_tx, st)
		         : bc_store_run(st->svc->cfg.store, BC_TX_WRITE, renew_tx, st);
		if (rc != BC_ERR_DENIED || st->ours) {
			st->backed = st->ours && st->proved;
			return rc;
		}
		reason = st->d.reason;
	}
	/* refused before a row was found for the leaf's bytes: whether the node CA signed
	   it decides between its reason and renew-malformed, and whether it is backed */
	if (strcmp(reason, BC_R_RENEW_MALFORMED) != 0) {
		if ((rc = bc_holder_confirm(&st->h, st->svc->cfg.pki, BC_HOLDER_OK)) < 0)
			return rc;
		if (rc == BC_HOLDER_MALFORMED)
			reason = BC_R_RENEW_MALFORMED;
		else
			st->backed = st->proved;
	}
	st->d.reason = reason;
	return BC_ERR_DENIED;
}

static enum bc_rpc_status answer(struct renew_state *st, int rc, uint8_t **resp, size_t *len)
{
	if (rc == BC_ERR_DENIED && st->d.reason) {
		report(st);
		return BC_RPC_REFUSED;
	}
	if (rc != 0) {
		/* the store says BC_ERR_UNAVAILABLE's cause once a minute, not per request */
		if (rc != BC_ERR_UNAVAILABLE)
			bc_log(BC_LOG_ERROR, "renew failed", "nodeId", st->h.id.node_id, "error",
			       bc_err_str(rc), "detail", bc_store_errmsg(), NULL);
		return rc == BC_ERR_INTERNAL || rc == BC_ERR_CRYPTO ? BC_RPC_INTERNAL
		                                                    : BC_RPC_UNAVAILABLE;
	}
	if (bc_join_sign_response(st->svc, &st->keys, st->csr_sha256, NULL, &st->d.issued, resp,
	                          len) != 0)
		return BC_RPC_INTERNAL;
	if (st->svc->cfg.on_outcome) {
		struct bc_join_outcome o = {.type = st->rq->check_only ? BC_JOIN_OUTCOME_CHECKED
		                                                       : BC_JOIN_OUTCOME_RENEWED,
		                            .replayed = st->d.replayed};
		st->svc->cfg.on_outcome(st->svc->cfg.on_outcome_ctx, &o);
	}
	if (st->rq->check_only) {
		bc_log(BC_LOG_INFO, "renewal check: current", "nodeId", st->h.id.node_id, NULL);
		return BC_RPC_OK;
	}
	bc_log(BC_LOG_INFO, st->d.replayed ? "renewal answered again" : "node renewed", "nodeId",
	       st->h.id.node_id, NULL);
	return BC_RPC_OK;
}

enum bc_rpc_status bc_renew_handle(struct bc_join_service *s, const uint8_t *body, size_t len,
                                   uint8_t **resp, size_t *resp_len)
{
	Bettercompute__Join__V1__RenewRequest *rq;
	struct renew_state st;
	enum bc_rpc_status status;
	int rc;

	*resp = NULL;
	*resp_len = 0;
	if ((rq = bettercompute__join__v1__renew_request__unpack(NULL, len, body)) == NULL)
		return BC_RPC_INVALID;
	memset(&st, 0, sizeof(st));
	st.svc = s;
	st.rq = rq;
	if ((rc = bc_join_keys_take(s, &st.keys)) == 0)
		rc = decide(&st);
	status = answer(&st, rc, resp, resp_len);
	bc_join_keys_drop(&st.keys);
	renew_decision_reset(&st.d);
	bc_holder_clear(&st.h);
	bettercompute__join__v1__renew_request__free_unpacked(rq, NULL);
	return status;
}
