/* PKCS#10 CSRs: the one check of an untrusted CSR, and making one. */
#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "crypto/internal.h" /* the fixed P-256 SPKI prefix */
#include "pki/node_form.h"
#include "pki/pki_internal.h"

#define CN_MAX 255

/* A strict DER reader over untrusted bytes (pki_der_head): one TLV at a time, low tag
 * numbers only, definite lengths in their shortest form. A CSR is read with it rather than with
 * d2i_X509_REQ, which hands the key to OpenSSL's generic decoder framework (most of
 * a join's CPU); only the attributes go to OpenSSL's decoders, which read no key. */
struct der {
	const uint8_t *p, *end;
};

struct tlv {
	uint8_t tag;
	const uint8_t *start; /* the whole TLV */
	const uint8_t *body;
	size_t len, total;
};

static int der_next(struct der *d, struct tlv *t)
{
	struct pki_der r = {d->p, (size_t)(d->end - d->p)};
	size_t hdr, len;

	if (pki_der_head(&r, &t->tag, &hdr, &len) != 0)
		return BC_ERR_INVALID; /* indefinite, non-minimal, a high tag, or past the end */
	t->start = d->p;
	t->body = d->p + hdr;
	t->len = len;
	t->total = hdr + len;
	d->p += t->total;
	return 0;
}

/* The next TLV, which must have that tag. */
static int der_expect(struct der *d, uint8_t tag, struct tlv *t)
{
	int rc = der_next(d, t);
	return rc != 0 ? rc : (t->tag == tag ? 0 : BC_ERR_INVALID);
}

static struct der der_of(const struct tlv *t)
{
	return (struct der){t->body, t->body + t->len};
}

/* The subject's shape, in strict DER: Name ::= SEQUENCE OF RelativeDistinguishedName,
 * RDN ::= SET SIZE (1..MAX) OF SEQUENCE { type OBJECT IDENTIFIER, value ANY }. Nothing
 * reads the subject, so its values are only framed. d2i_X509_NAME did this before and
 * made a canonical copy of the name on the way, 2% of a join's CPU. */
static int whole_name(const struct tlv *t)
{
	struct der names = der_of(t), atvs, fields;
	struct tlv rdn, atv, oid, value;

	while (names.p < names.end) {
		if (der_expect(&names, 0x31, &rdn) != 0 || rdn.len == 0)
			return BC_ERR_INVALID;
		atvs = der_of(&rdn);
		while (atvs.p < atvs.end) {
			if (der_expect(&atvs, 0x30, &atv) != 0)
				return BC_ERR_INVALID;
			fields = der_of(&atv);
			/* an OID's last byte ends its last arc */
			if (der_expect(&fields, 0x06, &oid) != 0 || oid.len == 0 ||
			    (oid.body[oid.len - 1] & 0x80) != 0 || der_next(&fields, &value) != 0 ||
			    fields.p != fields.end)
				return BC_ERR_INVALID;
		}
	}
	return 0;
}

static int whole_attributes(const struct tlv *set)
{
	struct der d = der_of(set);
	struct tlv t;

	while (d.p < d.end) {
		const uint8_t *p;
		X509_ATTRIBUTE *a;
		int ok;
		if (der_expect(&d, 0x30, &t) != 0)
			return BC_ERR_INVALID;
		p = t.start;
		a = d2i_X509_ATTRIBUTE(NULL, &p, (long)t.total);
		ok = a != NULL && p == t.start + t.total;
		X509_ATTRIBUTE_free(a);
		if (!ok)
			return BC_ERR_INVALID;
	}
	return 0;
}

struct csr_parts {
	struct tlv info; /* CertificationRequestInfo: the signed bytes */
	struct tlv spki; /* SubjectPublicKeyInfo */
	struct tlv sig;  /* the signature's BIT STRING */
};

/* CertificationRequestInfo ::= SEQUENCE { version 0, subject Name, subjectPKInfo,
 * attributes [0] } */
static int parse_info(const struct tlv *info, struct csr_parts *c)
{
	struct der d = der_of(info);
	struct tlv v, name, attrs;

	if (der_expect(&d, 0x02, &v) != 0 || v.len != 1 || v.body[0] != 0 ||
	    der_expect(&d, 0x30, &name) != 0 || whole_name(&name) != 0 ||
	    der_expect(&d, 0x30, &c->spki) != 0 || der_expect(&d, 0xa0, &attrs) != 0 ||
	    whole_attributes(&attrs) != 0 || d.p != d.end)
		return BC_ERR_INVALID;
	return 0;
}

/* CertificationRequest ::= SEQUENCE { info, signatureAlgorithm, signature BIT STRING } */
static int parse_csr(const uint8_t *der, size_t len, struct csr_parts *c)
{
	struct der top = {der, der + len}, d;
	struct tlv req, alg;
	int rc;

	if ((rc = der_expect(&top, 0x30, &req)) != 0)
		return rc;
	if (top.p != top.end)
		return BC_ERR_TRAILING;
	d = der_of(&req);
	if (der_expect(&d, 0x30, &c->info) != 0 || parse_info(&c->info, c) != 0 ||
	    /* ecdsa-with-SHA256 (node_form.h): the only signature we accept */
	    der_expect(&d, 0x30, &alg) != 0 || alg.total != sizeof(pki_ecdsa_sha256) ||
	    memcmp(alg.start, pki_ecdsa_sha256, sizeof(pki_ecdsa_sha256)) != 0 ||
	    der_expect(&d, 0x03, &c->sig) != 0 || c->sig.len < 2 || c->sig.body[0] != 0 ||
	    d.p != d.end)
		return BC_ERR_INVALID;
	return 0;
}

int bc_csr_check_point(const uint8_t *der, size_t len, uint8_t point[static 65])
{
	struct csr_parts c;
	const uint8_t *pt;
	int rc;

	memset(point, 0, 65);
	if (der == NULL || len == 0)
		return BC_ERR_INVALID;
	if (len > PKI_MAX_DER)
		return BC_ERR_LIMIT;
	if ((rc = parse_csr(der, len, &c)) != 0)
		goto out;
	/* id-ecPublicKey on the named curve P-256 with an uncompressed point, exactly: the
	 * fixed prefix and the point */
	if (c.spki.total != BC_P256_SPKI_LEN ||
	    memcmp(c.spki.start, bc_p256_spki_prefix, BC_P256_SPKI_PREFIX_LEN) != 0) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	pt = c.spki.start + BC_P256_SPKI_PREFIX_LEN;
	/* The self-signature: ECDSA-SHA256 over the info's DER by the key as its bare point
	 * (no EVP_PKEY is made for a key used once here); a point off the curve is
	 * BC_ERR_INVALID, a signature that does not verify BC_ERR_VERIFY. */
	rc = bc_p256_verify(pt, c.info.start, c.info.total, c.sig.body + 1, c.sig.len - 1);
	if (rc != 0 && rc != BC_ERR_NOMEM && rc != BC_ERR_INVALID)
		rc = BC_ERR_VERIFY;
	if (rc == 0)
		memcpy(point, pt, 65);
out:
	ERR_clear_error();
	return rc;
}

int bc_csr_check(const uint8_t *der, size_t len, EVP_PKEY **pub)
{
	uint8_t point[65];
	int rc;

	*pub = NULL;
	if ((rc = bc_csr_check_point(der, len, point)) != 0)
		return rc;
	if ((rc = bc_key_from_point(point, pub)) != 0)
		return rc == BC_ERR_NOMEM ? rc : BC_ERR_INVALID;
	return 0;
}

/* A P-256 key's CSR written as DER directly, byte for byte what the X509_REQ path below
 * makes (pki_csr_test checks it): CertificationRequestInfo { version 0, subject
 * SEQUENCE { SET { SEQUENCE { commonName, UTF8String } } }, the fixed P-256 SPKI, no
 * attributes }, then pki_der_signed. X509_REQ_set_pubkey encodes the key through
 * OpenSSL's encoder and decoder framework, half of what making a CSR cost. */
static int csr_der(EVP_PKEY *key, const uint8_t point[static 65], const char *cn, size_t cnlen,
                   uint8_t **der, size_t *len)
{
	static const uint8_t version0[] = {0x02, 0x01, 0x00};
	static const uint8_t no_attributes[] = {0xa0, 0x00};
	struct pki_der_w info = {0}, a = {0};
	int rc;

	pki_der_put(&a, version0, sizeof(version0));
	pki_der_cn_name(&a, cn, cnlen);
	pki_der_put(&a, bc_p256_spki_prefix, BC_P256_SPKI_PREFIX_LEN);
	pki_der_put(&a, point, 65);
	pki_der_put(&a, no_attributes, sizeof(no_attributes));
	pki_der_wrap(&info, 0x30, &a);
	if ((rc = info.err) == 0)
		rc = pki_der_signed(info.p, info.len, key, der, len);
	pki_der_wfree(&info);
	return rc;
}

int bc_csr_make(EVP_PKEY *key, const char *cn, uint8_t **der, size_t *len)
{
	X509_REQ *req = NULL;
	uint8_t point[65];
	X509_NAME *name;
	unsigned char *p;
	size_t cnlen;
	int n, rc = BC_ERR_CRYPTO;

	*der = NULL;
	*len = 0;
	if (key == NULL || cn == NULL || (cnlen = strlen(cn)) == 0 || cnlen > CN_MAX)
		return BC_ERR_INVALID;
	/* a key of another kind takes OpenSSL's path (bc_csr_check refuses its CSR) */
	if (bc_p256_public_point(key, point) == 0)
		return csr_der(key, point, cn, cnlen, der, len);
	if ((req = X509_REQ_new()) == NULL)
		return BC_ERR_NOMEM;
	if (X509_REQ_set_version(req, X509_REQ_VERSION_1) != 1)
		goto out;
	if ((name = X509_REQ_get_subject_name(req)) == NULL ||
	    X509_NAME_add_entry_by_NID(name, NID_commonName, V_ASN1_UTF8STRING,
	                               (const unsigned char *)cn, (int)cnlen, -1, 0) != 1)
		goto out;
	if (X509_REQ_set_pubkey(req, key) != 1 || X509_REQ_sign(req, key, EVP_sha256()) <= 0)
		goto out;
	if ((n = i2d_X509_REQ(req, NULL)) <= 0)
		goto out;
	rc = BC_ERR_NOMEM;
	if ((*der = malloc((size_t)n)) == NULL)
		goto out;
	p = *der;
	if (i2d_X509_REQ(req, &p) != n) {
		free(*der);
		*der = NULL;
		rc = BC_ERR_CRYPTO;
		goto out;
	}
	*len = (size_t)n;
	rc = 0;
out:
	X509_REQ_free(req);
	if (rc != 0)
		ERR_clear_error();
	return rc;
}
