/* The console's static route: the embedded files and nothing else. Every file of web/
 * is in the table with its type; "/", "/console" and "/console/" are index.html; any path
 * that is not exactly an embedded file's name (dot segments, encoded or not, doubled
 * slashes, case, a long path, a NUL-free prefix of a name) is 404; methods other than
 * GET and HEAD are 405. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/console.h"

static int serve(const char *method, const char *path, struct bc_http_response *resp)
{
	struct bc_http_request req = {.method = method, .path = path};

	memset(resp, 0, sizeof(*resp));
	bc_console_serve(&req, resp);
	return resp->status;
}

static const struct bc_console_file *file(const char *path)
{
	for (size_t i = 0; i < bc_console_files_count; i++)
		if (strcmp(bc_console_files[i].path, path) == 0)
			return &bc_console_files[i];
	return NULL;
}

/* the bytes of web/NAME in the source tree */
static char *source(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/web/%s", BC_SOURCE_DIR, name);
	assert_non_null(f = fopen(path, "rb"));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	assert_non_null(buf = malloc((size_t)n + 1));
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void test_files(void **state)
{
	static const char *const names[] = {"index.html", "console.js", "console.css"};
	static const char *const types[] = {"text/html; charset=utf-8",
	                                    "text/javascript; charset=utf-8",
	                                    "text/css; charset=utf-8"};
	struct bc_http_response r;
	(void)state;

	for (size_t i = 0; i < 3; i++) {
		char path[64];
		size_t len;
		char *want = source(names[i], &len);

		snprintf(path, sizeof(path), "/console/%s", names[i]);
		assert_non_null(file(path));
		assert_int_equal(serve("GET", path, &r), 200);
		assert_string_equal(r.content_type, types[i]);
		assert_int_equal(r.body_len, len);
		assert_memory_equal(r.body, want, len);
		free(r.body);
		assert_int_equal(serve("HEAD", path, &r), 200);
		free(r.body);
		free(want);
	}
	for (size_t i = 0; i < bc_console_files_count; i++)
		assert_int_equal(strncmp(bc_console_files[i].path, "/console/", 9), 0);
}

static void test_index(void **state)
{
	struct bc_http_response r;
	const struct bc_console_file *f = file("/console/index.html");
	(void)state;

	assert_non_null(f);
	assert_int_equal(serve("GET", "/console", &r), 200);
	assert_int_equal(r.body_len, f->len);
	free(r.body);
	assert_int_equal(serve("GET", "/console/", &r), 200);
	assert_int_equal(r.body_len, f->len);
	free(r.body);
	/* the server's root is the console's page too (not a JSON 404) */
	assert_int_equal(serve("GET", "/", &r), 200);
	assert_int_equal(r.body_len, f->len);
	assert_memory_equal(r.body, f->data, f->len);
	free(r.body);
	assert_int_equal(serve("POST", "/", &r), 405);
	free(r.body);
}

static void test_owns(void **state)
{
	(void)state;
	assert_true(bc_console_owns("/console"));
	assert_true(bc_console_owns("/console/"));
	assert_true(bc_console_owns("/console/x"));
	assert_true(bc_console_owns("/"));
	assert_false(bc_console_owns("//"));
	assert_false(bc_console_owns("/consolex"));
	assert_false(bc_console_owns("/consol"));
	assert_false(bc_console_owns("/v1/console"));
	assert_false(bc_console_owns(""));
}

static void test_not_found(void **state)
{
	static const char *const paths[] = {
	    "/console/../healthz",       "/console/../../etc/passwd",
	    "/console/%2e%2e/healthz",   "/console/%2E%2E/%2e%2e/etc/passwd",
	    "/console/..%2fhealthz",     "/console/./index.html",
	    "/console//index.html",      "/console/index.html/",
	    "/console/index.html/..",    "/console/INDEX.HTML",
	    "/console/index.htm",        "/console/index.html%00",
	    "/console/console.js.map",   "/console/web/index.html",
	    "/console/\\..\\index.html",
	};
	struct bc_http_response r;
	char *longpath;
	(void)state;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(serve("GET", paths[i], &r), 404);
		assert_string_equal(r.content_type, "application/json");
		free(r.body);
	}
	assert_non_null(longpath = malloc(70000));
	memcpy(longpath, "/console/", 9);
	memset(longpath + 9, 'a', 70000 - 10);
	longpath[70000 - 1] = '\0';
	assert_int_equal(serve("GET", longpath, &r), 404);
	free(r.body);
	/* a long run of dot segments ending at a real name */
	for (size_t i = 9; i + 3 < 70000 - 20; i += 3)
		memcpy(longpath + i, "../", 3);
	strcpy(longpath + 70000 - 20, "index.html");
	assert_int_equal(serve("GET", longpath, &r), 404);
	free(r.body);
	free(longpath);
}

static void test_methods(void **state)
{
	static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "get"};
	struct bc_http_response r;
	(void)state;

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		assert_int_equal(serve(methods[i], "/console/index.html", &r), 405);
		free(r.body);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_files),   cmocka_unit_test(test_index),
	    cmocka_unit_test(test_owns),    cmocka_unit_test(test_not_found),
	    cmocka_unit_test(test_methods),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
