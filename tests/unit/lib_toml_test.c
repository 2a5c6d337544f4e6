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
#include "bc/toml.h"

static bc_toml *parse_ok(const char *text)
{
	char err[256] = "unset";
	bc_toml *t = NULL;
	int rc;

	rc = bc_toml_parse(text, strlen(text), &t, err, sizeof(err));
	if (rc != 0)
		print_error("unexpected: %s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(t);
	assert_string_equal(err, "");
	return t;
}

/* The error message must be exactly want (with its line number). */
static void parse_bad_len(const char *text, size_t len, int want_rc, const char *want)
{
	bc_toml *t = (bc_toml *)1;
	char err[256] = "";

	assert_int_equal(bc_toml_parse(text, len, &t, err, sizeof(err)), want_rc);
	assert_null(t);
	assert_string_equal(err, want);
}

static void parse_bad(const char *text, const char *want)
{
	parse_bad_len(text, strlen(text), BC_ERR_CONFIG, want);
}

static void test_value_types(void **state)
{
	const char *s;
	int64_t i;
	int b;
	bc_toml *t;

	(void)state;
	t = parse_ok("# a config\n"
	             "name = \"bc\"  # trailing comment\n"
	             "lit = 'C:\\path\\no escapes'\n"
	             "empty = \"\"\n"
	             "n = 42\n"
	             "neg = -17\n"
	             "pos = +5\n"
	             "zero = 0\n"
	             "big = 1_000_000\n"
	             "max = 9223372036854775807\n"
	             "min = -9223372036854775808\n"
	             "yes = true\n"
	             "no = false\n"
	             "key-with_dash = 1\n"
	             "\"quoted key\" = 2\n"
	             "'lit key' = 3\n");
	assert_int_equal(bc_toml_get_string(t, "name", &s), 0);
	assert_string_equal(s, "bc");
	assert_int_equal(bc_toml_get_string(t, "lit", &s), 0);
	assert_string_equal(s, "C:\\path\\no escapes");
	assert_int_equal(bc_toml_get_string(t, "empty", &s), 0);
	assert_string_equal(s, "");
	assert_int_equal(bc_toml_get_int(t, "n", &i), 0);
	assert_true(i == 42);
	assert_int_equal(bc_toml_get_int(t, "neg", &i), 0);
	assert_true(i == -17);
	assert_int_equal(bc_toml_get_int(t, "pos", &i), 0);
	assert_true(i == 5);
	assert_int_equal(bc_toml_get_int(t, "zero", &i), 0);
	assert_true(i == 0);
	assert_int_equal(bc_toml_get_int(t, "big", &i), 0);
	assert_true(i == 1000000);
	assert_int_equal(bc_toml_get_int(t, "max", &i), 0);
	assert_true(i == INT64_MAX);
	assert_int_equal(bc_toml_get_int(t, "min", &i), 0);
	assert_true(i == INT64_MIN);
	assert_int_equal(bc_toml_get_bool(t, "yes", &b), 0);
	assert_int_equal(b, 1);
	assert_int_equal(bc_toml_get_bool(t, "no", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(bc_toml_get_int(t, "key-with_dash", &i), 0);
	assert_true(i == 1);
	assert_int_equal(bc_toml_get_int(t, "quoted key", &i), 0);
	assert_true(i == 2);
	assert_int_equal(bc_toml_get_int(t, "lit key", &i), 0);
	assert_true(i == 3);
	bc_toml_free(t);
}

static void test_escapes(void **state)
{
	const char *s;
	bc_toml *t;

	(void)state;
	t = parse_ok("a = \"q\\\" b\\\\ n\\n t\\t\"\n"
	             "u = \"\\u00e9\\U0001F600\"\n"
	             "raw = \"caf\xc3\xa9\ttab\"\n"
	             "other = \"\\b\\f\\r\"\n");
	assert_int_equal(bc_toml_get_string(t, "a", &s), 0);
	assert_string_equal(s, "q\" b\\ n\n t\t");
	assert_int_equal(bc_toml_get_string(t, "u", &s), 0);
	assert_string_equal(s, "\xc3\xa9\xf0\x9f\x98\x80");
	assert_int_equal(bc_toml_get_string(t, "raw", &s), 0);
	assert_string_equal(s, "caf\xc3\xa9\ttab");
	assert_int_equal(bc_toml_get_string(t, "other", &s), 0);
	assert_string_equal(s, "\b\f\r");
	bc_toml_free(t);
}

static void test_wrong_type_and_missing(void **state)
{
	const char *const *v;
	const char *s;
	int64_t i = 5;
	size_t n;
	int b;
	bc_toml *t;

	(void)state;
	t = parse_ok("s = \"x\"\nn = 1\nb = true\na = [\"x\"]\n[tab]\nk = 1\n");
	assert_int_equal(bc_toml_get_int(t, "s", &i), BC_ERR_INVALID);
	assert_true(i == 0);
	assert_int_equal(bc_toml_get_string(t, "n", &s), BC_ERR_INVALID);
	assert_null(s);
	assert_int_equal(bc_toml_get_bool(t, "n", &b), BC_ERR_INVALID);
	assert_int_equal(bc_toml_get_strings(t, "s", &v, &n), BC_ERR_INVALID);
	assert_null(v);
	assert_int_equal(bc_toml_get_string(t, "a", &s), BC_ERR_INVALID);
	assert_int_equal(bc_toml_get_string(t, "tab", &s), BC_ERR_INVALID);
	assert_int_equal(bc_toml_get_string(t, "nope", &s), BC_ERR_NOT_FOUND);
	assert_int_equal(bc_toml_get_int(t, "tab.nope", &i), BC_ERR_NOT_FOUND);
	assert_int_equal(bc_toml_get_int(t, "k", &i), BC_ERR_NOT_FOUND);
	assert_int_equal(bc_toml_get_int(t, "tab.k", &i), 0);
	assert_int_equal(bc_toml_get_int(t, "tab.k.x", &i), BC_ERR_NOT_FOUND);
	assert_int_equal(bc_toml_has_table(t, "tab"), 1);
	assert_int_equal(bc_toml_has_table(t, "s"), 0);
	assert_int_equal(bc_toml_has_table(t, "tab.k"), 0);
	assert_int_equal(bc_toml_has_table(t, "nope"), 0);
	assert_int_equal(bc_toml_has_table(t, ""), 1);
	assert_int_equal(bc_toml_get_string(NULL, "s", &s), BC_ERR_NOT_FOUND);
	bc_toml_free(t);
}

static void test_tables(void **state)
{
	const char *const *names;
	const char *s;
	int64_t i;
	size_t n;
	bc_toml *t;

	(void)state;
	t = parse_ok("top = 1\n"
	             "\n"
	             "[tls]\n"
	             "cert = \"a.crt\"\n"
	             "\n"
	             "  [ attestors . join-token ]  # indented, spaced\n"
	             "ttl = \"24h\"\n"
	             "[attestors.\"x509pop\"]\n"
	             "roots = []\n"
	             "[attestors]\n"
	             "order = 3\n"
	             "[a.b.c]\n"
	             "deep = true\n");
	assert_int_equal(bc_toml_get_string(t, "tls.cert", &s), 0);
	assert_string_equal(s, "a.crt");
	assert_int_equal(bc_toml_get_string(t, "attestors.join-token.ttl", &s), 0);
	assert_string_equal(s, "24h");
	assert_int_equal(bc_toml_get_int(t, "attestors.order", &i), 0);
	assert_true(i == 3);
	assert_int_equal(bc_toml_has_table(t, "attestors.x509pop"), 1);
	assert_int_equal(bc_toml_has_table(t, "a.b"), 1);
	assert_int_equal(bc_toml_has_table(t, "a.b.c"), 1);

	assert_int_equal(bc_toml_tables(t, "", &names, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(names[0], "tls");
	assert_string_equal(names[1], "attestors");
	assert_string_equal(names[2], "a");
	assert_null(names[3]);
	assert_int_equal(bc_toml_tables(t, "attestors", &names, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "join-token");
	assert_string_equal(names[1], "x509pop");
	assert_int_equal(bc_toml_tables(t, "tls", &names, &n), 0);
	assert_int_equal(n, 0);
	assert_non_null(names);
	assert_null(names[0]);
	assert_int_equal(bc_toml_tables(t, "nope", &names, &n), BC_ERR_NOT_FOUND);
	assert_null(names);
	assert_int_equal(bc_toml_tables(t, "top", &names, &n), BC_ERR_INVALID);
	bc_toml_free(t);
}

static void test_keys_listing(void **state)
{
	const char *const *keys;
	size_t n;
	bc_toml *t;

	(void)state;
	/* the order of the file, so a reader can name the first unknown key */
	t = parse_ok("zeta = 1\nalpha = 2\n\"mid key\" = 3\n[sub]\nlisten = \"x\"\ntypo_key = 1\n"
	             "[sub.inner]\n[empty]\n");
	assert_int_equal(bc_toml_keys(t, "", &keys, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(keys[0], "zeta");
	assert_string_equal(keys[1], "alpha");
	assert_string_equal(keys[2], "mid key");
	assert_int_equal(bc_toml_keys(t, "sub", &keys, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(keys[0], "listen");
	assert_string_equal(keys[1], "typo_key");
	assert_int_equal(bc_toml_keys(t, "empty", &keys, &n), 0);
	assert_int_equal(n, 0);
	assert_non_null(keys);
	assert_int_equal(bc_toml_keys(t, "sub.inner", &keys, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bc_toml_keys(t, "missing", &keys, &n), BC_ERR_NOT_FOUND);
	assert_null(keys);
	assert_int_equal(n, 0);
	assert_int_equal(bc_toml_keys(t, "zeta", &keys, &n), BC_ERR_INVALID);
	bc_toml_free(t);
}

static void test_arrays(void **state)
{
	const char *const *v;
	size_t n;
	bc_toml *t;

	(void)state;
	t = parse_ok("one = [\"a\"]\n"
	             "empty = []\n"
	             "spaced = [ 'x' , \"y\" ]\n"
	             "multi = [\n"
	             "  \"first\",   # a comment\n"
	             "\n"
	             "  # a comment line\n"
	             "  'second',\n"
	             "]\n"
	             "crlf = [\r\n\"c\"\r\n]\r\n"
	             "after = 1\n");
	assert_int_equal(bc_toml_get_strings(t, "one", &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "a");
	assert_null(v[1]);
	assert_int_equal(bc_toml_get_strings(t, "empty", &v, &n), 0);
	assert_int_equal(n, 0);
	assert_non_null(v);
	assert_null(v[0]);
	assert_int_equal(bc_toml_get_strings(t, "spaced", &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "x");
	assert_string_equal(v[1], "y");
	assert_int_equal(bc_toml_get_strings(t, "multi", &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "first");
	assert_string_equal(v[1], "second");
	assert_int_equal(bc_toml_get_strings(t, "crlf", &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "c");
	bc_toml_free(t);
}

static void test_long_array(void **state)
{
	size_t cap = 10000 * 16 + 32, len = 0;
	char *text = malloc(cap), want[16];
	const char *const *v;
	size_t n;
	bc_toml *t;

	(void)state;
	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, "a = [");
	for (int i = 0; i < 10000; i++)
		len += (size_t)snprintf(text + len, cap - len, "\"s%d\",\n", i);
	len += (size_t)snprintf(text + len, cap - len, "]\n");
	t = parse_ok(text);
	assert_int_equal(bc_toml_get_strings(t, "a", &v, &n), 0);
	assert_int_equal(n, 10000);
	for (int i = 0; i < 10000; i += 999) {
		snprintf(want, sizeof(want), "s%d", i);
		assert_string_equal(v[i], want);
	}
	assert_null(v[n]);
	bc_toml_free(t);
	free(text);
}

static void test_edge_documents(void **state)
{
	const char *const *keys;
	int64_t i;
	size_t n;
	bc_toml *t;

	(void)state;
	t = parse_ok("");
	assert_int_equal(bc_toml_keys(t, "", &keys, &n), 0);
	assert_int_equal(n, 0);
	bc_toml_free(t);
	t = parse_ok("# only a comment");
	bc_toml_free(t);
	t = parse_ok("a=1"); /* no final newline, no spaces */
	assert_int_equal(bc_toml_get_int(t, "a", &i), 0);
	assert_true(i == 1);
	bc_toml_free(t);
	assert_int_equal(bc_toml_parse(NULL, 0, &t, NULL, 0), 0);
	bc_toml_free(t);
	bc_toml_free(NULL);
}

static void test_syntax_errors(void **state)
{
	(void)state;
	parse_bad("a = 1\nb = \n", "line 2: expected a value, found end of line");
	parse_bad("a = 1\nb 1\n", "line 2: expected '=' after the key 'b', found '1'");
	parse_bad("\n\n= 1\n", "line 3: expected a key, found '='");
	parse_bad("a = 1 2\n", "line 1: expected the end of the line, found '2'");
	parse_bad("a = \"x\" y\n", "line 1: expected the end of the line, found 'y'");
	parse_bad("[t\n", "line 1: expected '.' or ']' in the table header, found end of line");
	parse_bad("[]\n", "line 1: expected a key, found ']'");
	parse_bad("[a.]\n", "line 1: expected a key, found ']'");
	parse_bad("[a] x\n", "line 1: expected the end of the line, found 'x'");
	parse_bad("a = \"open\n", "line 1: unterminated string");
	parse_bad("a = 'open\n", "line 1: unterminated string");
	parse_bad("a = \"\\q\"\n", "line 1: invalid escape \\ followed by 'q'");
	parse_bad("a = \"\\u12\"\n", "line 1: \\u needs 4 hex digits");
	parse_bad("a = \"\\U0001F6\"\n", "line 1: \\U needs 8 hex digits");
	parse_bad("a = \"\\u0000\"\n", "line 1: \\u0000 is not allowed in a string");
	parse_bad("a = \"\\ud800\"\n", "line 1: escape of an invalid code point U+D800");
	parse_bad("a = \"\\U00110000\"\n", "line 1: escape of an invalid code point U+110000");
	parse_bad("a = True\n", "line 1: expected a value, found 'T'");
	parse_bad("a = truely\n", "line 1: expected a value (true and false are lower case)");
	parse_bad("a = yes\n", "line 1: expected a value, found 'y'");
	parse_bad("a.b = 1\n", "line 1: dotted keys are not supported: put 'a' in a [table]");
	parse_bad("\"\" = 1\n",
	          "line 1: a quoted key may not be empty or hold '.' or a control character");
	parse_bad("\"a.b\" = 1\n",
	          "line 1: a quoted key may not be empty or hold '.' or a control character");
	parse_bad("\"a\\nb\" = 1\n",
	          "line 1: a quoted key may not be empty or hold '.' or a control character");
	parse_bad("\xef\xbb\xbfx = 1\n", "line 1: expected a key, found byte 0xef"); /* a BOM */
	parse_bad("k\xc3\xa9 = 1\n", "line 1: expected '=' after the key 'k', found byte 0xc3");
}

static void test_unsupported(void **state)
{
	(void)state;
	parse_bad("x = 1\na = 1.5\n", "line 2: floats are not supported");
	parse_bad("a = 1e3\n", "line 1: floats are not supported");
	parse_bad("a = inf\n", "line 1: floats are not supported");
	parse_bad("a = nan\n", "line 1: floats are not supported");
	parse_bad("a = 1979-05-27\n", "line 1: dates and times are not supported");
	parse_bad("a = 07:32:00\n", "line 1: leading zeros are not allowed");
	parse_bad("a = 12:32:00\n", "line 1: dates and times are not supported");
	parse_bad("a = {x = 1}\n", "line 1: inline tables are not supported");
	parse_bad("[[arr]]\n", "line 1: arrays of tables ([[...]]) are not supported");
	parse_bad("a = \"\"\"multi\"\"\"\n", "line 1: multi-line strings are not supported");
	parse_bad("a = '''multi'''\n", "line 1: multi-line strings are not supported");
	parse_bad("a = 0x1f\n", "line 1: hexadecimal, octal and binary integers are not supported");
	parse_bad("a = [1, 2]\n", "line 1: arrays may hold only strings, found '1'");
	parse_bad("a = [\"x\", true]\n", "line 1: arrays may hold only strings, found 't'");
	parse_bad("a = [[\"x\"]]\n", "line 1: arrays may hold only strings, found '['");
}

static void test_integer_errors(void **state)
{
	(void)state;
	parse_bad("a = 9223372036854775808\n", "line 1: integer out of range");
	parse_bad("a = -9223372036854775809\n", "line 1: integer out of range");
	parse_bad("a = 99999999999999999999999\n", "line 1: integer out of range");
	parse_bad("a = 012\n", "line 1: leading zeros are not allowed");
	parse_bad("a = 0_1\n", "line 1: leading zeros are not allowed");
	parse_bad("a = 1__0\n", "line 1: '_' in an integer must be between digits");
	parse_bad("a = 10_\n", "line 1: '_' in an integer must be between digits");
	parse_bad("a = -_1\n", "line 1: '_' in an integer must be between digits");
	parse_bad("a = -\n", "line 1: expected a value");
	parse_bad("a = +x\n", "line 1: expected a value");
	parse_bad("a = 12abc\n", "line 1: invalid integer");
}

static void test_array_errors(void **state)
{
	(void)state;
	parse_bad("a = [\n\"x\"\n\"y\"\n]\n",
	          "line 3: expected ',' or ']' in the array, found '\"'");
	parse_bad("a = [\n\"x\",\n", "line 3: unterminated array (opened on line 1)");
	parse_bad("a = [,]\n", "line 1: arrays may hold only strings, found ','");
	parse_bad("a = [\"x\",,]\n", "line 1: arrays may hold only strings, found ','");
	parse_bad("a = [\"x\"] 1\n", "line 1: expected the end of the line, found '1'");
}

static void test_duplicates(void **state)
{
	(void)state;
	parse_bad("a = 1\nb = 2\na = 3\n", "line 3: duplicate key 'a' (first on line 1)");
	parse_bad("a = 1\n\"a\" = 3\n", "line 2: duplicate key 'a' (first on line 1)");
	parse_bad("[t]\nx = 1\n[u]\n[t]\n", "line 4: duplicate table [t] (first on line 1)");
	parse_bad("[t]\nx = 1\n\n[t]\n", "line 4: duplicate table [t] (first on line 1)");
	parse_bad("[t]\nx = 1\ny = 2\nx = 3\n", "line 4: duplicate key 't.x' (first on line 2)");
	parse_bad("t = 1\n[t]\n", "line 2: table [t] is already a key (line 1)");
	parse_bad("[a]\nb = 1\n[a.b.c]\n", "line 3: 'a.b' is a key (line 2), not a table");
	parse_bad("[a.b]\n[a]\nb = 1\n", "line 3: duplicate key 'a.b' (first on line 1)");
	parse_bad("[a.b]\n[a]\n[a]\n", "line 3: duplicate table [a] (first on line 2)");
	parse_bad("[a]\n[a.b]\n[a.b]\n", "line 3: duplicate table [a.b] (first on line 2)");
}

static void test_bytes_refused(void **state)
{
	(void)state;
	parse_bad_len("a = 1\nb = \"x\0y\"\n", 15, BC_ERR_CONFIG, "line 2: NUL byte");
	parse_bad_len("# c\0\n", 5, BC_ERR_CONFIG, "line 1: NUL byte");
	parse_bad("a = 1\n\nb = \"\xff\"\n", "line 3: invalid UTF-8");
	parse_bad("a = \"\xc0\xaf\"\n", "line 1: invalid UTF-8");     /* overlong '/' */
	parse_bad("a = \"\xed\xa0\x80\"\n", "line 1: invalid UTF-8"); /* surrogate */
	parse_bad("a = \"\xf4\x90\x80\x80\"\n", "line 1: invalid UTF-8");
	parse_bad("a = \"\xe2\x82\"\n", "line 1: invalid UTF-8");
	parse_bad("# \xfe comment\n", "line 1: invalid UTF-8");
	parse_bad("a = \"x\x01y\"\n", "line 1: control character 0x01");
	parse_bad("a = 1\n# bell \x07\n", "line 2: control character 0x07");
	parse_bad("a = \"\x1b[2J\"\n", "line 1: control character 0x1b");
	parse_bad("a = \"\x7f\"\n", "line 1: control character 0x7f");
	parse_bad("a = 1\rb = 2\n", "line 1: carriage return not followed by a line feed");
	parse_bad("a = 1\r", "line 1: carriage return not followed by a line feed");
}

static void test_size_bound(void **state)
{
	size_t big = 1024 * 1024 + 1, ok = 1024 * 1024;
	char *text = malloc(big);
	char err[128];
	bc_toml *t;

	(void)state;
	assert_non_null(text);
	memset(text, '#', big);
	text[ok - 1] = '\n';
	parse_bad_len(text, big, BC_ERR_LIMIT, "larger than 1048576 bytes");
	assert_int_equal(bc_toml_parse(text, ok, &t, err, sizeof(err)), 0);
	bc_toml_free(t);
	free(text);
}

static void test_too_many_keys(void **state)
{
	size_t cap = 20000 * 12, len = 0;
	char *text = malloc(cap);
	char err[128];
	bc_toml *t;

	(void)state;
	assert_non_null(text);
	for (int i = 0; i < 20000; i++)
		len += (size_t)snprintf(text + len, cap - len, "k%d = 1\n", i);
	assert_int_equal(bc_toml_parse(text, len, &t, err, sizeof(err)), BC_ERR_LIMIT);
	assert_null(t);
	assert_string_equal(err, "line 16384: too many keys and tables");
	free(text);
}

static void test_err_may_be_null(void **state)
{
	bc_toml *t;

	(void)state;
	assert_int_equal(bc_toml_parse("a = ", 4, &t, NULL, 0), BC_ERR_CONFIG);
	assert_null(t);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

static void test_load(void **state)
{
	char dir[] = "/tmp/bc_toml_test.XXXXXX", path[128], want[256], err[256];
	const char *s;
	bc_toml *t;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/server.toml", dir);
	write_file(path, "listen = \"127.0.0.1:8080\"\n");
	assert_int_equal(bc_toml_load(path, &t, err, sizeof(err)), 0);
	assert_int_equal(bc_toml_get_string(t, "listen", &s), 0);
	assert_string_equal(s, "127.0.0.1:8080");
	bc_toml_free(t);

	write_file(path, "listen = \"x\"\nthreads = 1.5\n");
	assert_int_equal(bc_toml_load(path, &t, err, sizeof(err)), BC_ERR_CONFIG);
	assert_null(t);
	snprintf(want, sizeof(want), "%s: line 2: floats are not supported", path);
	assert_string_equal(err, want);

	assert_int_equal(bc_toml_load(dir, &t, err, sizeof(err)), BC_ERR_IO);
	snprintf(want, sizeof(want), "%s: not a regular file", dir);
	assert_string_equal(err, want);

	assert_int_equal(unlink(path), 0);
	assert_int_equal(bc_toml_load(path, &t, err, sizeof(err)), BC_ERR_NOT_FOUND);
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
	assert_string_equal(err, want);
	assert_int_equal(rmdir(dir), 0);
}

static void test_load_too_big(void **state)
{
	char dir[] = "/tmp/bc_toml_test.XXXXXX", path[128], want[256], err[256];
	char line[1025];
	bc_toml *t;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/big.toml", dir);
	memset(line, '#', sizeof(line) - 1);
	line[sizeof(line) - 2] = '\n';
	line[sizeof(line) - 1] = '\0';
	assert_non_null(f = fopen(path, "w"));
	for (int i = 0; i <= 1024; i++)
		assert_int_equal(fputs(line, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(bc_toml_load(path, &t, err, sizeof(err)), BC_ERR_LIMIT);
	assert_null(t);
	snprintf(want, sizeof(want), "%s: larger than 1048576 bytes", path);
	assert_string_equal(err, want);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- bc_toml_read_table ---- */

struct opts {
	const char *name;
	int64_t count;   /* INT, size 8 */
	unsigned small;  /* INT, size 4 */
	int64_t wait_ms; /* SECONDS, kept in ms; formerly wait_ms */
	int on;
	int mode; /* CHOICE */
	struct bc_toml_strings tags;
	char *owned; /* COPY */
};

static const char *const modes[] = {"off", "on", "auto", NULL};

static const struct bc_toml_field opt_fields[] = {
    {.key = "name",
     .type = BC_TOML_STRING,
     .flags = BC_TOML_REQUIRED | BC_TOML_NONEMPTY,
     BC_TOML_AT(struct opts, name)},
    {.key = "count", .type = BC_TOML_INT, .min = -5, .max = 100, BC_TOML_AT(struct opts, count)},
    {.key = "small",
     .type = BC_TOML_INT,
     .min = 1,
     .max = 4000000000LL,
     BC_TOML_AT(struct opts, small)},
    {.key = "wait_seconds",
     .type = BC_TOML_SECONDS,
     .min = 1,
     .max = 60,
     .scale = 1000,
     .old = "wait_ms",
     BC_TOML_AT(struct opts, wait_ms)},
    {.key = "on", .type = BC_TOML_BOOL, BC_TOML_AT(struct opts, on)},
    {.key = "mode", .type = BC_TOML_CHOICE, .choices = modes, BC_TOML_AT(struct opts, mode)},
    {.key = "tags",
     .type = BC_TOML_STRINGS,
     .flags = BC_TOML_ONE_OK | BC_TOML_NONEMPTY,
     .min = 1,
     .max = 3,
     BC_TOML_AT(struct opts, tags)},
    {.key = "owned", .type = BC_TOML_STRING, .flags = BC_TOML_COPY, BC_TOML_AT(struct opts, owned)},
    {.key = "sub", .type = BC_TOML_TABLE},
};

struct warned {
	int n;
	char last[512];
};

static void collect(void *arg, const char *msg)
{
	struct warned *w = arg;

	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", msg);
}

/* Reads [t] of text into o; rc, with err and the problem. */
static int read_opts(const char *text, struct opts *o, struct warned *w, char *err,
                     enum bc_toml_problem *problem)
{
	struct bc_toml_read r = {.table = "t",
	                         .label = "[t] ",
	                         .fields = opt_fields,
	                         .n_fields = sizeof(opt_fields) / sizeof(opt_fields[0]),
	                         .warn = collect,
	                         .warn_arg = w};
	bc_toml *t = parse_ok(text);
	int rc;

	rc = bc_toml_read_table(t, &r, o, err, 512);
	*problem = r.problem;
	/* borrowed strings die with t: the tests look at them before */
	if (rc == 0 && o->name)
		assert_true(strlen(o->name) > 0);
	bc_toml_free(t);
	return rc;
}

/* text is refused with exactly want, for the reason p. */
static void table_bad(const char *text, enum bc_toml_problem p, const char *want)
{
	struct opts o = {0};
	struct warned w = {0};
	enum bc_toml_problem got;
	char err[512];

	assert_int_equal(read_opts(text, &o, &w, err, &got), BC_ERR_CONFIG);
	if (strcmp(err, want) != 0)
		fail_msg("got \"%s\", want \"%s\"", err, want);
	assert_int_equal(got, p);
	free(o.owned);
}

static void test_table_reads_each_type(void **state)
{
	struct opts o = {.count = 7, .small = 9, .wait_ms = 3000, .mode = 2};
	struct warned w = {0};
	enum bc_toml_problem p;
	char err[512];

	(void)state;
	assert_non_null(o.owned = strdup("default"));
	assert_int_equal(read_opts("[t]\nname = \"n\"\nsmall = 4000000000\non = true\n"
	                           "mode = \"on\"\ntags = \"one\"\nowned = \"mine\"\n"
	                           "wait_seconds = 5\n[t.sub]\nanything = 1\n",
	                           &o, &w, err, &p),
	                 0);
	assert_int_equal(p, BC_TOML_OK);
	assert_int_equal(o.count, 7); /* absent: the default stays */
	assert_int_equal(o.small, 4000000000u);
	assert_int_equal(o.wait_ms, 5000);
	assert_int_equal(o.on, 1);
	assert_int_equal(o.mode, 1);
	assert_int_equal(o.tags.n, 1);
	assert_ptr_equal(o.tags.v, o.tags.one);
	assert_null(o.tags.v[1]);
	assert_string_equal(o.owned, "mine"); /* the default was freed (ASan says so) */
	assert_int_equal(w.n, 0);
	free(o.owned);

	/* an absent table reads as empty: its required keys are missing */
	memset(&o, 0, sizeof(o));
	table_bad("other = 1\n", BC_TOML_MISSING, "[t] name: required: a string");
}

static void test_table_refusals(void **state)
{
	(void)state;
	table_bad("[t]\nname = \"n\"\ncolour = 1\n", BC_TOML_UNKNOWN_KEY,
	          "[t] colour: unknown key (known: name, count, small, wait_seconds, on, mode, "
	          "tags, owned, [sub])");
	table_bad("[t]\nname = \"n\"\n[t.other]\n", BC_TOML_UNKNOWN_TABLE,
	          "[t] other: unknown table (known: name, count, small, wait_seconds, on, mode, "
	          "tags, owned, [sub])");
	table_bad("[t]\nname = \"n\"\ncount = \"3\"\n", BC_TOML_WRONG_TYPE,
	          "[t] count: expected an integer from -5 to 100");
	table_bad("[t]\nname = \"n\"\ncount = 101\n", BC_TOML_OUT_OF_RANGE,
	          "[t] count: expected an integer from -5 to 100");
	table_bad("[t]\nname = \"n\"\ncount = -6\n", BC_TOML_OUT_OF_RANGE,
	          "[t] count: expected an integer from -5 to 100");
	table_bad("[t]\nname = \"n\"\nwait_seconds = 61\n", BC_TOML_OUT_OF_RANGE,
	          "[t] wait_seconds: expected 1 to 60 (seconds)");
	table_bad("[t]\nname = \"n\"\non = \"yes\"\n", BC_TOML_WRONG_TYPE,
	          "[t] on: expected true or false");
	table_bad("[t]\nname = \"n\"\nmode = \"sometimes\"\n", BC_TOML_NOT_A_CHOICE,
	          "[t] mode: expected \"off\", \"on\" or \"auto\"");
	table_bad("[t]\nname = \"n\"\nmode = 1\n", BC_TOML_WRONG_TYPE,
	          "[t] mode: expected \"off\", \"on\" or \"auto\"");
	table_bad("[t]\ncount = 1\n", BC_TOML_MISSING, "[t] name: required: a string");
	table_bad("[t]\nname = \"\"\n", BC_TOML_EMPTY,
	          "[t] name: may not be empty: expected a string");
	table_bad("[t]\nname = \"n\"\ntags = []\n", BC_TOML_OUT_OF_RANGE,
	          "[t] tags: expected a string or an array of 1 to 3 strings");
	table_bad("[t]\nname = \"n\"\ntags = [\"a\", \"b\", \"c\", \"d\"]\n", BC_TOML_OUT_OF_RANGE,
	          "[t] tags: expected a string or an array of 1 to 3 strings");
	table_bad("[t]\nname = \"n\"\ntags = [\"a\", \"\"]\n", BC_TOML_EMPTY,
	          "[t] tags: may not be empty: expected a string or an array of 1 to 3 strings");
	table_bad("[t]\nname = \"n\"\ntags = 3\n", BC_TOML_WRONG_TYPE,
	          "[t] tags: expected a string or an array of 1 to 3 strings");
	table_bad("[t]\nname = \"n\"\nsub = 1\n", BC_TOML_UNKNOWN_KEY,
	          "[t] sub: unknown key (known: name, count, small, wait_seconds, on, mode, "
	          "tags, owned, [sub])");
	table_bad("[t]\nname = 5\n", BC_TOML_WRONG_TYPE, "[t] name: expected a string");
}

static void test_table_old_name(void **state)
{
	struct opts o = {0};
	struct warned w = {0};
	enum bc_toml_problem p;
	char err[512];

	(void)state;
	/* the old name is read in its own unit, with a warning that names the new one */
	assert_int_equal(read_opts("[t]\nname = \"n\"\nwait_ms = 1500\n", &o, &w, err, &p), 0);
	assert_int_equal(o.wait_ms, 1500);
	assert_int_equal(w.n, 1);
	assert_string_equal(w.last, "[t] wait_ms is deprecated: write wait_seconds instead, in the "
	                            "new key's unit; wait_ms is read until the next release");
	/* its old bounds, in its old unit */
	table_bad("[t]\nname = \"n\"\nwait_ms = 999\n", BC_TOML_OUT_OF_RANGE,
	          "[t] wait_ms: expected an integer from 1000 to 60000");
	table_bad("[t]\nname = \"n\"\nwait_ms = 60001\n", BC_TOML_OUT_OF_RANGE,
	          "[t] wait_ms: expected an integer from 1000 to 60000");
	table_bad("[t]\nname = \"n\"\nwait_ms = 9223372036854775807\n", BC_TOML_OUT_OF_RANGE,
	          "[t] wait_ms: expected an integer from 1000 to 60000");
	/* both names: which one was meant? */
	table_bad("[t]\nname = \"n\"\nwait_ms = 1500\nwait_seconds = 2\n", BC_TOML_BOTH_NAMES,
	          "[t] wait_ms: set only wait_seconds (wait_ms is its former name)");
	/* the new name, no warning */
	memset(&w, 0, sizeof(w));
	assert_int_equal(read_opts("[t]\nname = \"n\"\nwait_seconds = 2\n", &o, &w, err, &p), 0);
	assert_int_equal(o.wait_ms, 2000);
	assert_int_equal(w.n, 0);
}

static void test_table_known_and_null(void **state)
{
	static const struct bc_toml_field any[] = {{.key = "*", .type = BC_TOML_TABLE}};
	struct bc_toml_read r = {.table = "", .label = "x: ", .fields = any, .n_fields = 1};
	struct opts o = {0};
	char known[32], err[256];
	bc_toml *t;

	(void)state;
	bc_toml_known(opt_fields, sizeof(opt_fields) / sizeof(opt_fields[0]), known, sizeof(known));
	assert_string_equal(known, "name, count, small, wait_second"); /* truncated */
	/* any sub-table, no key */
	t = parse_ok("[a]\n[b]\n");
	assert_int_equal(bc_toml_read_table(t, &r, &o, err, sizeof(err)), 0);
	bc_toml_free(t);
	t = parse_ok("k = 1\n");
	assert_int_equal(bc_toml_read_table(t, &r, &o, err, sizeof(err)), BC_ERR_CONFIG);
	assert_string_equal(err, "x: k: unknown key (known: [<name>])");
	bc_toml_free(t);
	/* no document: only the required keys matter */
	r.fields = opt_fields;
	r.n_fields = sizeof(opt_fields) / sizeof(opt_fields[0]);
	assert_int_equal(bc_toml_read_table(NULL, &r, &o, err, sizeof(err)), BC_ERR_CONFIG);
	assert_int_equal(r.problem, BC_TOML_MISSING);
	r.n_fields = 2;
	r.fields = opt_fields + 1;
	assert_int_equal(bc_toml_read_table(NULL, &r, &o, NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_value_types),
	    cmocka_unit_test(test_escapes),
	    cmocka_unit_test(test_wrong_type_and_missing),
	    cmocka_unit_test(test_tables),
	    cmocka_unit_test(test_keys_listing),
	    cmocka_unit_test(test_arrays),
	    cmocka_unit_test(test_long_array),
	    cmocka_unit_test(test_edge_documents),
	    cmocka_unit_test(test_syntax_errors),
	    cmocka_unit_test(test_unsupported),
	    cmocka_unit_test(test_integer_errors),
	    cmocka_unit_test(test_array_errors),
	    cmocka_unit_test(test_duplicates),
	    cmocka_unit_test(test_bytes_refused),
	    cmocka_unit_test(test_size_bound),
	    cmocka_unit_test(test_too_many_keys),
	    cmocka_unit_test(test_err_may_be_null),
	    cmocka_unit_test(test_load),
	    cmocka_unit_test(test_load_too_big),
	    cmocka_unit_test(test_table_reads_each_type),
	    cmocka_unit_test(test_table_refusals),
	    cmocka_unit_test(test_table_old_name),
	    cmocka_unit_test(test_table_known_and_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
