/* The formatting behind bc_new_id() (store.h), apart from its clock and random
 * source so that tests can check it. */
#ifndef BC_STORE_ID_H
#define BC_STORE_ID_H

#include <stddef.h>
#include <stdint.h>

/* prefix "_" then the ULID of ms (0 <= ms < 2^48) and rnd: 26 lower-case Crockford
 * base32 characters, most significant first, so that ids sort as their times do.
 * prefix: one or more of [a-z0-9]. out is always NUL-terminated when outlen > 0.
 * BC_ERR_INVALID for a bad prefix or ms; BC_ERR_LIMIT when outlen is less than
 * strlen(prefix) + 28. */
int bc_id_format(const char *prefix, int64_t ms, const uint8_t rnd[static 10], char *out,
                 size_t outlen);

#endif
