/* Structured logs: one line per event on stderr, with a level and key=value pairs
 * (logfmt) or one JSON object per line.
 *
 *   bc_log(BC_LOG_WARN, "join refused", "attestor", "join-token", "reason", r, NULL);
 *   -> ts=2026-11-29T10:00:00.123Z level=warn msg="join refused" attestor=join-token reason=...
 *
 * Arguments after msg are key, value pairs of strings ending in NULL; a NULL
 * value prints as an empty string. Values are quoted and escaped as needed, so a
 * value from the network cannot forge a line. Thread-safe. */
#ifndef BC_LOG_H
#define BC_LOG_H

#include <stddef.h> /* NULL, the sentinel every call ends with */

enum bc_log_level { BC_LOG_DEBUG = 0, BC_LOG_INFO = 1, BC_LOG_WARN = 2, BC_LOG_ERROR = 3 };
enum bc_log_format { BC_LOG_LOGFMT = 0, BC_LOG_JSON = 1 };

void bc_log_set_level(enum bc_log_level lvl);
void bc_log_set_format(enum bc_log_format f);
/* "debug", "info", "warn", "error" / "logfmt", "json"; BC_ERR_INVALID otherwise. */
int bc_log_parse_level(const char *s, enum bc_log_level *out);
int bc_log_parse_format(const char *s, enum bc_log_format *out);
void bc_log(enum bc_log_level lvl, const char *msg, ...) __attribute__((sentinel));
/* The client address of the request this thread serves now: while set (not NULL),
 * every line this thread logs ends with client=<addr>, so that a refusal's
 * line names who sent it. The HTTP layer sets it around each handler call; the
 * string must outlive the setting. */
void bc_log_set_client(const char *addr);

#endif
