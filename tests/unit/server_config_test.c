/* server.toml (src/server/config.c), read through the shared table reader: the
 * defaults, each mistake an error naming the key and what is allowed (an unknown key
 * with the known ones), and the former names request_timeout and max_queue_wait_ms
 * still read with a warning naming the new ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bct_capture.h"
#include "bctest.h"
#include "server/config.h"

static char dir[256], path[512];

static int setup(void **state)
{
	char *d;

	(void)state;
	if ((d = bct_tmpdir()) == NULL)
		return -1;
	snprintf(dir, sizeof(dir), "%s", d);
	snprintf(path, sizeof(path), "%s/server.toml", dir);
	free(d);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bct_rmrf(dir);
	return 0;
}

static int load(const char *text, struct bc_server_config *c, char *err, size_t errlen)
{
	assert_int_equal(bct_write_file(path, text), 0);
	assert_int_equal(chmod(path, 0600), 0);
	err[0] = '\0';
	return bc_server_config_load(path, c, err, errlen);
}

static void refused(const char *text, const char *want)
{
	struct bc_server_config c;
	char err[1024], full[1200];

	assert_int_equal(load(text, &c, err, sizeof(err)), BC_ERR_CONFIG);
	snprintf(full, sizeof(full), "%s: %s", path, want);
	if (strncmp(err, full, strlen(full)) != 0)
		fail_msg("got \"%s\", want \"%s\"", err, full);
	bc_server_config_free(&c);
}

static void test_defaults_and_values(void **state)
{
	struct bc_server_config c;
	char err[1024], want[600];

	(void)state;
	assert_int_equal(load("", &c, err, sizeof(err)), 0);
	assert_string_equal(c.listen, "127.0.0.1:8080");
	assert_string_equal(c.public_url, "http://127.0.0.1:8080");
	snprintf(want, sizeof(want), "%s/bc.db", dir);
	assert_string_equal(c.database, want);
	assert_int_equal(c.threads, 8);
	assert_int_equal(c.request_timeout_s, 10);
	assert_int_equal(c.max_queue_wait_ms, 3000);
	assert_int_equal(c.event_retention_days, 90);
	assert_int_equal(c.audit_retention_days, 400);
	assert_int_equal(c.prune_interval_s, 3600);
	assert_int_equal(c.log_level, 1);
	assert_null(c.on_refusal);
	assert_null(c.tls_cert);
	bc_server_config_free(&c);

	assert_int_equal(load("listen = \"[::1]:9\"\nthreads = 2\nmax_body = 2048\n"
	                      "request_timeout_seconds = 30\nmax_queue_wait_seconds = 0\n"
	                      "log_level = \"error\"\nlog_format = \"json\"\n"
	                      "plugins = [\"p.so\", \"/abs/q.so\"]\non_refusal = \"\"\n"
	                      "access_log = true\nunauthenticated_body_budget = 1099511627776\n"
	                      "[tls]\ncert = \"c.pem\"\nkey = \"k.pem\"\n"
	                      "[attestors.x509pop]\n",
	                      &c, err, sizeof(err)),
	                 0);
	assert_int_equal(c.threads, 2);
	assert_int_equal(c.max_body, 2048);
	assert_int_equal(c.request_timeout_s, 30);
	assert_int_equal(c.max_queue_wait_ms, 0);
	assert_int_equal(c.log_level, 3);
	assert_int_equal(c.log_format, 1);
	assert_int_equal(c.access_log, 1);
	assert_int_equal(c.unauth_body_budget, (size_t)1 << 40);
	assert_null(c.on_refusal);
	assert_int_equal(c.n_plugins, 2);
	snprintf(want, sizeof(want), "%s/p.so", dir);
	assert_string_equal(c.plugins[0], want);
	assert_string_equal(c.plugins[1], "/abs/q.so");
	snprintf(want, sizeof(want), "%s/c.pem", dir);
	assert_string_equal(c.tls_cert, want);
	assert_string_equal(c.public_url, "https://[::1]:9");
	bc_server_config_free(&c);
}

static void test_each_mistake(void **state)
{
	(void)state;
	refused("colour = 1\n", "colour: unknown key (known: listen, public_url, database, ");
	refused("[tls]\ncert = \"c\"\nkey = \"k\"\nchain = \"x\"\n",
	        "tls.chain: unknown key (known: cert, key)");
	refused("[metrics]\n", "metrics: unknown table (known: listen, ");
	refused("[attestors]\ntpm = 1\n", "attestors.tpm: unknown key (known: [attestors.<id>])");
	refused("threads = \"8\"\n", "threads: expected an integer from 1 to 256");
	refused("threads = 0\n", "threads: expected an integer from 1 to 256");
	refused("audit_retention_days = -1\n", "audit_retention_days: expected an integer");
	refused("prune_interval_seconds = 700000\n", "prune_interval_seconds: expected");
	refused("max_queue_wait_seconds = 61\n",
	        "max_queue_wait_seconds: expected 0 to 60 (seconds)");
	refused("log_level = \"loud\"\n",
	        "log_level: expected \"debug\", \"info\", \"warn\" or \"error\"");
	refused("access_log = 1\n", "access_log: expected true or false");
	refused("plugins = \"p.so\"\n", "plugins: expected an array of paths");
	refused("listen = 8080\n", "listen: expected a string");
	refused("[tls]\ncert = \"c\"\n", "[tls]: set both cert and key, or neither");
	refused("request_timeout = 5\nrequest_timeout_seconds = 5\n",
	        "request_timeout: set only request_timeout_seconds");
}

static void test_old_names(void **state)
{
	struct bc_server_config c;
	struct bct_capture cap;
	char err[1024];
	int rc;

	(void)state;
	assert_int_equal(bct_capture_start(&cap), 0);
	rc = load("request_timeout = 20\nmax_queue_wait_ms = 500\n", &c, err, sizeof(err));
	bct_capture_end(&cap);
	assert_int_equal(rc, 0);
	assert_int_equal(c.request_timeout_s, 20);
	assert_int_equal(c.max_queue_wait_ms, 500);
	bc_server_config_free(&c);
	if (strstr(cap.text, "request_timeout is deprecated: write request_timeout_seconds "
	                     "instead;") == NULL ||
	    strstr(cap.text, "max_queue_wait_ms is deprecated: write max_queue_wait_seconds "
	                     "instead, in the new key's unit") == NULL)
		fail_msg("no warning naming the new keys: %s", cap.text);
	refused("max_queue_wait_ms = 60001\n",
	        "max_queue_wait_ms: expected an integer from 0 to 60000");
	refused("request_timeout = 0\n", "request_timeout: expected an integer from 1 to 3600");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults_and_values),
	    cmocka_unit_test(test_each_mistake),
	    cmocka_unit_test(test_old_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
