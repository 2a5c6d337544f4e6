#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/codec.h"
#include "bc/err.h"

/* RFC 4648 section 10 */
static const struct {
	const char *in, *b64, *b64url, *hex;
} rfc4648[] = {
    {"", "", "", ""},
    {"f", "Zg==", "Zg", "66"},
    {"fo", "Zm8=", "Zm8", "666f"},
    {"foo", "Zm9v", "Zm9v", "666f6f"},
    {"foob", "Zm9vYg==", "Zm9vYg", "666f6f62"},
    {"fooba", "Zm9vYmE=", "Zm9vYmE", "666f6f6261"},
    {"foobar", "Zm9vYmFy", "Zm9vYmFy", "666f6f626172"},
};

typedef int (*decode_fn)(const char *, size_t, uint8_t **, size_t *);

static void expect_decode(decode_fn f, const char *s, const void *want, size_t wlen)
{
	uint8_t *out = NULL;
	size_t len = 99;

	assert_int_equal(f(s, strlen(s), &out, &len), 0);
	assert_non_null(out);
	assert_int_equal(len, wlen);
	assert_memory_equal(out, want, wlen);
	assert_int_equal(out[len], 0);
	free(out);
}

static void expect_refused(decode_fn f, const char *s, size_t slen)
{
	uint8_t *out = (uint8_t *)"x";
	size_t len = 99;

	assert_int_equal(f(s, slen, &out, &len), BC_ERR_INVALID);
	assert_null(out);
	assert_int_equal(len, 0);
}

static void test_rfc4648_vectors(void **state)
{
	char *s;

	(void)state;
	for (size_t i = 0; i < sizeof(rfc4648) / sizeof(rfc4648[0]); i++) {
		size_t n = strlen(rfc4648[i].in);

		s = bc_b64_encode(rfc4648[i].in, n);
		assert_string_equal(s, rfc4648[i].b64);
		free(s);
		s = bc_b64url_encode(rfc4648[i].in, n);
		assert_string_equal(s, rfc4648[i].b64url);
		free(s);
		s = bc_hex_encode(rfc4648[i].in, n);
		assert_string_equal(s, rfc4648[i].hex);
		free(s);
		expect_decode(bc_b64_decode, rfc4648[i].b64, rfc4648[i].in, n);
		expect_decode(bc_b64url_decode, rfc4648[i].b64url, rfc4648[i].in, n);
		expect_decode(bc_hex_decode, rfc4648[i].hex, rfc4648[i].in, n);
	}
}

static void test_alphabets(void **state)
{
	static const uint8_t all62[] = {0xfb, 0xff, 0xbf}; /* "+/+/" and "-_-_" */
	uint8_t bytes[256];
	uint8_t *out;
	size_t len;
	char *s;

	(void)state;
	s = bc_b64_encode(all62, 3);
	assert_string_equal(s, "+/+/");
	free(s);
	s = bc_b64url_encode(all62, 3);
	assert_string_equal(s, "-_-_");
	free(s);
	expect_decode(bc_b64_decode, "+/+/", all62, 3);
	expect_decode(bc_b64url_decode, "-_-_", all62, 3);

	/* every byte value survives each codec */
	for (int i = 0; i < 256; i++)
		bytes[i] = (uint8_t)i;
	s = bc_b64url_encode(bytes, sizeof(bytes));
	assert_int_equal(bc_b64url_decode(s, strlen(s), &out, &len), 0);
	assert_int_equal(len, 256);
	assert_memory_equal(out, bytes, 256);
	free(out);
	free(s);
	s = bc_b64_encode(bytes, sizeof(bytes));
	assert_int_equal(bc_b64_decode(s, strlen(s), &out, &len), 0);
	assert_memory_equal(out, bytes, 256);
	free(out);
	free(s);
	s = bc_hex_encode(bytes, sizeof(bytes));
	assert_int_equal(strncmp(s + 2 * 0xab, "ab", 2), 0);
	assert_int_equal(bc_hex_decode(s, strlen(s), &out, &len), 0);
	assert_memory_equal(out, bytes, 256);
	free(out);
	free(s);
}

static void test_b64url_negatives(void **state)
{
	(void)state;
	expect_refused(bc_b64url_decode, "Zg==", 4); /* padding */
	expect_refused(bc_b64url_decode, "Zg=", 3);
	expect_refused(bc_b64url_decode, "+/+/", 4);    /* standard alphabet */
	expect_refused(bc_b64url_decode, "Zm9v Yg", 7); /* white space */
	expect_refused(bc_b64url_decode, "Zm9vYg\n", 7);
	expect_refused(bc_b64url_decode, "Z", 1); /* a length of 1 mod 4 */
	expect_refused(bc_b64url_decode, "Zm9vY", 5);
	expect_refused(bc_b64url_decode, "Zh", 2); /* non-zero unused bits */
	expect_refused(bc_b64url_decode, "Zm9", 3);
	expect_refused(bc_b64url_decode, "Zm9vYh", 6);
	expect_refused(bc_b64url_decode, "Zm\0v", 4); /* embedded NUL */
	expect_refused(bc_b64url_decode, "Zm\xc3\xa9", 4);
	expect_refused(bc_b64url_decode, NULL, 4);
}

static void test_b64_negatives(void **state)
{
	(void)state;
	expect_refused(bc_b64_decode, "Zg", 2); /* padding missing */
	expect_refused(bc_b64_decode, "Zg=", 3);
	expect_refused(bc_b64_decode, "Zm8", 3);
	expect_refused(bc_b64_decode, "Zg===", 5);
	expect_refused(bc_b64_decode, "Z===", 4); /* too much padding */
	expect_refused(bc_b64_decode, "====", 4);
	expect_refused(bc_b64_decode, "Zg==Zg==", 8); /* padding in the middle */
	expect_refused(bc_b64_decode, "Z=g=", 4);
	expect_refused(bc_b64_decode, "Zm9=", 4); /* non-zero unused bits */
	expect_refused(bc_b64_decode, "Zh==", 4);
	expect_refused(bc_b64_decode, "-_-_", 4); /* url alphabet */
	expect_refused(bc_b64_decode, "Zm9v\n", 5);
	expect_refused(bc_b64_decode, " Zm9v", 5);
	expect_refused(bc_b64_decode, "Zm\0v", 4);
}

static void test_hex(void **state)
{
	static const uint8_t want[] = {0xde, 0xad, 0xbe, 0xef};
	uint8_t to[4];
	char s[9];

	(void)state;
	expect_decode(bc_hex_decode, "DEADbeef", want, 4);
	bc_hex_encode_to(want, 4, s);
	assert_string_equal(s, "deadbeef");
	bc_hex_encode_to(want, 0, s);
	assert_string_equal(s, "");
	assert_int_equal(bc_hex_decode_to("deadBEEF", to, 4), 0);
	assert_memory_equal(to, want, 4);

	expect_refused(bc_hex_decode, "abc", 3);
	expect_refused(bc_hex_decode, "zz", 2);
	expect_refused(bc_hex_decode, "0g", 2);
	expect_refused(bc_hex_decode, "g0", 2);
	expect_refused(bc_hex_decode, " 0", 2);
	expect_refused(bc_hex_decode, "0x", 2);
	expect_refused(bc_hex_decode, "0\0", 2);
	expect_refused(bc_hex_decode, "@`", 2); /* neighbours of the ranges */
	expect_refused(bc_hex_decode, "G/", 2);
	expect_refused(bc_hex_decode, ":f", 2);

	/* exactly outlen bytes; the buffer is wiped on failure */
	memset(to, 0x77, sizeof(to));
	assert_int_equal(bc_hex_decode_to("deadbe", to, 4), BC_ERR_INVALID);
	assert_int_equal(to[0], 0);
	memset(to, 0x77, sizeof(to));
	assert_int_equal(bc_hex_decode_to("deadbeef00", to, 4), BC_ERR_INVALID);
	assert_int_equal(to[0], 0);
	memset(to, 0x77, sizeof(to));
	assert_int_equal(bc_hex_decode_to("deadbeeg", to, 4), BC_ERR_INVALID);
	assert_int_equal(to[0], 0);
	assert_int_equal(to[3], 0);
	assert_int_equal(bc_hex_decode_to(NULL, to, 4), BC_ERR_INVALID);
	assert_int_equal(bc_hex_decode_to("", to, 0), 0);
}

static void test_slen_is_honoured(void **state)
{
	uint8_t *out;
	size_t len;

	(void)state;
	/* only slen characters are read, not up to the NUL */
	assert_int_equal(bc_b64url_decode("Zm9vYmFy", 4, &out, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "foo", 3);
	free(out);
	assert_int_equal(bc_hex_decode("666f6f", 2, &out, &len), 0);
	assert_int_equal(len, 1);
	assert_int_equal(out[0], 'f');
	free(out);
	assert_int_equal(bc_b64_decode(NULL, 0, &out, &len), 0);
	assert_int_equal(len, 0);
	assert_non_null(out);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rfc4648_vectors),
	    cmocka_unit_test(test_alphabets),
	    cmocka_unit_test(test_b64url_negatives),
	    cmocka_unit_test(test_b64_negatives),
	    cmocka_unit_test(test_hex),
	    cmocka_unit_test(test_slen_is_honoured),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
