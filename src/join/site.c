/* SiteService (the site::boot lease, boot entries) and JoinService/FetchSecret: what a
 * site's boot server asks of the control plane.
 *
 * Every request is authenticated as Renew is, by join/holder.h: the leaf of the
 * caller's chain is a node certificate of ours with role site, byte for byte a
 * node_certs row of that node, of its current identity generation, unexpired,
 * unrevoked and not superseded, the node not retired and of the site the request
 * names; the proof (the method's purpose) verifies under the leaf's key, with the
 * client's time within 60 s of database time. Every refusal answers the same bytes;
 * the reason goes to join/refusal.h (the log, on_refusal as attestor "site" and
 * security.site.refused, summarized until the proof verified).
 *
 * The lease row (leases, name "site::boot/<site>") keeps its last epoch when it is
 * released or expires, so epochs only grow, across restarts and replicas; a grant is
 * an UPDATE conditional on the epoch read under the row's lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bc/buf.h"
#include "bc/canon.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/log.h"
#include "bc/reasons.h"
#include "bc/secret.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "bettercompute/site/v1/site.pb-c.h"
#include "join/events.h"
#include "join/holder.h"
#include "join/internal.h"
#include "join/refusal.h"
#include "rows/certs.h"
#include "rows/leases.h"
#include "rows/tokens.h"
#include "rows/workflows.h"

#define CLIENT_WINDOW_MS 60000
#define BOOT_ENTRIES_MAX 1024

struct site_call;
typedef int (*site_op)(bc_tx *tx, struct site_call *c, const char **reason);

struct site_call {
	struct bc_join_service *svc;
	const ProtobufCBinaryData *chain;
	size_t n_chain;
	const char *site_id; /* the site the request names; NULL: the caller's own */
	int64_t client_time_ms;
	const char *purpose;
	bc_buf payload;
	const ProtobufCBinaryData *proof;
	site_op op;
	const void *rq;
	const char *answer_purpose;
	int malformed; /* the request is out of shape (found before any check) */
	/* learned */
	struct bc_holder h; /* the leaf (h.id its identity) */
	int proved;         /* the proof verified under the leaf's key */
	int ours;           /* the leaf's row was found (set by each try of the transaction) */
	int backed;         /* the leaf is ours and the proof verified under its key */
	char tenant_id[BC_ID_MAX];
	char site[BC_ID_MAX]; /* the caller's site */
	char lease[BC_ID_MAX + 16];
	int64_t now_ms;
	const char *reason;
	uint8_t *body; /* the answer's body, packed by op */
	size_t body_len;
};

static void body_reset(struct site_call *c)
{
	if (c->body)
		OPENSSL_cleanse(c->body, c->body_len); /* a secret's body holds a token */
	free(c->body);
	c->body = NULL;
	c->body_len = 0;
}

/* The leaf as presented (peeked: the row the transaction finds for its bytes makes it
 * ours), its role and the proof, before the transaction (join/holder.h). */
static int precheck(struct site_call *c, const char **reason)
{
	int rc = BC_HOLDER_MALFORMED;

	if (c->n_chain > 0 && c->n_chain <= 8 && c->proof->len == BC_SIG_LEN)
		rc = bc_holder_peek(&c->h, c->svc->cfg.pki->trust_domain, c->chain[0].data,
		                    c->chain[0].len, BC_ROLE_SITE);
	if (rc == BC_HOLDER_OK)
		rc = bc_holder_prove(&c->h, c->purpose, c->payload.p, c->payload.len,
		                     c->proof->data, c->proof->len);
	/* a leaf the node CA did not sign is malformed, whatever else is wrong with it */
	if (rc == BC_HOLDER_ROLE || rc == BC_HOLDER_PROOF)
		rc = bc_holder_confirm(&c->h, c->svc->cfg.pki, rc);
	switch (rc) {
	case BC_HOLDER_OK: c->proved = 1; return 0;
	case BC_HOLDER_ROLE: *reason = BC_R_SITE_ROLE; return 0;
	case BC_HOLDER_PROOF: *reason = BC_R_SITE_PROOF; return 0;
	default:
		if (rc < 0)
			return rc;
		*reason = BC_R_SITE_MALFORMED;
		return 0;
	}
}

/* The leaf against its row and its node, at database time: a superseded leaf (its
 * key rotated away by a renewal) is no longer current, as for Renew. */
static int check_current(bc_tx *tx, struct site_call *c, const char **reason)
{
	struct bc_holder_want w = {.now_ms = c->now_ms,
	                           .window_ms = CLIENT_WINDOW_MS,
	                           .client_time_ms = c->client_time_ms,
	                           .role = BC_ROLE_SITE,
	                           .pki = c->svc->cfg.pki};
	struct bc_cert_row row;
	int rc = bc_holder_current(tx, &c->h, &w, &row);

	if (rc < 0)
		return rc;
	c->ours = rc != BC_HOLDER_NOT_CURRENT;
	snprintf(c->tenant_id, sizeof(c->tenant_id), "%s", row.node.tenant_id);
	snprintf(c->site, sizeof(c->site), "%s", row.node.site_id);
	snprintf(c->lease, sizeof(c->lease), BC_ROW_SITE_LEASE_FMT, row.node.site_id);
	if (rc == BC_HOLDER_CLIENT_TIME)
		*reason = BC_R_SITE_CLIENT_TIME;
	else if (rc != BC_HOLDER_OK)
		*reason = BC_R_SITE_NOT_CURRENT;
	else if (row.node.site_id[0] == 0 ||
	         (c->site_id && strcmp(c->site_id, row.node.site_id) != 0))
		*reason = BC_R_SITE_WRONG_SITE;
	return 0;
}

static int call_tx(bc_tx *tx, void *arg)
{
	struct site_call *c = arg;
	const char *reason = NULL;
	int rc;

	body_reset(c);
	c->reason = NULL;
	c->ours = 0;
	c->now_ms = bc_tx_now_ms(tx);
	if ((rc = check_current(tx, c, &reason)) != 0)
		return rc;
	if (reason == NULL && (rc = c->op(tx, c, &reason)) != 0)
		return rc;
	if (reason == NULL)
		return 0;
	body_reset(c);
	c->reason = reason;
	return BC_ERR_DENIED;
}

/* After the transaction: a refusal of a leaf no row holds is site-malformed when the
 * node CA did not sign it; the refusal is backed once the leaf is known to be ours. */
static int found_or_confirmed(struct site_call *c, int rc)
{
	int status = BC_HOLDER_OK;

	if (rc == BC_ERR_DENIED && !c->ours &&
	    (status = bc_holder_confirm(&c->h, c->svc->cfg.pki, BC_HOLDER_OK)) < 0)
		return status;
	if (status == BC_HOLDER_MALFORMED)
		c->reason = BC_R_SITE_MALFORMED;
	else
		c->backed = c->proved;
	return rc;
}

/* Refusals before the proof verified under a site leaf of ours are backed by no
 * credential and summarized (join/refusal.h): a node certificate is no secret. */
static void report(struct site_call *c)
{
	struct bc_refusal_note n = {.kind = BC_REFUSAL_SITE,
	                            .attestor = "site",
	                            .reason = c->reason,
	                            .backed = c->backed,
	                            .tenant_id = c->tenant_id,
	                            .node_id = c->h.id.node_id,
	                            .site_id = c->site};

	bc_refusal_publish(c->svc, &n);
}

/* Authenticates, runs op in one write transaction, signs what it packed. */
/* The answer signed by the current join signing key (the keys taken for this alone: a
 * site call issues no certificate). */
static int sign_answer(struct site_call *c, uint8_t **resp, size_t *len)
{
	struct bc_join_keys k;
	int rc;

	if ((rc = bc_join_keys_take(c->svc, &k)) != 0)
		return rc;
	rc = bc_join_sign_body(&k, c->answer_purpose, c->body, c->body_len, resp, len);
	bc_join_keys_drop(&k);
	return rc;
}

static enum bc_rpc_status run_call(struct site_call *c, int payload_rc, uint8_t **resp, size_t *len)
{
	const char *reason = NULL;
	enum bc_rpc_status st = BC_RPC_OK;
	int rc = payload_rc;

	/* a field too long for its payload, or out of shape, is refused like a bad proof */
	if (rc == BC_ERR_LIMIT || (rc == 0 && c->malformed)) {
		reason = BC_R_SITE_MALFORMED;
		rc = 0;
	}
	if (rc == 0 && (reason != NULL || (rc = precheck(c, &reason)) == 0)) {
		if (reason) {
			c->reason = reason;
			rc = BC_ERR_DENIED;
		} else {
			rc = bc_store_run(c->svc->cfg.store, BC_TX_WRITE, call_tx, c);
			rc = found_or_confirmed(c, rc);
		}
	}
	if (rc == BC_ERR_DENIED && c->reason) {
		report(c);
		st = BC_RPC_REFUSED;
	} else if (rc != 0) {
		/* the store says BC_ERR_UNAVAILABLE's cause once a minute, not per request */
		if (rc != BC_ERR_UNAVAILABLE)
			bc_log(BC_LOG_ERROR, "site request failed", "nodeId", c->h.id.node_id,
			       "error", bc_err_str(rc), "detail", bc_store_errmsg(), NULL);
		st = rc == BC_ERR_INTERNAL || rc == BC_ERR_CRYPTO || rc == BC_ERR_LIMIT
		         ? BC_RPC_INTERNAL
		         : BC_RPC_UNAVAILABLE;
	} else if (sign_answer(c, resp, len) != 0) {
		st = BC_RPC_INTERNAL;
	}
	body_reset(c);
	bc_buf_free(&c->payload);
	bc_holder_clear(&c->h);
	return st;
}

/* ---- the lease ---- */

enum lease_op { LEASE_ACQUIRE, LEASE_RENEW, LEASE_RELEASE };

struct lease_call {
	struct site_call c;
	enum lease_op op;
};

static int64_t lease_ttl_ms(uint32_t asked)
{
	uint32_t s = asked == 0 ? BC_SITE_LEASE_TTL_DEFAULT : asked;
	return (int64_t)(s > BC_SITE_LEASE_TTL_MAX ? BC_SITE_LEASE_TTL_MAX : s) * 1000;
}

static int lease_event(bc_tx *tx, struct site_call *c, const char *type, int64_t epoch)
{
	json_t *data = json_pack("{s:s, s:s, s:I}", "siteId", c->site, "holder", c->h.id.node_id,
	                         "epoch", (json_int_t)epoch);
	int rc = bc_event_publish(tx, c->tenant_id, type, c->site, data);
	json_decref(data);
	return rc;
}

static int pack_lease(struct site_call *c, const struct bc_lease_row *l, int held)
{
	Bettercompute__Site__V1__LeaseBody b = BETTERCOMPUTE__SITE__V1__LEASE_BODY__INIT;
	int live = l->holder[0] && l->expires_at > c->now_ms;

	b.site_id = c->site;
	b.name = (char *)BC_WIRE_LEASE_BOOT;
	b.holder_node_id = live ? (char *)l->holder : "";
	b.epoch = (uint64_t)l->epoch;
	b.expires_at_ms = live ? l->expires_at : 0;
	b.held = held;
	b.issued_at_ms = c->now_ms;
	c->body_len = bettercompute__site__v1__lease_body__get_packed_size(&b);
	if ((c->body = malloc(c->body_len ? c->body_len : 1)) == NULL)
		return BC_ERR_NOMEM;
	bettercompute__site__v1__lease_body__pack(&b, c->body);
	return 0;
}

static int lease_op(bc_tx *tx, struct site_call *c, const char **reason)
{
	const struct lease_call *lc = (const struct lease_call *)c;
	const Bettercompute__Site__V1__LeaseRequest *rq = c->rq;
	const char *me = c->h.id.node_id;
	struct bc_lease_row l;
	int64_t was, expires = c->now_ms + lease_ttl_ms(rq->ttl_seconds);
	int rc, mine, live, held = 0;

	(void)reason;
	if ((rc = bc_row_lease_lock(tx, c->lease, &l)) < 0)
		return rc;
	was = l.epoch;
	live = l.holder[0] && l.expires_at > c->now_ms;
	mine = live && strcmp(l.holder, me) == 0;
	switch (lc->op) {
	case LEASE_ACQUIRE:
		if (mine || !live) {
			/* the holder asking again keeps its epoch; a free lease takes the next */
			int64_t epoch = mine ? l.epoch : l.epoch + 1;
			if ((rc = bc_row_lease_set(tx, c->lease, was, me, epoch, expires)) != 0)
				return rc == BC_ERR_CONFLICT ? BC_ERR_RETRY : rc;
			if (!mine && (rc = lease_event(tx, c, "site.lease.acquired", epoch)) != 0)
				return rc;
			snprintf(l.holder, sizeof(l.holder), "%s", me);
			l.epoch = epoch;
			l.expires_at = expires;
			held = 1;
		}
		break;
	case LEASE_RENEW:
		if (mine && (uint64_t)l.epoch == rq->epoch) {
			if ((rc = bc_row_lease_set(tx, c->lease, was, me, l.epoch, expires)) != 0)
				return rc == BC_ERR_CONFLICT ? BC_ERR_RETRY : rc;
			l.expires_at = expires;
			held = 1;
		}
		break;
	case LEASE_RELEASE:
		if (mine && (uint64_t)l.epoch == rq->epoch) {
			if ((rc = bc_row_lease_set(tx, c->lease, was, "", l.epoch, c->now_ms)) !=
			        0 ||
			    (rc = lease_event(tx, c, "site.lease.released", l.epoch)) != 0)
				return rc == BC_ERR_CONFLICT ? BC_ERR_RETRY : rc;
			l.holder[0] = 0;
			l.expires_at = c->now_ms;
		}
		break;
	}
	return pack_lease(c, &l, held);
}

static enum bc_rpc_status lease_handle(struct bc_join_service *s, enum lease_op op,
                                       const uint8_t *body, size_t len, uint8_t **resp,
                                       size_t *resp_len)
{
	Bettercompute__Site__V1__LeaseRequest *rq;
	struct lease_call lc;
	enum bc_rpc_status st;
	int rc;

	*resp = NULL;
	*resp_len = 0;
	if ((rq = bettercompute__site__v1__lease_request__unpack(NULL, len, body)) == NULL)
		return BC_RPC_INVALID;
	memset(&lc, 0, sizeof(lc));
	lc.op = op;
	lc.c = (struct site_call){.svc = s,
	                          .chain = rq->chain,
	                          .n_chain = rq->n_chain,
	                          .site_id = rq->site_id,
	                          .client_time_ms = rq->client_time_ms,
	                          /* one purpose per operation: a captured RenewLease
	                             proof is no ReleaseLease proof */
	                          .purpose = op == LEASE_ACQUIRE ? BC_PURPOSE_LEASE_ACQUIRE
	                                     : op == LEASE_RENEW ? BC_PURPOSE_LEASE_RENEW
	                                                         : BC_PURPOSE_LEASE_RELEASE,
	                          .proof = &rq->proof,
	                          .op = lease_op,
	                          .rq = rq,
	                          .answer_purpose = BC_PURPOSE_SITE_RESPONSE};
	rc = bc_lease_payload(&lc.c.payload, rq->site_id, rq->name, rq->epoch, rq->ttl_seconds,
	                      rq->client_time_ms);
	/* the one lease a site has */
	lc.c.malformed = strcmp(rq->name, BC_WIRE_LEASE_BOOT) != 0;
	st = run_call(&lc.c, rc, resp, resp_len);
	bettercompute__site__v1__lease_request__free_unpacked(rq, NULL);
	return st;
}

enum bc_rpc_status bc_site_acquire_handle(struct bc_join_service *s, const uint8_t *body,
                                          size_t len, uint8_t **resp, size_t *resp_len)
{
	return lease_handle(s, LEASE_ACQUIRE, body, len, resp, resp_len);
}

enum bc_rpc_status bc_site_renew_handle(struct bc_join_service *s, const uint8_t *body, size_t len,
                                        uint8_t **resp, size_t *resp_len)
{
	return lease_handle(s, LEASE_RENEW, body, len, resp, resp_len);
}

enum bc_rpc_status bc_site_release_handle(struct bc_join_service *s, const uint8_t *body,
                                          size_t len, uint8_t **resp, size_t *resp_len)
{
	return lease_handle(s, LEASE_RELEASE, body, len, resp, resp_len);
}

/* ---- boot entries ---- */

/* A running commission workflow's boot entry, canonical; 0 when data holds none. */
struct entry {
	char site_id[BC_ID_MAX];
	char mac[BC_MAC_LEN + 1];
	char uuid[BC_UUID_LEN + 1];
	char node_id[BC_ID_MAX];
	int64_t not_after;
};

static int read_entry(const char *data, struct entry *e)
{
	json_t *j = NULL, *be;
	const char *v;
	int ok = 0;

	memset(e, 0, sizeof(*e));
	if (bc_json_parse(data, strlen(data), 0, &j, NULL, 0) != 0)
		return 0;
	if ((be = json_object_get(j, "bootEntry")) != NULL &&
	    bc_json_get_string(be, "siteId", &v) == 0 && strlen(v) < sizeof(e->site_id)) {
		snprintf(e->site_id, sizeof(e->site_id), "%s", v);
		ok = bc_json_get_string(be, "mac", &v) == 0 && bc_mac_canon(v, e->mac) == 0 &&
		     bc_json_get_int(be, "notAfter", &e->not_after) == 0;
		if (bc_json_get_string(be, "productUuid", &v) == 0 &&
		    bc_uuid_canon(v, e->uuid) != 0)
			e->uuid[0] = 0;
		if (bc_json_get_string(be, "nodeId", &v) == 0 && strlen(v) < sizeof(e->node_id))
			snprintf(e->node_id, sizeof(e->node_id), "%s", v);
	}
	json_decref(j);
	return ok;
}

static int list_op(bc_tx *tx, struct site_call *c, const char **reason)
{
	const Bettercompute__Site__V1__BootEntriesRequest *rq = c->rq;
	Bettercompute__Site__V1__BootEntriesBody b =
	    BETTERCOMPUTE__SITE__V1__BOOT_ENTRIES_BODY__INIT;
	Bettercompute__Site__V1__BootEntry *items = NULL, **ptrs = NULL;
	struct entry *es = NULL;
	char(*ids)[BC_ID_MAX] = NULL;
	bc_rows *rows = NULL;
	size_t n = 0;
	int rc;

	if ((rc = bc_row_lease_held(tx, c->lease, c->h.id.node_id, (int64_t)rq->epoch, c->now_ms)) <
	    0)
		return rc;
	if (rc == 0) {
		*reason = BC_R_SITE_NOT_HOLDER;
		return 0;
	}
	es = calloc(BOOT_ENTRIES_MAX, sizeof(*es));
	ids = calloc(BOOT_ENTRIES_MAX, sizeof(*ids));
	items = calloc(BOOT_ENTRIES_MAX, sizeof(*items));
	ptrs = calloc(BOOT_ENTRIES_MAX, sizeof(*ptrs));
	if (es == NULL || ids == NULL || items == NULL || ptrs == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = bc_row_workflows_commissioning(tx, c->tenant_id, &rows)) != 0)
		goto out;
	while (n < BOOT_ENTRIES_MAX && (rc = bc_rows_next(rows)) == 1) {
		if (!read_entry(bc_rows_text(rows, 1), &es[n]) ||
		    strcmp(es[n].site_id, c->site) != 0 || es[n].not_after <= c->now_ms)
			continue;
		snprintf(ids[n], BC_ID_MAX, "%s", bc_rows_text(rows, 0));
		bettercompute__site__v1__boot_entry__init(&items[n]);
		items[n].mac = es[n].mac;
		items[n].workflow_id = ids[n];
		items[n].product_uuid = es[n].uuid;
		items[n].node_id = es[n].node_id;
		items[n].not_after_ms = es[n].not_after;
		ptrs[n] = &items[n];
		n++;
	}
	bc_rows_free(rows);
	if (rc < 0)
		goto out;
	b.site_id = c->site;
	b.epoch = rq->epoch;
	b.entries = ptrs;
	b.n_entries = n;
	b.issued_at_ms = c->now_ms;
	c->body_len = bettercompute__site__v1__boot_entries_body__get_packed_size(&b);
	if ((c->body = malloc(c->body_len ? c->body_len : 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	bettercompute__site__v1__boot_entries_body__pack(&b, c->body);
	rc = 0;
out:
	free(es);
	free(ids);
	free(items);
	free(ptrs);
	return rc;
}

enum bc_rpc_status bc_site_boot_entries_handle(struct bc_join_service *s, const uint8_t *body,
                                               size_t len, uint8_t **resp, size_t *resp_len)
{
	Bettercompute__Site__V1__BootEntriesRequest *rq;
	struct site_call c;
	enum bc_rpc_status st;
	int rc;

	*resp = NULL;
	*resp_len = 0;
	if ((rq = bettercompute__site__v1__boot_entries_request__unpack(NULL, len, body)) == NULL)
		return BC_RPC_INVALID;
	c = (struct site_call){.svc = s,
	                       .chain = rq->chain,
	                       .n_chain = rq->n_chain,
	                       .site_id = rq->site_id,
	                       .client_time_ms = rq->client_time_ms,
	                       .purpose = BC_PURPOSE_BOOT_ENTRIES,
	                       .proof = &rq->proof,
	                       .op = list_op,
	                       .rq = rq,
	                       .answer_purpose = BC_PURPOSE_SITE_RESPONSE};
	rc = bc_boot_entries_payload(&c.payload, rq->site_id, rq->epoch, rq->client_time_ms);
	st = run_call(&c, rc, resp, resp_len);
	bettercompute__site__v1__boot_entries_request__free_unpacked(rq, NULL);
	return st;
}

/* ---- FetchSecret: a MAC's discovery token ---- */

/* The workflow names a running commission of this site for that MAC: *not_after
 * becomes the entry's end when it is earlier. */
static int check_workflow(bc_tx *tx, struct site_call *c, const char *wf, const char *mac,
                          int64_t *not_after, const char **reason)
{
	struct bc_workflow_row w;
	struct entry e;
	int rc;

	if ((rc = bc_row_workflow_lock(tx, c->tenant_id, wf, &w)) < 0)
		return rc;
	if (rc == 0 || strcmp(w.kind, "commission") != 0 || strcmp(w.state, "running") != 0 ||
	    !read_entry(w.data, &e) || strcmp(e.site_id, c->site) != 0 || strcmp(e.mac, mac) != 0 ||
	    e.not_after <= c->now_ms)
		*reason = BC_R_SECRET_WORKFLOW;
	else if (e.not_after < *not_after)
		*not_after = e.not_after;
	bc_row_workflow_clear(&w);
	return 0;
}

/* Live discovery tokens of the site for workflow wf ("" for unknown MACs) stay under
 * their limit: a script request costs the server a row, so none is unbounded. */
static int token_limit(bc_tx *tx, struct site_call *c, const char *wf, const char **reason)
{
	int64_t n = 0;
	int rc;

	if ((rc = bc_row_tokens_discovery_live(tx, c->site, c->now_ms, wf, &n)) != 0)
		return rc;
	if (n >= (wf[0] ? BC_SITE_WORKFLOW_TOKENS_MAX : BC_SITE_UNKNOWN_TOKENS_MAX))
		*reason = BC_R_SECRET_LIMIT;
	return 0;
}

static int pack_secret(struct site_call *c, const char *wf, char *secret, int64_t not_after)
{
	Bettercompute__Join__V1__SecretResponseBody b =
	    BETTERCOMPUTE__JOIN__V1__SECRET_RESPONSE_BODY__INIT;

	b.workflow_id = (char *)wf;
	b.kind = (char *)BC_WIRE_SECRET_DISCOVERY;
	b.secret.data = (uint8_t *)secret;
	b.secret.len = strlen(secret);
	b.not_after_ms = not_after;
	c->body_len = bettercompute__join__v1__secret_response_body__get_packed_size(&b);
	if ((c->body = malloc(c->body_len)) == NULL)
		return BC_ERR_NOMEM;
	bettercompute__join__v1__secret_response_body__pack(&b, c->body);
	return 0;
}

static int secret_op(bc_tx *tx, struct site_call *c, const char **reason)
{
	const Bettercompute__Join__V1__SecretRequest *rq = c->rq;
	char mac[BC_MAC_LEN + 1], id[BC_ID_MAX], hash[65], expect[64], *secret = NULL;
	int64_t not_after = c->now_ms + BC_WIRE_DISCOVERY_MAX_AGE_MS;
	int rc;

	if (strcmp(rq->kind, BC_WIRE_SECRET_DISCOVERY) != 0 || bc_mac_canon(rq->mac, mac) != 0) {
		*reason = BC_R_SECRET_KIND;
		return 0;
	}
	/* only the current holder of its site's lease, whatever the epoch */
	if ((rc = bc_row_lease_held_any(tx, c->lease, c->h.id.node_id, c->now_ms)) < 0)
		return rc;
	if (rc == 0) {
		*reason = BC_R_SITE_NOT_HOLDER;
		return 0;
	}
	if (rq->workflow_id[0] &&
	    ((rc = check_workflow(tx, c, rq->workflow_id, mac, &not_after, reason)) != 0 ||
	     *reason))
		return rc;
	if ((rc = token_limit(tx, c, rq->workflow_id, reason)) != 0 || *reason)
		return rc;
	snprintf(expect, sizeof(expect), "{\"mac\":\"%s\"}", mac);
	if ((rc = bc_new_id("tok", id, sizeof(id))) != 0 ||
	    (rc = bc_secret_mint(BC_WIRE_TOKEN_PREFIX, id, &secret, hash)) != 0)
		return rc;
	struct bc_token_write t = {.id = id,
	                           .tenant_id = c->tenant_id,
	                           .site_id = c->site,
	                           .role = "discovery",
	                           .secret_hash = hash,
	                           .uses = 1,
	                           .expires_at = not_after,
	                           .expect = expect,
	                           .workflow_id = rq->workflow_id,
	                           /* the boot server vouches for the product UUID: the same
	                              machine booting again takes its ramdisk node back */
	                           .allow_reclaim = 1,
	                           .description = "discovery token for a PXE boot",
	                           .now_ms = c->now_ms};
	if ((rc = bc_row_token_insert(tx, &t)) == 0)
		rc = pack_secret(c, rq->workflow_id, secret, not_after);
	bc_freezero(secret, strlen(secret));
	return rc;
}

enum bc_rpc_status bc_secret_handle(struct bc_join_service *s, const uint8_t *body, size_t len,
                                    uint8_t **resp, size_t *resp_len)
{
	Bettercompute__Join__V1__SecretRequest *rq;
	struct site_call c;
	enum bc_rpc_status st;
	int rc;

	*resp = NULL;
	*resp_len = 0;
	if ((rq = bettercompute__join__v1__secret_request__unpack(NULL, len, body)) == NULL)
		return BC_RPC_INVALID;
	c = (struct site_call){.svc = s,
	                       .chain = rq->chain,
	                       .n_chain = rq->n_chain,
	                       .site_id = NULL,
	                       .client_time_ms = rq->client_time_ms,
	                       .purpose = BC_PURPOSE_SECRET_REQUEST,
	                       .proof = &rq->proof,
	                       .op = secret_op,
	                       .rq = rq,
	                       .answer_purpose = BC_PURPOSE_SECRET_RESPONSE};
	rc = bc_secret_payload(&c.payload, rq->workflow_id, rq->kind, rq->mac, rq->client_time_ms);
	st = run_call(&c, rc, resp, resp_len);
	bettercompute__join__v1__secret_request__free_unpacked(rq, NULL);
	return st;
}
