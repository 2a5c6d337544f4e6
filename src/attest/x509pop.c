/* x509pop: a machine whose certificate expired offline re-joins as itself.
 *
 * Evidence (UTF-8 JSON): {"v":1,"nodeId":"node_...","chain":["<b64 DER>",...],
 * "clientTime":<ms>,"sig":"<b64 P1363>"}. sig is ES256 under purpose x509pop over
 * sha256(csr) || node id || 0x00 || client time (8 bytes big-endian), by the leaf's key.
 *
 * The leaf must be byte for byte a node_certs row of that node, of its current identity
 * generation, not revoked; the node not retired; the certificate's role the requested
 * one (node-tenant re-joins as node and keeps its restriction); expired at most grace_ms
 * ago; not superseded (a newer certificate of the node was used: its key was rotated
 * away); the client time within window_ms of database time; the proof never used before
 * (an in-memory cache, and an attestation_uses row that every replica sees). The result
 * names the node, so JoinService reclaims it in place. An accepted leaf counts as used
 * in the node's lineage (join/rows.h), superseding every other certificate of it.
 *
 * check() (no store) decodes the evidence and verifies the leaf's identity, role and
 * the proof's signature; verify() (in the transaction, at database time) checks the
 * time window, the leaf's row and single use. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "attest/attest.h"
#include "bc/reasons.h"
#include "join/rows.h"

#define X509POP_MAX_EVIDENCE (32 * 1024)
#define X509POP_MAX_CHAIN    4

struct seen {
	uint8_t subject[32];
	uint64_t request; /* the request that presented it (bc_join_input.request_nonce) */
};

struct x509pop {
	int64_t grace_ms;
	int64_t window_ms;
	size_t cache_size;
	pthread_mutex_t mu;
	struct seen *cache; /* a ring of proof subjects seen */
	size_t cache_next;
	size_t cache_used;
};

static struct x509pop state = {
    .grace_ms = 7LL * 24 * 3600 * 1000,
    .window_ms = 60000,
    .cache_size = 10000,
    .mu = PTHREAD_MUTEX_INITIALIZER,
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
static int cache_seen(const uint8_t subject[32], uint64_t request)
{
	int seen = 0, found = 0;

	pthread_mutex_lock(&state.mu);
	if (state.cache == NULL && state.cache_size)
		state.cache = calloc(state.cache_size, sizeof(*state.cache));
	for (size_t i = 0; state.cache && i < state.cache_used && !found; i++) {
		found = memcmp(state.cache[i].subject, subject, 32) == 0;
		seen = found && state.cache[i].request != request;
	}
	if (!found && state.cache) {
		memcpy(state.cache[state.cache_next].subject, subject, 32);
		state.cache[state.cache_next].request = request;
		state.cache_next = (state.cache_next + 1) % state.cache_size;
		if (state.cache_used < state.cache_size)
			state.cache_used++;
	}
	pthread_mutex_unlock(&state.mu);
	return seen;
}

/* What check() proved, for verify(): the evidence, the leaf's identity and the
 * proof's single-use subject. */
struct proven {
	struct evidence e;
	struct bc_node_identity id;
	uint8_t subject[32];
};

static void proven_free(struct proven *p)
{
	if (p == NULL)
		return;
	bc_node_identity_clear(&p->id);
	evidence_free(&p->e);
	free(p);
}

/* The proof under the leaf's key; *subject its hash. */
static int check_signature(const struct bc_join_input *in, struct proven *p, X509 *leaf,
                           const char **reason)
{
	bc_buf b;
	int rc;

	if ((rc = payload(in, &p->e, &b)) != 0)
		return rc;
	if (bc_es256_verify(X509_get0_pubkey(leaf), BC_PURPOSE_X509POP, b.p, b.len, p->e.sig,
	                    p->e.sig_len) != 0)
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
	if (p->id.n_statements > 0)
		return BC_R_X509POP_KEY_STATEMENT;
	/* node-tenant re-joins as node; otherwise the roles must be the same */
	if (strcmp(p->id.role, in->role) != 0 &&
	    !(strcmp(p->id.role, BC_ROLE_NODE_TENANT) == 0 && strcmp(in->role, BC_ROLE_NODE) == 0))
		return BC_R_X509POP_ROLE;
	return NULL;
}

/* The leaf is decoded once, for its identity and its key. */
static int offline_checks(const struct bc_join_input *in, struct proven *p, const char **reason)
{
	X509 *leaf = NULL;
	int rc = 0;

	if (parse(in, &p->e) != 0 || bc_x509_from_der(p->e.leaf, p->e.leaf_len, &leaf) != 0 ||
	    bc_pki_node_identity_x509(leaf, in->trust_domain, &p->id) != 0 ||
	    strcmp(p->id.node_id, p->e.node_id) != 0)
		*reason = BC_R_X509POP_MALFORMED;
	else if ((*reason = identity_refusal(in, p)) == NULL)
		rc = check_signature(in, p, leaf, reason);
	X509_free(leaf);
	return rc;
}

/* The leaf against its row and the node at database time. 0 with *why set on a
 * refusal; < 0 on a database error. */
static int online_checks(bc_tx *tx, const struct bc_join_input *in, const struct evidence *e,
                         const struct bc_node_identity *id, char serial[65], const char **why)
{
	struct bc_cert_row c;
	int rc;

	*why = NULL;
	/* the node's lineage is read and written under its lock (renew.c likewise) */
	if ((rc = bc_row_node_lock(tx, id->node_id)) != 0 ||
	    (rc = bc_row_cert_find(tx, id->node_id, e->leaf, e->leaf_len, &c)) < 0)
		return rc;
	snprintf(serial, 65, "%s", c.serial);
	if (rc == 0)
		*why = BC_R_X509POP_NOT_CURRENT;
	else if (strcmp(c.node.state, "retired") == 0)
		*why = BC_R_X509POP_RETIRED;
	else if (c.generation != c.node.generation)
		*why = BC_R_X509POP_GENERATION;
	else if (c.revoked)
		*why = BC_R_X509POP_REVOKED;
	else if (c.superseded)
		*why = BC_R_X509POP_SUPERSEDED;
	else if (in->now_ms - c.not_after > state.grace_ms)
		*why = BC_R_X509POP_EXPIRED;
	return 0;
}

/* Records the proof until its window closes, so no replica accepts it again. */
static int record_use(bc_tx *tx, const struct bc_join_input *in, const struct evidence *e,
                      const uint8_t subject[32], const char **why)
{
	char hex[65];
	int rc;

	*why = NULL;
	bc_hex_encode_to(subject, 32, hex);
	rc = bc_row_use_insert(tx, BC_WIRE_ATTESTOR_X509POP, hex, e->client_time + state.window_ms,
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
	const char *why = NULL;
	char serial[65] = "";
	int rc = 0;

	(void)self;
	if (p == NULL)
		return BC_ERR_INTERNAL;
	snprintf(out->node_id, sizeof(out->node_id), "%s", p->id.node_id);
	if (p->e.client_time < in->now_ms - state.window_ms ||
	    p->e.client_time > in->now_ms + state.window_ms)
		why = BC_R_X509POP_CLIENT_TIME;
	if (why == NULL && (rc = online_checks(tx, in, &p->e, &p->id, serial, &why)) != 0)
		return rc;
	if (why == NULL && cache_seen(p->subject, in->request_nonce))
		why = BC_R_X509POP_REPLAY;
	if (why == NULL && (rc = record_use(tx, in, &p->e, p->subject, &why)) != 0)
		return rc;
	if (why == NULL && (rc = bc_row_cert_use(tx, p->id.node_id, serial, in->now_ms)) != 0)
		return rc;
	if (why) {
		bc_refuse(out, why);
		return 0;
	}
	out->kind = BC_OUTCOME_RESULT;
	snprintf(out->result.node_id, sizeof(out->result.node_id), "%s", p->id.node_id);
	snprintf(out->result.role, sizeof(out->result.role), "%s", p->id.role);
	return 0;
}

static int get_ms(const bc_toml *cfg, const char *table, const char *key, int64_t lo, int64_t hi,
                  int64_t *v, char *err, size_t errlen)
{
	char path[96];
	int rc;

	int64_t x;

	snprintf(path, sizeof(path), "%s.%s", table, key);
	rc = bc_toml_get_int(cfg, path, &x);
	if (rc == BC_ERR_NOT_FOUND)
		return 0; /* keep the default in *v */
	if (rc != 0 || x < lo || x > hi) {
		snprintf(err, errlen, "[%s] %s: expected an integer from %lld to %lld", table, key,
		         (long long)lo, (long long)hi);
		return BC_ERR_CONFIG;
	}
	*v = x;
	return 0;
}

static int configure(struct bc_attestor *self, const bc_toml *cfg, const char *table, char *err,
                     size_t errlen)
{
	const char *const *keys;
	int64_t grace = state.grace_ms, window = state.window_ms, cache = (int64_t)state.cache_size;
	size_t n;
	int rc;

	(void)self;
	if (cfg == NULL || !bc_toml_has_table(cfg, table))
		return 0;
	if (bc_toml_keys(cfg, table, &keys, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (strcmp(keys[i], "grace_ms") && strcmp(keys[i], "window_ms") &&
			    strcmp(keys[i], "replay_cache_size")) {
				snprintf(err, errlen,
				         "[%s] %s: unknown key (known: grace_ms, window_ms, "
				         "replay_cache_size)",
				         table, keys[i]);
				return BC_ERR_CONFIG;
			}
	if ((rc =
	         get_ms(cfg, table, "grace_ms", 0, 90LL * 24 * 3600 * 1000, &grace, err, errlen)) ||
	    (rc = get_ms(cfg, table, "window_ms", 1000, 600000, &window, err, errlen)) ||
	    (rc = get_ms(cfg, table, "replay_cache_size", 0, 1000000, &cache, err, errlen)))
		return rc;
	pthread_mutex_lock(&state.mu);
	state.grace_ms = grace;
	state.window_ms = window;
	if ((size_t)cache != state.cache_size) {
		free(state.cache);
		state.cache = NULL;
		state.cache_size = (size_t)cache;
		state.cache_next = state.cache_used = 0;
	}
	pthread_mutex_unlock(&state.mu);
	return 0;
}

static const struct bc_attestor x509pop = {
    .abi = BC_ATTESTOR_ABI,
    .id = BC_WIRE_ATTESTOR_X509POP,
    .roles = roles,
    .n_roles = 2,
    .configure = configure,
    .verify = verify,
    .check = check,
    .release = release,
};

const struct bc_attestor *bc_attestor_x509pop(void)
{
	return &x509pop;
}
