/* A node certificate written as DER directly: the fixed form every node certificate
 * has (X.509 v3, ecdsa-with-SHA256, a P-256 key, the same six extensions in the same
 * order) filled in with its serial, times, node id and URIs, then signed. Building
 * it through OpenSSL's X509 API cost about as much as signing it: an X509_NAME,
 * extensions parsed from configuration strings, an ASN.1 encoding pass over objects
 * made only to be encoded. The result is byte for byte what pki_cert_build() makes for
 * the same fields (pki_cert_test checks it).
 *
 * Every length is known to be small (the node id, role and trust domain are
 * validated, each statement is at most PKI_STATEMENT_MAX bytes, at most
 * BC_MAX_URIS URIs): the writer still checks each one and fails rather than wrap. */
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "crypto/internal.h" /* the fixed P-256 SPKI prefix */
#include "pki/node_form.h"
#include "pki/pki_internal.h"

struct der {
	uint8_t *p;
	size_t len, cap;
	int err; /* an allocation failed or a length was out of range */
};

static void der_put(struct der *d, const void *p, size_t n)
{
	if (d->err || n == 0)
		return;
	if (n > PKI_MAX_DER || d->len > PKI_MAX_DER - n) {
		d->err = BC_ERR_LIMIT;
		return;
	}
	if (d->len + n > d->cap) {
		size_t cap = d->cap ? d->cap : 256;
		uint8_t *np;
		while (cap < d->len + n)
			cap *= 2;
		if ((np = realloc(d->p, cap)) == NULL) {
			d->err = BC_ERR_NOMEM;
			return;
		}
		d->p = np;
		d->cap = cap;
	}
	memcpy(d->p + d->len, p, n);
	d->len += n;
}

/* A tag and a definite length (short form, or long form in one to three bytes). */
static void der_hdr(struct der *d, uint8_t tag, size_t len)
{
	uint8_t h[5];
	size_t n = 0;

	h[n++] = tag;
	if (len < 0x80) {
		h[n++] = (uint8_t)len;
	} else if (len <= 0xff) {
		h[n++] = 0x81;
		h[n++] = (uint8_t)len;
	} else if (len <= 0xffff) {
		h[n++] = 0x82;
		h[n++] = (uint8_t)(len >> 8);
		h[n++] = (uint8_t)len;
	} else {
		d->err = BC_ERR_LIMIT;
		return;
	}
	der_put(d, h, n);
}

static void der_tlv(struct der *d, uint8_t tag, const void *p, size_t n)
{
	der_hdr(d, tag, n);
	der_put(d, p, n);
}

/* Wraps what inner holds in tag, onto d, and empties inner. */
static void der_wrap(struct der *d, uint8_t tag, struct der *inner)
{
	if (inner->err && !d->err)
		d->err = inner->err;
	der_tlv(d, tag, inner->p, inner->len);
	free(inner->p);
	*inner = (struct der){0};
}

static void der_free(struct der *d)
{
	free(d->p);
	*d = (struct der){0};
}

#define SEQ 0x30
#define SET 0x31

/* UTCTime from 1950 to 2049, GeneralizedTime otherwise, as ASN1_TIME_set() chooses. */
static void der_time(struct der *d, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char s[20];
	int n;

	if (gmtime_r(&t, &tm) == NULL) {
		d->err = BC_ERR_INVALID;
		return;
	}
	if (tm.tm_year >= 50 && tm.tm_year < 150) {
		n = snprintf(s, sizeof(s), "%02d%02d%02d%02d%02d%02dZ", tm.tm_year % 100,
		             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		der_tlv(d, V_ASN1_UTCTIME, s, (size_t)n);
	} else {
		n = snprintf(s, sizeof(s), "%04d%02d%02d%02d%02d%02dZ", tm.tm_year + 1900,
		             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		der_tlv(d, V_ASN1_GENERALIZEDTIME, s, (size_t)n);
	}
}

/* Extension { extnID, critical (only when true), extnValue OCTET STRING }. */
static void der_ext(struct der *d, const uint8_t *oid, size_t oid_len, int critical,
                    const uint8_t *value, size_t value_len)
{
	struct der e = {0};

	der_put(&e, oid, oid_len);
	if (critical)
		der_put(&e, pki_critical, sizeof(pki_critical));
	der_tlv(&e, V_ASN1_OCTET_STRING, value, value_len);
	der_wrap(d, SEQ, &e);
}

/* The issuer's subject as DER, and its subject key identifier (the AKI's keyid). */
static int issuer_of(X509 *ca, struct der *name, const ASN1_OCTET_STRING **ski)
{
	const unsigned char *enc = NULL;
	size_t enc_len = 0;

	if (X509_NAME_get0_der(X509_get_subject_name(ca), &enc, &enc_len) != 1)
		return BC_ERR_CRYPTO;
	der_put(name, enc, enc_len);
	if ((*ski = X509_get0_subject_key_id(ca)) == NULL)
		return BC_ERR_INVALID;
	return name->err;
}

static int tbs_build(const struct pki_node_fields *f, X509 *ca, struct der *tbs)
{
	const ASN1_OCTET_STRING *ca_ski = NULL;
	uint8_t ski[SHA_DIGEST_LENGTH];
	struct der a = {0}, b = {0}, c = {0};
	int rc;

	der_put(&a, pki_version3, sizeof(pki_version3));
	der_tlv(&a, V_ASN1_INTEGER, f->serial, PKI_SERIAL_LEN);
	der_put(&a, pki_ecdsa_sha256, sizeof(pki_ecdsa_sha256));
	if ((rc = issuer_of(ca, &a, &ca_ski)) != 0)
		goto out;
	der_time(&b, f->not_before_ms);
	der_time(&b, f->not_after_ms);
	der_wrap(&a, SEQ, &b);
	/* Name: SEQUENCE { SET { SEQUENCE { commonName, UTF8String } } } */
	der_put(&c, pki_oid_cn, sizeof(pki_oid_cn));
	der_tlv(&c, V_ASN1_UTF8STRING, f->cn, strlen(f->cn));
	der_wrap(&b, SEQ, &c);
	der_wrap(&c, SET, &b);
	der_wrap(&a, SEQ, &c);
	der_put(&a, bc_p256_spki_prefix, BC_P256_SPKI_PREFIX_LEN);
	der_put(&a, f->point, 65);
	/* the extensions, in pki_cert_build()'s order */
	der_ext(&b, pki_oid_basic, sizeof(pki_oid_basic), 1, pki_basic_not_ca,
	        sizeof(pki_basic_not_ca));
	der_ext(&b, pki_oid_ku, sizeof(pki_oid_ku), 1, pki_ku_digital_signature,
	        sizeof(pki_ku_digital_signature));
	der_ext(&b, pki_oid_eku, sizeof(pki_oid_eku), 0, pki_eku_client_auth,
	        sizeof(pki_eku_client_auth));
	/* "hash": SHA-1 of the subjectPublicKey's bits, the point (RFC 5280 4.2.1.2 (1)) */
	SHA1(f->point, 65, ski);
	der_tlv(&c, V_ASN1_OCTET_STRING, ski, sizeof(ski));
	der_ext(&b, pki_oid_ski, sizeof(pki_oid_ski), 0, c.p, c.len);
	der_free(&c);
	/* keyid:always: AuthorityKeyIdentifier { [0] keyIdentifier } */
	{
		struct der k = {0};
		der_tlv(&k, 0x80, ASN1_STRING_get0_data(ca_ski),
		        (size_t)ASN1_STRING_length(ca_ski));
		der_wrap(&c, SEQ, &k);
	}
	der_ext(&b, pki_oid_aki, sizeof(pki_oid_aki), 0, c.p, c.len);
	der_free(&c);
	/* GeneralNames of uniformResourceIdentifier [6] IA5String */
	{
		struct der g = {0};
		for (size_t i = 0; i < f->n_uris; i++)
			der_tlv(&g, 0x86, f->uris[i], strlen(f->uris[i]));
		der_wrap(&c, SEQ, &g);
	}
	der_ext(&b, pki_oid_san, sizeof(pki_oid_san), 0, c.p, c.len);
	der_free(&c);
	der_wrap(&c, SEQ, &b);
	der_wrap(&a, 0xa3, &c);
	der_wrap(tbs, SEQ, &a);
	rc = tbs->err;
out:
	der_free(&a);
	der_free(&b);
	der_free(&c);
	return rc;
}

int pki_node_cert_der(const struct pki_node_fields *f, X509 *ca, EVP_PKEY *ca_key, uint8_t **der,
                      size_t *len)
{
	static const uint8_t no_unused_bits[] = {0x00};
	struct der tbs = {0}, body = {0}, cert = {0};
	uint8_t digest[32], rs[BC_SIG_LEN], *sig = NULL;
	size_t sig_len = 0;
	int rc;

	*der = NULL;
	*len = 0;
	if (f == NULL || ca == NULL || ca_key == NULL || f->n_uris == 0 || f->n_uris > BC_MAX_URIS)
		return BC_ERR_INVALID;
	if ((rc = tbs_build(f, ca, &tbs)) != 0)
		goto out;
	/* the CA key signs through its EC_KEY (bc_p256_sign_p1363), its signature then
	 * the DER ECDSA-Sig-Value a certificate carries */
	if ((rc = bc_sha256(tbs.p, tbs.len, digest)) != 0 ||
	    (rc = bc_p256_sign_p1363(ca_key, digest, rs)) != 0 ||
	    (rc = bc_ecdsa_p1363_to_der(rs, &sig, &sig_len)) != 0)
		goto out;
	der_put(&body, tbs.p, tbs.len);
	der_put(&body, pki_ecdsa_sha256, sizeof(pki_ecdsa_sha256));
	/* BIT STRING: no unused bits, then the signature */
	der_hdr(&body, V_ASN1_BIT_STRING, sig_len + 1);
	der_put(&body, no_unused_bits, sizeof(no_unused_bits));
	der_put(&body, sig, sig_len);
	der_wrap(&cert, SEQ, &body);
	if ((rc = cert.err) != 0)
		goto out;
	*der = cert.p;
	*len = cert.len;
	cert = (struct der){0};
out:
	free(sig);
	der_free(&tbs);
	der_free(&body);
	der_free(&cert);
	return rc;
}
