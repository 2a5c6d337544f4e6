/* bc_toml_read_table(): one table of a config file read through its field
 * descriptors (include/bc/toml.h), so that every config reader (bcd's, the server's,
 * each attestor's) refuses the same mistakes with the same words, and lists its known
 * keys from the one table that also reads them.
 *
 * Order: the names first (every key and sub-table of the file's table described,
 * none under both its new and its old name), then each field in the order of the
 * descriptors, so the first error is the same whatever the file's order. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/log.h"
#include "bc/toml.h"

#define PATH_MAX_LEN 512

static int64_t scale_of(int64_t s)
{
	return s > 0 ? s : 1;
}

static int is_table(const struct bc_toml_field *f)
{
	return f->type == BC_TOML_TABLE;
}

/* The field a key of the file names (by its name or its old name), or NULL. */
static const struct bc_toml_field *field_of(const struct bc_toml_read *r, const char *key,
                                            int *by_old)
{
	for (size_t i = 0; i < r->n_fields; i++) {
		const struct bc_toml_field *f = &r->fields[i];
		if (is_table(f))
			continue;
		if (strcmp(f->key, key) == 0) {
			*by_old = 0;
			return f;
		}
		if (f->old && strcmp(f->old, key) == 0) {
			*by_old = 1;
			return f;
		}
	}
	return NULL;
}

static int table_known(const struct bc_toml_read *r, const char *name)
{
	for (size_t i = 0; i < r->n_fields; i++)
		if (is_table(&r->fields[i]) &&
		    (strcmp(r->fields[i].key, "*") == 0 || strcmp(r->fields[i].key, name) == 0))
			return 1;
	return 0;
}

void bc_toml_known(const struct bc_toml_field *fields, size_t n, char *out, size_t outlen)
{
	size_t off = 0;
	int k;

	if (outlen == 0)
		return;
	out[0] = '\0';
	for (size_t i = 0; i < n && off < outlen; i++) {
		const struct bc_toml_field *f = &fields[i];
		if (is_table(f) && f->expect)
			k = snprintf(out + off, outlen - off, "%s%s", off ? ", " : "", f->expect);
		else if (is_table(f))
			k = snprintf(out + off, outlen - off, "%s[%s]", off ? ", " : "",
			             strcmp(f->key, "*") ? f->key : "<name>");
		else
			k = snprintf(out + off, outlen - off, "%s%s", off ? ", " : "", f->key);
		if (k < 0)
			break;
		off += (size_t)k;
	}
}

/* What a field allows, after "expected ". by_old: the bounds in the old key's unit. */
static void allowed(const struct bc_toml_field *f, int by_old, char *out, size_t outlen)
{
	int64_t s = scale_of(f->scale), os = scale_of(f->old_scale);
	size_t off;

	if (f->expect && !by_old) {
		snprintf(out, outlen, "%s", f->expect);
		return;
	}
	switch (f->type) {
	case BC_TOML_STRING: snprintf(out, outlen, "a string"); break;
	case BC_TOML_BOOL: snprintf(out, outlen, "true or false"); break;
	case BC_TOML_INT:
	case BC_TOML_SECONDS:
		if (by_old)
			snprintf(out, outlen, "an integer from %" PRId64 " to %" PRId64,
			         f->min * s / os, f->max * s / os);
		else if (f->type == BC_TOML_SECONDS)
			snprintf(out, outlen, "%" PRId64 " to %" PRId64 " (seconds)", f->min,
			         f->max);
		else
			snprintf(out, outlen, "an integer from %" PRId64 " to %" PRId64, f->min,
			         f->max);
		break;
	case BC_TOML_CHOICE:
		off = 0;
		out[0] = '\0';
		for (size_t i = 0; f->choices && f->choices[i] && off < outlen; i++) {
			int k = snprintf(out + off, outlen - off, "%s\"%s\"",
			                 i == 0              ? ""
			                 : f->choices[i + 1] ? ", "
			                                     : " or ",
			                 f->choices[i]);
			if (k < 0)
				break;
			off += (size_t)k;
		}
		break;
	case BC_TOML_STRINGS:
		if (f->max > 0)
			snprintf(out, outlen, "%san array of %" PRId64 " to %" PRId64 " strings",
			         f->flags & BC_TOML_ONE_OK ? "a string or " : "", f->min, f->max);
		else
			snprintf(out, outlen, "%san array of strings",
			         f->flags & BC_TOML_ONE_OK ? "a string or " : "");
		break;
	case BC_TOML_TABLE:
	default: snprintf(out, outlen, "a table"); break;
	}
}

/* Sets the problem and err; BC_ERR_CONFIG. */
static int refuse(struct bc_toml_read *r, enum bc_toml_problem p, const struct bc_toml_field *f,
                  const char *key, int by_old, char *err, size_t errlen)
{
	char what[400], known[600];

	r->problem = p;
	r->field = f;
	snprintf(r->key, sizeof(r->key), "%s", key);
	if (err == NULL || errlen == 0)
		return BC_ERR_CONFIG;
	if (f)
		allowed(f, by_old, what, sizeof(what));
	switch (p) {
	case BC_TOML_UNKNOWN_KEY:
	case BC_TOML_UNKNOWN_TABLE:
		bc_toml_known(r->fields, r->n_fields, known, sizeof(known));
		snprintf(err, errlen, "%s%s: unknown %s (known: %s)", r->label, key,
		         p == BC_TOML_UNKNOWN_KEY ? "key" : "table", known[0] ? known : "none");
		break;
	case BC_TOML_MISSING:
		snprintf(err, errlen, "%s%s: required: %s", r->label, key, what);
		break;
	case BC_TOML_EMPTY:
		snprintf(err, errlen, "%s%s: may not be empty: expected %s", r->label, key, what);
		break;
	case BC_TOML_BOTH_NAMES:
		snprintf(err, errlen, "%s%s: set only %s (%s is its former name)", r->label, key,
		         f->key, f->old);
		break;
	case BC_TOML_WRONG_TYPE:
	case BC_TOML_OUT_OF_RANGE:
	case BC_TOML_NOT_A_CHOICE:
	case BC_TOML_OK:
	default: snprintf(err, errlen, "%s%s: expected %s", r->label, key, what); break;
	}
	return BC_ERR_CONFIG;
}

/* Every key and sub-table of the file's table is described, each under one name. */
static int check_names(const bc_toml *t, struct bc_toml_read *r, char *err, size_t errlen)
{
	const char *const *names;
	const struct bc_toml_field *f;
	size_t n;
	int by_old;

	if (bc_toml_keys(t, r->table, &names, &n) == 0)
		for (size_t i = 0; i < n; i++) {
			if ((f = field_of(r, names[i], &by_old)) == NULL)
				return refuse(r, BC_TOML_UNKNOWN_KEY, NULL, names[i], 0, err,
				              errlen);
			for (size_t j = 0; by_old && j < n; j++)
				if (strcmp(names[j], f->key) == 0)
					return refuse(r, BC_TOML_BOTH_NAMES, f, f->old, 1, err,
					              errlen);
		}
	if (bc_toml_tables(t, r->table, &names, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (!table_known(r, names[i]))
				return refuse(r, BC_TOML_UNKNOWN_TABLE, NULL, names[i], 0, err,
				              errlen);
	return 0;
}

static int store_int(void *dst, const struct bc_toml_field *f, int64_t v)
{
	char *p = (char *)dst + f->off;

	if (f->size == sizeof(uint64_t)) {
		uint64_t u = (uint64_t)v;
		memcpy(p, &u, sizeof(u));
	} else if (f->size == sizeof(uint32_t)) {
		uint32_t u = (uint32_t)v;
		memcpy(p, &u, sizeof(u));
	} else {
		return BC_ERR_INTERNAL;
	}
	return 0;
}

/* v (in the unit of the name read) times its scale, within the field's bounds. */
static int read_int(const bc_toml *t, const char *path, struct bc_toml_read *r,
                    const struct bc_toml_field *f, const char *key, int by_old, void *dst,
                    char *err, size_t errlen)
{
	int64_t v, s = scale_of(f->scale), k = by_old ? scale_of(f->old_scale) : s;

	if (bc_toml_get_int(t, path, &v) != 0)
		return refuse(r, BC_TOML_WRONG_TYPE, f, key, by_old, err, errlen);
	/* the bounds hold in the stored unit, so an old name keeps its old range */
	if ((v > 0 && v > INT64_MAX / k) || (v < 0 && v < INT64_MIN / k) || v * k < f->min * s ||
	    v * k > f->max * s)
		return refuse(r, BC_TOML_OUT_OF_RANGE, f, key, by_old, err, errlen);
	return store_int(dst, f, v * k);
}

static int read_string(const bc_toml *t, const char *path, struct bc_toml_read *r,
                       const struct bc_toml_field *f, const char *key, void *dst, char *err,
                       size_t errlen)
{
	const char *s;
	char *copy, **slot = (char **)(void *)((char *)dst + f->off);

	if (f->size != sizeof(char *))
		return BC_ERR_INTERNAL;
	if (bc_toml_get_string(t, path, &s) != 0)
		return refuse(r, BC_TOML_WRONG_TYPE, f, key, 0, err, errlen);
	if ((f->flags & BC_TOML_NONEMPTY) && s[0] == '\0')
		return refuse(r, BC_TOML_EMPTY, f, key, 0, err, errlen);
	if (!(f->flags & BC_TOML_COPY)) {
		memcpy(slot, &s, sizeof(s));
		return 0;
	}
	if ((copy = strdup(s)) == NULL)
		return BC_ERR_NOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

static int read_choice(const bc_toml *t, const char *path, struct bc_toml_read *r,
                       const struct bc_toml_field *f, const char *key, void *dst, char *err,
                       size_t errlen)
{
	const char *s;
	int idx;

	if (f->size != sizeof(int) || f->choices == NULL)
		return BC_ERR_INTERNAL;
	if (bc_toml_get_string(t, path, &s) != 0)
		return refuse(r, BC_TOML_WRONG_TYPE, f, key, 0, err, errlen);
	for (idx = 0; f->choices[idx]; idx++)
		if (strcmp(f->choices[idx], s) == 0) {
			memcpy((char *)dst + f->off, &idx, sizeof(idx));
			return 0;
		}
	return refuse(r, BC_TOML_NOT_A_CHOICE, f, key, 0, err, errlen);
}

static int read_strings(const bc_toml *t, const char *path, struct bc_toml_read *r,
                        const struct bc_toml_field *f, const char *key, void *dst, char *err,
                        size_t errlen)
{
	struct bc_toml_strings *sl = (struct bc_toml_strings *)(void *)((char *)dst + f->off);
	const char *const *v;
	const char *s;
	size_t n;

	if (f->size != sizeof(*sl))
		return BC_ERR_INTERNAL;
	if (bc_toml_get_strings(t, path, &v, &n) == 0) {
		sl->v = v;
		sl->n = n;
	} else if ((f->flags & BC_TOML_ONE_OK) && bc_toml_get_string(t, path, &s) == 0) {
		sl->one[0] = s;
		sl->one[1] = NULL;
		sl->v = sl->one;
		sl->n = 1;
	} else {
		return refuse(r, BC_TOML_WRONG_TYPE, f, key, 0, err, errlen);
	}
	if ((int64_t)sl->n < f->min || (f->max > 0 && (int64_t)sl->n > f->max))
		return refuse(r, BC_TOML_OUT_OF_RANGE, f, key, 0, err, errlen);
	for (size_t i = 0; (f->flags & BC_TOML_NONEMPTY) && i < sl->n; i++)
		if (sl->v[i][0] == '\0')
			return refuse(r, BC_TOML_EMPTY, f, key, 0, err, errlen);
	return 0;
}

static void warn_renamed(const struct bc_toml_read *r, const struct bc_toml_field *f)
{
	char msg[400];

	snprintf(msg, sizeof(msg),
	         "%s%s is deprecated: write %s instead%s; %s is read until the next release",
	         r->label, f->old, f->key,
	         scale_of(f->scale) != scale_of(f->old_scale) ? ", in the new key's unit" : "",
	         f->old);
	if (r->warn)
		r->warn(r->warn_arg, msg);
	else
		bc_log(BC_LOG_WARN, msg, NULL);
}

static int present(const bc_toml *t, const char *path)
{
	const char *s;

	return bc_toml_get_string(t, path, &s) != BC_ERR_NOT_FOUND;
}

/* One field: its value under whichever name the file uses. */
static int read_field(const bc_toml *t, struct bc_toml_read *r, const struct bc_toml_field *f,
                      void *dst, char *err, size_t errlen)
{
	char path[PATH_MAX_LEN];
	const char *key = f->key;
	int by_old = 0, k;

	k = snprintf(path, sizeof(path), "%s%s%s", r->table, r->table[0] ? "." : "", key);
	if (k < 0 || (size_t)k >= sizeof(path))
		return BC_ERR_INTERNAL;
	if (!present(t, path) && f->old) {
		snprintf(path, sizeof(path), "%s%s%s", r->table, r->table[0] ? "." : "", f->old);
		if (present(t, path)) {
			key = f->old;
			by_old = 1;
			warn_renamed(r, f);
		}
	}
	if (!present(t, path))
		return (f->flags & BC_TOML_REQUIRED)
		           ? refuse(r, BC_TOML_MISSING, f, f->key, 0, err, errlen)
		           : 0;
	switch (f->type) {
	case BC_TOML_STRING: return read_string(t, path, r, f, key, dst, err, errlen);
	case BC_TOML_INT:
	case BC_TOML_SECONDS: return read_int(t, path, r, f, key, by_old, dst, err, errlen);
	case BC_TOML_BOOL:
		if (f->size != sizeof(int))
			return BC_ERR_INTERNAL;
		if (bc_toml_get_bool(t, path, (int *)(void *)((char *)dst + f->off)) != 0)
			return refuse(r, BC_TOML_WRONG_TYPE, f, key, 0, err, errlen);
		return 0;
	case BC_TOML_CHOICE: return read_choice(t, path, r, f, key, dst, err, errlen);
	case BC_TOML_STRINGS: return read_strings(t, path, r, f, key, dst, err, errlen);
	case BC_TOML_TABLE:
	default: return 0;
	}
}

int bc_toml_read_table(const bc_toml *t, struct bc_toml_read *r, void *dst, char *err,
                       size_t errlen)
{
	int rc;

	r->problem = BC_TOML_OK;
	r->field = NULL;
	r->key[0] = '\0';
	if (err && errlen)
		err[0] = '\0';
	if (r->table == NULL || r->label == NULL || (r->fields == NULL && r->n_fields > 0))
		return BC_ERR_INVALID;
	if (t != NULL && (rc = check_names(t, r, err, errlen)) != 0)
		return rc;
	for (size_t i = 0; i < r->n_fields; i++) {
		if (is_table(&r->fields[i]))
			continue;
		if (t == NULL) {
			if (r->fields[i].flags & BC_TOML_REQUIRED)
				return refuse(r, BC_TOML_MISSING, &r->fields[i], r->fields[i].key,
				              0, err, errlen);
			continue;
		}
		if ((rc = read_field(t, r, &r->fields[i], dst, err, errlen)) != 0)
			return rc;
	}
	return 0;
}
