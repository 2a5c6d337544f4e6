/* JoinService internals shared by join.c, registry.c, policy.c and response.c. */
#ifndef BC_JOIN_INTERNAL_H
#define BC_JOIN_INTERNAL_H

#include "join/join.h"

#define BC_MAX_ATTESTORS 32

struct bc_join_service {
	struct bc_join_config cfg;
	struct bc_attestor attestors[BC_MAX_ATTESTORS];
	size_t n_attestors;
	void *plugins[BC_MAX_ATTESTORS];
	size_t n_plugins;
	uint8_t *node_ca_der; /* the node CA, encoded once: every answer carries it */
	size_t node_ca_der_len;
};

const struct bc_attestor *bc_join_find(const struct bc_join_service *s, const char *id);

/* What one join decided, filled inside the transaction and answered after it. */
struct bc_join_state {
	const struct bc_join_input *in;
	const struct bc_attestor *attestor;
	struct bc_join_service *svc;
	EVP_PKEY *csr_key;
	struct bc_attest_outcome out;
	/* a refusal: the reason as published and whom it is reported to */
	const char *reason;
	int policy_reason; /* 1: published as join:<reason> */
	char refusal_tenant[BC_ID_MAX];
	/* the issued identity */
	char node_id[BC_ID_MAX];
	int reclaimed;
	uint8_t *cert_der;
	size_t cert_len;
	int64_t now_ms;
};

/* policy.c: runs after the attestor's result, inside the transaction. 0 and st->reason
 * NULL: go on; 0 and st->reason set: refused; < 0: database error. */
BC_WUR int bc_join_policy(bc_tx *tx, struct bc_join_state *st, char node_id[BC_ID_MAX],
                          int *reclaim, char hwkey[BC_HWKEY_MAX]);
/* response.c: a signed JoinResponseBody. */
BC_WUR int bc_join_sign_response(const struct bc_join_service *s, const struct bc_join_state *st,
                                 uint8_t **out, size_t *len);

#endif
