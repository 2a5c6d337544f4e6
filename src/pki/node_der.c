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

#define SEQ 0x30
#define SET 0x31

/* UTCTime from 1950 to 2049, GeneralizedTime otherwise, as ASN1_TIME_set() chooses. */
static void der_time(struct pki_der_w *d, int64_t ms)
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
		pki_der_tlv(d, V_ASN1_UTCTIME, s, (size_t)n);
	} else {
		n = snprintf(s, sizeof(s), "%04d%02d%02d%02d%02d%02dZ", tm.tm_year + 1900,
		             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		pki_der_tlv(d, V_ASN1_GENERALIZEDTIME, s, (size_t)n);
	}
}

/* Extension { extnID, critical (only when true), extnValue OCTET STRING }. */
static void der_ext(struct pki_der_w *d, const uint8_t *oid, size_t oid_len, int critical,
                    const uint8_t *value, size_t value_len)
{
	struct pki_der_w e = {0};

	pki_der_put(&e, oid, oid_len);
	if (critical)
		pki_der_put(&e, pki_critical, sizeof(pki_critical));
	pki_der_tlv(&e, V_ASN1_OCTET_STRING, value, value_len);
	pki_der_wrap(d, SEQ, &e);
}

/* The issuer's subject as DER, and its subject key identifier (the AKI's keyid). */
static int issuer_of(X509 *ca, struct pki_der_w *name, const ASN1_OCTET_STRING **ski)
{
	const unsigned char *enc = NULL;
	size_t enc_len = 0;

	if (X509_NAME_get0_der(X509_get_subject_name(ca), &enc, &enc_len) != 1)
		return BC_ERR_CRYPTO;
	pki_der_put(name, enc, enc_len);
	if ((*ski = X509_get0_subject_key_id(ca)) == NULL)
		return BC_ERR_INVALID;
	return name->err;
}

static int tbs_build(const struct pki_node_fields *f, X509 *ca, struct pki_der_w *tbs)
{
	const ASN1_OCTET_STRING *ca_ski = NULL;
	uint8_t ski[SHA_DIGEST_LENGTH];
	struct pki_der_w a = {0}, b = {0}, c = {0};
	int rc;

	pki_der_put(&a, pki_version3, sizeof(pki_version3));
	pki_der_tlv(&a, V_ASN1_INTEGER, f->serial, PKI_SERIAL_LEN);
	pki_der_put(&a, pki_ecdsa_sha256, sizeof(pki_ecdsa_sha256));
	if ((rc = issuer_of(ca, &a, &ca_ski)) != 0)
		goto out;
	der_time(&b, f->not_before_ms);
	der_time(&b, f->not_after_ms);
	pki_der_wrap(&a, SEQ, &b);
	pki_der_cn_name(&a, f->cn, strlen(f->cn));
	pki_der_put(&a, bc_p256_spki_prefix, BC_P256_SPKI_PREFIX_LEN);
	pki_der_put(&a, f->point, 65);
	/* the extensions, in pki_cert_build()'s order */
	der_ext(&b, pki_oid_basic, sizeof(pki_oid_basic), 1, pki_basic_not_ca,
	        sizeof(pki_basic_not_ca));
	der_ext(&b, pki_oid_ku, sizeof(pki_oid_ku), 1, pki_ku_digital_signature,
	        sizeof(pki_ku_digital_signature));
	der_ext(&b, pki_oid_eku, sizeof(pki_oid_eku), 0, pki_eku_client_auth,
	        sizeof(pki_eku_client_auth));
	/* "hash": SHA-1 of the subjectPublicKey's bits, the point (RFC 5280 4.2.1.2 (1)) */
	SHA1(f->point, 65, ski);
	pki_der_tlv(&c, V_ASN1_OCTET_STRING, ski, sizeof(ski));
	der_ext(&b, pki_oid_ski, sizeof(pki_oid_ski), 0, c.p, c.len);
	pki_der_wfree(&c);
	/* keyid:always: AuthorityKeyIdentifier { [0] keyIdentifier } */
	{
		struct pki_der_w k = {0};
		pki_der_tlv(&k, 0x80, ASN1_STRING_get0_data(ca_ski),
		            (size_t)ASN1_STRING_length(ca_ski));
		pki_der_wrap(&c, SEQ, &k);
	}
	der_ext(&b, pki_oid_aki, sizeof(pki_oid_aki), 0, c.p, c.len);
	pki_der_wfree(&c);
	/* GeneralNames of uniformResourceIdentifier [6] IA5String */
	{
		struct pki_der_w g = {0};
		for (size_t i = 0; i < f->n_uris; i++)
			pki_der_tlv(&g, 0x86, f->uris[i], strlen(f->uris[i]));
		pki_der_wrap(&c, SEQ, &g);
	}
	der_ext(&b, pki_oid_san, sizeof(pki_oid_san), 0, c.p, c.len);
	pki_der_wfree(&c);
	pki_der_wrap(&c, SEQ, &b);
	pki_der_wrap(&a, 0xa3, &c);
	pki_der_wrap(tbs, SEQ, &a);
	rc = tbs->err;
out:
	pki_der_wfree(&a);
	pki_der_wfree(&b);
	pki_der_wfree(&c);
	return rc;
}

int pki_der_signed(const uint8_t *tbs, size_t tbs_len, EVP_PKEY *key, uint8_t **der, size_t *len)
{
	static const uint8_t no_unused_bits[] = {0x00};
	struct pki_der_w body = {0}, out = {0};
	uint8_t digest[32], rs[BC_SIG_LEN], *sig = NULL;
	size_t sig_len = 0;
	int rc;

	*der = NULL;
	*len = 0;
	/* the key signs through its EC_KEY (bc_p256_sign_p1363), its signature then the
	 * DER ECDSA-Sig-Value a certificate or CSR carries */
	if ((rc = bc_sha256(tbs, tbs_len, digest)) != 0 ||
	    (rc = bc_p256_sign_p1363(key, digest, rs)) != 0 ||
	    (rc = bc_ecdsa_p1363_to_der(rs, &sig, &sig_len)) != 0)
		goto out;
	pki_der_put(&body, tbs, tbs_len);
	pki_der_put(&body, pki_ecdsa_sha256, sizeof(pki_ecdsa_sha256));
	/* BIT STRING: no unused bits, then the signature */
	pki_der_hdr(&body, V_ASN1_BIT_STRING, sig_len + 1);
	pki_der_put(&body, no_unused_bits, sizeof(no_unused_bits));
	pki_der_put(&body, sig, sig_len);
	pki_der_wrap(&out, SEQ, &body);
	if ((rc = out.err) != 0)
		goto out;
	*der = out.p;
	*len = out.len;
	out = (struct pki_der_w){0};
out:
	free(sig);
	pki_der_wfree(&body);
	pki_der_wfree(&out);
	return rc;
}

int pki_node_cert_der(const struct pki_node_fields *f, X509 *ca, EVP_PKEY *ca_key, uint8_t **der,
                      size_t *len)
{
	struct pki_der_w tbs = {0};
	int rc;

	*der = NULL;
	*len = 0;
	if (f == NULL || ca == NULL || ca_key == NULL || f->n_uris == 0 || f->n_uris > BC_MAX_URIS)
		return BC_ERR_INVALID;
	if ((rc = tbs_build(f, ca, &tbs)) == 0)
		rc = pki_der_signed(tbs.p, tbs.len, ca_key, der, len);
	pki_der_wfree(&tbs);
	return rc;
}
