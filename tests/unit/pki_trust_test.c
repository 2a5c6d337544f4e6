/* src/pki/trust.c: the trust bundle relying parties fetch, as PEM and as a SPIFFE
 * trust bundle, read back here with OpenSSL and jansson, and every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

#define TD "example.org"

struct fixture {
	bc_pki *a, *b;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL || bc_pki_generate(TD, &f->a) != 0 || bc_pki_generate(TD, &f->b) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	bc_pki_free(f->a);
	bc_pki_free(f->b);
	free(f);
	return 0;
}

/* The certificates of a PEM text, in order; returns how many. */
static size_t read_pem(const char *pem, X509 **out, size_t max)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	size_t n = 0;
	X509 *x;

	assert_non_null(bio);
	while (n < max && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
		out[n++] = x;
	BIO_free(bio);
	return n;
}

static void test_pem_holds_the_cas_in_order(void **state)
{
	struct fixture *f = *state;
	X509 *cas[2] = {f->a->node_ca, f->b->node_ca}, *got[3] = {0};
	char *pem = NULL;

	assert_int_equal(bc_pki_trust_pem(cas, 2, &pem), 0);
	assert_int_equal(read_pem(pem, got, 3), 2);
	assert_int_equal(X509_cmp(got[0], f->a->node_ca), 0);
	assert_int_equal(X509_cmp(got[1], f->b->node_ca), 0);
	assert_null(strstr(pem, "PRIVATE"));
	X509_free(got[0]);
	X509_free(got[1]);
	free(pem);
}

/* One JWK as the SPIFFE bundle format has it, for ca. */
static void assert_jwk_is(json_t *k, X509 *ca)
{
	uint8_t point[65], *der = NULL, *x5c = NULL, *x = NULL, *y = NULL;
	size_t len = 0, x5c_len = 0, xl = 0, yl = 0;
	json_t *chain = json_object_get(k, "x5c");
	const char *c;

	assert_string_equal(json_string_value(json_object_get(k, "use")), "x509-svid");
	assert_string_equal(json_string_value(json_object_get(k, "kty")), "EC");
	assert_string_equal(json_string_value(json_object_get(k, "crv")), "P-256");
	assert_true(json_is_array(chain));
	assert_int_equal(json_array_size(chain), 1);
	c = json_string_value(json_array_get(chain, 0));
	assert_non_null(c);
	assert_int_equal(bc_b64_decode(c, strlen(c), &x5c, &x5c_len), 0);
	assert_int_equal(bc_x509_to_der(ca, &der, &len), 0);
	assert_int_equal(x5c_len, len);
	assert_memory_equal(x5c, der, len);
	/* the key members are the certificate's key */
	assert_int_equal(bc_key_to_point(X509_get0_pubkey(ca), point), 0);
	c = json_string_value(json_object_get(k, "x"));
	assert_int_equal(bc_b64url_decode(c, strlen(c), &x, &xl), 0);
	c = json_string_value(json_object_get(k, "y"));
	assert_int_equal(bc_b64url_decode(c, strlen(c), &y, &yl), 0);
	assert_int_equal(xl, 32);
	assert_int_equal(yl, 32);
	assert_memory_equal(x, point + 1, 32);
	assert_memory_equal(y, point + 33, 32);
	/* nothing private, nothing else */
	assert_null(json_object_get(k, "d"));
	assert_int_equal(json_object_size(k), 6);
	free(der);
	free(x5c);
	free(x);
	free(y);
}

static void test_spiffe_bundle_format(void **state)
{
	struct fixture *f = *state;
	X509 *cas[2] = {f->a->node_ca, f->b->node_ca};
	json_t *j, *keys;
	char *text = NULL;

	assert_int_equal(bc_pki_trust_spiffe(cas, 2, 42, BC_TRUST_REFRESH_HINT_S, &text), 0);
	assert_non_null(j = json_loads(text, JSON_REJECT_DUPLICATES, NULL));
	assert_int_equal(json_integer_value(json_object_get(j, "spiffe_sequence")), 42);
	assert_int_equal(json_integer_value(json_object_get(j, "spiffe_refresh_hint")), 300);
	keys = json_object_get(j, "keys");
	assert_int_equal(json_array_size(keys), 2);
	assert_jwk_is(json_array_get(keys, 0), f->a->node_ca);
	assert_jwk_is(json_array_get(keys, 1), f->b->node_ca);
	assert_int_equal(json_object_size(j), 3);
	json_decref(j);
	free(text);
}

static void test_sequence_rises_with_a_newer_ca(void **state)
{
	struct fixture *f = *state;
	X509 *one[1] = {f->a->node_ca}, *both[2] = {f->a->node_ca, NULL};
	struct pki_cert_spec spec = {0};
	uint8_t serial[PKI_SERIAL_LEN];
	int64_t nb = 0;
	X509 *later = NULL;

	assert_int_equal(pki_read_time(X509_get0_notBefore(f->a->node_ca), &nb), 0);
	assert_int_equal(bc_pki_trust_sequence(one, 1), nb / 1000);
	/* a CA made a minute after the first one */
	spec.pub = f->b->node_ca_key;
	spec.cn = TD " node CA";
	spec.issuer_key = f->b->node_ca_key;
	spec.not_before_ms = nb + 60 * 1000;
	spec.not_after_ms = nb + 3600 * 1000;
	spec.basic_constraints = "critical,CA:TRUE,pathlen:0";
	spec.key_usage = "critical,keyCertSign,cRLSign";
	assert_int_equal(pki_cert_build(&spec, &later, serial), 0);
	both[1] = later;
	assert_int_equal(bc_pki_trust_sequence(both, 2), nb / 1000 + 60);
	assert_int_equal(bc_pki_trust_sequence(both, 0), 0);
	X509_free(later);
}

static void test_bundle_of_a_pki(void **state)
{
	struct fixture *f = *state;
	char *pem = NULL, *js = NULL;
	X509 *got[2] = {0};
	json_t *j;

	assert_int_equal(bc_pki_trust_bundle(f->a, 0, &pem), 0);
	assert_int_equal(read_pem(pem, got, 2), 1);
	assert_int_equal(X509_cmp(got[0], f->a->node_ca), 0);
	assert_int_equal(bc_pki_trust_bundle(f->a, 1, &js), 0);
	assert_non_null(j = json_loads(js, 0, NULL));
	assert_int_equal(json_array_size(json_object_get(j, "keys")), 1);
	assert_jwk_is(json_array_get(json_object_get(j, "keys"), 0), f->a->node_ca);
	assert_int_equal(json_integer_value(json_object_get(j, "spiffe_sequence")),
	                 bc_pki_trust_sequence(got, 1));
	assert_true(json_integer_value(json_object_get(j, "spiffe_sequence")) > 0);
	json_decref(j);
	X509_free(got[0]);
	free(pem);
	free(js);
	assert_int_equal(bc_pki_trust_bundle(NULL, 0, &pem), BC_ERR_INVALID);
	assert_null(pem);
}

static void test_refusals(void **state)
{
	struct fixture *f = *state;
	X509 *cas[BC_TRUST_MAX_CAS + 1], *with_null[2] = {f->a->node_ca, NULL}, *ed[1] = {NULL};
	struct pki_cert_spec spec = {0};
	uint8_t serial[PKI_SERIAL_LEN];
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	char *out = (char *)"x";

	for (size_t i = 0; i < BC_TRUST_MAX_CAS + 1; i++)
		cas[i] = f->a->node_ca;
	assert_int_equal(bc_pki_trust_pem(cas, 0, &out), BC_ERR_INVALID);
	assert_null(out);
	assert_int_equal(bc_pki_trust_pem(cas, BC_TRUST_MAX_CAS + 1, &out), BC_ERR_INVALID);
	assert_int_equal(bc_pki_trust_pem(with_null, 2, &out), BC_ERR_INVALID);
	assert_int_equal(bc_pki_trust_pem(NULL, 1, &out), BC_ERR_INVALID);
	assert_int_equal(bc_pki_trust_spiffe(cas, 0, 1, 300, &out), BC_ERR_INVALID);
	assert_int_equal(bc_pki_trust_spiffe(cas, BC_TRUST_MAX_CAS + 1, 1, 300, &out),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_pki_trust_spiffe(with_null, 2, 1, 300, &out), BC_ERR_INVALID);
	assert_int_equal(bc_pki_trust_spiffe(cas, 1, -1, 300, &out), BC_ERR_INVALID);
	assert_int_equal(bc_pki_trust_spiffe(cas, 1, 1, 0, &out), BC_ERR_INVALID);
	assert_null(out);
	/* the most it takes */
	assert_int_equal(bc_pki_trust_spiffe(cas, BC_TRUST_MAX_CAS, 1, 300, &out), 0);
	free(out);
	/* a CA whose key is not P-256 has no x509-svid JWK here */
	assert_non_null(k);
	spec.pub = k;
	spec.cn = "not p-256";
	spec.issuer = f->a->node_ca;
	spec.issuer_key = f->a->node_ca_key;
	spec.not_before_ms = 0;
	spec.not_after_ms = 3600 * 1000;
	spec.basic_constraints = "critical,CA:TRUE,pathlen:0";
	assert_int_equal(pki_cert_build(&spec, &ed[0], serial), 0);
	assert_int_equal(bc_pki_trust_spiffe(ed, 1, 1, 300, &out), BC_ERR_INVALID);
	assert_null(out);
	X509_free(ed[0]);
	EVP_PKEY_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pem_holds_the_cas_in_order),
	    cmocka_unit_test(test_spiffe_bundle_format),
	    cmocka_unit_test(test_sequence_rises_with_a_newer_ca),
	    cmocka_unit_test(test_bundle_of_a_pki),
	    cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
