/* A site node's calls (bc/client.h): the site::boot lease, boot entries, discovery
 * tokens, and the assertions its boot server signs. Every answer is opened under its
 * purpose with the pinned join signing key before anything in it is used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "bettercompute/site/v1/site.pb-c.h"
#include "client/internal.h"

#define MAX_CHAIN   8
#define MAX_ENTRIES 1024

static int caller_ok(const struct bc_client_pins *pins, const struct bc_site_caller *c)
{
	return pins && c && c->chain && c->chain_lens && c->n_chain > 0 &&
	       c->n_chain <= MAX_CHAIN && c->signer && c->site_id;
}

static int sign_payload(const struct bc_site_caller *c, const char *purpose, bc_buf *b,
                        uint8_t sig[BC_SIG_LEN])
{
	return bc_es256_sign(c->signer, purpose, b->p, b->len, sig);
}

/* One kind of call: where it is posted, what errors call it, its answer's purpose. */
struct site_call {
	const char *path;
	const char *what;
	const char *purpose;
};

/* POSTs a packed request and opens the answer under k->purpose. */
static int call(const struct bc_client_pins *pins, const struct site_call *k, const uint8_t *req,
                size_t req_len, Bettercompute__Join__V1__SignedResponse **sr, char *err,
                size_t errlen)
{
	struct bc_client_reply r = {0};
	int rc;

	*sr = NULL;
	if ((rc = bc_client_post(pins, k->path, req, req_len, &r, err, errlen)) != 0)
		return rc;
	if (r.status != 200)
		rc = bc_client_refused(k->what, "security.site.refused", r.status, r.body, r.len,
		                       err, errlen);
	else
		rc = bc_client_open_signed(pins, k->purpose, r.body, r.len, sr, err, errlen);
	free(r.body);
	return rc;
}

static ProtobufCBinaryData *chain_of(const struct bc_site_caller *c,
                                     ProtobufCBinaryData out[MAX_CHAIN])
{
	for (size_t i = 0; i < c->n_chain; i++) {
		out[i].data = (uint8_t *)c->chain[i];
		out[i].len = c->chain_lens[i];
	}
	return out;
}

int bc_client_lease(const struct bc_client_pins *pins, const struct bc_site_caller *c,
                    enum bc_lease_call kind, uint64_t epoch, uint32_t ttl_seconds,
                    struct bc_lease_answer *out, char *err, size_t errlen)
{
	static const char *const paths[] = {NULL, BC_WIRE_PATH_ACQUIRE_LEASE,
	                                    BC_WIRE_PATH_RENEW_LEASE, BC_WIRE_PATH_RELEASE_LEASE};
	static const char *const purposes[] = {NULL, BC_PURPOSE_LEASE_ACQUIRE,
	                                       BC_PURPOSE_LEASE_RENEW, BC_PURPOSE_LEASE_RELEASE};
	struct site_call k = {NULL, "lease request", BC_PURPOSE_SITE_RESPONSE};
	Bettercompute__Site__V1__LeaseRequest rq = BETTERCOMPUTE__SITE__V1__LEASE_REQUEST__INIT;
	Bettercompute__Join__V1__SignedResponse *sr = NULL;
	Bettercompute__Site__V1__LeaseBody *b = NULL;
	ProtobufCBinaryData chain[MAX_CHAIN];
	uint8_t sig[BC_SIG_LEN], *req = NULL;
	size_t req_len;
	bc_buf p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!caller_ok(pins, c) || kind < BC_LEASE_ACQUIRE || kind > BC_LEASE_RELEASE)
		return BC_ERR_INVALID;
	rq.chain = chain_of(c, chain);
	rq.n_chain = c->n_chain;
	rq.site_id = (char *)c->site_id;
	rq.name = (char *)BC_WIRE_LEASE_BOOT;
	rq.epoch = kind == BC_LEASE_ACQUIRE ? 0 : epoch;
	rq.ttl_seconds = ttl_seconds;
	rq.client_time_ms = bc_now_ms();
	if ((rc = bc_lease_payload(&p, rq.site_id, rq.name, rq.epoch, rq.ttl_seconds,
	                           rq.client_time_ms)) == 0)
		rc = sign_payload(c, purposes[kind], &p, sig);
	bc_buf_free(&p);
	if (rc != 0)
		return rc;
	rq.proof.data = sig;
	rq.proof.len = sizeof(sig);
	req_len = bettercompute__site__v1__lease_request__get_packed_size(&rq);
	if ((req = malloc(req_len)) == NULL)
		return BC_ERR_NOMEM;
	bettercompute__site__v1__lease_request__pack(&rq, req);
	k.path = paths[kind];
	rc = call(pins, &k, req, req_len, &sr, err, errlen);
	free(req);
	if (rc != 0)
		goto out;
	if ((b = bettercompute__site__v1__lease_body__unpack(NULL, sr->body.len, sr->body.data)) ==
	        NULL ||
	    strcmp(b->site_id, c->site_id) != 0 || strcmp(b->name, BC_WIRE_LEASE_BOOT) != 0 ||
	    strlen(b->holder_node_id) >= sizeof(out->holder)) {
		bc_errf(err, errlen, "lease answer: not a LeaseBody of site %s", c->site_id);
		rc = BC_ERR_VERIFY;
		goto out;
	}
	snprintf(out->holder, sizeof(out->holder), "%s", b->holder_node_id);
	out->epoch = b->epoch;
	out->expires_at_ms = b->expires_at_ms;
	out->held = b->held;
	out->issued_at_ms = b->issued_at_ms;
out:
	if (b)
		bettercompute__site__v1__lease_body__free_unpacked(b, NULL);
	if (sr)
		bettercompute__join__v1__signed_response__free_unpacked(sr, NULL);
	return rc;
}

static int copy_entry(const Bettercompute__Site__V1__BootEntry *e, struct bc_boot_entry *o)
{
	if (strlen(e->mac) >= sizeof(o->mac) || strlen(e->workflow_id) >= sizeof(o->workflow_id) ||
	    strlen(e->product_uuid) >= sizeof(o->product_uuid) ||
	    strlen(e->node_id) >= sizeof(o->node_id))
		return BC_ERR_VERIFY;
	snprintf(o->mac, sizeof(o->mac), "%s", e->mac);
	snprintf(o->workflow_id, sizeof(o->workflow_id), "%s", e->workflow_id);
	snprintf(o->product_uuid, sizeof(o->product_uuid), "%s", e->product_uuid);
	snprintf(o->node_id, sizeof(o->node_id), "%s", e->node_id);
	o->not_after_ms = e->not_after_ms;
	return 0;
}

int bc_client_boot_entries(const struct bc_client_pins *pins, const struct bc_site_caller *c,
                           uint64_t epoch, struct bc_boot_entry **entries, size_t *n,
                           int64_t *issued_at_ms, char *err, size_t errlen)
{
	static const struct site_call k = {BC_WIRE_PATH_LIST_BOOT, "boot entries request",
	                                   BC_PURPOSE_SITE_RESPONSE};
	Bettercompute__Site__V1__BootEntriesRequest rq =
	    BETTERCOMPUTE__SITE__V1__BOOT_ENTRIES_REQUEST__INIT;
	Bettercompute__Join__V1__SignedResponse *sr = NULL;
	Bettercompute__Site__V1__BootEntriesBody *b = NULL;
	ProtobufCBinaryData chain[MAX_CHAIN];
	uint8_t sig[BC_SIG_LEN], *req = NULL;
	size_t req_len;
	bc_buf p;
	int rc;

	*entries = NULL;
	*n = 0;
	*issued_at_ms = 0;
	if (!caller_ok(pins, c))
		return BC_ERR_INVALID;
	rq.chain = chain_of(c, chain);
	rq.n_chain = c->n_chain;
	rq.site_id = (char *)c->site_id;
	rq.epoch = epoch;
	rq.client_time_ms = bc_now_ms();
	if ((rc = bc_boot_entries_payload(&p, rq.site_id, epoch, rq.client_time_ms)) == 0)
		rc = sign_payload(c, BC_PURPOSE_BOOT_ENTRIES, &p, sig);
	bc_buf_free(&p);
	if (rc != 0)
		return rc;
	rq.proof.data = sig;
	rq.proof.len = sizeof(sig);
	req_len = bettercompute__site__v1__boot_entries_request__get_packed_size(&rq);
	if ((req = malloc(req_len)) == NULL)
		return BC_ERR_NOMEM;
	bettercompute__site__v1__boot_entries_request__pack(&rq, req);
	rc = call(pins, &k, req, req_len, &sr, err, errlen);
	free(req);
	if (rc != 0)
		goto out;
	rc = BC_ERR_VERIFY;
	if ((b = bettercompute__site__v1__boot_entries_body__unpack(NULL, sr->body.len,
	                                                            sr->body.data)) == NULL ||
	    strcmp(b->site_id, c->site_id) != 0 || b->epoch != epoch ||
	    b->n_entries > MAX_ENTRIES) {
		bc_errf(err, errlen, "boot entries answer: not a BootEntriesBody of site %s",
		        c->site_id);
		goto out;
	}
	if ((*entries = calloc(b->n_entries ? b->n_entries : 1, sizeof(**entries))) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < b->n_entries; i++)
		if (copy_entry(b->entries[i], &(*entries)[i]) != 0) {
			bc_errf(err, errlen, "boot entries answer: an entry out of shape");
			free(*entries);
			*entries = NULL;
			goto out;
		}
	*n = b->n_entries;
	*issued_at_ms = b->issued_at_ms;
	rc = 0;
out:
	if (b)
		bettercompute__site__v1__boot_entries_body__free_unpacked(b, NULL);
	if (sr)
		bettercompute__join__v1__signed_response__free_unpacked(sr, NULL);
	return rc;
}

int bc_client_fetch_secret(const struct bc_client_pins *pins, const struct bc_site_caller *c,
                           const char *workflow_id, const char *mac, char **token,
                           int64_t *not_after_ms, char *err, size_t errlen)
{
	static const struct site_call k = {BC_WIRE_PATH_FETCH_SECRET, "discovery token request",
	                                   BC_PURPOSE_SECRET_RESPONSE};
	Bettercompute__Join__V1__SecretRequest rq = BETTERCOMPUTE__JOIN__V1__SECRET_REQUEST__INIT;
	Bettercompute__Join__V1__SignedResponse *sr = NULL;
	Bettercompute__Join__V1__SecretResponseBody *b = NULL;
	ProtobufCBinaryData chain[MAX_CHAIN];
	uint8_t sig[BC_SIG_LEN], *req = NULL;
	size_t req_len;
	bc_buf p;
	int rc;

	*token = NULL;
	*not_after_ms = 0;
	if (!caller_ok(pins, c) || workflow_id == NULL || mac == NULL)
		return BC_ERR_INVALID;
	rq.chain = chain_of(c, chain);
	rq.n_chain = c->n_chain;
	rq.workflow_id = (char *)workflow_id;
	rq.kind = (char *)BC_WIRE_SECRET_DISCOVERY;
	rq.mac = (char *)mac;
	rq.client_time_ms = bc_now_ms();
	if ((rc = bc_secret_payload(&p, workflow_id, rq.kind, mac, rq.client_time_ms)) == 0)
		rc = sign_payload(c, BC_PURPOSE_SECRET_REQUEST, &p, sig);
	bc_buf_free(&p);
	if (rc != 0)
		return rc;
	rq.proof.data = sig;
	rq.proof.len = sizeof(sig);
	req_len = bettercompute__join__v1__secret_request__get_packed_size(&rq);
	if ((req = malloc(req_len)) == NULL)
		return BC_ERR_NOMEM;
	bettercompute__join__v1__secret_request__pack(&rq, req);
	rc = call(pins, &k, req, req_len, &sr, err, errlen);
	free(req);
	if (rc != 0)
		goto out;
	rc = BC_ERR_VERIFY;
	if ((b = bettercompute__join__v1__secret_response_body__unpack(NULL, sr->body.len,
	                                                               sr->body.data)) == NULL ||
	    strcmp(b->kind, BC_WIRE_SECRET_DISCOVERY) != 0 ||
	    strcmp(b->workflow_id, workflow_id) != 0 || b->secret.len == 0 ||
	    b->secret.len > BC_WIRE_TOKEN_MAX || memchr(b->secret.data, 0, b->secret.len) != NULL) {
		bc_errf(err, errlen,
		        "discovery token answer: not a SecretResponseBody for "
		        "that workflow");
		goto out;
	}
	if ((*token = malloc(b->secret.len + 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	memcpy(*token, b->secret.data, b->secret.len);
	(*token)[b->secret.len] = 0;
	*not_after_ms = b->not_after_ms;
	rc = 0;
out:
	if (b) {
		OPENSSL_cleanse(b->secret.data, b->secret.len);
		bettercompute__join__v1__secret_response_body__free_unpacked(b, NULL);
	}
	if (sr) {
		OPENSSL_cleanse(sr->body.data, sr->body.len); /* it holds the token */
		bettercompute__join__v1__signed_response__free_unpacked(sr, NULL);
	}
	return rc;
}

static char *or_empty(const char *s)
{
	return (char *)(s ? s : "");
}

int bc_client_sign_assertion(const struct bc_discovery_fields *f, const struct bc_signer *s,
                             uint8_t **out, size_t *len)
{
	Bettercompute__Site__V1__DiscoveryAssertion a =
	    BETTERCOMPUTE__SITE__V1__DISCOVERY_ASSERTION__INIT;
	Bettercompute__Site__V1__SignedDiscoveryAssertion sd =
	    BETTERCOMPUTE__SITE__V1__SIGNED_DISCOVERY_ASSERTION__INIT;
	char kid[BC_KEY_ID_LEN + 1];
	uint8_t sig[BC_SIG_LEN], *body = NULL;
	size_t body_len;
	int rc;

	*out = NULL;
	*len = 0;
	if (f == NULL || f->site_id == NULL || f->signer_node_id == NULL || f->mac == NULL ||
	    s == NULL)
		return BC_ERR_INVALID;
	a.site_id = (char *)f->site_id;
	a.signer_node_id = (char *)f->signer_node_id;
	a.lease_epoch = f->lease_epoch;
	a.mac = (char *)f->mac;
	a.ip = or_empty(f->ip);
	a.product_uuid = or_empty(f->product_uuid);
	a.workflow_id = or_empty(f->workflow_id);
	a.issued_at_ms = f->issued_at_ms;
	a.not_after_ms = f->not_after_ms;
	body_len = bettercompute__site__v1__discovery_assertion__get_packed_size(&a);
	if ((body = malloc(body_len)) == NULL)
		return BC_ERR_NOMEM;
	bettercompute__site__v1__discovery_assertion__pack(&a, body);
	if ((rc = bc_key_id(s->key, kid)) != 0 ||
	    (rc = bc_es256_sign(s, BC_PURPOSE_DISCOVERY_ASSERTION, body, body_len, sig)) != 0)
		goto out;
	sd.assertion.data = body;
	sd.assertion.len = body_len;
	sd.signature.data = sig;
	sd.signature.len = sizeof(sig);
	sd.key_id = kid;
	*len = bettercompute__site__v1__signed_discovery_assertion__get_packed_size(&sd);
	if (*len > BC_WIRE_ASSERTION_MAX) {
		*len = 0;
		rc = BC_ERR_LIMIT;
		goto out;
	}
	if ((*out = malloc(*len)) == NULL) {
		*len = 0;
		rc = BC_ERR_NOMEM;
		goto out;
	}
	bettercompute__site__v1__signed_discovery_assertion__pack(&sd, *out);
out:
	free(body);
	return rc;
}
