/* attestation_uses (uses.h). */
#include "rows/uses.h"

int bc_row_use_insert(bc_tx *tx, const char *attestor, const char *subject_hex, int64_t expires_at,
                      int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(attestor), BC_TEXT(subject_hex),
	                expires_at < 0 ? BC_NULL : BC_INT(expires_at), BC_INT(now_ms)};

	return bc_tx_exec(
	    tx,
	    "INSERT INTO attestation_uses (attestor, subject, expires_at, created_at) "
	    "VALUES ($1, $2, $3, $4)",
	    p, 4, NULL);
}
