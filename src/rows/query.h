/* The rows layer (src/rows): every SQL statement of the program outside src/store,
 * one file per table, in the common dialect of both engines (bc/store.h). It sits
 * below join, attest, provision and server, and includes nothing of theirs.
 *
 * Every function runs inside the caller's transaction and decides nothing: what a
 * caller refuses, answers or records stays with it. Functions return 0 or a negative
 * BC_ERR_*, unless their header says otherwise; BC_ERR_NOT_FOUND where a row was
 * named and none is there, when said.
 *
 * Views: a function that answers a list as the caller shows it returns the store's
 * cursor (*out, bc_rows_free() it before the transaction ends), its columns in the
 * order its header gives, read by position; NULL columns are the store's (text "",
 * integers 0, bc_rows_is_null() tells). This file: what those share. */
#ifndef BC_ROWS_QUERY_H
#define BC_ROWS_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "bc/cursor.h"
#include "bc/store.h"

/* A list query with optional filters: the base SQL (its WHERE and $1 included), then
 * " AND <cond> $k" for each filter given and a tail " ... $k" (ORDER BY, LIMIT).
 * Only constant SQL of src/rows goes in; every value is a parameter. */
#define BC_ROW_WHERE_MAX 12
struct bc_row_where {
	char sql[4096];
	bc_param p[BC_ROW_WHERE_MAX];
	size_t n;
	int overflow;
};
void bc_row_where_init(struct bc_row_where *w, const char *base, bc_param first);
/* cond ends with the operator: "n.pool_id =". */
void bc_row_where_add(struct bc_row_where *w, const char *cond, bc_param v);
/* Constant SQL without a parameter: the ")" that closes a subquery cond opened. */
void bc_row_where_raw(struct bc_row_where *w, const char *sql);
/* tail ends where the parameter goes: " ORDER BY n.id LIMIT". */
void bc_row_where_tail(struct bc_row_where *w, const char *tail, bc_param v);

/* A keyset page of a list (bc/cursor.h): where it starts and at most how many rows.
 * The list's SQL asks for limit + 1 rows, so that its caller knows whether another
 * page follows (bc_row_page_trim). */
struct bc_row_page {
	const struct bc_cursor *cursor; /* NULL: the first page */
	int64_t limit;                  /* 1 .. 10000 */
};
/* Ends w with the page of a list ordered by (at_col, id_col), or by id_col alone when
 * at_col is NULL, ascending, or newest first when desc: the key condition after (or,
 * for cursor->before, before) the cursor's key, then ORDER BY and LIMIT limit + 1.
 * The rows of a page before the cursor come nearest the cursor first, that is in
 * the list's reverse order: the caller turns them around. Column names are constant
 * SQL of src/rows. */
void bc_row_where_page(struct bc_row_where *w, const char *at_col, const char *id_col, int desc,
                       const struct bc_row_page *pg);
/* The rows of w (BC_ERR_LIMIT if w overflowed: a bug, never the caller's input). */
BC_WUR int bc_row_where_query(bc_tx *tx, const struct bc_row_where *w, bc_rows **out);

/* The planner's plan for w, one step a line, into plan (truncated to n - 1 bytes):
 * the detail column of SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN text. For
 * the plan tests and bench/: a list must read an index, never sort its table. */
BC_WUR int bc_row_where_plan(bc_tx *tx, const struct bc_row_where *w, char *plan, size_t n);

/* 1 when the query sql of n parameters returns a row, 0 when none, or < 0. */
BC_WUR int bc_row_exists(bc_tx *tx, const char *sql, const bc_param *p, size_t n);

/* The store answers a statement: for /healthz. */
BC_WUR int bc_row_ping(bc_tx *tx);

#endif
