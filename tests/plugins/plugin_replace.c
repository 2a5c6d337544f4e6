/* A test attestor plugin registered as "join-token": it replaces the built-in.
 * It admits a machine whose sealed token is the literal "let-me-in" into the root
 * pool named "replaced", and refuses everything else with "replaced-says-no" - so a
 * test can tell it ran instead of the built-in.
 *
 * It is built as a plugin of ABI 1 was, with that ABI's shorter struct (no check, no
 * release), so the test also shows such a plugin still loads and runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/attestor.h"

static const char *const roles[] = {"node"};

static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	char *pool = NULL;
	int rc;

	(void)self;
	if (in->token == NULL || strcmp(in->token, "let-me-in") != 0) {
		bc_refuse(out, "replaced-says-no");
		return 0;
	}
	bc_param p[] = {BC_TEXT("replaced")};
	if ((rc =
	         bc_tx_query_text(tx, "SELECT id FROM pools WHERE tenant_id = 'root' AND name = $1",
	                          p, 1, &pool)) != 0)
		return rc;
	out->kind = BC_OUTCOME_RESULT;
	snprintf(out->result.tenant_id, BC_ID_MAX, "root");
	snprintf(out->result.pool_id, BC_ID_MAX, "%s", pool);
	free(pool);
	return 0;
}

/* The ABI 1 layout: the members of struct bc_attestor up to destroy. */
struct attestor_v1 {
	uint32_t abi;
	const char *id;
	const char *const *roles;
	size_t n_roles;
	void *ctx;
	int (*configure)(struct bc_attestor *self, const bc_toml *cfg, const char *table, char *err,
	                 size_t errlen);
	int (*verify)(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
	              struct bc_attest_outcome *out);
	void (*destroy)(struct bc_attestor *self);
};

static const struct attestor_v1 replacement = {
    .abi = 1,
    .id = "join-token",
    .roles = roles,
    .n_roles = 1,
    .verify = verify,
};

const struct bc_attestor *bc_attestor_plugin(void)
{
	return (const struct bc_attestor *)&replacement;
}
