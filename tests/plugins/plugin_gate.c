/* A test attestor plugin with both phases, "gate". Its evidence is one word:
 *   "stop":  check() refuses (gate-check): no transaction may begin;
 *   "late":  check() passes and leaves a state, verify() refuses (gate-verify);
 *   "open":  check() passes, verify() admits into the root tenant when it sees the
 *            state check() left (else gate-no-state);
 *   "proven-root", "proven-beta": as "open", into the tenant root or tnt_gate_beta,
 *            with a hardware key the attestor proves (the same machine each time).
 * The state is malloc'd, so a missing release() shows under LeakSanitizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/attestor.h"

static const char *const roles[] = {"node"};

static int is(const struct bc_join_input *in, const char *word)
{
	return in->attestation_len == strlen(word) &&
	       memcmp(in->attestation, word, in->attestation_len) == 0;
}

static int check(struct bc_attestor *self, const struct bc_join_input *in,
                 struct bc_attest_outcome *out, void **state)
{
	(void)self;
	if (is(in, "stop")) {
		bc_refuse(out, "gate-check");
		return 0;
	}
	if ((*state = strdup("checked")) == NULL)
		return -1;
	return 0;
}

static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	(void)self;
	(void)tx;
	if (in->check_state == NULL || strcmp(in->check_state, "checked") != 0) {
		bc_refuse(out, "gate-no-state");
		return 0;
	}
	int beta = is(in, "proven-beta");
	if (!is(in, "open") && !is(in, "proven-root") && !beta) {
		bc_refuse(out, "gate-verify");
		return 0;
	}
	out->kind = BC_OUTCOME_RESULT;
	snprintf(out->result.tenant_id, BC_ID_MAX, "%s", beta ? "tnt_gate_beta" : "root");
	if (!is(in, "open"))
		snprintf(out->result.hardware_key, BC_HWKEY_MAX, "gate:one-machine");
	return 0;
}

static void release(struct bc_attestor *self, void *state)
{
	(void)self;
	free(state);
}

static const struct bc_attestor gate = {
    .abi = BC_ATTESTOR_ABI,
    .id = "gate",
    .roles = roles,
    .n_roles = 1,
    .verify = verify,
    .check = check,
    .release = release,
};

const struct bc_attestor *bc_attestor_plugin(void)
{
	return &gate;
}
