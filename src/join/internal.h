/* JoinService internals shared by join.c, renew.c, registry.c, policy.c and
 * response.c. */
#ifndef BC_JOIN_INTERNAL_H
#define BC_JOIN_INTERNAL_H

#include <pthread.h>

#include "bc/crypto.h"
#include "join/join.h"
#include "join/refusal_summary.h"

#define BC_MAX_ATTESTORS  32
#define BC_MAX_STATEMENTS 8
#define BC_REFUSAL_KINDS  3 /* enum bc_refusal_kind (join/refusal.h) */

struct bc_join_service {
	struct bc_join_config cfg;
	struct bc_attestor attestors[BC_MAX_ATTESTORS];
	size_t n_attestors;
	struct bc_statement_verifier statements[BC_MAX_STATEMENTS];
	size_t n_statements;
	void *plugins[BC_MAX_ATTESTORS];
	size_t n_plugins;
	/* the bundle's keys alone: what a request uses while no set from the store is
	   installed in cfg.pki (a test without a store), or for join keys a set without any */
	struct bc_node_cas *bundle_set;
	/* the pins-update statement of the last join key set a request used, signed once
	 * per set: every answer carries these bytes (pins_update.c) */
	pthread_mutex_t pins_mu;
	struct bc_join_pins *pins;
	/* refusals no credential backs, per kind (join/refusal.h) */
	struct bc_refusal_summary refusals[BC_REFUSAL_KINDS];
};

/* The keys one request uses, taken once at its start and let go at its end, so that a
 * set the server swaps meanwhile changes nothing within the request: the CA that issues
 * the certificate is the one the chain names, the key that signs the answer is the one
 * that signed its statement, and a token opens with the keys of the same set.
 * bc_join_keys_take: set is cfg.pki's installed set or the bundle's, join the set whose
 * join keys are used (set itself unless it holds none), pins join's statement; on
 * error (out of memory, a key that does not sign) k holds nothing and may be dropped. */
struct bc_join_pins {
	int refs;
	struct bc_node_cas *set; /* a reference: the set it was made for */
	size_t len;
	uint8_t bytes[];
};
struct bc_join_keys {
	struct bc_node_cas *set, *join;
	struct bc_join_pins *pins;
};
BC_WUR int bc_join_keys_take(struct bc_join_service *s, struct bc_join_keys *k);
void bc_join_keys_drop(struct bc_join_keys *k);
void bc_join_pins_put(struct bc_join_pins *p);

const struct bc_attestor *bc_join_find(const struct bc_join_service *s, const char *id);
/* The verifier whose prefix starts statement, or NULL. */
const struct bc_statement_verifier *bc_join_find_statement(const struct bc_join_service *s,
                                                           const char *statement);

/* What one try of the join transaction decides. A replayed transaction (BUSY, RETRY)
 * starts from bc_join_decision_reset(), so every field starts from zero by
 * construction. */
struct bc_join_decision {
	struct bc_attest_outcome out;
	const char *reason;             /* a refusal, as published (bc/reasons.h) */
	char refusal_tenant[BC_ID_MAX]; /* whom the refusal is reported to; "" = root */
	char refusal_node[BC_ID_MAX];   /* the node the refusal concerns, in refusal_tenant */
	char node_id[BC_ID_MAX];        /* the issued identity */
	int reclaimed;
	char node_role[16]; /* the reclaimed node's role before this join */
	int role_change;    /* an enrolled ramdisk node re-keyed in another role */
	char hwkey[BC_HWKEY_MAX];
	int hwkey_claimed; /* hwkey comes from the claims: unique within the tenant only */
	uint8_t *cert_der;
	size_t cert_len;
	int64_t now_ms;
};

/* Frees what d holds and zeroes it. */
void bc_join_decision_reset(struct bc_join_decision *d);

/* One join: the request, fixed before the transaction, and the decision. */
struct bc_join_state {
	const struct bc_join_input *in;
	const struct bc_attestor *attestor;
	struct bc_join_service *svc;
	struct bc_join_keys keys; /* taken once for the whole request */
	uint8_t csr_point[65];    /* the CSR's key, checked */
	struct bc_join_decision d;
};

/* policy.c: runs after the attestor's result, inside the transaction. Fills
 * st->d.node_id (a new or the reclaimed node), st->d.reclaimed and st->d.hwkey.
 * Returns 0 with *reason NULL to go on or set to a refusal; < 0 on a database error. */
BC_WUR int bc_join_policy(bc_tx *tx, struct bc_join_state *st, const char **reason);
/* response.c: a signed JoinResponseBody for a deferral or an issued certificate:
 * csr_sha256 binds it to the request; the attestor names a challenge. */
BC_WUR int bc_join_sign_response(const struct bc_join_service *s, const struct bc_join_keys *k,
                                 const uint8_t csr_sha256[32], const struct bc_attestor *attestor,
                                 const struct bc_join_decision *d, uint8_t **out, size_t *len);

/* A SignedResponse of body under purpose, by the current join signing key of k->join
 * (malloc'd). */
BC_WUR int bc_join_sign_body(const struct bc_join_keys *k, const char *purpose, const uint8_t *body,
                             size_t body_len, uint8_t **out, size_t *len);

/* pins_update.c: the pins-update statement of set's join keys, signed by its current
 * join signing key under purpose pins-update: the service's copy when it was made for
 * set, else a new one that replaces it. A reference the caller puts. */
BC_WUR int bc_join_pins_get(struct bc_join_service *s, struct bc_node_cas *set,
                            struct bc_join_pins **out);

#endif
