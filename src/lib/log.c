/* One line per event on stderr, written with a single write() so lines from
 * threads and processes sharing the descriptor do not interleave.
 *
 * Values may come from the network, so nothing in them can end a line or start
 * a field: logfmt values are quoted when they hold anything but printable ASCII
 * other than '=', '"' and '\', and inside quotes control characters, '"', '\',
 * invalid UTF-8 (as \xNN) and the Unicode line breaks U+0085, U+2028, U+2029
 * are escaped. JSON gets the same, with U+FFFD for invalid UTF-8. A value is
 * cut at LOG_VALUE_MAX bytes and marked; keys are restricted to [A-Za-z0-9_.-]. */
#include "bc/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/files.h"
#include "lib/utf8.h"

#define LOG_VALUE_MAX 8192u
#define LOG_LINE_MAX  (256u * 1024u)
#define LOG_CUT_MARK  "...(truncated)"

static atomic_int log_level = BC_LOG_INFO;
static atomic_int log_format = BC_LOG_LOGFMT;
static _Thread_local const char *log_client;

void bc_log_set_client(const char *addr)
{
	log_client = addr;
}

void bc_log_set_level(enum bc_log_level lvl)
{
	if (lvl >= BC_LOG_DEBUG && lvl <= BC_LOG_ERROR)
		atomic_store(&log_level, (int)lvl);
}

void bc_log_set_format(enum bc_log_format f)
{
	if (f == BC_LOG_LOGFMT || f == BC_LOG_JSON)
		atomic_store(&log_format, (int)f);
}

static const char *level_name(enum bc_log_level lvl)
{
	switch (lvl) {
	case BC_LOG_DEBUG: return "debug";
	case BC_LOG_INFO: return "info";
	case BC_LOG_WARN: return "warn";
	case BC_LOG_ERROR: return "error";
	default: return "error";
	}
}

int bc_log_parse_level(const char *s, enum bc_log_level *out)
{
	*out = BC_LOG_DEBUG;
	for (int l = BC_LOG_DEBUG; l <= BC_LOG_ERROR; l++) {
		if (s != NULL && strcmp(s, level_name((enum bc_log_level)l)) == 0) {
			*out = (enum bc_log_level)l;
			return 0;
		}
	}
	return BC_ERR_INVALID;
}

int bc_log_parse_format(const char *s, enum bc_log_format *out)
{
	*out = BC_LOG_LOGFMT;
	if (s != NULL && strcmp(s, "logfmt") == 0)
		return 0;
	if (s != NULL && strcmp(s, "json") == 0) {
		*out = BC_LOG_JSON;
		return 0;
	}
	return BC_ERR_INVALID;
}

/* A logfmt value goes bare only when it is printable ASCII without '=', '"'
 * or '\' (and not empty, so that key= never looks like a missing value). */
static int is_bare(const char *v, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c <= 0x20 || c >= 0x7f || c == '=' || c == '"' || c == '\\')
			return 0;
	}
	return 1;
}

static int is_line_break(const uint8_t *p, size_t n)
{
	return (n == 2 && p[0] == 0xc2 && p[1] == 0x85) ||
	       (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9));
}

/* Escapes one byte or UTF-8 sequence at p; returns the bytes consumed, 0 on
 * a full buffer. */
static size_t escape_one(bc_buf *b, const uint8_t *p, size_t left, int json)
{
	char tmp[8];
	size_t n = 1;
	int rc;

	switch (p[0]) {
	case '"': rc = bc_buf_put(b, "\\\"", 2); break;
	case '\\': rc = bc_buf_put(b, "\\\\", 2); break;
	case '\n': rc = bc_buf_put(b, "\\n", 2); break;
	case '\r': rc = bc_buf_put(b, "\\r", 2); break;
	case '\t': rc = bc_buf_put(b, "\\t", 2); break;
	default:
		if (p[0] < 0x20 || p[0] == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\u%04x", p[0]);
			rc = bc_buf_put(b, tmp, 6);
		} else if ((n = bc_utf8_seq_len(p, left)) == 0) {
			n = 1;
			if (json)
				rc = bc_buf_put(b, "\\ufffd", 6);
			else {
				snprintf(tmp, sizeof(tmp), "\\x%02x", p[0]);
				rc = bc_buf_put(b, tmp, 4);
			}
		} else if (is_line_break(p, n)) {
			snprintf(tmp, sizeof(tmp), "\\u%04x",
			         n == 2 ? 0x85u : 0x2000u | (p[2] & 0x3fu));
			rc = bc_buf_put(b, tmp, 6);
		} else {
			rc = bc_buf_put(b, p, n);
		}
		break;
	}
	return rc == 0 ? n : 0;
}

static int put_value(bc_buf *b, const char *v, int json)
{
	size_t n = v ? strlen(v) : 0, cut = n > LOG_VALUE_MAX, k;
	const uint8_t *p = (const uint8_t *)(v ? v : "");
	int rc;

	if (cut)
		n = LOG_VALUE_MAX;
	if (!json && !cut && is_bare(v ? v : "", n))
		return bc_buf_put(b, p, n);
	if ((rc = bc_buf_put_u8(b, '"')) != 0)
		return rc;
	for (size_t i = 0; i < n; i += k)
		if ((k = escape_one(b, p + i, n - i, json)) == 0)
			return BC_ERR_LIMIT;
	if (cut && (rc = bc_buf_put(b, LOG_CUT_MARK, strlen(LOG_CUT_MARK))) != 0)
		return rc;
	return bc_buf_put_u8(b, '"');
}

/* Keys come from our code, but are held to a safe alphabet all the same. */
static int put_key(bc_buf *b, const char *k, int json)
{
	size_t n = strlen(k);
	int rc = 0;

	if (json && (rc = bc_buf_put_u8(b, '"')) != 0)
		return rc;
	if (n == 0)
		rc = bc_buf_put_u8(b, '_');
	for (size_t i = 0; i < n && rc == 0; i++) {
		char c = k[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
		rc = bc_buf_put_u8(b, ok ? (uint8_t)c : '_');
	}
	if (rc == 0 && json)
		rc = bc_buf_put_u8(b, '"');
	if (rc == 0)
		rc = bc_buf_put_u8(b, json ? ':' : '=');
	return rc;
}

static int put_field(bc_buf *b, const char *k, const char *v, int json, int first)
{
	int rc = 0;

	if (!first)
		rc = bc_buf_put_u8(b, json ? ',' : ' ');
	if (rc == 0)
		rc = put_key(b, k, json);
	if (rc == 0)
		rc = put_value(b, v, json);
	return rc;
}

/* ts, level and msg: first and in this order, whatever follows. */
static int put_head(bc_buf *b, enum bc_log_level lvl, const char *msg, int json)
{
	char ts[32];
	int rc;

	bc_time_format_ms(bc_now_ms(), ts, sizeof(ts));
	if (json && (rc = bc_buf_put_u8(b, '{')) != 0)
		return rc;
	if ((rc = put_field(b, "ts", ts, json, 1)) != 0 ||
	    (rc = put_field(b, "level", level_name(lvl), json, 0)) != 0 ||
	    (rc = put_field(b, "msg", msg, json, 0)) != 0)
		return rc;
	return 0;
}

static int put_tail(bc_buf *b, int json)
{
	int rc = 0;

	if (json)
		rc = bc_buf_put_u8(b, '}');
	if (rc == 0)
		rc = bc_buf_put_u8(b, '\n');
	return rc;
}

void bc_log(enum bc_log_level lvl, const char *msg, ...)
{
	int json = atomic_load(&log_format) == BC_LOG_JSON, saved = errno, rc;
	const char *k, *v;
	va_list ap;
	bc_buf b;

	if ((int)lvl < atomic_load(&log_level))
		return;
	bc_buf_init(&b, LOG_LINE_MAX);
	rc = put_head(&b, lvl, msg, json);
	va_start(ap, msg);
	while (rc == 0 && (k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		rc = put_field(&b, k, v, json, 0);
	}
	va_end(ap);
	/* last, so that what a line says first stays as its caller wrote it */
	if (rc == 0 && log_client != NULL)
		rc = put_field(&b, "client", log_client, json, 0);
	if (rc == 0)
		rc = put_tail(&b, json);
	if (rc != 0) {
		/* too long or no memory: say so rather than lose the event entirely */
		bc_buf_free(&b);
		bc_buf_init(&b, LOG_LINE_MAX);
		rc = put_head(&b, lvl, msg, json);
		if (rc == 0)
			rc = put_field(&b, "log_error", "line dropped: too long", json, 0);
		if (rc == 0)
			rc = put_tail(&b, json);
	}
	/* a log line that stderr does not take has nowhere else to go */
	if (rc == 0)
		rc = bc_write_all(STDERR_FILENO, b.p, b.len);
	bc_buf_free(&b);
	errno = saved;
}
