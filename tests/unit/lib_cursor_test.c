/* bc/cursor.h: a cursor encodes and decodes back, and the decoder refuses every
 * malformed or foreign cursor (it is untrusted input). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/codec.h"
#include "bc/cursor.h"
#include "bc/err.h"

static void test_round_trip(void **state)
{
	struct bc_cursor k = {.before = 1, .at = 1764720000123}, d;
	char s[BC_CURSOR_MAX + 1];

	(void)state;
	strcpy(k.id, "node_01jdzq3v5c8k9m2n4p6r8t0w2y");
	assert_int_equal(bc_cursor_encode("nodes", &k, s), 0);
	assert_int_equal(bc_cursor_decode("nodes", s, &d), 0);
	assert_int_equal(d.before, 1);
	assert_int_equal(d.at, k.at);
	assert_string_equal(d.id, k.id);
	/* the page after, at 0 and INT64_MAX */
	k.before = 0;
	k.at = 0;
	assert_int_equal(bc_cursor_encode("events", &k, s), 0);
	assert_int_equal(bc_cursor_decode("events", s, &d), 0);
	assert_int_equal(d.before, 0);
	assert_int_equal(d.at, 0);
	k.at = INT64_MAX;
	memset(k.id, 'z', BC_CURSOR_ID_MAX);
	k.id[BC_CURSOR_ID_MAX] = '\0';
	assert_int_equal(bc_cursor_encode("join_requests", &k, s), 0);
	assert_true(strlen(s) <= BC_CURSOR_MAX);
	assert_int_equal(bc_cursor_decode("join_requests", s, &d), 0);
	assert_int_equal(d.at, INT64_MAX);
	assert_string_equal(d.id, k.id);
}

static void test_encode_refuses(void **state)
{
	struct bc_cursor k = {.at = 5};
	char s[BC_CURSOR_MAX + 1];

	(void)state;
	strcpy(k.id, "a.b"); /* the separator in an id */
	assert_int_equal(bc_cursor_encode("nodes", &k, s), BC_ERR_INVALID);
	k.id[0] = '\0';
	assert_int_equal(bc_cursor_encode("nodes", &k, s), BC_ERR_INVALID);
	strcpy(k.id, "x");
	k.at = -1;
	assert_int_equal(bc_cursor_encode("nodes", &k, s), BC_ERR_INVALID);
	k.at = 1;
	assert_int_equal(bc_cursor_encode("Nodes", &k, s), BC_ERR_INVALID);
	assert_int_equal(bc_cursor_encode("", &k, s), BC_ERR_INVALID);
}

/* The payload given as text, base64url-encoded, then decoded as list's. */
static int decode_text(const char *list, const char *text)
{
	struct bc_cursor k;
	char *s = bc_b64url_encode(text, strlen(text));
	int rc;

	assert_non_null(s);
	rc = bc_cursor_decode(list, s, &k);
	if (rc != 0) {
		assert_int_equal(k.at, 0);
		assert_string_equal(k.id, "");
	}
	free(s);
	return rc;
}

static void test_decode_refuses(void **state)
{
	static const char *const bad[] = {
	    "events.n.5.evt_1",                   /* another list's */
	    "nodes.x.5.node_1",                   /* no direction */
	    "nodes.n.-5.node_1",                  /* a sign */
	    "nodes.n.05.node_1",                  /* a leading zero */
	    "nodes.n..node_1",                    /* no key */
	    "nodes.n.9223372036854775808.node_1", /* above INT64_MAX */
	    "nodes.n.99999999999999999999.n",     /* 20 digits */
	    "nodes.n.5.",                         /* no id */
	    "nodes.n.5.node 1",                   /* a space in the id */
	    "nodes.n.5.node_1.x",                 /* a trailing field */
	    "nodes.n.5",                          /* no id field */
	    "nodes.n",                            /* truncated */
	    "nodes",                              /* truncated */
	    "nodesx.n.5.node_1",                  /* a longer list name */
	    "nodes.n.5.node_1%27",                /* a quote, encoded */
	};

	(void)state;
	assert_int_equal(decode_text("nodes", "nodes.n.5.node_1"), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(decode_text("nodes", bad[i]), BC_ERR_INVALID);
}

static void test_decode_refuses_encoding(void **state)
{
	struct bc_cursor k;
	char big[BC_CURSOR_MAX + 2];
	char nul[] = "nodes.n.5.node_1";

	(void)state;
	assert_int_equal(bc_cursor_decode("nodes", "", &k), BC_ERR_INVALID);
	assert_int_equal(bc_cursor_decode("nodes", NULL, &k), BC_ERR_INVALID);
	assert_int_equal(bc_cursor_decode("nodes", "bm9kZXMubi41Lm5vZGVfMQ==", &k),
	                 BC_ERR_INVALID); /* padding */
	assert_int_equal(bc_cursor_decode("nodes", "bm9kZXMubi41Lm5vZGVfMQ", &k), 0);
	assert_int_equal(bc_cursor_decode("nodes", "bm9kZXMubi41Lm5vZGVfMR", &k),
	                 BC_ERR_INVALID); /* non-canonical trailing bits */
	assert_int_equal(bc_cursor_decode("nodes", "bm9kZXMubi41Lm5v+GVfMQ", &k), BC_ERR_INVALID);
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(bc_cursor_decode("nodes", big, &k), BC_ERR_LIMIT);
	/* an embedded NUL in the payload */
	nul[10] = '\0';
	{
		char *s = bc_b64url_encode(nul, sizeof(nul) - 1);
		assert_int_equal(bc_cursor_decode("nodes", s, &k), BC_ERR_INVALID);
		free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_encode_refuses),
	    cmocka_unit_test(test_decode_refuses),
	    cmocka_unit_test(test_decode_refuses_encoding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
