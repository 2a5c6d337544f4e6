/* libFuzzer: bc_pki_open with a fixed secret. The first byte picks what the
 * rest is: even, the envelope text itself (JSON, base64, the tag check); odd,
 * a plaintext that the harness seals under the secret first, so the fuzzer
 * also reaches the checks behind the tag (the bundle JSON, PEM keys and
 * certificates, key ids). */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"

#define INFO "bettercompute pki bundle v1"

static const uint8_t secret[32] = {0x42};

static char *seal_plain(const uint8_t *pt, size_t ptlen)
{
	uint8_t key[32], nonce[12] = {0};
	uint8_t *ct = malloc(ptlen + 16);
	char *n64 = NULL, *c64 = NULL, *text = NULL;
	json_t *env = NULL;

	if (ct == NULL)
		return NULL;
	if (bc_hkdf_sha256("", 0, secret, 32, INFO, strlen(INFO), key, 32) != 0 ||
	    bc_aes256gcm_seal(key, nonce, INFO, strlen(INFO), pt, ptlen, ct) != 0)
		goto out;
	if ((n64 = bc_b64_encode(nonce, 12)) == NULL ||
	    (c64 = bc_b64_encode(ct, ptlen + 16)) == NULL)
		goto out;
	env = json_pack("{s:i,s:s,s:s,s:s}", "v", 1, "alg", "A256GCM", "nonce", n64, "ct", c64);
	if (env != NULL)
		text = json_dumps(env, JSON_COMPACT);
out:
	json_decref(env);
	free(n64);
	free(c64);
	free(ct);
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bc_pki *pki = NULL;
	char *text;
	int rc;

	if (size < 1)
		return 0;
	if ((data[0] & 1) == 0) {
		rc = bc_pki_open((const char *)data + 1, size - 1, secret, &pki);
	} else {
		if ((text = seal_plain(data + 1, size - 1)) == NULL)
			return 0;
		rc = bc_pki_open(text, strlen(text), secret, &pki);
		free(text);
	}
	if ((rc == 0) != (pki != NULL))
		abort();
	bc_pki_free(pki);
	return 0;
}
