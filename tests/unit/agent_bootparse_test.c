/* bcd's commissioning parsers (bootparse.c): the ramdisk's kernel command line and
 * bcd site's iPXE request (its head and its target), what they accept and every way
 * they refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/codec.h"

#define TOK "bct_tok_01m8smgwtzeadnqschjgy5ybtd_abcdefghijklmnopqrstu"

static int parse(const char *s, struct bcd_cmdline *c)
{
	return bcd_cmdline_parse(s, strlen(s), c);
}

static void test_cmdline_reads_token_assertion_and_server(void **state)
{
	struct bcd_cmdline c;
	(void)state;

	assert_int_equal(parse("BOOT_IMAGE=/vmlinuz console=ttyS0 bc.token=" TOK
	                       "\tbc.assertion=AQID bc.server=https://cp.example:8443 quiet\n",
	                       &c),
	                 0);
	assert_string_equal(c.token, TOK);
	assert_int_equal(c.assertion_len, 3);
	assert_memory_equal(c.assertion, "\x01\x02\x03", 3);
	assert_string_equal(c.server, "https://cp.example:8443");
	bcd_cmdline_free(&c);
	assert_null(c.assertion);
	assert_int_equal(parse("bc.assertion=AQID bc.token=" TOK, &c), 0);
	assert_string_equal(c.server, "");
	bcd_cmdline_free(&c);
}

static void test_cmdline_refusals(void **state)
{
	struct bcd_cmdline c;
	char big[BCD_CMDLINE_MAX + 2];
	(void)state;

	/* missing */
	assert_int_equal(parse("console=ttyS0", &c), BC_ERR_NOT_FOUND);
	assert_int_equal(parse("bc.token=" TOK, &c), BC_ERR_NOT_FOUND);
	assert_int_equal(parse("bc.assertion=AQID", &c), BC_ERR_NOT_FOUND);
	assert_int_equal(parse("bc.token= bc.assertion=AQID", &c), BC_ERR_NOT_FOUND);
	/* given twice */
	assert_int_equal(parse("bc.token=" TOK " bc.token=" TOK " bc.assertion=AQID", &c),
	                 BC_ERR_INVALID);
	assert_int_equal(parse("bc.token=" TOK " bc.assertion=AQID bc.assertion=AQID", &c),
	                 BC_ERR_INVALID);
	/* out of shape */
	assert_int_equal(parse("bc.token=tok_x bc.assertion=AQID", &c), BC_ERR_INVALID);
	assert_int_equal(parse("bc.token=bct_a;b bc.assertion=AQID", &c), BC_ERR_INVALID);
	assert_int_equal(parse("bc.token=" TOK " bc.assertion=AQI=", &c), BC_ERR_INVALID);
	assert_int_equal(parse("bc.token=" TOK " bc.assertion=A+/D", &c), BC_ERR_INVALID);
	assert_int_equal(parse("bc.token=" TOK " bc.assertion=AQID bc.server=ftp://x", &c),
	                 BC_ERR_INVALID);
	assert_int_equal(
	    parse("bc.token=" TOK " bc.assertion=AQID bc.server=https://a bc.server=https://b", &c),
	    BC_ERR_INVALID);
	/* an embedded NUL, and too long */
	assert_int_equal(bcd_cmdline_parse("bc.token=" TOK "\0 bc.assertion=AQID",
	                                   strlen("bc.token=" TOK) + 17, &c),
	                 BC_ERR_INVALID);
	memset(big, ' ', sizeof(big));
	assert_int_equal(bcd_cmdline_parse(big, sizeof(big), &c), BC_ERR_INVALID);
	/* an assertion larger than BC_WIRE_ASSERTION_MAX */
	{
		uint8_t raw[BC_WIRE_ASSERTION_MAX + 1];
		memset(raw, 7, sizeof(raw));
		char *b = bc_b64url_encode(raw, sizeof(raw)), line[4096];
		snprintf(line, sizeof(line), "bc.token=" TOK " bc.assertion=%s", b);
		assert_int_equal(parse(line, &c), BC_ERR_INVALID);
		free(b);
	}
}

static int query(const char *s, struct bcd_boot_query *q)
{
	return bcd_boot_query_parse(s, strlen(s), q);
}

static void test_query_reads_mac_uuid_and_ip(void **state)
{
	struct bcd_boot_query q;
	(void)state;

	assert_int_equal(query("/boot.ipxe?mac=52%3A54%3A00%3AAA%3A00%3A01&uuid=6B1F3C52-0A4E-"
	                       "4D7B-9C1E-2F3A4B5C6D7E&ip=192.0.2.10&other=1",
	                       &q),
	                 0);
	assert_string_equal(q.mac, "52:54:00:aa:00:01");
	assert_string_equal(q.uuid, "6b1f3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e");
	assert_string_equal(q.ip, "192.0.2.10");
	assert_int_equal(query("/boot.ipxe?mac=52-54-00-aa-00-01&ip=2001:db8::1", &q), 0);
	assert_string_equal(q.uuid, "");
	assert_string_equal(q.ip, "2001:db8::1");
}

static void test_query_refusals(void **state)
{
	struct bcd_boot_query q;
	char big[BCD_QUERY_MAX + 2];
	(void)state;

	assert_int_equal(query("/", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxeX?mac=52:54:00:aa:00:01", &q), BC_ERR_INVALID);
	assert_int_equal(query("/other?mac=52:54:00:aa:00:01", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=52:54:00:aa:00", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=52:54:00:aa:00:01&mac=52:54:00:aa:00:02", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=52:54:00:aa:00:01&uuid=nope", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=52:54:00:aa:00:01&ip=999.1.1.1", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=52:54:00:aa:00:01&ip=1.2.3.4%", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=52:54:00:aa:00:01&ip=1.2.3.4%2", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=52%00:54:00:aa:00:01", &q), BC_ERR_INVALID);
	assert_int_equal(query("/boot.ipxe?mac=52:54:00:aa:00:01&ip=%0a", &q), BC_ERR_INVALID);
	memset(big, 'a', sizeof(big));
	memcpy(big, "/boot.ipxe?mac=52:54:00:aa:00:01&x=", 35);
	assert_int_equal(bcd_boot_query_parse(big, sizeof(big), &q), BC_ERR_INVALID);
}

static int head(const char *s, struct bcd_boot_query *q)
{
	return bcd_site_request_parse(s, strlen(s), q);
}

#define LINE                                                                                       \
	"GET /boot.ipxe?mac=52:54:00:aa:00:01&uuid=6b1f3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e HTTP/1.1"

static void test_request_reads_a_whole_head(void **state)
{
	struct bcd_boot_query q;
	(void)state;

	/* iPXE's request, with CRLF */
	assert_int_equal(head(LINE "\r\nConnection: keep-alive\r\nUser-Agent: iPXE/1.21.1\r\n"
	                           "Host: 10.0.0.2:8081\r\n\r\n",
	                      &q),
	                 0);
	assert_string_equal(q.mac, "52:54:00:aa:00:01");
	assert_string_equal(q.uuid, "6b1f3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e");
	/* bare LFs, HTTP/1.0, no headers, a tab in a value, bytes after the head */
	assert_int_equal(head("GET /boot.ipxe?mac=52-54-00-aa-00-01 HTTP/1.0\n\n", &q), 0);
	assert_int_equal(head(LINE "\nX-A:\tb c\n\nGET / HTTP/1.1\r\n", &q), 0);
	assert_string_equal(q.mac, "52:54:00:aa:00:01");
}

static void test_request_waits_for_the_rest(void **state)
{
	struct bcd_boot_query q;
	const char *whole = LINE "\r\nHost: h\r\n\r\n";
	(void)state;

	/* every proper prefix of a good head wants more */
	for (size_t n = 1; n < strlen(whole); n++)
		assert_int_equal(bcd_site_request_parse(whole, n, &q), BC_ERR_TRUNCATED);
	assert_int_equal(bcd_site_request_parse(whole, strlen(whole), &q), 0);
}

static void test_request_refusals(void **state)
{
	struct bcd_boot_query q;
	static char big[BCD_REQUEST_MAX + 64];
	size_t n;
	(void)state;

	/* the method, decided on the first bytes */
	assert_int_equal(head("P", &q), BC_ERR_INVALID);
	assert_int_equal(head("GETX", &q), BC_ERR_INVALID);
	assert_int_equal(head("get /boot.ipxe?mac=52:54:00:aa:00:01 HTTP/1.1\r\n\r\n", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(head("POST /boot.ipxe?mac=52:54:00:aa:00:01 HTTP/1.1\r\n\r\n", &q),
	                 BC_ERR_INVALID);
	/* the request line's shape */
	assert_int_equal(head("GET /boot.ipxe?mac=52:54:00:aa:00:01\r\n\r\n", &q), BC_ERR_INVALID);
	assert_int_equal(head("GET /boot.ipxe?mac=52:54:00:aa:00:01 HTTP/2.0\r\n\r\n", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(head("GET /boot.ipxe?mac=52:54:00:aa:00:01 HTTP/1.2\r\n\r\n", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(head("GET  /boot.ipxe?mac=52:54:00:aa:00:01 HTTP/1.1\r\n\r\n", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(head("GET /boot.ipxe?mac=52:54:00:aa:00:01  HTTP/1.1\r\n\r\n", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(head("GET /boot.ipxe?mac=52:54:00:aa:00:01\tHTTP/1.1\r\n\r\n", &q),
	                 BC_ERR_INVALID);
	assert_int_equal(head("GET  HTTP/1.1\r\n\r\n", &q), BC_ERR_INVALID);
	/* control bytes, seen as soon as they come: a NUL, a bare CR, an escape */
	assert_int_equal(bcd_site_request_parse("GET /\0", 6, &q), BC_ERR_INVALID);
	assert_int_equal(head("GET /\rx", &q), BC_ERR_INVALID);
	assert_int_equal(head(LINE "\r\nHost: a\033b", &q), BC_ERR_INVALID);
	assert_int_equal(head(LINE "\r\nHost: \x80\r\n\r\n", &q), BC_ERR_INVALID);
	/* header lines: a name, then ':'; no folding */
	assert_int_equal(head(LINE "\r\nno colon\r\n\r\n", &q), BC_ERR_INVALID);
	assert_int_equal(head(LINE "\r\n: v\r\n\r\n", &q), BC_ERR_INVALID);
	assert_int_equal(head(LINE "\r\nBad Name: v\r\n\r\n", &q), BC_ERR_INVALID);
	assert_int_equal(head(LINE "\r\nA: b\r\n c\r\n\r\n", &q), BC_ERR_INVALID);
	/* a request line too long, decided before its end */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /boot.ipxe?mac=52:54:00:aa:00:01&x=", 39);
	assert_int_equal(bcd_site_request_parse(big, BCD_REQUEST_LINE_MAX, &q), BC_ERR_TRUNCATED);
	assert_int_equal(bcd_site_request_parse(big, BCD_REQUEST_LINE_MAX + 1, &q), BC_ERR_INVALID);
	/* a head that never ends: BC_ERR_LIMIT at BCD_REQUEST_MAX */
	n = strlen(LINE "\r\nX: ");
	memcpy(big, LINE "\r\nX: ", n);
	assert_int_equal(bcd_site_request_parse(big, BCD_REQUEST_MAX - 1, &q), BC_ERR_TRUNCATED);
	assert_int_equal(bcd_site_request_parse(big, BCD_REQUEST_MAX, &q), BC_ERR_LIMIT);
	assert_int_equal(bcd_site_request_parse(big, sizeof(big), &q), BC_ERR_LIMIT);
	/* a whole head whose target is not a boot query: 404 */
	assert_int_equal(head("GET / HTTP/1.1\r\n\r\n", &q), BC_ERR_NOT_FOUND);
	assert_int_equal(head("GET /boot.ipxe?mac=nope HTTP/1.1\r\n\r\n", &q), BC_ERR_NOT_FOUND);
	assert_int_equal(head("GET /boot.ipxe?mac=52:54:00:aa:00:01&mac=52:54:00:aa:00:01 "
	                      "HTTP/1.1\r\n\r\n",
	                      &q),
	                 BC_ERR_NOT_FOUND);
	assert_string_equal(q.mac, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cmdline_reads_token_assertion_and_server),
	    cmocka_unit_test(test_cmdline_refusals),
	    cmocka_unit_test(test_query_reads_mac_uuid_and_ip),
	    cmocka_unit_test(test_query_refusals),
	    cmocka_unit_test(test_request_reads_a_whole_head),
	    cmocka_unit_test(test_request_waits_for_the_rest),
	    cmocka_unit_test(test_request_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
