/* src/client: pins, token sealing, opening join answers (every refusal), and the
 * HTTP round trip against a small loopback server run by the test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/buffer.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "bc/buf.h"
#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"

#define TD            "example.test"
#define NODE_ID       "node_0123456789abcdefghjkmnpqrs"
#define OTHER_NODE_ID "node_zzzzzzzzzzzzzzzzzzzzzzzzzz"
#define TOKEN         "bct_tok_0123456789abcdefghjkmnpqrs_c2VjcmV0LXNlY3JldA"

typedef Bettercompute__Join__V1__JoinResponseBody body_t;

/* Everything the tests share, made once. */
static struct {
	bc_pki *pki;
	bc_pki *other_pki; /* another control plane: another trust domain */
	char *pins_json;   /* good pins, http on loopback */
	struct bc_client_pins pins;
	EVP_PKEY *node_key, *other_key;
	uint8_t *csr, *other_csr;
	size_t csr_len, other_csr_len;
	uint8_t csr_sha256[32], other_csr_sha256[32];
	uint8_t *leaf, *other_key_leaf, *other_node_leaf, *other_td_leaf, *ca_der;
	size_t leaf_len, other_key_leaf_len, other_node_leaf_len, other_td_leaf_len, ca_der_len;
} T;

/* ---- helpers ---- */

static char *pub_pem(EVP_PKEY *k)
{
	char *pem = NULL;

	assert_int_equal(bc_pubkey_to_pem(k, &pem), 0);
	return pem;
}

static char *ca_bundle(const bc_pki *pki)
{
	char *a = NULL, *b = NULL, *out;

	assert_int_equal(bc_x509_to_pem(pki->tls_ca, &a), 0);
	assert_int_equal(bc_x509_to_pem(pki->node_ca, &b), 0);
	assert_true(asprintf(&out, "%s%s", a, b) > 0);
	free(a);
	free(b);
	return out;
}

/* Good pins as a jansson object, so a test can drop or change one field. */
static json_t *pins_obj(const char *server)
{
	char *sig = pub_pem(T.pki->join_signing), *enc = pub_pem(T.pki->join_encryption);
	char *ca = ca_bundle(T.pki);
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "server", server,
	                      "joinSigningKeyId", T.pki->join_signing_kid, "joinSigningKey", sig,
	                      "joinEncryptionKey", enc, "caBundle", ca, "trustDomain", TD);

	assert_non_null(j);
	free(sig);
	free(enc);
	free(ca);
	return j;
}

static int parse_pins(json_t *j, struct bc_client_pins *p, char *err, size_t errlen)
{
	char *s = json_dumps(j, 0);
	int rc;

	assert_non_null(s);
	rc = bc_client_pins_from_json(s, strlen(s), p, err, errlen);
	free(s);
	json_decref(j);
	return rc;
}

static uint8_t *issue(const bc_pki *pki, const char *node_id, EVP_PKEY *key, size_t *len)
{
	struct bc_node_cert_req req = {
	    .node_id = node_id,
	    .role = BC_ROLE_NODE,
	    .pub = key,
	    .not_before_ms = (int64_t)time(NULL) * 1000,
	    .ttl_ms = 0,
	};
	char serial[33];
	int64_t not_after;
	uint8_t *der = NULL;

	assert_int_equal(bc_pki_issue_node_cert(pki, &req, &der, len, serial, &not_after), 0);
	return der;
}

enum deferral { JOINED, PENDING, CHALLENGE };

struct spec {
	const uint8_t *csr_sha256;
	size_t csr_sha256_len;
	const char *node_id;
	const uint8_t *leaf;
	size_t leaf_len;
	int n_chain; /* 0, 1 (leaf) or 2 (leaf, CA) */
	enum deferral deferral;
	const char *trust_domain;
	uint32_t retry_after_seconds;
};

/* A good join for the test CSR, for a test to change one thing in. */
static struct spec good_join(void)
{
	struct spec s = {T.csr_sha256, 32, NODE_ID, T.leaf, T.leaf_len, 2, JOINED, TD, 0};
	return s;
}

static struct spec good_deferral(enum deferral d)
{
	struct spec s = {T.csr_sha256, 32, "", NULL, 0, 0, d, TD, 7};
	return s;
}

static uint8_t *pack_body(const struct spec *s, size_t *len)
{
	body_t b = BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__INIT;
	Bettercompute__Join__V1__JoinPending pend = BETTERCOMPUTE__JOIN__V1__JOIN_PENDING__INIT;
	Bettercompute__Join__V1__JoinChallenge chal = BETTERCOMPUTE__JOIN__V1__JOIN_CHALLENGE__INIT;
	ProtobufCBinaryData chain[2], bundle[1];
	uint8_t *out;

	b.csr_sha256.data = (uint8_t *)s->csr_sha256;
	b.csr_sha256.len = s->csr_sha256_len;
	b.node_id = (char *)s->node_id;
	b.trust_domain = (char *)s->trust_domain;
	b.issued_at_ms = 1790000000000LL;
	chain[0].data = (uint8_t *)s->leaf;
	chain[0].len = s->leaf_len;
	chain[1].data = T.ca_der;
	chain[1].len = T.ca_der_len;
	b.chain = chain;
	b.n_chain = (size_t)s->n_chain;
	bundle[0] = chain[1];
	b.trust_bundle = bundle;
	b.n_trust_bundle = 1;
	if (s->deferral == PENDING) {
		pend.request_id = "jr_0123456789abcdefghjkmnpqrs";
		pend.retry_after_seconds = s->retry_after_seconds;
		b.deferral_case = BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__DEFERRAL_PENDING;
		b.pending = &pend;
	} else if (s->deferral == CHALLENGE) {
		chal.attestor = "tpm";
		chal.payload.data = (uint8_t *)"challenge bytes";
		chal.payload.len = 15;
		chal.not_after_ms = 1790000300000LL;
		b.deferral_case = BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__DEFERRAL_CHALLENGE;
		b.challenge = &chal;
	}
	*len = bettercompute__join__v1__join_response_body__get_packed_size(&b);
	assert_non_null(out = malloc(*len + 1));
	bettercompute__join__v1__join_response_body__pack(&b, out);
	return out;
}

/* A SignedResponse around body, signed by key (NULL: a zero signature) under kid. */
static uint8_t *wrap(const uint8_t *body, size_t body_len, EVP_PKEY *key, const char *kid,
                     size_t *len)
{
	Bettercompute__Join__V1__SignedResponse sr = BETTERCOMPUTE__JOIN__V1__SIGNED_RESPONSE__INIT;
	uint8_t sig[BC_SIG_LEN] = {0}, *out;

	if (key != NULL) {
		struct bc_signer s;

		assert_int_equal(bc_signer_init(&s, key, NULL, NULL), 0);
		assert_int_equal(bc_es256_sign(&s, BC_PURPOSE_JOIN_RESPONSE, body, body_len, sig),
		                 0);
	}
	sr.body.data = (uint8_t *)body;
	sr.body.len = body_len;
	sr.signature.data = sig;
	sr.signature.len = sizeof(sig);
	sr.key_id = (char *)kid;
	*len = bettercompute__join__v1__signed_response__get_packed_size(&sr);
	assert_non_null(out = malloc(*len + 1));
	bettercompute__join__v1__signed_response__pack(&sr, out);
	return out;
}

/* The spec as a response signed by the pinned key. */
static uint8_t *response(const struct spec *s, size_t *len)
{
	size_t blen;
	uint8_t *body = pack_body(s, &blen),
	        *r = wrap(body, blen, T.pki->join_signing, T.pki->join_signing_kid, len);
	free(body);
	return r;
}

/* Opens with the CSR (the full check) and returns the status; err is kept. */
static int open_csr(const uint8_t *r, size_t len, struct bc_join_answer *a, char *err,
                    size_t errlen)
{
	return bc_client_open_join_response_csr(&T.pins, r, len, T.csr, T.csr_len, a, err, errlen);
}

static int open_spec(const struct spec *s, char *err, size_t errlen)
{
	struct bc_join_answer a;
	size_t len;
	uint8_t *r = response(s, &len);
	int rc = open_csr(r, len, &a, err, errlen);

	if (rc != 0) {
		assert_int_equal(a.state, 0);
		assert_null(a.chain);
	}
	bc_join_answer_free(&a);
	free(r);
	return rc;
}

static void assert_contains(const char *s, const char *needle)
{
	if (strstr(s, needle) == NULL)
		fail_msg("\"%s\" does not contain \"%s\"", s, needle);
}

/* ---- setup ---- */

static int group_setup(void **state)
{
	char err[256];
	char *s;
	json_t *j;

	signal(SIGPIPE, SIG_IGN);
	if (bc_pki_generate(TD, &T.pki) != 0 || bc_pki_generate("other.test", &T.other_pki) != 0)
		return -1;
	if (bc_key_generate(&T.node_key) != 0 || bc_key_generate(&T.other_key) != 0)
		return -1;
	if (bc_csr_make(T.node_key, "test", &T.csr, &T.csr_len) != 0 ||
	    bc_csr_make(T.other_key, "test", &T.other_csr, &T.other_csr_len) != 0 ||
	    bc_sha256(T.csr, T.csr_len, T.csr_sha256) != 0 ||
	    bc_sha256(T.other_csr, T.other_csr_len, T.other_csr_sha256) != 0)
		return -1;
	T.leaf = issue(T.pki, NODE_ID, T.node_key, &T.leaf_len);
	T.other_key_leaf = issue(T.pki, NODE_ID, T.other_key, &T.other_key_leaf_len);
	T.other_node_leaf = issue(T.pki, OTHER_NODE_ID, T.node_key, &T.other_node_leaf_len);
	T.other_td_leaf = issue(T.other_pki, NODE_ID, T.node_key, &T.other_td_leaf_len);
	if (bc_x509_to_der(T.pki->node_ca, &T.ca_der, &T.ca_der_len) != 0)
		return -1;
	j = pins_obj("http://127.0.0.1:1");
	T.pins_json = json_dumps(j, 0);
	json_decref(j);
	s = T.pins_json;
	if (bc_client_pins_from_json(s, strlen(s), &T.pins, err, sizeof(err)) != 0) {
		fprintf(stderr, "pins: %s\n", err);
		return -1;
	}
	(void)state;
	return 0;
}

static int group_teardown(void **state)
{
	bc_client_pins_free(&T.pins);
	free(T.pins_json);
	bc_pki_free(T.pki);
	bc_pki_free(T.other_pki);
	EVP_PKEY_free(T.node_key);
	EVP_PKEY_free(T.other_key);
	free(T.csr);
	free(T.other_csr);
	free(T.leaf);
	free(T.other_key_leaf);
	free(T.other_node_leaf);
	free(T.other_td_leaf);
	free(T.ca_der);
	(void)state;
	return 0;
}

/* ---- pins ---- */

static void test_pins_good(void **state)
{
	char kid[BC_KEY_ID_LEN + 1];

	(void)state;
	assert_string_equal(T.pins.server_url, "http://127.0.0.1:1");
	assert_string_equal(T.pins.join_signing_kid, T.pki->join_signing_kid);
	assert_int_equal(bc_key_id(T.pins.join_signing, kid), 0);
	assert_string_equal(kid, T.pki->join_signing_kid);
	assert_int_equal(EVP_PKEY_eq(T.pins.join_signing, T.pki->join_signing), 1);
	assert_int_equal(EVP_PKEY_eq(T.pins.join_encryption, T.pki->join_encryption), 1);
	assert_non_null(strstr(T.pins.ca_bundle_pem, "BEGIN CERTIFICATE"));
	assert_string_equal(T.pins.trust_domain, TD);
}

static const struct {
	const char *url;
	const char *kept; /* NULL: refused */
} server_cases[] = {
    {"https://cp.example.com:8443", "https://cp.example.com:8443"},
    {"https://cp.example.com/", "https://cp.example.com"},
    {"https://10.1.2.3:8443/prefix", "https://10.1.2.3:8443/prefix"},
    {"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
    {"http://127.9.8.7:8080/", "http://127.9.8.7:8080"},
    {"http://localhost:8080", "http://localhost:8080"},
    {"http://[::1]:8080", "http://[::1]:8080"},
    {"http://cp.example.com:8080", NULL},
    {"http://10.0.0.1:8080", NULL},
    {"http://128.0.0.1", NULL},
    {"http://[::2]:8080", NULL},
    {"http://[::ffff:127.0.0.1]:8080", NULL},
    {"http://localhost.example.com", NULL},
    {"http://127.0.0.1.example.com", NULL},
    {"ftp://127.0.0.1", NULL},
    {"file:///etc/passwd", NULL},
    {"127.0.0.1:8080", NULL},
    {"https://user:pw@cp.example.com", NULL},
    {"https://cp.example.com/?x=1", NULL},
    {"https://cp.example.com/#frag", NULL},
    {"https://cp.example.com/a b", NULL},
    {"", NULL},
};

#define N_SERVER_CASES (sizeof(server_cases) / sizeof(server_cases[0]))

static void test_pins_servers(void **state)
{
	struct bc_client_pins p;
	char err[256];

	(void)state;
	for (size_t i = 0; i < N_SERVER_CASES; i++) {
		int rc = parse_pins(pins_obj(server_cases[i].url), &p, err, sizeof(err));
		if (server_cases[i].kept != NULL) {
			if (rc != 0)
				fail_msg("%s refused: %s", server_cases[i].url, err);
			assert_string_equal(p.server_url, server_cases[i].kept);
		} else {
			if (rc == 0)
				fail_msg("%s accepted", server_cases[i].url);
			assert_int_equal(rc, BC_ERR_CONFIG);
			assert_null(p.server_url);
			assert_contains(err, "pins: server: ");
		}
		bc_client_pins_free(&p);
	}
	assert_int_equal(parse_pins(pins_obj("http://cp.example.com"), &p, err, sizeof(err)),
	                 BC_ERR_CONFIG);
	assert_string_equal(err,
	                    "pins: server: must be https://, or http:// on a loopback address");
}

/* bcd ramdisk's bc.server: the very rule of the pins' server, each case of it */
static void test_pins_set_server_same_rule(void **state)
{
	struct bc_client_pins p;
	char err[256];

	(void)state;
	for (size_t i = 0; i < N_SERVER_CASES; i++) {
		assert_int_equal(parse_pins(pins_obj("http://127.0.0.1:1"), &p, err, sizeof(err)),
		                 0);
		int rc = bc_client_pins_set_server(&p, server_cases[i].url, err, sizeof(err));
		if (server_cases[i].kept != NULL) {
			if (rc != 0)
				fail_msg("%s refused: %s", server_cases[i].url, err);
			assert_string_equal(p.server_url, server_cases[i].kept);
		} else {
			if (rc == 0)
				fail_msg("%s accepted", server_cases[i].url);
			assert_int_equal(rc, BC_ERR_CONFIG);
			assert_string_equal(p.server_url, "http://127.0.0.1:1"); /* unchanged */
			assert_contains(err, "pins: server: ");
		}
		bc_client_pins_free(&p);
	}
	/* https is verified against the pinned CA only: none pinned, none taken */
	assert_int_equal(parse_pins(pins_obj("http://127.0.0.1:1"), &p, err, sizeof(err)), 0);
	free(p.ca_bundle_pem);
	p.ca_bundle_pem = NULL;
	assert_int_equal(bc_client_pins_set_server(&p, "https://cp.example.com", err, sizeof(err)),
	                 BC_ERR_CONFIG);
	assert_string_equal(err, "pins: server: https needs the pinned caBundle");
	assert_int_equal(bc_client_pins_set_server(&p, "http://cp.example.com", err, sizeof(err)),
	                 BC_ERR_CONFIG);
	assert_string_equal(err,
	                    "pins: server: must be https://, or http:// on a loopback address");
	assert_int_equal(bc_client_pins_set_server(&p, "http://[::1]:9", err, sizeof(err)), 0);
	assert_string_equal(p.server_url, "http://[::1]:9");
	bc_client_pins_free(&p);
}

static void test_pins_missing(void **state)
{
	static const char *const fields[] = {"server", "joinSigningKeyId", "joinSigningKey",
	                                     "joinEncryptionKey", "caBundle"};
	struct bc_client_pins p;
	char err[256], want[96];
	json_t *j;

	(void)state;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		j = pins_obj("https://cp.example.com");
		assert_int_equal(json_object_del(j, fields[i]), 0);
		assert_int_equal(parse_pins(j, &p, err, sizeof(err)), BC_ERR_CONFIG);
		snprintf(want, sizeof(want), "pins: %s: missing", fields[i]);
		assert_string_equal(err, want);
		assert_null(p.join_signing);
	}
	/* optional: trustDomain; caBundle only when the server is plain http on loopback */
	j = pins_obj("https://cp.example.com");
	json_object_del(j, "trustDomain");
	assert_int_equal(parse_pins(j, &p, err, sizeof(err)), 0);
	assert_null(p.trust_domain);
	bc_client_pins_free(&p);
	j = pins_obj("http://127.0.0.1:8080");
	json_object_del(j, "caBundle");
	assert_int_equal(parse_pins(j, &p, err, sizeof(err)), 0);
	assert_null(p.ca_bundle_pem);
	bc_client_pins_free(&p);
}

static char *p384_pem(void)
{
	EVP_PKEY *k = EVP_EC_gen("secp384r1");
	char *pem = NULL;
	BIO *b = BIO_new(BIO_s_mem());
	BUF_MEM *m;

	assert_non_null(k);
	assert_int_equal(PEM_write_bio_PUBKEY(b, k), 1);
	BIO_get_mem_ptr(b, &m);
	assert_non_null(pem = strndup(m->data, m->length));
	BIO_free(b);
	EVP_PKEY_free(k);
	return pem;
}

static void test_pins_bad(void **state)
{
	char *p384 = p384_pem(), *sig = pub_pem(T.pki->join_signing), *cut, *ca = ca_bundle(T.pki);
	char kid[BC_KEY_ID_LEN + 1];
	const struct {
		const char *field;
		json_t *value;
		const char *err;
	} cases[] = {
	    {"server", json_integer(1), "pins: server: not a string"},
	    {"joinSigningKey", json_string("garbage"),
	     "pins: joinSigningKey: not a P-256 public key PEM"},
	    {"joinSigningKey", json_string(p384),
	     "pins: joinSigningKey: not a P-256 public key PEM"},
	    {"joinSigningKey", json_string(""), "pins: joinSigningKey: empty"},
	    {"joinEncryptionKey", json_string(p384),
	     "pins: joinEncryptionKey: not a P-256 public key PEM"},
	    {"joinEncryptionKey", json_null(), "pins: joinEncryptionKey: not a string"},
	    {"joinSigningKeyId", json_string("00"),
	     "pins: joinSigningKeyId: does not match joinSigningKey"},
	    {"caBundle", json_string("garbage"),
	     "pins: caBundle: certificate 1 is not a PEM certificate"},
	    {"caBundle", json_string(sig),
	     "pins: caBundle: certificate 1 is not a PEM certificate"},
	    {"caBundle", NULL, "pins: caBundle: certificate 2 is not a PEM certificate"},
	    {"trustDomain", json_string("Example_Test"),
	     "pins: trustDomain: not a trust domain ([a-z0-9.-], 1 to 255)"},
	    {"trustDomain", json_true(), "pins: trustDomain: not a string"},
	};
	struct bc_client_pins p;
	const char *dup;
	char err[256];
	json_t *j;

	(void)state;
	/* a CA bundle whose second certificate is cut short */
	cut = strndup(ca, strlen(ca) - 80);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		j = pins_obj("https://cp.example.com");
		json_object_set_new(j, cases[i].field,
		                    cases[i].value ? cases[i].value : json_string(cut));
		assert_int_equal(parse_pins(j, &p, err, sizeof(err)), BC_ERR_CONFIG);
		assert_string_equal(err, cases[i].err);
		assert_null(p.server_url);
	}
	/* a key id that is a real key id, of the other pinned key */
	assert_int_equal(bc_key_id(T.pki->join_encryption, kid), 0);
	j = pins_obj("https://cp.example.com");
	json_object_set_new(j, "joinSigningKeyId", json_string(kid));
	assert_int_equal(parse_pins(j, &p, err, sizeof(err)), BC_ERR_CONFIG);
	assert_string_equal(err, "pins: joinSigningKeyId: does not match joinSigningKey");
	/* not JSON, not an object, duplicate keys */
	assert_int_equal(bc_client_pins_from_json("{", 1, &p, err, sizeof(err)), BC_ERR_CONFIG);
	assert_contains(err, "pins: not valid JSON");
	assert_int_equal(bc_client_pins_from_json("[1]", 3, &p, err, sizeof(err)), BC_ERR_CONFIG);
	assert_string_equal(err, "pins: not a JSON object");
	dup = "{\"server\":\"http://127.0.0.1\",\"server\":\"https://cp.example.com\"}";
	assert_int_equal(bc_client_pins_from_json(dup, strlen(dup), &p, err, sizeof(err)),
	                 BC_ERR_CONFIG);
	assert_int_equal(bc_client_pins_from_json(NULL, 0, &p, err, sizeof(err)), BC_ERR_INVALID);
	free(p384);
	free(sig);
	free(cut);
	free(ca);
}

/* ---- sealing the token ---- */

static void test_seal_token(void **state)
{
	uint8_t *sealed = NULL, *pt = NULL;
	size_t sealed_len = 0, pt_len = 0;

	(void)state;
	assert_int_equal(
	    bc_client_seal_token(T.pins.join_encryption, TOKEN, T.csr_sha256, &sealed, &sealed_len),
	    0);
	assert_int_equal(sealed_len, BC_HPKE_ENC_LEN + strlen(TOKEN) + 16);
	assert_int_equal(bc_hpke_open(T.pki->join_encryption, BC_WIRE_TOKEN_INFO,
	                              strlen(BC_WIRE_TOKEN_INFO), T.csr_sha256, 32, sealed,
	                              sealed_len, &pt, &pt_len),
	                 0);
	assert_int_equal(pt_len, strlen(TOKEN));
	assert_memory_equal(pt, TOKEN, pt_len);
	bc_freezero(pt, pt_len);
	pt = NULL;
	/* bound to the CSR: another CSR's hash does not open it */
	assert_int_equal(bc_hpke_open(T.pki->join_encryption, BC_WIRE_TOKEN_INFO,
	                              strlen(BC_WIRE_TOKEN_INFO), T.other_csr_sha256, 32, sealed,
	                              sealed_len, &pt, &pt_len),
	                 BC_ERR_VERIFY);
	assert_null(pt);
	free(sealed);
	assert_int_equal(
	    bc_client_seal_token(T.pins.join_encryption, "", T.csr_sha256, &sealed, &sealed_len),
	    BC_ERR_INVALID);
	assert_null(sealed);
	assert_int_equal(bc_client_seal_token(NULL, TOKEN, T.csr_sha256, &sealed, &sealed_len),
	                 BC_ERR_INVALID);
	/* the longest token the server opens is sealed; one byte more is not sent */
	char long_token[BC_WIRE_TOKEN_MAX + 2];
	memset(long_token, 'a', sizeof(long_token) - 1);
	long_token[BC_WIRE_TOKEN_MAX] = '\0';
	assert_int_equal(bc_client_seal_token(T.pins.join_encryption, long_token, T.csr_sha256,
	                                      &sealed, &sealed_len),
	                 0);
	free(sealed);
	long_token[BC_WIRE_TOKEN_MAX] = 'a';
	long_token[BC_WIRE_TOKEN_MAX + 1] = '\0';
	assert_int_equal(bc_client_seal_token(T.pins.join_encryption, long_token, T.csr_sha256,
	                                      &sealed, &sealed_len),
	                 BC_ERR_INVALID);
	assert_null(sealed);
}

/* ---- opening answers ---- */

static void test_open_join(void **state)
{
	struct spec s = good_join();
	struct bc_join_answer a;
	char err[256];
	size_t len;
	uint8_t *r = response(&s, &len);

	(void)state;
	assert_int_equal(open_csr(r, len, &a, err, sizeof(err)), 0);
	assert_int_equal(a.state, BC_JOIN_JOINED);
	assert_string_equal(a.node_id, NODE_ID);
	assert_int_equal(a.n_chain, 2);
	assert_int_equal(a.chain_lens[0], T.leaf_len);
	assert_memory_equal(a.chain[0], T.leaf, T.leaf_len);
	assert_memory_equal(a.chain[1], T.ca_der, T.ca_der_len);
	assert_int_equal(a.n_trust_bundle, 1);
	assert_memory_equal(a.trust_bundle[0], T.ca_der, T.ca_der_len);
	assert_string_equal(a.trust_domain, TD);
	assert_int_equal(a.issued_at_ms, 1790000000000LL);
	assert_null(a.challenge);
	bc_join_answer_free(&a);
	assert_int_equal(a.n_chain, 0);
	/* the hash-only form reads the same answer */
	assert_int_equal(
	    bc_client_open_join_response(&T.pins, r, len, T.csr_sha256, &a, err, sizeof(err)), 0);
	assert_int_equal(a.state, BC_JOIN_JOINED);
	assert_string_equal(a.node_id, NODE_ID);
	bc_join_answer_free(&a);
	/* a leaf alone is a chain too */
	free(r);
	s.n_chain = 1;
	assert_int_equal(open_spec(&s, err, sizeof(err)), 0);
}

static void test_open_deferrals(void **state)
{
	struct spec s = good_deferral(PENDING);
	struct bc_join_answer a;
	char err[256];
	size_t len;
	uint8_t *r = response(&s, &len);

	(void)state;
	assert_int_equal(open_csr(r, len, &a, err, sizeof(err)), 0);
	assert_int_equal(a.state, BC_JOIN_PENDING);
	assert_string_equal(a.request_id, "jr_0123456789abcdefghjkmnpqrs");
	assert_int_equal(a.retry_after_seconds, 7);
	assert_string_equal(a.node_id, "");
	assert_int_equal(a.n_chain, 0);
	bc_join_answer_free(&a);
	free(r);

	s = good_deferral(CHALLENGE);
	r = response(&s, &len);
	assert_int_equal(open_csr(r, len, &a, err, sizeof(err)), 0);
	assert_int_equal(a.state, BC_JOIN_CHALLENGE);
	assert_string_equal(a.challenge_attestor, "tpm");
	assert_int_equal(a.challenge_len, 15);
	assert_memory_equal(a.challenge, "challenge bytes", 15);
	assert_int_equal(a.challenge_not_after_ms, 1790000300000LL);
	assert_int_equal(a.n_chain, 0);
	bc_join_answer_free(&a);
	free(r);
}

static void test_refuse_wrong_kid(void **state)
{
	struct spec s = good_join();
	struct bc_join_answer a;
	char err[512], kid[BC_KEY_ID_LEN + 1], want[512];
	size_t blen, len;
	uint8_t *body = pack_body(&s, &blen), *r;

	(void)state;
	/* signed by the pinned key, but naming another key id */
	assert_int_equal(bc_key_id(T.other_key, kid), 0);
	r = wrap(body, blen, T.pki->join_signing, kid, &len);
	assert_int_equal(open_csr(r, len, &a, err, sizeof(err)), BC_ERR_VERIFY);
	snprintf(want, sizeof(want),
	         "join answer: signed by key %s, expected the pinned %s or another pinned join "
	         "signing key; if the server's join keys were rotated and these pins retired, "
	         "join again with a token",
	         kid, T.pki->join_signing_kid);
	assert_string_equal(err, want);
	free(r);
	/* signed by another key that claims the pinned key id */
	r = wrap(body, blen, T.other_key, T.pki->join_signing_kid, &len);
	assert_int_equal(open_csr(r, len, &a, err, sizeof(err)), BC_ERR_VERIFY);
	assert_string_equal(err, "join answer: the signature does not verify under the pinned join "
	                         "signing key");
	free(r);
	/* no key id, and a key id with an embedded control character */
	r = wrap(body, blen, T.pki->join_signing, "", &len);
	assert_int_equal(open_csr(r, len, &a, err, sizeof(err)), BC_ERR_VERIFY);
	assert_contains(err, "signed by key (none)");
	free(r);
	r = wrap(body, blen, T.pki->join_signing, "ab\ncd", &len);
	assert_int_equal(open_csr(r, len, &a, err, sizeof(err)), BC_ERR_VERIFY);
	assert_contains(err, "signed by key ab?cd,");
	free(r);
	free(body);
}

static void test_refuse_bad_signature(void **state)
{
	struct spec s = good_join();
	struct bc_join_answer a;
	char err[256];
	size_t blen, len;
	uint8_t *body = pack_body(&s, &blen), *r;

	(void)state;
	r = wrap(body, blen, NULL, T.pki->join_signing_kid, &len);
	assert_int_equal(open_csr(r, len, &a, err, sizeof(err)), BC_ERR_VERIFY);
	assert_contains(err, "signature does not verify");
	free(r);
	free(body);
}

/* Every single-bit change of the body after signing, and of the whole envelope, is
 * refused; none reaches the caller. */
static void test_refuse_altered(void **state)
{
	struct spec s = good_join();
	struct bc_join_answer a;
	Bettercompute__Join__V1__SignedResponse *sr;
	char err[256];
	size_t blen, len, n = 0;
	uint8_t *body = pack_body(&s, &blen), *r = response(&s, &len), *alt;

	(void)state;
	assert_non_null(sr = bettercompute__join__v1__signed_response__unpack(NULL, len, r));
	for (size_t i = 0; i < blen; i++) {
		for (int bit = 0; bit < 8; bit += 7) {
			Bettercompute__Join__V1__SignedResponse w = *sr;
			uint8_t *b2 = malloc(blen);
			memcpy(b2, body, blen);
			b2[i] ^= (uint8_t)(1u << bit);
			w.body.data = b2;
			alt = malloc(bettercompute__join__v1__signed_response__get_packed_size(&w));
			size_t alen = bettercompute__join__v1__signed_response__pack(&w, alt);
			if (open_csr(alt, alen, &a, err, sizeof(err)) == 0)
				fail_msg("body byte %zu bit %d altered and accepted", i, bit);
			assert_int_equal(a.state, 0);
			free(alt);
			free(b2);
			n++;
		}
	}
	for (size_t i = 0; i < len; i++) {
		alt = malloc(len);
		memcpy(alt, r, len);
		alt[i] ^= 0x01;
		if (open_csr(alt, len, &a, err, sizeof(err)) == 0)
			fail_msg("envelope byte %zu altered and accepted", i);
		alt[i] ^= 0x81;
		if (open_csr(alt, len, &a, err, sizeof(err)) == 0)
			fail_msg("envelope byte %zu altered and accepted", i);
		free(alt);
	}
	assert_true(n > 1000);
	bettercompute__join__v1__signed_response__free_unpacked(sr, NULL);
	free(body);
	free(r);
}

static void test_refuse_other_csr(void **state)
{
	struct spec s = good_join();
	uint8_t short_hash[31];
	char err[256];

	(void)state;
	s.csr_sha256 = T.other_csr_sha256;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_VERIFY);
	assert_string_equal(err, "join answer: for another CSR (csr_sha256 is not the request's)");
	s = good_deferral(PENDING);
	s.csr_sha256 = T.other_csr_sha256;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_VERIFY);
	memcpy(short_hash, T.csr_sha256, 31);
	s = good_join();
	s.csr_sha256 = short_hash;
	s.csr_sha256_len = 31;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_VERIFY);
	s.csr_sha256_len = 0;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_VERIFY);
}

static void test_refuse_leaf_other_key(void **state)
{
	struct spec s = good_join();
	struct bc_join_answer a;
	char err[256];
	size_t len;
	uint8_t *r;

	(void)state;
	s.leaf = T.other_key_leaf;
	s.leaf_len = T.other_key_leaf_len;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_VERIFY);
	assert_string_equal(err,
	                    "join answer: the leaf certificate is for another key than the CSR's");
	/* the hash-only form cannot see it: documented in client.h, and why bc_client_join
	 * uses the CSR form */
	r = response(&s, &len);
	assert_int_equal(
	    bc_client_open_join_response(&T.pins, r, len, T.csr_sha256, &a, err, sizeof(err)), 0);
	bc_join_answer_free(&a);
	free(r);
	/* a CSR that does not check is refused before anything */
	r = response(&s, &len);
	assert_int_equal(bc_client_open_join_response_csr(&T.pins, r, len, T.csr, T.csr_len - 1, &a,
	                                                  err, sizeof(err)),
	                 BC_ERR_INVALID);
	free(r);
}

static void test_refuse_leaf_other_node(void **state)
{
	struct spec s = good_join();
	char err[256];

	(void)state;
	s.leaf = T.other_node_leaf;
	s.leaf_len = T.other_node_leaf_len;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_VERIFY);
	assert_string_equal(err, "join answer: the leaf certificate is for node " OTHER_NODE_ID
	                         ", the answer names " NODE_ID);
	/* and the body naming the other node with our leaf */
	s = good_join();
	s.node_id = OTHER_NODE_ID;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_VERIFY);
}

static void test_refuse_trust_domain(void **state)
{
	struct spec s = good_join();
	char err[256];

	(void)state;
	/* the body says another trust domain than the pinned one */
	s.trust_domain = "other.test";
	s.leaf = T.other_td_leaf;
	s.leaf_len = T.other_td_leaf_len;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_VERIFY);
	assert_string_equal(err, "join answer: trust domain other.test, expected the pinned " TD);
	/* the leaf is in another trust domain than the body says */
	s = good_join();
	s.leaf = T.other_td_leaf;
	s.leaf_len = T.other_td_leaf_len;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
	assert_string_equal(err,
	                    "join answer: the leaf is not a node certificate of trust domain " TD);
	/* a join without a trust domain, and one with a malformed one */
	s = good_join();
	s.trust_domain = "";
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
	assert_string_equal(err, "join answer: joined, without a trust domain");
	s.trust_domain = "Bad Domain\n";
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
	assert_contains(err, "Bad Domain?");
}

static void test_refuse_bad_join(void **state)
{
	struct spec s = good_join();
	char err[256];

	(void)state;
	s.n_chain = 0;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
	assert_contains(err, "joined, with 0 certificates");
	s = good_join();
	s.node_id = "";
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
	s.node_id = "node_ABC";
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
	assert_string_equal(err, "join answer: joined, with node id \"node_ABC\"");
	/* a leaf that is not a certificate at all */
	s = good_join();
	s.leaf = (const uint8_t *)"not a certificate";
	s.leaf_len = 17;
	assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
}

static void test_refuse_deferral_with_chain(void **state)
{
	struct spec s = good_deferral(PENDING);
	char err[256];

	(void)state;
	for (int d = PENDING; d <= CHALLENGE; d++) {
		s = good_deferral((enum deferral)d);
		s.leaf = T.leaf;
		s.leaf_len = T.leaf_len;
		s.n_chain = 2;
		assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
		assert_string_equal(err, "join answer: a deferral that carries a node id or a "
		                         "certificate chain");
		s = good_deferral((enum deferral)d);
		s.node_id = NODE_ID;
		assert_int_equal(open_spec(&s, err, sizeof(err)), BC_ERR_INVALID);
	}
}

/* Deterministic bytes for the garbage tests. */
static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void test_refuse_garbage(void **state)
{
	struct spec s = good_join();
	struct bc_join_answer a;
	char err[256];
	uint8_t buf[4096], *r, *big;
	size_t len;
	uint32_t x = 12345;

	(void)state;
	for (int i = 0; i < 2000; i++) {
		size_t n = rnd(&x) % sizeof(buf);
		for (size_t k = 0; k < n; k++)
			buf[k] = (uint8_t)rnd(&x);
		assert_int_not_equal(open_csr(buf, n, &a, err, sizeof(err)), 0);
		assert_int_equal(a.state, 0);
	}
	assert_int_equal(open_csr(NULL, 0, &a, err, sizeof(err)), BC_ERR_INVALID);
	assert_string_equal(err, "join answer: not a SignedResponse");
	/* every truncation of a good answer */
	r = response(&s, &len);
	for (size_t n = 0; n < len; n++) {
		if (open_csr(r, n, &a, err, sizeof(err)) == 0)
			fail_msg("truncated to %zu of %zu bytes and accepted", n, len);
	}
	free(r);
	/* over the bound */
	assert_non_null(big = calloc(1, (1u << 20) + 1));
	assert_int_equal(open_csr(big, (1u << 20) + 1, &a, err, sizeof(err)), BC_ERR_LIMIT);
	free(big);
	/* no pins */
	assert_int_equal(
	    bc_client_open_join_response_csr(NULL, buf, 10, T.csr, T.csr_len, &a, err, sizeof(err)),
	    BC_ERR_INVALID);
}

/* ---- HTTP: a one-connection-at-a-time loopback server run by the test ---- */

struct srv {
	int fd;
	char url[64];
	pthread_t th;
	int max_requests;
	void (*handler)(struct srv *s);
	/* the answer */
	long status;
	uint8_t *resp;
	size_t resp_len;
	int close_delimited; /* no Content-Length: the body ends at close */
	const char *extra_header;
	/* what it saw (asserted on the test's thread) */
	int requests;
	char path[256];
	char content_type[128];
	uint8_t *req;
	size_t req_len;
	int pending_rounds;      /* join_handler: answer pending this many times first */
	int challenge;           /* join_handler: answer a challenge */
	uint8_t csr_seen[4][32]; /* sha256 of each request's CSR */
	char token_seen[128];
	char role_seen[32], attestor_seen[32], agent_seen[64], host_seen[64], mac_seen[32];
};

static int header_value(const char *head, const char *name, char *out, size_t outlen)
{
	size_t n = strlen(name);

	for (const char *l = strstr(head, "\r\n"); l != NULL; l = strstr(l + 2, "\r\n")) {
		if (strncasecmp(l + 2, name, n) == 0 && l[2 + n] == ':') {
			const char *v = l + 3 + n, *e = strstr(v, "\r\n");
			while (*v == ' ')
				v++;
			snprintf(out, outlen, "%.*s", (int)(e - v), v);
			return 1;
		}
	}
	return 0;
}

static int read_request(struct srv *s, int c)
{
	char head[8192], cl[32] = "0";
	size_t n = 0, body_have, want;
	char *end = NULL;
	ssize_t r;

	while (end == NULL && n < sizeof(head) - 1) {
		if ((r = read(c, head + n, sizeof(head) - 1 - n)) <= 0)
			return -1;
		n += (size_t)r;
		head[n] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	if (end == NULL || sscanf(head, "POST %255s HTTP/1.1", s->path) != 1)
		return -1;
	header_value(head, "Content-Type", s->content_type, sizeof(s->content_type));
	header_value(head, "Content-Length", cl, sizeof(cl));
	want = strtoul(cl, NULL, 10);
	body_have = n - (size_t)(end + 4 - head);
	free(s->req);
	s->req = malloc(want + 1);
	memcpy(s->req, end + 4, body_have);
	while (body_have < want) {
		if ((r = read(c, s->req + body_have, want - body_have)) <= 0)
			return -1;
		body_have += (size_t)r;
	}
	s->req_len = want;
	return 0;
}

static void write_all(int c, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len > 0) {
		ssize_t w = send(c, b, len, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		b += w;
		len -= (size_t)w;
	}
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	char head[512];

	for (int i = 0; i < s->max_requests; i++) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			break;
		if (read_request(s, c) == 0) {
			s->requests++;
			if (s->handler != NULL)
				s->handler(s);
			if (s->close_delimited)
				snprintf(head, sizeof(head),
				         "HTTP/1.1 %ld X\r\n%sConnection: close\r\n\r\n", s->status,
				         s->extra_header ? s->extra_header : "");
			else
				snprintf(head, sizeof(head),
				         "HTTP/1.1 %ld X\r\n%sContent-Length: %zu\r\nConnection: "
				         "close\r\n\r\n",
				         s->status, s->extra_header ? s->extra_header : "",
				         s->resp_len);
			write_all(c, head, strlen(head));
			write_all(c, s->resp, s->resp_len);
		}
		shutdown(c, SHUT_RDWR);
		close(c);
	}
	return NULL;
}

static int listen_loopback(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void srv_start(struct srv *s, int max_requests)
{
	int port;

	s->fd = listen_loopback(&port);
	assert_int_equal(listen(s->fd, 4), 0);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", port);
	s->max_requests = max_requests;
	assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

/* Waits for the server to have answered its requests; what it saw stays readable. */
static void srv_wait(struct srv *s)
{
	pthread_join(s->th, NULL);
	close(s->fd);
	s->fd = -1;
}

static void srv_free(struct srv *s)
{
	free(s->req);
	free(s->resp);
	memset(s, 0, sizeof(*s));
}

static void canned(struct srv *s, long status, const char *body)
{
	s->status = status;
	s->resp = (uint8_t *)strdup(body);
	s->resp_len = strlen(body);
}

/* The server's side of a join, as JoinService does it: decode, open the token
 * against sha256(csr), issue for the CSR's key, sign the body. */
static void join_handler(struct srv *s)
{
	Bettercompute__Join__V1__JoinRequest *rq;
	EVP_PKEY *pub = NULL;
	uint8_t h[32], *tok = NULL, *leaf;
	size_t tok_len = 0, leaf_len;
	struct spec sp;

	free(s->resp); /* the previous request's answer */
	canned(s, 400, "{\"code\":\"invalid_argument\",\"message\":\"bad request\"}");
	rq = bettercompute__join__v1__join_request__unpack(NULL, s->req_len, s->req);
	if (rq == NULL || bc_csr_check(rq->csr.data, rq->csr.len, &pub) != 0 ||
	    bc_sha256(rq->csr.data, rq->csr.len, h) != 0)
		goto out;
	if (bc_hpke_open(T.pki->join_encryption, BC_WIRE_TOKEN_INFO, strlen(BC_WIRE_TOKEN_INFO), h,
	                 32, rq->sealed_token.data, rq->sealed_token.len, &tok, &tok_len) == 0)
		snprintf(s->token_seen, sizeof(s->token_seen), "%.*s", (int)tok_len, tok);
	snprintf(s->role_seen, sizeof(s->role_seen), "%s", rq->role);
	snprintf(s->attestor_seen, sizeof(s->attestor_seen), "%s", rq->attestor);
	snprintf(s->agent_seen, sizeof(s->agent_seen), "%s", rq->agent_version);
	if (rq->claims != NULL) {
		snprintf(s->host_seen, sizeof(s->host_seen), "%s", rq->claims->hostname);
		if (rq->claims->n_macs > 0)
			snprintf(s->mac_seen, sizeof(s->mac_seen), "%s", rq->claims->macs[0]);
	}
	if (s->requests <= 4)
		memcpy(s->csr_seen[s->requests - 1], h, 32);
	free(s->resp);
	leaf = issue(T.pki, NODE_ID, pub, &leaf_len);
	sp = good_join();
	if (s->challenge || s->requests <= s->pending_rounds) {
		sp = good_deferral(s->challenge ? CHALLENGE : PENDING);
		sp.retry_after_seconds = 1;
	}
	sp.csr_sha256 = h;
	if (sp.deferral == JOINED) {
		sp.leaf = leaf;
		sp.leaf_len = leaf_len;
	}
	s->resp = response(&sp, &s->resp_len);
	s->status = 200;
	free(leaf);
out:
	bc_freezero(tok, tok_len);
	EVP_PKEY_free(pub);
	if (rq != NULL)
		bettercompute__join__v1__join_request__free_unpacked(rq, NULL);
}

static int join_at(const char *url, const struct bc_join_params *p, struct bc_join_answer *a,
                   char *err, size_t errlen)
{
	struct bc_client_pins pins = T.pins; /* shallow: only the URL differs */

	pins.server_url = (char *)url;
	return bc_client_join(&pins, p, a, err, errlen);
}

static struct bc_join_params token_params(void)
{
	struct bc_join_params p = {.token = TOKEN, .key = T.node_key, .agent_version = "test/1"};
	return p;
}

static void test_join_roundtrip(void **state)
{
	char *macs[] = {"52:54:00:12:34:56"};
	struct bc_client_claims claims = {.macs = macs, .n_macs = 1, .hostname = "host-1"};
	struct bc_join_params p = token_params();
	struct bc_join_answer a;
	struct srv s = {.handler = join_handler};
	char err[256];
	EVP_PKEY *leaf_key;
	X509 *x = NULL;

	(void)state;
	p.claims = &claims;
	srv_start(&s, 1);
	assert_int_equal(join_at(s.url, &p, &a, err, sizeof(err)), 0);
	assert_int_equal(a.state, BC_JOIN_JOINED);
	assert_string_equal(a.node_id, NODE_ID);
	assert_int_equal(bc_x509_from_der(a.chain[0], a.chain_lens[0], &x), 0);
	assert_non_null(leaf_key = X509_get0_pubkey(x));
	assert_int_equal(EVP_PKEY_eq(leaf_key, T.node_key), 1);
	X509_free(x);
	bc_join_answer_free(&a);
	srv_wait(&s);
	assert_int_equal(s.requests, 1);
	assert_string_equal(s.path, BC_WIRE_PATH_JOIN);
	assert_string_equal(s.content_type, BC_WIRE_CONTENT_TYPE);
	assert_string_equal(s.token_seen, TOKEN);
	assert_string_equal(s.role_seen, "node");
	assert_string_equal(s.attestor_seen, "");
	assert_string_equal(s.agent_seen, "test/1");
	assert_string_equal(s.host_seen, "host-1");
	assert_string_equal(s.mac_seen, "52:54:00:12:34:56");
	srv_free(&s);
}

static void test_join_refusals(void **state)
{
	static const struct {
		long status;
		const char *body;
		int rc;
		const char *err;
	} cases[] = {
	    {403, "{\"code\":\"permission_denied\",\"message\":\"access denied\"}", BC_ERR_DENIED,
	     "join refused by the server (permission_denied): ask the operator to check the "
	     "security.join.refused event"},
	    {400, "{\"code\":\"invalid_argument\",\"message\":\"bad\"}", BC_ERR_INVALID,
	     "join refused by the server as malformed (invalid_argument, HTTP 400)"},
	    {503, "{\"code\":\"unavailable\",\"message\":\"later\"}", BC_ERR_UNAVAILABLE,
	     "join failed: the server answered HTTP 503 (unavailable)"},
	    {502, "<html>bad gateway</html>", BC_ERR_UNAVAILABLE,
	     "join failed: the server answered HTTP 502 (no Connect error code)"},
	    {500, "{\"code\":\"in\\nternal\"}", BC_ERR_UNAVAILABLE,
	     "join failed: the server answered HTTP 500 (in?ternal)"},
	    {404, "", BC_ERR_UNAVAILABLE,
	     "join failed: the server answered HTTP 404 (no Connect error code)"},
	};
	struct bc_join_params p = token_params();
	struct bc_join_answer a;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srv s = {0};
		canned(&s, cases[i].status, cases[i].body);
		srv_start(&s, 1);
		assert_int_equal(join_at(s.url, &p, &a, err, sizeof(err)), cases[i].rc);
		assert_string_equal(err, cases[i].err);
		assert_int_equal(a.state, 0);
		srv_wait(&s);
		srv_free(&s);
	}
}

static void test_join_no_redirect(void **state)
{
	struct bc_join_params p = token_params();
	struct bc_join_answer a;
	struct srv s = {.extra_header = "Location: http://127.0.0.1:1/elsewhere\r\n"};
	char err[256];

	(void)state;
	canned(&s, 307, "");
	srv_start(&s, 1);
	assert_int_equal(join_at(s.url, &p, &a, err, sizeof(err)), BC_ERR_UNAVAILABLE);
	assert_string_equal(err,
	                    "join failed: the server answered HTTP 307 (no Connect error code)");
	srv_wait(&s);
	assert_int_equal(s.requests, 1);
	srv_free(&s);
}

/* A 200 whose answer is signed for another CSR is refused, whatever the server says. */
static void test_join_answer_for_other_csr(void **state)
{
	struct bc_join_params p = token_params();
	struct bc_join_answer a;
	struct srv s = {0};
	struct spec sp = good_join();
	char err[256];

	(void)state;
	s.status = 200;
	s.resp = response(&sp, &s.resp_len); /* for T.csr, not the CSR bc_client_join makes */
	srv_start(&s, 1);
	assert_int_equal(join_at(s.url, &p, &a, err, sizeof(err)), BC_ERR_VERIFY);
	assert_string_equal(err, "join answer: for another CSR (csr_sha256 is not the request's)");
	assert_int_equal(a.state, 0);
	srv_wait(&s);
	srv_free(&s);
	/* with the CSR given, the same answer is the right one */
	p.csr = T.csr;
	p.csr_len = T.csr_len;
	s.status = 200;
	s.resp = response(&sp, &s.resp_len);
	srv_start(&s, 1);
	assert_int_equal(join_at(s.url, &p, &a, err, sizeof(err)), 0);
	assert_int_equal(a.state, BC_JOIN_JOINED);
	bc_join_answer_free(&a);
	srv_wait(&s);
	srv_free(&s);
}

static void test_join_bad_params(void **state)
{
	struct bc_join_params p = token_params();
	struct bc_join_answer a;
	char err[256];

	(void)state;
	/* a CSR for another key than the one given: refused before any request */
	p.csr = T.other_csr;
	p.csr_len = T.other_csr_len;
	assert_int_equal(join_at("http://127.0.0.1:1", &p, &a, err, sizeof(err)), BC_ERR_INVALID);
	assert_string_equal(err, "join: the CSR is not for the given key");
	p.csr = (const uint8_t *)"junk";
	p.csr_len = 4;
	assert_int_equal(join_at("http://127.0.0.1:1", &p, &a, err, sizeof(err)), BC_ERR_INVALID);
	assert_string_equal(err, "join: the CSR does not check");
	p = token_params();
	p.key = NULL;
	assert_int_equal(join_at("http://127.0.0.1:1", &p, &a, err, sizeof(err)), BC_ERR_INVALID);
	assert_int_equal(bc_client_join(NULL, &p, &a, err, sizeof(err)), BC_ERR_INVALID);
}

static void test_post_connection_refused(void **state)
{
	struct bc_join_params p = token_params();
	struct bc_join_answer a;
	char url[64], err[256], want[256];
	int port, fd = listen_loopback(&port);

	(void)state;
	close(fd); /* bound then closed: nothing listens on the port */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	assert_int_equal(join_at(url, &p, &a, err, sizeof(err)), BC_ERR_UNAVAILABLE);
	snprintf(want, sizeof(want),
	         "POST %s" BC_WIRE_PATH_JOIN ": connect to 127.0.0.1:%d: connection refused", url,
	         port);
	assert_string_equal(err, want);
}

static void test_post_limit(void **state)
{
	struct bc_client_pins pins = T.pins;
	struct bc_client_reply r = {0};
	char err[256];

	(void)state;
	for (int close_delimited = 0; close_delimited < 2; close_delimited++) {
		/* exactly the bound is read */
		struct srv s = {.status = 200, .close_delimited = close_delimited};
		s.resp_len = 1u << 20;
		s.resp = calloc(1, s.resp_len + 1);
		srv_start(&s, 1);
		pins.server_url = s.url;
		assert_int_equal(bc_client_post(&pins, "/x", "a", 1, &r, err, sizeof(err)), 0);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.len, 1u << 20);
		free(r.body);
		srv_wait(&s);
		srv_free(&s);
		/* one byte more is not, with or without a Content-Length */
		s.status = 200;
		s.close_delimited = close_delimited;
		s.resp_len = (1u << 20) + 1;
		s.resp = calloc(1, s.resp_len);
		srv_start(&s, 1);
		pins.server_url = s.url;
		assert_int_equal(bc_client_post(&pins, "/x", "a", 1, &r, err, sizeof(err)),
		                 BC_ERR_LIMIT);
		assert_null(r.body);
		assert_int_equal(r.len, 0);
		assert_contains(err, "the answer is larger than 1048576 bytes");
		srv_wait(&s);
		srv_free(&s);
	}
	/* a path must be one */
	assert_int_equal(bc_client_post(&T.pins, "x", "a", 1, &r, err, sizeof(err)),
	                 BC_ERR_INVALID);
}

/* ---- bc-join, the test client, run as a process ---- */

#ifndef BC_BINARY_DIR
#define BC_BINARY_DIR "."
#endif

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(buf);
	if (f == NULL)
		return buf;
	n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Runs bc-join with args (after the program name) and an empty environment; its
 * stdout and stderr land in dir/stdout and dir/stderr. Returns its exit status. */
static int run_tool(const char *dir, const char *const *args)
{
	static const char bin[] = BC_BINARY_DIR "/bc-join";
	char *argv[24], outp[512], errp[512];
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	size_t n = 0;
	int st;
	pid_t pid;

	if (access(bin, X_OK) != 0)
		skip(); /* bc-join is built with the tests; a partial build may lack it */
	argv[n++] = (char *)bin;
	for (; args[n - 1] != NULL && n < 23; n++)
		argv[n] = (char *)args[n - 1];
	argv[n] = NULL;
	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
		execve(bin, argv, envp);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

struct tool_dir {
	char dir[64], pins[128], token[128], out[128];
};

static void tool_dir(struct tool_dir *d, const char *url, const char *token_text)
{
	json_t *j = pins_obj(url);
	char *text = json_dumps(j, 0);

	snprintf(d->dir, sizeof(d->dir), "/tmp/bc-client-test.XXXXXX");
	assert_non_null(mkdtemp(d->dir));
	snprintf(d->pins, sizeof(d->pins), "%s/pins.json", d->dir);
	snprintf(d->token, sizeof(d->token), "%s/token", d->dir);
	snprintf(d->out, sizeof(d->out), "%s/out", d->dir);
	write_file(d->pins, text);
	write_file(d->token, token_text);
	free(text);
	json_decref(j);
}

static void tool_dir_rm(struct tool_dir *d)
{
	static const char *const names[] = {"pins.json",    "token",        "stdout", "stderr",
	                                    "out/node.key", "out/node.crt", "out"};
	char p[256];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", d->dir, names[i]);
		if (unlink(p) != 0)
			rmdir(p);
	}
	rmdir(d->dir);
}

/* The files bc-join wrote: a 0600 PKCS#8 key and the chain, the leaf for that key. */
static void check_identity(const struct tool_dir *d)
{
	char kp[256], cp[256], *key_pem, *crt_pem;
	EVP_PKEY *key = NULL;
	struct stat st;
	X509 *leaf;
	BIO *b;

	snprintf(kp, sizeof(kp), "%s/node.key", d->out);
	snprintf(cp, sizeof(cp), "%s/node.crt", d->out);
	assert_int_equal(stat(kp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	key_pem = slurp(kp);
	crt_pem = slurp(cp);
	assert_non_null(strstr(key_pem, "-----BEGIN PRIVATE KEY-----"));
	assert_int_equal(bc_key_from_pem(key_pem, strlen(key_pem), &key), 0);
	assert_non_null(b = BIO_new_mem_buf(crt_pem, -1));
	assert_non_null(leaf = PEM_read_bio_X509(b, NULL, NULL, NULL));
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(leaf), key), 1);
	X509_free(leaf);
	assert_non_null(leaf = PEM_read_bio_X509(b, NULL, NULL, NULL)); /* the CA after it */
	X509_free(leaf);
	BIO_free(b);
	EVP_PKEY_free(key);
	bc_freezero(key_pem, strlen(key_pem));
	free(crt_pem);
}

/* TLS against the pinned bundle only: a Python HTTPS server (the test binary does
 * not link libssl) with a certificate from the pinned TLS CA, then from another. */
static const char tls_server_py[] =
    "import http.server, ssl, sys\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_POST(self):\n"
    "        self.rfile.read(int(self.headers.get('Content-Length', 0)))\n"
    "        self.send_response(200)\n"
    "        self.send_header('Content-Length', '2')\n"
    "        self.end_headers()\n"
    "        self.wfile.write(b'ok')\n"
    "    def log_message(self, *a):\n"
    "        pass\n"
    "s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
    "ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
    "ctx.load_cert_chain(sys.argv[1], sys.argv[2])\n"
    "s.socket = ctx.wrap_socket(s.socket, server_side=True)\n"
    "print(s.server_address[1], flush=True)\n"
    "s.serve_forever()\n";

static pid_t start_tls_server(const char *dir, int *port)
{
	static const char py[] = "/usr/bin/python3";
	char script[256], cert[256], key[256], line[32] = "";
	const char *hosts[] = {"127.0.0.1"};
	char *cert_pem = NULL, *key_pem = NULL;
	int fds[2];
	pid_t pid;
	FILE *f;

	if (access(py, X_OK) != 0)
		skip();
	snprintf(script, sizeof(script), "%s/server.py", dir);
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	assert_int_equal(bc_pki_server_tls_cert(T.pki, hosts, 1, &cert_pem, &key_pem), 0);
	write_file(script, tls_server_py);
	write_file(cert, cert_pem);
	write_file(key, key_pem);
	free(cert_pem);
	bc_freezero(key_pem, strlen(key_pem));
	assert_int_equal(pipe(fds), 0);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		char *argv[] = {(char *)py, script, cert, key, NULL};
		char *envp[] = {NULL};
		int devnull = open("/dev/null", O_WRONLY);
		if (dup2(fds[1], 1) < 0 || devnull < 0 || dup2(devnull, 2) < 0)
			_exit(126);
		close(fds[0]);
		execve(py, argv, envp);
		_exit(127);
	}
	close(fds[1]);
	assert_non_null(f = fdopen(fds[0], "r"));
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	*port = atoi(line);
	assert_true(*port > 0);
	return pid;
}

static void test_post_tls(void **state)
{
	struct bc_client_pins pins = T.pins;
	char dir[64] = "/tmp/bc-client-tls.XXXXXX", url[64], err[512], p[256];
	char *other = ca_bundle(T.other_pki);
	static const char *const files[] = {"server.py", "cert.pem", "key.pem"};
	struct bc_client_reply r = {0};
	int port, st;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	pid = start_tls_server(dir, &port);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", port);
	pins.server_url = url;
	assert_int_equal(bc_client_post(&pins, "/x", "a", 1, &r, err, sizeof(err)), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 2);
	assert_memory_equal(r.body, "ok", 2);
	free(r.body);
	/* a bundle from another control plane: the server is not the pinned one */
	pins.ca_bundle_pem = other;
	assert_int_equal(bc_client_post(&pins, "/x", "a", 1, &r, err, sizeof(err)), BC_ERR_VERIFY);
	assert_contains(err, "the server's TLS certificate is not from the pinned CA bundle");
	assert_null(r.body);
	/* the right CA, but a name the certificate does not carry */
	pins.ca_bundle_pem = T.pins.ca_bundle_pem;
	snprintf(url, sizeof(url), "https://localhost:%d", port);
	assert_int_equal(bc_client_post(&pins, "/x", "a", 1, &r, err, sizeof(err)), BC_ERR_VERIFY);
	/* no bundle at all: refused before connecting, never the system store */
	pins.ca_bundle_pem = NULL;
	assert_int_equal(bc_client_post(&pins, "/x", "a", 1, &r, err, sizeof(err)), BC_ERR_CONFIG);
	assert_contains(err, "no pinned CA bundle");
	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
	free(other);
}

static void test_tool_join_after_pending(void **state)
{
	struct srv s = {.handler = join_handler, .pending_rounds = 2};
	struct tool_dir d;
	char path[256], *out, *err;

	(void)state;
	srv_start(&s, 3);
	tool_dir(&d, s.url, TOKEN "\n");
	assert_int_equal(run_tool(d.dir, (const char *[]){"--pins", d.pins, "--token-file", d.token,
	                                                  "--out", d.out, "--hostname", "h1",
	                                                  "--mac", "52:54:00:AB:CD:EF", NULL}),
	                 0);
	srv_wait(&s);
	snprintf(path, sizeof(path), "%s/stdout", d.dir);
	out = slurp(path);
	assert_string_equal(out, "joined as " NODE_ID "\n");
	free(out);
	/* three rounds, the same CSR each time, the token opened by the server */
	assert_int_equal(s.requests, 3);
	assert_memory_equal(s.csr_seen[0], s.csr_seen[1], 32);
	assert_memory_equal(s.csr_seen[0], s.csr_seen[2], 32);
	assert_string_equal(s.token_seen, TOKEN);
	assert_string_equal(s.host_seen, "h1");
	assert_string_equal(s.mac_seen, "52:54:00:ab:cd:ef");
	check_identity(&d);
	snprintf(path, sizeof(path), "%s/stderr", d.dir);
	err = slurp(path);
	assert_contains(err, "pending (join request jr_0123456789abcdefghjkmnpqrs)");
	free(err);
	srv_free(&s);
	tool_dir_rm(&d);
}

static void test_tool_refusals(void **state)
{
	static const struct {
		const char *token; /* the token file's text */
		int challenge;     /* the server answers a challenge */
		int requests;
		int rc;
		const char *err;
	} cases[] = {
	    {TOKEN "\r\n", 0, 1, 0, ""},
	    {"bct_a b\n", 0, 0, 1, "bc-join: token file: expected one line bct_...\n"},
	    {TOKEN "\n\n", 0, 0, 1, "bc-join: token file: expected one line bct_...\n"},
	    {" " TOKEN, 0, 0, 1, "bc-join: token file: expected one line bct_...\n"},
	    {"", 0, 0, 1, "bc-join: token file: expected one line bct_...\n"},
	    {TOKEN, 1, 1, 1,
	     "bc-join: the server sent a tpm challenge, which bc-join cannot answer\n"},
	};
	char path[256], *err;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srv s = {.handler = join_handler, .challenge = cases[i].challenge};
		struct tool_dir d;
		srv_start(&s, cases[i].requests);
		tool_dir(&d, s.url, cases[i].token);
		assert_int_equal(run_tool(d.dir, (const char *[]){"--pins", d.pins, "--token-file",
		                                                  d.token, "--out", d.out, NULL}),
		                 cases[i].rc);
		srv_wait(&s);
		assert_int_equal(s.requests, cases[i].requests);
		snprintf(path, sizeof(path), "%s/stderr", d.dir);
		err = slurp(path);
		assert_string_equal(err, cases[i].err);
		free(err);
		srv_free(&s);
		tool_dir_rm(&d);
	}
}

static void test_tool_usage(void **state)
{
	struct tool_dir d;
	char path[256], *err;

	(void)state;
	tool_dir(&d, "http://127.0.0.1:1", TOKEN);
	/* no --pins, an unknown role, and a token on the command line are usage errors */
	assert_int_equal(run_tool(d.dir, (const char *[]){"--token-file", d.token, NULL}), 2);
	assert_int_equal(
	    run_tool(d.dir, (const char *[]){"--pins", d.pins, "--role", "ramdisk", NULL}), 2);
	assert_int_equal(
	    run_tool(d.dir, (const char *[]){"--pins", d.pins, "--token", TOKEN, NULL}), 2);
	/* no token at all (the environment is empty) */
	assert_int_equal(run_tool(d.dir, (const char *[]){"--pins", d.pins, NULL}), 1);
	snprintf(path, sizeof(path), "%s/stderr", d.dir);
	err = slurp(path);
	assert_string_equal(err, "bc-join: no token: use --token-file FILE or BC_JOIN_TOKEN\n");
	free(err);
	/* nothing listens: one line, exit 1 */
	assert_int_equal(run_tool(d.dir, (const char *[]){"--pins", d.pins, "--token-file", d.token,
	                                                  "--out", d.out, NULL}),
	                 1);
	err = slurp(path);
	assert_string_equal(err, "bc-join: POST http://127.0.0.1:1" BC_WIRE_PATH_JOIN
	                         ": connect to 127.0.0.1:1: connection refused\n");
	free(err);
	tool_dir_rm(&d);
}

/* ---- the attestor table ---- */

/* Every built-in attestor has one row, found by its id; the names of a flag are the
 * rows that have it, in order; an unknown id has none. */
static void test_attestor_table(void **state)
{
	static const char *const ids[] = {BC_WIRE_ATTESTOR_JOIN_TOKEN, BC_WIRE_ATTESTOR_TPM,
	                                  BC_WIRE_ATTESTOR_X509POP,    BC_WIRE_ATTESTOR_PROVISIONED,
	                                  BC_WIRE_ATTESTOR_CLOUD_IID,  BC_WIRE_ATTESTOR_DISCOVERY};
	const struct bc_client_attestor *a;
	char names[128], small[8];
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		assert_non_null(a = bc_client_attestor(ids[i]));
		assert_string_equal(a->id, ids[i]);
		/* an attestor without a token says why none goes with it */
		assert_true((a->flags & BC_CA_TOKEN) || a->no_token != NULL);
	}
	while (bc_client_attestor_at(n) != NULL)
		n++;
	assert_int_equal(n, sizeof(ids) / sizeof(ids[0]));
	assert_null(bc_client_attestor("nosuch"));
	assert_null(bc_client_attestor(""));
	assert_null(bc_client_attestor(NULL));
	assert_string_equal(bc_client_attestor_names(BC_CA_INSTALL, names, sizeof(names)),
	                    "join-token, tpm, provisioned, cloud-iid");
	assert_string_equal(bc_client_attestor_names(BC_CA_JOIN, names, sizeof(names)),
	                    "join-token, tpm, x509pop, provisioned, cloud-iid");
	assert_string_equal(bc_client_attestor_names(BC_CA_TOKEN, names, sizeof(names)),
	                    "join-token, provisioned");
	assert_string_equal(bc_client_attestor_names(BC_CA_SITE, names, sizeof(names)),
	                    "join-token");
	assert_string_equal(bc_client_attestor_names(BC_CA_RAMDISK, names, sizeof(names)),
	                    "discovery");
	/* a short buffer is cut, never overrun */
	assert_int_equal(strlen(bc_client_attestor_names(BC_CA_JOIN, small, sizeof(small))), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_attestor_table),
	    cmocka_unit_test(test_pins_good),
	    cmocka_unit_test(test_pins_servers),
	    cmocka_unit_test(test_pins_set_server_same_rule),
	    cmocka_unit_test(test_pins_missing),
	    cmocka_unit_test(test_pins_bad),
	    cmocka_unit_test(test_seal_token),
	    cmocka_unit_test(test_open_join),
	    cmocka_unit_test(test_open_deferrals),
	    cmocka_unit_test(test_refuse_wrong_kid),
	    cmocka_unit_test(test_refuse_bad_signature),
	    cmocka_unit_test(test_refuse_altered),
	    cmocka_unit_test(test_refuse_other_csr),
	    cmocka_unit_test(test_refuse_leaf_other_key),
	    cmocka_unit_test(test_refuse_leaf_other_node),
	    cmocka_unit_test(test_refuse_trust_domain),
	    cmocka_unit_test(test_refuse_bad_join),
	    cmocka_unit_test(test_refuse_deferral_with_chain),
	    cmocka_unit_test(test_refuse_garbage),
	    cmocka_unit_test(test_join_roundtrip),
	    cmocka_unit_test(test_join_refusals),
	    cmocka_unit_test(test_join_no_redirect),
	    cmocka_unit_test(test_join_answer_for_other_csr),
	    cmocka_unit_test(test_join_bad_params),
	    cmocka_unit_test(test_post_connection_refused),
	    cmocka_unit_test(test_post_limit),
	    cmocka_unit_test(test_post_tls),
	    cmocka_unit_test(test_tool_join_after_pending),
	    cmocka_unit_test(test_tool_refusals),
	    cmocka_unit_test(test_tool_usage),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
