/* A renewal's proof that the next node key is held as the last one was
 * (RenewRequest.key_attestation): the marshaled TPMT_PUBLIC of the AK and of the next
 * key, the TPMS_ATTEST of the AK's TPM2_Certify of that key over sha256(next_csr), and
 * the AK's TPMT_SIGNATURE, as the TPM produced them. bcd builds one; Renew hands it to
 * the statement verifier. The holder keeps the bytes. */
#ifndef BC_KEY_ATTESTATION_H
#define BC_KEY_ATTESTATION_H

#include <stddef.h>
#include <stdint.h>

#define BC_KA_FIELD_MAX 2048 /* each field: a TPM structure */

struct bc_key_attestation {
	const uint8_t *ak_public;
	size_t ak_public_len;
	const uint8_t *key_public;
	size_t key_public_len;
	const uint8_t *certify_info;
	size_t certify_info_len;
	const uint8_t *signature;
	size_t signature_len;
};

#endif
