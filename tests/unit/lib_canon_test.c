/* bc/canon.h: the one shape check for product UUIDs and MAC addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "bc/canon.h"

static void uuid_ok(const char *in, const char *want)
{
	char out[BC_UUID_LEN + 1];

	assert_int_equal(bc_uuid_canon(in, out), 0);
	assert_string_equal(out, want);
}

static void uuid_bad(const char *in)
{
	char out[BC_UUID_LEN + 1];

	memset(out, 'x', sizeof(out));
	assert_int_equal(bc_uuid_canon(in, out), BC_ERR_INVALID);
	assert_string_equal(out, "");
}

static void mac_ok(const char *in, const char *want)
{
	char out[BC_MAC_LEN + 1];

	assert_int_equal(bc_mac_canon(in, out), 0);
	assert_string_equal(out, want);
}

static void mac_bad(const char *in)
{
	char out[BC_MAC_LEN + 1];

	memset(out, 'x', sizeof(out));
	assert_int_equal(bc_mac_canon(in, out), BC_ERR_INVALID);
	assert_string_equal(out, "");
}

static void test_uuid(void **state)
{
	(void)state;
	uuid_ok("0123abcd-4567-89ab-cdef-0123456789ab", "0123abcd-4567-89ab-cdef-0123456789ab");
	uuid_ok("0123ABCD-4567-89AB-CDEF-0123456789AB", "0123abcd-4567-89ab-cdef-0123456789ab");
	uuid_ok("6B1D0c3e-2222-4000-8000-000000000002", "6b1d0c3e-2222-4000-8000-000000000002");
	uuid_bad("{0123abcd-4567-89ab-cdef-0123456789ab}");
	uuid_bad("urn:uuid:0123abcd-4567-89ab-cdef-0123456789ab");
	uuid_bad("0123abcd45678-9ab-cdef-0123456789ab");   /* a hyphen moved */
	uuid_bad("0123abcd-4567-89ab-cdef-0123456789a");   /* short */
	uuid_bad("0123abcd-4567-89ab-cdef-0123456789abc"); /* long */
	uuid_bad("0123abcd-4567-89ab-cdef-0123456789ag");  /* not hex */
	uuid_bad("0123abcd 4567 89ab cdef 0123456789ab");
	uuid_bad("0123abcd4567-89ab-cdef-0123456789ab-");
	uuid_bad("");
	uuid_bad(NULL);
}

static void test_mac(void **state)
{
	(void)state;
	mac_ok("aa:bb:cc:dd:ee:0f", "aa:bb:cc:dd:ee:0f");
	mac_ok("AA:BB:CC:DD:EE:FF", "aa:bb:cc:dd:ee:ff");
	mac_ok("02:00:00:00:00:01", "02:00:00:00:00:01");
	mac_ok("aa-bb-cc-dd-ee-ff", "aa:bb:cc:dd:ee:ff");
	mac_ok("AA-BB-CC-DD-EE-0F", "aa:bb:cc:dd:ee:0f");
	mac_bad("aa-bb:cc-dd-ee-ff");
	mac_bad("aa:bb:cc:dd:ee-ff");
	mac_bad("aa-bb-cc-dd-ee-ff-");
	mac_bad("aabb.ccdd.eeff");
	mac_bad("aa:bb:cc:dd:ee");
	mac_bad("aa:bb:cc:dd:ee:fg");
	mac_bad("aa:bb:cc:dd:ee:ff:");
	mac_bad("aa:bb:cc:dd:ee:ff:00:11"); /* an EUI-64 is no NIC's address here */
	mac_bad("a:bb:cc:dd:ee:fff");
	mac_bad(" aa:bb:cc:dd:ee:f");
	mac_bad("");
	mac_bad(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_uuid),
	    cmocka_unit_test(test_mac),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
