/* TPM-held node keys as JoinService sees them after the join: the reasons of a failed
 * certification, and the statement verifier every AK-certified renewal goes through. */
#ifndef BC_ATTEST_TPM_KEYS_H
#define BC_ATTEST_TPM_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "tpm/tpm.h"

/* The refusal reason of a certification result (NULL for BC_TPM_CERTIFY_OK). */
const char *bc_tpm_certify_reason(enum bc_tpm_certify_result r);

#endif
