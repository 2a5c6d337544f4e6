#include "bc/clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bc/err.h"

#ifdef BC_TESTING
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "bc/log.h"
#endif

#define MS_PER_DAY (86400LL * 1000)

#ifdef BC_TESTING
/* "[-+]digits" into an int64, nothing else: no blanks, no suffix, no overflow. */
static int parse_i64(const char *s, int64_t *out)
{
	uint64_t mag = 0, lim = INT64_MAX;
	int neg = 0;

	*out = 0;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	lim += (uint64_t)neg;
	if (*s == '\0')
		return BC_ERR_INVALID;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return BC_ERR_INVALID;
		if (mag > (lim - (uint64_t)(*s - '0')) / 10)
			return BC_ERR_INVALID;
		mag = mag * 10 + (uint64_t)(*s - '0');
	}
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

static pthread_once_t offset_once = PTHREAD_ONCE_INIT;
static _Atomic int64_t offset_ms;
static atomic_int offset_warn;

/* Runs once. It must not log: bc_log reads the clock, which would wait on this
 * same pthread_once. The warning is left for the caller to print. */
static void offset_init(void)
{
	const char *v = getenv("BC_TEST_CLOCK_OFFSET_MS");

	if (v == NULL || *v == '\0')
		return;
	int64_t off;

	if (parse_i64(v, &off) != 0) {
		off = 0;
		atomic_store(&offset_warn, 1);
	}
	atomic_store(&offset_ms, off);
}

void bc_clock_set_offset_ms(int64_t ms)
{
	(void)pthread_once(&offset_once, offset_init);
	atomic_store(&offset_ms, ms);
}

int64_t bc_clock_offset_ms(void)
{
	(void)pthread_once(&offset_once, offset_init);
	if (atomic_exchange(&offset_warn, 0))
		bc_log(BC_LOG_WARN,
		       "ignoring BC_TEST_CLOCK_OFFSET_MS: not an integer of milliseconds", "value",
		       getenv("BC_TEST_CLOCK_OFFSET_MS"), NULL);
	return atomic_load(&offset_ms);
}
#else
int64_t bc_clock_offset_ms(void)
{
	return 0;
}
#endif

int64_t bc_now_ms(void)
{
	struct timespec ts;
	int64_t now, off = bc_clock_offset_ms(), r;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0;
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	/* an absurd offset saturates rather than wraps */
	if (__builtin_add_overflow(now, off, &r))
		r = off < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

void bc_time_format_ms(int64_t ms, char *buf, unsigned long buflen)
{
	int64_t days = ms / MS_PER_DAY, rem = ms % MS_PER_DAY;
	struct tm tm;
	time_t secs;
	int n;

	if (buf == NULL || buflen == 0)
		return;
	buf[0] = '\0';
	/* floor division, so times before 1970 format too */
	if (rem < 0) {
		rem += MS_PER_DAY;
		days--;
	}
	secs = (time_t)(days * 86400 + rem / 1000);
	if (gmtime_r(&secs, &tm) == NULL || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900)
		return;
	n = snprintf(buf, buflen, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
	             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	             (int)(rem % 1000));
	/* a cut-off time reads as a valid one: better none */
	if (n < 0 || (unsigned long)n >= buflen)
		buf[0] = '\0';
}

/* "250ms", "3s", "5m", "24h", "7d", or bare seconds "30". */
int bc_duration_parse_ms(const char *s, int64_t *out)
{
	static const struct {
		const char *suffix;
		int64_t ms;
	} units[] = {{"ms", 1},      {"s", 1000},       {"m", 60000},
	             {"h", 3600000}, {"d", MS_PER_DAY}, {"", 1000}};
	const char *p = s;
	int64_t n = 0, r;

	*out = 0;
	if (s == NULL || *s < '0' || *s > '9')
		return BC_ERR_INVALID;
	for (; *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, *p - '0', &n))
			return BC_ERR_INVALID;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].suffix) != 0)
			continue;
		if (__builtin_mul_overflow(n, units[i].ms, &r))
			return BC_ERR_INVALID;
		*out = r;
		return 0;
	}
	return BC_ERR_INVALID;
}
