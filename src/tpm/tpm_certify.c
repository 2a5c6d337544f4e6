/* The certified node key: an AK's TPM2_Certify of a key made in the TPM. */
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "tpm/tpm.h"

/* The key's SubjectPublicKeyInfo, hashed, compared with the CSR's. */
static int same_spki(const TPMT_PUBLIC *pub, const uint8_t spki_sha256[32], int *same)
{
	uint8_t d[32];
	EVP_PKEY *key = NULL;
	int rc;

	*same = 0;
	/* the CSR is P-256: another key type or curve is another key */
	if (bc_tpm_public_key(pub, &key) != 0 || !EVP_PKEY_is_a(key, "EC")) {
		EVP_PKEY_free(key);
		return 0;
	}
	if ((rc = bc_key_spki_sha256(key, d)) == 0)
		*same = bc_ct_equal(d, spki_sha256, 32);
	EVP_PKEY_free(key);
	return rc == BC_ERR_NOMEM ? rc : 0;
}

int bc_tpm_check_certify(EVP_PKEY *ak, const uint8_t *key_public, size_t key_public_len,
                         const uint8_t *certify_info, size_t certify_info_len,
                         const uint8_t *signature, size_t signature_len,
                         const uint8_t csr_sha256[static 32], const uint8_t spki_sha256[static 32],
                         enum bc_tpm_certify_result *result)
{
	uint8_t name[BC_TPM_NAME_MAX];
	size_t name_len = 0;
	TPMT_PUBLIC pub;
	TPMS_ATTEST att;
	TPMT_SIGNATURE sig;
	int rc, same = 0;

	*result = BC_TPM_CERTIFY_MALFORMED;
	if (bc_tpm_public_parse(key_public, key_public_len, &pub) != 0 ||
	    bc_tpm_attest_parse(certify_info, certify_info_len, &att) != 0 ||
	    bc_tpm_signature_parse(signature, signature_len, &sig) != 0)
		return 0;
	if (bc_tpm_signature_verify(ak, &sig, certify_info, certify_info_len) != 0) {
		*result = BC_TPM_CERTIFY_SIGNATURE;
		return 0;
	}
	if (att.magic != TPM2_GENERATED_VALUE || att.type != TPM2_ST_ATTEST_CERTIFY)
		return 0;
	if (att.extraData.size != 32 || !bc_ct_equal(att.extraData.buffer, csr_sha256, 32)) {
		*result = BC_TPM_CERTIFY_NONCE;
		return 0;
	}
	if ((rc = bc_tpm_name(&pub, key_public, key_public_len, name, &name_len)) != 0)
		return rc;
	if (att.attested.certify.name.size != name_len ||
	    memcmp(att.attested.certify.name.name, name, name_len) != 0) {
		*result = BC_TPM_CERTIFY_NAME;
		return 0;
	}
	if (bc_tpm_check_node_key(&pub) != 0) {
		*result = BC_TPM_CERTIFY_ATTRIBUTES;
		return 0;
	}
	if ((rc = same_spki(&pub, spki_sha256, &same)) != 0)
		return rc;
	*result = same ? BC_TPM_CERTIFY_OK : BC_TPM_CERTIFY_NOT_CSR;
	return 0;
}
