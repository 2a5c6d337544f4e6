/* Opening a JoinService answer. Order matters: the envelope's key id and signature
 * are checked before the body is decoded, and the body's csr_sha256 before anything
 * else in it is read, so nothing an unpinned party wrote reaches the caller. */
#include <stdlib.h>
#include <string.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "client/internal.h"

#define MAX_CHAIN        8
#define MAX_TRUST_BUNDLE 16
#define MAX_CERT         (64u * 1024)

typedef Bettercompute__Join__V1__SignedResponse signed_response;
typedef Bettercompute__Join__V1__JoinResponseBody response_body;

static void free_list(uint8_t **items, size_t *lens, size_t n)
{
	for (size_t i = 0; items != NULL && i < n; i++)
		free(items[i]);
	free(items);
	free(lens);
}

void bc_join_answer_free(struct bc_join_answer *a)
{
	if (a == NULL)
		return;
	free_list(a->chain, a->chain_lens, a->n_chain);
	free_list(a->trust_bundle, a->trust_bundle_lens, a->n_trust_bundle);
	free(a->challenge);
	free(a->pins_update);
	memset(a, 0, sizeof(*a));
}

/* Copies n DER blobs of 1..MAX_CERT bytes each; *n_out counts what was copied so far,
 * so the caller's free is right on every path. */
static int copy_list(const ProtobufCBinaryData *src, size_t n, uint8_t ***items, size_t **lens,
                     size_t *n_out)
{
	*items = NULL;
	*lens = NULL;
	*n_out = 0;
	if (n == 0)
		return 0;
	if ((*items = calloc(n, sizeof(**items))) == NULL ||
	    (*lens = calloc(n, sizeof(**lens))) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if (src[i].len == 0 || src[i].len > MAX_CERT)
			return BC_ERR_INVALID;
		if (((*items)[i] = malloc(src[i].len)) == NULL)
			return BC_ERR_NOMEM;
		memcpy((*items)[i], src[i].data, src[i].len);
		(*lens)[i] = src[i].len;
		*n_out = i + 1;
	}
	return 0;
}

/* A printable ASCII string that fits dst (with its NUL). */
static int copy_str(char *dst, size_t dstlen, const char *src)
{
	size_t n = strlen(src);

	if (n >= dstlen)
		return BC_ERR_LIMIT;
	for (size_t i = 0; i < n; i++) {
		if (src[i] < 0x21 || src[i] > 0x7e)
			return BC_ERR_INVALID;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

static int open_envelope(const struct bc_client_pins *pins, const uint8_t *resp, size_t len,
                         signed_response **out, char *err, size_t errlen)
{
	return bc_client_open_signed(pins, BC_PURPOSE_JOIN_RESPONSE, resp, len, out, err, errlen);
}

/* The point of the pinned signing key kid: the active one, or another pinned signing
 * key (next, kept: a server that switched keys before this agent heard of it); NULL
 * for a key id the agent does not pin. */
const uint8_t *bc_client_pinned_signer(const struct bc_client_pins *pins, const char *kid)
{
	if (strcmp(kid, pins->join_signing_kid) == 0)
		return pins->join_signing_point;
	for (size_t i = 0; i < pins->n_keys; i++) {
		const struct bc_client_pin *k = &pins->keys[i];
		if (k->use == BC_JOIN_KEY_SIGNING && strcmp(kid, k->kid) == 0)
			return k->point;
	}
	return NULL;
}

int bc_client_open_signed(const struct bc_client_pins *pins, const char *purpose,
                          const uint8_t *resp, size_t len,
                          Bettercompute__Join__V1__SignedResponse **out, char *err, size_t errlen)
{
	char got[BC_CLIENT_SHOW_LEN], want[BC_CLIENT_SHOW_LEN];
	signed_response *sr;
	const uint8_t *point;

	*out = NULL;
	if (len > BC_CLIENT_MAX_RESPONSE) {
		bc_errf(err, errlen, "join answer: larger than %u bytes", BC_CLIENT_MAX_RESPONSE);
		return BC_ERR_LIMIT;
	}
	if (len == 0 ||
	    (sr = bettercompute__join__v1__signed_response__unpack(NULL, len, resp)) == NULL) {
		bc_errf(err, errlen, "join answer: not a SignedResponse");
		return BC_ERR_INVALID;
	}
	*out = sr;
	if ((point = bc_client_pinned_signer(pins, sr->key_id)) == NULL) {
		bc_client_show(sr->key_id, got);
		bc_client_show(pins->join_signing_kid, want);
		bc_errf(err, errlen,
		        "join answer: signed by key %s, expected the pinned %s or another "
		        "pinned join signing key; if the server's join keys were rotated "
		        "and these pins retired, join again with a token",
		        got[0] != '\0' ? got : "(none)", want);
		return BC_ERR_VERIFY;
	}
	if (bc_es256_verify(point, purpose, sr->body.data, sr->body.len, sr->signature.data,
	                    sr->signature.len) != 0) {
		bc_errf(err, errlen,
		        "join answer: the signature does not verify under the "
		        "pinned join signing key");
		return BC_ERR_VERIFY;
	}
	return 0;
}

/* What binds the body to this request and this control plane: the CSR's hash and,
 * when the body names one, the trust domain. */
static int read_binding(const struct bc_client_pins *pins, const response_body *b,
                        const uint8_t csr_sha256[static 32], struct bc_join_answer *a, char *err,
                        size_t errlen)
{
	char got[BC_CLIENT_SHOW_LEN];

	if (b->csr_sha256.len != 32 || memcmp(b->csr_sha256.data, csr_sha256, 32) != 0) {
		bc_errf(err, errlen,
		        "join answer: for another CSR (csr_sha256 is not the "
		        "request's)");
		return BC_ERR_VERIFY;
	}
	if (b->trust_domain[0] == '\0')
		return 0;
	if (!bc_trust_domain_valid(b->trust_domain)) {
		bc_client_show(b->trust_domain, got);
		bc_errf(err, errlen, "join answer: trust domain %s is not a trust domain name",
		        got);
		return BC_ERR_INVALID;
	}
	if (pins->trust_domain != NULL && strcmp(b->trust_domain, pins->trust_domain) != 0) {
		bc_client_show(b->trust_domain, got);
		bc_errf(err, errlen, "join answer: trust domain %s, expected the pinned %s", got,
		        pins->trust_domain);
		return BC_ERR_VERIFY;
	}
	memcpy(a->trust_domain, b->trust_domain, strlen(b->trust_domain) + 1);
	return 0;
}

static int deferral_is_empty(const response_body *b, char *err, size_t errlen)
{
	if (b->node_id[0] != '\0' || b->n_chain != 0) {
		bc_errf(err, errlen,
		        "join answer: a deferral that carries a node id or a "
		        "certificate chain");
		return BC_ERR_INVALID;
	}
	return 0;
}

static int read_pending(const response_body *b, struct bc_join_answer *a, char *err, size_t errlen)
{
	int rc;

	if ((rc = deferral_is_empty(b, err, errlen)) != 0)
		return rc;
	if (b->pending == NULL ||
	    copy_str(a->request_id, sizeof(a->request_id), b->pending->request_id) != 0) {
		bc_errf(err, errlen, "join answer: pending, with a malformed request id");
		return BC_ERR_INVALID;
	}
	a->state = BC_JOIN_PENDING;
	a->retry_after_seconds = b->pending->retry_after_seconds;
	return 0;
}

static int read_challenge(const response_body *b, struct bc_join_answer *a, char *err,
                          size_t errlen)
{
	const Bettercompute__Join__V1__JoinChallenge *c = b->challenge;
	int rc;

	if ((rc = deferral_is_empty(b, err, errlen)) != 0)
		return rc;
	if (c == NULL || c->attestor[0] == '\0' ||
	    copy_str(a->challenge_attestor, sizeof(a->challenge_attestor), c->attestor) != 0 ||
	    c->payload.len > BC_WIRE_CHALLENGE_MAX) {
		bc_errf(err, errlen, "join answer: a malformed challenge");
		return BC_ERR_INVALID;
	}
	if (c->payload.len > 0) {
		if ((a->challenge = malloc(c->payload.len)) == NULL)
			return BC_ERR_NOMEM;
		memcpy(a->challenge, c->payload.data, c->payload.len);
		a->challenge_len = c->payload.len;
	}
	a->state = BC_JOIN_CHALLENGE;
	a->challenge_not_after_ms = c->not_after_ms;
	return 0;
}

int bc_client_leaf_node(const uint8_t *der, size_t len, const char *trust_domain,
                        const uint8_t *point, char node_id[static 64])
{
	struct bc_node_identity id;
	uint8_t got[65];

	if (bc_pki_node_identity(der, len, trust_domain, &id, got) != 0)
		return BC_ERR_INVALID;
	memcpy(node_id, id.node_id, 64);
	bc_node_identity_clear(&id);
	/* a key that is not P-256 reads as zeros, which no CSR's point is */
	if (point != NULL && memcmp(got, point, 65) != 0)
		return BC_ERR_VERIFY;
	return 0;
}

/* The leaf must name the body's node id (read from its SPIFFE ID, never from a
 * statement) and, when the CSR's key is known, certify that key. */
static int check_leaf(const response_body *b, const char *trust_domain, const uint8_t *csr_point,
                      char *err, size_t errlen)
{
	char node_id[64], got[BC_CLIENT_SHOW_LEN];
	int rc;

	rc = bc_client_leaf_node(b->chain[0].data, b->chain[0].len, trust_domain, csr_point,
	                         node_id);
	if (rc == BC_ERR_INVALID) {
		bc_errf(err, errlen,
		        "join answer: the leaf is not a node certificate of trust "
		        "domain %s",
		        trust_domain);
		return rc;
	}
	if (strcmp(node_id, b->node_id) != 0) {
		bc_client_show(node_id, got);
		bc_errf(err, errlen,
		        "join answer: the leaf certificate is for node %s, the "
		        "answer names %s",
		        got, b->node_id);
		return BC_ERR_VERIFY;
	}
	if (rc != 0) {
		bc_errf(err, errlen,
		        "join answer: the leaf certificate is for another "
		        "key than the CSR's");
		return BC_ERR_VERIFY;
	}
	return 0;
}

static int read_joined(const response_body *b, const uint8_t *csr_point, struct bc_join_answer *a,
                       char *err, size_t errlen)
{
	char got[BC_CLIENT_SHOW_LEN];
	int rc;

	if (b->n_chain == 0 || b->n_chain > MAX_CHAIN) {
		bc_errf(err, errlen,
		        "join answer: joined, with %zu certificates in the chain "
		        "(1 to %d)",
		        b->n_chain, MAX_CHAIN);
		return BC_ERR_INVALID;
	}
	if (!bc_node_id_valid(b->node_id)) {
		bc_client_show(b->node_id, got);
		bc_errf(err, errlen, "join answer: joined, with node id \"%s\"", got);
		return BC_ERR_INVALID;
	}
	if (a->trust_domain[0] == '\0') {
		bc_errf(err, errlen, "join answer: joined, without a trust domain");
		return BC_ERR_INVALID;
	}
	if ((rc = check_leaf(b, a->trust_domain, csr_point, err, errlen)) != 0)
		return rc;
	if ((rc = copy_list(b->chain, b->n_chain, &a->chain, &a->chain_lens, &a->n_chain)) != 0) {
		bc_errf(err, errlen, "join answer: a malformed certificate chain");
		return rc;
	}
	memcpy(a->node_id, b->node_id, strlen(b->node_id) + 1);
	a->state = BC_JOIN_JOINED;
	return 0;
}

static int read_body(const struct bc_client_pins *pins, const response_body *b,
                     const uint8_t csr_sha256[static 32], const uint8_t *csr_point,
                     struct bc_join_answer *a, char *err, size_t errlen)
{
	int rc;

	if ((rc = read_binding(pins, b, csr_sha256, a, err, errlen)) != 0)
		return rc;
	switch (b->deferral_case) {
	case BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__DEFERRAL_PENDING:
		rc = read_pending(b, a, err, errlen);
		break;
	case BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__DEFERRAL_CHALLENGE:
		rc = read_challenge(b, a, err, errlen);
		break;
	case BETTERCOMPUTE__JOIN__V1__JOIN_RESPONSE_BODY__DEFERRAL__NOT_SET:
		rc = read_joined(b, csr_point, a, err, errlen);
		break;
	default:
		bc_errf(err, errlen, "join answer: an unknown kind of deferral");
		rc = BC_ERR_INVALID;
		break;
	}
	if (rc != 0)
		return rc;
	if (b->n_trust_bundle > MAX_TRUST_BUNDLE ||
	    (rc = copy_list(b->trust_bundle, b->n_trust_bundle, &a->trust_bundle,
	                    &a->trust_bundle_lens, &a->n_trust_bundle)) != 0) {
		bc_errf(err, errlen, "join answer: a malformed trust bundle");
		return rc != 0 ? rc : BC_ERR_INVALID;
	}
	a->issued_at_ms = b->issued_at_ms;
	if (b->pins_update.len > 0) {
		if ((a->pins_update = malloc(b->pins_update.len)) == NULL)
			return BC_ERR_NOMEM;
		memcpy(a->pins_update, b->pins_update.data, b->pins_update.len);
		a->pins_update_len = b->pins_update.len;
	}
	return 0;
}

static int open_response(const struct bc_client_pins *pins, const uint8_t *resp, size_t len,
                         const uint8_t csr_sha256[static 32], const uint8_t *csr_point,
                         struct bc_join_answer *out, char *err, size_t errlen)
{
	struct bc_join_answer a;
	signed_response *sr = NULL;
	response_body *b = NULL;
	int rc;

	memset(&a, 0, sizeof(a));
	if ((rc = open_envelope(pins, resp, len, &sr, err, errlen)) != 0)
		goto out;
	b = bettercompute__join__v1__join_response_body__unpack(NULL, sr->body.len, sr->body.data);
	if (b == NULL) {
		bc_errf(err, errlen, "join answer: the signed body is not a JoinResponseBody");
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = read_body(pins, b, csr_sha256, csr_point, &a, err, errlen)) != 0)
		goto out;
	*out = a;
	memset(&a, 0, sizeof(a));
out:
	if (rc == BC_ERR_NOMEM)
		bc_errf(err, errlen, "join answer: out of memory");
	bc_join_answer_free(&a);
	if (b != NULL)
		bettercompute__join__v1__join_response_body__free_unpacked(b, NULL);
	if (sr != NULL)
		bettercompute__join__v1__signed_response__free_unpacked(sr, NULL);
	return rc;
}

static int args_ok(const struct bc_client_pins *pins, const uint8_t *resp, size_t len,
                   struct bc_join_answer *out, char *err, size_t errlen)
{
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	bc_errf(err, errlen, "%s", "");
	if (pins == NULL || pins->join_signing == NULL || pins->join_signing_kid == NULL ||
	    out == NULL || (resp == NULL && len > 0)) {
		bc_errf(err, errlen, "join answer: no pins to check it against");
		return BC_ERR_INVALID;
	}
	return 0;
}

int bc_client_open_join_response(const struct bc_client_pins *pins, const uint8_t *resp, size_t len,
                                 const uint8_t csr_sha256[static 32], struct bc_join_answer *out,
                                 char *err, size_t errlen)
{
	int rc;

	if ((rc = args_ok(pins, resp, len, out, err, errlen)) != 0)
		return rc;
	return open_response(pins, resp, len, csr_sha256, NULL, out, err, errlen);
}

int bc_client_open_answer(const struct bc_client_pins *pins, const uint8_t *resp, size_t len,
                          const uint8_t csr_sha256[static 32], const uint8_t csr_point[static 65],
                          struct bc_join_answer *out, char *err, size_t errlen)
{
	int rc;

	if ((rc = args_ok(pins, resp, len, out, err, errlen)) != 0)
		return rc;
	return open_response(pins, resp, len, csr_sha256, csr_point, out, err, errlen);
}

int bc_client_open_join_response_csr(const struct bc_client_pins *pins, const uint8_t *resp,
                                     size_t len, const uint8_t *csr, size_t csr_len,
                                     struct bc_join_answer *out, char *err, size_t errlen)
{
	uint8_t h[32], point[65];
	int rc;

	if ((rc = args_ok(pins, resp, len, out, err, errlen)) != 0)
		return rc;
	if (csr == NULL || bc_csr_check_point(csr, csr_len, point) != 0) {
		bc_errf(err, errlen, "join answer: the request's CSR does not check");
		return BC_ERR_INVALID;
	}
	if ((rc = bc_sha256(csr, csr_len, h)) != 0)
		return rc;
	return open_response(pins, resp, len, h, point, out, err, errlen);
}
