/* [attestors.discovery] allowed_kinds in server.toml (src/attest/discovery.c): good
 * lists load, and each mistake an operator can make is an error that names the key
 * and the kind at fault. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "bct_config.h"

static const struct bct_config K = {.attestor = bc_attestor_discovery,
                                    .table = "attestors.discovery"};

static void loads(const char *kinds)
{
	char text[4096];

	snprintf(text, sizeof(text), "[attestors.discovery]\nallowed_kinds = %s\n", kinds);
	bct_config_loads(&K, text);
}

/* Refused with an error naming the key, and holding want. */
static void refused(const char *kinds, const char *want)
{
	char text[4096];

	snprintf(text, sizeof(text), "[attestors.discovery]\nallowed_kinds = %s\n", kinds);
	bct_config_refused(&K, text, "[attestors.discovery] allowed_kinds: ");
	bct_config_refused(&K, text, want);
}

static void test_good_lists_load(void **state)
{
	(void)state;
	loads("[\"disk.wipe\"]");
	loads("[\"inventory.refresh\", \"diag.*\", \"deploy.os-image\", \"boot.kexec_v2\"]");
	loads("[\"reboot\"]");
	/* 32 kinds, the longest of 64 characters */
	char list[4096] = "[", kind[80];
	size_t n = 1;
	for (int i = 0; i < 32; i++) {
		memset(kind, 'a', 62);
		snprintf(kind + 62, sizeof(kind) - 62, "%02d", i);
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s\"%s\"", i ? "," : "", kind);
	}
	snprintf(list + n, sizeof(list) - n, "]");
	loads(list);
	/* with no allowed_kinds the table loads with the defaults */
	bct_config_loads(&K, "[attestors.discovery]\napproval = \"never\"\n");
}

static void test_each_mistake_names_the_key(void **state)
{
	(void)state;
	refused("\"disk.wipe\"", "expected an array of 1 to 32 command kinds");
	refused("[]", "expected an array of 1 to 32 command kinds");
	refused("true", "expected an array of 1 to 32 command kinds");
	refused("[\"Disk.wipe\"]", "\"Disk.wipe\" is not a command kind");
	refused("[\"disk..wipe\"]", "\"disk..wipe\" is not a command kind");
	refused("[\".disk\"]", "\".disk\" is not a command kind");
	refused("[\"disk.\"]", "\"disk.\" is not a command kind");
	refused("[\"*\"]", "\"*\" is not a command kind");
	refused("[\"diag*\"]", "\"diag*\" is not a command kind");
	refused("[\"diag.*.x\"]", "\"diag.*.x\" is not a command kind");
	refused("[\"diag.**\"]", "\"diag.**\" is not a command kind");
	refused("[\"disk wipe\"]", "\"disk wipe\" is not a command kind");
	refused("[\"disk.-wipe\"]", "\"disk.-wipe\" is not a command kind");
	refused("[\"disk.wipe_\"]", "\"disk.wipe_\" is not a command kind");
	refused("[\"disk\\\"x\"]", "is not a command kind");
	refused("[\"ok\", \"\"]", "\"\" is not a command kind");
	/* longer than 64 characters */
	char list[256] = "[\"", *p = list + 2;
	memset(p, 'a', 65);
	snprintf(p + 65, sizeof(list) - 67, "\"]");
	refused(list, "at most 64 characters");
	/* more than 32 */
	char many[1024] = "[";
	size_t n = 1;
	for (int i = 0; i < 33; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%s\"k%d\"", i ? "," : "", i);
	snprintf(many + n, sizeof(many) - n, "]");
	refused(many, "expected an array of 1 to 32 command kinds");
}

/* hardware_key: none or the boot entry's product UUID; a serial, which nobody
 * proves, is no choice */
static void test_hardware_key_names_a_proven_source(void **state)
{
	(void)state;

	bct_config_loads(&K, "[attestors.discovery]\nhardware_key = \"product-uuid\"\n");
	bct_config_loads(&K, "[attestors.discovery]\nhardware_key = \"none\"\n");
	bct_config_refused(&K, "[attestors.discovery]\nhardware_key = \"serial\"\n",
	                   "hardware_key");
	bct_config_refused(&K, "[attestors.discovery]\nhardware_key = \"serial\"\n",
	                   "a serial is only the machine's claim");
}

/* max_age_seconds, the spec's maxAgeMs: up to the 15 minutes the wire fixes; above
 * that the server does not start */
static void test_max_age_is_at_most_15_minutes(void **state)
{
	(void)state;

	bct_config_loads(&K, "[attestors.discovery]\nmax_age_seconds = 900\n");
	bct_config_loads(&K, "[attestors.discovery]\nmax_age_seconds = 60\n");
	bct_config_refused(&K, "[attestors.discovery]\nmax_age_seconds = 901\n",
	                   "[attestors.discovery] max_age_seconds: ");
	bct_config_refused(&K, "[attestors.discovery]\nmax_age_seconds = 901\n",
	                   "1 to 900 (an assertion admits at most 15 minutes");
	bct_config_refused(&K, "[attestors.discovery]\nmax_age_seconds = 0\n", "1 to 900");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_lists_load),
	    cmocka_unit_test(test_each_mistake_names_the_key),
	    cmocka_unit_test(test_hardware_key_names_a_proven_source),
	    cmocka_unit_test(test_max_age_is_at_most_15_minutes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
