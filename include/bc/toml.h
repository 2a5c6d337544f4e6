/* A reader for the TOML subset our config files use: [tables] and [dotted.tables],
 * bare or quoted keys, basic "strings" (with \" \\ \n \t \uXXXX escapes) and
 * 'literal strings', integers (decimal, optional sign and _ separators), booleans,
 * and single-line or multi-line arrays of strings; # comments. Anything else
 * (floats, dates, inline tables, arrays of tables, duplicate keys or tables) is an
 * error naming the line.
 *
 * Lookups take a dotted path: "key" at top level, "table.key" or "a.b.key".
 * Getters return BC_ERR_NOT_FOUND when absent and BC_ERR_INVALID when the value
 * has another type. Returned pointers live as long as the bc_toml. */
#ifndef BC_TOML_H
#define BC_TOML_H

#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

typedef struct bc_toml bc_toml;

/* err (may be NULL) receives "line N: what is wrong" on failure. Input is bounded
 * to 1 MiB and must be UTF-8 without NUL bytes. */
BC_WUR int bc_toml_parse(const char *text, size_t len, bc_toml **out, char *err, size_t errlen);
/* Reads and parses a file; err names the file. */
BC_WUR int bc_toml_load(const char *path, bc_toml **out, char *err, size_t errlen);
void bc_toml_free(bc_toml *t);

int bc_toml_get_string(const bc_toml *t, const char *path, const char **out);
int bc_toml_get_int(const bc_toml *t, const char *path, int64_t *out);
int bc_toml_get_bool(const bc_toml *t, const char *path, int *out);
int bc_toml_get_strings(const bc_toml *t, const char *path, const char *const **out, size_t *n);
/* 1 when a table of that dotted name exists. */
int bc_toml_has_table(const bc_toml *t, const char *path);
/* The keys (not sub-tables) directly in a table ("" for the top level), in file
 * order, so a config reader can refuse unknown keys. */
int bc_toml_keys(const bc_toml *t, const char *table, const char *const **keys, size_t *n);
/* The names of the direct sub-tables of a table ("" for the top level), in file order. */
int bc_toml_tables(const bc_toml *t, const char *table, const char *const **names, size_t *n);

#endif
