/* The request head reader (src/server/http_parse.c): what a head yields, every refusal
 * by name, query and path decoding, and chunked bodies, whole and in pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "server/http_parse.h"

/* The refusal a head gets: its status, its body the named constant. */
static void refused(const char *head, int want_status, const char *want_body)
{
	struct http_head h;
	const char *body = NULL;
	int status = 0;

	assert_true(bc_http_parse_head(head, strlen(head), &h, &status, &body) < 0);
	assert_int_equal(status, want_status);
	assert_ptr_equal(body, want_body);
}

static void test_a_head_yields_its_fields(void **state)
{
	static const char req[] = "POST /v1/a%20b?x=1&y=two+words HTTP/1.1\r\nHost: h\r\n"
	                          "Content-Type: application/proto\r\nAuthorization: Bearer k\r\n"
	                          "Content-Length: 12\r\nExpect: 100-continue\r\n\r\nbody...";
	struct http_head h;
	const char *body;
	int status, r;
	(void)state;

	r = bc_http_parse_head(req, sizeof(req) - 1, &h, &status, &body);
	assert_int_equal(r, (int)(strstr(req, "\r\n\r\n") - req) + 4);
	assert_string_equal(h.method, "POST");
	assert_string_equal(h.path, "/v1/a b");
	assert_string_equal(h.query, "x=1&y=two+words");
	assert_string_equal(h.content_type, "application/proto");
	assert_string_equal(h.authorization, "Bearer k");
	assert_true(h.has_length);
	assert_int_equal(h.content_length, 12);
	assert_true(h.expect_continue);
	assert_true(h.keep_alive);
	assert_false(h.chunked);
	http_head_free(&h);

	/* HTTP/1.0: no Host needed, not kept alive; absent headers are "" */
	r = bc_http_parse_head("GET /x HTTP/1.0\r\n\r\n", 19, &h, &status, &body);
	assert_int_equal(r, 19);
	assert_false(h.keep_alive);
	assert_null(h.query);
	assert_string_equal(h.content_type, "");
	assert_string_equal(h.authorization, "");
	http_head_free(&h);

	/* Connection: close */
	static const char closing[] = "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
	assert_true(bc_http_parse_head(closing, sizeof(closing) - 1, &h, &status, &body) > 0);
	assert_false(h.keep_alive);
	http_head_free(&h);
}

static void test_an_unfinished_head_waits(void **state)
{
	static const char part[] = "GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: a";
	struct http_head h;
	const char *body;
	int status;
	(void)state;

	for (size_t n = 0; n < sizeof(part) - 1; n++)
		assert_int_equal(bc_http_parse_head(part, n, &h, &status, &body), 0);
}

static void test_refusals_by_name(void **state)
{
	char big[HTTP_HEAD_MAX + 64];
	(void)state;

	refused("GET /x\001 HTTP/1.1\r\nHost: a\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE);
	refused("GET x HTTP/1.1\r\nHost: a\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE);
	refused(" /x HTTP/1.1\r\nHost: a\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE); /* no method */
	refused("GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE);
	refused("GET /x HTTP/1.2\r\nHost: a\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE);
	refused("GET /x HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE);
	refused("GET /a%00b HTTP/1.1\r\nHost: a\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE);
	refused("GET /x HTTP/1.1\r\n\r\n", 400, HTTP_NO_HOST);
	refused("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, HTTP_NO_HOST);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
	        400, HTTP_BAD_FRAMING);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
	        "Transfer-Encoding: chunked\r\n\r\n",
	        400, HTTP_BAD_FRAMING);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3x\r\n\r\n", 400, HTTP_BAD_LENGTH);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400, HTTP_BAD_LENGTH);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\n", 400,
	        HTTP_BAD_LENGTH);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 400, HTTP_BAD_LENGTH);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400,
	        HTTP_BAD_TRANSFER_ENCODING);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
	        "Transfer-Encoding: chunked\r\n\r\n",
	        400, HTTP_BAD_TRANSFER_ENCODING);
	/* RFC 9112 5.1: whitespace between a field name and its colon is a 400, never a
	 * header of another name (a body framed one way here, another way by a proxy);
	 * picohttpparser refuses a name that is not a token */
	refused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\nhello", 400,
	        HTTP_BAD_REQUEST_LINE);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length\t: 5\r\n\r\nhello", 400,
	        HTTP_BAD_REQUEST_LINE);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", 400,
	        HTTP_BAD_REQUEST_LINE);
	refused("GET /x HTTP/1.1\r\nHost : a\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE);
	refused("GET /x HTTP/1.1\r\nHost: a\r\nX(y): 1\r\n\r\n", 400, HTTP_BAD_REQUEST_LINE);
	/* RFC 9112 6.1: chunked once, as the only coding; repeated in a list as well */
	refused("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400,
	        HTTP_BAD_TRANSFER_ENCODING);
	refused("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
	        "transfer-encoding: CHUNKED\r\n\r\n",
	        400, HTTP_BAD_TRANSFER_ENCODING);
	/* headers that never end within HTTP_HEAD_MAX */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /x HTTP/1.1\r\nHost: a\r\nX: ", 29);
	big[sizeof(big) - 1] = '\0';
	refused(big, 431, HTTP_HEAD_TOO_LARGE);
}

static void test_too_many_headers_are_refused(void **state)
{
	char head[8192];
	size_t n = (size_t)snprintf(head, sizeof(head), "GET /x HTTP/1.1\r\nHost: a\r\n");
	(void)state;

	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		n += (size_t)snprintf(head + n, sizeof(head) - n, "X-%d: v\r\n", i);
	snprintf(head + n, sizeof(head) - n, "\r\n");
	refused(head, 400, HTTP_BAD_REQUEST_LINE);
}

static void test_a_huge_length_saturates(void **state)
{
	static const char req[] =
	    "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n";
	struct http_head h;
	const char *body;
	int status;
	(void)state;

	assert_true(bc_http_parse_head(req, sizeof(req) - 1, &h, &status, &body) > 0);
	assert_int_equal(h.content_length, UINT64_MAX);
	http_head_free(&h);
}

static void test_query(void **state)
{
	const char *k[4], *v[4];
	char q[] = "a=1&b=two+words&&c&d=%41%00%zz", q2[] = "1&2&3&4&5";
	size_t n;
	(void)state;

	assert_int_equal(http_parse_query(q, k, v, 4, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(k[0], "a");
	assert_string_equal(v[0], "1");
	assert_string_equal(v[1], "two words");
	assert_string_equal(k[2], "c");
	assert_string_equal(v[2], "");
	assert_string_equal(v[3], "A%00%zz");
	assert_int_equal(http_parse_query(q2, k, v, 4, &n), BC_ERR_LIMIT);
	assert_int_equal(http_parse_query(NULL, k, v, 4, &n), 0);
	assert_int_equal(n, 0);
}

static void test_chunked(void **state)
{
	static const char whole[] = "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer: x\r\n\r\nNEXT";
	struct http_chunked d;
	char buf[128], out[64];
	size_t n, rest, got = 0;
	(void)state;

	memset(&d, 0, sizeof(d));
	memcpy(buf, whole, sizeof(whole) - 1);
	n = sizeof(whole) - 1;
	assert_int_equal(http_chunked_decode(&d, buf, &n, &rest), 1);
	assert_int_equal(n, 5);
	assert_memory_equal(buf, "abcde", 5);
	assert_int_equal(rest, 4);
	assert_memory_equal(buf + n, "NEXT", 4);

	/* a byte at a time */
	memset(&d, 0, sizeof(d));
	for (size_t i = 0; i < sizeof(whole) - 1; i++) {
		int r;
		buf[0] = whole[i];
		n = 1;
		r = http_chunked_decode(&d, buf, &n, &rest);
		assert_true(r >= 0);
		memcpy(out + got, buf, n);
		got += n;
		if (r == 1) {
			assert_int_equal(i, sizeof(whole) - 1 - 4 - 1 + rest);
			break;
		}
	}
	assert_int_equal(got, 5);
	assert_memory_equal(out, "abcde", 5);

	/* not a size */
	memset(&d, 0, sizeof(d));
	memcpy(buf, "zz\r\nabc\r\n", 9);
	n = 9;
	assert_int_equal(http_chunked_decode(&d, buf, &n, &rest), BC_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_head_yields_its_fields),
	    cmocka_unit_test(test_an_unfinished_head_waits),
	    cmocka_unit_test(test_refusals_by_name),
	    cmocka_unit_test(test_too_many_headers_are_refused),
	    cmocka_unit_test(test_a_huge_length_saturates),
	    cmocka_unit_test(test_query),
	    cmocka_unit_test(test_chunked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
