/* bench_reply_head (bc-load's answer reader): a whole head is taken with its framing
 * and Retry-After; a partial one waits; each malformed head is refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bc/err.h"
#include "tls_client.h"

static int head(const char *s, struct bench_reply_head *h, const char **why)
{
	return bench_reply_head(s, strlen(s), h, why);
}

static void test_a_whole_head(void **state)
{
	static const char a[] = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\n"
	                        "Content-Length: 5\r\n\r\nhello";
	struct bench_reply_head h;
	const char *why;
	(void)state;

	assert_int_equal(head(a, &h, &why), 1);
	assert_int_equal(h.status, 503);
	assert_int_equal(h.content_length, 5);
	assert_int_equal(h.retry_after_s, 7);
	assert_int_equal(h.head_len, strlen(a) - 5);
	/* an HTTP date is not read; a huge delay is capped */
	assert_int_equal(head("HTTP/1.1 503 x\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
	                      "Content-Length: 0\r\n\r\n",
	                      &h, &why),
	                 1);
	assert_int_equal(h.retry_after_s, 0);
	assert_int_equal(
	    head("HTTP/1.0 200 OK\r\nRetry-After: 9999999\r\nContent-Length: 0\r\n\r\n", &h, &why),
	    1);
	assert_int_equal(h.retry_after_s, 86400);
}

static void test_a_partial_head_waits(void **state)
{
	static const char a[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
	struct bench_reply_head h;
	const char *why;
	(void)state;

	for (size_t n = 0; n < strlen(a); n++)
		assert_int_equal(bench_reply_head(a, n, &h, &why), 0);
}

static void refused(const char *s, int rc, const char *why_part)
{
	struct bench_reply_head h;
	const char *why = NULL;

	assert_int_equal(head(s, &h, &why), rc);
	assert_non_null(why);
	assert_non_null(strstr(why, why_part));
}

static void test_malformed_heads_are_refused(void **state)
{
	(void)state;
	refused("HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n", BC_ERR_INVALID, "malformed status");
	refused("SSH-2.0-x\r\n\r\n", BC_ERR_INVALID, "malformed status");
	refused("HTTP/1.1 200 OK\r\nbad header\r\n\r\n", BC_ERR_INVALID, "malformed status");
	refused("HTTP/1.1 100 Continue\r\nContent-Length: 0\r\n\r\n", BC_ERR_INVALID,
	        "outside 200 to 599");
	refused("HTTP/1.1 600 x\r\nContent-Length: 0\r\n\r\n", BC_ERR_INVALID,
	        "outside 200 to 599");
	refused("HTTP/1.1 200 OK\r\n\r\n", BC_ERR_INVALID, "no Content-Length");
	refused("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", BC_ERR_INVALID,
	        "malformed or repeated Content-Length");
	refused("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n", BC_ERR_INVALID,
	        "malformed or repeated Content-Length");
	refused("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", BC_ERR_INVALID,
	        "malformed or repeated Content-Length");
	refused("HTTP/1.1 200 OK\r\nContent-Length: 12345678901234567890\r\n\r\n", BC_ERR_INVALID,
	        "malformed or repeated Content-Length");
	refused("HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", BC_ERR_INVALID,
	        "malformed or repeated Content-Length");
	refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
	        BC_ERR_INVALID, "Transfer-Encoding");
	refused("HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 1\r\n\r\n", BC_ERR_INVALID,
	        "folded header");
	refused("HTTP/1.1 200 OK\r\nContent-Length: 1048577\r\n\r\n", BC_ERR_LIMIT,
	        "past the client's bound");
}

static void test_a_head_past_the_bound(void **state)
{
	char *a = malloc(BENCH_REPLY_HEAD_MAX + 64);
	struct bench_reply_head h;
	const char *why;
	(void)state;

	assert_non_null(a);
	strcpy(a, "HTTP/1.1 200 OK\r\nX: ");
	memset(a + strlen(a), 'a', BENCH_REPLY_HEAD_MAX);
	assert_int_equal(bench_reply_head(a, BENCH_REPLY_HEAD_MAX + 20, &h, &why), BC_ERR_LIMIT);
	assert_non_null(strstr(why, "longer than the client's bound"));
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_whole_head),
	    cmocka_unit_test(test_a_partial_head_waits),
	    cmocka_unit_test(test_malformed_heads_are_refused),
	    cmocka_unit_test(test_a_head_past_the_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
