/* The renewal of a certificate that names an AK: the same AK certifies the next key.
 *
 * The statement is urn:bc:tpm-ak:sha256:<hex of the AK's TPM name: 000b || 32-byte
 * digest>, read from the leaf. The request's key attestation must carry that AK
 * (its public area hashes to the name) and the AK's certification of the CSR's key,
 * qualified by sha256(csr), as at join. */
#include <string.h>

#include "attest/attest.h"
#include "attest/tpm_internal.h"
#include "attest/tpm_keys.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/reasons.h"
#include "bc/wire.h"

#define AK_NAME_LEN 34 /* TPM_ALG_SHA256 (000b) || SHA-256 digest */

static int parse_statement(const char *s, uint8_t name[AK_NAME_LEN])
{
	const char *hex = s + strlen(BC_WIRE_TPM_AK_URN_SHA256);

	if (strncmp(s, BC_WIRE_TPM_AK_URN_SHA256, strlen(BC_WIRE_TPM_AK_URN_SHA256)) != 0 ||
	    strlen(hex) != 2 * AK_NAME_LEN || bc_hex_decode_to(hex, name, AK_NAME_LEN) != 0 ||
	    name[0] != 0x00 || name[1] != 0x0b)
		return BC_ERR_INVALID;
	return 0;
}

/* ak_public must be the AK the statement names and an attestation key. */
static int load_ak(const struct bc_key_attestation *ka, const uint8_t want[AK_NAME_LEN],
                   EVP_PKEY **ak)
{
	uint8_t name[BC_TPM_NAME_MAX];
	size_t name_len = 0;
	TPMT_PUBLIC pub;

	/* the name covers the AK's whole public area: only that key matches it */
	if (bc_tpm_public_parse(ka->ak_public, ka->ak_public_len, &pub) != 0 ||
	    bc_tpm_name(&pub, ka->ak_public, ka->ak_public_len, name, &name_len) != 0 ||
	    name_len != AK_NAME_LEN || !bc_ct_equal(name, want, name_len) ||
	    bc_tpm_check_ak(&pub) != 0 || bc_tpm_public_key(&pub, ak) != 0)
		return BC_ERR_VERIFY;
	return 0;
}

static int verify(void *ctx, const struct bc_statement_input *in, const char **reason)
{
	const struct bc_key_attestation *ka = in->ka;
	uint8_t name[AK_NAME_LEN];
	enum bc_tpm_certify_result r;
	EVP_PKEY *ak = NULL;
	int rc;

	(void)ctx;
	*reason = NULL;
	if (parse_statement(in->statement, name) != 0) {
		*reason = BC_R_TPM_AK_URI;
		return 0;
	}
	if (ka == NULL) {
		*reason = BC_R_KEY_ATTESTATION_MISSING;
		return 0;
	}
	if (load_ak(ka, name, &ak) != 0) {
		*reason = BC_R_KEY_ATTESTATION_AK;
		return 0;
	}
	rc = bc_tpm_check_certify(ak, ka->key_public, ka->key_public_len, ka->certify_info,
	                          ka->certify_info_len, ka->signature, ka->signature_len,
	                          in->csr_sha256, in->csr_spki_sha256, &r);
	if (rc == 0)
		*reason = bc_tpm_certify_reason(r);
	EVP_PKEY_free(ak);
	return rc;
}

static const struct bc_statement_verifier tpm_statements = {
    .prefix = BC_WIRE_TPM_AK_URN_SCHEME,
    .verify = verify,
};

const struct bc_statement_verifier *bc_attest_tpm_statements(void)
{
	return &tpm_statements;
}
