/* One Renew round trip: a CSR for the next key, a proof by the current key (purpose
 * renew over sha256(csr) || node id 0x00 || client time), POST, then the answer opened
 * like a join's (signature, key id, csr_sha256, the leaf for the CSR's key) and
 * refused unless it is for the node the current leaf names. */
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/client.h"
#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "client/internal.h"

#define MAX_RENEW_CHAIN 8

/* The current key's proof, wherever the key is (a signature held elsewhere is checked
 * under the signer's point by bc_es256_sign). */
static int proof(const struct bc_signer *s, const uint8_t csr_sha256[static 32],
                 const char *node_id, int64_t client_time_ms, uint8_t sig[static BC_SIG_LEN])
{
	bc_buf b;
	int rc;

	if ((rc = bc_proof_payload(&b, csr_sha256, node_id, client_time_ms)) == 0)
		rc = bc_es256_sign(s, BC_PURPOSE_RENEW, b.p, b.len, sig);
	bc_buf_free(&b);
	return rc;
}

/* The request: p's chain, CSR and key attestation, the time and the proof. */
static int pack(const struct bc_renew_params *p, int64_t t, const uint8_t sig[static BC_SIG_LEN],
                int check_only, uint8_t **out, size_t *outlen)
{
	Bettercompute__Join__V1__RenewRequest req = BETTERCOMPUTE__JOIN__V1__RENEW_REQUEST__INIT;
	Bettercompute__Join__V1__TpmKeyAttestation att =
	    BETTERCOMPUTE__JOIN__V1__TPM_KEY_ATTESTATION__INIT;
	const struct bc_key_attestation *ka = p->ka;
	ProtobufCBinaryData certs[MAX_RENEW_CHAIN];
	size_t sz;

	*out = NULL;
	*outlen = 0;
	for (size_t i = 0; i < p->n_chain; i++) {
		certs[i].data = (uint8_t *)p->chain[i];
		certs[i].len = p->chain_lens[i];
	}
	req.chain = certs;
	req.n_chain = p->n_chain;
	req.csr.data = (uint8_t *)p->csr;
	req.csr.len = p->csr_len;
	req.client_time_ms = t;
	req.proof.data = (uint8_t *)sig;
	req.proof.len = BC_SIG_LEN;
	req.check_only = check_only != 0;
	if (ka != NULL) {
		att.ak_public.data = (uint8_t *)ka->ak_public;
		att.ak_public.len = ka->ak_public_len;
		att.key_public.data = (uint8_t *)ka->key_public;
		att.key_public.len = ka->key_public_len;
		att.certify_info.data = (uint8_t *)ka->certify_info;
		att.certify_info.len = ka->certify_info_len;
		att.signature.data = (uint8_t *)ka->signature;
		att.signature.len = ka->signature_len;
		req.key_attestation = &att;
	}
	sz = bettercompute__join__v1__renew_request__get_packed_size(&req);
	if ((*out = malloc(sz > 0 ? sz : 1)) == NULL)
		return BC_ERR_NOMEM;
	*outlen = bettercompute__join__v1__renew_request__pack(&req, *out);
	return *outlen == sz ? 0 : BC_ERR_INTERNAL;
}

/* The node the current leaf names, and that the signer's key (its point) is the leaf's. */
static int current_node(const struct bc_client_pins *pins, const uint8_t *leaf, size_t len,
                        const struct bc_signer *s, char node_id[static 64], char *err,
                        size_t errlen)
{
	int rc;

	rc = bc_client_leaf_node(leaf, len, pins->trust_domain, s->point, node_id);
	if (rc == BC_ERR_INVALID) {
		bc_errf(err, errlen, "renew: the current certificate is not a node certificate");
		return rc;
	}
	if (rc != 0) {
		bc_errf(err, errlen, "renew: the current key is not the certificate's");
		return BC_ERR_INVALID;
	}
	return 0;
}

static int args_ok(const struct bc_client_pins *pins, const struct bc_renew_params *p,
                   struct bc_join_answer *out, char *err, size_t errlen)
{
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	bc_errf(err, errlen, "%s", "");
	if (pins == NULL || p->chain == NULL || p->chain_lens == NULL || p->n_chain == 0 ||
	    p->n_chain > MAX_RENEW_CHAIN || p->signer == NULL || p->csr == NULL || out == NULL ||
	    pins->trust_domain == NULL) {
		bc_errf(err, errlen, "renew: no pins, chain or keys");
		return BC_ERR_INVALID;
	}
	return 0;
}

/* The round trip once the CSR is checked (its key's point in csr_point): the proof by
 * p->signer, the request, the answer. */
static int renew_csr(const struct bc_client_pins *pins, const struct bc_renew_params *p,
                     const uint8_t csr_point[static 65], int check_only, struct bc_join_answer *out,
                     char *err, size_t errlen)
{
	struct bc_client_reply r = {0};
	uint8_t *req = NULL, h[32], sig[BC_SIG_LEN];
	size_t req_len = 0;
	char node_id[64];
	int64_t t;
	int rc;

	if ((rc = current_node(pins, p->chain[0], p->chain_lens[0], p->signer, node_id, err,
	                       errlen)) != 0)
		goto out;
	if ((rc = bc_sha256(p->csr, p->csr_len, h)) != 0)
		goto out;
	t = bc_now_ms();
	if ((rc = proof(p->signer, h, node_id, t, sig)) != 0 ||
	    (rc = pack(p, t, sig, check_only, &req, &req_len)) != 0) {
		bc_errf(err, errlen, "renew: cannot sign or encode the request (%s)",
		        bc_err_str(rc));
		goto out;
	}
	if ((rc = bc_client_post(pins, BC_WIRE_PATH_RENEW, req, req_len, &r, err, errlen)) != 0)
		goto out;
	if (r.status != 200) {
		rc = bc_client_refused("renewal", "security.renew.refused", r.status, r.body, r.len,
		                       err, errlen);
		goto out;
	}
	if ((rc = bc_client_open_answer(pins, r.body, r.len, h, csr_point, out, err, errlen)) != 0)
		goto out;
	if (out->state != BC_JOIN_JOINED || strcmp(out->node_id, node_id) != 0) {
		bc_errf(err, errlen, "renew answer: %s, not a certificate for %s",
		        out->state != BC_JOIN_JOINED ? "a deferral" : "for another node", node_id);
		bc_join_answer_free(out);
		rc = BC_ERR_VERIFY;
	}
out:
	OPENSSL_cleanse(sig, sizeof(sig));
	free(req);
	free(r.body);
	return rc;
}

/* A key attestation's four fields: each present and of a TPM structure's size. */
static int attestation_ok(const struct bc_key_attestation *ka)
{
	if (ka == NULL)
		return 1;
	return ka->ak_public != NULL && ka->ak_public_len > 0 &&
	       ka->ak_public_len <= BC_KA_FIELD_MAX && ka->key_public != NULL &&
	       ka->key_public_len > 0 && ka->key_public_len <= BC_KA_FIELD_MAX &&
	       ka->certify_info != NULL && ka->certify_info_len > 0 &&
	       ka->certify_info_len <= BC_KA_FIELD_MAX && ka->signature != NULL &&
	       ka->signature_len > 0 && ka->signature_len <= BC_KA_FIELD_MAX;
}

int bc_client_renew(const struct bc_client_pins *pins, const struct bc_renew_params *p,
                    struct bc_join_answer *out, char *err, size_t errlen)
{
	uint8_t point[65];

	if (out != NULL)
		memset(out, 0, sizeof(*out));
	if (p == NULL || p->signer == NULL || p->csr == NULL || !attestation_ok(p->ka)) {
		bc_errf(err, errlen, "renew: no signer or CSR, or a key attestation out of shape");
		return BC_ERR_INVALID;
	}
	/* the CSR is the caller's: it must check (self-signed) before it is sent */
	if (bc_csr_check_point(p->csr, p->csr_len, point) != 0) {
		bc_errf(err, errlen, "renew: the next key's CSR does not check");
		return BC_ERR_INVALID;
	}
	if (args_ok(pins, p, out, err, errlen) != 0)
		return BC_ERR_INVALID;
	return renew_csr(pins, p, point, 0, out, err, errlen);
}

int bc_client_renew_check(const struct bc_client_pins *pins, const struct bc_renew_params *p,
                          char *err, size_t errlen)
{
	uint8_t *u = NULL;
	size_t n = 0;
	int rc = bc_client_renew_check_pins(pins, p, &u, &n, err, errlen);

	free(u);
	return rc;
}

int bc_client_renew_check_pins(const struct bc_client_pins *pins, const struct bc_renew_params *p,
                               uint8_t **pins_update, size_t *pins_update_len, char *err,
                               size_t errlen)
{
	struct bc_renew_params q;
	struct bc_join_answer a;
	uint8_t point[65];
	int rc;

	memset(&a, 0, sizeof(a));
	*pins_update = NULL;
	*pins_update_len = 0;
	if (p == NULL || p->signer == NULL || p->csr == NULL ||
	    bc_csr_check_point(p->csr, p->csr_len, point) != 0) {
		bc_errf(err, errlen, "renew check: no signer, or a CSR that does not check");
		return BC_ERR_INVALID;
	}
	q = *p;
	q.ka = NULL;
	if ((rc = args_ok(pins, &q, &a, err, errlen)) == 0)
		rc = renew_csr(pins, &q, point, 1, &a, err, errlen);
	/* the answer names the leaf sent, nothing else */
	if (rc == 0 && (a.n_chain == 0 || a.chain_lens[0] != p->chain_lens[0] ||
	                memcmp(a.chain[0], p->chain[0], p->chain_lens[0]) != 0)) {
		bc_errf(err, errlen, "renew check: the answer is not for this certificate");
		rc = BC_ERR_VERIFY;
	}
	if (rc == 0) {
		*pins_update = a.pins_update;
		*pins_update_len = a.pins_update_len;
		a.pins_update = NULL;
	}
	bc_join_answer_free(&a);
	return rc;
}
