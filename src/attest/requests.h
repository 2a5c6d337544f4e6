/* Join requests: a machine an operator must admit waits as a pending join_requests
 * row of one tenant, keyed by what its attestor trusts (tpm: the EK's hash;
 * discovery: the boot entry's product UUID, or site and MAC). Shared by the
 * attestors that defer for approval. */
#ifndef BC_ATTEST_REQUESTS_H
#define BC_ATTEST_REQUESTS_H

#include <stdint.h>

#include "bc/attestor.h"
#include "bc/store.h"

struct bc_join_request_place {
	const char *attestor;
	const char *key;    /* request_key */
	const char *tenant; /* whose request it is (the token's or the enrollment's
	                       tenant): only that tenant's request is found */
	const char *pool;   /* "" or NULL for none */
	const char *site;
	const char *claims; /* JSON object text (NULL: "{}"): what join-requests list shows;
	                       the request is bound to it as to its CSR */
	const char *detail; /* JSON object text (NULL: "{}") */
	int64_t pending_ttl_s;
	uint32_t retry_after_s;
};

/* The machine's join request in p->tenant, locked: approved admits once (it becomes
 * used and out holds a result with the request's tenant, pool and site); pending
 * waits (a deferral); denied refuses with denied_reason; another CSR or other claims
 * than the request's (pending or approved) refuse enrollment-csr; none, expired or
 * used makes a new pending request (a deferral, and the event join.request.created,
 * to p->tenant). 0 with out filled or, for a refusal, *reason set (out holds only
 * the request's tenant: the attestor refuses with bc_refuse()); or < 0. */
BC_WUR int bc_join_request_place(bc_tx *tx, const struct bc_join_request_place *p,
                                 const struct bc_join_input *in, const char *denied_reason,
                                 struct bc_attest_outcome *out, const char **reason);

#endif
