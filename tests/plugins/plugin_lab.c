/* A test attestor plugin, "lab": admits a node into the root tenant's pool named
 * "lab" after one challenge round. Round 1 (no evidence): a challenge whose payload
 * is sha256("lab" || sha256(csr)). Round 2: the evidence must be that payload, so the
 * answer is bound to the CSR of round 1. Refuses "lab-answer" otherwise. Allowed
 * kinds: none, but ["lab.run"] for a machine whose claimed serial is "lab-kinds" and
 * a malformed list for "lab-bad-kinds". */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/attestor.h"

static const char *const roles[] = {"node"};

static void expected(const struct bc_join_input *in, uint8_t out[32])
{
	uint8_t buf[3 + 32];
	memcpy(buf, "lab", 3);
	memcpy(buf + 3, in->csr_sha256, 32);
	SHA256(buf, sizeof(buf), out);
}

static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	uint8_t want[32];
	char *pool = NULL;
	int rc;

	(void)self;
	expected(in, want);
	if (in->attestation_len == 0) {
		out->kind = BC_OUTCOME_DEFER;
		out->deferral.kind = BC_DEFER_CHALLENGE;
		out->deferral.challenge = malloc(32);
		memcpy(out->deferral.challenge, want, 32);
		out->deferral.challenge_len = 32;
		out->deferral.not_after_ms = in->now_ms + 60000;
		return 0;
	}
	if (in->attestation_len != 32 || memcmp(in->attestation, want, 32) != 0) {
		bc_refuse(out, "lab-answer");
		return 0;
	}
	bc_param p[] = {BC_TEXT("lab")};
	rc = bc_tx_query_text(tx, "SELECT id FROM pools WHERE tenant_id = 'root' AND name = $1", p,
	                      1, &pool);
	if (rc == BC_ERR_NOT_FOUND) {
		bc_refuse(out, "lab-no-pool");
		return 0;
	}
	if (rc != 0)
		return rc;
	out->kind = BC_OUTCOME_RESULT;
	snprintf(out->result.tenant_id, BC_ID_MAX, "root");
	snprintf(out->result.pool_id, BC_ID_MAX, "%s", pool);
	free(pool);
	if (in->claims.serial && strcmp(in->claims.serial, "lab-kinds") == 0)
		snprintf(out->allowed_kinds_json, sizeof(out->allowed_kinds_json), "[\"lab.run\"]");
	else if (in->claims.serial && strcmp(in->claims.serial, "lab-bad-kinds") == 0)
		snprintf(out->allowed_kinds_json, sizeof(out->allowed_kinds_json),
		         "[\"lab.run\", 7]");
	return 0;
}

static const struct bc_attestor lab = {
    .abi = BC_ATTESTOR_ABI,
    .id = "lab",
    .roles = roles,
    .n_roles = 1,
    .verify = verify,
};

const struct bc_attestor *bc_attestor_plugin(void)
{
	return &lab;
}
