/* A test attestor plugin, "misbehave": every bug a plugin can have that JoinService
 * must catch, chosen by the machine's claimed serial:
 *   "no-tenant"      a result naming neither a tenant nor a node (join:attestor-no-tenant)
 *   "refuse-silent"  a refusal without a reason (attestor-refused)
 *   "no-outcome"     returns without filling the outcome (attestor-no-outcome)
 *   "pool-unknown"   a result in the root tenant naming a pool that does not exist
 *                    (join:pool-unknown)
 *   "node:<id>"      a result naming node <id> (join:node-unknown when there is none,
 *                    join:node-retired when it is retired)
 * Any other serial is refused "misbehave-serial". */
#include <stdio.h>
#include <string.h>

#include "bc/attestor.h"

static const char *const roles[] = {"node"};

static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	const char *s = in->claims.serial ? in->claims.serial : "";

	(void)self;
	(void)tx;
	if (strcmp(s, "no-tenant") == 0) {
		out->kind = BC_OUTCOME_RESULT;
	} else if (strcmp(s, "refuse-silent") == 0) {
		out->kind = BC_OUTCOME_REFUSE;
	} else if (strcmp(s, "no-outcome") == 0) {
		/* nothing: JoinService zeroed the outcome */
	} else if (strcmp(s, "pool-unknown") == 0) {
		out->kind = BC_OUTCOME_RESULT;
		snprintf(out->result.tenant_id, BC_ID_MAX, "root");
		snprintf(out->result.pool_id, BC_ID_MAX, "pool_00000000000000000000000000");
	} else if (strncmp(s, "node:", 5) == 0) {
		out->kind = BC_OUTCOME_RESULT;
		snprintf(out->result.tenant_id, BC_ID_MAX, "root");
		snprintf(out->result.node_id, BC_ID_MAX, "%s", s + 5);
	} else {
		bc_refuse(out, "misbehave-serial");
	}
	return 0;
}

static const struct bc_attestor misbehave = {
    .abi = BC_ATTESTOR_ABI,
    .id = "misbehave",
    .roles = roles,
    .n_roles = 1,
    .verify = verify,
};

const struct bc_attestor *bc_attestor_plugin(void)
{
	return &misbehave;
}
