/* node_bindings: a hardware key (of a kind) bound to the node it joined as. See
 * rows/query.h. */
#ifndef BC_ROWS_BINDINGS_H
#define BC_ROWS_BINDINGS_H

#include <stdint.h>

#include "bc/attestor.h"
#include "rows/query.h"

struct bc_binding_row {
	char kind[32];
	char key[BC_HWKEY_MAX];
	char node_id[BC_ID_MAX];
	int64_t created_at;
};

/* The binding of (kind, key). */
BC_WUR int bc_row_binding_get(bc_tx *tx, const char *kind, const char *key,
                              struct bc_binding_row *row);

/* Binds (kind, key) to node_id. BC_ERR_CONFLICT when the key is bound already (to
 * whichever node: read it with bc_row_binding_get). */
BC_WUR int bc_row_binding_insert(bc_tx *tx, const char *kind, const char *key, const char *node_id,
                                 int64_t now_ms);

/* The bindings of node_id, oldest first, at most limit: the rows (kind, key,
 * created_at). A node's page. */
BC_WUR int bc_row_bindings_of_node(bc_tx *tx, const char *node_id, int64_t limit, bc_rows **out);

#endif
