#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bc/clock.h"
#include "bc/err.h"

#define DAY_MS 86400000LL

static int64_t real_now_ms(void)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts), 0);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* main() set the offset to one day before the first clock call. */
static void test_offset_applied(void **state)
{
	int64_t before, now, after;

	(void)state;
#ifdef BC_TESTING
	assert_true(bc_clock_offset_ms() == DAY_MS);
	before = real_now_ms();
	now = bc_now_ms();
	after = real_now_ms();
	assert_true(now >= before + DAY_MS);
	assert_true(now <= after + DAY_MS);
	/* read once: a later change of the variable has no effect */
	assert_int_equal(setenv("BC_TEST_CLOCK_OFFSET_MS", "5", 1), 0);
	assert_true(bc_clock_offset_ms() == DAY_MS);
#else
	assert_true(bc_clock_offset_ms() == 0);
	(void)before;
	(void)now;
	(void)after;
#endif
}

/* The child's side: what this process sees, on stdout. */
static int child_main(void)
{
	int64_t off = bc_clock_offset_ms();
	int64_t now = bc_now_ms();

	(void)bc_now_ms();
	printf("%lld %d\n", (long long)off, now == INT64_MAX);
	return 0;
}

/* The offset a fresh process reads from value (NULL: unset), and whether it
 * printed a warning. The variable is read once per process, and a fork would
 * inherit that, so the child is this program run again. */
static int64_t offset_in_child(const char *value, int *warned, int *now_max)
{
	char path[] = "/tmp/bc_clock_test.XXXXXX", buf[512] = "", out[64] = "";
	int fds[2], fd, status;
	long long off = 12345;
	ssize_t n;
	pid_t pid;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (value)
			setenv("BC_TEST_CLOCK_OFFSET_MS", value, 1);
		else
			unsetenv("BC_TEST_CLOCK_OFFSET_MS");
		dup2(fd, STDERR_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		execl("/proc/self/exe", "lib_clock_test", "offset-child", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	n = read(fds[0], out, sizeof(out) - 1);
	assert_true(n > 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(sscanf(out, "%lld %d", &off, now_max), 2);
	assert_true(pread(fd, buf, sizeof(buf) - 1, 0) >= 0);
	close(fd);
	*warned = strstr(buf, "level=warn msg=\"ignoring BC_TEST_CLOCK_OFFSET_MS") != NULL;
	/* once per process, not once per call */
	if (*warned)
		assert_null(strstr(strchr(buf, '\n') + 1, "ignoring"));
	return off;
}

static void test_offset_parse(void **state)
{
#ifdef BC_TESTING
	static const struct {
		const char *value;
		int64_t want;
		int warn;
	} cases[] = {
	    {NULL, 0, 0},
	    {"", 0, 0},
	    {"0", 0, 0},
	    {"-3600000", -3600000, 0},
	    {"+42", 42, 0},
	    {"9223372036854775807", INT64_MAX, 0},
	    {"-9223372036854775808", INT64_MIN, 0},
	    {"9223372036854775808", 0, 1},
	    {"12x", 0, 1},
	    {"1d", 0, 1},
	    {" 5", 0, 1},
	    {"5 ", 0, 1},
	    {"-", 0, 1},
	    {"0x10", 0, 1},
	    {"1.5", 0, 1},
	};
	int warned, now_max;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (offset_in_child(cases[i].value, &warned, &now_max) != cases[i].want)
			fail_msg("offset \"%s\"", cases[i].value ? cases[i].value : "(unset)");
		assert_int_equal(warned, cases[i].warn);
	}
#else
	(void)state;
	skip();
#endif
}

static void test_extreme_offset_saturates(void **state)
{
#ifdef BC_TESTING
	int warned, now_max;

	(void)state;
	assert_true(offset_in_child("9223372036854775807", &warned, &now_max) == INT64_MAX);
	assert_int_equal(now_max, 1);
	assert_true(offset_in_child("86400000", &warned, &now_max) == DAY_MS);
	assert_int_equal(now_max, 0);
#else
	(void)state;
	skip();
#endif
}

static void test_time_format(void **state)
{
	char buf[32];

	(void)state;
	bc_time_format_ms(1795946400123LL, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T10:00:00.123Z");
	bc_time_format_ms(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	bc_time_format_ms(-1, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
	bc_time_format_ms(253402300799999LL, buf, sizeof(buf));
	assert_string_equal(buf, "9999-12-31T23:59:59.999Z");
	bc_time_format_ms(-62135596800000LL, buf, sizeof(buf));
	assert_string_equal(buf, "0001-01-01T00:00:00.000Z");
	/* exactly 25 bytes is enough; less, or a year past 9999, gives "" */
	bc_time_format_ms(1795946400123LL, buf, 25);
	assert_string_equal(buf, "2026-11-29T10:00:00.123Z");
	memset(buf, 'x', sizeof(buf));
	bc_time_format_ms(1795946400123LL, buf, 24);
	assert_string_equal(buf, "");
	bc_time_format_ms(253402300800000LL, buf, sizeof(buf));
	assert_string_equal(buf, "");
	bc_time_format_ms(INT64_MAX, buf, sizeof(buf));
	assert_string_equal(buf, "");
	bc_time_format_ms(INT64_MIN, buf, sizeof(buf));
	assert_string_equal(buf, "");
	bc_time_format_ms(0, NULL, 0);
}

static void test_duration_ok(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} cases[] = {
	    {"250ms", 250},
	    {"3s", 3000},
	    {"30s", 30000},
	    {"5m", 300000},
	    {"24h", 86400000},
	    {"7d", 604800000},
	    {"30", 30000},
	    {"0", 0},
	    {"0ms", 0},
	    {"9223372036854775807ms", INT64_MAX},
	    {"9223372036854775s", 9223372036854775000LL},
	    {"106751991d", 106751991LL * DAY_MS},
	};
	int64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = -1;
		assert_int_equal(bc_duration_parse_ms(cases[i].s, &v), 0);
		assert_true(v == cases[i].ms);
	}
}

static void test_duration_refused(void **state)
{
	static const char *const bad[] = {
	    "",
	    "-1s",
	    "+1s",
	    "-5",
	    "s",
	    "ms",
	    "1x",
	    "1 s",
	    " 1s",
	    "1s ",
	    "1.5s",
	    "1sm",
	    "1ms5",
	    "1S",
	    "1H",
	    "1M",
	    "1msec",
	    "1sec",
	    "1h30m",
	    "0x10",
	    "1e3",
	    "9223372036854775808ms",
	    "9223372036854775807",
	    "9223372036854776s",
	    "106751991167301d",
	    "99999999999999999999999",
	    "1\n",
	};
	int64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		if (bc_duration_parse_ms(bad[i], &v) != BC_ERR_INVALID)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_true(v == 0);
	}
	assert_int_equal(bc_duration_parse_ms(NULL, &v), BC_ERR_INVALID);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_offset_applied),
	    cmocka_unit_test(test_offset_parse),
	    cmocka_unit_test(test_extreme_offset_saturates),
	    cmocka_unit_test(test_time_format),
	    cmocka_unit_test(test_duration_ok),
	    cmocka_unit_test(test_duration_refused),
	};

	if (argc == 2 && strcmp(argv[1], "offset-child") == 0)
		return child_main();
	/* before anything reads the clock */
	if (setenv("BC_TEST_CLOCK_OFFSET_MS", "86400000", 1) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
