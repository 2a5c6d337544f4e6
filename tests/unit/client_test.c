/* src/client: pins, token sealing, opening join answers (every refusal), and the
 * HTTP round trip against a small loopback server run by the test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/ec.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bettercompute/join/v1/join.pb-c.h"

#define TD "example.test"
#define NODE_ID "node_0123456789abcdefghjkmnpqrs"
#define OTHER_NODE_ID "node_zzzzzzzzzzzzzzzzzzzzzzzzzz"
#define TOKEN "bct_tok_0123456789abcdefghjkmnpqrs_c2VjcmV0LXNlY3JldA"
#define TOKEN_INFO "bettercompute join token v1"

typedef Bettercompute__Join__V1__JoinResponseBody body_t;

/* Everything the tests share, made once. */
static struct {
	bc_pki *pki;
	bc_pki *other_pki;           /* another control plane: another trust domain */
	char *pins_json;             /* good pins, http on loopback */
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
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "server", server, "joinSigningKeyId",
	                      T.pki->join_signing_kid, "joinSigningKey", sig, "joinEncryptionKey", enc,
	                      "caBundle", ca, "trustDomain", TD);

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
		.node_id = node_id, .role = BC_ROLE_NODE, .pub = key,
		.not_before_ms = (int64_t)time(NULL) * 1000, .ttl_ms = 0,
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
	int n_chain;                 /* 0, 1 (leaf) or 2 (leaf, CA) */
	enum deferral deferral;
	const char *trust_domain;
};

/* A good join for the test CSR, for a test to change one thing in. */
static struct spec good_join(void)
{
	struct spec s = { T.csr_sha256, 32, NODE_ID, T.leaf, T.leaf_len, 2, JOINED, TD };
	return s;
}

static struct spec good_deferral(enum deferral d)
{
	struct spec s = { T.csr_sha256, 32, "", NULL, 0, 0, d, TD };
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
		pend.retry_after_seconds = 7;
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
	uint8_t sig[BC_SIG_LEN] = { 0 }, *out;

	if (key != NULL)
		assert_int_equal(bc_es256_sign(key, BC_PURPOSE_JOIN_RESPONSE, body, body_len, sig), 0);
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
	uint8_t *body = pack_body(s, &blen), *r = wrap(body, blen, T.pki->join_signing,
	                                                T.pki->join_signing_kid, len);
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
