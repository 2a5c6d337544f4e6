/* libFuzzer: bc_pki_node_cert_read on arbitrary bytes, differentially against the X509
 * path it stands in for (bc_x509_from_der, bc_pki_node_identity_x509,
 * bc_pki_verify_node_x509). Whatever the reader accepts, the X509 path must accept with
 * the same identity and key; a refusal leaves the identity cleared and the point zeroed.
 *
 * The node CA is fixed (its certificate below; its key was thrown away) so that the seed
 * corpus, tests/fuzz/corpus/fuzz_node_cert/, can hold real node certificates it issued:
 * mutations then start from bytes whose signature verifies. */
#include <openssl/pem.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/pki.h"

#define TRUST_DOMAIN "bc.fuzz"

/* bc_pki_generate("bc.fuzz")'s node CA */
static const char node_ca_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBmDCCAT6gAwIBAgIQWE84vSbp1qkl4dNwfPBTezAKBggqhkjOPQQDAjAaMRgw\n"
    "FgYDVQQDDA9iYy5mdXp6IG5vZGUgQ0EwHhcNMjYxMjAxMDEwNzI4WhcNMzYxMjAy\n"
    "MDEwNzI4WjAaMRgwFgYDVQQDDA9iYy5mdXp6IG5vZGUgQ0EwWTATBgcqhkjOPQIB\n"
    "BggqhkjOPQMBBwNCAASbF1ILn0xNLLSg50XPjURpT8/MuiXxATzFeeI/VrQ9zCY/\n"
    "/Ivln3zJfJfNZ+kL3/HgMypUB/67xLHUIKvM7Sn8o2YwZDASBgNVHRMBAf8ECDAG\n"
    "AQH/AgEAMA4GA1UdDwEB/wQEAwIBBjAdBgNVHQ4EFgQUjnyfLonwtwvy1xX4nS9I\n"
    "ieqv/lEwHwYDVR0jBBgwFoAUjnyfLonwtwvy1xX4nS9Iieqv/lEwCgYIKoZIzj0E\n"
    "AwIDSAAwRQIgN25J1lNZU5dTMq0aGArI1qojXWinzvKGsTx5pAW6ijsCIQDZsIuv\n"
    "HAMNH79797LRiaysVkSgSOJzskmjBXBommrGwg==\n"
    "-----END CERTIFICATE-----\n";

static bc_pki *pki;

static void init(void)
{
	BIO *bio = BIO_new_mem_buf(node_ca_pem, -1);

	if (bio == NULL || (pki = calloc(1, sizeof(*pki))) == NULL ||
	    (pki->trust_domain = strdup(TRUST_DOMAIN)) == NULL ||
	    (pki->node_ca = PEM_read_bio_X509(bio, NULL, NULL, NULL)) == NULL)
		abort();
	BIO_free(bio);
}

static int all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		if (b[i] != 0)
			return 0;
	}
	return 1;
}

static int same_identity(const struct bc_node_identity *a, const struct bc_node_identity *b)
{
	if (strcmp(a->node_id, b->node_id) != 0 || strcmp(a->role, b->role) != 0 ||
	    a->n_statements != b->n_statements || a->not_before_ms != b->not_before_ms ||
	    a->not_after_ms != b->not_after_ms || strcmp(a->serial_hex, b->serial_hex) != 0)
		return 0;
	for (size_t i = 0; i < BC_MAX_URIS; i++) {
		if ((a->statements[i] == NULL) != (b->statements[i] == NULL))
			return 0;
		if (a->statements[i] != NULL && strcmp(a->statements[i], b->statements[i]) != 0)
			return 0;
	}
	return 1;
}

/* What the reader accepted, through the X509 path: must be accepted the same. */
static void x509_agrees(const uint8_t *data, size_t size, const struct bc_node_identity *id,
                        const uint8_t point[65])
{
	struct bc_node_identity xid;
	uint8_t xpoint[65];
	EVP_PKEY *pub;
	X509 *x = NULL;

	if (bc_x509_from_der(data, size, &x) != 0 ||
	    bc_pki_node_identity_x509(x, pki->trust_domain, &xid) != 0)
		abort();
	if (bc_pki_verify_node_x509(pki, x) != 0 || !same_identity(id, &xid))
		abort();
	if ((pub = X509_get0_pubkey(x)) == NULL || bc_key_to_point(pub, xpoint) != 0 ||
	    memcmp(point, xpoint, 65) != 0)
		abort();
	bc_node_identity_clear(&xid);
	X509_free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_node_identity id;
	uint8_t point[65];
	int rc;

	if (pki == NULL)
		init();
	memset(&id, 0x5a, sizeof(id));
	memset(point, 0x5a, sizeof(point));
	rc = bc_pki_node_cert_read(pki, data, size, &id, point);
	if (rc == 0) {
		x509_agrees(data, size, &id, point);
		bc_node_identity_clear(&id);
		return 0;
	}
	if (!all_zero(&id, sizeof(id)) || !all_zero(point, sizeof(point)))
		abort();
	if (rc != BC_ERR_INVALID && rc != BC_ERR_UNSUPPORTED && rc != BC_ERR_VERIFY &&
	    rc != BC_ERR_LIMIT && rc != BC_ERR_NOMEM)
		abort();
	if ((rc == BC_ERR_LIMIT) != (size > 64 * 1024)) /* PKI_MAX_DER */
		abort();
	return 0;
}
