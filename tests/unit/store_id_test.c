/* bc_new_id(): ULIDs under a prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/clock.h"
#include "bc/err.h"
#include "bc/store.h"
#include "store/id.h"

#define ID_MAX 64
#define MANY   100000

static const char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";

/* An independent reading of the time part: 10 characters, 5 bits each. */
static int64_t id_time(const char *id)
{
	const char *u = strchr(id, '_') + 1;
	int64_t t = 0;

	for (int i = 0; i < 10; i++)
		t = t * 32 + (strchr(alphabet, u[i]) - alphabet);
	return t;
}

static void test_format(void **state)
{
	char id[ID_MAX];
	int64_t before, after;

	(void)state;
	before = bc_now_ms();
	assert_int_equal(bc_new_id("node", id, sizeof(id)), 0);
	after = bc_now_ms();
	assert_int_equal(strlen(id), strlen("node_") + 26);
	assert_memory_equal(id, "node_", 5);
	for (size_t i = 5; i < strlen(id); i++)
		if (strchr(alphabet, id[i]) == NULL)
			fail_msg("%c is not lower-case Crockford base32", id[i]);
	assert_true(id_time(id) >= before && id_time(id) <= after);
	assert_int_equal(bc_new_id("jr", id, sizeof(id)), 0);
	assert_int_equal(strlen(id), 29);
}

static void test_sizes_and_prefixes(void **state)
{
	char id[ID_MAX];

	(void)state;
	/* prefix + "_" + 26 + NUL exactly */
	assert_int_equal(bc_new_id("tok", id, 3 + 28), 0);
	assert_int_equal(strlen(id), 30);
	memset(id, 'x', sizeof(id));
	assert_int_equal(bc_new_id("tok", id, 3 + 27), BC_ERR_LIMIT);
	assert_int_equal(id[0], '\0');
	assert_int_equal(bc_new_id("tok", id, 0), BC_ERR_LIMIT);
	assert_int_equal(bc_new_id("tok", NULL, 40), BC_ERR_INVALID);

	assert_int_equal(bc_new_id(NULL, id, sizeof(id)), BC_ERR_INVALID);
	assert_int_equal(bc_new_id("", id, sizeof(id)), BC_ERR_INVALID);
	assert_int_equal(bc_new_id("Node", id, sizeof(id)), BC_ERR_INVALID);
	assert_int_equal(bc_new_id("a_b", id, sizeof(id)), BC_ERR_INVALID);
	assert_int_equal(bc_new_id("a b", id, sizeof(id)), BC_ERR_INVALID);
	assert_int_equal(id[0], '\0');
}

static void test_known_values(void **state)
{
	static const uint8_t zero[10],
	    ones[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t seq[10] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23};
	char id[ID_MAX];

	(void)state;
	assert_int_equal(bc_id_format("x", 0, zero, id, sizeof(id)), 0);
	assert_string_equal(id, "x_00000000000000000000000000");
	assert_int_equal(bc_id_format("x", ((int64_t)1 << 48) - 1, ones, id, sizeof(id)), 0);
	assert_string_equal(id, "x_7zzzzzzzzzzzzzzzzzzzzzzzzz");
	/* the ULID specification's decodeTime example (01ARYZ6S41 is 1469918176385),
	 * then 0x0123456789abcdef0123 in 5-bit groups */
	assert_int_equal(bc_id_format("evt", 1469918176385, seq, id, sizeof(id)), 0);
	assert_string_equal(id, "evt_01aryz6s4104hmasw9nf6yy093");
	assert_int_equal(bc_id_format("x", -1, zero, id, sizeof(id)), BC_ERR_INVALID);
	assert_int_equal(bc_id_format("x", (int64_t)1 << 48, zero, id, sizeof(id)), BC_ERR_INVALID);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void test_unique(void **state)
{
	char(*ids)[32] = calloc(MANY, sizeof(*ids));

	(void)state;
	assert_non_null(ids);
	for (int i = 0; i < MANY; i++)
		assert_int_equal(bc_new_id("n", ids[i], sizeof(ids[i])), 0);
	qsort(ids, MANY, sizeof(*ids), cmp_str);
	for (int i = 1; i < MANY; i++)
		if (strcmp(ids[i - 1], ids[i]) == 0)
			fail_msg("%s twice", ids[i]);
	free(ids);
}

/* Whatever the random part, a later millisecond sorts after an earlier one. */
static void test_order_follows_time(void **state)
{
	char a[ID_MAX], b[ID_MAX], prev[ID_MAX];
	uint8_t ra[10], rb[10];
	int64_t t;

	(void)state;
	srand(12345);
	for (int i = 0; i < 20000; i++) {
		t = ((int64_t)rand() << 17 ^ rand()) & (((int64_t)1 << 47) - 1);
		for (int k = 0; k < 10; k++) {
			ra[k] = (uint8_t)rand();
			rb[k] = (uint8_t)rand();
		}
		/* a's random part the largest, b's the smallest, at the edge cases */
		if (i % 3 == 0) {
			memset(ra, 0xff, sizeof(ra));
			memset(rb, 0, sizeof(rb));
		}
		assert_int_equal(bc_id_format("n", t, ra, a, sizeof(a)), 0);
		assert_int_equal(
		    bc_id_format("n", t + 1 + (i % 5) * (i % 7) * 1000, rb, b, sizeof(b)), 0);
		assert_true(strcmp(a, b) < 0);
	}
	/* and real ids, across however many milliseconds these take */
	assert_int_equal(bc_new_id("n", prev, sizeof(prev)), 0);
	for (int i = 0; i < 20000; i++) {
		assert_int_equal(bc_new_id("n", a, sizeof(a)), 0);
		if (id_time(a) > id_time(prev))
			assert_true(strcmp(prev, a) < 0);
		memcpy(prev, a, sizeof(prev));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_sizes_and_prefixes),
	    cmocka_unit_test(test_known_values),
	    cmocka_unit_test(test_unique),
	    cmocka_unit_test(test_order_follows_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
