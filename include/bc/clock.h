/* The one clock both binaries read "now" through.
 *
 * bc_now_ms(): Unix milliseconds. In a BC_TESTING build, plus the offset in
 * BC_TEST_CLOCK_OFFSET_MS (read once, may be negative), so a test moves time
 * instead of sleeping. A release build ignores the variable. */
#ifndef BC_CLOCK_H
#define BC_CLOCK_H

#include <stdint.h>

int64_t bc_now_ms(void);
/* The test offset in effect (0 in a release build). */
int64_t bc_clock_offset_ms(void);
#ifdef BC_TESTING
/* Tests in one process move time for every thread (the in-process control plane
 * too): the offset from now on, replacing BC_TEST_CLOCK_OFFSET_MS. */
void bc_clock_set_offset_ms(int64_t ms);
#endif
/* "2026-11-29T10:00:00.123Z" into buf (>= 25 bytes). */
void bc_time_format_ms(int64_t ms, char *buf, unsigned long buflen);
/* Parses "30s", "5m", "24h", "7d" or a plain number of seconds into ms. */
int bc_duration_parse_ms(const char *s, int64_t *out);

#endif
