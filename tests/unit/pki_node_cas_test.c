/* The node CA set (bc/pki.h): sealing one key, the checks of bc_node_cas_finish, and
 * what issuing, verifying and the trust bundle take from an installed set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/pki.h"

static const uint8_t secret[32] = {1, 2, 3};
static const uint8_t other[32] = {4, 5, 6};

static void test_seal_key(void **state)
{
	EVP_PKEY *k = NULL, *back = NULL;
	char *text = NULL;

	(void)state;
	assert_int_equal(bc_key_generate(&k), 0);
	assert_int_equal(bc_pki_seal_key(k, secret, &text), 0);
	assert_int_equal(bc_pki_open_key(text, secret, &back), 0);
	assert_int_equal(EVP_PKEY_eq(k, back), 1);
	EVP_PKEY_free(back);
	/* another secret, an altered text, not an envelope */
	assert_int_equal(bc_pki_open_key(text, other, &back), BC_ERR_VERIFY);
	assert_null(back);
	text[strlen(text) - 4] ^= 1;
	assert_int_equal(bc_pki_open_key(text, secret, &back), BC_ERR_VERIFY);
	assert_int_equal(bc_pki_open_key("{}", secret, &back), BC_ERR_VERIFY);
	assert_int_equal(bc_pki_open_key("not json", secret, &back), BC_ERR_VERIFY);
	free(text);
	EVP_PKEY_free(k);
}

/* A set of the bundle's CA (generation 1, active) and a new one in state s. */
static struct bc_node_cas *two(bc_pki *pki, enum bc_ca_state s, int64_t act2, X509 **c2)
{
	struct bc_node_cas *cas = NULL;
	EVP_PKEY *k2 = NULL;

	assert_int_equal(bc_pki_new_node_ca(pki, bc_now_ms(), c2, &k2), 0);
	assert_int_equal(bc_node_cas_new(7, &cas), 0);
	X509_up_ref(pki->node_ca);
	EVP_PKEY_up_ref(pki->node_ca_key);
	struct bc_node_ca one = {.id = 1,
	                         .state = BC_CA_ACTIVE,
	                         .cert = pki->node_ca,
	                         .key = pki->node_ca_key,
	                         .activated_ms = 1000};
	assert_int_equal(bc_node_cas_add(cas, &one), 0);
	X509_up_ref(*c2);
	struct bc_node_ca gen2 = {
	    .id = 2, .state = s, .cert = *c2, .key = k2, .activated_ms = act2};
	assert_int_equal(bc_node_cas_add(cas, &gen2), 0);
	return cas;
}

static void issue(bc_pki *pki, uint8_t **der, size_t *len)
{
	EVP_PKEY *k = NULL;
	char serial[33];
	int64_t na;

	assert_int_equal(bc_key_generate(&k), 0);
	struct bc_node_cert_req r = {.node_id = "node_0123456789abcdefghijklmnop",
	                             .role = BC_ROLE_NODE,
	                             .pub = k,
	                             .not_before_ms = bc_now_ms()};
	assert_int_equal(bc_pki_issue_node_cert(pki, &r, der, len, serial, &na), 0);
	EVP_PKEY_free(k);
}

static int issued_by(X509 *ca, const uint8_t *der, size_t len)
{
	X509 *x = NULL;
	int ok;

	assert_int_equal(bc_x509_from_der(der, len, &x), 0);
	ok = X509_verify(x, X509_get0_pubkey(ca)) == 1;
	X509_free(x);
	return ok;
}

static void test_installed_set(void **state)
{
	bc_pki *pki = NULL;
	X509 *c2 = NULL;
	uint8_t *d1 = NULL, *d2 = NULL;
	size_t l1, l2;
	char *json = NULL, *pem = NULL;

	(void)state;
	assert_int_equal(bc_pki_generate("bc.test", &pki), 0);
	issue(pki, &d1, &l1); /* before any set: the bundle's CA */
	/* prepared: published, signs nothing, verifies nothing of its own */
	struct bc_node_cas *cas = two(pki, BC_CA_PREPARED, 0, &c2);
	assert_int_equal(bc_node_cas_finish(cas), 0);
	bc_pki_node_cas_install(pki, cas);
	issue(pki, &d2, &l2);
	assert_true(issued_by(pki->node_ca, d2, l2));
	assert_int_equal(bc_pki_trust_bundle(pki, 0, &pem), 0);
	assert_non_null(strstr(strstr(pem, "BEGIN CERTIFICATE") + 1, "BEGIN CERTIFICATE"));
	assert_int_equal(bc_pki_trust_bundle(pki, 1, &json), 0);
	assert_non_null(strstr(json, "\"spiffe_sequence\":7"));
	free(pem);
	free(json);
	free(d2);
	X509_free(c2);
	/* active and activated later: it issues, both verify */
	cas = two(pki, BC_CA_ACTIVE, 2000, &c2);
	assert_int_equal(bc_node_cas_finish(cas), 0);
	bc_pki_node_cas_install(pki, cas);
	issue(pki, &d2, &l2);
	assert_true(issued_by(c2, d2, l2));
	assert_int_equal(bc_pki_verify_node_cert(pki, d2, l2), 0);
	assert_int_equal(bc_pki_verify_node_cert(pki, d1, l1), 0);
	assert_int_equal(bc_pki_node_ca_retired(pki, d1, l1), 0);
	free(d2);
	X509_free(c2);
	bc_pki_free(pki);
	free(d1);
}

static void test_finish_refusals(void **state)
{
	bc_pki *pki = NULL;
	X509 *c2 = NULL;
	struct bc_node_cas *cas;

	(void)state;
	assert_int_equal(bc_pki_generate("bc.test", &pki), 0);
	/* no active CA */
	assert_int_equal(bc_node_cas_new(1, &cas), 0);
	assert_int_equal(bc_node_cas_finish(cas), BC_ERR_INVALID);
	bc_node_cas_put(cas);
	/* a key that is not its certificate's */
	cas = two(pki, BC_CA_ACTIVE, 2000, &c2);
	EVP_PKEY_free(cas->ca[1].key);
	assert_int_equal(bc_key_generate(&cas->ca[1].key), 0);
	assert_int_equal(bc_node_cas_finish(cas), BC_ERR_INVALID);
	bc_node_cas_put(cas);
	X509_free(c2);
	/* more than BC_NODE_CAS_MAX */
	assert_int_equal(bc_node_cas_new(1, &cas), 0);
	struct bc_node_ca r = {.state = BC_CA_RETIRED, .cert = pki->node_ca};
	for (int i = 0; i < BC_NODE_CAS_MAX; i++) {
		X509_up_ref(pki->node_ca);
		assert_int_equal(bc_node_cas_add(cas, &r), 0);
	}
	assert_int_equal(bc_node_cas_add(cas, &r), BC_ERR_LIMIT);
	bc_node_cas_put(cas);
	bc_pki_free(pki);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_seal_key),
	    cmocka_unit_test(test_installed_set),
	    cmocka_unit_test(test_finish_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
