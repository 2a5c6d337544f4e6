#include "bc/x509pop.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"

int bc_x509pop_evidence(uint8_t *const *chain, const size_t *chain_lens, size_t n_chain,
                        const struct bc_signer *s, const char *node_id,
                        const uint8_t csr_sha256[static 32], int64_t client_time_ms, char **json)
{
	uint8_t sig[BC_SIG_LEN];
	json_t *root = NULL, *arr = NULL;
	char *b64;
	bc_buf b;
	int rc;

	*json = NULL;
	if (n_chain == 0 || s == NULL || node_id == NULL)
		return BC_ERR_INVALID;
	if ((rc = bc_proof_payload(&b, csr_sha256, node_id, client_time_ms)) != 0 ||
	    (rc = bc_es256_sign(s, BC_PURPOSE_X509POP, b.p, b.len, sig)) != 0)
		goto out;
	if ((arr = json_array()) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < n_chain; i++) {
		if ((b64 = bc_b64_encode(chain[i], chain_lens[i])) == NULL ||
		    json_array_append_new(arr, json_string(b64)) != 0) {
			free(b64);
			rc = BC_ERR_NOMEM;
			goto out;
		}
		free(b64);
	}
	if ((b64 = bc_b64_encode(sig, sizeof(sig))) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	root = json_pack("{s:i, s:s, s:O, s:I, s:s}", "v", 1, "nodeId", node_id, "chain", arr,
	                 "clientTime", (json_int_t)client_time_ms, "sig", b64);
	free(b64);
	if (root == NULL || (*json = bc_json_dump(root)) == NULL)
		rc = BC_ERR_NOMEM;
out:
	json_decref(root);
	json_decref(arr);
	bc_buf_free(&b);
	OPENSSL_cleanse(sig, sizeof(sig));
	return rc;
}
