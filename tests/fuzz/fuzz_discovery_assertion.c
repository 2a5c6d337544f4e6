/* The discovery attestor's check() on arbitrary attestation bytes: the
 * SignedDiscoveryAssertion and its DiscoveryAssertion decoded with a bound, every
 * field's shape, the machine's claims against them. Must never crash or leak, and
 * either refuse or leave verify() a state. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct bc_attestor *a = bc_attestor_discovery();
	static const char *const macs[] = {"52:54:00:aa:00:01", "02-00-00-00-00-01"};
	struct bc_join_input in;
	struct bc_attest_outcome out;
	void *state = NULL;

	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	in.attestor = "discovery";
	in.attestation = data;
	in.attestation_len = size;
	in.role = "ramdisk";
	in.claims.macs = macs;
	in.claims.n_macs = 2;
	in.claims.product_uuid = "6b1f3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e";
	if (a->check((struct bc_attestor *)a, &in, &out, &state) != 0)
		abort();
	if (out.kind != BC_OUTCOME_NONE && out.kind != BC_OUTCOME_REFUSE)
		abort();
	if (out.kind == BC_OUTCOME_REFUSE && out.reason == NULL)
		abort();
	a->release((struct bc_attestor *)a, state);
	return 0;
}
