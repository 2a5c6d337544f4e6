/* bc/wire.h against the contract: each constant is the literal DESIGN.md and the spec
 * give, and each RPC path names a method of the JoinService in join.proto, so a typo
 * on either side of the wire fails here rather than in a refused join. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"

/* "/" + the service's full name + "/" + the method, as Connect routes a unary call */
static void assert_connect_path(const char *path, const char *method)
{
	const ProtobufCServiceDescriptor *d = &bettercompute__join__v1__join_service__descriptor;
	char want[256];

	assert_non_null(protobuf_c_service_descriptor_get_method_by_name(d, method));
	snprintf(want, sizeof(want), "/%s/%s", d->name, method);
	assert_string_equal(path, want);
}

static void test_paths(void **state)
{
	(void)state;
	assert_string_equal(BC_WIRE_JOIN_SERVICE, "/bettercompute.join.v1.JoinService/");
	assert_string_equal(BC_WIRE_PATH_JOIN, "/bettercompute.join.v1.JoinService/Join");
	assert_string_equal(BC_WIRE_PATH_RENEW, "/bettercompute.join.v1.JoinService/Renew");
	assert_connect_path(BC_WIRE_PATH_JOIN, "Join");
	assert_connect_path(BC_WIRE_PATH_RENEW, "Renew");
	assert_string_equal(BC_WIRE_CONTENT_TYPE, "application/proto");
}

static void test_crypto_strings(void **state)
{
	(void)state;
	assert_string_equal(BC_WIRE_SIG_DOMAIN, "bettercompute/v1");
	assert_string_equal(BC_WIRE_TOKEN_INFO, "bettercompute join token v1");
	/* the purposes stay in bc/crypto.h; they are wire constants all the same */
	assert_string_equal(BC_PURPOSE_JOIN_RESPONSE, "join-response");
	assert_string_equal(BC_PURPOSE_SECRET_RESPONSE, "secret-response");
	assert_string_equal(BC_PURPOSE_X509POP, "x509pop");
	assert_string_equal(BC_PURPOSE_RENEW, "renew");
	assert_string_equal(BC_PURPOSE_SECRET_REQUEST, "secret-request");
	assert_string_equal(BC_PURPOSE_DISCOVERY_ASSERTION, "discovery-assertion");
}

static void test_identity_strings(void **state)
{
	(void)state;
	assert_string_equal(BC_WIRE_TOKEN_PREFIX, "bct_");
	assert_string_equal(BC_WIRE_CSR_CN, "bettercompute node");
	assert_string_equal(BC_WIRE_TPM_AK_URN_SCHEME, "urn:bc:tpm-ak:");
	assert_string_equal(BC_WIRE_TPM_AK_URN_SHA256, "urn:bc:tpm-ak:sha256:");
	/* a reader matching the scheme sees every statement a writer issues */
	assert_int_equal(strncmp(BC_WIRE_TPM_AK_URN_SHA256, BC_WIRE_TPM_AK_URN_SCHEME,
	                         strlen(BC_WIRE_TPM_AK_URN_SCHEME)),
	                 0);
	assert_string_equal(BC_ROLE_NODE, "node");
	assert_string_equal(BC_ROLE_SITE, "site");
	assert_string_equal(BC_ROLE_RAMDISK, "ramdisk");
	assert_string_equal(BC_ROLE_NODE_TENANT, "node-tenant");
}

/* The attestor ids: what JoinRequest.attestor carries and [attestors.<id>] names. */
static void test_attestor_ids(void **state)
{
	(void)state;
	assert_string_equal(BC_WIRE_ATTESTOR_JOIN_TOKEN, "join-token");
	assert_string_equal(BC_WIRE_ATTESTOR_TPM, "tpm");
	assert_string_equal(BC_WIRE_ATTESTOR_X509POP, "x509pop");
	assert_string_equal(BC_WIRE_ATTESTOR_PROVISIONED, "provisioned");
	assert_string_equal(BC_WIRE_ATTESTOR_CLOUD_IID, "cloud-iid");
	assert_string_equal(BC_WIRE_ATTESTOR_DISCOVERY, "discovery");
}

static void test_limits(void **state)
{
	(void)state;
	assert_int_equal(BC_WIRE_TOKEN_MAX, 512);
	assert_int_equal(BC_WIRE_MACS_MAX, 64);
	assert_int_equal(BC_WIRE_CHALLENGE_MAX, 64 * 1024);
	/* a minted token ("bct_" + "tok_" + 26 + "_" + 43) fits with room to spare */
	assert_true(strlen(BC_WIRE_TOKEN_PREFIX) + 4 + 26 + 1 + 43 < BC_WIRE_TOKEN_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_crypto_strings),
	    cmocka_unit_test(test_identity_strings),
	    cmocka_unit_test(test_attestor_ids),
	    cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
