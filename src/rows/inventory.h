/* inventory: what each join of a node claimed. See rows/query.h. */
#ifndef BC_ROWS_INVENTORY_H
#define BC_ROWS_INVENTORY_H

#include <stdint.h>

#include "bc/attestor.h"
#include "rows/query.h"

#define BC_ROW_INVENTORY_KEEP 100 /* records kept per node, the newest */

/* Records what a join claimed for node_id at now_ms (MACs, product UUID, serial,
 * hostname, arch; MACs and the UUID canonical when they have the shape), as a JSON
 * object; a second record of the same node at the same millisecond replaces the
 * first, so newest-last holds. With prune, records beyond the newest
 * BC_ROW_INVENTORY_KEEP go; a node made in this transaction has only this one, and
 * its join skips that statement. */
BC_WUR int bc_row_inventory_insert(bc_tx *tx, const char *node_id, const struct bc_claims *c,
                                   int64_t now_ms, int prune);

/* The product UUID of node_id's newest inventory record ("" when it claimed none):
 * 1, or 0 when the node has no record. */
BC_WUR int bc_row_inventory_newest_uuid(bc_tx *tx, const char *node_id, char uuid[BC_ID_MAX]);

/* The inventory records of node_id, oldest first. Columns: taken_at, data. */
BC_WUR int bc_row_inventory_list(bc_tx *tx, const char *node_id, bc_rows **out);

#endif
