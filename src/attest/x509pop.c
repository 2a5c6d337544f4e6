/* x509pop: a machine whose certificate expired offline re-joins as itself.
 *
 * Evidence (UTF-8 JSON): {"v":1,"nodeId":"node_...","chain":["<b64 DER>",...],
 * "clientTime":<ms>,"sig":"<b64 P1363>"}. sig is ES256 under purpose x509pop over
 * sha256(csr) || node id || 0x00 || client time (8 bytes big-endian), by the leaf's key.
 *
 * The leaf must be byte for byte a node_certs row of that node, of its current identity
 * generation, not revoked; the node not retired; the certificate's role the requested
 * one (node-tenant re-joins as node and keeps its restriction); expired at most grace_seconds
 * ago; not superseded (a newer certificate of the node was used: its key was rotated
 * away); the client time within window_seconds of database time; the proof never used before
 * (an in-memory cache, and an attestation_uses row that every replica sees). The result
 * names the node, so JoinService reclaims it in place. An accepted leaf counts as used
 * in the node's lineage (rows/certs.h), superseding every other certificate of it.
 *
 * check() (no store) decodes the evidence and verifies the leaf's identity, role and
 * the proof's signature; verify() (in the transaction, at database time) checks the
 * time window, the leaf's row and single use. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "bc/store.h"
#include "attest/attest.h"
#include "bc/reasons.h"
#include "join/holder.h"
#include "rows/certs.h"
#include "rows/uses.h"

#define X509POP_MAX_EVIDENCE (32 * 1024)
#define X509POP_MAX_CHAIN    4

struct seen {
	uint8_t subject[32];
	uint64_t request; /* the request that presented it (bc_join_input.request_nonce) */
};

/* The attestor's context (self->ctx): its settings and its replay cache. */
struct x509pop {
	int64_t grace_ms;
	int64_t window_ms;
	int64_t cache_size;
	pthread_mutex_t mu;
	struct seen *cache; /* a ring of proof subjects seen; allocated when first needed */
	size_t cache_next;
	size_t cache_used;
};

static const char *const roles[] = {"node", "site"};

struct evidence {
	json_t *root;
	const char *node_id;
	int64_t client_time;
	uint8_t *leaf;
	size_t leaf_len;
	uint8_t *sig;
	size_t sig_len;
};

static void evidence_free(struct evidence *e)
{
	json_decref(e->root);
	free(e->leaf);
	free(e->sig);
	memset(e, 0, sizeof(*e));
}

/* Strict shape: exactly the five fields, of their types. */
static int parse(const struct bc_join_input *in, struct evidence *e)
{
	const char *chain0 = NULL, *sig = NULL;
	json_t *chain;
	int64_t v;

	memset(e, 0, sizeof(*e));
	if (in->attestation_len == 0 || in->attestation_len > X509POP_MAX_EVIDENCE ||
	    bc_json_parse(in->attestation, in->attestation_len, X509POP_MAX_EVIDENCE, &e->root,
	                  NULL, 0) != 0 ||
	    !json_is_object(e->root) || json_object_size(e->root) != 5)
		return BC_ERR_INVALID;
	chain = json_object_get(e->root, "chain");
	if (bc_json_get_int(e->root, "v", &v) != 0 || v != 1 ||
	    bc_json_get_string(e->root, "nodeId", &e->node_id) != 0 ||
	    bc_json_get_int(e->root, "clientTime", &e->client_time) != 0 ||
	    bc_json_get_string(e->root, "sig", &sig) != 0 || !json_is_array(chain) ||
	    json_array_size(chain) < 1 || json_array_size(chain) > X509POP_MAX_CHAIN ||
	    (chain0 = json_string_value(json_array_get(chain, 0))) == NULL)
		return BC_ERR_INVALID;
	for (size_t i = 1; i < json_array_size(chain); i++)
		if (!json_is_string(json_array_get(chain, i)))
			return BC_ERR_INVALID;
	if (bc_b64_decode(chain0, strlen(chain0), &e->leaf, &e->leaf_len) != 0 ||
	    bc_b64_decode(sig, strlen(sig), &e->sig, &e->sig_len) != 0 || e->sig_len != BC_SIG_LEN)
		return BC_ERR_INVALID;
	return 0;
}

/* The signed payload, and its hash: the proof's single-use subject. */
static int payload(const struct bc_join_input *in, const struct evidence *e, bc_buf *b)
{
	int rc = bc_proof_payload(b, in->csr_sha256, e->node_id, e->client_time);

	if (rc != 0)
		bc_buf_free(b);
	return rc;
}

/* 1 when another request presented subject; otherwise remembers it. The same request
 * comes back when its transaction is replayed (BUSY, RETRY): that is not a replay. */
static int cache_seen(struct x509pop *st, const uint8_t subject[32], uint64_t request)
{
	size_t size = (size_t)st->cache_size;
	int seen = 0, found = 0;

	pthread_mutex_lock(&st->mu);
	if (st->cache == NULL && size)
		st->cache = calloc(size, sizeof(*st->cache));
	for (size_t i = 0; st->cache && i < st->cache_used && !found; i++) {
		found = memcmp(st->cache[i].subject, subject, 32) == 0;
		seen = found && st->cache[i].request != request;
	}
	if (!found && st->cache) {
		memcpy(st->cache[st->cache_next].subject, subject, 32);
		st->cache[st->cache_next].request = request;
		st->cache_next = (st->cache_next + 1) % size;
		if (st->cache_used < size)
			st->cache_used++;
	}
	pthread_mutex_unlock(&st->mu);
	return seen;
}

/* What check() proved, for verify(): the evidence, the leaf's identity and the
 * proof's single-use subject. */
struct proven {
	struct evidence e;
	struct bc_holder h; /* the leaf (its bytes are e.leaf's); h.id its identity */
	uint8_t subject[32];
};

static void proven_free(struct proven *p)
{
	if (p == NULL)
		return;
	bc_holder_clear(&p->h);
	evidence_free(&p->e);
	free(p);
}

/* The proof under the leaf's key; *subject its hash. */
static int check_signature(const struct bc_join_input *in, struct proven *p, const char **reason)
{
	bc_buf b;
	int rc;

	if ((rc = payload(in, &p->e, &b)) != 0)
		return rc;
	if (bc_holder_prove(&p->h, BC_PURPOSE_X509POP, b.p, b.len, p->e.sig, p->e.sig_len) !=
	    BC_HOLDER_OK)
		*reason = BC_R_X509POP_SIGNATURE;
	else
		rc = bc_sha256(b.p, b.len, p->subject);
	bc_buf_free(&b);
	return rc;
}

/* Checks that need no database: shape, identity, role, signature. */
/* What the leaf's identity rules out before its signature is looked at. */
static const char *identity_refusal(const struct bc_join_input *in, const struct proven *p)
{
	/* a key the TPM certified re-joins only through the tpm attestor: an x509pop
	 * re-join would issue a certificate without the AK statement, a downgrade */
	if (p->h.id.n_statements > 0)
		return BC_R_X509POP_KEY_STATEMENT;
	/* node-tenant re-joins as node; otherwise the roles must be the same */
	if (strcmp(p->h.id.role, in->role) != 0 &&
	    !(strcmp(p->h.id.role, BC_ROLE_NODE_TENANT) == 0 &&
	      strcmp(in->role, BC_ROLE_NODE) == 0))
		return BC_R_X509POP_ROLE;
	return NULL;
}

/* The leaf is read once, for its identity and its key (join/holder.h); whether the
 * node CA issued it is its stored row's to say, in verify(). */
static int offline_checks(const struct bc_join_input *in, struct proven *p, const char **reason)
{
	int rc = 0;

	if (parse(in, &p->e) != 0 ||
	    (rc = bc_holder_peek(&p->h, in->trust_domain, p->e.leaf, p->e.leaf_len, NULL)) !=
	        BC_HOLDER_OK ||
	    strcmp(p->h.id.node_id, p->e.node_id) != 0) {
		if (rc < 0)
			return rc;
		*reason = BC_R_X509POP_MALFORMED;
	} else if ((*reason = identity_refusal(in, p)) == NULL) {
		rc = check_signature(in, p, reason);
	}
	return rc;
}

/* What the holder check found, as x509pop's reasons. */
static const char *holder_reason(int status)
{
	switch (status) {
	case BC_HOLDER_OK: return NULL;
	case BC_HOLDER_RETIRED: return BC_R_X509POP_RETIRED;
	case BC_HOLDER_GENERATION: return BC_R_X509POP_GENERATION;
	case BC_HOLDER_REVOKED: return BC_R_X509POP_REVOKED;
	case BC_HOLDER_SUPERSEDED: return BC_R_X509POP_SUPERSEDED;
	case BC_HOLDER_EXPIRED: return BC_R_X509POP_EXPIRED;
	case BC_HOLDER_CLIENT_TIME: return BC_R_X509POP_CLIENT_TIME;
	case BC_HOLDER_MALFORMED: return BC_R_X509POP_MALFORMED;
	case BC_HOLDER_NOT_CURRENT:
	default: return BC_R_X509POP_NOT_CURRENT;
	}
}

/* The leaf against its row and the node at database time, the client's time within
 * the window (join/holder.h). 0 with *why set on a refusal; < 0 on a database error. */
static int online_checks(bc_tx *tx, const struct bc_join_input *in, const struct proven *p,
                         const struct x509pop *st, char serial[65], const char **why)
{
	struct bc_holder_want w = {.now_ms = in->now_ms,
	                           .grace_ms = st->grace_ms,
	                           .window_ms = st->window_ms,
	                           .client_time_ms = p->e.client_time,
	                           /* the node's lineage is read and written under its lock */
	                           .lock = 1,
	                           .pki = in->node_pki};
	struct bc_cert_row c;
	int rc = bc_holder_current(tx, &p->h, &w, &c);

	if (rc < 0)
		return rc;
	snprintf(serial, 65, "%s", c.serial);
	*why = holder_reason(rc);
	return 0;
}

/* Records the proof until its window closes, so no replica accepts it again. */
static int record_use(bc_tx *tx, const struct bc_join_input *in, const struct evidence *e,
                      const uint8_t subject[32], int64_t window_ms, const char **why)
{
	char hex[65];
	int rc;

	*why = NULL;
	bc_hex_encode_to(subject, 32, hex);
	rc = bc_row_use_insert(tx, BC_WIRE_ATTESTOR_X509POP, hex, e->client_time + window_ms,
	                       in->now_ms);
	if (rc == BC_ERR_CONFLICT) {
		*why = BC_R_X509POP_REPLAY;
		rc = 0;
	}
	return rc;
}

static int check(struct bc_attestor *self, const struct bc_join_input *in,
                 struct bc_attest_outcome *out, void **left)
{
	struct proven *p;
	const char *why = NULL;
	int rc;

	(void)self;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return BC_ERR_NOMEM;
	*left = p;
	if ((rc = offline_checks(in, p, &why)) != 0)
		return rc;
	/* a refusal before the proof verified names no node: a node's certificate is no
	 * secret, so anyone could send one (the refusal is summarized, unattributed) */
	if (why)
		bc_refuse(out, why);
	return 0;
}

static void release(struct bc_attestor *self, void *left)
{
	(void)self;
	proven_free(left);
}

/* Inside the transaction, at database time: the time window, the leaf's row, then
 * single use. */
static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	const struct proven *p = in->check_state;
	struct x509pop *st = self->ctx;
	const char *why = NULL;
	char serial[65] = "";
	int rc = 0;

	if (p == NULL || st == NULL)
		return BC_ERR_INTERNAL; /* check() always leaves one; configure() made st */
	snprintf(out->node_id, sizeof(out->node_id), "%s", p->h.id.node_id);
	if ((rc = online_checks(tx, in, p, st, serial, &why)) != 0)
		return rc;
	if (why == NULL && cache_seen(st, p->subject, in->request_nonce))
		why = BC_R_X509POP_REPLAY;
	if (why == NULL && (rc = record_use(tx, in, &p->e, p->subject, st->window_ms, &why)) != 0)
		return rc;
	if (why == NULL && (rc = bc_row_cert_use(tx, p->h.id.node_id, serial, in->now_ms)) != 0)
		return rc;
	if (why) {
		bc_refuse(out, why);
		return 0;
	}
	out->kind = BC_OUTCOME_RESULT;
	snprintf(out->result.node_id, sizeof(out->result.node_id), "%s", p->h.id.node_id);
	snprintf(out->result.role, sizeof(out->result.role), "%s", p->h.id.role);
	return 0;
}

/* [attestors.x509pop]; durations in seconds, kept in milliseconds. */
static const struct bc_toml_field fields[] = {
    {.key = "grace_seconds",
     .type = BC_TOML_SECONDS,
     .min = 0,
     .max = BC_CERT_GRACE_MAX_MS / 1000, /* prune keeps certificates this long */
     .scale = 1000,
     .old = "grace_ms",
     BC_TOML_AT(struct x509pop, grace_ms)},
    {.key = "window_seconds",
     .type = BC_TOML_SECONDS,
     .min = 1,
     .max = 600,
     .scale = 1000,
     .old = "window_ms",
     BC_TOML_AT(struct x509pop, window_ms)},
    {.key = "replay_cache_size",
     .type = BC_TOML_INT,
     .min = 0,
     .max = 1000000,
     BC_TOML_AT(struct x509pop, cache_size)},
};

static void state_free(struct x509pop *st)
{
	if (st == NULL)
		return;
	pthread_mutex_destroy(&st->mu);
	free(st->cache);
	free(st);
}

/* A new context from the table (the defaults where it is silent), replacing the old
 * one with its cache: a configured attestor starts with an empty cache. */
static int configure(struct bc_attestor *self, const bc_toml *cfg, const char *table, char *err,
                     size_t errlen)
{
	struct x509pop *st;
	int rc;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return BC_ERR_NOMEM;
	st->grace_ms = 7LL * 24 * 3600 * 1000;
	st->window_ms = 60000;
	st->cache_size = 10000;
	if (pthread_mutex_init(&st->mu, NULL) != 0) {
		free(st);
		return BC_ERR_NOMEM;
	}
	/* no table (or no file) reads as empty: the defaults */
	if ((rc = bc_attest_read_table(cfg, table, fields, BC_ATTEST_N_FIELDS(fields), st, err,
	                               errlen)) != 0) {
		state_free(st);
		return rc;
	}
	state_free(self->ctx);
	self->ctx = st;
	return 0;
}

static void destroy(struct bc_attestor *self)
{
	state_free(self->ctx);
	self->ctx = NULL;
}

static const struct bc_attestor x509pop = {
    .abi = BC_ATTESTOR_ABI,
    .id = BC_WIRE_ATTESTOR_X509POP,
    .roles = roles,
    .n_roles = 2,
    .configure = configure,
    .verify = verify,
    .destroy = destroy,
    .check = check,
    .release = release,
};

const struct bc_attestor *bc_attestor_x509pop(void)
{
	return &x509pop;
}
