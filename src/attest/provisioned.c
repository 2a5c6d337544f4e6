/* provisioned: the OS a deploy or a provider bootstrap installed joins with a sealed
 * single-use provisioned token and its product UUID claim (spec: "provisioned").
 *
 * The token (token.c: lock, constant-time secret, revocation, expiry, uses) must be
 * of role provisioned with exactly one use left, and bound to one machine: by a
 * target the resolver finds (the running deploy workflow that minted it names the
 * node, whose newest inventory gives the product UUID: the join re-keys that node in
 * place), or by the token's expect.productUuid (a provider bootstrap: a new node).
 * The use is spent, and the workflow's join step completed, only inside the join's
 * transaction: a refused join leaves the token usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/token.h"
#include "bc/canon.h"
#include "bc/json.h"
#include "bc/reasons.h"
#include "provision/provision.h"

static const char *const roles[] = {"node"};

/* The token's expect.productUuid, canonical, into uuid ("" when it sets none). */
static int expected_uuid(bc_tx *tx, const char *token_id, char uuid[BC_ID_MAX])
{
	char *expect = NULL, u[BC_UUID_LEN + 1];
	json_t *e = NULL;
	const char *v;
	int rc, reclaim;

	uuid[0] = 0;
	if ((rc = bc_row_token_expect(tx, token_id, &expect, &reclaim)) != 1)
		return rc < 0 ? rc : BC_ERR_INTERNAL; /* locked a moment ago */
	if (bc_json_parse(expect, strlen(expect), 0, &e, NULL, 0) == 0 &&
	    bc_json_get_string(e, "productUuid", &v) == 0 && bc_uuid_canon(v, u) == 0)
		snprintf(uuid, BC_ID_MAX, "%s", u);
	json_decref(e);
	free(expect);
	return 0;
}

/* The token itself: live, of role provisioned, with exactly one use left. */
static int check_token(bc_tx *tx, const struct bc_join_input *in, struct bc_token_row *t,
                       struct bc_attest_outcome *out, const char **reason)
{
	int rc;

	if ((rc = bc_token_check(tx, in->token, in->now_ms, t, out, reason)) != 0 || *reason)
		return rc;
	/* one reason for both (spec): a node token of many uses is no machine credential */
	if (strcmp(t->role, "provisioned") != 0 || t->uses_left != 1)
		*reason = BC_R_NOT_SINGLE_USE;
	return 0;
}

/* The machine the token is bound to: a target, else expect.productUuid. */
static int binding(bc_tx *tx, const struct bc_token_row *t, const char *claimed,
                   struct bc_provision_target *target, struct bc_attest_outcome *out,
                   const char **reason)
{
	char want[BC_ID_MAX];
	int rc;

	if ((rc = bc_provision_resolve_target(tx, t, target, reason)) < 0 || *reason)
		return rc < 0 ? rc : 0;
	if (rc == 1) {
		snprintf(out->node_id, sizeof(out->node_id), "%s", target->node_id);
		snprintf(want, sizeof(want), "%s", target->product_uuid);
	} else if ((rc = expected_uuid(tx, t->id, want)) != 0) {
		return rc;
	}
	if (want[0] == 0)
		*reason = BC_R_UNBOUND;
	else if (strcmp(want, claimed) != 0)
		*reason = BC_R_PRODUCT_UUID_MISMATCH;
	return 0;
}

static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	struct bc_provision_target target;
	struct bc_token_row t;
	char claimed[BC_UUID_LEN + 1];
	const char *reason = NULL;
	int rc;

	(void)self;
	memset(&target, 0, sizeof(target));
	if ((rc = check_token(tx, in, &t, out, &reason)) != 0)
		return rc;
	/* check() refused a request without one; canonical for the comparison */
	if (reason == NULL && bc_uuid_canon(in->claims.product_uuid, claimed) != 0)
		reason = BC_R_NO_PRODUCT_UUID;
	if (reason == NULL && (rc = binding(tx, &t, claimed, &target, out, &reason)) != 0)
		return rc;
	if (reason) {
		bc_refuse(out, reason);
		return 0;
	}
	if ((rc = bc_row_token_consume(tx, t.id, in->now_ms)) != 0)
		return rc;
	if (target.workflow_id[0] &&
	    (rc = bc_provision_target_joined(tx, &target, in->now_ms)) != 0)
		return rc;
	bc_token_admit(&t, "node", out);
	/* a target is re-keyed in place: JoinService keeps its state and placement */
	snprintf(out->result.node_id, BC_ID_MAX, "%s", target.node_id);
	return 0;
}

/* Before the transaction: a machine that claims no product UUID costs no row lock. */
static int check(struct bc_attestor *self, const struct bc_join_input *in,
                 struct bc_attest_outcome *out, void **state)
{
	char u[BC_UUID_LEN + 1];

	(void)self;
	*state = NULL;
	if (bc_uuid_canon(in->claims.product_uuid, u) != 0)
		bc_refuse(out, BC_R_NO_PRODUCT_UUID);
	return 0;
}

static const struct bc_attestor provisioned = {
    .abi = BC_ATTESTOR_ABI,
    .id = BC_WIRE_ATTESTOR_PROVISIONED,
    .roles = roles,
    .n_roles = 1,
    .verify = verify,
    .check = check,
};

const struct bc_attestor *bc_attestor_provisioned(void)
{
	return &provisioned;
}
