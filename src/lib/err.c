#include <stdarg.h>
#include <stdio.h>

#include "bc/err.h"

const char *bc_err_str(int err)
{
	switch (err) {
	case BC_OK: return "success";
	case BC_ERR_NOMEM: return "out of memory";
	case BC_ERR_INVALID: return "invalid input";
	case BC_ERR_TRUNCATED: return "input truncated";
	case BC_ERR_TRAILING: return "trailing bytes after the value";
	case BC_ERR_LIMIT: return "input too large";
	case BC_ERR_CRYPTO: return "cryptographic operation failed";
	case BC_ERR_VERIFY: return "verification failed";
	case BC_ERR_IO: return "input/output error";
	case BC_ERR_NOT_FOUND: return "not found";
	case BC_ERR_CONFLICT: return "conflict";
	case BC_ERR_BUSY: return "database busy";
	case BC_ERR_RETRY: return "transaction must be retried";
	case BC_ERR_DB: return "database error";
	case BC_ERR_DENIED: return "access denied";
	case BC_ERR_UNAVAILABLE: return "unavailable";
	case BC_ERR_CONFIG: return "configuration error";
	case BC_ERR_INTERNAL: return "internal error";
	case BC_ERR_EXPIRED: return "expired";
	case BC_ERR_UNSUPPORTED: return "unsupported";
	default: return "unknown error";
	}
}

void bc_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
