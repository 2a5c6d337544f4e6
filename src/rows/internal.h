/* What the files of src/rows share among themselves (not for their callers). */
#ifndef BC_ROWS_INTERNAL_H
#define BC_ROWS_INTERNAL_H

#include <stddef.h>

#include "rows/nodes.h"
#include "rows/query.h"

/* Copies the text column name into dst of n bytes (NULL reads as ""). */
void bc_row_copy_col(char *dst, size_t n, bc_rows *r, const char *name);

/* The first row of a query: 1 with *out holding it (the caller frees it), 0 none. */
BC_WUR int bc_row_first(bc_tx *tx, const char *sql, const bc_param *p, size_t n, bc_rows **out);

/* Every row of a query, collected: append adds r to the caller's list (list is the
 * address of its array pointer, n its count) and grows it; on an error of the query or
 * of append, clear frees what was collected and zeroes *list and *n. 0 or that error. */
BC_WUR int bc_row_collect(bc_tx *tx, const char *sql, const bc_param *p, size_t np, void *list,
                          size_t *n, int (*append)(void *list, size_t *n, bc_rows *r),
                          void (*clear)(void *list, size_t *n));

/* A JSON array of n strings, as text (malloc'd); NULL when out of memory. */
char *bc_row_string_array(const char *const *s, size_t n);

/* s, or NULL when s is NULL or "": an optional column. */
const char *bc_row_none_if_empty(const char *s);

/* The node columns id, tenant_id, pool_id, site_id, role, state and generation of r
 * (read by name) into row. */
void bc_row_node_from(bc_rows *r, struct bc_node_row *row);

#endif
