/* src/pki/node_read.c: bc_pki_node_cert_peek against the X509 path it stands in for
 * (bc_x509_from_der, bc_pki_node_identity_x509). Issued node certificates read back the
 * same; every way of being out of form reaches its return code and leaves the identity
 * cleared and the point zeroed; nothing the X509 path refuses is accepted. The peek
 * checks no signature: a presented certificate is ours when its row holds its bytes
 * (join/holder.h), or the X509 path verifies it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/ec.h>
#include <openssl/x509v3.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

#define TD       "example.org"
#define NODE_ID  "node_01hzx3k9q8w7e6r5t4y3u2i1o0"
#define NODE_ID2 "node_99hzx3k9q8w7e6r5t4y3u2i1o0"
#define SPIFFE   "spiffe://" TD "/node/" NODE_ID
#define NB_MS    1767225600000LL /* 2026-01-01T00:00:00Z */
#define Y2050_MS 2524608000000LL /* 2050-01-01T00:00:00Z */

struct fixture {
	bc_pki *pki;
	bc_pki *other;    /* another bundle for the same trust domain: same CA name */
	bc_pki *other_td; /* a bundle for another trust domain: another CA name */
	EVP_PKEY *key;
	uint8_t point[65];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL || bc_pki_generate(TD, &f->pki) != 0 || bc_pki_generate(TD, &f->other) != 0 ||
	    bc_pki_generate("other.org", &f->other_td) != 0 || bc_key_generate(&f->key) != 0 ||
	    bc_key_to_point(f->key, f->point) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	bc_pki_free(f->pki);
	bc_pki_free(f->other);
	bc_pki_free(f->other_td);
	EVP_PKEY_free(f->key);
	free(f);
	return 0;
}

/* ---- the peek and the X509 path ---- */

/* The X509 path as src/join/renew.c runs it: 0 and the identity and point, or the
 * first error. A certificate whose key OpenSSL could not decode has a zero point. */
static int x509_path(const bc_pki *pki, const uint8_t *der, size_t len, struct bc_node_identity *id,
                     uint8_t point[65])
{
	X509 *x = NULL;
	EVP_PKEY *pub;
	int rc;

	memset(id, 0, sizeof(*id));
	memset(point, 0, 65);
	if ((rc = bc_x509_from_der(der, len, &x)) != 0)
		return rc;
	if ((rc = bc_pki_node_identity_x509(x, pki->trust_domain, id)) == 0 &&
	    (rc = bc_pki_verify_node_x509(pki, x)) != 0)
		bc_node_identity_clear(id);
	if (rc == 0 && (pub = X509_get0_pubkey(x)) != NULL && bc_key_to_point(pub, point) != 0)
		memset(point, 0, 65);
	X509_free(x);
	return rc;
}

static void assert_same_identity(const struct bc_node_identity *a, const struct bc_node_identity *b)
{
	assert_string_equal(a->node_id, b->node_id);
	assert_string_equal(a->role, b->role);
	assert_int_equal(a->n_statements, b->n_statements);
	for (size_t i = 0; i < BC_MAX_URIS; i++) {
		if (a->statements[i] == NULL || b->statements[i] == NULL)
			assert_ptr_equal(a->statements[i], b->statements[i]);
		else
			assert_string_equal(a->statements[i], b->statements[i]);
	}
	assert_int_equal(a->not_before_ms, b->not_before_ms);
	assert_int_equal(a->not_after_ms, b->not_after_ms);
	assert_string_equal(a->serial_hex, b->serial_hex);
}

/* The peek accepts der, and so does the X509 path (with the CA), with the same identity and point;
 * the identity is left in *out when it is not NULL (the caller clears it). */
static void assert_reads_same(const bc_pki *pki, const uint8_t *der, size_t len,
                              struct bc_node_identity *out)
{
	struct bc_node_identity a, b;
	uint8_t pa[65], pb[65];

	assert_int_equal(bc_pki_node_cert_peek(der, len, pki->trust_domain, &a, pa), 0);
	assert_int_equal(x509_path(pki, der, len, &b, pb), 0);
	assert_same_identity(&a, &b);
	assert_memory_equal(pa, pb, 65);
	assert_int_equal(pa[0], 0x04);
	bc_node_identity_clear(&b);
	if (out != NULL)
		*out = a;
	else
		bc_node_identity_clear(&a);
}

static int all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		if (b[i] != 0)
			return 0;
	}
	return 1;
}

/* The peek's code for der (pki's trust domain), after checking that a refusal leaves id cleared and
 * the point zeroed (both are filled with junk first). */
static int read_rc(const bc_pki *pki, const uint8_t *der, size_t len)
{
	struct bc_node_identity id;
	uint8_t point[65];
	int rc;

	memset(&id, 0x5a, sizeof(id));
	memset(point, 0x5a, sizeof(point));
	rc = bc_pki_node_cert_peek(der, len, pki->trust_domain, &id, point);
	if (rc == 0) {
		bc_node_identity_clear(&id);
		return 0;
	}
	assert_true(all_zero(&id, sizeof(id)));
	assert_true(all_zero(point, sizeof(point)));
	return rc;
}

/* The X509 path's code for der. */
static int x509_rc(const bc_pki *pki, const uint8_t *der, size_t len)
{
	struct bc_node_identity id;
	uint8_t point[65];
	int rc = x509_path(pki, der, len, &id, point);

	bc_node_identity_clear(&id);
	return rc;
}

/* bc_pki_node_identity's X509 path alone (no fast path): one parse, the identity, and
 * the key's point (zero when it is not P-256). */
static int x509_identity(const uint8_t *der, size_t len, const char *td,
                         struct bc_node_identity *id, uint8_t point[65])
{
	X509 *x = NULL;
	EVP_PKEY *pub;
	int rc;

	memset(id, 0, sizeof(*id));
	memset(point, 0, 65);
	if ((rc = bc_x509_from_der(der, len, &x)) == 0 &&
	    (rc = bc_pki_node_identity_x509(x, td, id)) == 0 &&
	    ((pub = X509_get0_pubkey(x)) == NULL || bc_key_to_point(pub, point) != 0))
		memset(point, 0, 65);
	X509_free(x);
	return rc;
}

/* The peek's code for der, checking that a refusal leaves id cleared and the point
 * zeroed, and that whatever it accepts the X509 path reads the same; and that
 * bc_pki_node_identity, which peeks first, answers as the X509 path alone. */
static int peek_rc(const uint8_t *der, size_t len, const char *td)
{
	struct bc_node_identity a, b, c;
	uint8_t pa[65], pb[65];
	int rc, xrc, irc;

	memset(&a, 0x5a, sizeof(a));
	memset(pa, 0x5a, sizeof(pa));
	rc = bc_pki_node_cert_peek(der, len, td, &a, pa);
	xrc = x509_identity(der, len, td, &b, pb);
	irc = bc_pki_node_identity(der, len, td, &c, NULL);
	assert_int_equal(irc, xrc);
	if (rc == 0) {
		assert_int_equal(xrc, 0);
		assert_same_identity(&a, &b);
		assert_same_identity(&c, &b);
		assert_memory_equal(pa, pb, 65);
		bc_node_identity_clear(&a);
	} else {
		assert_true(all_zero(&a, sizeof(a)));
		assert_true(all_zero(pa, sizeof(pa)));
	}
	bc_node_identity_clear(&b);
	bc_node_identity_clear(&c);
	return rc;
}

/* ---- certificates ---- */

static uint8_t *issue(struct fixture *f, const bc_pki *pki, const char *role, const char *const *st,
                      size_t n, int64_t nb_ms, int64_t ttl_ms, size_t *len)
{
	struct bc_node_cert_req r = {
	    .node_id = NODE_ID,
	    .role = role,
	    .pub = f->key,
	    .statements = st,
	    .n_statements = n,
	    .not_before_ms = nb_ms,
	    .ttl_ms = ttl_ms,
	};
	uint8_t *der = NULL;
	char serial[33];
	int64_t na;

	assert_int_equal(bc_pki_issue_node_cert(pki, &r, &der, len, serial, &na), 0);
	return der;
}

/* node_der.c directly: any CN, point and URIs, issued by ca's name and SKI and signed
 * with key (another CA's, to forge). */
static uint8_t *node_der(X509 *ca, EVP_PKEY *key, const char *cn, const uint8_t point[65],
                         const char *const *uris, size_t n_uris, size_t *len)
{
	struct pki_node_fields nf = {.cn = cn,
	                             .not_before_ms = NB_MS,
	                             .not_after_ms = NB_MS + BC_NODE_CERT_TTL_MS,
	                             .n_uris = n_uris};
	uint8_t *der = NULL;

	for (size_t i = 0; i < n_uris; i++)
		nf.uris[i] = uris[i];
	memcpy(nf.point, point, 65);
	assert_int_equal(pki_serial_draw(nf.serial), 0);
	assert_int_equal(pki_node_cert_der(&nf, ca, key, &der, len), 0);
	return der;
}

/* pki_cert_build with the node extensions: OpenSSL's X509 API, same form. */
static X509 *openssl_node_cert(struct fixture *f, EVP_PKEY *pub)
{
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	uint8_t serial[PKI_SERIAL_LEN];
	X509 *x = NULL;
	struct pki_cert_spec spec = {.pub = pub,
	                             .cn = NODE_ID,
	                             .issuer = f->pki->node_ca,
	                             .issuer_key = f->pki->node_ca_key,
	                             .not_before_ms = NB_MS,
	                             .not_after_ms = NB_MS + BC_NODE_CERT_TTL_MS,
	                             .basic_constraints = "critical,CA:FALSE",
	                             .key_usage = "critical,digitalSignature",
	                             .ext_key_usage = "clientAuth",
	                             .san = gens};

	assert_non_null(gens);
	assert_int_equal(pki_gens_add(gens, GEN_URI, SPIFFE, strlen(SPIFFE)), 0);
	assert_int_equal(pki_gens_add(gens, GEN_URI, "urn:bc:a", 8), 0);
	assert_int_equal(pki_cert_build(&spec, &x, serial), 0);
	GENERAL_NAMES_free(gens);
	return x;
}

static uint8_t *to_der(X509 *x, size_t *len)
{
	uint8_t *der = NULL;

	assert_int_equal(bc_x509_to_der(x, &der, len), 0);
	return der;
}

/* ---- reading back what was issued ---- */

/* Every role, 0 to 3 statements (one of them the longest allowed), times in UTCTime,
 * in GeneralizedTime and across the switch: the peek gives what the X509 path
 * gives, and what was issued. */
static void test_issued_read_back(void **state)
{
	struct fixture *f = *state;
	static char longest[PKI_STATEMENT_MAX + 1];
	const char *roles[] = {BC_ROLE_NODE, BC_ROLE_SITE, BC_ROLE_RAMDISK, BC_ROLE_NODE_TENANT};
	const char *st[] = {"urn:bc:tpm:ak:sha256:00ff",
	                    "urn:bc:pool:pool_01hzx3k9q8w7e6r5t4y3u2i1o0", longest};
	const size_t counts[] = {0, 1, 3};
	const int64_t times[] = {
	    NB_MS,                  /* UTCTime */
	    0,                      /* 1970-01-01: UTCTime 70... */
	    Y2050_MS - 3600 * 1000, /* UTCTime, then GeneralizedTime */
	    Y2050_MS,               /* GeneralizedTime */
	    PKI_MAX_TIME_MS - BC_NODE_CERT_TTL_MS - BC_NODE_CERT_BACKDATE_MS, /* 9999-12-30 */
	    951782400000LL /* 2000-02-29T00:00:00Z */,                        /* a leap day */
	};
	size_t n = 0;

	memcpy(longest, "urn:bc:", 7);
	memset(longest + 7, 'x', PKI_STATEMENT_MAX - 7);
	longest[PKI_STATEMENT_MAX] = '\0';
	for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
		for (size_t s = 0; s < sizeof(counts) / sizeof(counts[0]); s++) {
			for (size_t t = 0; t < sizeof(times) / sizeof(times[0]); t++) {
				struct bc_node_cert_req req = {
				    .node_id = NODE_ID,
				    .role = roles[r],
				    .pub = f->key,
				    .statements = st,
				    .n_statements = counts[s],
				    .not_before_ms = times[t] + BC_NODE_CERT_BACKDATE_MS};
				struct bc_node_identity id;
				uint8_t *der = NULL, point[65];
				size_t len = 0;
				char serial[33];
				int64_t na;

				/* a part second, rounded down (but not past the latest time) */
				if (times[t] < PKI_MAX_TIME_MS - BC_NODE_CERT_TTL_MS -
				                   BC_NODE_CERT_BACKDATE_MS)
					req.not_before_ms += 999;
				assert_int_equal(
				    bc_pki_issue_node_cert(f->pki, &req, &der, &len, serial, &na),
				    0);
				assert_reads_same(f->pki, der, len, &id);
				assert_string_equal(id.node_id, NODE_ID);
				assert_string_equal(id.role, roles[r]);
				assert_int_equal(id.n_statements, counts[s]);
				for (size_t i = 0; i < counts[s]; i++)
					assert_string_equal(id.statements[i], st[i]);
				assert_int_equal(id.not_before_ms, times[t]);
				assert_int_equal(id.not_after_ms, na);
				assert_string_equal(id.serial_hex, serial);
				bc_node_identity_clear(&id);
				assert_int_equal(bc_pki_node_cert_peek(der, len, TD, &id, point),
				                 0);
				assert_memory_equal(point, f->point, 65);
				bc_node_identity_clear(&id);
				free(der);
				n++;
			}
		}
	}
	print_message("%zu certificates read back as the X509 path reads them\n", n);
}

/* OpenSSL's X509 API with the node extensions builds the same form (pki_cert_test
 * checks it byte for byte): read the same. */
static void test_openssl_built_same_form(void **state)
{
	struct fixture *f = *state;
	X509 *x = openssl_node_cert(f, f->key);
	size_t len;
	uint8_t *der = to_der(x, &len);

	assert_reads_same(f->pki, der, len, NULL);
	free(der);
	X509_free(x);
}

/* ---- malformed: BC_ERR_INVALID, BC_ERR_LIMIT ---- */

static void test_truncated_everywhere(void **state)
{
	struct fixture *f = *state;
	const char *st[] = {"urn:bc:a"};
	size_t len;
	uint8_t *der = issue(f, f->pki, BC_ROLE_NODE, st, 1, NB_MS, 0, &len);

	for (size_t n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1); /* its own allocation: ASan sees overreads */
		memcpy(cut, der, n);
		assert_int_equal(read_rc(f->pki, n ? cut : NULL, n), BC_ERR_INVALID);
		assert_int_equal(read_rc(f->pki, cut, n), BC_ERR_INVALID);
		assert_int_not_equal(x509_rc(f->pki, cut, n), 0);
		free(cut);
	}
	free(der);
}

/* Every byte changed, three ways: whatever the peek reads, the X509 path reads the
 * same, and bc_pki_node_identity answers as the X509 path throughout (peek_rc checks
 * both); the peek, which checks neither the issuer's name nor the signature, reads a
 * change there. */
static void test_every_byte_flipped(void **state)
{
	struct fixture *f = *state;
	const char *st[] = {"urn:bc:a", "urn:bc:b"};
	static const uint8_t masks[] = {0x01, 0x80, 0xff};
	size_t len, invalid = 0, unsupported = 0, x509_ok = 0, peek_ok = 0;
	uint8_t *der = issue(f, f->pki, BC_ROLE_SITE, st, 2, NB_MS, 0, &len);
	uint8_t *b = malloc(len);

	for (size_t m = 0; m < sizeof(masks); m++) {
		for (size_t i = 0; i < len; i++) {
			int rc;
			memcpy(b, der, len);
			b[i] ^= masks[m];
			rc = peek_rc(b, len, TD);
			if (rc == 0)
				peek_ok++;
			else if (rc == BC_ERR_INVALID)
				invalid++;
			else if (rc == BC_ERR_UNSUPPORTED)
				unsupported++;
			else
				fail_msg("byte %zu ^ 0x%02x: %d", i, masks[m], rc);
			if (x509_rc(f->pki, b, len) == 0)
				x509_ok++;
		}
	}
	print_message("%zu changes: %zu invalid, %zu unsupported; the X509 path with the CA "
	              "accepted %zu, the peek %zu\n",
	              3 * len, invalid, unsupported, x509_ok, peek_ok);
	assert_true(invalid > 0 && unsupported > 0 && peek_ok > 0);
	free(b);
	free(der);
}

static void test_framing(void **state)
{
	struct fixture *f = *state;
	size_t len;
	uint8_t *der = issue(f, f->pki, BC_ROLE_NODE, NULL, 0, NB_MS, 0, &len);
	uint8_t *b = malloc(PKI_MAX_DER + 1);

	/* one byte after it: BC_ERR_TRAILING on the X509 path */
	memcpy(b, der, len);
	b[len] = 0x00;
	assert_int_equal(read_rc(f->pki, b, len + 1), BC_ERR_INVALID);
	assert_int_equal(x509_rc(f->pki, b, len + 1), BC_ERR_TRAILING);
	/* too long before anything is read */
	memset(b + len, 0, PKI_MAX_DER + 1 - len);
	assert_int_equal(read_rc(f->pki, b, PKI_MAX_DER + 1), BC_ERR_LIMIT);
	assert_int_equal(x509_rc(f->pki, b, PKI_MAX_DER + 1), BC_ERR_LIMIT);
	/* nothing, no trust domain */
	assert_int_equal(read_rc(f->pki, NULL, 0), BC_ERR_INVALID);
	assert_int_equal(read_rc(f->pki, der, 0), BC_ERR_INVALID);
	{
		bc_pki p = *f->pki;
		p.trust_domain = "";
		assert_int_equal(read_rc(&p, der, len), BC_ERR_INVALID);
	}
	/* DER that is not a certificate */
	{
		static const uint8_t seq_int[] = {0x30, 0x03, 0x02, 0x01, 0x01};
		static const uint8_t three_ints[] = {0x30, 0x09, 0x02, 0x01, 0x01, 0x02,
		                                     0x01, 0x01, 0x02, 0x01, 0x01};
		static const uint8_t eoc[] = {0x30, 0x02, 0x00, 0x00};
		static const uint8_t high_tag[] = {0x30, 0x03, 0x1f, 0x81, 0x00};
		static const uint8_t cons_int[] = {0x30, 0x04, 0x22, 0x02, 0x05, 0x00};
		static const uint8_t prim_seq[] = {0x30, 0x02, 0x10, 0x00};
		static const uint8_t inner_long[] = {0x30, 0x03, 0x04, 0x05, 0x00};
		assert_int_equal(read_rc(f->pki, seq_int, sizeof(seq_int)), BC_ERR_INVALID);
		assert_int_equal(read_rc(f->pki, three_ints, sizeof(three_ints)), BC_ERR_INVALID);
		assert_int_equal(read_rc(f->pki, eoc, sizeof(eoc)), BC_ERR_INVALID);
		assert_int_equal(read_rc(f->pki, high_tag, sizeof(high_tag)), BC_ERR_INVALID);
		assert_int_equal(read_rc(f->pki, cons_int, sizeof(cons_int)), BC_ERR_INVALID);
		assert_int_equal(read_rc(f->pki, prim_seq, sizeof(prim_seq)), BC_ERR_INVALID);
		assert_int_equal(read_rc(f->pki, inner_long, sizeof(inner_long)), BC_ERR_INVALID);
		assert_int_equal(read_rc(f->pki, (const uint8_t *)"x", 1), BC_ERR_INVALID);
	}
	/* nesting deeper than any certificate: 20 empty-ended SEQUENCEs inside the outer */
	{
		uint8_t deep[2 + 2 * 20];
		deep[0] = 0x30;
		deep[1] = 2 * 20;
		for (size_t i = 0; i < 20; i++) {
			deep[2 + 2 * i] = 0x30;
			deep[3 + 2 * i] = (uint8_t)(2 * (19 - i));
		}
		assert_int_equal(read_rc(f->pki, deep, sizeof(deep)), BC_ERR_INVALID);
	}
	free(b);
	free(der);
}

/* Lengths in a longer form than DER's: the outer header with a leading zero byte, the
 * version's 3 as 0x81 0x03, an indefinite outer length. */
static void test_non_minimal_lengths(void **state)
{
	struct fixture *f = *state;
	size_t len, n;
	uint8_t *der = issue(f, f->pki, BC_ROLE_NODE, NULL, 0, NB_MS, 0, &len);
	uint8_t *b = malloc(len + 2);
	int x;

	/* both headers are 30 82 xx xx, the version a0 03 */
	assert_true(der[0] == 0x30 && der[1] == 0x82 && der[4] == 0x30 && der[5] == 0x82);
	assert_true(der[8] == 0xa0 && der[9] == 0x03);
	/* 30 83 00 xx xx: the signed bytes unchanged */
	b[0] = 0x30;
	b[1] = 0x83;
	b[2] = 0x00;
	memcpy(b + 3, der + 2, len - 2);
	assert_int_equal(read_rc(f->pki, b, len + 1), BC_ERR_INVALID);
	x = x509_rc(f->pki, b, len + 1);
	print_message("outer length with a leading zero: the X509 path says %d\n", x);
	/* a0 81 03 inside the to-be-signed part, the two lengths around it one more */
	memcpy(b, der, 8);
	n = ((size_t)der[2] << 8 | der[3]) + 1;
	b[2] = (uint8_t)(n >> 8);
	b[3] = (uint8_t)n;
	n = ((size_t)der[6] << 8 | der[7]) + 1;
	b[6] = (uint8_t)(n >> 8);
	b[7] = (uint8_t)n;
	b[8] = 0xa0;
	b[9] = 0x81;
	b[10] = 0x03;
	memcpy(b + 11, der + 10, len - 10);
	assert_int_equal(read_rc(f->pki, b, len + 1), BC_ERR_INVALID);
	assert_int_not_equal(x509_rc(f->pki, b, len + 1), 0);
	/* 30 80 ... 00 00 */
	b[0] = 0x30;
	b[1] = 0x80;
	memcpy(b + 2, der + 4, len - 4);
	b[len - 2] = 0x00;
	b[len - 1] = 0x00;
	assert_int_equal(read_rc(f->pki, b, len), BC_ERR_INVALID);
	x = x509_rc(f->pki, b, len);
	print_message("indefinite outer length: the X509 path says %d\n", x);
	free(b);
	free(der);
}

/* The first UTCTime of the validity: 0x17 0x0d then 12 digits and 'Z'. */
static size_t find_utctime(const uint8_t *der, size_t len)
{
	for (size_t i = 0; i + 15 <= len; i++) {
		size_t d = 0;
		if (der[i] != 0x17 || der[i + 1] != 0x0d || der[i + 14] != 'Z')
			continue;
		while (d < 12 && der[i + 2 + d] >= '0' && der[i + 2 + d] <= '9')
			d++;
		if (d == 12)
			return i;
	}
	fail_msg("no UTCTime");
	return 0;
}

/* Times in the right shape but out of range are malformed; another shape is another
 * form. Either way the signature no longer holds, so the X509 path refuses too. */
static void test_bad_times(void **state)
{
	struct fixture *f = *state;
	static const struct {
		size_t at; /* into YYMMDDHHMMSSZ */
		const char *with;
		int want;
	} cases[] = {
	    {2, "13", BC_ERR_INVALID},     {2, "00", BC_ERR_INVALID},   {4, "00", BC_ERR_INVALID},
	    {4, "32", BC_ERR_INVALID},     {6, "24", BC_ERR_INVALID},   {8, "60", BC_ERR_INVALID},
	    {10, "60", BC_ERR_INVALID},    {0, "2a", BC_ERR_INVALID},   {10, "5 ", BC_ERR_INVALID},
	    {12, "+", BC_ERR_UNSUPPORTED}, {2, "0230", BC_ERR_INVALID}, /* February 30 */
	};
	size_t len, at;
	uint8_t *der = issue(f, f->pki, BC_ROLE_NODE, NULL, 0, NB_MS, 0, &len);
	uint8_t *b = malloc(len);

	at = find_utctime(der, len) + 2;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(b, der, len);
		memcpy(b + at + cases[i].at, cases[i].with, strlen(cases[i].with));
		print_message("case %zu\n", i);
		assert_int_equal(read_rc(f->pki, b, len), cases[i].want);
		assert_int_not_equal(x509_rc(f->pki, b, len), 0);
	}
	/* 2026 is not a leap year; 2028-02-29 is a day */
	memcpy(b, der, len);
	memcpy(b + at, "260229", 6);
	assert_int_equal(read_rc(f->pki, b, len), BC_ERR_INVALID);
	memcpy(b + at, "280229", 6);
	assert_int_equal(read_rc(f->pki, b, len), 0); /* read: the signature is the X509 path's */
	free(b);
	free(der);
}

/* ---- identity rules: BC_ERR_INVALID ---- */

static void test_identity_rules(void **state)
{
	struct fixture *f = *state;
	const char *no_spiffe[] = {"urn:bc:a"};
	const char *not_first[] = {"urn:bc:a", SPIFFE};
	const char *two[] = {SPIFFE, "spiffe://" TD "/site/" NODE_ID};
	const char *other_td[] = {"spiffe://other.org/node/" NODE_ID};
	const char *bad_role[] = {"spiffe://" TD "/admin/" NODE_ID};
	const char *non_urn[] = {SPIFFE, "https://example.org/"};
	const char *space[] = {SPIFFE, "urn:bc:a b"};
	const char *empty[] = {SPIFFE, ""};
	const char *const *cases[] = {no_spiffe, not_first, two,   other_td,
	                              bad_role,  non_urn,   space, empty};
	const size_t counts[] = {1, 2, 2, 1, 1, 2, 2, 2};
	static char too_long[PKI_STATEMENT_MAX + 2];
	size_t len;
	uint8_t *der;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("case %zu\n", i);
		der = node_der(f->pki->node_ca, f->pki->node_ca_key, NODE_ID, f->point, cases[i],
		               counts[i], &len);
		assert_int_equal(read_rc(f->pki, der, len), BC_ERR_INVALID);
		assert_int_equal(x509_rc(f->pki, der, len), BC_ERR_INVALID);
		free(der);
	}
	/* a statement one byte over the limit */
	memcpy(too_long, "urn:bc:", 7);
	memset(too_long + 7, 'x', PKI_STATEMENT_MAX + 1 - 7);
	{
		const char *u[] = {SPIFFE, too_long};
		der = node_der(f->pki->node_ca, f->pki->node_ca_key, NODE_ID, f->point, u, 2, &len);
		assert_int_equal(read_rc(f->pki, der, len), BC_ERR_INVALID);
		assert_int_equal(x509_rc(f->pki, der, len), BC_ERR_INVALID);
		free(der);
	}
	/* the bundle's trust domain is another: the SPIFFE ID is not ours */
	der = issue(f, f->pki, BC_ROLE_NODE, NULL, 0, NB_MS, 0, &len);
	{
		bc_pki p = *f->pki;
		p.trust_domain = "other.org";
		assert_int_equal(read_rc(&p, der, len), BC_ERR_INVALID);
		assert_int_equal(x509_rc(&p, der, len), BC_ERR_INVALID);
		p.trust_domain = "example";
		assert_int_equal(read_rc(&p, der, len), BC_ERR_INVALID);
		assert_int_equal(x509_rc(&p, der, len), BC_ERR_INVALID);
	}
	free(der);
}

/* ---- the key ---- */

static void test_point_off_curve(void **state)
{
	struct fixture *f = *state;
	const char *uris[] = {SPIFFE};
	uint8_t bad[65];
	size_t len;
	uint8_t *der;
	int x;

	/* y + 1: off the curve, signed by our CA */
	memcpy(bad, f->point, 65);
	bad[64] ^= 0x01;
	der = node_der(f->pki->node_ca, f->pki->node_ca_key, NODE_ID, bad, uris, 1, &len);
	assert_int_equal(read_rc(f->pki, der, len), BC_ERR_INVALID);
	/* OpenSSL parses it, leaving the key undecoded: identity and issuer hold */
	x = x509_rc(f->pki, der, len);
	print_message("a point off the curve: the X509 path says %d\n", x);
	{
		X509 *c = NULL;
		assert_int_equal(bc_x509_from_der(der, len, &c), 0);
		assert_null(X509_get0_pubkey(c));
		X509_free(c);
	}
	free(der);
	/* x >= p */
	memset(bad + 1, 0xff, 32);
	der = node_der(f->pki->node_ca, f->pki->node_ca_key, NODE_ID, bad, uris, 1, &len);
	assert_int_equal(read_rc(f->pki, der, len), BC_ERR_INVALID);
	free(der);
	/* a hybrid encoding (0x06, 0x07) of our point: not the form */
	memcpy(bad, f->point, 65);
	bad[0] = (uint8_t)(0x06 | (f->point[64] & 1));
	der = node_der(f->pki->node_ca, f->pki->node_ca_key, NODE_ID, bad, uris, 1, &len);
	assert_int_equal(read_rc(f->pki, der, len), BC_ERR_UNSUPPORTED);
	x = x509_rc(f->pki, der, len);
	print_message("a hybrid point: the X509 path says %d\n", x);
	free(der);
}

/* ---- other forms: BC_ERR_UNSUPPORTED ---- */

/* x re-signed by our node CA after a change */
static uint8_t *resign(struct fixture *f, X509 *x, size_t *len)
{
	assert_true(X509_sign(x, f->pki->node_ca_key, EVP_sha256()) > 0);
	return to_der(x, len);
}

/* der (freed here) is in another form: the peek says so, the X509 path reads it */
static void other_form_x509_reads(struct fixture *f, uint8_t *der, size_t len)
{
	assert_int_equal(read_rc(f->pki, der, len), BC_ERR_UNSUPPORTED);
	assert_int_equal(x509_rc(f->pki, der, len), 0);
	free(der);
}

static void test_other_forms(void **state)
{
	struct fixture *f = *state;
	const char *uris[] = {SPIFFE};
	EVP_PKEY *p384 = EVP_EC_gen("secp384r1");
	X509 *x;
	size_t len;
	uint8_t *der;

	/* an extra extension */
	x = openssl_node_cert(f, f->key);
	{
		X509_EXTENSION *ext =
		    X509V3_EXT_conf_nid(NULL, NULL, NID_netscape_comment, "an extra extension");
		assert_non_null(ext);
		assert_int_equal(X509_add_ext(x, ext, -1), 1);
		X509_EXTENSION_free(ext);
	}
	der = resign(f, x, &len);
	other_form_x509_reads(f, der, len);
	X509_free(x);
	/* a P-384 key */
	assert_non_null(p384);
	x = openssl_node_cert(f, p384);
	der = to_der(x, &len);
	other_form_x509_reads(f, der, len);
	X509_free(x);
	/* notBefore as GeneralizedTime in a year UTCTime covers */
	x = openssl_node_cert(f, f->key);
	{
		ASN1_GENERALIZEDTIME *g = ASN1_GENERALIZEDTIME_set(NULL, NB_MS / 1000);
		assert_non_null(g);
		assert_int_equal(X509_set1_notBefore(x, g), 1);
		ASN1_GENERALIZEDTIME_free(g);
	}
	der = resign(f, x, &len);
	other_form_x509_reads(f, der, len);
	X509_free(x);
	/* a short serial */
	x = openssl_node_cert(f, f->key);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 0x1234), 1);
	der = resign(f, x, &len);
	other_form_x509_reads(f, der, len);
	X509_free(x);
	/* the subject CN another node id than the SPIFFE ID's */
	der = node_der(f->pki->node_ca, f->pki->node_ca_key, NODE_ID2, f->point, uris, 1, &len);
	other_form_x509_reads(f, der, len);
	/* signed with ECDSA-SHA384 */
	x = openssl_node_cert(f, f->key);
	assert_true(X509_sign(x, f->pki->node_ca_key, EVP_sha384()) > 0);
	der = to_der(x, &len);
	other_form_x509_reads(f, der, len);
	X509_free(x);
	/* no extensions but a SAN, a short serial: pki_cert_test's hand-built kind */
	x = X509_new();
	{
		GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
		assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
		assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 0x1234), 1);
		assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(f->pki->node_ca)),
		                 1);
		assert_int_equal(
		    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
		                               (const unsigned char *)NODE_ID, -1, -1, 0),
		    1);
		assert_non_null(ASN1_TIME_set(X509_getm_notBefore(x), NB_MS / 1000));
		assert_non_null(ASN1_TIME_set(X509_getm_notAfter(x), NB_MS / 1000 + 3600));
		assert_int_equal(X509_set_pubkey(x, f->key), 1);
		assert_int_equal(pki_gens_add(gens, GEN_URI, SPIFFE, strlen(SPIFFE)), 0);
		assert_int_equal(X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, 0), 1);
		GENERAL_NAMES_free(gens);
	}
	der = resign(f, x, &len);
	other_form_x509_reads(f, der, len);
	X509_free(x);
	/* the node CA's own certificate */
	der = to_der(f->pki->node_ca, &len);
	assert_int_equal(read_rc(f->pki, der, len), BC_ERR_UNSUPPORTED);
	free(der);
	EVP_PKEY_free(p384);
}

/* ---- the peek: the same form without the CA ---- */

/* What was issued, by our CA and by others: read without the CA as the X509 path
 * reads it (the issuer and the signature are not the peek's to check). */
static void test_peek_reads_issued(void **state)
{
	struct fixture *f = *state;
	const char *st[] = {"urn:bc:a", "urn:bc:b"};
	const char *uris[] = {SPIFFE};
	const char *other_uris[] = {"spiffe://other.org/node/" NODE_ID};
	uint8_t point[65];
	struct bc_node_identity id;
	size_t len;
	uint8_t *der;

	der = issue(f, f->pki, BC_ROLE_SITE, st, 2, NB_MS, 0, &len);
	assert_int_equal(peek_rc(der, len, TD), 0);
	assert_int_equal(bc_pki_node_cert_peek(der, len, TD, &id, point), 0);
	assert_memory_equal(point, f->point, 65);
	assert_string_equal(id.role, BC_ROLE_SITE);
	assert_int_equal(id.n_statements, 2);
	bc_node_identity_clear(&id);
	/* for another trust domain: the SPIFFE ID's rule refuses it */
	assert_int_equal(peek_rc(der, len, "other.org"), BC_ERR_INVALID);
	free(der);
	/* another CA of the same name, another CA's name, our name with another CA's
	 * signature, a broken signature: all read, none verified */
	der = issue(f, f->other, BC_ROLE_NODE, NULL, 0, NB_MS, 0, &len);
	assert_int_equal(peek_rc(der, len, TD), 0);
	der[len - 1] ^= 0x01;
	assert_int_equal(peek_rc(der, len, TD), 0);
	free(der);
	der = node_der(f->other_td->node_ca, f->other_td->node_ca_key, NODE_ID, f->point,
	               other_uris, 1, &len);
	assert_int_equal(peek_rc(der, len, "other.org"), 0);
	free(der);
	der = node_der(f->pki->node_ca, f->other->node_ca_key, NODE_ID, f->point, uris, 1, &len);
	assert_int_equal(peek_rc(der, len, TD), 0);
	free(der);
	/* malformed: refused */
	for (size_t n = 0; n < 64; n++)
		assert_int_equal(peek_rc(n ? f->point : NULL, n, TD), BC_ERR_INVALID);
	der = issue(f, f->pki, BC_ROLE_NODE, NULL, 0, NB_MS, 0, &len);
	assert_int_equal(peek_rc(der, len, NULL), BC_ERR_INVALID);
	assert_int_equal(peek_rc(der, len, "not a trust domain"), BC_ERR_INVALID);
	for (size_t n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		memcpy(cut, der, n);
		assert_int_equal(peek_rc(cut, n, TD), BC_ERR_INVALID);
		free(cut);
	}
	free(der);
}

/* An issuer in any shape but the node CA's subject's (one commonName, a UTF8String of
 * printable ASCII) is another form: the X509 path decides, and reads these. */
static void test_peek_issuer_shape(void **state)
{
	struct fixture *f = *state;
	struct {
		const char *field;
		int type;
		const char *value;
	} names[][2] = {
	    {{"O", MBSTRING_UTF8, "an organization"}, {"CN", MBSTRING_UTF8, "a CA"}},
	    {{"CN", V_ASN1_PRINTABLESTRING, "a CA"}, {NULL, 0, NULL}},
	    {{"CN", MBSTRING_UTF8,
	      "a\x01"
	      "CA"},
	     {NULL, 0, NULL}},
	    {{"CN", MBSTRING_UTF8,
	      "caf\xc3\xa9"
	      " CA"},
	     {NULL, 0, NULL}},
	    {{"O", MBSTRING_UTF8, "a CA"}, {NULL, 0, NULL}},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		X509 *x = openssl_node_cert(f, f->key);
		X509_NAME *n = X509_NAME_new();
		uint8_t *der;
		size_t len;

		assert_non_null(n);
		for (size_t j = 0; j < 2 && names[i][j].field != NULL; j++)
			assert_int_equal(X509_NAME_add_entry_by_txt(
			                     n, names[i][j].field, names[i][j].type,
			                     (const unsigned char *)names[i][j].value, -1, -1, 0),
			                 1);
		assert_int_equal(X509_set_issuer_name(x, n), 1);
		X509_NAME_free(n);
		der = resign(f, x, &len);
		assert_int_equal(peek_rc(der, len, TD), BC_ERR_UNSUPPORTED);
		{
			struct bc_node_identity id;
			assert_int_equal(bc_pki_node_identity(der, len, TD, &id, NULL), 0);
			assert_string_equal(id.node_id, NODE_ID);
			bc_node_identity_clear(&id);
		}
		free(der);
		X509_free(x);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_issued_read_back),
	    cmocka_unit_test(test_openssl_built_same_form),
	    cmocka_unit_test(test_truncated_everywhere),
	    cmocka_unit_test(test_every_byte_flipped),
	    cmocka_unit_test(test_framing),
	    cmocka_unit_test(test_non_minimal_lengths),
	    cmocka_unit_test(test_bad_times),
	    cmocka_unit_test(test_identity_rules),
	    cmocka_unit_test(test_point_off_curve),
	    cmocka_unit_test(test_other_forms),
	    cmocka_unit_test(test_peek_reads_issued),
	    cmocka_unit_test(test_peek_issuer_shape),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
