/* join-token: the holder of a live token for this pool or site. node tokens admit
 * role node, site tokens admit role site; one use is consumed. JoinService enforces
 * the token's expect binding and allowReclaim (policy.c). */
#include <stdio.h>
#include <string.h>

#include "attest/token.h"
#include "attest/attest.h"
#include "bc/reasons.h"

static const char *const roles[] = {"node", "site"};

static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	struct bc_token_row t;
	const char *reason;
	int rc;

	if ((rc = bc_token_check(tx, in->token, in->now_ms, &t, out, &reason)) != 0)
		return rc;
	if (reason == NULL && strcmp(t.role, in->role) != 0)
		reason = BC_R_TOKEN_ROLE;
	if (reason) {
		bc_refuse(out, reason);
		return 0;
	}
	if ((rc = bc_row_token_consume(tx, t.id, in->now_ms)) != 0)
		return rc;
	bc_token_admit(&t, in->role, out);
	return 0;
}

static const struct bc_attestor join_token = {
    .abi = BC_ATTESTOR_ABI,
    .id = BC_WIRE_ATTESTOR_JOIN_TOKEN,
    .roles = roles,
    .n_roles = 2,
    .verify = verify,
};

const struct bc_attestor *bc_attestor_join_token(void)
{
	return &join_token;
}
