/* Status codes shared by every module.
 *
 * Contract: functions return int, 0 on success and a negative BC_ERR_* on failure.
 * Out-pointers are set to NULL/0 first, so a caller may free them on any path.
 * bc_err_str() returns a static string and never fails. */
#ifndef BC_ERR_H
#define BC_ERR_H

#include <stddef.h>

#define BC_WUR __attribute__((warn_unused_result))

enum {
	BC_OK = 0,
	BC_ERR_NOMEM = -1,        /* allocation failed */
	BC_ERR_INVALID = -2,      /* malformed or out-of-range input */
	BC_ERR_TRUNCATED = -3,    /* input ended before a complete value */
	BC_ERR_TRAILING = -4,     /* bytes left after a complete value */
	BC_ERR_LIMIT = -5,        /* input larger than the bound allowed */
	BC_ERR_CRYPTO = -6,       /* a crypto library call failed */
	BC_ERR_VERIFY = -7,       /* a signature, MAC or tag did not verify */
	BC_ERR_IO = -8,           /* a read, write or network call failed */
	BC_ERR_NOT_FOUND = -9,    /* no such row, key or file */
	BC_ERR_CONFLICT = -10,    /* a unique constraint or state conflict */
	BC_ERR_BUSY = -11,        /* the database is locked; retry */
	BC_ERR_RETRY = -12,       /* serialization failure or deadlock; replay the transaction */
	BC_ERR_DB = -13,          /* any other database error */
	BC_ERR_DENIED = -14,      /* refused (a join, a renewal, an API call) */
	BC_ERR_UNAVAILABLE = -15, /* a dependency (database, server, TPM) is unreachable */
	BC_ERR_CONFIG = -16,      /* a configuration file or option is wrong */
	BC_ERR_INTERNAL = -17,    /* a bug: an invariant did not hold */
	BC_ERR_EXPIRED = -18,     /* outside a validity window */
	BC_ERR_UNSUPPORTED = -19  /* a feature or algorithm this build does not have */
};

const char *bc_err_str(int err);

/* snprintf into err when err is not NULL and errlen > 0; err is then always
 * NUL-terminated. The one formatter of the err/errlen buffers modules hand back. */
__attribute__((format(printf, 3, 4))) void bc_errf(char *err, size_t errlen, const char *fmt, ...);

#endif
