/* One Join round trip: CSR, sealed token, JoinRequest, POST, then the answer opened
 * against the pins, or the server's refusal turned into one line and a status. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "client/internal.h"

int bc_client_seal_token(EVP_PKEY *join_encryption, const char *token,
                         const uint8_t csr_sha256[static 32], uint8_t **out, size_t *outlen)
{
	size_t n;

	*out = NULL;
	*outlen = 0;
	if (join_encryption == NULL || token == NULL)
		return BC_ERR_INVALID;
	n = strnlen(token, BC_WIRE_TOKEN_MAX + 1);
	if (n == 0 || n > BC_WIRE_TOKEN_MAX)
		return BC_ERR_INVALID;
	return bc_hpke_seal(join_encryption, BC_WIRE_TOKEN_INFO, strlen(BC_WIRE_TOKEN_INFO),
	                    csr_sha256, 32, token, n, out, outlen);
}

/* The CSR this round sends and its key's point: the caller's (checked, and for the
 * caller's key when it gives one), or a new one for the caller's key. *made is what
 * the caller frees. */
static int request_csr(const struct bc_join_params *p, const uint8_t **csr, size_t *len,
                       uint8_t point[static 65], uint8_t **made, char *err, size_t errlen)
{
	uint8_t key_point[65];
	int rc;

	*csr = NULL;
	*len = 0;
	*made = NULL;
	if (p->csr != NULL) {
		if (bc_csr_check_point(p->csr, p->csr_len, point) != 0) {
			bc_errf(err, errlen, "join: the CSR does not check");
			return BC_ERR_INVALID;
		}
		if (p->key != NULL && (bc_p256_public_point(p->key, key_point) != 0 ||
		                       memcmp(key_point, point, 65) != 0)) {
			bc_errf(err, errlen, "join: the CSR is not for the given key");
			return BC_ERR_INVALID;
		}
		*csr = p->csr;
		*len = p->csr_len;
		return 0;
	}
	if (p->key == NULL) {
		bc_errf(err, errlen, "join: neither a key nor a CSR");
		return BC_ERR_INVALID;
	}
	if ((rc = bc_csr_make(p->key, BC_WIRE_CSR_CN, made, len)) != 0 ||
	    (rc = bc_p256_public_point(p->key, point)) != 0) {
		bc_errf(err, errlen, "join: cannot make a CSR (%s)", bc_err_str(rc));
		return rc;
	}
	*csr = *made;
	return 0;
}

static char *str_or_empty(const char *s)
{
	return (char *)(s != NULL ? s : "");
}

static int pack_request(const struct bc_join_params *p, const uint8_t *csr, size_t csr_len,
                        uint8_t *sealed, size_t sealed_len, uint8_t **out, size_t *outlen)
{
	Bettercompute__Join__V1__JoinRequest req = BETTERCOMPUTE__JOIN__V1__JOIN_REQUEST__INIT;
	Bettercompute__Join__V1__HardwareClaims hc = BETTERCOMPUTE__JOIN__V1__HARDWARE_CLAIMS__INIT;
	const struct bc_client_claims *c = p->claims;
	size_t n;

	*out = NULL;
	*outlen = 0;
	req.attestor = str_or_empty(p->attestor);
	req.attestation.data = (uint8_t *)p->attestation;
	req.attestation.len = p->attestation != NULL ? p->attestation_len : 0;
	req.sealed_token.data = sealed;
	req.sealed_token.len = sealed_len;
	req.csr.data = (uint8_t *)csr;
	req.csr.len = csr_len;
	req.role = str_or_empty(p->role != NULL && p->role[0] != '\0' ? p->role : BC_ROLE_NODE);
	req.agent_version = str_or_empty(p->agent_version);
	if (c != NULL) {
		for (size_t i = 0; i < c->n_macs; i++) {
			if (c->macs[i] == NULL)
				return BC_ERR_INVALID;
		}
		hc.macs = c->macs;
		hc.n_macs = c->n_macs;
		hc.product_uuid = str_or_empty(c->product_uuid);
		hc.serial = str_or_empty(c->serial);
		hc.hostname = str_or_empty(c->hostname);
		hc.arch = str_or_empty(c->arch);
		req.claims = &hc;
	}
	n = bettercompute__join__v1__join_request__get_packed_size(&req);
	if ((*out = malloc(n > 0 ? n : 1)) == NULL)
		return BC_ERR_NOMEM;
	*outlen = bettercompute__join__v1__join_request__pack(&req, *out);
	return *outlen == n ? 0 : BC_ERR_INTERNAL;
}

int bc_client_join(const struct bc_client_pins *pins, const struct bc_join_params *p,
                   struct bc_join_answer *out, char *err, size_t errlen)
{
	struct bc_client_reply r = {0};
	uint8_t *made = NULL, *sealed = NULL, *req = NULL;
	size_t csr_len = 0, sealed_len = 0, req_len = 0;
	const uint8_t *csr = NULL;
	uint8_t h[32], point[65];
	int rc;

	if (out != NULL)
		memset(out, 0, sizeof(*out));
	bc_errf(err, errlen, "%s", "");
	if (pins == NULL || p == NULL || out == NULL || pins->join_encryption == NULL) {
		bc_errf(err, errlen, "join: no pins or no parameters");
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = request_csr(p, &csr, &csr_len, point, &made, err, errlen)) != 0)
		goto out;
	if ((rc = bc_sha256(csr, csr_len, h)) != 0)
		goto out;
	if (p->token != NULL && (rc = bc_client_seal_token(pins->join_encryption, p->token, h,
	                                                   &sealed, &sealed_len)) != 0) {
		bc_errf(err, errlen, "join: cannot seal the token (%s)", bc_err_str(rc));
		goto out;
	}
	if ((rc = pack_request(p, csr, csr_len, sealed, sealed_len, &req, &req_len)) != 0) {
		bc_errf(err, errlen, "join: cannot encode the request (%s)", bc_err_str(rc));
		goto out;
	}
	if ((rc = bc_client_post(pins, BC_WIRE_PATH_JOIN, req, req_len, &r, err, errlen)) != 0)
		goto out;
	if (r.status != 200) {
		rc = bc_client_refused("join", "security.join.refused", r.status, r.body, r.len,
		                       err, errlen);
		goto out;
	}
	rc = bc_client_open_answer(pins, r.body, r.len, h, point, out, err, errlen);
out:
	free(made);
	free(sealed);
	free(req);
	free(r.body);
	return rc;
}
