/* bc_tpm_ek_cert_verify with chains this test makes: a manufacturer root, its
 * intermediate, and the same root cross-signed by another CA. ek_roots may name
 * the root, only the intermediate, or only the cross-signed root (not self-signed):
 * the chain ends at whichever anchor the operator configured. An EK certificate
 * from another CA, or an intermediate the evidence sends that no anchor signed, is
 * refused (BC_ERR_VERIFY, the attestor's ek-certificate-chain). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <time.h>

#include "tpm/tpm.h"

static EVP_PKEY *root_key, *inter_key, *xsign_key, *other_key, *ek_key;
static X509 *root, *inter, *xroot, *xsigner, *other, *ek_cert, *stray_inter, *stray_ek;
static int64_t now_ms;

static EVP_PKEY *ec_key(void)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");

	assert_non_null(k);
	return k;
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	assert_non_null(e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value));
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/* A certificate of key named cn, issued by issuer_cn with issuer_key; a CA when ca. */
static X509 *cert(const char *cn, EVP_PKEY *key, const char *issuer_cn, EVP_PKEY *issuer_key,
                  int ca)
{
	static long serial = 1;
	X509 *x = X509_new();
	X509_NAME *subj = X509_NAME_new(), *iss = X509_NAME_new();
	time_t t = (time_t)(now_ms / 1000);

	assert_non_null(x);
	assert_int_equal(X509_set_version(x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), serial++), 1);
	X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_NAME_add_entry_by_txt(iss, "CN", MBSTRING_ASC, (const unsigned char *)issuer_cn, -1,
	                           -1, 0);
	assert_int_equal(X509_set_subject_name(x, subj), 1);
	assert_int_equal(X509_set_issuer_name(x, iss), 1);
	assert_non_null(X509_time_adj_ex(X509_getm_notBefore(x), -1, 0, &t));
	assert_non_null(X509_time_adj_ex(X509_getm_notAfter(x), 1, 0, &t));
	assert_int_equal(X509_set_pubkey(x, key), 1);
	add_ext(x, NULL, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
	add_ext(x, NULL, NID_key_usage, ca ? "critical,keyCertSign" : "critical,keyEncipherment");
	assert_true(X509_sign(x, issuer_key, EVP_sha256()) > 0);
	X509_NAME_free(subj);
	X509_NAME_free(iss);
	return x;
}

static int setup(void **state)
{
	(void)state;
	now_ms = (int64_t)time(NULL) * 1000;
	root_key = ec_key();
	inter_key = ec_key();
	xsign_key = ec_key();
	other_key = ec_key();
	ek_key = ec_key();
	root = cert("Vendor EK Root", root_key, "Vendor EK Root", root_key, 1);
	inter = cert("Vendor EK CA 1", inter_key, "Vendor EK Root", root_key, 1);
	/* the vendor's root again, its key and name, signed by another CA */
	xsigner = cert("Global Root", xsign_key, "Global Root", xsign_key, 1);
	xroot = cert("Vendor EK Root", root_key, "Global Root", xsign_key, 1);
	other = cert("Other EK Root", other_key, "Other EK Root", other_key, 1);
	ek_cert = cert("EK", ek_key, "Vendor EK CA 1", inter_key, 0);
	/* a CA named as the vendor's intermediate, signed by no anchor */
	stray_inter = cert("Vendor EK CA 1", other_key, "Other EK Root", other_key, 1);
	stray_ek = cert("EK", ek_key, "Vendor EK CA 1", other_key, 0);
	return 0;
}

static int teardown(void **state)
{
	X509 *xs[] = {root, inter, xroot, xsigner, other, ek_cert, stray_inter, stray_ek};
	EVP_PKEY *ks[] = {root_key, inter_key, xsign_key, other_key, ek_key};
	(void)state;

	for (size_t i = 0; i < sizeof(xs) / sizeof(*xs); i++)
		X509_free(xs[i]);
	for (size_t i = 0; i < sizeof(ks) / sizeof(*ks); i++)
		EVP_PKEY_free(ks[i]);
	return 0;
}

struct der {
	uint8_t *p;
	size_t n;
};

static struct der der_of(X509 *x)
{
	struct der d = {NULL, 0};
	int n = i2d_X509(x, &d.p);

	assert_true(n > 0);
	d.n = (size_t)n;
	return d;
}

/* bc_tpm_ek_cert_verify of leaf with these anchors and evidence intermediates. */
static int verify(X509 *leaf, X509 *const *anchors, size_t n_anchors, X509 *const *inters,
                  size_t n_inters)
{
	struct der l = der_of(leaf), in[4];
	const uint8_t *ip[4];
	size_t il[4];
	X509 *got = NULL;
	int rc;

	assert_true(n_inters <= 4);
	for (size_t i = 0; i < n_inters; i++) {
		in[i] = der_of(inters[i]);
		ip[i] = in[i].p;
		il[i] = in[i].n;
	}
	rc = bc_tpm_ek_cert_verify(anchors, n_anchors, l.p, l.n, ip, il, n_inters, ek_key, now_ms,
	                           &got);
	assert_true(rc == 0 ? got != NULL : got == NULL);
	X509_free(got);
	OPENSSL_free(l.p);
	for (size_t i = 0; i < n_inters; i++)
		OPENSSL_free(in[i].p);
	return rc;
}

static void test_self_signed_root(void **state)
{
	(void)state;
	assert_int_equal(verify(ek_cert, &root, 1, &inter, 1), 0);
	/* without the intermediate, the root alone signs nothing here */
	assert_int_equal(verify(ek_cert, &root, 1, NULL, 0), BC_ERR_VERIFY);
}

/* ek_roots naming only the intermediate (Intel's CNL CA): the chain ends there. */
static void test_intermediate_only(void **state)
{
	(void)state;
	assert_int_equal(verify(ek_cert, &inter, 1, NULL, 0), 0);
	/* the evidence's copy of the intermediate changes nothing */
	assert_int_equal(verify(ek_cert, &inter, 1, &inter, 1), 0);
}

/* ek_roots naming only the vendor root as another CA cross-signed it (STMicro's,
 * under GlobalSign): not self-signed, still an anchor. */
static void test_cross_signed_root(void **state)
{
	X509 *anchors[] = {other, xroot};
	(void)state;

	assert_int_equal(verify(ek_cert, &xroot, 1, &inter, 1), 0);
	assert_int_equal(verify(ek_cert, anchors, 2, &inter, 1), 0);
	/* the cross-signer alone is not the vendor's root: nothing chains to it */
	assert_int_equal(verify(ek_cert, &xsigner, 1, &inter, 1), BC_ERR_VERIFY);
}

/* Another CA's EK certificate, and an intermediate that only claims the vendor's
 * name: ek-certificate-chain. */
static void test_other_ca_refused(void **state)
{
	X509 *both[] = {root, inter};
	(void)state;

	assert_int_equal(verify(ek_cert, &other, 1, &inter, 1), BC_ERR_VERIFY);
	assert_int_equal(verify(stray_ek, &inter, 1, NULL, 0), BC_ERR_VERIFY);
	assert_int_equal(verify(stray_ek, both, 2, &stray_inter, 1), BC_ERR_VERIFY);
	assert_int_equal(verify(stray_ek, &root, 1, &stray_inter, 1), BC_ERR_VERIFY);
	/* an evidence intermediate is never an anchor, even one a configured root signed */
	assert_int_equal(verify(ek_cert, &other, 1, (X509 *[]){inter, root}, 2), BC_ERR_VERIFY);
}

/* The anchor's time still counts: an EK certificate checked after it expired. */
static void test_expired(void **state)
{
	int64_t saved = now_ms;
	(void)state;

	now_ms += 3LL * 24 * 3600 * 1000;
	assert_int_equal(verify(ek_cert, &inter, 1, NULL, 0), BC_ERR_VERIFY);
	now_ms = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_self_signed_root),  cmocka_unit_test(test_intermediate_only),
	    cmocka_unit_test(test_cross_signed_root), cmocka_unit_test(test_other_ca_refused),
	    cmocka_unit_test(test_expired),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
