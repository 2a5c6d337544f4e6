/* The renewal of a certificate that names an AK: the same AK certifies the next key. */
#include <string.h>

#include "attest/tpm_keys.h"
#include "bc/crypto.h"
#include "join/reasons.h"

const char *bc_tpm_verify_key_attestation(const uint8_t *ak_name, size_t ak_name_len,
                                          const uint8_t *ak_public, size_t ak_public_len,
                                          const uint8_t *key_public, size_t key_public_len,
                                          const uint8_t *certify_info, size_t certify_info_len,
                                          const uint8_t *signature, size_t signature_len,
                                          const uint8_t csr_sha256[static 32],
                                          const uint8_t spki_sha256[static 32], int *rc)
{
	uint8_t name[BC_TPM_NAME_MAX];
	size_t name_len = 0;
	enum bc_tpm_certify_result r;
	EVP_PKEY *ak = NULL;
	TPMT_PUBLIC pub;
	const char *why;

	*rc = 0;
	/* the name covers the AK's whole public area: only that key matches it */
	if (bc_tpm_public_parse(ak_public, ak_public_len, &pub) != 0 ||
	    bc_tpm_name(&pub, ak_public, ak_public_len, name, &name_len) != 0 ||
	    name_len != ak_name_len || !bc_ct_equal(name, ak_name, name_len) ||
	    bc_tpm_check_ak(&pub) != 0 || bc_tpm_public_key(&pub, &ak) != 0)
		return BC_R_KEY_ATTESTATION_AK;
	*rc = bc_tpm_check_certify(ak, key_public, key_public_len, certify_info, certify_info_len,
	                           signature, signature_len, csr_sha256, spki_sha256, &r);
	why = *rc == 0 ? bc_tpm_certify_reason(r) : NULL;
	EVP_PKEY_free(ak);
	return why;
}
