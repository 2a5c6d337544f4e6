/* JoinService/Renew: the next certificate for a node that holds a current one.
 *
 * The presented leaf must be byte for byte a node_certs row of that node, of its
 * current identity generation, unexpired and unrevoked, the node not retired; the
 * proof (purpose renew, over sha256(csr) || node id || client time) verifies under
 * the leaf's key, with the client's time within 60 s of database time. The new
 * certificate carries the leaf's statements forward, never the CSR's. Every refusal
 * answers the same bytes; the reason goes to the log and security.renew.refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/log.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "attest/tpm_keys.h"
#include "join/events.h"
#include "join/internal.h"
#include "join/reasons.h"
#include "join/rows.h"

#define RENEW_WINDOW_MS 60000
#define TPM_AK_PREFIX   "urn:bc:tpm-ak:"

const char bc_connect_renew_refused[] =
    "{\"code\":\"permission_denied\",\"message\":\"Renew refused\"}";
static const char renew_invalid[] =
    "{\"code\":\"invalid_argument\",\"message\":\"the request is not a RenewRequest\"}";
static const char renew_unavailable[] =
    "{\"code\":\"unavailable\",\"message\":\"the control plane cannot reach its store; retry\"}";

struct renew_state {
	struct bc_join_service *svc;
	const Bettercompute__Join__V1__RenewRequest *rq;
	struct bc_node_identity id;
	EVP_PKEY *csr_key;
	uint8_t csr_sha256[32];
	uint8_t csr_spki_sha256[32];
	uint8_t leaf_sha256[32];
	const char *reason;
	char tenant_id[BC_ID_MAX];
	uint8_t *cert_der;
	size_t cert_len;
	int64_t now_ms;
};

/* urn:bc:tpm-ak:sha256:<hex of the AK's TPM name: 000b || 32-byte digest>. A leaf that
 * names an AK renews only with that AK's certification of the next key; the statement
 * is read from the leaf, never from the CSR. */
static const char *check_statements(const struct renew_state *st, int *rc)
{
	const Bettercompute__Join__V1__TpmKeyAttestation *ka = st->rq->key_attestation;
	uint8_t name[34];

	*rc = 0;
	for (size_t i = 0; i < st->id.n_statements; i++) {
		const char *s = st->id.statements[i];
		if (strncmp(s, TPM_AK_PREFIX, strlen(TPM_AK_PREFIX)) != 0)
			return BC_R_KEY_STATEMENT_UNKNOWN;
		const char *hex = s + strlen(TPM_AK_PREFIX);
		if (strncmp(hex, "sha256:", 7) != 0 || strlen(hex + 7) != 68 ||
		    bc_hex_decode_to(hex + 7, name, sizeof(name)) != 0 || name[0] != 0x00 ||
		    name[1] != 0x0b)
			return BC_R_TPM_AK_URI;
		if (st->svc->cfg.no_key_statements)
			return BC_R_KEY_STATEMENT_UNSUPPORTED;
		if (ka == NULL)
			return BC_R_KEY_ATTESTATION_MISSING;
		const char *why = bc_tpm_verify_key_attestation(
		    name, sizeof(name), ka->ak_public.data, ka->ak_public.len, ka->key_public.data,
		    ka->key_public.len, ka->certify_info.data, ka->certify_info.len,
		    ka->signature.data, ka->signature.len, st->csr_sha256, st->csr_spki_sha256, rc);
		if (why != NULL || *rc != 0)
			return why;
	}
	return NULL;
}

static int csr_spki_sha256(struct renew_state *st)
{
	uint8_t *spki = NULL;
	size_t len = 0;
	int rc;

	if ((rc = bc_key_spki(st->csr_key, &spki, &len)) == 0)
		rc = bc_sha256(spki, len, st->csr_spki_sha256);
	free(spki);
	return rc;
}

static int verify_proof(struct renew_state *st, X509 *leaf)
{
	EVP_PKEY *pub = X509_get0_pubkey(leaf);
	bc_buf b;
	int rc;

	if (pub == NULL)
		return BC_ERR_VERIFY;
	if ((rc = bc_proof_payload(&b, st->csr_sha256, st->id.node_id, st->rq->client_time_ms)) !=
	    0) {
		bc_buf_free(&b);
		return rc;
	}
	rc = bc_es256_verify(pub, BC_PURPOSE_RENEW, b.p, b.len, st->rq->proof.data,
	                     st->rq->proof.len);
	bc_buf_free(&b);
	return rc;
}

/* Checks that need no database. */
static const char *precheck(struct renew_state *st)
{
	const Bettercompute__Join__V1__RenewRequest *rq = st->rq;
	const bc_pki *pki = st->svc->cfg.pki;
	const char *why = NULL;
	X509 *leaf = NULL;

	if (rq->n_chain == 0 ||
	    bc_pki_node_identity(rq->chain[0].data, rq->chain[0].len, pki->trust_domain, &st->id) !=
	        0 ||
	    bc_pki_verify_node_cert(pki, rq->chain[0].data, rq->chain[0].len) != 0 ||
	    bc_x509_from_der(rq->chain[0].data, rq->chain[0].len, &leaf) != 0)
		return BC_R_RENEW_MALFORMED;
	if (bc_csr_check(rq->csr.data, rq->csr.len, &st->csr_key) != 0 ||
	    bc_sha256(rq->csr.data, rq->csr.len, st->csr_sha256) != 0 || csr_spki_sha256(st) != 0) {
		why = BC_R_CSR_INVALID;
		goto out;
	}
	int rc = 0;
	if ((why = check_statements(st, &rc)) != NULL || rc != 0) {
		/* a check that could not run is not a proof */
		if (why == NULL)
			why = BC_R_NODE_KEY_MALFORMED;
		goto out;
	}
	if (bc_sha256(rq->chain[0].data, rq->chain[0].len, st->leaf_sha256) != 0 ||
	    verify_proof(st, leaf) != 0)
		why = BC_R_RENEW_PROOF;
out:
	X509_free(leaf);
	return why;
}

/* The leaf against its row and its node, at database time, in one query: the row is
 * found by the leaf's hash and must hold the same bytes. */
static int check_current(bc_tx *tx, struct renew_state *st, int64_t *generation)
{
	const ProtobufCBinaryData *leaf = &st->rq->chain[0];
	struct bc_cert_row c;
	int rc;

	*generation = 0;
	if ((rc = bc_row_cert_find(tx, st->id.node_id, leaf->data, leaf->len, &c)) < 0)
		return rc;
	if (rc == 0) {
		st->reason = BC_R_RENEW_NOT_CURRENT;
		return 0;
	}
	snprintf(st->tenant_id, sizeof(st->tenant_id), "%s", c.node.tenant_id);
	*generation = c.node.generation;
	if (strcmp(c.node.state, "retired") == 0)
		st->reason = BC_R_RENEW_RETIRED;
	else if (c.generation != *generation)
		st->reason = BC_R_RENEW_GENERATION;
	else if (c.revoked)
		st->reason = BC_R_RENEW_REVOKED;
	else if (c.not_after <= st->now_ms)
		st->reason = BC_R_RENEW_EXPIRED;
	else if (st->rq->client_time_ms < st->now_ms - RENEW_WINDOW_MS ||
	         st->rq->client_time_ms > st->now_ms + RENEW_WINDOW_MS)
		st->reason = BC_R_RENEW_CLIENT_TIME;
	return 0;
}

static int record(bc_tx *tx, struct renew_state *st, const char *serial, int64_t not_after,
                  int64_t generation)
{
	json_t *data = NULL;
	int rc;

	struct bc_cert_write cert = {
	    .serial = serial,
	    .node_id = st->id.node_id,
	    .generation = generation,
	    .der = st->cert_der,
	    .der_len = st->cert_len,
	    .not_before = st->now_ms,
	    .not_after = not_after,
	    .statements = (const char *const *)st->id.statements,
	    .n_statements = st->id.n_statements,
	};
	if ((rc = bc_row_cert_insert(tx, &cert)) != 0)
		return rc;
	data = json_pack("{s:s, s:s, s:I}", "nodeId", st->id.node_id, "serial", serial,
	                 "generation", (json_int_t)generation);
	if ((rc = bc_event_publish(tx, st->tenant_id, "node.renewed", st->id.node_id, data)) == 0)
		rc =
		    bc_audit(tx, st->tenant_id, "join:renew", "node.renewed", st->id.node_id, data);
	json_decref(data);
	return rc;
}

static int renew_tx(bc_tx *tx, void *arg)
{
	struct renew_state *st = arg;
	char serial[33];
	int64_t generation = 0, not_after = 0;
	int rc;

	st->reason = NULL;
	st->tenant_id[0] = 0;
	bc_freezero(st->cert_der, st->cert_len);
	st->cert_der = NULL;
	st->now_ms = bc_tx_now_ms(tx);
	if ((rc = check_current(tx, st, &generation)) != 0)
		return rc;
	if (st->reason)
		return BC_ERR_DENIED;
	struct bc_node_cert_req req = {
	    .node_id = st->id.node_id,
	    .role = st->id.role,
	    .pub = st->csr_key,
	    .statements = (const char *const *)st->id.statements,
	    .n_statements = st->id.n_statements,
	    .not_before_ms = st->now_ms,
	};
	if ((rc = bc_pki_issue_node_cert(st->svc->cfg.pki, &req, &st->cert_der, &st->cert_len,
	                                 serial, &not_after)) != 0)
		return rc;
	return record(tx, st, serial, not_after, generation);
}

static int refusal_tx(bc_tx *tx, void *arg)
{
	struct renew_state *st = arg;
	json_t *data = json_pack("{s:s, s:s?}", "reason", st->reason, "nodeId",
	                         st->id.node_id[0] ? st->id.node_id : NULL);
	int rc = bc_event_publish(tx, st->tenant_id[0] ? st->tenant_id : "root",
	                          "security.renew.refused",
	                          st->id.node_id[0] ? st->id.node_id : NULL, data);
	json_decref(data);
	return rc;
}

/* The owner of a node the leaf names, for a refusal found before the transaction. */
static int owner_tx(bc_tx *tx, void *arg)
{
	struct renew_state *st = arg;
	struct bc_node_row n;
	int rc = bc_row_node_get(tx, BC_NODE_BY_ID, st->id.node_id, &n);
	if (rc == 1)
		snprintf(st->tenant_id, sizeof(st->tenant_id), "%s", n.tenant_id);
	return rc < 0 ? rc : 0;
}

static void report(struct renew_state *st)
{
	/* without the owner the event still goes to the root tenant */
	if (st->tenant_id[0] == 0 && st->id.node_id[0] &&
	    bc_store_run(st->svc->cfg.store, BC_TX_READ, owner_tx, st) != 0)
		st->tenant_id[0] = 0;
	if (bc_store_run(st->svc->cfg.store, BC_TX_WRITE, refusal_tx, st) != 0)
		bc_log(BC_LOG_ERROR, "refusal event not recorded", "reason", st->reason, NULL);
	bc_log(BC_LOG_WARN, "renew refused", "nodeId", st->id.node_id, "reason", st->reason,
	       "tenantId", st->tenant_id, NULL);
}

static void answer(int status, const char *text, int *st, const char **ct, uint8_t **resp,
                   size_t *len)
{
	*st = status;
	*ct = "application/json";
	*len = strlen(text);
	if ((*resp = malloc(*len)) != NULL)
		memcpy(*resp, text, *len);
	else
		*len = 0;
}

static int sign(struct renew_state *st, uint8_t **resp, size_t *len)
{
	struct bc_join_state js;
	struct bc_join_input in;

	memset(&js, 0, sizeof(js));
	memset(&in, 0, sizeof(in));
	memcpy(in.csr_sha256, st->csr_sha256, 32);
	js.in = &in;
	js.out.kind = BC_OUTCOME_RESULT;
	js.now_ms = st->now_ms;
	js.cert_der = st->cert_der;
	js.cert_len = st->cert_len;
	snprintf(js.node_id, sizeof(js.node_id), "%s", st->id.node_id);
	return bc_join_sign_response(st->svc, &js, resp, len);
}

void bc_renew_handle(struct bc_join_service *s, const uint8_t *body, size_t len, int *status,
                     const char **ct, uint8_t **resp, size_t *resp_len)
{
	Bettercompute__Join__V1__RenewRequest *rq;
	struct renew_state st;
	int rc;

	*resp = NULL;
	*resp_len = 0;
	memset(&st, 0, sizeof(st));
	if ((rq = bettercompute__join__v1__renew_request__unpack(NULL, len, body)) == NULL) {
		answer(400, renew_invalid, status, ct, resp, resp_len);
		return;
	}
	st.svc = s;
	st.rq = rq;
	if ((st.reason = precheck(&st)) != NULL)
		rc = BC_ERR_DENIED;
	else
		rc = bc_store_run(s->cfg.store, BC_TX_WRITE, renew_tx, &st);
	if (rc == BC_ERR_DENIED && st.reason) {
		report(&st);
		answer(403, bc_connect_renew_refused, status, ct, resp, resp_len);
	} else if (rc != 0) {
		bc_log(BC_LOG_ERROR, "renew failed", "nodeId", st.id.node_id, "error",
		       bc_err_str(rc), NULL);
		answer(503, renew_unavailable, status, ct, resp, resp_len);
	} else if (sign(&st, resp, resp_len) != 0) {
		answer(503, renew_unavailable, status, ct, resp, resp_len);
	} else {
		*status = 200;
		*ct = "application/proto";
		bc_log(BC_LOG_INFO, "node renewed", "nodeId", st.id.node_id, NULL);
	}
	bc_freezero(st.cert_der, st.cert_len);
	EVP_PKEY_free(st.csr_key);
	bc_node_identity_clear(&st.id);
	bettercompute__join__v1__renew_request__free_unpacked(rq, NULL);
}
