/* libFuzzer: bc_pki_node_cert_peek on arbitrary bytes, differentially against the X509
 * path it stands in for (bc_x509_from_der, bc_pki_node_identity_x509). Whatever the
 * peek accepts, the X509 path must accept with the same identity and key (and, for a
 * certificate whose signature verifies under the fixed CA, bc_pki_verify_node_x509);
 * a refusal leaves the identity cleared and the point zeroed; bc_pki_node_identity,
 * which peeks first, answers as the X509 path alone. The peek checks no signature, so
 * mutations reach its accepting path often.
 *
 * The node CA is fixed (its certificate below; its key was thrown away) so that the seed
 * corpus, tests/fuzz/corpus/fuzz_node_cert/, can hold real node certificates it issued:
 * mutations then start from well-formed bytes. */
#include <openssl/pem.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

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

/* The X509 path without the CA: bc_pki_node_identity's answer before it peeked. */
static int x509_identity(const uint8_t *data, size_t size, struct bc_node_identity *id,
                         uint8_t point[65])
{
	EVP_PKEY *pub;
	X509 *x = NULL;
	int rc;

	memset(point, 0, 65);
	memset(id, 0, sizeof(*id));
	if ((rc = bc_x509_from_der(data, size, &x)) == 0 &&
	    (rc = bc_pki_node_identity_x509(x, pki->trust_domain, id)) == 0 &&
	    ((pub = X509_get0_pubkey(x)) == NULL || bc_key_to_point(pub, point) != 0))
		memset(point, 0, 65);
	X509_free(x);
	return rc;
}

/* What the peek accepted, through the X509 path: must be accepted the same. */
static void x509_agrees(const uint8_t *data, size_t size, const struct bc_node_identity *id,
                        const uint8_t point[65])
{
	struct bc_node_identity xid;
	uint8_t xpoint[65];

	if (x509_identity(data, size, &xid, xpoint) != 0 || !same_identity(id, &xid) ||
	    memcmp(point, xpoint, 65) != 0)
		abort();
	bc_node_identity_clear(&xid);
}

static int refusal_ok(int rc, size_t size, const struct bc_node_identity *id,
                      const uint8_t point[65])
{
	if (!all_zero(id, sizeof(*id)) || !all_zero(point, 65))
		return 0;
	if (rc != BC_ERR_INVALID && rc != BC_ERR_UNSUPPORTED && rc != BC_ERR_VERIFY &&
	    rc != BC_ERR_LIMIT && rc != BC_ERR_NOMEM)
		return 0;
	return (rc == BC_ERR_LIMIT) == (size > 64 * 1024); /* PKI_MAX_DER */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_node_identity pid, xid;
	uint8_t ppoint[65], xpoint[65];
	int prc, xrc;

	if (pki == NULL)
		init();
	memset(&pid, 0x5a, sizeof(pid));
	memset(ppoint, 0x5a, sizeof(ppoint));
	prc = bc_pki_node_cert_peek(data, size, pki->trust_domain, &pid, ppoint);
	if (prc == 0)
		x509_agrees(data, size, &pid, ppoint);
	else if (prc == BC_ERR_VERIFY || !refusal_ok(prc, size, &pid, ppoint))
		abort();
	/* the fast path never changes bc_pki_node_identity's answer */
	xrc = x509_identity(data, size, &xid, xpoint);
	bc_node_identity_clear(&xid);
	if (bc_pki_node_identity(data, size, pki->trust_domain, &xid, NULL) != xrc)
		abort();
	bc_node_identity_clear(&xid);
	bc_node_identity_clear(&pid);
	return 0;
}
