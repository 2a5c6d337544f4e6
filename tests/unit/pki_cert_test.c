/* src/pki: issuing node certificates and reading their identity back, with
 * certificates built by hand for every way a SAN list can be wrong; SPIFFE IDs;
 * the node CA check; DER/PEM; the server TLS certificate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "pki/pki_internal.h"

#define TD      "example.org"
#define NODE_ID "node_01hzx3k9q8w7e6r5t4y3u2i1o0"
#define SPIFFE  "spiffe://" TD "/node/" NODE_ID
#define NB_MS   1767225600000LL /* 2026-01-01T00:00:00Z */

struct fixture {
	bc_pki *pki;
	bc_pki *other; /* another bundle for the same trust domain */
	EVP_PKEY *key;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL || bc_pki_generate(TD, &f->pki) != 0 || bc_pki_generate(TD, &f->other) != 0 ||
	    bc_key_generate(&f->key) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	bc_pki_free(f->pki);
	bc_pki_free(f->other);
	EVP_PKEY_free(f->key);
	free(f);
	return 0;
}

static struct bc_node_cert_req node_req(EVP_PKEY *key, const char *role)
{
	struct bc_node_cert_req r = {
	    .node_id = NODE_ID,
	    .role = role,
	    .pub = key,
	    .not_before_ms = NB_MS,
	};
	return r;
}

static X509 *parse(const uint8_t *der, size_t len)
{
	const unsigned char *p = der;
	X509 *x = d2i_X509(NULL, &p, (long)len);

	assert_non_null(x);
	return x;
}

static void assert_node_cert_shape(X509 *x, const bc_pki *pki)
{
	char cn[64];
	int crit = 0;
	BASIC_CONSTRAINTS *bc;
	ASN1_BIT_STRING *ku;

	assert_int_equal(X509_get_version(x), X509_VERSION_3);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn,
	                                      sizeof(cn)) > 0);
	assert_string_equal(cn, NODE_ID);
	assert_int_equal(
	    X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(pki->node_ca)), 0);
	assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	assert_non_null(bc);
	assert_int_equal(crit, 1);
	assert_false(bc->ca);
	BASIC_CONSTRAINTS_free(bc);
	ku = X509_get_ext_d2i(x, NID_key_usage, &crit, NULL);
	assert_non_null(ku);
	assert_int_equal(crit, 1);
	ASN1_BIT_STRING_free(ku);
	assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
	assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_CLIENT);
	assert_non_null(X509_get0_subject_key_id(x));
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(x),
	                                       X509_get0_subject_key_id(pki->node_ca)),
	                 0);
	assert_int_equal(X509_check_issued(pki->node_ca, x), X509_V_OK);
}

static void test_issue_and_read(void **state)
{
	struct fixture *f = *state;
	const char *st[] = {BC_WIRE_TPM_AK_URN_SHA256 "00ff",
	                    "urn:bc:pool:pool_01hzx3k9q8w7e6r5t4y3u2i1o0"};
	struct bc_node_cert_req r = node_req(f->key, BC_ROLE_NODE);
	struct bc_node_identity id;
	uint8_t *der = NULL;
	size_t len = 0;
	char serial[33];
	int64_t na = 0;
	X509 *x;

	r.statements = st;
	r.n_statements = 2;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na), 0);
	assert_int_equal(na, NB_MS + BC_NODE_CERT_TTL_MS);
	assert_int_equal(strlen(serial), 32);
	assert_int_equal(strspn(serial, "0123456789abcdef"), 32);
	assert_true(strchr("01234567", serial[0]) != NULL); /* positive */

	x = parse(der, len);
	assert_node_cert_shape(x, f->pki);
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x), f->key), 1);
	X509_free(x);
	/* the key as its bare point gives the same certificate but for serial and signature;
	 * a point off the curve, or both forms, or neither, is refused */
	{
		uint8_t pt[65], *d2 = NULL;
		size_t l2 = 0;
		char s2[33];
		int64_t na2 = 0;
		EVP_PKEY *k = r.pub;

		assert_int_equal(bc_key_to_point(f->key, pt), 0);
		r.pub = NULL;
		r.point = pt;
		assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &d2, &l2, s2, &na2), 0);
		assert_int_equal(na2, na);
		x = parse(d2, l2);
		assert_node_cert_shape(x, f->pki);
		assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x), f->key), 1);
		X509_free(x);
		free(d2);
		r.pub = k;
		assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &d2, &l2, s2, &na2),
		                 BC_ERR_INVALID);
		r.pub = NULL;
		r.point = NULL;
		assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &d2, &l2, s2, &na2),
		                 BC_ERR_INVALID);
		pt[64] ^= 1;
		r.point = pt;
		assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &d2, &l2, s2, &na2),
		                 BC_ERR_INVALID);
		assert_null(d2);
		r.point = NULL;
		r.pub = k;
	}

	assert_int_equal(bc_pki_node_identity(der, len, TD, &id, NULL), 0);
	assert_string_equal(id.node_id, NODE_ID);
	assert_string_equal(id.role, "node");
	assert_int_equal(id.n_statements, 2);
	assert_string_equal(id.statements[0], st[0]);
	assert_string_equal(id.statements[1], st[1]);
	assert_null(id.statements[2]);
	/* notBefore backdated by the documented margin, notAfter from the issue time */
	assert_int_equal(id.not_before_ms, NB_MS - BC_NODE_CERT_BACKDATE_MS);
	assert_int_equal(BC_NODE_CERT_BACKDATE_MS, 5 * 60 * 1000);
	assert_int_equal(id.not_after_ms, na);
	assert_string_equal(id.serial_hex, serial);
	bc_node_identity_clear(&id);
	assert_int_equal(id.n_statements, 0);
	assert_null(id.statements[0]);

	assert_int_equal(bc_pki_verify_node_cert(f->pki, der, len), 0);
	free(der);
}

/* The node certificate written as DER (node_der.c) is, field for field and byte for
 * byte, the one OpenSSL's X509 API builds (pki_cert_build) with the same serial, for
 * one URI and for four, and in both time encodings (UTCTime before 2050,
 * GeneralizedTime from 2050), and it is canonical DER: re-encoded after parsing it
 * does not change. */
/* The to-be-signed part of a certificate's DER: the first element inside its outer
 * SEQUENCE, headers in short or two-byte long form. */
static const uint8_t *tbs_of(const uint8_t *der, size_t len, int *n)
{
	size_t off = der[1] == 0x82 ? 4 : der[1] == 0x81 ? 3 : 2, hdr, body;

	assert_true(len > off + 4 && der[0] == 0x30 && der[off] == 0x30);
	if (der[off + 1] == 0x82) {
		hdr = 4;
		body = (size_t)der[off + 2] << 8 | der[off + 3];
	} else if (der[off + 1] == 0x81) {
		hdr = 3;
		body = der[off + 2];
	} else {
		hdr = 2;
		body = der[off + 1];
	}
	assert_true(off + hdr + body <= len);
	*n = (int)(hdr + body);
	return der + off;
}

static void der_matches_openssl(struct fixture *f, int64_t nb_ms, size_t n_uris)
{
	static const char *const uris[] = {SPIFFE, BC_WIRE_TPM_AK_URN_SHA256 "00ff", "urn:bc:a",
	                                   "urn:bc:pool:pool_01hzx3k9q8w7e6r5t4y3u2i1o0"};
	struct pki_node_fields nf = {.cn = NODE_ID,
	                             .not_before_ms = nb_ms,
	                             .not_after_ms = nb_ms + BC_NODE_CERT_TTL_MS,
	                             .n_uris = n_uris};
	struct pki_cert_spec spec = {0};
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	uint8_t serial[PKI_SERIAL_LEN], *der = NULL, *a = NULL, *b = NULL, *c = NULL;
	const unsigned char *p;
	size_t len = 0;
	X509 *ref = NULL, *ours;
	int an, bn, cn;

	assert_non_null(gens);
	for (size_t i = 0; i < n_uris; i++) {
		nf.uris[i] = uris[i];
		assert_int_equal(pki_gens_add(gens, GEN_URI, uris[i], strlen(uris[i])), 0);
	}
	assert_int_equal(pki_serial_draw(nf.serial), 0);
	assert_int_equal(bc_key_to_point(f->key, nf.point), 0);
	assert_int_equal(pki_node_cert_der(&nf, f->pki->node_ca, f->pki->node_ca_key, &der, &len),
	                 0);
	spec = (struct pki_cert_spec){.pub = f->key,
	                              .cn = NODE_ID,
	                              .issuer = f->pki->node_ca,
	                              .issuer_key = f->pki->node_ca_key,
	                              .not_before_ms = nf.not_before_ms,
	                              .not_after_ms = nf.not_after_ms,
	                              .basic_constraints = "critical,CA:FALSE",
	                              .key_usage = "critical,digitalSignature",
	                              .ext_key_usage = "clientAuth",
	                              .san = gens};
	assert_int_equal(pki_cert_build(&spec, &ref, serial), 0);
	/* the reference with our serial, its to-be-signed part encoded again */
	ASN1_INTEGER *ai = ASN1_INTEGER_new();
	assert_int_equal(ASN1_STRING_set(ai, nf.serial, PKI_SERIAL_LEN), 1);
	assert_int_equal(X509_set_serialNumber(ref, ai), 1);
	ASN1_INTEGER_free(ai);
	assert_true((an = i2d_re_X509_tbs(ref, &a)) > 0);
	p = der;
	assert_non_null(ours = d2i_X509(NULL, &p, (long)len));
	assert_ptr_equal(p, der + len);
	b = (uint8_t *)tbs_of(der, len, &bn); /* as written */
	assert_int_equal(an, bn);
	assert_memory_equal(a, b, (size_t)an);
	assert_true((cn = i2d_re_X509_tbs(ours, &c)) > 0); /* encoded again */
	assert_int_equal(cn, bn);
	assert_memory_equal(c, b, (size_t)cn);
	assert_int_equal(bc_pki_verify_node_cert(f->pki, der, len), 0);
	OPENSSL_free(a);
	OPENSSL_free(c);
	X509_free(ours);
	X509_free(ref);
	GENERAL_NAMES_free(gens);
	free(der);
}

static void test_node_cert_der_is_what_openssl_builds(void **state)
{
	struct fixture *f = *state;

	der_matches_openssl(f, NB_MS, 1);
	der_matches_openssl(f, NB_MS, 4);
	der_matches_openssl(f, 2524608000000LL /* 2050-01-01 */, 2);
	der_matches_openssl(f, 2524607999000LL /* 2049-12-31T23:59:59Z */, 1);
}

static void test_roles_and_ttl(void **state)
{
	struct fixture *f = *state;
	static const struct {
		const char *role;
		int64_t ttl, want;
	} cases[] = {
	    {"node", 0, BC_NODE_CERT_TTL_MS},
	    {"node", 3600 * 1000, 3600 * 1000},
	    {"node", 48 * 3600 * 1000LL, BC_NODE_CERT_TTL_MS},
	    {"site", 0, BC_NODE_CERT_TTL_MS},
	    {"node-tenant", 0, BC_NODE_CERT_TTL_MS},
	    {"ramdisk", 0, BC_RAMDISK_CERT_TTL_MS},
	    {"ramdisk", 10 * 3600 * 1000LL, BC_RAMDISK_CERT_TTL_MS},
	    {"ramdisk", 1800 * 1000, 1800 * 1000},
	};
	struct bc_node_identity id;
	uint8_t *der;
	size_t len;
	char serial[33];
	int64_t na;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bc_node_cert_req r = node_req(f->key, cases[i].role);
		r.ttl_ms = cases[i].ttl;
		assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na), 0);
		assert_int_equal(na, NB_MS + cases[i].want);
		assert_int_equal(bc_pki_node_identity(der, len, TD, &id, NULL), 0);
		assert_string_equal(id.role, cases[i].role);
		assert_int_equal(id.not_after_ms - id.not_before_ms,
		                 cases[i].want + BC_NODE_CERT_BACKDATE_MS);
		assert_int_equal(id.n_statements, 0);
		bc_node_identity_clear(&id);
		free(der);
	}
}

static void test_times_whole_seconds(void **state)
{
	struct fixture *f = *state;
	struct bc_node_cert_req r = node_req(f->key, BC_ROLE_NODE);
	struct bc_node_identity id;
	uint8_t *der;
	size_t len;
	char serial[33];
	int64_t na;

	r.not_before_ms = NB_MS + 999;
	r.ttl_ms = 1500;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na), 0);
	assert_int_equal(na, NB_MS + 2000);
	assert_int_equal(bc_pki_node_identity(der, len, TD, &id, NULL), 0);
	assert_int_equal(id.not_before_ms, NB_MS - BC_NODE_CERT_BACKDATE_MS);
	assert_int_equal(id.not_after_ms, na);
	bc_node_identity_clear(&id);
	free(der);

	/* issued within the margin of 1970: notBefore stops at the epoch */
	r.not_before_ms = 60 * 1000;
	r.ttl_ms = 0;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na), 0);
	assert_int_equal(na, 60 * 1000 + BC_NODE_CERT_TTL_MS);
	assert_int_equal(bc_pki_node_identity(der, len, TD, &id, NULL), 0);
	assert_int_equal(id.not_before_ms, 0);
	bc_node_identity_clear(&id);
	free(der);
}

static void test_serials_differ(void **state)
{
	struct fixture *f = *state;
	struct bc_node_cert_req r = node_req(f->key, BC_ROLE_NODE);
	uint8_t *d1, *d2;
	size_t l1, l2;
	char s1[33], s2[33];
	int64_t na;

	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &d1, &l1, s1, &na), 0);
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &d2, &l2, s2, &na), 0);
	assert_string_not_equal(s1, s2);
	free(d1);
	free(d2);
}

static int issue_with(struct fixture *f, const char *const *st, size_t n)
{
	struct bc_node_cert_req r = node_req(f->key, BC_ROLE_NODE);
	uint8_t *der = (uint8_t *)0x1;
	size_t len = 1;
	char serial[33] = "x";
	int64_t na = 1;
	int rc;

	r.statements = st;
	r.n_statements = n;
	rc = bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na);
	if (rc != 0) {
		assert_null(der);
		assert_int_equal(len, 0);
		assert_string_equal(serial, "");
		assert_int_equal(na, 0);
	}
	free(der);
	return rc;
}

static void test_statement_limits(void **state)
{
	struct fixture *f = *state;
	const char *four[] = {"urn:bc:a", "urn:bc:b", "urn:bc:c", "urn:bc:d"};

	assert_int_equal(issue_with(f, four, 3), 0);
	assert_int_equal(issue_with(f, four, 4), BC_ERR_INVALID);
	assert_int_equal(issue_with(f, NULL, 1), BC_ERR_INVALID);
	{
		const char *bad[] = {"https://example.org/x",
		                     "URN:BC:x",
		                     "urn:bc:",
		                     "urn:bcx",
		                     "urn:bc:a b",
		                     "urn:bc:a\nb",
		                     "spiffe://" TD "/node/" NODE_ID,
		                     ""};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(issue_with(f, &bad[i], 1), BC_ERR_INVALID);
	}
	{
		/* fine as the second of two, refused as the first bad one */
		const char *mixed[] = {"urn:bc:a", "mailto:x@example.org"};
		assert_int_equal(issue_with(f, mixed, 2), BC_ERR_INVALID);
	}
}

/* A statement cannot inject another SAN: it stays one URI. */
static void test_statement_no_injection(void **state)
{
	struct fixture *f = *state;
	const char *st[] = {"urn:bc:x,DNS:evil.example,URI:spiffe://" TD "/site/" NODE_ID};
	struct bc_node_cert_req r = node_req(f->key, BC_ROLE_NODE);
	struct bc_node_identity id;
	uint8_t *der;
	size_t len;
	char serial[33];
	int64_t na;

	r.statements = st;
	r.n_statements = 1;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na), 0);
	assert_int_equal(bc_pki_node_identity(der, len, TD, &id, NULL), 0);
	assert_string_equal(id.role, "node");
	assert_int_equal(id.n_statements, 1);
	assert_string_equal(id.statements[0], st[0]);
	bc_node_identity_clear(&id);
	free(der);
}

static void test_issue_bad_requests(void **state)
{
	struct fixture *f = *state;
	static const char *const bad_ids[] = {
	    "node_01HZX3K9Q8W7E6R5T4Y3U2I1O0",  "node_01hzx3k9q8w7e6r5t4y3u2i1o",
	    "node_01hzx3k9q8w7e6r5t4y3u2i1o00", "tok_01hzx3k9q8w7e6r5t4y3u2i1o0",
	    "node-01hzx3k9q8w7e6r5t4y3u2i1o0",  ""};
	struct bc_node_cert_req r;
	EVP_PKEY *p384 = EVP_EC_gen("secp384r1");
	uint8_t *der;
	size_t len;
	char serial[33];
	int64_t na;

	for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
		r = node_req(f->key, BC_ROLE_NODE);
		r.node_id = bad_ids[i];
		assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na),
		                 BC_ERR_INVALID);
	}
	r = node_req(f->key, BC_ROLE_NODE);
	r.node_id = NULL;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na),
	                 BC_ERR_INVALID);
	r = node_req(f->key, "admin");
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na),
	                 BC_ERR_INVALID);
	r = node_req(NULL, BC_ROLE_NODE);
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na),
	                 BC_ERR_INVALID);
	assert_non_null(p384);
	r = node_req(p384, BC_ROLE_NODE);
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na),
	                 BC_ERR_INVALID);
	r = node_req(f->key, BC_ROLE_NODE);
	r.ttl_ms = -1;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na),
	                 BC_ERR_INVALID);
	r = node_req(f->key, BC_ROLE_NODE);
	r.not_before_ms = -1000;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na),
	                 BC_ERR_INVALID);
	r = node_req(f->key, BC_ROLE_NODE);
	r.not_before_ms = INT64_MAX;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na),
	                 BC_ERR_INVALID);
	EVP_PKEY_free(p384);
}

/* ---- certificates built by hand, signed by the node CA ---- */

struct san {
	int type;
	const char *value;
	size_t len; /* 0: strlen(value) */
};

static void add_san(GENERAL_NAMES *gens, const struct san *s)
{
	GENERAL_NAME *g = GENERAL_NAME_new();
	ASN1_STRING *v;
	uint8_t ip[16];

	if (s->type == GEN_IPADD) {
		assert_int_equal(inet_pton(AF_INET, s->value, ip), 1);
		v = ASN1_OCTET_STRING_new();
		assert_int_equal(ASN1_STRING_set(v, ip, 4), 1);
	} else {
		v = ASN1_IA5STRING_new();
		assert_int_equal(
		    ASN1_STRING_set(v, s->value, (int)(s->len ? s->len : strlen(s->value))), 1);
	}
	GENERAL_NAME_set0_value(g, s->type, v);
	assert_true(sk_GENERAL_NAME_push(gens, g) > 0);
}

/* copies: how many SAN extensions (0, 1 or 2) */
static uint8_t *hand_cert(const bc_pki *issuer, EVP_PKEY *pub, const struct san *sans, size_t n,
                          int copies, size_t *len)
{
	X509 *x = X509_new();
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	unsigned char *der = NULL;
	int dlen;

	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 0x1234), 1);
	assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(issuer->node_ca)), 1);
	assert_int_equal(X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	                                            (const unsigned char *)NODE_ID, -1, -1, 0),
	                 1);
	assert_non_null(ASN1_TIME_set(X509_getm_notBefore(x), NB_MS / 1000));
	assert_non_null(ASN1_TIME_set(X509_getm_notAfter(x), NB_MS / 1000 + 3600));
	assert_int_equal(X509_set_pubkey(x, pub), 1);
	for (size_t i = 0; i < n; i++)
		add_san(gens, &sans[i]);
	for (int c = 0; c < copies; c++)
		assert_int_equal(
		    X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_APPEND), 1);
	assert_true(X509_sign(x, issuer->node_ca_key, EVP_sha256()) > 0);
	assert_true((dlen = i2d_X509(x, &der)) > 0);
	*len = (size_t)dlen;
	GENERAL_NAMES_free(gens);
	X509_free(x);
	return der;
}

static int identity_of(struct fixture *f, const struct san *sans, size_t n, int copies)
{
	struct bc_node_identity id;
	size_t len;
	uint8_t *der = hand_cert(f->pki, f->key, sans, n, copies, &len);
	int rc = bc_pki_node_identity(der, len, TD, &id, NULL);

	if (rc != 0) {
		assert_string_equal(id.node_id, "");
		assert_int_equal(id.n_statements, 0);
		assert_null(id.statements[0]);
	}
	bc_node_identity_clear(&id);
	OPENSSL_free(der);
	return rc;
}

#define NSANS(a) (sizeof(a) / sizeof((a)[0]))

static void test_identity_hand_built(void **state)
{
	struct fixture *f = *state;
	const struct san good[] = {
	    {GEN_URI, SPIFFE, 0}, {GEN_URI, "urn:bc:a", 0}, {GEN_URI, "urn:bc:b", 0}};
	const struct san ramdisk[] = {{GEN_URI, "spiffe://" TD "/ramdisk/" NODE_ID, 0}};

	/* controls: the builder makes certificates the reader accepts */
	assert_int_equal(identity_of(f, good, NSANS(good), 1), 0);
	assert_int_equal(identity_of(f, ramdisk, NSANS(ramdisk), 1), 0);
}

static void test_identity_refusals(void **state)
{
	struct fixture *f = *state;
	const struct san two_spiffe[] = {{GEN_URI, SPIFFE, 0},
	                                 {GEN_URI, "spiffe://" TD "/site/" NODE_ID, 0}};
	const struct san not_first[] = {{GEN_URI, "urn:bc:a", 0}, {GEN_URI, SPIFFE, 0}};
	const struct san other_td[] = {{GEN_URI, "spiffe://other.org/node/" NODE_ID, 0}};
	const struct san td_prefix[] = {{GEN_URI, "spiffe://" TD ".evil/node/" NODE_ID, 0}};
	const struct san td_suffix[] = {{GEN_URI, "spiffe://x" TD "/node/" NODE_ID, 0}};
	const struct san dns[] = {{GEN_URI, SPIFFE, 0}, {GEN_DNS, "node.example.org", 0}};
	const struct san dns_first[] = {{GEN_DNS, "node.example.org", 0}, {GEN_URI, SPIFFE, 0}};
	const struct san ip[] = {{GEN_URI, SPIFFE, 0}, {GEN_IPADD, "10.0.0.1", 0}};
	const struct san email[] = {{GEN_URI, SPIFFE, 0}, {GEN_EMAIL, "a@example.org", 0}};
	const struct san bad_id1[] = {
	    {GEN_URI, "spiffe://" TD "/node/node_01HZX3K9Q8W7E6R5T4Y3U2I1O0", 0}};
	const struct san bad_id2[] = {{GEN_URI, "spiffe://" TD "/node/node_short", 0}};
	const struct san bad_id3[] = {
	    {GEN_URI, "spiffe://" TD "/node/tok_01hzx3k9q8w7e6r5t4y3u2i1o0", 0}};
	const struct san bad_id4[] = {{GEN_URI, SPIFFE "0", 0}};
	const struct san bad_role1[] = {{GEN_URI, "spiffe://" TD "/admin/" NODE_ID, 0}};
	const struct san bad_role2[] = {{GEN_URI, "spiffe://" TD "/Node/" NODE_ID, 0}};
	const struct san bad_role3[] = {{GEN_URI, "spiffe://" TD "//" NODE_ID, 0}};
	const struct san no_role[] = {{GEN_URI, "spiffe://" TD "/" NODE_ID, 0}};
	const struct san extra_seg[] = {{GEN_URI, SPIFFE "/x", 0}};
	const struct san query[] = {{GEN_URI, SPIFFE "?x=1", 0}};
	const struct san upper[] = {{GEN_URI, "SPIFFE://" TD "/node/" NODE_ID, 0}};
	const struct san non_urn[] = {{GEN_URI, SPIFFE, 0}, {GEN_URI, "https://example.org/", 0}};
	const struct san urn_case[] = {{GEN_URI, SPIFFE, 0}, {GEN_URI, "URN:BC:a", 0}};
	const struct san urn_space[] = {{GEN_URI, SPIFFE, 0}, {GEN_URI, "urn:bc:a b", 0}};
	const struct san urn_ctl[] = {{GEN_URI, SPIFFE, 0}, {GEN_URI, "urn:bc:a\x01", 0}};
	/* a NUL after a good role, then a good node id */
	static const char nul_role[] = "spiffe://" TD "/node\0x/" NODE_ID;
	const struct san role_nul[] = {{GEN_URI, nul_role, sizeof(nul_role) - 1}};
	static const char nul_urn[] = "urn:bc:a\0b";
	const struct san urn_nul[] = {{GEN_URI, SPIFFE, 0},
	                              {GEN_URI, nul_urn, sizeof(nul_urn) - 1}};
	const struct san five[] = {{GEN_URI, SPIFFE, 0},
	                           {GEN_URI, "urn:bc:a", 0},
	                           {GEN_URI, "urn:bc:b", 0},
	                           {GEN_URI, "urn:bc:c", 0},
	                           {GEN_URI, "urn:bc:d", 0}};
	const struct san *cases[] = {
	    two_spiffe, not_first, other_td, td_prefix, td_suffix, dns,     dns_first,
	    ip,         email,     bad_id1,  bad_id2,   bad_id3,   bad_id4, bad_role1,
	    bad_role2,  bad_role3, no_role,  extra_seg, query,     upper,   non_urn,
	    urn_case,   urn_space, urn_ctl,  role_nul,  urn_nul,   five};
	const size_t counts[] = {
	    NSANS(two_spiffe), NSANS(not_first), NSANS(other_td),  NSANS(td_prefix),
	    NSANS(td_suffix),  NSANS(dns),       NSANS(dns_first), NSANS(ip),
	    NSANS(email),      NSANS(bad_id1),   NSANS(bad_id2),   NSANS(bad_id3),
	    NSANS(bad_id4),    NSANS(bad_role1), NSANS(bad_role2), NSANS(bad_role3),
	    NSANS(no_role),    NSANS(extra_seg), NSANS(query),     NSANS(upper),
	    NSANS(non_urn),    NSANS(urn_case),  NSANS(urn_space), NSANS(urn_ctl),
	    NSANS(role_nul),   NSANS(urn_nul),   NSANS(five)};

	assert_int_equal(NSANS(cases), NSANS(counts));
	for (size_t i = 0; i < NSANS(cases); i++) {
		print_message("case %zu\n", i);
		assert_int_equal(identity_of(f, cases[i], counts[i], 1), BC_ERR_INVALID);
	}
	/* no SAN extension at all, an empty one, and the good one twice */
	assert_int_equal(identity_of(f, NULL, 0, 0), BC_ERR_INVALID);
	assert_int_equal(identity_of(f, NULL, 0, 1), BC_ERR_INVALID);
	{
		const struct san one[] = {{GEN_URI, SPIFFE, 0}};
		assert_int_equal(identity_of(f, one, 1, 2), BC_ERR_INVALID);
	}
}

static void test_identity_der_framing(void **state)
{
	struct fixture *f = *state;
	struct bc_node_cert_req r = node_req(f->key, BC_ROLE_NODE);
	struct bc_node_identity id;
	uint8_t *der, *longer;
	size_t len;
	char serial[33];
	int64_t na;
	static const uint8_t garbage[] = {0x30, 0x03, 0x02, 0x01, 0x01};

	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na), 0);
	longer = malloc(len + 1);
	memcpy(longer, der, len);
	longer[len] = 0x00;
	assert_int_equal(bc_pki_node_identity(longer, len + 1, TD, &id, NULL), BC_ERR_TRAILING);
	assert_int_equal(bc_pki_verify_node_cert(f->pki, longer, len + 1), BC_ERR_TRAILING);
	assert_int_equal(bc_pki_node_identity(der, len - 1, TD, &id, NULL), BC_ERR_INVALID);
	assert_int_equal(bc_pki_node_identity(der, 0, TD, &id, NULL), BC_ERR_INVALID);
	assert_int_equal(bc_pki_node_identity(garbage, sizeof(garbage), TD, &id, NULL),
	                 BC_ERR_INVALID);
	/* the trust domain asked for is checked too */
	assert_int_equal(bc_pki_node_identity(der, len, "other.org", &id, NULL), BC_ERR_INVALID);
	assert_int_equal(bc_pki_node_identity(der, len, "example", &id, NULL), BC_ERR_INVALID);
	assert_int_equal(bc_pki_node_identity(der, len, "", &id, NULL), BC_ERR_INVALID);
	assert_int_equal(bc_pki_node_identity(der, len, TD, &id, NULL), 0);
	bc_node_identity_clear(&id);
	free(longer);
	free(der);
}

static void test_verify_under_ca(void **state)
{
	struct fixture *f = *state;
	struct bc_node_cert_req r = node_req(f->key, BC_ROLE_NODE);
	const struct san one[] = {{GEN_URI, SPIFFE, 0}};
	uint8_t *der, *hand;
	size_t len, hlen;
	char serial[33];
	int64_t na;

	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na), 0);
	assert_int_equal(bc_pki_verify_node_cert(f->pki, der, len), 0);
	/* the other bundle's node CA has the same name, another key */
	assert_int_equal(bc_pki_verify_node_cert(f->other, der, len), BC_ERR_VERIFY);
	/* a changed signature byte */
	der[len - 1] ^= 0x01;
	assert_int_equal(bc_pki_verify_node_cert(f->pki, der, len), BC_ERR_VERIFY);
	free(der);
	/* a certificate with our issuer name and no AKI, signed by another CA key */
	hand = hand_cert(f->other, f->key, one, 1, 1, &hlen);
	assert_int_equal(bc_pki_verify_node_cert(f->pki, hand, hlen), BC_ERR_VERIFY);
	assert_int_equal(bc_pki_verify_node_cert(f->other, hand, hlen), 0);
	OPENSSL_free(hand);
	assert_int_equal(bc_pki_verify_node_cert(f->pki, (const uint8_t *)"x", 1), BC_ERR_INVALID);
}

/* What another X.509 implementation reads: the first URI OpenSSL's own
 * printer shows is the SPIFFE ID. */
static void test_openssl_text(void **state)
{
	struct fixture *f = *state;
	const char *st[] = {"urn:bc:a", "urn:bc:b"};
	struct bc_node_cert_req r = node_req(f->key, BC_ROLE_NODE);
	char path[] = "/tmp/pki_cert_test_XXXXXX", cmd[128], line[1024];
	int fd, in_san = 0, seen = 0;
	uint8_t *der;
	size_t len;
	char serial[33];
	int64_t na;
	FILE *p;

	r.statements = st;
	r.n_statements = 2;
	assert_int_equal(bc_pki_issue_node_cert(f->pki, &r, &der, &len, serial, &na), 0);
	assert_true((fd = mkstemp(path)) >= 0);
	assert_int_equal(write(fd, der, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "openssl x509 -inform DER -noout -text -in %s", path);
	assert_non_null(p = popen(cmd, "r"));
	while (fgets(line, sizeof(line), p) != NULL) {
		if (strstr(line, "X509v3 Subject Alternative Name") != NULL) {
			in_san = 1;
			continue;
		}
		if (in_san && !seen) {
			const char *u = strstr(line, "URI:");
			assert_non_null(u);
			assert_memory_equal(u, "URI:" SPIFFE, strlen("URI:" SPIFFE));
			assert_true(strchr(",\n", u[strlen("URI:" SPIFFE)]) != NULL);
			assert_non_null(strstr(line, "URI:urn:bc:a, URI:urn:bc:b"));
			seen = 1;
		}
	}
	assert_int_equal(pclose(p), 0);
	assert_int_equal(seen, 1);
	unlink(path);
	free(der);
}

static void test_spiffe_id_and_roles(void **state)
{
	char *s;

	assert_non_null(s = bc_spiffe_id(TD, "node", NODE_ID));
	assert_string_equal(s, SPIFFE);
	free(s);
	assert_non_null(s = bc_spiffe_id(TD, "node-tenant", NODE_ID));
	assert_string_equal(s, "spiffe://" TD "/node-tenant/" NODE_ID);
	free(s);
	assert_null(bc_spiffe_id("Example.org", "node", NODE_ID));
	assert_null(bc_spiffe_id("a/b", "node", NODE_ID));
	assert_null(bc_spiffe_id(TD, "admin", NODE_ID));
	assert_null(bc_spiffe_id(TD, "node", "node_x"));
	assert_null(bc_spiffe_id(TD, "node", NULL));
	assert_true(bc_role_valid("node"));
	assert_true(bc_role_valid("site"));
	assert_true(bc_role_valid("ramdisk"));
	assert_true(bc_role_valid("node-tenant"));
	assert_false(bc_role_valid("Node"));
	assert_false(bc_role_valid("node "));
	assert_false(bc_role_valid(""));
	assert_false(bc_role_valid(NULL));
	assert_true(bc_node_id_valid(NODE_ID));
	assert_true(bc_node_id_valid("node_0123456789abcdefghijklmnop"));
	assert_false(bc_node_id_valid("node_0123456789abcdefghijklmno_"));
	assert_false(bc_node_id_valid("node_"));
}

static void test_x509_der_pem(void **state)
{
	struct fixture *f = *state;
	uint8_t *der, *longer;
	size_t len;
	char *pem;
	X509 *x;
	BIO *bio;

	assert_int_equal(bc_x509_to_der(f->pki->node_ca, &der, &len), 0);
	assert_int_equal(bc_x509_from_der(der, len, &x), 0);
	assert_int_equal(X509_cmp(x, f->pki->node_ca), 0);
	X509_free(x);
	longer = malloc(len + 2);
	memcpy(longer, der, len);
	longer[len] = 0x05;
	longer[len + 1] = 0x00;
	assert_int_equal(bc_x509_from_der(longer, len + 2, &x), BC_ERR_TRAILING);
	assert_null(x);
	assert_int_equal(bc_x509_from_der(der, len - 1, &x), BC_ERR_INVALID);
	assert_int_equal(bc_x509_from_der(der, 0, &x), BC_ERR_INVALID);
	free(longer);
	free(der);
	assert_int_equal(bc_x509_to_pem(f->pki->tls_ca, &pem), 0);
	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
	bio = BIO_new_mem_buf(pem, -1);
	x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	assert_non_null(x);
	assert_int_equal(X509_cmp(x, f->pki->tls_ca), 0);
	X509_free(x);
	BIO_free(bio);
	free(pem);
}

static void test_server_tls_cert(void **state)
{
	struct fixture *f = *state;
	const char *hosts[] = {"bc.example.org", "127.0.0.1", "::1", "localhost"};
	char *cert = NULL, *key = NULL;
	EVP_PKEY *k = NULL;
	GENERAL_NAMES *gens;
	BIO *bio;
	X509 *x;
	int day = 0, sec = 0;

	assert_int_equal(bc_pki_server_tls_cert(f->pki, hosts, 4, &cert, &key), 0);
	assert_non_null(strstr(key, "-----BEGIN PRIVATE KEY-----"));
	assert_int_equal(bc_key_from_pem(key, strlen(key), &k), 0);
	bio = BIO_new_mem_buf(cert, -1);
	assert_non_null(x = PEM_read_bio_X509(bio, NULL, NULL, NULL));
	assert_int_equal(X509_check_private_key(x, k), 1);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(f->pki->tls_ca)), 1);
	assert_int_equal(X509_check_issued(f->pki->tls_ca, x), X509_V_OK);
	assert_int_equal(X509_check_ca(x), 0);
	assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_SERVER);
	assert_int_equal(X509_check_host(x, "bc.example.org", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(x, "localhost", 0, 0, NULL), 1);
	assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_ip_asc(x, "::1", 0), 1);
	assert_int_equal(X509_check_host(x, "127.0.0.1", 0, 0, NULL), 0); /* an IP is no DNS name */
	gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	assert_int_equal(sk_GENERAL_NAME_num(gens), 4);
	assert_int_equal(sk_GENERAL_NAME_value(gens, 0)->type, GEN_DNS);
	assert_int_equal(sk_GENERAL_NAME_value(gens, 1)->type, GEN_IPADD);
	assert_int_equal(sk_GENERAL_NAME_value(gens, 2)->type, GEN_IPADD);
	assert_int_equal(sk_GENERAL_NAME_value(gens, 3)->type, GEN_DNS);
	GENERAL_NAMES_free(gens);
	assert_true(ASN1_TIME_diff(&day, &sec, X509_get0_notBefore(x), X509_get0_notAfter(x)));
	assert_true(day >= 365 && day <= 367);
	X509_free(x);
	BIO_free(bio);
	EVP_PKEY_free(k);
	free(cert);
	free(key);
	{
		const char *bad1[] = {"a b"}, *bad2[] = {"x/y"}, *bad3[] = {NULL}, *bad4[] = {""};
		const char **bads[] = {bad1, bad2, bad3, bad4};
		for (size_t i = 0; i < 4; i++) {
			assert_int_equal(bc_pki_server_tls_cert(f->pki, bads[i], 1, &cert, &key),
			                 BC_ERR_INVALID);
			assert_null(cert);
			assert_null(key);
		}
		assert_int_equal(bc_pki_server_tls_cert(f->pki, hosts, 0, &cert, &key),
		                 BC_ERR_INVALID);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_issue_and_read),
	    cmocka_unit_test(test_node_cert_der_is_what_openssl_builds),
	    cmocka_unit_test(test_roles_and_ttl),
	    cmocka_unit_test(test_times_whole_seconds),
	    cmocka_unit_test(test_serials_differ),
	    cmocka_unit_test(test_statement_limits),
	    cmocka_unit_test(test_statement_no_injection),
	    cmocka_unit_test(test_issue_bad_requests),
	    cmocka_unit_test(test_identity_hand_built),
	    cmocka_unit_test(test_identity_refusals),
	    cmocka_unit_test(test_identity_der_framing),
	    cmocka_unit_test(test_verify_under_ca),
	    cmocka_unit_test(test_openssl_text),
	    cmocka_unit_test(test_spiffe_id_and_roles),
	    cmocka_unit_test(test_x509_der_pem),
	    cmocka_unit_test(test_server_tls_cert),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
