/* bcd's pending.json reader (pending.c) on arbitrary bytes: the data directory is
 * untrusted input. Must never crash or leak; what it accepts is for the asked attestor
 * and role, inside the TTL, with a CSR that parses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/pki.h"

#define NOW_MS ((int64_t)1800000000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bcd_pending p;
	struct bcd_msg m;
	EVP_PKEY *pub = NULL;

	if (bcd_pending_parse((const char *)data, size, "tpm", BC_ROLE_NODE, NOW_MS, &p, &m) == 0) {
		if (strcmp(p.attestor, "tpm") != 0 || strcmp(p.role, BC_ROLE_NODE) != 0 ||
		    p.created_ms <= 0 ||
		    NOW_MS - p.created_ms > (int64_t)BCD_PENDING_MAX_AGE_S * 1000 ||
		    bc_csr_check(p.csr, p.csr_len, &pub) != 0)
			abort();
		EVP_PKEY_free(pub);
		bcd_pending_free(&p);
	}
	return 0;
}
