/* What the views of src/rows share (query.h). */
#include "rows/query.h"

#include <stdio.h>
#include <string.h>

#include "bc/json.h"
#include "rows/internal.h"

static void where_append(struct bc_row_where *w, const char *a, const char *b, bc_param v)
{
	size_t len = strlen(w->sql);
	int n;

	if (w->overflow || w->n == BC_ROW_WHERE_MAX) {
		w->overflow = 1;
		return;
	}
	w->p[w->n++] = v;
	n = snprintf(w->sql + len, sizeof(w->sql) - len, "%s%s $%zu", a, b, w->n);
	if (n < 0 || (size_t)n >= sizeof(w->sql) - len)
		w->overflow = 1;
}

/* Appends constant SQL without a parameter. */
static void where_raw(struct bc_row_where *w, const char *a)
{
	size_t len = strlen(w->sql);

	if (w->overflow ||
	    snprintf(w->sql + len, sizeof(w->sql) - len, "%s", a) >= (int)(sizeof(w->sql) - len))
		w->overflow = 1;
}

void bc_row_where_init(struct bc_row_where *w, const char *base, bc_param first)
{
	memset(w, 0, sizeof(*w));
	if (snprintf(w->sql, sizeof(w->sql), "%s", base) >= (int)sizeof(w->sql))
		w->overflow = 1;
	w->p[w->n++] = first;
}

void bc_row_where_raw(struct bc_row_where *w, const char *sql)
{
	where_raw(w, sql);
}

void bc_row_where_add(struct bc_row_where *w, const char *cond, bc_param v)
{
	where_append(w, " AND ", cond, v);
}

void bc_row_where_tail(struct bc_row_where *w, const char *tail, bc_param v)
{
	where_append(w, "", tail, v);
}

void bc_row_where_page(struct bc_row_where *w, const char *at_col, const char *id_col, int desc,
                       const struct bc_row_page *pg)
{
	const struct bc_cursor *k = pg->cursor;
	/* going towards greater keys: an ascending list's next page, or a descending
	 * list's page before */
	int up = k != NULL ? desc == k->before : !desc;
	char col[160];

	if (k != NULL && at_col != NULL) {
		snprintf(col, sizeof(col), "(%s, %s) %c (", at_col, id_col, up ? '>' : '<');
		where_append(w, " AND ", col, BC_INT(k->at));
		where_append(w, ",", "", BC_TEXT(k->id));
		where_raw(w, ")");
	} else if (k != NULL) {
		snprintf(col, sizeof(col), "%s %c", id_col, up ? '>' : '<');
		where_append(w, " AND ", col, BC_TEXT(k->id));
	}
	if (at_col != NULL)
		snprintf(col, sizeof(col), " ORDER BY %s%s, %s%s LIMIT", at_col, up ? "" : " DESC",
		         id_col, up ? "" : " DESC");
	else
		snprintf(col, sizeof(col), " ORDER BY %s%s LIMIT", id_col, up ? "" : " DESC");
	where_append(w, "", col, BC_INT(pg->limit + 1));
}

int bc_row_where_plan(bc_tx *tx, const struct bc_row_where *w, char *plan, size_t n)
{
	int pg = bc_store_engine(bc_tx_store(tx)) == BC_STORE_POSTGRES;
	struct bc_row_where e;
	size_t len = 0;
	bc_rows *r = NULL;
	int rc;

	if (n == 0)
		return BC_ERR_INVALID;
	plan[0] = '\0';
	if (w->overflow)
		return BC_ERR_LIMIT;
	e = *w;
	if (snprintf(e.sql, sizeof(e.sql), "%s%s", pg ? "EXPLAIN " : "EXPLAIN QUERY PLAN ",
	             w->sql) >= (int)sizeof(e.sql))
		return BC_ERR_LIMIT;
	if ((rc = bc_tx_query(tx, e.sql, e.p, e.n, &r)) != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1) {
		int k = snprintf(plan + len, n - len, "%s\n", bc_rows_text(r, pg ? 0 : 3));
		len = k < 0 || (size_t)k >= n - len ? n - 1 : len + (size_t)k;
	}
	bc_rows_free(r);
	return rc < 0 ? rc : 0;
}

int bc_row_where_query(bc_tx *tx, const struct bc_row_where *w, bc_rows **out)
{
	*out = NULL;
	if (w->overflow)
		return BC_ERR_LIMIT;
	return bc_tx_query(tx, w->sql, w->p, w->n, out);
}

int bc_row_exists(bc_tx *tx, const char *sql, const bc_param *p, size_t n)
{
	int64_t one;
	int rc = bc_tx_query_int(tx, sql, p, n, &one);

	if (rc == BC_ERR_NOT_FOUND)
		return 0;
	return rc < 0 ? rc : 1;
}

int bc_row_ping(bc_tx *tx)
{
	int64_t one;

	return bc_tx_query_int(tx, "SELECT 1", NULL, 0, &one);
}

void bc_row_copy_col(char *dst, size_t n, bc_rows *r, const char *name)
{
	snprintf(dst, n, "%s", bc_rows_text_named(r, name));
}

int bc_row_first(bc_tx *tx, const char *sql, const bc_param *p, size_t n, bc_rows **out)
{
	int rc;

	*out = NULL;
	if ((rc = bc_tx_query(tx, sql, p, n, out)) != 0)
		return rc;
	if ((rc = bc_rows_next(*out)) != 1) {
		bc_rows_free(*out);
		*out = NULL;
	}
	return rc;
}

int bc_row_collect(bc_tx *tx, const char *sql, const bc_param *p, size_t np, void *list, size_t *n,
                   int (*append)(void *list, size_t *n, bc_rows *r),
                   void (*clear)(void *list, size_t *n))
{
	bc_rows *r = NULL;
	int rc;

	*n = 0;
	if ((rc = bc_tx_query(tx, sql, p, np, &r)) != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1)
		if ((rc = append(list, n, r)) != 0)
			break;
	bc_rows_free(r);
	if (rc < 0)
		clear(list, n);
	return rc < 0 ? rc : 0;
}

char *bc_row_string_array(const char *const *s, size_t n)
{
	json_t *arr = json_array();
	char *js;

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_string(s[i]));
	js = bc_json_dump(arr);
	json_decref(arr);
	return js;
}

const char *bc_row_none_if_empty(const char *s)
{
	return s != NULL && s[0] ? s : NULL;
}
