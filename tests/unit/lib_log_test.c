#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bc/err.h"
#include "bc/log.h"

static int saved_fd = -1;
static int cap_fd = -1;

/* stderr goes to a temporary file until capture_end() hands back its bytes. */
static void capture_begin(void)
{
	char path[] = "/tmp/bc_log_test.XXXXXX";

	cap_fd = mkstemp(path);
	assert_true(cap_fd >= 0);
	assert_int_equal(unlink(path), 0);
	saved_fd = dup(STDERR_FILENO);
	assert_true(saved_fd >= 0);
	assert_true(dup2(cap_fd, STDERR_FILENO) >= 0);
}

static char *capture_end(void)
{
	off_t n;
	char *s;

	assert_true(dup2(saved_fd, STDERR_FILENO) >= 0);
	close(saved_fd);
	n = lseek(cap_fd, 0, SEEK_END);
	assert_true(n >= 0);
	s = calloc(1, (size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(pread(cap_fd, s, (size_t)n, 0), n);
	close(cap_fd);
	return s;
}

static int count_char(const char *s, char c)
{
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

/* "ts=2026-11-29T10:00:00.123Z " then the rest, which is returned. */
static const char *after_ts(const char *line)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";

	assert_int_equal(strncmp(line, "ts=", 3), 0);
	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd')
			assert_true(line[3 + i] >= '0' && line[3 + i] <= '9');
		else
			assert_int_equal(line[3 + i], shape[i]);
	}
	assert_int_equal(line[3 + 24], ' ');
	return line + 3 + 25;
}

static int setup(void **state)
{
	(void)state;
	bc_log_set_level(BC_LOG_DEBUG);
	bc_log_set_format(BC_LOG_LOGFMT);
	return 0;
}

static void test_logfmt_shape(void **state)
{
	char *out;

	(void)state;
	capture_begin();
	bc_log(BC_LOG_WARN, "join refused", "attestor", "join-token", "reason", "token-expired",
	       NULL);
	bc_log(BC_LOG_INFO, "started", NULL);
	out = capture_end();
	assert_int_equal(count_char(out, '\n'), 2);
	assert_string_equal(after_ts(strchr(out, '\n') + 1), "level=info msg=started\n");
	strchr(out, '\n')[1] = '\0';
	assert_string_equal(after_ts(out), "level=warn msg=\"join refused\" attestor=join-token "
	                                   "reason=token-expired\n");
	free(out);
}

static void test_logfmt_quoting(void **state)
{
	char *out;

	(void)state;
	capture_begin();
	bc_log(BC_LOG_ERROR, "m", "space", "a b", "eq", "a=b", "quote", "say \"hi\"", "bs", "a\\b",
	       "empty", "", "null", NULL, "utf8", "caf\xc3\xa9", "plain", "x/y:z-1.2", NULL);
	out = capture_end();
	assert_string_equal(
	    after_ts(out),
	    "level=error msg=m space=\"a b\" eq=\"a=b\" quote=\"say \\\"hi\\\"\" "
	    "bs=\"a\\\\b\" empty=\"\" null=\"\" utf8=\"caf\xc3\xa9\" plain=x/y:z-1.2\n");
	free(out);
}

static void test_logfmt_no_forged_line(void **state)
{
	char *out;

	(void)state;
	capture_begin();
	bc_log(BC_LOG_WARN, "join refused", "node",
	       "n1\nts=2026-01-01T00:00:00.000Z level=info msg=\"joined\"", "cr", "a\rb", "esc",
	       "\x1b[31mred", "del", "\x7f", "tab", "a\tb", "bad", "\xff\xc3", "ls",
	       "a\xe2\x80\xa8z", "ps", "\xe2\x80\xa9", "nel", "\xc2\x85", NULL);
	out = capture_end();
	assert_int_equal(count_char(out, '\n'), 1);
	assert_null(strchr(out, '\r'));
	assert_null(strchr(out, '\x1b'));
	assert_string_equal(
	    after_ts(out),
	    "level=warn msg=\"join refused\" "
	    "node=\"n1\\nts=2026-01-01T00:00:00.000Z level=info msg=\\\"joined\\\"\" "
	    "cr=\"a\\rb\" esc=\"\\u001b[31mred\" del=\"\\u007f\" tab=\"a\\tb\" "
	    "bad=\"\\xff\\xc3\" ls=\"a\\u2028z\" ps=\"\\u2029\" nel=\"\\u0085\"\n");
	free(out);
}

static void test_keys_and_msg_escaped(void **state)
{
	char *out;

	(void)state;
	capture_begin();
	bc_log(BC_LOG_INFO, "two\nlines", "bad key=\n", "v", "", "e", NULL);
	bc_log(BC_LOG_INFO, NULL, NULL);
	out = capture_end();
	assert_int_equal(count_char(out, '\n'), 2);
	assert_string_equal(after_ts(strchr(out, '\n') + 1), "level=info msg=\"\"\n");
	strchr(out, '\n')[1] = '\0';
	assert_string_equal(after_ts(out), "level=info msg=\"two\\nlines\" bad_key__=v _=e\n");
	free(out);
}

static void test_level_filter(void **state)
{
	char *out;

	(void)state;
	bc_log_set_level(BC_LOG_WARN);
	capture_begin();
	bc_log(BC_LOG_DEBUG, "hidden-debug", NULL);
	bc_log(BC_LOG_INFO, "hidden-info", NULL);
	bc_log(BC_LOG_WARN, "shown-warn", NULL);
	bc_log(BC_LOG_ERROR, "shown-error", NULL);
	out = capture_end();
	assert_null(strstr(out, "hidden"));
	assert_non_null(strstr(out, "level=warn msg=shown-warn\n"));
	assert_non_null(strstr(out, "level=error msg=shown-error\n"));
	assert_int_equal(count_char(out, '\n'), 2);
	free(out);

	/* an out-of-range level is ignored */
	bc_log_set_level((enum bc_log_level)7);
	capture_begin();
	bc_log(BC_LOG_INFO, "still-hidden", NULL);
	out = capture_end();
	assert_string_equal(out, "");
	free(out);
}

static void test_json_lines(void **state)
{
	json_error_t jerr;
	json_t *o;
	char *out, *nl;

	(void)state;
	bc_log_set_format(BC_LOG_JSON);
	capture_begin();
	bc_log(BC_LOG_WARN, "join refused", "attestor", "join-token", "evil",
	       "x\n{\"level\":\"info\"}\x01\"\\", "bad", "a\xff", "ls", "\xe2\x80\xa8", "null",
	       NULL, NULL);
	out = capture_end();
	assert_int_equal(count_char(out, '\n'), 1);
	assert_int_equal(strncmp(out, "{\"ts\":\"", 7), 0);
	assert_non_null(strstr(out, "\",\"level\":\"warn\",\"msg\":\"join refused\",\"attestor\":"
	                            "\"join-token\",\"evil\":\"x\\n{\\\"level\\\":\\\"info\\\"}"
	                            "\\u0001\\\"\\\\\",\"bad\":\"a\\ufffd\",\"ls\":\"\\u2028\","
	                            "\"null\":\"\"}\n"));
	nl = strchr(out, '\n');
	o = json_loadb(out, (size_t)(nl - out), JSON_REJECT_DUPLICATES, &jerr);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "level")), "warn");
	assert_string_equal(json_string_value(json_object_get(o, "msg")), "join refused");
	assert_string_equal(json_string_value(json_object_get(o, "evil")),
	                    "x\n{\"level\":\"info\"}\x01\"\\");
	assert_string_equal(json_string_value(json_object_get(o, "bad")), "a\xef\xbf\xbd");
	assert_int_equal(strlen(json_string_value(json_object_get(o, "ts"))), 24);
	json_decref(o);
	free(out);
}

static void test_long_value_cut(void **state)
{
	char *big = malloc(100001), *out;

	(void)state;
	assert_non_null(big);
	memset(big, 'a', 100000);
	big[100000] = '\0';
	capture_begin();
	bc_log(BC_LOG_INFO, "big", "v", big, "after", "kept", NULL);
	out = capture_end();
	assert_int_equal(count_char(out, '\n'), 1);
	assert_non_null(strstr(out, "a...(truncated)\" after=kept\n"));
	assert_true(strlen(out) < 8192 + 100);
	free(out);
	free(big);
}

static void test_line_too_long_dropped(void **state)
{
	char *big = malloc(8193), *out;

	(void)state;
	assert_non_null(big);
	/* each byte escapes to six: six such values pass the 256 KiB line bound */
	memset(big, 0x01, 8192);
	big[8192] = '\0';
	capture_begin();
	bc_log(BC_LOG_INFO, "huge", "a", big, "b", big, "c", big, "d", big, "e", big, "f", big,
	       NULL);
	out = capture_end();
	assert_int_equal(count_char(out, '\n'), 1);
	assert_string_equal(after_ts(out),
	                    "level=info msg=huge log_error=\"line dropped: too long\"\n");
	free(out);
	free(big);
}

static void test_errno_preserved(void **state)
{
	char *out;

	(void)state;
	capture_begin();
	errno = ENOENT;
	bc_log(BC_LOG_INFO, "x", NULL);
	assert_int_equal(errno, ENOENT);
	out = capture_end();
	free(out);
}

static void test_parse(void **state)
{
	enum bc_log_level l;
	enum bc_log_format f;

	(void)state;
	assert_int_equal(bc_log_parse_level("debug", &l), 0);
	assert_int_equal(l, BC_LOG_DEBUG);
	assert_int_equal(bc_log_parse_level("info", &l), 0);
	assert_int_equal(l, BC_LOG_INFO);
	assert_int_equal(bc_log_parse_level("warn", &l), 0);
	assert_int_equal(l, BC_LOG_WARN);
	assert_int_equal(bc_log_parse_level("error", &l), 0);
	assert_int_equal(l, BC_LOG_ERROR);
	assert_int_equal(bc_log_parse_level("INFO", &l), BC_ERR_INVALID);
	assert_int_equal(bc_log_parse_level("warning", &l), BC_ERR_INVALID);
	assert_int_equal(bc_log_parse_level("", &l), BC_ERR_INVALID);
	assert_int_equal(bc_log_parse_level(NULL, &l), BC_ERR_INVALID);
	assert_int_equal(bc_log_parse_format("logfmt", &f), 0);
	assert_int_equal(f, BC_LOG_LOGFMT);
	assert_int_equal(bc_log_parse_format("json", &f), 0);
	assert_int_equal(f, BC_LOG_JSON);
	assert_int_equal(bc_log_parse_format("JSON", &f), BC_ERR_INVALID);
	assert_int_equal(bc_log_parse_format("text", &f), BC_ERR_INVALID);
	assert_int_equal(bc_log_parse_format(NULL, &f), BC_ERR_INVALID);
}

#define THREADS    4
#define PER_THREAD 300

static void *log_many(void *arg)
{
	char v[64];

	for (int i = 0; i < PER_THREAD; i++) {
		snprintf(v, sizeof(v), "t%ld-%d with some padding to make the line longer",
		         (long)(intptr_t)arg, i);
		bc_log(BC_LOG_INFO, "concurrent", "who", v, NULL);
	}
	return NULL;
}

static void test_threads_whole_lines(void **state)
{
	pthread_t th[THREADS];
	char *out, *line, *save = NULL;
	int lines = 0;

	(void)state;
	capture_begin();
	for (intptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, log_many, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	out = capture_end();
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *rest = after_ts(line);
		assert_int_equal(strncmp(rest, "level=info msg=concurrent who=\"t", 32), 0);
		assert_non_null(strstr(rest, " with some padding to make the line longer\""));
		lines++;
	}
	assert_int_equal(lines, THREADS * PER_THREAD);
	free(out);
}

static void *log_unset(void *arg)
{
	(void)arg;
	bc_log(BC_LOG_INFO, "other thread", NULL);
	return NULL;
}

/* bc_log_set_client: the lines of this thread end with client=, until cleared;
 * another thread's do not; a value with a line break cannot forge a line. */
static void test_client_per_thread(void **state)
{
	pthread_t th;
	char *out, *l2, *l3, *l4;

	(void)state;
	capture_begin();
	bc_log_set_client("192.0.2.7");
	bc_log(BC_LOG_WARN, "join refused", "reason", "token-used-up", NULL);
	assert_int_equal(pthread_create(&th, NULL, log_unset, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	bc_log_set_client("x\nts=forged level=info msg=evil");
	bc_log(BC_LOG_INFO, "forge", NULL);
	bc_log_set_client(NULL);
	bc_log(BC_LOG_INFO, "after", NULL);
	out = capture_end();
	assert_int_equal(count_char(out, '\n'), 4);
	l2 = strchr(out, '\n') + 1;
	l3 = strchr(l2, '\n') + 1;
	l4 = strchr(l3, '\n') + 1;
	assert_string_equal(after_ts(l4), "level=info msg=after\n");
	l4[0] = '\0';
	assert_string_equal(after_ts(l3), "level=info msg=forge client=\"x\\nts=forged level=info "
	                                  "msg=evil\"\n");
	l3[0] = '\0';
	assert_string_equal(after_ts(l2), "level=info msg=\"other thread\"\n");
	l2[0] = '\0';
	assert_string_equal(after_ts(out), "level=warn msg=\"join refused\" reason=token-used-up "
	                                   "client=192.0.2.7\n");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_logfmt_shape, setup),
	    cmocka_unit_test_setup(test_logfmt_quoting, setup),
	    cmocka_unit_test_setup(test_logfmt_no_forged_line, setup),
	    cmocka_unit_test_setup(test_keys_and_msg_escaped, setup),
	    cmocka_unit_test_setup(test_level_filter, setup),
	    cmocka_unit_test_setup(test_json_lines, setup),
	    cmocka_unit_test_setup(test_long_value_cut, setup),
	    cmocka_unit_test_setup(test_line_too_long_dropped, setup),
	    cmocka_unit_test_setup(test_errno_preserved, setup),
	    cmocka_unit_test_setup(test_parse, setup),
	    cmocka_unit_test_setup(test_threads_whole_lines, setup),
	    cmocka_unit_test_setup(test_client_per_thread, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
