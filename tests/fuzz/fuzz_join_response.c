/* libFuzzer target: bc_client_open_join_response(_csr) on arbitrary bytes with fixed
 * pins. The first byte chooses how far the input can reach:
 *   bit 0 clear: the rest is a SignedResponse as it came off the wire (the envelope
 *                checks: nothing gets past the signature);
 *   bit 0 set:   the rest is a JoinResponseBody that the harness signs with the
 *                pinned key, so the body checks are fuzzed too; then
 *   bit 1:       the harness sets csr_sha256 to the request's,
 *   bit 2:       replaces chain[0] (when there is one) by a real leaf for the CSR's key,
 *   bit 3:       sets node_id to that leaf's and trust_domain to the pinned one.
 * Invariants checked: a refusal leaves the answer zeroed, and an accepted JOINED
 * answer has a chain, a valid node id and the pinned trust domain. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bettercompute/join/v1/join.pb-c.h"

#define TD      "fuzz.test"
#define NODE_ID "node_0123456789abcdefghjkmnpqrs"

static struct {
	bc_pki *pki;
	struct bc_client_pins pins;
	struct bc_signer signer; /* the join signing key's, as the server signs */
	EVP_PKEY *key;
	uint8_t *csr, *leaf;
	size_t csr_len, leaf_len;
	uint8_t csr_sha256[32];
} F;

static void init(void)
{
	struct bc_node_cert_req req = {.node_id = NODE_ID, .role = BC_ROLE_NODE};
	char serial[33];
	int64_t not_after;

	if (bc_pki_generate(TD, &F.pki) != 0 || bc_key_generate(&F.key) != 0 ||
	    bc_csr_make(F.key, "fuzz", &F.csr, &F.csr_len) != 0 ||
	    bc_sha256(F.csr, F.csr_len, F.csr_sha256) != 0)
		abort();
	req.pub = F.key;
	req.not_before_ms = 1790000000000LL;
	if (bc_pki_issue_node_cert(F.pki, &req, &F.leaf, &F.leaf_len, serial, &not_after) != 0)
		abort();
	/* the pins borrow the bundle's keys: neither is ever freed */
	F.pins.server_url = "http://127.0.0.1:1";
	F.pins.join_signing_kid = F.pki->join_signing_kid;
	F.pins.join_signing = F.pki->join_signing;
	if (bc_p256_public_point(F.pki->join_signing, F.pins.join_signing_point) != 0 ||
	    bc_signer_init(&F.signer, F.pki->join_signing, NULL, NULL) != 0)
		abort();
	F.pins.join_encryption = F.pki->join_encryption;
	F.pins.trust_domain = TD;
}

static int is_zero(const struct bc_join_answer *a)
{
	static const struct bc_join_answer zero;

	return memcmp(a, &zero, sizeof(zero)) == 0;
}

/* The body as the flags say, signed by the pinned key; NULL when it does not decode. */
static uint8_t *signed_body(uint8_t flags, const uint8_t *p, size_t n, size_t *len)
{
	Bettercompute__Join__V1__SignedResponse sr = BETTERCOMPUTE__JOIN__V1__SIGNED_RESPONSE__INIT;
	Bettercompute__Join__V1__JoinResponseBody *b;
	ProtobufCBinaryData saved_hash = {0, NULL}, saved_leaf = {0, NULL};
	char *saved_id = NULL, *saved_td = NULL;
	uint8_t sig[BC_SIG_LEN], *body, *out = NULL;
	size_t blen;

	if ((b = bettercompute__join__v1__join_response_body__unpack(NULL, n, p)) == NULL)
		return NULL;
	if (flags & 2) {
		saved_hash = b->csr_sha256;
		b->csr_sha256.data = F.csr_sha256;
		b->csr_sha256.len = 32;
	}
	if ((flags & 4) && b->n_chain > 0) {
		saved_leaf = b->chain[0];
		b->chain[0].data = F.leaf;
		b->chain[0].len = F.leaf_len;
	}
	if (flags & 8) {
		saved_id = b->node_id;
		saved_td = b->trust_domain;
		b->node_id = NODE_ID;
		b->trust_domain = TD;
	}
	blen = bettercompute__join__v1__join_response_body__get_packed_size(b);
	if ((body = malloc(blen + 1)) == NULL)
		abort();
	bettercompute__join__v1__join_response_body__pack(b, body);
	/* give back what the unpacked message owns before freeing it */
	if (flags & 2)
		b->csr_sha256 = saved_hash;
	if ((flags & 4) && b->n_chain > 0)
		b->chain[0] = saved_leaf;
	if (flags & 8) {
		b->node_id = saved_id;
		b->trust_domain = saved_td;
	}
	bettercompute__join__v1__join_response_body__free_unpacked(b, NULL);
	if (bc_es256_sign(&F.signer, BC_PURPOSE_JOIN_RESPONSE, body, blen, sig) != 0)
		abort();
	sr.body.data = body;
	sr.body.len = blen;
	sr.signature.data = sig;
	sr.signature.len = sizeof(sig);
	sr.key_id = F.pki->join_signing_kid;
	*len = bettercompute__join__v1__signed_response__get_packed_size(&sr);
	if ((out = malloc(*len + 1)) == NULL)
		abort();
	bettercompute__join__v1__signed_response__pack(&sr, out);
	free(body);
	return out;
}

static void check(int rc, const struct bc_join_answer *a)
{
	if (rc != 0) {
		if (!is_zero(a))
			abort();
		return;
	}
	if (a->state == BC_JOIN_JOINED &&
	    (a->n_chain == 0 || !bc_node_id_valid(a->node_id) || strcmp(a->trust_domain, TD) != 0))
		abort();
	if (a->state != BC_JOIN_JOINED && a->n_chain != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_join_answer a;
	uint8_t *resp = NULL;
	const uint8_t *in;
	size_t len;
	char err[256];
	int rc;

	if (F.pki == NULL)
		init();
	if (size == 0)
		return 0;
	if (data[0] & 1) {
		if ((resp = signed_body(data[0], data + 1, size - 1, &len)) == NULL)
			return 0;
		in = resp;
	} else {
		in = data + 1;
		len = size - 1;
	}
	rc = bc_client_open_join_response_csr(&F.pins, in, len, F.csr, F.csr_len, &a, err,
	                                      sizeof(err));
	check(rc, &a);
	bc_join_answer_free(&a);
	rc = bc_client_open_join_response(&F.pins, in, len, F.csr_sha256, &a, err, sizeof(err));
	check(rc, &a);
	bc_join_answer_free(&a);
	free(resp);
	return 0;
}
