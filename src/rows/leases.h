/* leases as the metrics read them (a lease's lock and grant: join/rows.h). See
 * rows/query.h. */
#ifndef BC_ROWS_LEASES_H
#define BC_ROWS_LEASES_H

#include <stddef.h>

#include "rows/query.h"

struct bc_lease_held {
	char *name;
	char *holder;
	int64_t epoch;
};

/* Every site lease (name "site:...") unexpired at now_ms, in name order: *out an
 * array of *n (free it with bc_row_leases_free), usable after the transaction. */
BC_WUR int bc_row_leases_held(bc_tx *tx, int64_t now_ms, struct bc_lease_held **out, size_t *n);
void bc_row_leases_free(struct bc_lease_held *l, size_t n);

#endif
