/* Join requests: a machine an operator must admit waits as a pending join_requests
 * row, keyed by what its attestor trusts (tpm: the EK's hash; discovery: a hardware
 * key, or site and MAC). Shared by the attestors that defer for approval. */
#ifndef BC_ATTEST_REQUESTS_H
#define BC_ATTEST_REQUESTS_H

#include <stdint.h>

#include "bc/attestor.h"
#include "bc/store.h"

struct bc_join_request_place {
	const char *attestor;
	const char *key;    /* request_key */
	const char *tenant; /* where a new request places the machine */
	const char *pool;   /* "" or NULL for none */
	const char *site;
	const char *claims; /* JSON object text (NULL: "{}"): what join-requests list shows */
	const char *detail; /* JSON object text (NULL: "{}") */
	int64_t pending_ttl_s;
	uint32_t retry_after_s;
	int renew_pending_csr; /* 1: a pending request takes a new CSR (fresh evidence
	                          vouched for it) instead of refusing enrollment-csr */
};

/* The machine's join request, locked: approved admits once (it becomes used and out
 * holds a result with the request's tenant, pool and site); pending waits (a
 * deferral); denied refuses with denied_reason; another CSR than the request's
 * refuses enrollment-csr; none, expired or used makes a new pending request (a
 * deferral, and the event join.request.created). 0 with out filled or, for a
 * refusal, *reason set (out holds only the request's tenant: the attestor refuses
 * with bc_refuse()); or < 0. */
BC_WUR int bc_join_request_place(bc_tx *tx, const struct bc_join_request_place *p,
                                 const struct bc_join_input *in, const char *denied_reason,
                                 struct bc_attest_outcome *out, const char **reason);

#endif
