/* Building certificates, and DER/PEM conversions of them. */
#include "pki/pki_internal.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/pki.h"

/* A positive 16-byte serial. A first byte of 0 is drawn again: the serial
 * then always encodes as 16 bytes and reads back as the same 32 hex digits. */
int pki_serial_draw(uint8_t s[static PKI_SERIAL_LEN])
{
	int rc;

	for (int tries = 0; tries < 64; tries++) {
		if ((rc = bc_random(s, PKI_SERIAL_LEN)) != 0)
			return rc;
		s[0] &= 0x7f;
		if (s[0] != 0)
			return 0;
	}
	return BC_ERR_CRYPTO;
}

static int random_serial(uint8_t s[static PKI_SERIAL_LEN], ASN1_INTEGER **out)
{
	ASN1_INTEGER *ai = NULL;
	int rc;

	*out = NULL;
	if ((rc = pki_serial_draw(s)) != 0)
		return rc;
	if ((ai = ASN1_INTEGER_new()) == NULL)
		return BC_ERR_NOMEM;
	if (ASN1_STRING_set(ai, s, PKI_SERIAL_LEN) != 1) {
		ASN1_INTEGER_free(ai);
		return BC_ERR_NOMEM;
	}
	*out = ai;
	return 0;
}

static int set_cn(X509 *x, const char *cn)
{
	X509_NAME *name;
	int rc = BC_ERR_CRYPTO;

	if ((name = X509_NAME_new()) == NULL)
		return BC_ERR_NOMEM;
	/* UTF8String without OpenSSL's 64-character table check: a trust domain
	 * may be up to 255 characters and the CA's CN carries it. */
	if (X509_NAME_add_entry_by_NID(name, NID_commonName, V_ASN1_UTF8STRING,
	                               (const unsigned char *)cn, (int)strlen(cn), -1, 0) != 1)
		goto out;
	if (X509_set_subject_name(x, name) != 1)
		goto out;
	rc = 0;
out:
	X509_NAME_free(name);
	return rc;
}

static int set_times(X509 *x, int64_t nb_ms, int64_t na_ms)
{
	if (nb_ms < 0 || na_ms < nb_ms || na_ms > PKI_MAX_TIME_MS)
		return BC_ERR_INVALID;
	if (ASN1_TIME_set(X509_getm_notBefore(x), (time_t)(nb_ms / 1000)) == NULL)
		return BC_ERR_CRYPTO;
	if (ASN1_TIME_set(X509_getm_notAfter(x), (time_t)(na_ms / 1000)) == NULL)
		return BC_ERR_CRYPTO;
	return 0;
}

/* Version, serial, names, validity and key. */
static int cert_base(const struct pki_cert_spec *spec, X509 *x,
                     uint8_t serial[static PKI_SERIAL_LEN])
{
	ASN1_INTEGER *ai = NULL;
	const X509_NAME *issuer;
	int rc;

	if ((rc = random_serial(serial, &ai)) != 0)
		goto out;
	rc = BC_ERR_CRYPTO;
	if (X509_set_version(x, X509_VERSION_3) != 1 || X509_set_serialNumber(x, ai) != 1)
		goto out;
	if ((rc = set_cn(x, spec->cn)) != 0)
		goto out;
	issuer = spec->issuer ? X509_get_subject_name(spec->issuer) : X509_get_subject_name(x);
	rc = BC_ERR_CRYPTO;
	if (X509_set_issuer_name(x, issuer) != 1)
		goto out;
	if ((rc = set_times(x, spec->not_before_ms, spec->not_after_ms)) != 0)
		goto out;
	rc = X509_set_pubkey(x, spec->pub) == 1 ? 0 : BC_ERR_CRYPTO;
out:
	ASN1_INTEGER_free(ai);
	return rc;
}

static int add_conf_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext;
	int rc;

	if (value == NULL)
		return 0;
	if ((ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value)) == NULL)
		return BC_ERR_CRYPTO;
	rc = X509_add_ext(x, ext, -1) == 1 ? 0 : BC_ERR_CRYPTO;
	X509_EXTENSION_free(ext);
	return rc;
}

static int cert_exts(const struct pki_cert_spec *spec, X509 *x)
{
	X509V3_CTX ctx;
	int rc;

	X509V3_set_ctx(&ctx, spec->issuer ? spec->issuer : x, x, NULL, NULL, 0);
	/* a self-signed certificate has no issuer SKI yet: AKI comes from the key */
	if (X509V3_set_issuer_pkey(&ctx, spec->issuer_key) != 1)
		return BC_ERR_CRYPTO;
	if ((rc = add_conf_ext(x, &ctx, NID_basic_constraints, spec->basic_constraints)) != 0 ||
	    (rc = add_conf_ext(x, &ctx, NID_key_usage, spec->key_usage)) != 0 ||
	    (rc = add_conf_ext(x, &ctx, NID_ext_key_usage, spec->ext_key_usage)) != 0 ||
	    (rc = add_conf_ext(x, &ctx, NID_subject_key_identifier, "hash")) != 0 ||
	    (rc = add_conf_ext(x, &ctx, NID_authority_key_identifier, "keyid:always")) != 0)
		return rc;
	/* built from GENERAL_NAMES, never from a config string: a statement could
	 * otherwise smuggle in ",DNS:..." */
	if (spec->san != NULL &&
	    X509_add1_ext_i2d(x, NID_subject_alt_name, spec->san, 0, X509V3_ADD_DEFAULT) != 1)
		return BC_ERR_CRYPTO;
	return 0;
}

int pki_cert_build(const struct pki_cert_spec *spec, X509 **out,
                   uint8_t serial[static PKI_SERIAL_LEN])
{
	X509 *x = NULL;
	int rc;

	*out = NULL;
	if (spec->pub == NULL || spec->issuer_key == NULL || spec->cn == NULL)
		return BC_ERR_INVALID;
	if ((x = X509_new()) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = cert_base(spec, x, serial)) != 0)
		goto out;
	if ((rc = cert_exts(spec, x)) != 0)
		goto out;
	if (X509_sign(x, spec->issuer_key, bc_crypto_sha256()) <= 0) {
		rc = BC_ERR_CRYPTO;
		goto out;
	}
	*out = x;
	x = NULL;
out:
	X509_free(x);
	if (rc != 0)
		ERR_clear_error();
	return rc;
}

int pki_key_is_p256(EVP_PKEY *key)
{
	char name[32];
	size_t n = 0;

	if (key == NULL || EVP_PKEY_get_base_id(key) != EVP_PKEY_EC)
		return 0;
	if (EVP_PKEY_get_group_name(key, name, sizeof(name), &n) != 1) {
		ERR_clear_error();
		return 0;
	}
	return strcmp(name, SN_X9_62_prime256v1) == 0;
}

int pki_gens_add(GENERAL_NAMES *gens, int type, const void *p, size_t len)
{
	GENERAL_NAME *gen = NULL;
	ASN1_STRING *s = NULL;
	int rc = BC_ERR_NOMEM;

	if (len > 4096)
		return BC_ERR_LIMIT;
	switch (type) {
	case GEN_URI:
	case GEN_DNS: s = ASN1_IA5STRING_new(); break;
	case GEN_IPADD:
		if (len != 4 && len != 16)
			return BC_ERR_INVALID;
		s = ASN1_OCTET_STRING_new();
		break;
	default: return BC_ERR_INVALID;
	}
	if (s == NULL || ASN1_STRING_set(s, p, (int)len) != 1)
		goto out;
	if ((gen = GENERAL_NAME_new()) == NULL)
		goto out;
	GENERAL_NAME_set0_value(gen, type, s);
	s = NULL;
	if (sk_GENERAL_NAME_push(gens, gen) <= 0)
		goto out;
	gen = NULL;
	rc = 0;
out:
	ASN1_STRING_free(s);
	GENERAL_NAME_free(gen);
	return rc;
}

int pki_x509_from_pem(const char *pem, X509 **out)
{
	BIO *bio = NULL;
	X509 *x = NULL;
	char *rest = NULL;
	long n;
	int rc = BC_ERR_INVALID;

	*out = NULL;
	if (pem == NULL || strlen(pem) > 4 * PKI_MAX_DER)
		return BC_ERR_INVALID;
	if ((bio = BIO_new_mem_buf(pem, -1)) == NULL)
		return BC_ERR_NOMEM;
	if ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) == NULL)
		goto out;
	n = BIO_get_mem_data(bio, &rest);
	for (long i = 0; i < n; i++) {
		if (strchr(" \t\r\n", rest[i]) == NULL)
			goto out;
	}
	*out = x;
	x = NULL;
	rc = 0;
out:
	X509_free(x);
	BIO_free(bio);
	ERR_clear_error();
	return rc;
}

int bc_x509_to_der(X509 *x, uint8_t **der, size_t *len)
{
	unsigned char *p;
	int n;

	*der = NULL;
	*len = 0;
	if (x == NULL || (n = i2d_X509(x, NULL)) <= 0)
		return BC_ERR_INVALID;
	if ((*der = malloc((size_t)n)) == NULL)
		return BC_ERR_NOMEM;
	p = *der;
	if (i2d_X509(x, &p) != n) {
		free(*der);
		*der = NULL;
		return BC_ERR_CRYPTO;
	}
	*len = (size_t)n;
	return 0;
}

int bc_x509_to_pem(X509 *x, char **pem)
{
	BIO *bio = NULL;
	char *data;
	long n;
	int rc = BC_ERR_CRYPTO;

	*pem = NULL;
	if (x == NULL)
		return BC_ERR_INVALID;
	if ((bio = BIO_new(BIO_s_mem())) == NULL)
		return BC_ERR_NOMEM;
	if (PEM_write_bio_X509(bio, x) != 1)
		goto out;
	if ((n = BIO_get_mem_data(bio, &data)) <= 0)
		goto out;
	rc = BC_ERR_NOMEM;
	if ((*pem = malloc((size_t)n + 1)) == NULL)
		goto out;
	memcpy(*pem, data, (size_t)n);
	(*pem)[n] = '\0';
	rc = 0;
out:
	BIO_free(bio);
	return rc;
}

int bc_x509_from_der(const uint8_t *der, size_t len, X509 **out)
{
	const unsigned char *p = der;
	X509 *x;

	*out = NULL;
	if (der == NULL || len == 0)
		return BC_ERR_INVALID;
	if (len > PKI_MAX_DER)
		return BC_ERR_LIMIT;
	if ((x = d2i_X509(NULL, &p, (long)len)) == NULL) {
		ERR_clear_error();
		return BC_ERR_INVALID;
	}
	if (p != der + len) {
		X509_free(x);
		return BC_ERR_TRAILING;
	}
	*out = x;
	return 0;
}

int bc_x509_from_pem(const char *pem, X509 **out)
{
	return pki_x509_from_pem(pem, out);
}
