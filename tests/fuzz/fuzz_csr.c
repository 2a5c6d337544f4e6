/* libFuzzer: bc_csr_check on arbitrary bytes. A CSR that passes must carry a
 * P-256 key the checker hands back. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "bc/pki.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	EVP_PKEY *pub = NULL;

	if (bc_csr_check(data, size, &pub) == 0) {
		if (pub == NULL || EVP_PKEY_get_bits(pub) != 256)
			abort();
	} else if (pub != NULL) {
		abort();
	}
	EVP_PKEY_free(pub);
	return 0;
}
