/* Checks of request bodies, rows to JSON, events and audit: what every admin handler
 * shares. */
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "join/events.h"
#include "server/admin_internal.h"

#define NAME_MAX_LEN 128
#define SAFE_MAX_LEN 64

int admin_fail(struct admin_call *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	/* messages may quote the parser on untrusted bytes: keep them printable ASCII */
	for (char *p = c->msg; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	return rc;
}

int admin_answer(struct admin_call *c, int status, json_t *answer)
{
	if (answer == NULL)
		return BC_ERR_NOMEM;
	json_decref(c->answer);
	c->answer = answer;
	c->status = status;
	return 0;
}

int admin_is_root(const struct admin_call *c)
{
	return strcmp(c->tenant_id, ADMIN_ROOT_TENANT) == 0;
}

const char *admin_safe(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SAFE_MAX_LEN)
		return "(field)";
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return "(field)";
	}
	return s;
}

/* ---- body checks ---- */

int admin_check_fields(struct admin_call *c, const json_t *obj, const char *what,
                       const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		int ok = 0;

		for (size_t i = 0; allowed[i] != NULL; i++)
			ok |= strcmp(allowed[i], key) == 0;
		if (!ok)
			return admin_fail(c, BC_ERR_INVALID, "%s.%s: unknown field", what,
			                  admin_safe(key));
	}
	return 0;
}

static int text_ok(const char *s, size_t len, size_t max)
{
	if (len == 0 || len > max || strlen(s) != len)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

int admin_get_text(struct admin_call *c, const json_t *obj, const char *key, const char *field,
                   int required, size_t max, const char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL || (json_is_null(v) && !required))
		return required ? admin_fail(c, BC_ERR_INVALID, "%s: required", field) : 0;
	if (!json_is_string(v) || !text_ok(json_string_value(v), json_string_length(v), max))
		return admin_fail(
		    c, BC_ERR_INVALID,
		    "%s: expected a string of 1 to %zu bytes without control characters", field,
		    max);
	*out = json_string_value(v);
	return 0;
}

/* The objects found by name as well as by id (the CLI's resolver, cli_resolve.c): a
 * name that begins as their ids do would be taken for an id and never found. */
static const struct {
	const char *field;
	const char *id_prefix;
} NAMED[] = {
    {"tenant.name", "tnt_"},
    {"pool.name", "pool_"},
    {"site.name", "site_"},
    {"apiKey.name", "key_"},
};

int admin_get_name(struct admin_call *c, const json_t *obj, const char *key, const char *field,
                   int required, const char **out)
{
	int rc;

	if ((rc = admin_get_text(c, obj, key, field, required, NAME_MAX_LEN, out)) != 0 ||
	    *out == NULL)
		return rc;
	for (size_t i = 0; i < sizeof(NAMED) / sizeof(NAMED[0]); i++)
		if (strcmp(field, NAMED[i].field) == 0 &&
		    strncmp(*out, NAMED[i].id_prefix, strlen(NAMED[i].id_prefix)) == 0)
			return admin_fail(c, BC_ERR_INVALID,
			                  "%s: \"%s\" begins with %s as ids do, so commands would "
			                  "take it for an id; choose a name that does not",
			                  field, admin_safe(*out), NAMED[i].id_prefix);
	return 0;
}

int admin_get_int(struct admin_call *c, const json_t *obj, const char *key, const char *field,
                  int64_t min, int64_t max, int64_t def, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	json_int_t i;

	*out = def;
	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || (i = json_integer_value(v)) < min || i > max)
		return admin_fail(c, BC_ERR_INVALID, "%s: expected an integer from %lld to %lld",
		                  field, (long long)min, (long long)max);
	*out = (int64_t)i;
	return 0;
}

int admin_get_bool(struct admin_call *c, const json_t *obj, const char *key, const char *field,
                   int def, int *out)
{
	json_t *v = json_object_get(obj, key);

	*out = def;
	if (v == NULL)
		return 0;
	if (!json_is_boolean(v))
		return admin_fail(c, BC_ERR_INVALID, "%s: expected true or false", field);
	*out = json_is_true(v);
	return 0;
}

/* ---- rows to JSON ---- */

json_t *admin_time(int64_t ms)
{
	char buf[40];

	bc_time_format_ms(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* Text the store holds came through this API or JoinService; should a column ever
 * hold invalid UTF-8, it is shown as null rather than failing the whole answer. */
json_t *admin_col_text(bc_rows *r, int col)
{
	json_t *v;

	if (bc_rows_is_null(r, col))
		return json_null();
	v = json_string(bc_rows_text(r, col));
	return v ? v : json_null();
}

json_t *admin_col_time(bc_rows *r, int col)
{
	return bc_rows_is_null(r, col) ? json_null() : admin_time(bc_rows_int(r, col));
}

json_t *admin_col_json(bc_rows *r, int col, const char *fallback)
{
	const char *s = bc_rows_text(r, col);
	json_t *v = NULL;

	if (bc_json_parse(s, strlen(s), 0, &v, NULL, 0) == 0)
		return v;
	return json_loads(fallback, 0, NULL);
}

static int rows_into(bc_rows *rows, admin_row_fn fn, json_t *arr, int only_one)
{
	int rc;

	while ((rc = bc_rows_next(rows)) == 1) {
		if (json_array_append_new(arr, fn(rows)) != 0) {
			rc = BC_ERR_NOMEM;
			break;
		}
		if (only_one) {
			rc = 0;
			break;
		}
	}
	return rc;
}

int admin_rows_list(bc_rows *rows, admin_row_fn fn, json_t **out)
{
	json_t *arr;
	int rc;

	*out = NULL;
	if ((arr = json_array()) == NULL) {
		bc_rows_free(rows);
		return BC_ERR_NOMEM;
	}
	rc = rows_into(rows, fn, arr, 0);
	bc_rows_free(rows);
	if (rc != 0) {
		json_decref(arr);
		return rc;
	}
	*out = arr;
	return 0;
}

int admin_rows_one(bc_rows *rows, admin_row_fn fn, json_t **out)
{
	json_t *arr;
	int rc;

	*out = NULL;
	if ((rc = admin_rows_list(rows, fn, &arr)) != 0)
		return rc;
	if (json_array_size(arr) == 0)
		rc = BC_ERR_NOT_FOUND;
	else
		*out = json_incref(json_array_get(arr, 0));
	json_decref(arr);
	return rc;
}

/* ---- events and audit ---- */

int admin_record(bc_tx *tx, struct admin_call *c, const char *tenant_id, const char *type,
                 const char *subject, json_t *data, int event)
{
	int rc;

	if (data == NULL)
		return BC_ERR_NOMEM;
	if (event && (rc = bc_event_publish(tx, tenant_id, type, subject, data)) != 0)
		return rc;
	return bc_audit(tx, tenant_id, c->actor, type, subject, data);
}

int admin_query_limit(struct admin_call *c, int64_t def, int64_t max, int64_t *out)
{
	const char *s = bc_http_query(c->req, "limit");
	int64_t v = 0;

	*out = def;
	if (s == NULL)
		return 0;
	for (size_t i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 6)
			return admin_fail(c, BC_ERR_INVALID,
			                  "limit: expected an integer from 1 to %lld",
			                  (long long)max);
		v = v * 10 + (s[i] - '0');
	}
	if (s[0] == '\0' || v < 1 || v > max)
		return admin_fail(c, BC_ERR_INVALID, "limit: expected an integer from 1 to %lld",
		                  (long long)max);
	*out = v;
	return 0;
}

int admin_query_text(struct admin_call *c, const char *key, size_t maxlen, const char **out)
{
	const char *s = bc_http_query(c->req, key);

	*out = NULL;
	if (s == NULL)
		return 0;
	if (s[0] == '\0' || strlen(s) > maxlen)
		return admin_fail(c, BC_ERR_INVALID, "%s: expected 1 to %zu bytes", key, maxlen);
	*out = s;
	return 0;
}

int admin_query_since(struct admin_call *c, const char *key, int64_t now_ms, int64_t *out,
                      int *present)
{
	const char *s = bc_http_query(c->req, key);
	int64_t v = 0, d;
	size_t i;

	*out = 0;
	*present = 0;
	if (s == NULL)
		return 0;
	for (i = 0; s[i] >= '0' && s[i] <= '9' && i < 15; i++)
		v = v * 10 + (s[i] - '0');
	if (i > 0 && s[i] == '\0') {
		*out = v;
		*present = 1;
		return 0;
	}
	if (bc_duration_parse_ms(s, &d) != 0 || d < 0 || d > now_ms)
		return admin_fail(c, BC_ERR_INVALID,
		                  "%s: expected a duration back from now (1h, 30m, 7d) or "
		                  "milliseconds since the epoch",
		                  key);
	*out = now_ms - d;
	*present = 1;
	return 0;
}

/* ---- pages of lists ---- */

int admin_query_page(struct admin_call *c, struct admin_page *pg, const char *list, int at_col,
                     int id_col, int64_t def, int64_t max)
{
	const char *s;
	int rc;

	memset(pg, 0, sizeof(*pg));
	pg->list = list;
	pg->at_col = at_col;
	pg->id_col = id_col;
	if ((rc = admin_query_limit(c, def, max, &pg->rows.limit)) != 0 ||
	    (rc = admin_query_text(c, "cursor", BC_CURSOR_MAX, &s)) != 0)
		return rc;
	if (s == NULL)
		return 0;
	if (bc_cursor_decode(list, s, &pg->cursor) != 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "cursor: not a cursor of this list; pass a nextCursor or "
		                  "prevCursor this list answered, with the same filters");
	pg->rows.cursor = &pg->cursor;
	return 0;
}

int admin_page_after(struct admin_call *c, struct admin_page *pg, const char *id)
{
	size_t n = strlen(id);

	if (pg->rows.cursor != NULL)
		return admin_fail(c, BC_ERR_INVALID, "after: give cursor or after, not both");
	if (n > BC_CURSOR_ID_MAX)
		return admin_fail(c, BC_ERR_INVALID, "after: expected an id");
	memset(&pg->cursor, 0, sizeof(pg->cursor));
	memcpy(pg->cursor.id, id, n);
	pg->rows.cursor = &pg->cursor;
	return 0;
}

/* The key of the current row as a cursor going that way. */
static void row_key(const struct admin_page *pg, bc_rows *r, struct bc_cursor *k)
{
	memset(k, 0, sizeof(*k));
	k->at = pg->at_col >= 0 ? bc_rows_int(r, pg->at_col) : 0;
	snprintf(k->id, sizeof(k->id), "%s", bc_rows_text(r, pg->id_col));
}

static json_t *cursor_json(const struct admin_page *pg, const struct bc_cursor *k, int before)
{
	struct bc_cursor w = *k;
	char s[BC_CURSOR_MAX + 1];

	w.before = before;
	/* a key that no cursor can carry (an id out of shape) ends the walk there */
	return bc_cursor_encode(pg->list, &w, s) == 0 ? json_string(s) : json_null();
}

/* Reverses a in place: a page before the cursor is read nearest the cursor first. */
static void reverse(json_t *a)
{
	size_t n = json_array_size(a);

	for (size_t i = 0; i < n / 2; i++) {
		json_t *x = json_incref(json_array_get(a, i));
		json_array_set(a, i, json_array_get(a, n - 1 - i));
		json_array_set_new(a, n - 1 - i, x);
	}
}

int admin_page_answer(struct admin_call *c, const struct admin_page *pg, bc_rows *rows,
                      admin_row_fn fn, const char *key)
{
	const struct bc_cursor *cur = pg->rows.cursor;
	int before = cur != NULL && cur->before, more = 0, rc = 0;
	struct bc_cursor first = {0}, last = {0};
	json_t *arr = json_array(), *next, *prev;
	int64_t n = 0;

	while (arr != NULL && (rc = bc_rows_next(rows)) == 1) {
		if (n == pg->rows.limit) {
			more = 1; /* the row of limit + 1 only says another page follows */
			break;
		}
		row_key(pg, rows, n == 0 ? &first : &last);
		if (n == 0)
			last = first;
		if (json_array_append_new(arr, fn(rows)) != 0)
			rc = BC_ERR_NOMEM;
		if (rc < 0)
			break;
		n++;
	}
	bc_rows_free(rows);
	if (arr == NULL || rc < 0) {
		json_decref(arr);
		return arr == NULL ? BC_ERR_NOMEM : rc;
	}
	if (before) {
		struct bc_cursor t = first;
		reverse(arr);
		first = last;
		last = t;
	}
	/* going forward, a page follows when one more row was there; going back, the page
	 * the cursor came from follows */
	next = n > 0 && (before || more) ? cursor_json(pg, &last, 0) : json_null();
	prev = n > 0 && (before ? more : cur != NULL) ? cursor_json(pg, &first, 1) : json_null();
	return admin_answer(
	    c, 200, json_pack("{s:o, s:o, s:o}", key, arr, "nextCursor", next, "prevCursor", prev));
}
