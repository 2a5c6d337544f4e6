#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/err.h"
#include "bc/json.h"

static json_t *parse_ok(const char *s)
{
	char err[256] = "x";
	json_t *v = NULL;

	assert_int_equal(bc_json_parse(s, strlen(s), 0, &v, err, sizeof(err)), 0);
	assert_non_null(v);
	assert_string_equal(err, "");
	return v;
}

static void parse_bad_len(const void *p, size_t len, size_t max, int want, const char *errpart)
{
	json_t *v = (json_t *)1;
	char err[256] = "";

	assert_int_equal(bc_json_parse(p, len, max, &v, err, sizeof(err)), want);
	assert_null(v);
	if (strstr(err, errpart) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", err, errpart);
}

static void parse_bad(const char *s, int want, const char *errpart)
{
	parse_bad_len(s, strlen(s), 0, want, errpart);
}

static void test_parse_and_get(void **state)
{
	const char *s;
	int64_t i;
	json_t *v;
	int b;

	(void)state;
	v = parse_ok("{\"name\":\"n\\u00e9\",\"n\":-42,\"big\":9223372036854775807,\"t\":true,"
	             "\"f\":false,\"x\":1.5,\"nil\":null,\"arr\":[1]}");
	assert_int_equal(bc_json_get_string(v, "name", &s), 0);
	assert_string_equal(s, "n\xc3\xa9");
	assert_int_equal(bc_json_get_int(v, "n", &i), 0);
	assert_true(i == -42);
	assert_int_equal(bc_json_get_int(v, "big", &i), 0);
	assert_true(i == INT64_MAX);
	assert_int_equal(bc_json_get_bool(v, "t", &b), 0);
	assert_int_equal(b, 1);
	assert_int_equal(bc_json_get_bool(v, "f", &b), 0);
	assert_int_equal(b, 0);

	/* absent, and present with another type */
	assert_int_equal(bc_json_get_string(v, "missing", &s), BC_ERR_NOT_FOUND);
	assert_null(s);
	assert_int_equal(bc_json_get_int(v, "missing", &i), BC_ERR_NOT_FOUND);
	assert_int_equal(bc_json_get_bool(v, "missing", &b), BC_ERR_NOT_FOUND);
	assert_int_equal(bc_json_get_string(v, "n", &s), BC_ERR_INVALID);
	assert_null(s);
	i = 5;
	assert_int_equal(bc_json_get_int(v, "x", &i), BC_ERR_INVALID);
	assert_true(i == 0);
	assert_int_equal(bc_json_get_int(v, "name", &i), BC_ERR_INVALID);
	assert_int_equal(bc_json_get_int(v, "t", &i), BC_ERR_INVALID);
	assert_int_equal(bc_json_get_bool(v, "n", &b), BC_ERR_INVALID);
	assert_int_equal(bc_json_get_bool(v, "nil", &b), BC_ERR_INVALID);
	assert_int_equal(bc_json_get_string(v, "nil", &s), BC_ERR_INVALID);
	assert_int_equal(bc_json_get_string(v, "arr", &s), BC_ERR_INVALID);
	/* not an object */
	assert_int_equal(bc_json_get_string(json_object_get(v, "arr"), "a", &s), BC_ERR_INVALID);
	assert_int_equal(bc_json_get_string(NULL, "a", &s), BC_ERR_INVALID);
	json_decref(v);

	v = parse_ok("[]");
	json_decref(v);
	v = parse_ok(" { } \n");
	json_decref(v);
}

static void test_refusals(void **state)
{
	(void)state;
	parse_bad("{\"a\":1,\"a\":2}", BC_ERR_INVALID, "duplicate object key");
	parse_bad("{\"a\":{\"b\":1,\"b\":1}}", BC_ERR_INVALID, "duplicate object key");
	parse_bad("{\"a\":\"x\\u0000y\"}", BC_ERR_INVALID, "\\u0000 is not allowed");
	parse_bad_len("{\"a\":\"x\0y\"}", 11, 0, BC_ERR_INVALID, "control character");
	parse_bad_len("{}\0", 3, 0, BC_ERR_INVALID, "end of file expected");
	parse_bad("{} x", BC_ERR_INVALID, "end of file expected");
	parse_bad("{}{}", BC_ERR_INVALID, "end of file expected");
	parse_bad("{\"a\":1,}", BC_ERR_INVALID, "line 1, column 8");
	parse_bad("{\"a\":\n  tru}", BC_ERR_INVALID, "line 2");
	parse_bad("{\"a\":\"\xff\"}", BC_ERR_INVALID, "unable to decode byte 0xff");
	parse_bad("{\"a\":99999999999999999999}", BC_ERR_INVALID, "too big integer");
	parse_bad("\"scalar\"", BC_ERR_INVALID, "'[' or '{' expected");
	parse_bad("", BC_ERR_INVALID, "'[' or '{' expected");
	parse_bad_len(NULL, 3, 0, BC_ERR_INVALID, "no input");
}

static char *nested(int depth, const char *open, const char *inner, const char *close)
{
	size_t ol = strlen(open), cl = strlen(close), il = strlen(inner);
	char *s = malloc((size_t)depth * (ol + cl) + il + 1), *p = s;

	assert_non_null(s);
	for (int i = 0; i < depth; i++, p += ol)
		memcpy(p, open, ol);
	memcpy(p, inner, il);
	p += il;
	for (int i = 0; i < depth; i++, p += cl)
		memcpy(p, close, cl);
	*p = '\0';
	return s;
}

static void test_depth(void **state)
{
	char *s;
	json_t *v;

	(void)state;
	s = nested(32, "[", "", "]");
	v = parse_ok(s);
	json_decref(v);
	free(s);
	s = nested(33, "[", "", "]");
	parse_bad(s, BC_ERR_LIMIT, "nested deeper than 32");
	free(s);
	s = nested(32, "{\"a\":", "1", "}");
	v = parse_ok(s);
	json_decref(v);
	free(s);
	s = nested(33, "{\"a\":", "1", "}");
	parse_bad(s, BC_ERR_LIMIT, "nested deeper than 32");
	free(s);
	/* brackets inside strings, escaped quotes included, do not count */
	s = nested(40, "[", "", "]");
	{
		char *doc = malloc(strlen(s) + 32);
		json_t *o;
		const char *got;

		assert_non_null(doc);
		snprintf(doc, strlen(s) + 32, "{\"k\":\"\\\"%s\\\\\"}", s);
		o = parse_ok(doc);
		assert_int_equal(bc_json_get_string(o, "k", &got), 0);
		assert_int_equal(got[0], '"');
		json_decref(o);
		free(doc);
	}
	free(s);
	/* deep input is refused before jansson's own 2048 limit matters */
	s = nested(5000, "[", "", "]");
	parse_bad(s, BC_ERR_LIMIT, "nested deeper than 32");
	free(s);
}

static void test_size_bound(void **state)
{
	char *s = malloc(1024 * 1024 + 2);

	(void)state;
	assert_non_null(s);
	parse_bad_len("[1,2,3]", 7, 6, BC_ERR_LIMIT, "larger than 6 bytes");
	{
		json_t *v;
		assert_int_equal(bc_json_parse("[1,2,3]", 7, 7, &v, NULL, 0), 0);
		json_decref(v);
	}
	/* max 0 means 1 MiB */
	memset(s, ' ', 1024 * 1024 + 1);
	s[0] = '[';
	s[1024 * 1024 - 1] = ']';
	parse_bad_len(s, 1024 * 1024 + 1, 0, BC_ERR_LIMIT, "larger than 1048576 bytes");
	{
		json_t *v;
		assert_int_equal(bc_json_parse(s, 1024 * 1024, 0, &v, NULL, 0), 0);
		json_decref(v);
	}
	free(s);
}

static void test_dump(void **state)
{
	json_t *v;
	char *s;

	(void)state;
	v = parse_ok("{ \"b\" : [1, 2], \"a\" : {\"z\":true, \"y\":null}, \"c\":\"\\u00e9/\" }");
	s = bc_json_dump(v);
	assert_string_equal(s, "{\"a\":{\"y\":null,\"z\":true},\"b\":[1,2],\"c\":\"\xc3\xa9/\"}");
	free(s);
	json_decref(v);
	v = json_integer(7);
	s = bc_json_dump(v);
	assert_string_equal(s, "7");
	free(s);
	json_decref(v);
	assert_null(bc_json_dump(NULL));
}

static void test_built_value_with_nul(void **state)
{
	const char *s;
	json_t *o = json_object();

	(void)state;
	assert_int_equal(json_object_set_new(o, "k", json_stringn("a\0b", 3)), 0);
	assert_int_equal(bc_json_get_string(o, "k", &s), BC_ERR_INVALID);
	assert_null(s);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_and_get), cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_depth),         cmocka_unit_test(test_size_bound),
	    cmocka_unit_test(test_dump),          cmocka_unit_test(test_built_value_with_nul),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
