/* TPM-held node keys as JoinService sees them after the join: the reasons of a failed
 * certification, and the proof every AK-certified renewal carries. */
#ifndef BC_ATTEST_TPM_KEYS_H
#define BC_ATTEST_TPM_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "tpm/tpm.h"

/* The refusal reason of a certification result (NULL for BC_TPM_CERTIFY_OK). */
const char *bc_tpm_certify_reason(enum bc_tpm_certify_result r);

/* A renewal's key attestation: ak_public must be the AK the leaf's statement names
 * (its TPM name equal to ak_name) and an attestation key (else key-attestation-ak);
 * then the certification of key_public as at join, over csr_sha256, for the CSR's key
 * (node-key-*). Returns NULL when proven, else the reason; *rc < 0 when the check
 * itself could not run. */
const char *bc_tpm_verify_key_attestation(const uint8_t *ak_name, size_t ak_name_len,
                                          const uint8_t *ak_public, size_t ak_public_len,
                                          const uint8_t *key_public, size_t key_public_len,
                                          const uint8_t *certify_info, size_t certify_info_len,
                                          const uint8_t *signature, size_t signature_len,
                                          const uint8_t csr_sha256[static 32],
                                          const uint8_t spki_sha256[static 32], int *rc);

#endif
