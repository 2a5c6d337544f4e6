/* Reading a node certificate without OpenSSL's X509 decoder and without the CA: the
 * peek that bc_pki_node_identity and the client take first.
 *
 * d2i_X509 decodes the public key through OpenSSL 3's generic decoder framework at
 * parse time, the costliest part of reading a certificate after a signature. Every
 * node certificate has the one form node_der.c writes, so this reads exactly that
 * form and nothing else, in three passes:
 *
 *   1. strict DER: one SEQUENCE with nothing after it, every length definite and
 *      minimal, every constructed encoding walked down (BC_ERR_INVALID otherwise), and
 *      the outer shape of a certificate: SEQUENCE { SEQUENCE, SEQUENCE, BIT STRING };
 *   2. the fixed form, field by field against node_der.c's grammar: the fixed parts
 *      compared byte for byte, the variable ones (serial, times, CN, point, SKI, AKI
 *      keyid, URIs) located (BC_ERR_UNSUPPORTED for any other certificate);
 *   3. the checks: the issuer in the CA subject's shape (BC_ERR_UNSUPPORTED), the SAN
 *      rules of identity.c and the point on P-256 (BC_ERR_INVALID).
 *
 * No signature is checked: the server reads a presented certificate from its stored
 * row (join/holder.h) or through the X509 path with the CA. Whatever the peek
 * accepts, the X509 path (bc_x509_from_der, bc_pki_node_identity_x509) accepts too
 * with the same identity: the form is the one OpenSSL reads back from node_der.c, and
 * each variable field is held to at least identity.c's rules (pki_node_read_test and
 * fuzz_node_cert check it). Nothing is allocated but the statements (at most
 * BC_MAX_URIS - 1, each at most PKI_STATEMENT_MAX bytes) and one digest context. */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "crypto/internal.h" /* the fixed P-256 SPKI prefix */
#include "pki/node_form.h"
#include "pki/pki_internal.h"

/* Deeper than any certificate nests (ours: five). */
#define DER_DEPTH_MAX 16

#define SEQ         0x30
#define SET         0x31
#define INTEGER     0x02
#define BIT_STRING  0x03
#define OCTETS      0x04
#define UTF8STRING  0x0c
#define UTCTIME     0x17
#define GENTIME     0x18
#define EXTENSIONS  0xa3 /* [3] EXPLICIT */
#define AKI_KEYID   0x80 /* [0] IMPLICIT OCTET STRING */
#define SAN_URI     0x86 /* [6] IMPLICIT IA5String */
#define NODE_ID_LEN 31   /* "node_" and 26 characters */

/* Where the variable parts of a node certificate are, and what they say. */
struct view {
	struct pki_der tbs;    /* the whole to-be-signed TLV: what the signature covers */
	struct pki_der issuer; /* the whole issuer Name TLV */
	struct pki_der cn;     /* the subject CN's characters */
	struct pki_der aki;    /* the AKI's keyid */
	struct pki_der names;  /* the SAN's GeneralNames, inside the SEQUENCE */
	struct pki_der sig;    /* the ECDSA-Sig-Value, the BIT STRING after its unused-bits byte */
	const uint8_t *serial;
	const uint8_t *point;
	int64_t not_before_ms, not_after_ms;
};

/* Every TLV in r, and down every constructed one: strict headers, no universal tag 0
 * (end-of-contents), universal SEQUENCE and SET constructed and every other universal
 * type primitive (DER has no constructed strings). */
static int der_valid(struct pki_der r, int depth)
{
	uint8_t tag;
	size_t hdr, len;
	int rc;

	if (depth > DER_DEPTH_MAX)
		return BC_ERR_INVALID;
	while (r.n > 0) {
		if ((rc = pki_der_head(&r, &tag, &hdr, &len)) != 0)
			return rc;
		if ((tag & 0xc0) == 0) {
			uint8_t num = tag & 0x1f;
			int constructed = (tag & 0x20) != 0;
			if (num == 0 || constructed != (num == 0x10 || num == 0x11))
				return BC_ERR_INVALID;
		}
		if ((tag & 0x20) &&
		    (rc = der_valid((struct pki_der){r.p + hdr, len}, depth + 1)) != 0)
			return rc;
		r.p += hdr + len;
		r.n -= hdr + len;
	}
	return 0;
}

/* The next TLV of r, which must have this tag: its contents into v, the whole TLV into
 * all (when not NULL). r was walked by der_valid, so anything else is another form. */
static int take(struct pki_der *r, uint8_t tag, struct pki_der *v, struct pki_der *all)
{
	uint8_t t;
	size_t hdr, len;

	if (pki_der_head(r, &t, &hdr, &len) != 0 || t != tag)
		return BC_ERR_UNSUPPORTED;
	*v = (struct pki_der){r->p + hdr, len};
	if (all != NULL)
		*all = (struct pki_der){r->p, hdr + len};
	r->p += hdr + len;
	r->n -= hdr + len;
	return 0;
}

/* The next n bytes of r, which must be these. */
static int expect(struct pki_der *r, const uint8_t *b, size_t n)
{
	if (r->n < n || memcmp(r->p, b, n) != 0)
		return BC_ERR_UNSUPPORTED;
	r->p += n;
	r->n -= n;
	return 0;
}

static int done(const struct pki_der *r)
{
	return r->n == 0 ? 0 : BC_ERR_UNSUPPORTED;
}

/* The next TLV of r as a Name of one commonName UTF8String (pki_der_cn_name's form):
 * its characters into cn. */
static int take_cn_name(struct pki_der *r, struct pki_der *cn)
{
	struct pki_der name, set, atv;
	int rc;

	if ((rc = take(r, SEQ, &name, NULL)) != 0 || (rc = take(&name, SET, &set, NULL)) != 0 ||
	    (rc = done(&name)) != 0 || (rc = take(&set, SEQ, &atv, NULL)) != 0 ||
	    (rc = done(&set)) != 0 || (rc = expect(&atv, pki_oid_cn, sizeof(pki_oid_cn))) != 0 ||
	    (rc = take(&atv, UTF8STRING, cn, NULL)) != 0)
		return rc;
	return done(&atv);
}

/* Two decimal digits; -1 when either is not one. */
static int two(const uint8_t *s)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return -1;
	return (s[0] - '0') * 10 + (s[1] - '0');
}

static int leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* A validity time as node_der.c writes it: UTCTime YYMMDDHHMMSSZ (YY 50..99 is 19YY)
 * for 1950 to 2049, GeneralizedTime YYYYMMDDHHMMSSZ for any other year. Another
 * encoding of a time (no seconds, fractions, an offset, GeneralizedTime for a year
 * UTCTime covers) is another form; the right shape with a non-digit or a value out of
 * range (month 13, February 30, second 60) is invalid, as ASN1_TIME_to_tm has it. */
static int read_time(struct pki_der *r, int64_t *ms)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	struct pki_der v;
	struct tm tm;
	const uint8_t *s;
	int y, mon, day, h, min, sec;
	time_t t;

	*ms = 0;
	if (r->n > 0 && r->p[0] == UTCTIME) {
		if (take(r, UTCTIME, &v, NULL) != 0 || v.n != 13 || v.p[12] != 'Z')
			return BC_ERR_UNSUPPORTED;
		if ((y = two(v.p)) < 0)
			return BC_ERR_INVALID;
		y += y < 50 ? 2000 : 1900;
		s = v.p + 2;
	} else {
		int hi, lo;
		if (take(r, GENTIME, &v, NULL) != 0 || v.n != 15 || v.p[14] != 'Z')
			return BC_ERR_UNSUPPORTED;
		if ((hi = two(v.p)) < 0 || (lo = two(v.p + 2)) < 0)
			return BC_ERR_INVALID;
		y = hi * 100 + lo;
		if (y >= 1950 && y <= 2049)
			return BC_ERR_UNSUPPORTED;
		s = v.p + 4;
	}
	mon = two(s);
	day = two(s + 2);
	h = two(s + 4);
	min = two(s + 6);
	sec = two(s + 8);
	if (mon < 1 || mon > 12 || day < 1 || h < 0 || h > 23 || min < 0 || min > 59 || sec < 0 ||
	    sec > 59)
		return BC_ERR_INVALID;
	if (day > mdays[mon - 1] + (mon == 2 && leap(y)))
		return BC_ERR_INVALID;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = h;
	tm.tm_min = min;
	tm.tm_sec = sec;
	/* -1 as identity.c's read_time has it: refused there, refused here */
	if ((t = timegm(&tm)) == (time_t)-1)
		return BC_ERR_INVALID;
	*ms = (int64_t)t * 1000;
	return 0;
}

/* Extension { extnID, critical TRUE (when critical), extnValue }: the value's bytes. */
static int read_ext(struct pki_der *exts, const uint8_t *oid, size_t oid_len, int crit,
                    struct pki_der *value)
{
	struct pki_der e;
	int rc;

	if ((rc = take(exts, SEQ, &e, NULL)) != 0 || (rc = expect(&e, oid, oid_len)) != 0 ||
	    (crit && (rc = expect(&e, pki_critical, sizeof(pki_critical))) != 0) ||
	    (rc = take(&e, OCTETS, value, NULL)) != 0)
		return rc;
	return done(&e);
}

/* An extension whose value is exactly these bytes. */
static int fixed_ext(struct pki_der *exts, const uint8_t *oid, size_t oid_len, int crit,
                     const uint8_t *b, size_t n)
{
	struct pki_der v;
	int rc;

	if ((rc = read_ext(exts, oid, oid_len, crit, &v)) != 0)
		return rc;
	return v.n == n && memcmp(v.p, b, n) == 0 ? 0 : BC_ERR_UNSUPPORTED;
}

static const EVP_MD *sha1_md;
static pthread_once_t sha1_once = PTHREAD_ONCE_INIT;

static void fetch_sha1(void)
{
	sha1_md = EVP_MD_fetch(NULL, "SHA1", NULL);
}

/* The six extensions, in node_der.c's order. */
static int read_exts(struct pki_der *tbs, struct view *v)
{
	struct pki_der e3, exts, val, in, ski;
	uint8_t want[20];
	unsigned int n = 0;
	int rc;

	if ((rc = take(tbs, EXTENSIONS, &e3, NULL)) != 0 ||
	    (rc = take(&e3, SEQ, &exts, NULL)) != 0 || (rc = done(&e3)) != 0)
		return rc;
	if ((rc = fixed_ext(&exts, pki_oid_basic, sizeof(pki_oid_basic), 1, pki_basic_not_ca,
	                    sizeof(pki_basic_not_ca))) != 0 ||
	    (rc = fixed_ext(&exts, pki_oid_ku, sizeof(pki_oid_ku), 1, pki_ku_digital_signature,
	                    sizeof(pki_ku_digital_signature))) != 0 ||
	    (rc = fixed_ext(&exts, pki_oid_eku, sizeof(pki_oid_eku), 0, pki_eku_client_auth,
	                    sizeof(pki_eku_client_auth))) != 0)
		return rc;
	/* SKI: OCTET STRING, SHA-1 of the point (RFC 5280 4.2.1.2 (1)) */
	if ((rc = read_ext(&exts, pki_oid_ski, sizeof(pki_oid_ski), 0, &val)) != 0 ||
	    (rc = take(&val, OCTETS, &ski, NULL)) != 0 || (rc = done(&val)) != 0)
		return rc;
	pthread_once(&sha1_once, fetch_sha1);
	if (sha1_md == NULL || EVP_Digest(v->point, 65, want, &n, sha1_md, NULL) != 1 || n != 20) {
		ERR_clear_error();
		return BC_ERR_CRYPTO;
	}
	if (ski.n != sizeof(want) || memcmp(ski.p, want, sizeof(want)) != 0)
		return BC_ERR_UNSUPPORTED;
	/* AKI: SEQUENCE { [0] keyid } */
	if ((rc = read_ext(&exts, pki_oid_aki, sizeof(pki_oid_aki), 0, &val)) != 0 ||
	    (rc = take(&val, SEQ, &in, NULL)) != 0 || (rc = done(&val)) != 0 ||
	    (rc = take(&in, AKI_KEYID, &v->aki, NULL)) != 0 || (rc = done(&in)) != 0)
		return rc;
	/* SAN: SEQUENCE OF GeneralName, read against identity.c's rules later */
	if ((rc = read_ext(&exts, pki_oid_san, sizeof(pki_oid_san), 0, &val)) != 0 ||
	    (rc = take(&val, SEQ, &v->names, NULL)) != 0 || (rc = done(&val)) != 0)
		return rc;
	return done(&exts);
}

/* TBSCertificate, field by field. */
static int read_tbs(struct pki_der tbs, struct view *v)
{
	struct pki_der serial, validity, name;
	int rc;

	if ((rc = expect(&tbs, pki_version3, sizeof(pki_version3))) != 0)
		return rc;
	/* 16 bytes, positive, no leading zero: as pki_serial_draw makes them */
	if ((rc = take(&tbs, INTEGER, &serial, NULL)) != 0)
		return rc;
	if (serial.n != PKI_SERIAL_LEN || serial.p[0] == 0 || serial.p[0] > 0x7f)
		return BC_ERR_UNSUPPORTED;
	v->serial = serial.p;
	if ((rc = expect(&tbs, pki_ecdsa_sha256, sizeof(pki_ecdsa_sha256))) != 0 ||
	    (rc = take(&tbs, SEQ, &name, &v->issuer)) != 0)
		return rc;
	if ((rc = take(&tbs, SEQ, &validity, NULL)) != 0 ||
	    (rc = read_time(&validity, &v->not_before_ms)) != 0 ||
	    (rc = read_time(&validity, &v->not_after_ms)) != 0 || (rc = done(&validity)) != 0)
		return rc;
	/* subject: the node id */
	if ((rc = take_cn_name(&tbs, &v->cn)) != 0)
		return rc;
	if (v->cn.n != NODE_ID_LEN)
		return BC_ERR_UNSUPPORTED;
	/* the key: the fixed P-256 SPKI prefix, then an uncompressed point */
	if ((rc = expect(&tbs, bc_p256_spki_prefix, BC_P256_SPKI_PREFIX_LEN)) != 0)
		return rc;
	if (tbs.n < 65 || tbs.p[0] != 0x04)
		return BC_ERR_UNSUPPORTED;
	v->point = tbs.p;
	tbs.p += 65;
	tbs.n -= 65;
	if ((rc = read_exts(&tbs, v)) != 0)
		return rc;
	return done(&tbs);
}

/* Strict DER of a certificate's outer shape, then the fixed form. */
static int read_form(const uint8_t *der, size_t len, struct view *v)
{
	struct pki_der r = {der, len}, cert, tbs, alg, alg_all, sig;
	uint8_t tag;
	size_t hdr, n;
	int rc;

	if ((rc = pki_der_head(&r, &tag, &hdr, &n)) != 0)
		return rc;
	if (tag != SEQ || hdr + n != len)
		return BC_ERR_INVALID;
	cert = (struct pki_der){der + hdr, n};
	if ((rc = der_valid(cert, 1)) != 0)
		return rc;
	/* Certificate: SEQUENCE { tbsCertificate, signatureAlgorithm, signature } */
	if (take(&cert, SEQ, &tbs, &v->tbs) != 0 || take(&cert, SEQ, &alg, &alg_all) != 0 ||
	    take(&cert, BIT_STRING, &sig, NULL) != 0 || done(&cert) != 0)
		return BC_ERR_INVALID;
	if ((rc = read_tbs(tbs, v)) != 0)
		return rc;
	if (alg_all.n != sizeof(pki_ecdsa_sha256) ||
	    memcmp(alg_all.p, pki_ecdsa_sha256, alg_all.n) != 0)
		return BC_ERR_UNSUPPORTED;
	/* no unused bits, then the signature's DER (EVP_DigestVerify holds it to DER) */
	if (sig.n < 2 || sig.p[0] != 0x00)
		return BC_ERR_UNSUPPORTED;
	v->sig = (struct pki_der){sig.p + 1, sig.n - 1};
	return 0;
}

/* The SANs by identity.c's rules (read_sans, uri_bytes): 1..BC_MAX_URIS URIs, nothing
 * else, each printable and at most PKI_STATEMENT_MAX bytes; the SPIFFE ID of td first,
 * then urn:bc: statements. Then the serial and the times. */
static int read_identity(const struct view *v, const char *td, struct bc_node_identity *id)
{
	struct pki_der names = v->names, uri;
	size_t count = 0;
	int rc;

	while (names.n > 0) {
		if (count == BC_MAX_URIS || take(&names, SAN_URI, &uri, NULL) != 0)
			return BC_ERR_INVALID;
		if (uri.n == 0 || uri.n > PKI_STATEMENT_MAX ||
		    !pki_printable((const char *)uri.p, uri.n))
			return BC_ERR_INVALID;
		if (count++ == 0) {
			if ((rc = pki_parse_spiffe((const char *)uri.p, uri.n, td, id)) != 0)
				return rc;
			continue;
		}
		if (!pki_statement_valid((const char *)uri.p, uri.n))
			return BC_ERR_INVALID;
		if ((id->statements[id->n_statements] = strndup((const char *)uri.p, uri.n)) ==
		    NULL)
			return BC_ERR_NOMEM;
		id->n_statements++;
	}
	if (count == 0)
		return BC_ERR_INVALID;
	id->not_before_ms = v->not_before_ms;
	id->not_after_ms = v->not_after_ms;
	bc_hex_encode_to(v->serial, PKI_SERIAL_LEN, id->serial_hex);
	return 0;
}

/* The subject's checks: the SANs, the CN the node id (as bc_pki_issue_node_cert writes
 * it), and the point on P-256 and not infinity, without building a key. */
static int read_subject(const struct view *v, const char *td, struct bc_node_identity *id)
{
	int rc;

	if ((rc = read_identity(v, td, id)) != 0)
		return rc;
	if (memcmp(v->cn.p, id->node_id, NODE_ID_LEN) != 0 || id->node_id[NODE_ID_LEN] != '\0')
		return BC_ERR_UNSUPPORTED;
	return bc_p256_point_check(v->point);
}

/* An issuer name as ca.c writes the node CA's subject: one RDN of one commonName, a
 * UTF8String of printable ASCII (spaces too), which d2i_X509 reads back. The peek does
 * not know the CA, so it holds the issuer to this shape instead of to its bytes. */
static int issuer_shape(const struct view *v)
{
	struct pki_der all = v->issuer, cn;

	if (take_cn_name(&all, &cn) != 0 || cn.n == 0)
		return BC_ERR_UNSUPPORTED;
	for (size_t i = 0; i < cn.n; i++) {
		if (cn.p[i] < 0x20 || cn.p[i] > 0x7e)
			return BC_ERR_UNSUPPORTED;
	}
	return 0;
}

/* The checks made first: arguments, size, then the form. */
static int read_start(const uint8_t *der, size_t len, const char *td, struct bc_node_identity *id,
                      uint8_t point[static 65], struct view *v)
{
	memset(id, 0, sizeof(*id));
	memset(point, 0, 65);
	memset(v, 0, sizeof(*v));
	if (!bc_trust_domain_valid(td) || der == NULL || len == 0)
		return BC_ERR_INVALID;
	if (len > PKI_MAX_DER)
		return BC_ERR_LIMIT;
	return read_form(der, len, v);
}

/* The end: the point handed out on success, the identity
 * cleared on failure (the point is still zero from read_start). */
static int read_end(int rc, const struct view *v, struct bc_node_identity *id,
                    uint8_t point[static 65])
{
	if (rc == 0)
		memcpy(point, v->point, 65);
	else
		bc_node_identity_clear(id);
	return rc;
}

/* A node certificate in the one form this project writes (src/pki/node_der.c), read
 * without OpenSSL's X509 decoder and without the CA (the client's and
 * bc_pki_node_identity's fast path): the issuer held to the CA subject's shape, no
 * signature checked. */
int bc_pki_node_cert_peek(const uint8_t *der, size_t len, const char *trust_domain,
                          struct bc_node_identity *id, uint8_t point[static 65])
{
	struct view v;
	int rc;

	if ((rc = read_start(der, len, trust_domain, id, point, &v)) == 0 &&
	    (rc = issuer_shape(&v)) == 0)
		rc = read_subject(&v, trust_domain, id);
	return read_end(rc, &v, id, point);
}
