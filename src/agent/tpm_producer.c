/* The tpm attestor's agent side (the spec's "bcd with its TPM"): TpmEvidence for round
 * 1, a TpmAnswer for each TpmChallenge. The TPM is opened for each round and closed
 * before the request goes out (swtpm takes one connection at a time). The answer
 * repeats the evidence of the last round 1 unchanged, since the server's sealed state
 * names its digest. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/nodekey.h"
#include "agent/producer.h"
#include "agent/tpm.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "bc/wire.h"
#include "bettercompute/attest/v1/tpm.pb-c.h"

#define EXTRA_LEN 32

struct tpm_producer {
	char tcti[BCD_TCTI_MAX];
	const struct bcd_nodekey *key; /* borrowed; NULL or a file key: nothing to certify */
	struct bcd_tpm_ek ek;
	struct bcd_tpm_ak ak;
	int have_evidence;
};

/* What one answer is made of, freed together. */
struct answer_parts {
	uint8_t *secret;
	size_t secret_len;
	struct bcd_tpm_attest quote;
	struct bcd_tpm_attest cert;
	uint8_t key_pub[BCD_TPM_PUBLIC_MAX]; /* the certified key's TPMT_PUBLIC */
	size_t key_pub_len;
	int certified;
};

static void parts_free(struct answer_parts *a)
{
	bc_freezero(a->secret, a->secret_len);
	bcd_tpm_attest_free(&a->quote);
	bcd_tpm_attest_free(&a->cert);
	memset(a, 0, sizeof(*a));
}

static void producer_free(void *ctx)
{
	struct tpm_producer *p = ctx;

	if (p == NULL)
		return;
	bcd_tpm_ek_free(&p->ek);
	free(p);
}

static void hold_node_key(void *ctx, const struct bcd_nodekey *key)
{
	((struct tpm_producer *)ctx)->key = key;
}

static int open_tpm(const struct tpm_producer *p, struct bcd_tpm **t, char *err, size_t errlen)
{
	char why[512] = "";
	int rc;

	if ((rc = bcd_tpm_open(p->tcti, t, why, sizeof(why))) != 0)
		snprintf(err, errlen, "the TPM (%s) is unavailable: %s", p->tcti, why);
	return rc;
}

/* The TpmEvidence of the EK and AK held in p; its byte fields point into p. */
static void evidence_of(struct tpm_producer *p, Bettercompute__Attest__V1__TpmEvidence *ev)
{
	bettercompute__attest__v1__tpm_evidence__init(ev);
	ev->ek_public.data = p->ek.pub;
	ev->ek_public.len = p->ek.pub_len;
	ev->ek_certificate.data = p->ek.cert;
	ev->ek_certificate.len = p->ek.cert != NULL ? p->ek.cert_len : 0;
	ev->ak_public.data = p->ak.pub;
	ev->ak_public.len = p->ak.pub_len;
}

static int round1(void *ctx, EVP_PKEY *node_key, const uint8_t csr_sha256[static 32], uint8_t **out,
                  size_t *outlen, char *err, size_t errlen)
{
	struct tpm_producer *p = ctx;
	Bettercompute__Attest__V1__TpmEvidence ev;
	struct bcd_tpm *t = NULL;
	int rc;

	(void)node_key; /* certified in the answer, bound to the CSR by hash */
	(void)csr_sha256;
	*out = NULL;
	*outlen = 0;
	p->have_evidence = 0;
	bcd_tpm_ek_free(&p->ek);
	if ((rc = open_tpm(p, &t, err, errlen)) != 0)
		return rc;
	if ((rc = bcd_tpm_ek(t, BCD_TPM_EK_RSA2048, &p->ek)) != 0) {
		snprintf(err, errlen, "the TPM's endorsement key: %s", bcd_tpm_error(t));
		goto out;
	}
	if ((rc = bcd_tpm_ak(t, &p->ak)) != 0) {
		snprintf(err, errlen, "the TPM's attestation key: %s", bcd_tpm_error(t));
		goto out;
	}
	evidence_of(p, &ev);
	*outlen = bettercompute__attest__v1__tpm_evidence__get_packed_size(&ev);
	if ((*out = malloc(*outlen > 0 ? *outlen : 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	bettercompute__attest__v1__tpm_evidence__pack(&ev, *out);
	p->have_evidence = 1;
out:
	bcd_tpm_close(t);
	if (rc != 0)
		*outlen = 0;
	return rc;
}

/* The challenge's fields within the bounds the TPM client takes. */
static int challenge_ok(const Bettercompute__Attest__V1__TpmChallenge *c, char *err, size_t errlen)
{
	if (c->credential_blob.len == 0 || c->encrypted_secret.len == 0 || c->state.len == 0 ||
	    c->pcr_hash_alg > 0xffff || c->n_pcrs == 0 || c->n_pcrs > BCD_TPM_PCR_COUNT) {
		snprintf(err, errlen,
		         "the server's TPM challenge is malformed (no credential, state or "
		         "PCR selection); report this to the operator");
		return BC_ERR_INVALID;
	}
	for (size_t i = 0; i < c->n_pcrs; i++) {
		if (c->pcrs[i] >= BCD_TPM_PCR_COUNT) {
			snprintf(err, errlen,
			         "the server's TPM challenge asks for PCR %u (0 to 23)",
			         c->pcrs[i]);
			return BC_ERR_INVALID;
		}
	}
	return 0;
}

/* The AK's certification of the join's node key, over sha256(csr), in t. */
static int certify_key(struct tpm_producer *p, struct bcd_tpm *t,
                       const uint8_t csr_sha256[static 32], struct answer_parts *a, char *err,
                       size_t errlen)
{
	struct bcd_tpm_nodekey *nk = NULL;
	int rc;

	if (p->key == NULL || !p->key->in_tpm)
		return 0;
	if (strcmp(p->key->tcti, p->tcti) != 0) {
		snprintf(err, errlen,
		         "the node key is in another TPM (%s) than the attestor's (%s)",
		         p->key->tcti, p->tcti);
		return BC_ERR_CONFLICT;
	}
	if ((rc = bcd_tpm_nodekey_load(t, p->key->unique, &nk)) != 0) {
		snprintf(err, errlen, "the node key in the TPM: %s", bcd_tpm_error(t));
		return rc;
	}
	if (EVP_PKEY_eq(bcd_tpm_nodekey_pkey(nk), p->key->key) != 1) {
		snprintf(err, errlen, "the TPM derives another node key than the CSR's");
		rc = BC_ERR_VERIFY;
	} else if ((rc = bcd_tpm_certify(t, nk, csr_sha256, 32, &a->cert)) != 0) {
		snprintf(err, errlen, "the TPM's attestation key certifying the node key: %s",
		         bcd_tpm_error(t));
	} else {
		const uint8_t *pub = bcd_tpm_nodekey_public(nk, &a->key_pub_len);
		if (pub == NULL || a->key_pub_len > sizeof(a->key_pub)) {
			snprintf(err, errlen, "the node key's public area is out of shape");
			rc = BC_ERR_INVALID;
		} else {
			memcpy(a->key_pub, pub, a->key_pub_len);
			a->certified = 1;
		}
	}
	bcd_tpm_nodekey_free(nk);
	return rc;
}

/* ActivateCredential, the quote over sha256(secret || sha256(csr)), the certification. */
static int run_challenge(struct tpm_producer *p, const Bettercompute__Attest__V1__TpmChallenge *c,
                         const uint8_t csr_sha256[static 32], struct answer_parts *a, char *err,
                         size_t errlen)
{
	struct bcd_tpm *t = NULL;
	uint8_t extra[EXTRA_LEN];
	bc_buf b;
	int rc;

	bc_buf_init(&b, 128);
	if ((rc = open_tpm(p, &t, err, errlen)) != 0)
		return rc;
	if ((rc = bcd_tpm_activate(t, BCD_TPM_EK_RSA2048, c->credential_blob.data,
	                           c->credential_blob.len, c->encrypted_secret.data,
	                           c->encrypted_secret.len, &a->secret, &a->secret_len)) != 0) {
		snprintf(err, errlen, "ActivateCredential (a challenge made for another TPM?): %s",
		         bcd_tpm_error(t));
		goto out;
	}
	if ((rc = bc_buf_put(&b, a->secret, a->secret_len)) != 0 ||
	    (rc = bc_buf_put(&b, csr_sha256, 32)) != 0 || (rc = bc_sha256(b.p, b.len, extra)) != 0)
		goto out;
	if ((rc = bcd_tpm_quote(t, (uint16_t)c->pcr_hash_alg, c->pcrs, c->n_pcrs, extra,
	                        sizeof(extra), &a->quote)) != 0) {
		snprintf(err, errlen, "the quote of PCRs: %s", bcd_tpm_error(t));
		goto out;
	}
	rc = certify_key(p, t, csr_sha256, a, err, errlen);
out:
	if (b.p != NULL)
		OPENSSL_cleanse(b.p, b.len);
	bc_buf_free(&b);
	OPENSSL_cleanse(extra, sizeof(extra));
	bcd_tpm_close(t);
	return rc;
}

static int pack_answer(struct tpm_producer *p, const Bettercompute__Attest__V1__TpmChallenge *c,
                       struct answer_parts *a, uint8_t **out, size_t *outlen)
{
	Bettercompute__Attest__V1__TpmAnswer ans = BETTERCOMPUTE__ATTEST__V1__TPM_ANSWER__INIT;
	Bettercompute__Attest__V1__TpmEvidence ev;
	Bettercompute__Attest__V1__KeyCertification kc =
	    BETTERCOMPUTE__ATTEST__V1__KEY_CERTIFICATION__INIT;
	Bettercompute__Attest__V1__PcrValue vals[BCD_TPM_PCR_COUNT], *ptrs[BCD_TPM_PCR_COUNT];

	evidence_of(p, &ev);
	ans.evidence = &ev;
	ans.state = c->state;
	ans.secret.data = a->secret;
	ans.secret.len = a->secret_len;
	ans.quote.data = a->quote.attest;
	ans.quote.len = a->quote.attest_len;
	ans.quote_signature.data = a->quote.sig;
	ans.quote_signature.len = a->quote.sig_len;
	ans.pcr_hash_alg = a->quote.pcr_hash_alg;
	for (size_t i = 0; i < a->quote.n_pcrs && i < BCD_TPM_PCR_COUNT; i++) {
		bettercompute__attest__v1__pcr_value__init(&vals[i]);
		vals[i].index = a->quote.pcrs[i].index;
		vals[i].digest.data = a->quote.pcrs[i].digest;
		vals[i].digest.len = a->quote.pcrs[i].len;
		ptrs[i] = &vals[i];
	}
	ans.pcrs = ptrs;
	ans.n_pcrs = a->quote.n_pcrs;
	if (a->certified) {
		kc.key_public.data = a->key_pub;
		kc.key_public.len = a->key_pub_len;
		kc.certify_info.data = a->cert.attest;
		kc.certify_info.len = a->cert.attest_len;
		kc.signature.data = a->cert.sig;
		kc.signature.len = a->cert.sig_len;
		ans.node_key = &kc;
	}
	*outlen = bettercompute__attest__v1__tpm_answer__get_packed_size(&ans);
	if ((*out = malloc(*outlen > 0 ? *outlen : 1)) == NULL) {
		*outlen = 0;
		return BC_ERR_NOMEM;
	}
	bettercompute__attest__v1__tpm_answer__pack(&ans, *out);
	return 0;
}

static int round2(void *ctx, const struct bcd_challenge *ch, uint8_t **out, size_t *outlen,
                  char *err, size_t errlen)
{
	struct tpm_producer *p = ctx;
	Bettercompute__Attest__V1__TpmChallenge *c = NULL;
	struct answer_parts a;
	int rc;

	*out = NULL;
	*outlen = 0;
	memset(&a, 0, sizeof(a));
	if (strcmp(ch->attestor, BC_WIRE_ATTESTOR_TPM) != 0 || !p->have_evidence) {
		snprintf(err, errlen, "a %.64s challenge to a tpm join%s", ch->attestor,
		         p->have_evidence ? "" : " before its evidence");
		return BC_ERR_INVALID;
	}
	if (ch->len > BC_WIRE_CHALLENGE_MAX ||
	    (c = bettercompute__attest__v1__tpm_challenge__unpack(NULL, ch->len, ch->payload)) ==
	        NULL) {
		snprintf(err, errlen,
		         "the server's TPM challenge does not decode; report this to "
		         "the operator");
		return BC_ERR_INVALID;
	}
	if ((rc = challenge_ok(c, err, errlen)) == 0 &&
	    (rc = run_challenge(p, c, ch->csr_sha256, &a, err, errlen)) == 0)
		rc = pack_answer(p, c, &a, out, outlen);
	parts_free(&a);
	bettercompute__attest__v1__tpm_challenge__free_unpacked(c, NULL);
	return rc;
}

int bcd_tpm_producer_new(const char *tcti, struct bcd_producer **out, char *err, size_t errlen)
{
	struct bcd_producer *pr = NULL;
	struct tpm_producer *p = NULL;

	*out = NULL;
	if (tcti == NULL || strlen(tcti) >= BCD_TCTI_MAX) {
		snprintf(err, errlen, "--attestor tpm: no TPM named");
		return BC_ERR_INVALID;
	}
	if ((pr = calloc(1, sizeof(*pr))) == NULL || (p = calloc(1, sizeof(*p))) == NULL) {
		free(pr);
		snprintf(err, errlen, "out of memory");
		return BC_ERR_NOMEM;
	}
	snprintf(p->tcti, sizeof(p->tcti), "%s", tcti);
	pr->attestor = BC_WIRE_ATTESTOR_TPM;
	pr->ctx = p;
	pr->evidence = round1;
	pr->answer = round2;
	pr->free = producer_free;
	pr->hold_node_key = hold_node_key;
	*out = pr;
	return 0;
}
