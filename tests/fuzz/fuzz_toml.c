/* The TOML reader on arbitrary bytes: it must accept or refuse with a message,
 * and an accepted document must be walkable through every getter and readable
 * through the table reader (bc_toml_read_table), at the top level and in [t], with
 * a field of each type: it must store or refuse with a problem and a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/toml.h"

static void walk(const bc_toml *t, const char *table)
{
	const char *const *names, *s;
	const char *const *arr;
	size_t n, na;
	int64_t i;
	char path[4096];
	int b, hits;

	/* deep headers are legal; paths past sizeof(path) are skipped below, which
	 * bounds the recursion */
	if (bc_toml_keys(t, table, &names, &n) != 0 || names[n] != NULL)
		abort();
	for (size_t k = 0; k < n; k++) {
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", table, *table ? "." : "",
		                     names[k]) >= sizeof(path))
			continue;
		/* exactly one getter matches a key's type */
		hits = (bc_toml_get_string(t, path, &s) == 0) +
		       (bc_toml_get_int(t, path, &i) == 0) + (bc_toml_get_bool(t, path, &b) == 0) +
		       (bc_toml_get_strings(t, path, &arr, &na) == 0);
		if (hits != 1 || bc_toml_has_table(t, path))
			abort();
		if (bc_toml_get_string(t, path, &s) == 0 && strlen(s) > 1024 * 1024)
			abort();
		if (bc_toml_get_strings(t, path, &arr, &na) == 0 && arr[na] != NULL)
			abort();
	}
	if (bc_toml_tables(t, table, &names, &n) != 0 || names[n] != NULL)
		abort();
	for (size_t k = 0; k < n; k++) {
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", table, *table ? "." : "",
		                     names[k]) >= sizeof(path))
			continue;
		if (!bc_toml_has_table(t, path))
			abort();
		walk(t, path);
	}
}

struct dst {
	const char *s, *req;
	char *copy;
	int64_t i;
	uint32_t u;
	int64_t ms;
	int b, choice;
	struct bc_toml_strings list, one;
};

static const char *const choices[] = {"a", "b", NULL};

static const struct bc_toml_field fields[] = {
    {.key = "s", .type = BC_TOML_STRING, .flags = BC_TOML_NONEMPTY, BC_TOML_AT(struct dst, s)},
    {.key = "copy", .type = BC_TOML_STRING, .flags = BC_TOML_COPY, BC_TOML_AT(struct dst, copy)},
    {.key = "i",
     .type = BC_TOML_INT,
     .min = INT64_MIN / 2,
     .max = INT64_MAX / 2,
     BC_TOML_AT(struct dst, i)},
    {.key = "u", .type = BC_TOML_INT, .min = 0, .max = UINT32_MAX, BC_TOML_AT(struct dst, u)},
    {.key = "ms_seconds",
     .type = BC_TOML_SECONDS,
     .min = 0,
     .max = 86400,
     .scale = 1000,
     .old = "ms",
     .old_scale = 1,
     BC_TOML_AT(struct dst, ms)},
    {.key = "b", .type = BC_TOML_BOOL, BC_TOML_AT(struct dst, b)},
    {.key = "c", .type = BC_TOML_CHOICE, .choices = choices, BC_TOML_AT(struct dst, choice)},
    {.key = "list", .type = BC_TOML_STRINGS, .min = 1, .max = 4, BC_TOML_AT(struct dst, list)},
    {.key = "one",
     .type = BC_TOML_STRINGS,
     .flags = BC_TOML_ONE_OK | BC_TOML_NONEMPTY,
     BC_TOML_AT(struct dst, one)},
    {.key = "t", .type = BC_TOML_TABLE},
    {.key = "req", .type = BC_TOML_STRING, .flags = BC_TOML_REQUIRED, BC_TOML_AT(struct dst, req)},
};

static void quiet(void *arg, const char *msg)
{
	(void)arg;
	if (msg == NULL || strstr(msg, "deprecated") == NULL)
		abort();
}

static void read_tables(const bc_toml *t, const char *table)
{
	struct bc_toml_read r = {.table = table,
	                         .label = "[x] ",
	                         .fields = fields,
	                         .n_fields = sizeof(fields) / sizeof(fields[0]),
	                         .warn = quiet};
	struct dst d = {0};
	char err[512];
	int rc = bc_toml_read_table(t, &r, &d, err, sizeof(err));

	/* a refusal says why, in words that start with the label */
	if (rc == BC_ERR_CONFIG && (r.problem == BC_TOML_OK || strncmp(err, "[x] ", 4) != 0))
		abort();
	if (rc == 0 && r.problem != BC_TOML_OK)
		abort();
	if (rc != 0 && rc != BC_ERR_CONFIG && rc != BC_ERR_NOMEM)
		abort();
	if (rc == 0 &&
	    (d.ms < 0 || d.ms > 86400000 || (d.list.v && (d.list.n < 1 || d.list.n > 4))))
		abort();
	if (rc == 0 && d.s && d.s[0] == '\0')
		abort(); /* NONEMPTY */
	free(d.copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	bc_toml *t = NULL;
	int rc;

	rc = bc_toml_parse((const char *)data, size, &t, err, sizeof(err));
	if (rc != 0) {
		/* every refusal says where, unless it is about the whole input */
		if (t != NULL || err[0] == '\0')
			abort();
		if (strncmp(err, "line ", 5) != 0 && strncmp(err, "larger than", 11) != 0 &&
		    strcmp(err, "out of memory") != 0)
			abort();
		return 0;
	}
	walk(t, "");
	read_tables(t, "");
	read_tables(t, "t");
	bc_toml_free(t);
	return 0;
}
