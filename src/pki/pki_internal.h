/* Internal to src/pki: building and reading X.509 pieces shared by the CA,
 * the node certificates and the server TLS certificate. Not installed. */
#ifndef BC_PKI_INTERNAL_H
#define BC_PKI_INTERNAL_H

#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"
#include "bc/pki.h"

/* Refuse DER certificates and CSRs larger than this before parsing them. */
#define PKI_MAX_DER    (64u * 1024)
#define PKI_SERIAL_LEN 16

/* What a new certificate says. The builder sets version 3, a random positive
 * 16-byte serial whose first byte is never 0 (so its DER, its hex and the hex
 * read back agree), subject CN, issuer (the issuer's subject, or the subject
 * when issuer is NULL: self-signed), validity, the key, the extensions given
 * as OpenSSL config values (NULL: left out), SKI and AKI, the SANs (not
 * owned, may be NULL), and signs with issuer_key using ECDSA-SHA256. */
struct pki_cert_spec {
	EVP_PKEY *pub;
	const char *cn;
	X509 *issuer;
	EVP_PKEY *issuer_key;
	int64_t not_before_ms;
	int64_t not_after_ms;
	const char *basic_constraints;
	const char *key_usage;
	const char *ext_key_usage;
	GENERAL_NAMES *san;
};
BC_WUR int pki_cert_build(const struct pki_cert_spec *spec, X509 **out,
                          uint8_t serial[static PKI_SERIAL_LEN]);

/* 1 when key is an EC key on P-256, 0 otherwise. */
int pki_key_is_p256(EVP_PKEY *key);

/* Appends a URI, DNS name or IP address (ip: 4 or 16 bytes) to gens. */
BC_WUR int pki_gens_add(GENERAL_NAMES *gens, int type, const void *p, size_t len);

/* 1 when the n bytes at s are a urn:bc: statement: the prefix "urn:bc:",
 * then printable ASCII without spaces, PKI_STATEMENT_MAX bytes at most. */
#define PKI_STATEMENT_MAX 1024
int pki_statement_valid(const char *s, size_t n);

/* identity.c's rules, shared with node_read.c. pki_printable: 1 when the n bytes at s
 * are printable ASCII without spaces (0x21..0x7e), else 0. pki_parse_spiffe: 0 when the
 * n bytes at s are exactly spiffe://<td>/<role>/<node id> with a valid role and
 * node id, which it copies into id->role and id->node_id; else BC_ERR_INVALID. */
int pki_printable(const char *s, size_t n);
int pki_parse_spiffe(const char *s, size_t n, const char *td, struct bc_node_identity *id);

/* The strict DER reader under the CSR check (csr.c) and the node certificate reader
 * (node_read.c), over untrusted bytes: pki_der_head reads the header of the TLV at
 * r->p, low tag numbers only and a definite length in its shortest form (one to three
 * length bytes, no leading zero, long form only from 0x80), whose contents fit in
 * r->n; *tag, *hdr (the header's size) and *len (the contents') receive it.
 * BC_ERR_INVALID otherwise. It reads nothing past r->p + r->n. */
struct pki_der {
	const uint8_t *p;
	size_t n;
};
BC_WUR int pki_der_head(const struct pki_der *r, uint8_t *tag, size_t *hdr, size_t *len);

/* The DER writer of node_der.c and csr.c: bytes appended to a growing buffer, with
 * the first failure (BC_ERR_NOMEM, or BC_ERR_LIMIT for anything past PKI_MAX_DER or a
 * length over three bytes) kept in err and every later call a no-op. pki_der_hdr
 * writes a tag and a definite length in its shortest form; pki_der_tlv a whole TLV;
 * pki_der_wrap inner's bytes as the contents of tag onto d (inner's error passes on)
 * and empties inner; pki_der_wfree frees the buffer. Start from (struct pki_der_w){0}. */
struct pki_der_w {
	uint8_t *p;
	size_t len, cap;
	int err;
};
void pki_der_put(struct pki_der_w *d, const void *p, size_t n);
void pki_der_hdr(struct pki_der_w *d, uint8_t tag, size_t len);
void pki_der_tlv(struct pki_der_w *d, uint8_t tag, const void *p, size_t n);
void pki_der_wrap(struct pki_der_w *d, uint8_t tag, struct pki_der_w *inner);
void pki_der_wfree(struct pki_der_w *d);
/* Name ::= SEQUENCE { SET { SEQUENCE { commonName, UTF8String cn } } }: the subject of a
 * node certificate and of our CSRs (and the node CA's, as cert.c's X509 API writes it),
 * n bytes of cn, onto d. */
void pki_der_cn_name(struct pki_der_w *d, const char *cn, size_t n);

/* A random positive serial whose first byte is never 0 (see pki_cert_spec). */
BC_WUR int pki_serial_draw(uint8_t s[static PKI_SERIAL_LEN]);

/* What a node certificate says beyond its fixed form (node_der.c): the SPIFFE ID
 * first among the URIs, then the statements. */
struct pki_node_fields {
	uint8_t serial[PKI_SERIAL_LEN];
	int64_t not_before_ms, not_after_ms;
	const char *cn;    /* the node id */
	uint8_t point[65]; /* the P-256 key, uncompressed */
	const char *uris[BC_MAX_URIS];
	size_t n_uris; /* 1 to BC_MAX_URIS */
};
/* The node certificate for f issued by ca (its subject and subject key identifier)
 * and signed with ca_key, as DER (malloc'd): byte for byte what pki_cert_build()
 * makes from the same fields with the node extensions. BC_ERR_INVALID when ca has no
 * subject key identifier; BC_ERR_UNSUPPORTED when ca_key is not a P-256 key OpenSSL
 * can give as an EC_KEY (every key a bundle holds is one). */
BC_WUR int pki_node_cert_der(const struct pki_node_fields *f, X509 *ca, EVP_PKEY *ca_key,
                             uint8_t **der, size_t *len);
/* What a certificate and a CSR both are around the bytes signed: SEQUENCE { tbs,
 * ecdsa-with-SHA256, BIT STRING { DER ECDSA-Sig-Value } }, the signature by key
 * (bc_p256_sign_p1363) over SHA-256 of tbs. DER malloc'd. */
BC_WUR int pki_der_signed(const uint8_t *tbs, size_t tbs_len, EVP_PKEY *key, uint8_t **der,
                          size_t *len);

/* Latest time a certificate may carry (9999-12-31T23:59:59Z). */
#define PKI_MAX_TIME_MS 253402300799000LL

/* A certificate time as ms since 1970 (whole seconds); BC_ERR_INVALID for NULL or a
 * time OpenSSL cannot read, *ms then 0. */
BC_WUR int pki_read_time(const ASN1_TIME *t, int64_t *ms);

/* A certificate from PEM text (exactly one, nothing but white space after). */
BC_WUR int pki_x509_from_pem(const char *pem, X509 **out);

/* bc_pki_node_identity's and bc_pki_verify_node_cert's X509 halves, on a certificate
 * already parsed (bc_x509_from_der); tests compare the reader against them. */
BC_WUR int bc_pki_node_identity_x509(X509 *x, const char *trust_domain,
                                     struct bc_node_identity *id);
BC_WUR int bc_pki_verify_node_x509(const bc_pki *pki, X509 *x);
/* A node certificate in the one form bc_pki_issue_node_cert writes, read without
 * OpenSSL's X509 decoder and without the CA, for a holder of the certificate that does
 * not check its signature (bc_pki_node_identity's contract): 0 only when der is that
 * form in strict DER (minimal definite lengths, nothing after it, at most 64 KiB), its
 * issuer one commonName of printable ASCII (the shape of the node CA's subject), its
 * SKI the SHA-1 of its key, its SANs valid for trust_domain and its key a point on
 * P-256; id then holds what bc_pki_node_identity gives and point the key. Neither the
 * issuer's name nor the signature is checked. It never accepts what bc_x509_from_der
 * and bc_pki_node_identity_x509 together refuse. Errors: BC_ERR_UNSUPPORTED for strict
 * DER shaped as a certificate but not in this form (the X509 path decides),
 * BC_ERR_INVALID for anything else malformed (bad DER, trailing bytes, a bad time, an
 * invalid SAN identity, a point off the curve), BC_ERR_LIMIT over 64 KiB,
 * BC_ERR_NOMEM, BC_ERR_CRYPTO. On any error id is cleared and point zeroed. */
/* The holder of the installed node CA set (node_cas.c): made with every bc_pki. */
struct bc_pki_live *pki_live_new(void);
void pki_live_free(struct bc_pki_live *l);

BC_WUR int bc_pki_node_cert_peek(const uint8_t *der, size_t len, const char *trust_domain,
                                 struct bc_node_identity *id, uint8_t point[static 65]);

#endif
