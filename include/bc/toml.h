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

/* ---- reading a table through field descriptors (src/lib/toml_table.c) ----
 *
 * A config reader describes each key of one table once, in an array of
 * bc_toml_field, and bc_toml_read_table() reads the table through it: every key of
 * the table must be described (an unknown key or sub-table is refused, the message
 * listing the known ones from the descriptors), each has its type and bounds, and
 * each value is stored at its offset in the caller's struct. A key not in the file
 * leaves its member as the caller set it (the default). Nested tables are described
 * as BC_TOML_TABLE entries so that they are known, and read by the caller.
 *
 * Durations are whole seconds, and their keys end in _seconds: the stored value is
 * the seconds times scale (1000 for a member that counts milliseconds).
 *
 * A renamed key names its former name in old: the old name is still read (its value
 * times old_scale is stored) and a warning naming the new key is logged; both names
 * in one table is an error. */

enum bc_toml_type {
	BC_TOML_STRING,  /* const char * into the bc_toml; with BC_TOML_COPY a char * the
	                  * caller frees (a value read replaces the member, freeing it) */
	BC_TOML_INT,     /* an integer in [min, max], stored times scale; size 4 or 8 */
	BC_TOML_SECONDS, /* like INT, for a duration in seconds: the key ends in _seconds */
	BC_TOML_BOOL,    /* int: 0 or 1 */
	BC_TOML_CHOICE,  /* one of choices (NULL-terminated); its index, size 4 (int, enum) */
	BC_TOML_STRINGS, /* struct bc_toml_strings of min to max strings (max 0: no bound) */
	BC_TOML_TABLE,   /* a sub-table the caller reads; key "*" allows any name */
};

/* flags */
#define BC_TOML_REQUIRED 0x1u /* absent is an error */
#define BC_TOML_NONEMPTY 0x2u /* STRING: "" is an error; STRINGS: each element too */
#define BC_TOML_COPY     0x4u /* STRING: store a malloc'd copy */
#define BC_TOML_ONE_OK   0x8u /* STRINGS: a single string is read as an array of one */

struct bc_toml_strings {
	const char *const *v; /* into the bc_toml (or one[]), NULL-terminated */
	size_t n;
	const char *one[2];
};

struct bc_toml_field {
	const char *key;
	enum bc_toml_type type;
	unsigned flags;
	int64_t min, max;
	const char *const *choices;
	size_t off, size;   /* the member: offsetof and sizeof */
	int64_t scale;      /* INT, SECONDS: stored = value * scale; 0 means 1 */
	const char *old;    /* a former name of the key, still read with a warning */
	int64_t old_scale;  /* stored = old value * old_scale; 0 means 1 */
	const char *expect; /* what is allowed, for messages ("a file name"); NULL: from
	                     * the type and bounds. TABLE: how it is listed ("[oidc.<id>]") */
};

/* A member of struct S, for the initializers of a field table. */
#define BC_TOML_AT(S, member) .off = offsetof(S, member), .size = sizeof(((S *)0)->member)

enum bc_toml_problem {
	BC_TOML_OK = 0,
	BC_TOML_UNKNOWN_KEY,
	BC_TOML_UNKNOWN_TABLE,
	BC_TOML_WRONG_TYPE,
	BC_TOML_OUT_OF_RANGE, /* a number, or the number of strings */
	BC_TOML_NOT_A_CHOICE,
	BC_TOML_MISSING,
	BC_TOML_EMPTY,
	BC_TOML_BOTH_NAMES, /* a renamed key set under both its names */
};

/* One call of the reader: what to read, and (after a failure) what was wrong. */
struct bc_toml_read {
	const char *table; /* its dotted path in the file; "" for the top level */
	const char *label; /* the start of every message: "[attestors.tpm] ", "x.toml: " */
	const struct bc_toml_field *fields;
	size_t n_fields;
	/* NULL: bc_log at warn level. msg names the file's old key and the new one. */
	void (*warn)(void *arg, const char *msg);
	void *warn_arg;
	/* out, on failure */
	enum bc_toml_problem problem;
	const struct bc_toml_field *field; /* NULL for an unknown key or table */
	char key[128];                     /* the key or table at fault, as written */
};

/* Reads r->table of t into dst (members at the fields' offsets). A table absent from
 * t reads as empty (its required keys are then missing). 0, BC_ERR_CONFIG with
 * r->problem set and err "<label><key>: <what was wrong, what is allowed>", or
 * BC_ERR_NOMEM. On failure members already stored stay stored (BC_TOML_COPY ones
 * are the caller's to free). */
BC_WUR int bc_toml_read_table(const bc_toml *t, struct bc_toml_read *r, void *dst, char *err,
                              size_t errlen);
/* "a, b, [t]": the keys and tables of a field table (old names left out), for a
 * caller that words its own messages. Truncated to fit. */
void bc_toml_known(const struct bc_toml_field *fields, size_t n, char *out, size_t outlen);

#endif
