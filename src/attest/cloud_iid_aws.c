/* The EC2 instance identity document. rsa2048 (PKCS#7 SignedData, SHA-256, by one of
 * the 2048-bit certificates the operator configured) when present: the identity is
 * read from the content PKCS7_verify hands back, the bytes it verified, never from
 * the evidence's "document" (SPIRE's aws_iid bug read one part and verified another),
 * and a "document" that is not those bytes is refused (aws-document-mismatch), so
 * what the agent showed is what was admitted.
 * Else "signature" (RSA PKCS#1 v1.5, SHA-256) over the document's exact bytes, with
 * the document's region's certificates (AWS's are 1024-bit: config keeps those for
 * this path only): the bytes parsed are the bytes verified. */
#include <openssl/err.h>
#include <openssl/pkcs7.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest/cloud_iid.h"
#include "bc/json.h"
#include "bc/reasons.h"

#define AWS_DOC_MAX (8 * 1024)

static int copy_field(const json_t *o, const char *key, char out[CLOUD_FIELD_MAX])
{
	const char *s;

	if (bc_json_get_string(o, key, &s) != 0 || s[0] == 0 || strlen(s) >= CLOUD_FIELD_MAX)
		return BC_ERR_INVALID;
	snprintf(out, CLOUD_FIELD_MAX, "%s", s);
	return 0;
}

/* "2026-12-01T19:00:00Z" to Unix ms. */
static int parse_time(const char *s, int64_t *ms)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	if ((end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm)) == NULL || *end != 0)
		return BC_ERR_INVALID;
	*ms = (int64_t)timegm(&tm) * 1000;
	return 0;
}

int aws_parse_document(const char *doc, size_t len, struct cloud_identity *id, int64_t *pending_ms)
{
	char pending[CLOUD_FIELD_MAX];
	json_t *o = NULL;
	int rc = BC_ERR_INVALID;

	memset(id, 0, sizeof(*id));
	*pending_ms = 0;
	if (len == 0 || len > AWS_DOC_MAX || bc_json_parse(doc, len, AWS_DOC_MAX, &o, NULL, 0) != 0)
		return BC_ERR_INVALID;
	if (json_is_object(o) && copy_field(o, "accountId", id->account) == 0 &&
	    copy_field(o, "instanceId", id->instance) == 0 &&
	    copy_field(o, "region", id->region) == 0 &&
	    copy_field(o, "availabilityZone", id->zone) == 0 &&
	    copy_field(o, "pendingTime", pending) == 0 && parse_time(pending, pending_ms) == 0)
		rc = 0;
	snprintf(id->provider, sizeof(id->provider), "aws");
	json_decref(o);
	return rc;
}

static const struct aws_region *region_of(const struct aws_cfg *c, const char *name)
{
	const struct aws_region *any = NULL;

	for (size_t i = 0; i < c->n_regions; i++) {
		if (strcmp(c->regions[i].name, name) == 0)
			return &c->regions[i];
		if (strcmp(c->regions[i].name, "*") == 0)
			any = &c->regions[i];
	}
	return any;
}

static int region_has(const struct aws_region *r, const X509 *x)
{
	for (int i = 0; r && i < sk_X509_num(r->certs); i++)
		if (X509_cmp(sk_X509_value(r->certs, i), x) == 0)
			return 1;
	return 0;
}

/* Exactly one signer, SHA-256. */
static int p7_shape(PKCS7 *p7)
{
	STACK_OF(PKCS7_SIGNER_INFO) * si;
	X509_ALGOR *dig, *sig;

	if (!PKCS7_type_is_signed(p7) || PKCS7_get_detached(p7) ||
	    (si = PKCS7_get_signer_info(p7)) == NULL || sk_PKCS7_SIGNER_INFO_num(si) != 1)
		return 0;
	PKCS7_SIGNER_INFO_get0_algs(sk_PKCS7_SIGNER_INFO_value(si, 0), NULL, &dig, &sig);
	return dig && OBJ_obj2nid(dig->algorithm) == NID_sha256;
}

/* rsa2048: *content (malloc'd) the verified bytes, *signer the certificate. */
static int p7_verify(const struct aws_cfg *c, const uint8_t *der, size_t len, char **content,
                     size_t *clen, X509 **signer)
{
	const uint8_t *p = der;
	PKCS7 *p7 = NULL;
	BIO *out = NULL;
	STACK_OF(X509) *signers = NULL;
	BUF_MEM *mem;
	int ok = 0;

	*content = NULL;
	*signer = NULL;
	if ((p7 = d2i_PKCS7(NULL, &p, (long)len)) == NULL || p != der + len || !p7_shape(p7) ||
	    (out = BIO_new(BIO_s_mem())) == NULL)
		goto out;
	/* the configured certificates are the trust: no chain, none from the message */
	if (PKCS7_verify(p7, c->all, NULL, NULL, out,
	                 PKCS7_NOINTERN | PKCS7_NOVERIFY | PKCS7_NOCHAIN | PKCS7_BINARY) != 1)
		goto out;
	if ((signers = PKCS7_get0_signers(p7, c->all, PKCS7_NOINTERN)) == NULL ||
	    sk_X509_num(signers) != 1)
		goto out;
	BIO_get_mem_ptr(out, &mem);
	if (mem->length == 0 || mem->length > AWS_DOC_MAX ||
	    (*content = malloc(mem->length + 1)) == NULL)
		goto out;
	memcpy(*content, mem->data, mem->length);
	(*content)[mem->length] = 0;
	*clen = mem->length;
	*signer = sk_X509_value(signers, 0);
	X509_up_ref(*signer);
	ok = 1;
out:
	ERR_clear_error();
	sk_X509_free(signers);
	BIO_free(out);
	PKCS7_free(p7);
	return ok;
}

static int sig_verify(const struct aws_region *r, const char *doc, size_t len, const uint8_t *sig,
                      size_t siglen)
{
	int ok = 0;

	for (int i = 0; r && !ok && i < sk_X509_num(r->certs); i++) {
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		EVP_PKEY *pk = X509_get0_pubkey(sk_X509_value(r->certs, i));
		ok = md && pk && EVP_PKEY_get_base_id(pk) == EVP_PKEY_RSA &&
		     EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pk) == 1 &&
		     EVP_DigestVerify(md, sig, siglen, (const uint8_t *)doc, len) == 1;
		EVP_MD_CTX_free(md);
	}
	ERR_clear_error();
	return ok;
}

static const char *verify_rsa2048(const struct aws_cfg *c, const char *document, size_t doclen,
                                  const uint8_t *p7, size_t p7len, struct cloud_identity *id,
                                  int64_t *pending)
{
	char *content = NULL;
	size_t clen = 0;
	X509 *signer = NULL;
	const char *why = NULL;

	if (!p7_verify(c, p7, p7len, &content, &clen, &signer))
		why = BC_R_AWS_SIGNATURE;
	else if (document == NULL || doclen != clen || memcmp(document, content, clen) != 0)
		why = BC_R_AWS_DOCUMENT_MISMATCH;
	else if (aws_parse_document(content, clen, id, pending) != 0)
		why = BC_R_AWS_MALFORMED;
	else if (region_of(c, id->region) == NULL)
		why = BC_R_AWS_REGION;
	else if (!region_has(region_of(c, id->region), signer))
		why = BC_R_AWS_SIGNATURE; /* another region's certificate */
	X509_free(signer);
	free(content);
	return why;
}

int aws_check(const struct aws_cfg *c, const char *document, size_t doclen, const uint8_t *sig,
              size_t siglen, const uint8_t *p7, size_t p7len, int64_t now_ms,
              struct cloud_identity *id, const char **reason)
{
	int64_t pending = 0;

	*reason = NULL;
	if (p7 != NULL) {
		*reason = verify_rsa2048(c, document, doclen, p7, p7len, id, &pending);
	} else if (sig == NULL || document == NULL ||
	           aws_parse_document(document, doclen, id, &pending) != 0) {
		*reason = BC_R_AWS_MALFORMED;
	} else if (region_of(c, id->region) == NULL) {
		*reason = BC_R_AWS_REGION;
	} else if (!sig_verify(region_of(c, id->region), document, doclen, sig, siglen)) {
		*reason = BC_R_AWS_SIGNATURE;
	}
	if (*reason)
		return 0;
	if (now_ms - pending > c->max_age_ms || pending > now_ms + CLOUD_LEEWAY_MS)
		*reason = BC_R_AWS_TOO_OLD;
	else if (!str_list_has(&c->accounts, id->account))
		*reason = BC_R_AWS_ACCOUNT;
	return 0;
}
