/* The TOML reader on arbitrary bytes: it must accept or refuse with a message,
 * and an accepted document must be walkable through every getter. */
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
	bc_toml_free(t);
	return 0;
}
