#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/buf.h"
#include "bc/err.h"

static void test_reader_integers(void **state)
{
	static const uint8_t in[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	                             0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
	bc_reader r;
	uint8_t a;
	uint16_t b;
	uint32_t c;
	uint64_t d;

	(void)state;
	bc_reader_init(&r, in, sizeof(in));
	assert_int_equal(bc_reader_left(&r), 15);
	assert_int_equal(bc_reader_u8(&r, &a), 0);
	assert_int_equal(a, 0x01);
	assert_int_equal(bc_reader_u16(&r, &b), 0);
	assert_int_equal(b, 0x0203);
	assert_int_equal(bc_reader_u32(&r, &c), 0);
	assert_int_equal(c, 0x04050607);
	assert_int_equal(bc_reader_u64(&r, &d), 0);
	assert_true(d == 0x08090a0b0c0d0e0full);
	assert_int_equal(bc_reader_left(&r), 0);
	assert_int_equal(bc_reader_done(&r), 0);
}

static void test_reader_truncated_leaves_state(void **state)
{
	static const uint8_t in[] = {0xaa, 0xbb, 0xcc};
	bc_reader r;
	uint32_t c = 7;
	uint64_t d = 7;
	uint16_t b;

	(void)state;
	bc_reader_init(&r, in, sizeof(in));
	assert_int_equal(bc_reader_u32(&r, &c), BC_ERR_TRUNCATED);
	assert_int_equal(c, 0);
	assert_int_equal(bc_reader_u64(&r, &d), BC_ERR_TRUNCATED);
	assert_true(d == 0);
	assert_int_equal(bc_reader_left(&r), 3);
	assert_int_equal(bc_reader_u16(&r, &b), 0);
	assert_int_equal(b, 0xaabb);
	assert_int_equal(bc_reader_done(&r), BC_ERR_TRAILING);
	assert_int_equal(bc_reader_u16(&r, &b), BC_ERR_TRUNCATED);
	assert_int_equal(bc_reader_left(&r), 1);
}

static void test_reader_bytes(void **state)
{
	static const uint8_t in[] = "abcdef";
	const uint8_t *p;
	bc_reader r;

	(void)state;
	bc_reader_init(&r, in, 6);
	assert_int_equal(bc_reader_bytes(&r, 2, &p), 0);
	assert_ptr_equal(p, in);
	assert_int_equal(bc_reader_bytes(&r, 0, &p), 0);
	assert_ptr_equal(p, in + 2);
	assert_int_equal(bc_reader_bytes(&r, 5, &p), BC_ERR_TRUNCATED);
	assert_null(p);
	assert_int_equal(bc_reader_bytes(&r, SIZE_MAX, &p), BC_ERR_TRUNCATED);
	assert_int_equal(bc_reader_bytes(&r, 4, &p), 0);
	assert_memory_equal(p, "cdef", 4);
	assert_int_equal(bc_reader_done(&r), 0);
}

static void test_reader_null_range(void **state)
{
	const uint8_t *p = (const uint8_t *)"x";
	bc_reader r, z;
	uint8_t a;

	(void)state;
	/* NULL with a length is an empty range, and a zero-length read is valid */
	bc_reader_init(&r, NULL, 10);
	assert_int_equal(bc_reader_left(&r), 0);
	assert_int_equal(bc_reader_bytes(&r, 0, &p), 0);
	assert_non_null(p);
	assert_int_equal(bc_reader_u8(&r, &a), BC_ERR_TRUNCATED);
	assert_int_equal(bc_reader_done(&r), 0);
	memset(&z, 0, sizeof(z));
	assert_int_equal(bc_reader_bytes(&z, 0, &p), 0);
	assert_non_null(p);
	assert_int_equal(bc_reader_bytes(&z, 1, &p), BC_ERR_TRUNCATED);
	assert_null(p);
}

static void test_reader_b16(void **state)
{
	static const uint8_t ok[] = {0x00, 0x03, 'a', 'b', 'c', 0x00, 0x00};
	static const uint8_t shortb[] = {0x00, 0x05, 'a', 'b'};
	static const uint8_t half[] = {0x00};
	const uint8_t *p;
	size_t n = 9;
	bc_reader r;

	(void)state;
	bc_reader_init(&r, ok, sizeof(ok));
	assert_int_equal(bc_reader_b16(&r, &p, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(p, "abc", 3);
	assert_int_equal(bc_reader_b16(&r, &p, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bc_reader_done(&r), 0);

	/* a length past the end: nothing consumed, outputs cleared */
	bc_reader_init(&r, shortb, sizeof(shortb));
	assert_int_equal(bc_reader_b16(&r, &p, &n), BC_ERR_TRUNCATED);
	assert_null(p);
	assert_int_equal(n, 0);
	assert_int_equal(bc_reader_left(&r), sizeof(shortb));

	bc_reader_init(&r, half, sizeof(half));
	assert_int_equal(bc_reader_b16(&r, &p, &n), BC_ERR_TRUNCATED);
	assert_int_equal(bc_reader_left(&r), 1);
}

static void test_buf_put_and_steal(void **state)
{
	static const uint8_t want[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
	                               0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 'h',  'i',  0x00};
	uint8_t *p;
	size_t n;
	bc_buf b;

	(void)state;
	bc_buf_init(&b, 0);
	assert_int_equal(bc_buf_put_u8(&b, 0x01), 0);
	assert_int_equal(bc_buf_put_u16(&b, 0x0203), 0);
	assert_int_equal(bc_buf_put_u32(&b, 0x04050607), 0);
	assert_int_equal(bc_buf_put_u64(&b, 0x08090a0b0c0d0e0full), 0);
	assert_int_equal(bc_buf_put_cstr(&b, "hi"), 0);
	assert_int_equal(bc_buf_put(&b, NULL, 0), 0);
	assert_int_equal(b.len, sizeof(want));
	p = bc_buf_steal(&b, &n);
	assert_non_null(p);
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(p, want, sizeof(want));
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	free(p);

	/* an empty buffer still hands out a pointer */
	p = bc_buf_steal(&b, &n);
	assert_non_null(p);
	assert_int_equal(n, 0);
	free(p);
	bc_buf_free(&b);
}

static void test_buf_limit(void **state)
{
	uint8_t big[100];
	bc_buf b;

	(void)state;
	memset(big, 0x5a, sizeof(big));
	bc_buf_init(&b, 10);
	assert_int_equal(bc_buf_put(&b, big, 8), 0);
	assert_int_equal(bc_buf_put(&b, big, 3), BC_ERR_LIMIT);
	assert_int_equal(b.len, 8);
	assert_int_equal(bc_buf_put(&b, big, 2), 0);
	assert_int_equal(b.len, 10);
	assert_int_equal(bc_buf_put_u8(&b, 1), BC_ERR_LIMIT);
	assert_int_equal(bc_buf_put(&b, big, SIZE_MAX), BC_ERR_LIMIT);
	assert_true(b.cap <= 64);
	bc_buf_free(&b);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
}

static void test_buf_growth_keeps_bytes(void **state)
{
	uint8_t chunk[1000];
	bc_buf b;

	(void)state;
	bc_buf_init(&b, 5000);
	for (int i = 0; i < 5; i++) {
		memset(chunk, 'a' + i, sizeof(chunk));
		assert_int_equal(bc_buf_put(&b, chunk, sizeof(chunk)), 0);
	}
	assert_int_equal(b.len, 5000);
	assert_true(b.cap <= 5000);
	for (int i = 0; i < 5; i++)
		assert_int_equal(b.p[i * 1000 + 999], 'a' + i);
	assert_int_equal(bc_buf_put_u8(&b, 0), BC_ERR_LIMIT);
	bc_buf_free(&b);
}

static void test_buf_zeroed_and_null_input(void **state)
{
	bc_buf b;

	(void)state;
	/* a zeroed buffer works with the default bound */
	memset(&b, 0, sizeof(b));
	assert_int_equal(bc_buf_put(&b, "abc", 3), 0);
	assert_int_equal(b.len, 3);
	assert_int_equal(bc_buf_put(&b, NULL, 1), BC_ERR_INVALID);
	assert_int_equal(bc_buf_put_cstr(&b, NULL), BC_ERR_INVALID);
	assert_int_equal(b.len, 3);
	bc_buf_free(&b);
	bc_freezero(NULL, 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reader_integers),
	    cmocka_unit_test(test_reader_truncated_leaves_state),
	    cmocka_unit_test(test_reader_bytes),
	    cmocka_unit_test(test_reader_null_range),
	    cmocka_unit_test(test_reader_b16),
	    cmocka_unit_test(test_buf_put_and_steal),
	    cmocka_unit_test(test_buf_limit),
	    cmocka_unit_test(test_buf_growth_keeps_bytes),
	    cmocka_unit_test(test_buf_zeroed_and_null_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
