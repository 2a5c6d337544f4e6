/* JSON through jansson, with bounds for untrusted input.
 *
 * bc_json_parse() refuses input over max bytes (0: 1 MiB), nesting deeper than 32,
 * NUL bytes and duplicate object keys; err receives jansson's message with the
 * position. Getters return BC_ERR_NOT_FOUND when a key is absent and
 * BC_ERR_INVALID when it has another type. */
#ifndef BC_JSON_H
#define BC_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

BC_WUR int bc_json_parse(const void *p, size_t len, size_t max, json_t **out, char *err,
                         size_t errlen);
int bc_json_get_string(const json_t *obj, const char *key, const char **out);
int bc_json_get_int(const json_t *obj, const char *key, int64_t *out);
int bc_json_get_bool(const json_t *obj, const char *key, int *out);
/* Compact serialization with sorted keys; malloc'd, caller frees. */
char *bc_json_dump(const json_t *v);

#endif
