/* cloud-iid: a cloud VM proves that the operator's provider account created it with
 * the identity document its cloud signs.
 *
 * Evidence (UTF-8 JSON): {"provider":"gcp"|"aws"|"oidc","document":"..."} and, for
 * aws, "signature" and/or "rsa2048" (standard base64). gcp and oidc documents are
 * JWTs whose aud must be <audience>#<hex sha256(csr)>; an oidc token is matched to
 * its [oidc.<id>] by its iss, then verified in full.
 *
 * check() (before the transaction) does all the cryptography: the JWKS (the set
 * its file or refresher thread holds: a join never fetches), the JWS, the PKCS#7, the
 * allow-lists and the times. verify() (inside it): a bound instance or a recorded
 * use is instance-reused (each (provider, account, instance) joins once, ever: a
 * known instance re-joins with x509pop), else the first resolve rule that matches
 * places it, else unknown-instance. The use is kept forever, and the node bound to
 * the subject. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/cloud_iid.h"
#include "bc/canon.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/log.h"
#include "bc/reasons.h"
#include "rows/bindings.h"
#include "rows/uses.h"

#define EVIDENCE_MAX (64 * 1024)

static const char *const default_roles[] = {"node"};

struct evidence {
	json_t *root;
	const char *provider;
	const char *document;
	uint8_t *sig, *p7;
	size_t sig_len, p7_len;
};

static void evidence_free(struct evidence *e)
{
	json_decref(e->root);
	free(e->sig);
	free(e->p7);
	memset(e, 0, sizeof(*e));
}

static int opt_b64(const json_t *o, const char *key, uint8_t **out, size_t *len)
{
	const char *s;
	int rc;

	if ((rc = bc_json_get_string(o, key, &s)) == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0 || s[0] == 0)
		return BC_ERR_INVALID;
	return bc_b64_decode(s, strlen(s), out, len);
}

static int parse(const struct bc_join_input *in, struct evidence *e)
{
	const char *k;
	json_t *v;

	memset(e, 0, sizeof(*e));
	if (in->attestation_len == 0 || in->attestation_len > EVIDENCE_MAX ||
	    bc_json_parse(in->attestation, in->attestation_len, EVIDENCE_MAX, &e->root, NULL, 0) !=
	        0 ||
	    !json_is_object(e->root))
		return BC_ERR_INVALID;
	json_object_foreach(e->root, k, v)
	{
		if (strcmp(k, "provider") && strcmp(k, "document") && strcmp(k, "signature") &&
		    strcmp(k, "rsa2048"))
			return BC_ERR_INVALID;
	}
	if (bc_json_get_string(e->root, "provider", &e->provider) != 0 ||
	    bc_json_get_string(e->root, "document", &e->document) != 0 || e->document[0] == 0 ||
	    opt_b64(e->root, "signature", &e->sig, &e->sig_len) != 0 ||
	    opt_b64(e->root, "rsa2048", &e->p7, &e->p7_len) != 0)
		return BC_ERR_INVALID;
	return 0;
}

/* A dotted path into the claims ("google.compute_engine.project_id"): a string or
 * an integer (as decimal), into out. BC_ERR_INVALID otherwise. */
static int claim_at(const json_t *c, const char *path, char out[CLOUD_FIELD_MAX])
{
	char part[CLOUD_FIELD_MAX];
	const char *p = path, *dot;

	while (c && (dot = strchr(p, '.')) != NULL) {
		if ((size_t)(dot - p) >= sizeof(part))
			return BC_ERR_INVALID;
		memcpy(part, p, (size_t)(dot - p));
		part[dot - p] = 0;
		c = json_object_get(c, part);
		p = dot + 1;
	}
	c = c ? json_object_get(c, p) : NULL;
	if (json_is_integer(c))
		snprintf(out, CLOUD_FIELD_MAX, "%lld", (long long)json_integer_value(c));
	else if (json_is_string(c) && json_string_value(c)[0] &&
	         strlen(json_string_value(c)) < CLOUD_FIELD_MAX)
		snprintf(out, CLOUD_FIELD_MAX, "%s", json_string_value(c));
	else
		return BC_ERR_INVALID;
	return 0;
}

/* The token under p's keys; a kid the set lacks asks for the set again (the
 * provider may have rotated its keys) and waits for it at most a bound. */
static int jwt_verify(struct jwt_provider *p, const struct bc_join_input *in, const char *token,
                      json_t **claims, const char **reason)
{
	char aud[1024], csr_hex[65], kid[BC_JWS_KID_MAX], err[768] = "";
	struct jwks_ref *r;
	int rc;

	bc_hex_encode_to(in->csr_sha256, 32, csr_hex);
	snprintf(aud, sizeof(aud), "%s" BC_WIRE_CLOUD_AUDIENCE_SEP "%s", p->audience, csr_hex);
	struct bc_jws_policy pol = {.algs = p->algs,
	                            .n_algs = p->n_algs,
	                            .issuer = p->issuer,
	                            .audience = aud,
	                            .now_ms = in->now_ms,
	                            .leeway_ms = CLOUD_LEEWAY_MS,
	                            .max_age_ms = p->max_age_ms};
	r = jwks_get(&p->jwks, in->now_ms, bc_jws_kid(token, strlen(token), kid) == 0 ? kid : NULL,
	             err, sizeof(err));
	if (r == NULL) {
		bc_log(BC_LOG_WARN, "cloud-iid: JWKS unavailable", "provider", p->name, "error",
		       err, NULL);
		*reason = BC_R_JWKS_UNAVAILABLE;
		return 0;
	}
	rc = bc_jws_verify(token, strlen(token), r->keys, &pol, claims, reason);
	jwks_put(&p->jwks, r);
	return rc;
}

static void region_of_zone(const char *zone, char out[CLOUD_FIELD_MAX])
{
	const char *dash = strrchr(zone, '-');

	snprintf(out, CLOUD_FIELD_MAX, "%.*s", dash ? (int)(dash - zone) : (int)strlen(zone), zone);
}

static const char *gcp_identity(const struct jwt_provider *p, const json_t *c,
                                struct cloud_identity *id)
{
	const json_t *ce = json_object_get(json_object_get(c, "google"), "compute_engine");

	if (claim_at(ce, "project_id", id->account) != 0 ||
	    claim_at(ce, "instance_id", id->instance) != 0 || claim_at(ce, "zone", id->zone) != 0)
		return BC_R_GCP_CLAIMS;
	region_of_zone(id->zone, id->region);
	return str_list_has(&p->allowed, id->account) ? NULL : BC_R_GCP_PROJECT;
}

static const char *oidc_identity(const struct jwt_provider *p, const json_t *c,
                                 struct cloud_identity *id)
{
	if (claim_at(c, p->account_claim, id->account) != 0 ||
	    claim_at(c, p->instance_claim, id->instance) != 0 ||
	    (p->zone_claim && claim_at(c, p->zone_claim, id->zone) != 0))
		return BC_R_OIDC_CLAIMS;
	return str_list_has(&p->allowed, id->account) ? NULL : BC_R_OIDC_ACCOUNT;
}

/* The oidc provider whose issuer the token names (unverified: the verification that
 * follows requires that exact issuer). */
static struct jwt_provider *oidc_for(const struct cloud_cfg *c, const char *token)
{
	const char *dot1 = strchr(token, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	struct jwt_provider *found = NULL;
	uint8_t *raw = NULL;
	size_t n;
	json_t *o = NULL;
	const char *iss;

	if (dot2 == NULL || bc_b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &raw, &n) != 0 ||
	    bc_json_parse(raw, n, BC_JWS_MAX, &o, NULL, 0) != 0 ||
	    bc_json_get_string(o, "iss", &iss) != 0)
		goto out;
	for (size_t i = 0; i < c->n_oidc && found == NULL; i++)
		if (strcmp(c->oidc[i]->issuer, iss) == 0)
			found = c->oidc[i];
out:
	json_decref(o);
	free(raw);
	return found;
}

static int jwt_check(struct jwt_provider *p, const struct bc_join_input *in, const char *token,
                     struct cloud_identity *id, const char **reason)
{
	json_t *claims = NULL;
	int rc;

	if ((rc = jwt_verify(p, in, token, &claims, reason)) != 0 || *reason)
		return rc;
	snprintf(id->provider, sizeof(id->provider), "%s", p->name);
	*reason = strcmp(p->name, "gcp") == 0 ? gcp_identity(p, claims, id)
	                                      : oidc_identity(p, claims, id);
	json_decref(claims);
	return 0;
}

static int subject(struct cloud_identity *id)
{
	uint8_t d[32];
	bc_buf b;
	int rc;

	bc_buf_init(&b, 1024);
	if ((rc = bc_buf_put_cstr(&b, id->provider)) == 0 &&
	    (rc = bc_buf_put_cstr(&b, id->account)) == 0 &&
	    (rc = bc_buf_put(&b, id->instance, strlen(id->instance))) == 0 &&
	    (rc = bc_sha256(b.p, b.len, d)) == 0)
		bc_hex_encode_to(d, 32, id->subject_hex);
	bc_buf_free(&b);
	return rc;
}

static int provider_check(const struct cloud_cfg *c, const struct bc_join_input *in,
                          const struct evidence *e, struct cloud_identity *id, const char **why)
{
	struct jwt_provider *p = NULL;

	if (strcmp(e->provider, "aws") == 0) {
		if (c->aws == NULL) {
			*why = BC_R_CLOUD_PROVIDER;
			return 0;
		}
		return aws_check(c->aws, e->document, strlen(e->document), e->sig, e->sig_len,
		                 e->p7, e->p7_len, in->now_ms, id, why);
	}
	if (strcmp(e->provider, "gcp") == 0)
		p = c->gcp;
	else if (strcmp(e->provider, "oidc") == 0)
		p = oidc_for(c, e->document);
	if (p == NULL || e->sig || e->p7) {
		*why = p == NULL ? BC_R_CLOUD_PROVIDER : BC_R_CLOUD_MALFORMED;
		return 0;
	}
	return jwt_check(p, in, e->document, id, why);
}

static int check(struct bc_attestor *self, const struct bc_join_input *in,
                 struct bc_attest_outcome *out, void **state)
{
	const struct cloud_cfg *c = self->ctx;
	struct cloud_identity *id;
	struct evidence e;
	const char *why = NULL;
	int rc = 0;

	if (c == NULL)
		return BC_ERR_CONFIG;
	if ((id = calloc(1, sizeof(*id))) == NULL)
		return BC_ERR_NOMEM;
	*state = id;
	if (parse(in, &e) != 0)
		why = BC_R_CLOUD_MALFORMED;
	else if ((rc = provider_check(c, in, &e, id, &why)) == 0 && why == NULL)
		rc = subject(id);
	evidence_free(&e);
	if (rc == 0 && why)
		bc_refuse(out, why);
	return rc;
}

static void release(struct bc_attestor *self, void *state)
{
	(void)self;
	free(state);
}

/* The instance's proven identity, then what the request says: its role and the
 * machine's claimed product UUID (a claim: it narrows a rule, never widens one). */
static int rule_matches(const struct resolve_rule *r, const struct cloud_identity *id,
                        const struct bc_join_input *in)
{
	char u[BC_UUID_LEN + 1];

	return strcmp(r->provider, id->provider) == 0 && strcmp(r->account, id->account) == 0 &&
	       (r->zone == NULL || strcmp(r->zone, id->zone) == 0) &&
	       (r->region == NULL || strcmp(r->region, id->region) == 0) &&
	       (r->role == NULL || strcmp(r->role, in->role) == 0) &&
	       (r->product_uuid == NULL || (bc_uuid_canon(in->claims.product_uuid, u) == 0 &&
	                                    strcmp(r->product_uuid, u) == 0));
}

static const struct resolve_rule *
resolve(const struct cloud_cfg *c, const struct cloud_identity *id, const struct bc_join_input *in)
{
	for (size_t i = 0; i < c->n_rules; i++)
		if (rule_matches(&c->rules[i], id, in))
			return &c->rules[i];
	return NULL;
}

static void place(struct bc_attest_outcome *out, const struct resolve_rule *r,
                  const struct cloud_identity *id)
{
	struct bc_attest_result *res = &out->result;

	out->kind = BC_OUTCOME_RESULT;
	snprintf(res->tenant_id, BC_ID_MAX, "%s", r->tenant);
	snprintf(res->pool_id, BC_ID_MAX, "%s", r->pool);
	snprintf(res->site_id, BC_ID_MAX, "%s", r->site);
	/* a known node: JoinService re-keys it in place (join:node-unknown, -retired) */
	snprintf(res->node_id, BC_ID_MAX, "%s", r->node);
	snprintf(res->binding_kind, sizeof(res->binding_kind), "%s", CLOUD_BINDING_KIND);
	snprintf(res->binding_key, sizeof(res->binding_key), "%s", id->subject_hex);
	snprintf(res->hardware_key, sizeof(res->hardware_key), "cloud-iid:%s", id->subject_hex);
}

/* Inside the transaction: a known instance, the rules, then single use forever. */
static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	const struct cloud_cfg *c = self->ctx;
	const struct cloud_identity *id = in->check_state;
	const struct resolve_rule *r;
	struct bc_binding_row b;
	int rc;

	if (c == NULL || id == NULL)
		return BC_ERR_INTERNAL;
	if ((rc = bc_row_binding_get(tx, CLOUD_BINDING_KIND, id->subject_hex, &b)) < 0)
		return rc;
	if (rc == 1) {
		/* the node this instance already has: it re-joins with x509pop */
		snprintf(out->node_id, sizeof(out->node_id), "%s", b.node_id);
		bc_refuse(out, BC_R_INSTANCE_REUSED);
		return 0;
	}
	if ((r = resolve(c, id, in)) == NULL) {
		bc_refuse(out, BC_R_UNKNOWN_INSTANCE);
		return 0;
	}
	snprintf(out->tenant_id, sizeof(out->tenant_id), "%s", r->tenant);
	rc = bc_row_use_insert(tx, CLOUD_ID, id->subject_hex, BC_USE_FOREVER, in->now_ms);
	if (rc == BC_ERR_CONFLICT) {
		bc_refuse(out, BC_R_INSTANCE_REUSED);
		return 0;
	}
	if (rc != 0)
		return rc;
	place(out, r, id);
	return 0;
}

static int configure(struct bc_attestor *self, const bc_toml *cfg, const char *table, char *err,
                     size_t errlen)
{
	struct cloud_cfg *c = NULL;
	int rc;

	if ((rc = cloud_cfg_load(cfg, table, &c, err, errlen)) != 0)
		return rc;
	cloud_cfg_free(self->ctx);
	self->ctx = c;
	self->roles = c->roles;
	self->n_roles = c->n_roles;
	return 0;
}

static void destroy(struct bc_attestor *self)
{
	cloud_cfg_free(self->ctx);
	self->ctx = NULL;
}

static const struct bc_attestor cloud_iid = {
    .abi = BC_ATTESTOR_ABI,
    .id = CLOUD_ID,
    .roles = default_roles,
    .n_roles = 1,
    .configure = configure,
    .verify = verify,
    .destroy = destroy,
    .check = check,
    .release = release,
};

const struct bc_attestor *bc_attestor_cloud_iid(void)
{
	return &cloud_iid;
}
