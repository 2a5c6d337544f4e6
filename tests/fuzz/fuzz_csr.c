/* libFuzzer: bc_csr_check and bc_csr_check_point on arbitrary bytes. A CSR that
 * passes must carry a P-256 key the checker hands back, and both must agree: the same
 * answer, the same key as a point (zeroed when refused). Our reader is never laxer
 * than OpenSSL's: what it accepts, d2i_X509_REQ reads whole and X509_REQ_verify
 * verifies. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "bc/crypto.h"
#include "bc/pki.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t zero[65];
	EVP_PKEY *pub = NULL;
	uint8_t pt[65], want[65];
	int rc = bc_csr_check(data, size, &pub);

	if (bc_csr_check_point(data, size, pt) != rc)
		abort();
	if (rc == 0) {
		if (pub == NULL || EVP_PKEY_get_bits(pub) != 256)
			abort();
		if (bc_key_to_point(pub, want) != 0 || memcmp(pt, want, 65) != 0)
			abort();
		const unsigned char *p = data;
		X509_REQ *req = d2i_X509_REQ(NULL, &p, (long)size);
		if (req == NULL || p != data + size || X509_REQ_verify(req, pub) != 1)
			abort();
		X509_REQ_free(req);
	} else if (pub != NULL || memcmp(pt, zero, 65) != 0) {
		abort();
	}
	EVP_PKEY_free(pub);
	return 0;
}
