/* libFuzzer: the TPM structure parsers of src/tpm on arbitrary bytes (the first byte
 * picks one). A public area that parses must give a name, and one that makes a key
 * must make it without crashing; a parse that fails leaves its output zeroed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tpm/tpm.h"

static int zeroed(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TPMT_PUBLIC pub;
	TPMS_ATTEST att;
	TPMT_SIGNATURE sig;
	uint8_t name[BC_TPM_NAME_MAX];
	size_t n;
	EVP_PKEY *key = NULL;

	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (bc_tpm_public_parse(data + 1, size - 1, &pub) != 0) {
			if (!zeroed(&pub, sizeof(pub)))
				abort();
			break;
		}
		(void)!bc_tpm_name(&pub, data + 1, size - 1, name, &n);
		(void)!bc_tpm_check_ak(&pub);
		(void)!bc_tpm_check_ek(&pub);
		if (bc_tpm_public_key(&pub, &key) == 0 && key == NULL)
			abort();
		EVP_PKEY_free(key);
		break;
	case 1:
		if (bc_tpm_attest_parse(data + 1, size - 1, &att) != 0 &&
		    !zeroed(&att, sizeof(att)))
			abort();
		break;
	default:
		if (bc_tpm_signature_parse(data + 1, size - 1, &sig) != 0 &&
		    !zeroed(&sig, sizeof(sig)))
			abort();
		break;
	}
	return 0;
}
