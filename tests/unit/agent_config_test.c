/* bcd's config.toml (src/agent/config.c), read through the shared table reader: a
 * complete file loads (paths from the file's directory), and each mistake is one line
 * in bcd's words naming the file and the key (an unknown one with the known ones). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"

#define TOP                                                                                        \
	"server = \"https://cp:8443\"\njoin_signing_key_id = \"k\"\njoin_signing_key = \"s\"\n"    \
	"join_encryption_key = \"e\"\ntrust_domain = \"bc.test\"\nca_bundle = \"ca.pem\"\n"        \
	"data_dir = \"/var/lib/bcd\"\n"

static char dir[] = "/tmp/bc_agent_config_XXXXXX", path[128];

static int setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/config.toml", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(dir);
	return 0;
}

static int load(const char *text, struct bcd_config *c, struct bcd_msg *m)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	m->text[0] = '\0';
	return bcd_config_load(path, c, m);
}

static void refused(const char *text, const char *want)
{
	struct bcd_config c;
	struct bcd_msg m;
	char full[600];

	assert_int_equal(load(text, &c, &m), BC_ERR_CONFIG);
	snprintf(full, sizeof(full), "%s: %s", path, want);
	if (strncmp(m.text, full, strlen(full)) != 0)
		fail_msg("got \"%s\", want \"%s\"", m.text, full);
}

static void test_loads(void **state)
{
	struct bcd_config c;
	struct bcd_msg m;
	char want[256];

	(void)state;
	if (load(TOP "[site]\nid = \"s\"\nlisten = \"l\"\nkernel = \"k\"\ninitrd = \"i\"\n"
	             "lease_ttl_seconds = \"30\"\nmax_connections = 32\n"
	             "max_connections_per_client = 2\nheader_timeout_seconds = 3\n"
	             "request_timeout_seconds = 10\n[fakehw]\nclaims = \"\"\n[helper]\n",
	         &c, &m) != 0)
		fail_msg("refused: %s", m.text);
	snprintf(want, sizeof(want), "%s/ca.pem", dir);
	assert_string_equal(c.ca_bundle, want);
	assert_string_equal(c.site_lease_ttl, "30");
	assert_int_equal(c.site_max_conns, 32);
	assert_int_equal(c.site_max_per_client, 2);
	assert_int_equal(c.site_head_ms, 3000);
	assert_int_equal(c.site_request_ms, 10000);
	assert_true(c.has_site && c.has_fakehw && c.has_helper && !c.has_cloud);
	assert_null(c.fakehw_claims);
	assert_string_equal(c.helper_user, BCD_HELPER_USER);
	bcd_config_free(&c);
}

static void test_each_mistake(void **state)
{
	(void)state;
	refused("bogus = \"x\"\n" TOP,
	        "unknown key bogus (known: server, join_signing_key_id, join_signing_key, "
	        "join_encryption_key, trust_domain, ca_bundle, data_dir, [fakehw], [cloud], "
	        "[site], [helper]); remove it (see docs/agent.md)");
	refused(TOP "[cloud]\nprovider = \"gcp\"\nregion = \"x\"\n",
	        "unknown key cloud.region (known: provider, audience, metadata_url, ");
	refused(TOP "[extra]\n", "unknown table [extra] (known: server, ");
	refused(TOP "[site.more]\n", "unknown table [site.more] (known: id, listen, ");
	refused("server = \"s\"\n", "join_signing_key_id is missing; add it");
	refused(TOP "[site]\nid = \"s\"\nlisten = \"l\"\nkernel = \"k\"\n",
	        "site.initrd is missing");
	refused(TOP "[site]\nid = \"\"\n", "site.id is empty; set it");
	refused(TOP "[helper]\nuser = 0\n", "helper.user must be a string");
	/* bcd site's limits: numbers within their bounds, named with them */
#define SITE TOP "[site]\nid = \"s\"\nlisten = \"l\"\nkernel = \"k\"\ninitrd = \"i\"\n"
	refused(SITE "max_connections = 0\n", "site.max_connections: expected ");
	refused(SITE "max_connections = 1025\n", "site.max_connections: expected ");
	refused(SITE "max_connections = \"8\"\n", "site.max_connections: expected ");
	refused(SITE "max_connections_per_client = 0\n",
	        "site.max_connections_per_client: expected ");
	refused(SITE "header_timeout_seconds = 0\n", "site.header_timeout_seconds: expected ");
	refused(SITE "header_timeout_seconds = 61\n", "site.header_timeout_seconds: expected ");
	refused(SITE "request_timeout_seconds = 301\n", "site.request_timeout_seconds: expected ");
#undef SITE
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loads),
	    cmocka_unit_test(test_each_mistake),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
