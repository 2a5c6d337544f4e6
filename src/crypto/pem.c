/* PEM for P-256 keys: PKCS#8 "PRIVATE KEY" and SPKI "PUBLIC KEY".
 *
 * A PEM input is exactly one block of the expected name, with nothing but white
 * space around it and no headers (so no encrypted key, and no pass phrase prompt). */
#include <limits.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "crypto/internal.h"

#define BC_PEM_MAX (64 * 1024)

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void pem_free(char *name, char *header, uint8_t *data, long len, int secure)
{
	if (secure) {
		OPENSSL_secure_free(name);
		OPENSSL_secure_free(header);
		OPENSSL_secure_clear_free(data, data != NULL ? (size_t)len : 0);
	} else {
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
	}
}

int bc_pem_prefix(const char *pem, size_t len, size_t max, size_t *start)
{
	size_t i = 0;

	*start = 0;
	if (pem == NULL || len == 0 || memchr(pem, '\0', len) != NULL)
		return BC_ERR_INVALID;
	if (len > max)
		return BC_ERR_LIMIT;
	while (i < len && is_space(pem[i]))
		i++;
	if (len - i < 11 || memcmp(pem + i, "-----BEGIN ", 11) != 0)
		return BC_ERR_INVALID;
	*start = i;
	return 0;
}

int bc_pem_blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_space(p[i]))
			return 0;
	return 1;
}

/* The DER of the one block named want. secure: the bytes are a secret, kept in
 * OpenSSL's secure heap and wiped; free *der with pem_free(NULL, NULL, *der, *len, secure). */
static int pem_read(const char *pem, size_t len, const char *want, int secure, uint8_t **der,
                    long *derlen)
{
	int flags = PEM_FLAG_ONLY_B64 | (secure ? PEM_FLAG_SECURE : 0);
	char *name = NULL, *header = NULL, *rest = NULL;
	unsigned char *data = NULL;
	long n = 0, restlen;
	BIO *bio = NULL;
	size_t start;
	int rc;

	*der = NULL;
	*derlen = 0;
	if ((rc = bc_pem_prefix(pem, len, BC_PEM_MAX, &start)) != 0)
		return rc;
	if ((bio = BIO_new_mem_buf(pem + start, (int)(len - start))) == NULL)
		return bc_ossl_err();
	if (!PEM_read_bio_ex(bio, &name, &header, &data, &n, flags)) {
		rc = bc_crypto_parse_err();
		goto out;
	}
	if (strcmp(name, want) != 0 || header[0] != '\0' || n <= 0) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	restlen = BIO_get_mem_data(bio, &rest);
	if (restlen > 0 && !bc_pem_blank(rest, (size_t)restlen)) {
		rc = BC_ERR_TRAILING;
		goto out;
	}
	*der = data;
	*derlen = n;
	data = NULL;
	rc = 0;
out:
	pem_free(name, header, data, n, secure);
	BIO_free(bio);
	return rc;
}

/* The BIO's bytes as a malloc'd C string; the BIO is a secmem one, wiped when freed. */
static int bio_to_string(BIO *bio, char **out)
{
	char *data = NULL;
	long n;

	*out = NULL;
	n = BIO_get_mem_data(bio, &data);
	if (n <= 0 || data == NULL)
		return BC_ERR_INTERNAL;
	if ((*out = malloc((size_t)n + 1)) == NULL)
		return BC_ERR_NOMEM;
	memcpy(*out, data, (size_t)n);
	(*out)[n] = '\0';
	return 0;
}

int bc_key_to_pem(EVP_PKEY *key, char **pem)
{
	BIO *bio = NULL;
	int rc;

	*pem = NULL;
	if (!bc_crypto_is_p256(key))
		return BC_ERR_INVALID;
	if ((bio = BIO_new(BIO_s_secmem())) == NULL)
		return bc_ossl_err();
	/* PEM_write_bio_PrivateKey writes PKCS#8 ("PRIVATE KEY"), unencrypted. */
	if (!PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = bio_to_string(bio, pem);
out:
	BIO_free(bio);
	return rc;
}

int bc_pubkey_to_pem(EVP_PKEY *key, char **pem)
{
	BIO *bio = NULL;
	int rc;

	*pem = NULL;
	if (!bc_crypto_is_p256(key))
		return BC_ERR_INVALID;
	if ((bio = BIO_new(BIO_s_mem())) == NULL)
		return bc_ossl_err();
	if (!PEM_write_bio_PUBKEY(bio, key)) {
		rc = bc_ossl_err();
		goto out;
	}
	rc = bio_to_string(bio, pem);
out:
	BIO_free(bio);
	return rc;
}

/* The pair must match: an edited file could carry a public point that is not
 * the scalar's, and then the key id would name another key. */
static int check_keypair(EVP_PKEY *key)
{
	EVP_PKEY_CTX *ctx;
	int ok;

	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL)) == NULL)
		return bc_ossl_err();
	ok = EVP_PKEY_check(ctx);
	EVP_PKEY_CTX_free(ctx);
	if (ok != 1) {
		ERR_clear_error();
		return BC_ERR_INVALID;
	}
	return 0;
}

/* The key rebuilt from its scalar: a PKCS#8 written elsewhere may carry explicit
 * curve parameters or ask for compressed points, and its SPKI, and so its key id,
 * would then not be the one bc_key_from_spki accepts. */
static int canonical_key(EVP_PKEY *key, EVP_PKEY **out)
{
	uint8_t raw[32];
	int rc;

	*out = NULL;
	if ((rc = bc_key_to_raw(key, raw)) == 0)
		rc = bc_key_from_raw(raw, out);
	OPENSSL_cleanse(raw, sizeof(raw));
	return rc;
}

int bc_key_from_pem(const char *pem, size_t len, EVP_PKEY **out)
{
	PKCS8_PRIV_KEY_INFO *p8 = NULL;
	EVP_PKEY *key = NULL;
	uint8_t *der = NULL;
	const uint8_t *p;
	long derlen = 0;
	int rc;

	*out = NULL;
	if ((rc = pem_read(pem, len, PEM_STRING_PKCS8INF, 1, &der, &derlen)) != 0)
		goto out;
	p = der;
	if ((p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, derlen)) == NULL) {
		rc = bc_crypto_parse_err();
		goto out;
	}
	if (p != der + derlen) {
		rc = BC_ERR_TRAILING;
		goto out;
	}
	if ((key = EVP_PKCS82PKEY(p8)) == NULL) {
		rc = bc_crypto_parse_err();
		goto out;
	}
	if (!bc_crypto_is_p256(key)) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = check_keypair(key)) != 0)
		goto out;
	rc = canonical_key(key, out);
out:
	EVP_PKEY_free(key);
	PKCS8_PRIV_KEY_INFO_free(p8);
	pem_free(NULL, NULL, der, derlen, 1);
	return rc;
}

int bc_pubkey_from_pem(const char *pem, size_t len, EVP_PKEY **out)
{
	uint8_t *der = NULL;
	long derlen = 0;
	int rc;

	*out = NULL;
	if ((rc = pem_read(pem, len, PEM_STRING_PUBLIC, 0, &der, &derlen)) != 0)
		goto out;
	rc = bc_key_from_spki(der, (size_t)derlen, out);
out:
	pem_free(NULL, NULL, der, derlen, 0);
	return rc;
}
