/* attestation_uses: what an attestor accepted once, so that no replica accepts it
 * again. See rows/query.h. */
#ifndef BC_ROWS_USES_H
#define BC_ROWS_USES_H

#include <stdint.h>

#include "rows/query.h"

/* Records that attestor accepted subject (hex), kept until expires_at (negative:
 * forever, BC_USE_FOREVER) so that no replica accepts it again. BC_ERR_CONFLICT when it was
 * recorded before: the caller's
 * ...-replay or ...-reused refusal. */
#define BC_USE_FOREVER (-1)
BC_WUR int bc_row_use_insert(bc_tx *tx, const char *attestor, const char *subject_hex,
                             int64_t expires_at, int64_t now_ms);

#endif
