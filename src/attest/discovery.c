/* discovery: a PXE-booted ramdisk, vouched for by a single-use discovery token bound
 * to its MAC and by its site's boot server, which signed that it just served that MAC
 * while it held the site's site::boot lease (spec: "discovery").
 *
 * check() (no store): the attestation is a SignedDiscoveryAssertion of bounded size
 * whose fields have their shape; the machine's claimed MACs include the asserted MAC
 * and its product UUID is the asserted one when the assertion names one.
 * verify() (inside the transaction): the token (role discovery, exactly one use
 * left, the assertion's site, its expect.mac, the assertion's workflow); the signer
 * (a site node of that site, not retired, holding site::boot at exactly the asserted
 * epoch); the signature under a current certificate of the signer whose key id the
 * assertion names; freshness at database time; the boot entry's product UUID, when
 * an operator set one, is the asserted one; approval (a join request of the token's
 * tenant); the assertion's single use (attestation_uses, kept until its expiry) and
 * the token's.
 *
 * What is proven: the site (its boot server's signature under the lease), the MAC
 * (the boot server served it and the token is bound to it) and, for the tenant whose
 * operator set it, the boot entry's product UUID. The UUID iPXE's query carries and
 * the machine's claims are claims. No result names a fleet-wide hardware key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/discovery.h"
#include "attest/requests.h"
#include "attest/token.h"
#include "bc/canon.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "bc/reasons.h"
#include "bc/wire.h"
#include "bettercompute/site/v1/site.pb-c.h"
#include "join/holder.h"
#include "provision/provision.h"
#include "rows/leases.h"
#include "rows/uses.h"

#define ISSUED_LEEWAY_MS 60000

static const char *const roles[] = {BC_ROLE_RAMDISK};

static const struct disc_cfg defaults = {
    .pending_ttl_s = BC_ATTEST_PENDING_TTL_S,
    .retry_after_s = BC_ATTEST_RETRY_AFTER_S,
    .resolve_workflow_node = 1,
    .max_age_ms = BC_WIRE_DISCOVERY_MAX_AGE_MS,
    .allowed_kinds = "[\"inventory.refresh\",\"logs.collect\",\"diag.*\",\"disk.wipe\","
                     "\"deploy.*\",\"boot.kexec\"]"};

/* What check() read, for verify(). */
struct disc_state {
	char site[BC_ID_MAX];
	char signer[BC_ID_MAX];
	char mac[BC_MAC_LEN + 1];
	char uuid[BC_UUID_LEN + 1]; /* "" when the assertion names none */
	char workflow[BC_ID_MAX];
	uint64_t epoch;
	int64_t issued_at;
	int64_t expires_at; /* the earlier of not_after and issued_at + 15 minutes */
	uint8_t sig[BC_SIG_LEN];
	char key_id[BC_KEY_ID_LEN + 1];
	uint8_t *assertion;
	size_t assertion_len;
	char subject[65];
};

static int text_ok(const char *s, size_t max, int required)
{
	size_t n = strlen(s);

	if (n == 0)
		return !required;
	if (n >= max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return 0;
	return 1;
}

static int is_lower_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* The assertion's fields, into st; 0 or BC_ERR_INVALID. */
static int read_assertion(const Bettercompute__Site__V1__DiscoveryAssertion *a,
                          struct disc_state *st)
{
	int64_t latest;

	if (!text_ok(a->site_id, BC_ID_MAX, 1) || !text_ok(a->signer_node_id, BC_ID_MAX, 1) ||
	    !text_ok(a->workflow_id, BC_ID_MAX, 0) || !text_ok(a->ip, 64, 0) ||
	    a->lease_epoch == 0 || a->lease_epoch > INT64_MAX || a->issued_at_ms <= 0 ||
	    a->not_after_ms <= a->issued_at_ms || bc_mac_canon(a->mac, st->mac) != 0 ||
	    (a->product_uuid[0] && bc_uuid_canon(a->product_uuid, st->uuid) != 0))
		return BC_ERR_INVALID;
	snprintf(st->site, sizeof(st->site), "%s", a->site_id);
	snprintf(st->signer, sizeof(st->signer), "%s", a->signer_node_id);
	snprintf(st->workflow, sizeof(st->workflow), "%s", a->workflow_id);
	st->epoch = a->lease_epoch;
	st->issued_at = a->issued_at_ms;
	latest = a->issued_at_ms > INT64_MAX - BC_WIRE_DISCOVERY_MAX_AGE_MS
	             ? INT64_MAX
	             : a->issued_at_ms + BC_WIRE_DISCOVERY_MAX_AGE_MS;
	st->expires_at = a->not_after_ms < latest ? a->not_after_ms : latest;
	return 0;
}

/* The SignedDiscoveryAssertion, decoded and its fields read; 0 or BC_ERR_INVALID. */
static int decode(const uint8_t *p, size_t len, struct disc_state *st)
{
	Bettercompute__Site__V1__SignedDiscoveryAssertion *sd = NULL;
	Bettercompute__Site__V1__DiscoveryAssertion *a = NULL;
	uint8_t d[32];
	int rc = BC_ERR_INVALID;

	if (len == 0 || len > BC_WIRE_ASSERTION_MAX ||
	    (sd = bettercompute__site__v1__signed_discovery_assertion__unpack(NULL, len, p)) ==
	        NULL)
		return BC_ERR_INVALID;
	if (sd->assertion.len == 0 || sd->signature.len != BC_SIG_LEN ||
	    !is_lower_hex(sd->key_id, BC_KEY_ID_LEN) ||
	    (a = bettercompute__site__v1__discovery_assertion__unpack(NULL, sd->assertion.len,
	                                                              sd->assertion.data)) == NULL)
		goto out;
	if ((rc = read_assertion(a, st)) != 0)
		goto out;
	memcpy(st->sig, sd->signature.data, BC_SIG_LEN);
	snprintf(st->key_id, sizeof(st->key_id), "%s", sd->key_id);
	if ((st->assertion = malloc(sd->assertion.len)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	memcpy(st->assertion, sd->assertion.data, sd->assertion.len);
	st->assertion_len = sd->assertion.len;
	if ((rc = bc_sha256(st->assertion, st->assertion_len, d)) == 0)
		bc_hex_encode_to(d, 32, st->subject);
out:
	if (a)
		bettercompute__site__v1__discovery_assertion__free_unpacked(a, NULL);
	bettercompute__site__v1__signed_discovery_assertion__free_unpacked(sd, NULL);
	return rc;
}

/* The machine: its claimed MACs include the asserted one, its product UUID the
 * asserted one when the assertion names one. */
static const char *machine(const struct bc_join_input *in, const struct disc_state *st)
{
	char m[BC_MAC_LEN + 1], u[BC_UUID_LEN + 1];
	int seen = 0;

	for (size_t i = 0; i < in->claims.n_macs && !seen; i++)
		seen = bc_mac_canon(in->claims.macs[i], m) == 0 && strcmp(m, st->mac) == 0;
	if (!seen)
		return BC_R_DISCOVERY_MAC;
	if (st->uuid[0] &&
	    (bc_uuid_canon(in->claims.product_uuid, u) != 0 || strcmp(u, st->uuid) != 0))
		return BC_R_PRODUCT_UUID_MISMATCH;
	return NULL;
}

static void release(struct bc_attestor *self, void *state)
{
	struct disc_state *st = state;

	(void)self;
	if (st == NULL)
		return;
	free(st->assertion);
	free(st);
}

static int check(struct bc_attestor *self, const struct bc_join_input *in,
                 struct bc_attest_outcome *out, void **state)
{
	struct disc_state *st;
	const char *reason;
	int rc;

	(void)self;
	*state = NULL;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return BC_ERR_NOMEM;
	*state = st;
	if ((rc = decode(in->attestation, in->attestation_len, st)) == BC_ERR_INVALID) {
		bc_refuse(out, BC_R_DISCOVERY_MALFORMED);
		return 0;
	}
	if (rc != 0)
		return rc;
	if ((reason = machine(in, st)) != NULL)
		bc_refuse(out, reason);
	return 0;
}

/* ---- verify ---- */

/* The token's expect.mac, when set, is the asserted MAC. */
static int token_mac(bc_tx *tx, const char *token_id, const char *mac, const char **reason)
{
	char *expect = NULL, m[BC_MAC_LEN + 1];
	json_t *e = NULL;
	const char *v;
	int rc, reclaim;

	if ((rc = bc_row_token_expect(tx, token_id, &expect, &reclaim)) != 1)
		return rc < 0 ? rc : BC_ERR_INTERNAL; /* locked a moment ago */
	if (bc_json_parse(expect, strlen(expect), 0, &e, NULL, 0) == 0 &&
	    bc_json_get_string(e, "mac", &v) == 0 &&
	    (bc_mac_canon(v, m) != 0 || strcmp(m, mac) != 0))
		*reason = BC_R_DISCOVERY_TOKEN_MAC;
	json_decref(e);
	free(expect);
	return 0;
}

#define SIGNER_KEYS_MAX 4 /* certificates of one signer tried, at most */

/* The signer's certificates whose key has the assertion's key id and verifies its
 * signature (a renewal may keep its key: each is then held to its row). */
struct sig_check {
	const struct disc_state *st;
	const char *trust_domain;
	struct bc_holder h[SIGNER_KEYS_MAX];
	size_t n;
	int failed; /* out of memory */
};

static void sig_check_clear(struct sig_check *sc)
{
	for (size_t i = 0; i < sc->n; i++) {
		free((void *)sc->h[i].der);
		bc_holder_clear(&sc->h[i]);
	}
	sc->n = 0;
}

static int try_cert(void *ctx, const uint8_t *der, size_t len)
{
	struct sig_check *sc = ctx;
	struct bc_holder *h = &sc->h[sc->n];
	char kid[BC_KEY_ID_LEN + 1];
	uint8_t d[32], *copy;

	if (bc_holder_peek(h, sc->trust_domain, der, len, NULL) != BC_HOLDER_OK)
		return 0;
	kid[0] = 0;
	if (bc_p256_spki_sha256(h->point, d) == 0)
		bc_hex_encode_to(d, sizeof(d), kid);
	if (strcmp(kid, sc->st->key_id) != 0 ||
	    bc_holder_prove(h, BC_PURPOSE_DISCOVERY_ASSERTION, sc->st->assertion,
	                    sc->st->assertion_len, sc->st->sig, BC_SIG_LEN) != BC_HOLDER_OK) {
		bc_holder_clear(h);
		return 0;
	}
	/* the row's bytes are freed when this returns */
	if ((copy = malloc(len)) == NULL) {
		bc_holder_clear(h);
		sc->failed = 1;
		return 1;
	}
	memcpy(copy, der, len);
	h->der = copy;
	return ++sc->n == SIGNER_KEYS_MAX;
}

/* The signer: a site node of the site, not retired, holding site::boot at exactly
 * the asserted epoch, one of whose certificates has the assertion's key id, verifies
 * the signature and is current as join/holder.h says (a superseded one is not: its
 * key was rotated away). */
static int signer(bc_tx *tx, const struct disc_state *st, const struct bc_join_input *in,
                  const char **reason)
{
	struct sig_check sc = {.st = st, .trust_domain = in->trust_domain};
	struct bc_holder_want w = {.now_ms = in->now_ms, .role = BC_ROLE_SITE, .pki = in->node_pki};
	struct bc_node_row n;
	struct bc_cert_row row;
	char lease[BC_ID_MAX + 16];
	int rc, current = 0;

	if ((rc = bc_row_node_get(tx, BC_NODE_BY_ID, st->signer, &n)) < 0)
		return rc;
	if (rc == 0 || strcmp(n.role, BC_ROLE_SITE) != 0 || strcmp(n.site_id, st->site) != 0) {
		*reason = BC_R_DISCOVERY_SIGNER;
		return 0;
	}
	if (strcmp(n.state, "retired") == 0) {
		*reason = BC_R_DISCOVERY_SIGNER_RETIRED;
		return 0;
	}
	snprintf(lease, sizeof(lease), BC_ROW_SITE_LEASE_FMT, st->site);
	if ((rc = bc_row_lease_held(tx, lease, st->signer, (int64_t)st->epoch, in->now_ms)) < 0)
		return rc;
	if (rc == 0) {
		*reason = BC_R_DISCOVERY_FENCED;
		return 0;
	}
	if ((rc = bc_row_cert_each(tx, st->signer, try_cert, &sc)) < 0 || sc.failed)
		goto out;
	for (size_t i = 0; i < sc.n && !current; i++) {
		if ((rc = bc_holder_current(tx, &sc.h[i], &w, &row)) < 0)
			goto out;
		current = rc == BC_HOLDER_OK;
	}
	rc = 0;
	if (!current)
		*reason = BC_R_DISCOVERY_SIGNATURE;
out:
	if (sc.failed)
		rc = BC_ERR_NOMEM;
	sig_check_clear(&sc);
	return rc;
}

/* What the boot entry of the token's workflow says of the machine: the node it
 * re-commissions (with resolve_workflow_node) and the product UUID an operator set
 * (commission --product-uuid), the one UUID this attestor holds proven. */
struct disc_entry {
	char node[BC_ID_MAX];
	char uuid[BC_UUID_LEN + 1]; /* "" when the entry names none */
};

/* The workflow the token was minted for is still a running commission; its entry's
 * product UUID, when it names one, is the asserted one (the query iPXE sent, which
 * the boot server signs, is the machine's word only). */
static int workflow_entry(bc_tx *tx, const struct disc_cfg *c, const struct bc_token_row *t,
                          const struct disc_state *st, struct disc_entry *e, const char **reason)
{
	struct bc_workflow_row w;
	json_t *j = NULL, *be;
	const char *v;
	int rc;

	memset(e, 0, sizeof(*e));
	if ((rc = bc_row_workflow_lock(tx, t->tenant_id, t->workflow_id, &w)) < 0)
		return rc;
	if (rc == 0 || strcmp(w.kind, BC_WF_COMMISSION) != 0 ||
	    strcmp(w.state, BC_WF_RUNNING) != 0) {
		*reason = BC_R_WORKFLOW_NOT_RUNNING;
		goto out;
	}
	if (bc_json_parse(w.data, strlen(w.data), 0, &j, NULL, 0) != 0 ||
	    (be = json_object_get(j, "bootEntry")) == NULL)
		goto out;
	if (c->resolve_workflow_node && bc_json_get_string(be, "nodeId", &v) == 0 &&
	    strlen(v) < BC_ID_MAX)
		snprintf(e->node, BC_ID_MAX, "%s", v);
	if (bc_json_get_string(be, "productUuid", &v) == 0 &&
	    (bc_uuid_canon(v, e->uuid) != 0 || strcmp(e->uuid, st->uuid) != 0))
		*reason = BC_R_DISCOVERY_ENTRY_UUID;
out:
	json_decref(j);
	bc_row_workflow_clear(&w);
	return 0;
}

/* The operator's decision, for a machine the configuration defers, in the token's
 * tenant: the request is keyed on the boot entry's product UUID with hardware_key =
 * "product-uuid" and an entry that names one, else on site and MAC (a UUID the
 * machine or iPXE claims keys nothing: anyone on the boot network can claim one).
 * It is bound to the claims it shows. A refusal in *reason. */
static int approval(bc_tx *tx, const struct disc_cfg *c, const struct bc_join_input *in,
                    const struct disc_state *st, const struct bc_token_row *t,
                    const struct disc_entry *e, struct bc_attest_outcome *out, const char **reason)
{
	char key[BC_HWKEY_MAX], u[BC_UUID_LEN + 1], *claims;
	json_t *j;
	int rc;

	if (c->hwkey == HWKEY_UUID && e->uuid[0])
		snprintf(key, sizeof(key), "uuid:%s", e->uuid);
	else
		snprintf(key, sizeof(key), "%s/%s", st->site, st->mac);
	j = json_pack("{s:s, s:s, s:s?, s:s?, s:s?}", "siteId", st->site, "mac", st->mac,
	              "productUuid", bc_uuid_canon(in->claims.product_uuid, u) == 0 ? u : NULL,
	              "serial",
	              in->claims.serial && in->claims.serial[0] ? in->claims.serial : NULL,
	              "workflowId", st->workflow[0] ? st->workflow : NULL);
	claims = j ? bc_json_dump(j) : NULL;
	json_decref(j);
	if (claims == NULL)
		return BC_ERR_NOMEM;
	struct bc_join_request_place p = {.attestor = BC_WIRE_ATTESTOR_DISCOVERY,
	                                  .key = key,
	                                  .tenant = t->tenant_id,
	                                  .pool = t->pool_id,
	                                  .site = t->site_id,
	                                  .claims = claims,
	                                  .detail = claims, /* what join-requests shows */
	                                  .pending_ttl_s = c->pending_ttl_s,
	                                  .retry_after_s = (uint32_t)c->retry_after_s};
	rc = bc_join_request_place(tx, &p, in, BC_R_DISCOVERY_DENIED, out, reason);
	free(claims);
	return rc;
}

static int checks(bc_tx *tx, const struct disc_cfg *c, const struct bc_join_input *in,
                  const struct disc_state *st, struct bc_token_row *t, struct disc_entry *e,
                  struct bc_attest_outcome *out, const char **reason)
{
	int rc;

	if ((rc = bc_token_check(tx, in->token, in->now_ms, t, out, reason)) != 0 || *reason)
		return rc;
	if (strcmp(t->role, "discovery") != 0 || t->uses_left != 1)
		*reason = BC_R_NOT_SINGLE_USE;
	else if (strcmp(t->site_id, st->site) != 0)
		*reason = BC_R_DISCOVERY_SITE;
	else if ((rc = token_mac(tx, t->id, st->mac, reason)) != 0 || *reason)
		return rc;
	else if (strcmp(t->workflow_id, st->workflow) != 0)
		*reason = BC_R_DISCOVERY_WORKFLOW;
	else if ((rc = signer(tx, st, in, reason)) != 0 || *reason)
		return rc;
	else if (st->expires_at <= in->now_ms || st->issued_at > in->now_ms + ISSUED_LEEWAY_MS ||
	         in->now_ms - st->issued_at >= c->max_age_ms)
		*reason = BC_R_DISCOVERY_EXPIRED;
	else if (t->workflow_id[0])
		return workflow_entry(tx, c, t, st, e, reason);
	return 0;
}

static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	const struct disc_cfg *c = self->ctx ? self->ctx : &defaults;
	const struct disc_state *st = in->check_state;
	struct bc_token_row t;
	struct disc_entry e = {0};
	const char *reason = NULL;
	int rc;

	if (st == NULL)
		return BC_ERR_INTERNAL; /* check() always leaves one */
	if ((rc = checks(tx, c, in, st, &t, &e, out, &reason)) != 0)
		return rc;
	if (reason) {
		bc_refuse(out, reason);
		return 0;
	}
	if (c->approval == APPROVE_ALWAYS ||
	    (c->approval == APPROVE_UNKNOWN && !t.workflow_id[0])) {
		if ((rc = approval(tx, c, in, st, &t, &e, out, &reason)) != 0)
			return rc;
		if (reason) {
			bc_refuse(out, reason);
			return 0;
		}
		if (out->kind != BC_OUTCOME_RESULT)
			return 0;
		memset(&out->result, 0, sizeof(out->result));
	}
	/* the final round: the assertion's one use, then the token's */
	rc = bc_row_use_insert(tx, BC_WIRE_ATTESTOR_DISCOVERY, st->subject, st->expires_at,
	                       in->now_ms);
	if (rc == BC_ERR_CONFLICT) {
		bc_refuse(out, BC_R_ASSERTION_REUSED);
		return 0;
	}
	if (rc != 0 || (rc = bc_row_token_consume(tx, t.id, in->now_ms)) != 0)
		return rc;
	bc_token_admit(&t, BC_ROLE_RAMDISK, out);
	snprintf(out->result.node_id, BC_ID_MAX, "%s", e.node);
	snprintf(out->node_id, BC_ID_MAX, "%s", e.node);
	/* no hardware key of the fleet: the product UUID (the boot entry's, which the
	   machine asserted and claims, or the machine's own claim) is left to
	   JoinService as a claim, unique within the tenant. An entry's UUID is one
	   tenant's operator's word: made fleet-wide it would let that tenant lock
	   another's machine out (join:reclaim). */
	out->result.cert_ttl_ms = c->cert_ttl_s * 1000;
	snprintf(out->allowed_kinds_json, sizeof(out->allowed_kinds_json), "%s", c->allowed_kinds);
	return 0;
}

static int configure(struct bc_attestor *self, const bc_toml *cfg, const char *table, char *err,
                     size_t errlen)
{
	struct disc_cfg *c;
	int rc;

	if ((c = malloc(sizeof(*c))) == NULL)
		return BC_ERR_NOMEM;
	*c = defaults;
	if (cfg && (rc = disc_cfg_read(cfg, table, c, err, errlen)) != 0) {
		free(c);
		return rc;
	}
	free(self->ctx);
	self->ctx = c;
	return 0;
}

static void destroy(struct bc_attestor *self)
{
	free(self->ctx);
	self->ctx = NULL;
}

static const struct bc_attestor discovery = {
    .abi = BC_ATTESTOR_ABI,
    .id = BC_WIRE_ATTESTOR_DISCOVERY,
    .roles = roles,
    .n_roles = 1,
    .configure = configure,
    .verify = verify,
    .destroy = destroy,
    .check = check,
    .release = release,
};

const struct bc_attestor *bc_attestor_discovery(void)
{
	return &discovery;
}
