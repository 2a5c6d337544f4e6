/* The key and signature decoders on arbitrary bytes: bc_key_from_spki,
 * bc_key_from_pem, bc_pubkey_from_pem, bc_ecdsa_der_to_p1363. None may crash, a
 * refusal hands out nothing, and what is accepted is canonical: it encodes back
 * to the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"

static void check_spki(const uint8_t *data, size_t size)
{
	EVP_PKEY *k = NULL;
	uint8_t *der = NULL;
	size_t len = 0;

	if (bc_key_from_spki(data, size, &k) != 0) {
		if (k != NULL)
			abort();
		return;
	}
	if (bc_key_spki(k, &der, &len) != 0 || len != size || memcmp(der, data, size) != 0)
		abort();
	free(der);
	EVP_PKEY_free(k);
}

/* An accepted key is P-256 and usable: it signs (private) and verifies. */
static void check_pem(const uint8_t *data, size_t size, int private)
{
	EVP_PKEY *k = NULL;
	struct bc_signer s;
	uint8_t sig[BC_SIG_LEN], point[65];
	int rc;

	if (private)
		rc = bc_key_from_pem((const char *)data, size, &k);
	else
		rc = bc_pubkey_from_pem((const char *)data, size, &k);
	if (rc != 0) {
		if (k != NULL)
			abort();
		return;
	}
	if (bc_key_to_point(k, point) != 0)
		abort();
	if (private &&
	    (bc_signer_init(&s, k, NULL, NULL) != 0 ||
	     bc_es256_sign(&s, BC_PURPOSE_RENEW, data, size, sig) != 0 ||
	     bc_es256_verify(point, BC_PURPOSE_RENEW, data, size, sig, sizeof(sig)) != 0))
		abort();
	EVP_PKEY_free(k);
}

static void check_sig(const uint8_t *data, size_t size)
{
	uint8_t sig[64], *der = NULL;
	size_t len = 0;

	if (bc_ecdsa_der_to_p1363(data, size, sig) != 0)
		return;
	if (bc_ecdsa_p1363_to_der(sig, &der, &len) != 0 || len != size ||
	    memcmp(der, data, size) != 0)
		abort();
	free(der);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_spki(data, size);
	check_pem(data, size, 1);
	check_pem(data, size, 0);
	check_sig(data, size);
	return 0;
}
