/* tpm: a node tied to its TPM's endorsement key, in two rounds (the go-attestation
 * enrollment flow).
 *
 *   round 1, TpmEvidence: the EK (certificate chained to ek_roots, its key the EK's)
 *   and an attestation key -> a MakeCredential challenge for the AK's name under the
 *   EK, and a state sealed under challengeKey (AES-256-GCM) holding sha256(csr),
 *   sha256(EK), the evidence's digest, the AK's name, sha256(secret) and not_after.
 *   Nothing is written, so any replica finishes the join.
 *
 *   round 2, TpmAnswer: the state opens, for this CSR, in time, for the same
 *   evidence; the secret is the credential's; the AK quoted the PCRs with extraData
 *   sha256(secret || sha256(csr)); the PCR values are the quoted ones and pass the
 *   policy; the AK certified the CSR's key as made in the TPM. Then tpm_place()
 *   decides where it joins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/tpm_internal.h"
#include "attest/tpm_keys.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bettercompute/attest/v1/tpm.pb-c.h"
#include "attest/attest.h"
#include "bc/reasons.h"

#define EVIDENCE_MAX  (64 * 1024)
#define STATE_VERSION 1
#define STATE_AAD     "bettercompute tpm challenge v1"
/* version | csr | ek | evidence | secret hash | not_after | name len | name */
#define STATE_PT_LEN (1 + 32 + 32 + 32 + 32 + 8 + 1 + BC_TPM_NAME_MAX)
#define STATE_LEN    (12 + STATE_PT_LEN + 16)
#define SECRET_LEN   32

static const char *const default_roles[] = {"node"};

static void proven_free(struct tpm_proven *p)
{
	EVP_PKEY_free(p->ak_key);
	free(p->issuer);
	memset(p, 0, sizeof(*p));
}

/* What check() leaves for verify(): round 1's challenge, or round 2's proven EK. */
struct tpm_check {
	int round;
	uint8_t *challenge; /* round 1: a packed TpmChallenge */
	size_t challenge_len;
	int64_t not_after_ms; /* round 1: the challenge's; round 2: the state's */
	struct tpm_proven p;  /* round 2 */
};

static void check_free(struct tpm_check *ck)
{
	if (ck == NULL)
		return;
	free(ck->challenge);
	proven_free(&ck->p);
	free(ck);
}

/* H(len || bytes) over every field: the evidence as round 1 saw it. */
static int evidence_digest(const Bettercompute__Attest__V1__TpmEvidence *ev, uint8_t out[32])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	const ProtobufCBinaryData *f[3] = {&ev->ek_public, &ev->ek_certificate, &ev->ak_public};
	uint8_t n[8];
	int ok = c != NULL && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;

	for (size_t i = 0; ok && i < 3 + ev->n_ek_intermediates; i++) {
		const ProtobufCBinaryData *b = i < 3 ? f[i] : &ev->ek_intermediates[i - 3];
		for (int k = 0; k < 8; k++)
			n[k] = (uint8_t)((uint64_t)b->len >> (56 - 8 * k));
		ok = EVP_DigestUpdate(c, n, 8) == 1 && EVP_DigestUpdate(c, b->data, b->len) == 1;
	}
	ok = ok && EVP_DigestFinal_ex(c, out, NULL) == 1;
	EVP_MD_CTX_free(c);
	return ok ? 0 : bc_ossl_err();
}

/* The EK certificate's issuer (RFC 2253) and serial (lower-case hex) for resolve. */
static int cert_ids(X509 *x, struct tpm_proven *p)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	BIO *b = BIO_new(BIO_s_mem());
	char *hex = NULL, *mem;
	long n;
	int rc = BC_ERR_NOMEM;

	if (bn == NULL || b == NULL || (hex = BN_bn2hex(bn)) == NULL)
		goto out;
	if (X509_NAME_print_ex(b, X509_get_issuer_name(x), 0, XN_FLAG_RFC2253) < 0 ||
	    (n = BIO_get_mem_data(b, &mem)) <= 0 || (p->issuer = strndup(mem, (size_t)n)) == NULL)
		goto out;
	{
		const char *h = hex;
		size_t k = 0;
		while (*h == '0' && h[1])
			h++;
		for (; *h && k < sizeof(p->serial) - 1; h++)
			p->serial[k++] = (char)(*h >= 'A' && *h <= 'F' ? *h + 32 : *h);
		p->serial[k] = 0;
	}
	rc = 0;
out:
	OPENSSL_free(hex);
	BN_free(bn);
	BIO_free(b);
	return rc;
}

/* The EK certificate chains to ek_roots and certifies the EK (at the process clock:
 * this runs before the transaction). */
static int check_ek_cert(const struct tpm_cfg *c, const struct bc_join_input *in,
                         const Bettercompute__Attest__V1__TpmEvidence *ev, struct tpm_proven *p,
                         const char **reason)
{
	const uint8_t *inter[8];
	size_t lens[8];
	EVP_PKEY *ek_key = NULL;
	X509 *cert = NULL;
	int rc;

	if (ev->ek_certificate.len == 0) {
		if (!c->allow_uncertified)
			*reason = BC_R_EK_UNCERTIFIED;
		return 0;
	}
	if (ev->n_ek_intermediates > 8) {
		*reason = BC_R_TPM_EVIDENCE_MALFORMED;
		return 0;
	}
	for (size_t i = 0; i < ev->n_ek_intermediates; i++) {
		inter[i] = ev->ek_intermediates[i].data;
		lens[i] = ev->ek_intermediates[i].len;
	}
	if (bc_tpm_public_key(&p->ek, &ek_key) != 0) {
		*reason = BC_R_EK_MALFORMED;
		return 0;
	}
	rc = bc_tpm_ek_cert_verify(c->roots, c->n_roots, ev->ek_certificate.data,
	                           ev->ek_certificate.len, inter, lens, ev->n_ek_intermediates,
	                           ek_key, in->now_ms, &cert);
	if (rc == BC_ERR_CONFLICT)
		*reason = BC_R_EK_CERTIFICATE_KEY;
	else if (rc == BC_ERR_VERIFY || rc == BC_ERR_INVALID || rc == BC_ERR_LIMIT)
		*reason = BC_R_EK_CERTIFICATE_CHAIN;
	else if (rc == 0)
		rc = cert_ids(cert, p);
	if (*reason)
		rc = 0;
	X509_free(cert);
	EVP_PKEY_free(ek_key);
	return rc;
}

/* Round 1's checks, run again in round 2 on the evidence the answer carries. */
static int check_evidence(const struct tpm_cfg *c, const struct bc_join_input *in,
                          const Bettercompute__Attest__V1__TpmEvidence *ev, struct tpm_proven *p,
                          const char **reason)
{
	int rc;

	if (bc_tpm_public_parse(ev->ek_public.data, ev->ek_public.len, &p->ek) != 0 ||
	    bc_tpm_check_ek(&p->ek) != 0) {
		*reason = BC_R_EK_MALFORMED;
		return 0;
	}
	if (bc_tpm_public_parse(ev->ak_public.data, ev->ak_public.len, &p->ak) != 0) {
		*reason = BC_R_AK_MALFORMED;
		return 0;
	}
	/* the statement names the AK as urn:bc:tpm-ak:sha256:...: a SHA-256 name */
	if (bc_tpm_check_ak(&p->ak) != 0 || p->ak.nameAlg != TPM2_ALG_SHA256) {
		*reason = BC_R_AK_ATTRIBUTES;
		return 0;
	}
	if ((rc = check_ek_cert(c, in, ev, p, reason)) != 0 || *reason)
		return rc;
	if (bc_tpm_public_key(&p->ak, &p->ak_key) != 0) {
		*reason = BC_R_AK_MALFORMED;
		return 0;
	}
	if ((rc = bc_sha256(ev->ek_public.data, ev->ek_public.len, p->ek_sha256)) != 0 ||
	    (rc = bc_tpm_name(&p->ak, ev->ak_public.data, ev->ak_public.len, p->ak_name,
	                      &p->ak_name_len)) != 0 ||
	    (rc = evidence_digest(ev, p->evidence_sha256)) != 0)
		return rc;
	bc_hex_encode_to(p->ek_sha256, 32, p->ek_hex);
	return 0;
}

static int seal_state(const struct bc_join_input *in, const struct tpm_proven *p,
                      const uint8_t secret[SECRET_LEN], int64_t not_after, uint8_t out[STATE_LEN])
{
	uint8_t pt[STATE_PT_LEN], *q = pt;
	int rc;

	memset(pt, 0, sizeof(pt));
	*q++ = STATE_VERSION;
	memcpy(q, in->csr_sha256, 32);
	memcpy(q + 32, p->ek_sha256, 32);
	memcpy(q + 64, p->evidence_sha256, 32);
	if ((rc = bc_sha256(secret, SECRET_LEN, q + 96)) != 0)
		return rc;
	q += 128;
	for (int k = 0; k < 8; k++)
		*q++ = (uint8_t)((uint64_t)not_after >> (56 - 8 * k));
	*q++ = (uint8_t)p->ak_name_len;
	memcpy(q, p->ak_name, p->ak_name_len);
	if ((rc = bc_random(out, 12)) == 0)
		rc = bc_aes256gcm_seal(in->challenge_key, out, STATE_AAD, strlen(STATE_AAD), pt,
		                       sizeof(pt), out + 12);
	OPENSSL_cleanse(pt, sizeof(pt));
	return rc;
}

/* Round 1's answer, made before the transaction: a credential for the AK's name
 * under the EK and the sealed state, packed as a TpmChallenge into ck. */
static int challenge(const struct tpm_cfg *c, const struct bc_join_input *in,
                     const struct tpm_proven *p, struct tpm_check *ck)
{
	Bettercompute__Attest__V1__TpmChallenge ch = BETTERCOMPUTE__ATTEST__V1__TPM_CHALLENGE__INIT;
	uint8_t secret[SECRET_LEN], state[STATE_LEN], *idobj = NULL, *encsec = NULL;
	size_t id_len = 0, enc_len = 0;
	int64_t not_after = in->now_ms + c->challenge_ttl_ms;
	uint32_t pcrs[TPM_PCR_MAX];
	int rc;

	if ((rc = bc_random(secret, sizeof(secret))) != 0 ||
	    (rc = bc_tpm_make_credential(&p->ek, p->ak_name, p->ak_name_len, secret, sizeof(secret),
	                                 &idobj, &id_len, &encsec, &enc_len)) != 0 ||
	    (rc = seal_state(in, p, secret, not_after, state)) != 0)
		goto out;
	for (size_t i = 0; i < c->n_pcrs; i++)
		pcrs[i] = c->pcrs[i];
	ch.credential_blob.data = idobj;
	ch.credential_blob.len = id_len;
	ch.encrypted_secret.data = encsec;
	ch.encrypted_secret.len = enc_len;
	ch.state.data = state;
	ch.state.len = sizeof(state);
	ch.pcr_hash_alg = c->pcr_alg;
	ch.pcrs = pcrs;
	ch.n_pcrs = c->n_pcrs;
	ck->challenge_len = bettercompute__attest__v1__tpm_challenge__get_packed_size(&ch);
	if ((ck->challenge = malloc(ck->challenge_len)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	bettercompute__attest__v1__tpm_challenge__pack(&ch, ck->challenge);
	ck->not_after_ms = not_after;
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	free(idobj);
	free(encsec);
	return rc;
}

/* The sealed state, checked against this request, the clock and the evidence it
 * carries; its not_after goes to verify(), which compares it with database time. */
static int open_state(const struct bc_join_input *in, const ProtobufCBinaryData *st,
                      const struct tpm_proven *p, uint8_t secret_sha256[32], int64_t *not_after,
                      const char **reason)
{
	uint8_t pt[STATE_PT_LEN];
	const uint8_t *q = pt + 1;

	*not_after = 0;
	if (st->len != STATE_LEN ||
	    bc_aes256gcm_open(in->challenge_key, st->data, STATE_AAD, strlen(STATE_AAD),
	                      st->data + 12, STATE_LEN - 12, pt) != 0 ||
	    pt[0] != STATE_VERSION) {
		*reason = BC_R_CHALLENGE_STATE;
		return 0;
	}
	for (int k = 0; k < 8; k++)
		*not_after = (int64_t)(((uint64_t)*not_after << 8) | q[128 + k]);
	if (!bc_ct_equal(q, in->csr_sha256, 32))
		*reason = BC_R_CHALLENGE_OTHER_CSR;
	else if (in->now_ms > *not_after)
		/* by the process clock here, so that a late answer costs no quote check;
		 * verify() decides again at database time */
		*reason = BC_R_CHALLENGE_EXPIRED;
	else if (!bc_ct_equal(q + 32, p->ek_sha256, 32) ||
	         !bc_ct_equal(q + 64, p->evidence_sha256, 32) || q[136] != p->ak_name_len ||
	         !bc_ct_equal(q + 137, p->ak_name, p->ak_name_len))
		*reason = BC_R_CHALLENGE_EVIDENCE;
	memcpy(secret_sha256, q + 96, 32);
	OPENSSL_cleanse(pt, sizeof(pt));
	return 0;
}

static int check_secret(const Bettercompute__Attest__V1__TpmAnswer *a, const uint8_t want[32],
                        const char **reason)
{
	uint8_t d[32];
	int rc;

	if (a->secret.len != SECRET_LEN) {
		*reason = BC_R_CREDENTIAL_SECRET;
		return 0;
	}
	if ((rc = bc_sha256(a->secret.data, a->secret.len, d)) != 0)
		return rc;
	if (!bc_ct_equal(d, want, 32))
		*reason = BC_R_CREDENTIAL_SECRET;
	return 0;
}

/* The PCR values supplied are exactly the quote's selection, in order, and hash to
 * its digest; then the policy. */
static int check_pcrs(const struct tpm_cfg *c, const Bettercompute__Attest__V1__TpmAnswer *a,
                      const TPMS_QUOTE_INFO *qi, uint16_t hash, const struct tpm_proven *p,
                      const char **reason)
{
	const uint8_t *values[TPM_PCR_MAX];
	uint8_t d[EVP_MAX_MD_SIZE];
	uint32_t sel[TPM_PCR_MAX];
	size_t n = 0, dl = 0, hs = bc_tpm_hash_size(c->pcr_alg);
	int rc;

	if (a->pcr_hash_alg != c->pcr_alg ||
	    bc_tpm_selection(&qi->pcrSelect, c->pcr_alg, c->pcrs, c->n_pcrs, sel, &n) != 0 ||
	    a->n_pcrs != n) {
		*reason = BC_R_QUOTE_PCR_SELECTION;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (a->pcrs[i] == NULL || a->pcrs[i]->index != sel[i]) {
			*reason = BC_R_QUOTE_PCR_SELECTION;
			return 0;
		}
		if (a->pcrs[i]->digest.len != hs) {
			*reason = BC_R_QUOTE_PCR_DIGEST;
			return 0;
		}
		values[i] = a->pcrs[i]->digest.data;
	}
	if ((rc = bc_tpm_pcr_digest(c->pcr_alg, hash, values, n, d, &dl)) != 0)
		return rc;
	if (qi->pcrDigest.size != dl || !bc_ct_equal(qi->pcrDigest.buffer, d, dl)) {
		*reason = BC_R_QUOTE_PCR_DIGEST;
		return 0;
	}
	return tpm_pcr_policy(c, p->ek_hex, sel, values, n, reason);
}

/* The quote's shape, the AK's signature, then the nonce it commits to. */
static const char *quote_shape(const Bettercompute__Attest__V1__TpmAnswer *a,
                               const struct tpm_proven *p, TPMS_ATTEST *q, TPMT_SIGNATURE *sig)
{
	if (bc_tpm_attest_parse(a->quote.data, a->quote.len, q) != 0 ||
	    bc_tpm_signature_parse(a->quote_signature.data, a->quote_signature.len, sig) != 0)
		return BC_R_QUOTE_MALFORMED;
	if (bc_tpm_signature_verify(p->ak_key, sig, a->quote.data, a->quote.len) != 0)
		return BC_R_QUOTE_SIGNATURE;
	if (q->magic != TPM2_GENERATED_VALUE)
		return BC_R_QUOTE_MAGIC;
	if (q->type != TPM2_ST_ATTEST_QUOTE)
		return BC_R_QUOTE_TYPE;
	return NULL;
}

static int check_quote(const struct tpm_cfg *c, const struct bc_join_input *in,
                       const Bettercompute__Attest__V1__TpmAnswer *a, const struct tpm_proven *p,
                       const char **reason)
{
	uint8_t nonce[32], buf[SECRET_LEN + 32];
	TPMS_ATTEST q;
	TPMT_SIGNATURE sig;
	int rc;

	if ((*reason = quote_shape(a, p, &q, &sig)) != NULL)
		return 0;
	memcpy(buf, a->secret.data, SECRET_LEN);
	memcpy(buf + SECRET_LEN, in->csr_sha256, 32);
	rc = bc_sha256(buf, sizeof(buf), nonce);
	OPENSSL_cleanse(buf, sizeof(buf));
	if (rc != 0)
		return rc;
	if (q.extraData.size != 32 || !bc_ct_equal(q.extraData.buffer, nonce, 32)) {
		*reason = BC_R_QUOTE_NONCE;
		return 0;
	}
	return check_pcrs(c, a, &q.attested.quote, bc_tpm_signature_hash(&sig), p, reason);
}

const char *bc_tpm_certify_reason(enum bc_tpm_certify_result r)
{
	switch (r) {
	case BC_TPM_CERTIFY_OK: return NULL;
	case BC_TPM_CERTIFY_SIGNATURE: return BC_R_NODE_KEY_SIGNATURE;
	case BC_TPM_CERTIFY_NONCE: return BC_R_NODE_KEY_NONCE;
	case BC_TPM_CERTIFY_NAME: return BC_R_NODE_KEY_NAME;
	case BC_TPM_CERTIFY_ATTRIBUTES: return BC_R_NODE_KEY_ATTRIBUTES;
	case BC_TPM_CERTIFY_NOT_CSR: return BC_R_NODE_KEY_NOT_CSR;
	case BC_TPM_CERTIFY_MALFORMED:
	default: return BC_R_NODE_KEY_MALFORMED;
	}
}

/* The AK's TPM2_Certify of the CSR's key, qualified by sha256(csr). */
static int check_node_key(const struct bc_join_input *in,
                          const Bettercompute__Attest__V1__KeyCertification *k,
                          const struct tpm_proven *p, const char **reason)
{
	enum bc_tpm_certify_result r;
	int rc;

	if ((rc = bc_tpm_check_certify(p->ak_key, k->key_public.data, k->key_public.len,
	                               k->certify_info.data, k->certify_info.len, k->signature.data,
	                               k->signature.len, in->csr_sha256, in->csr_spki_sha256,
	                               &r)) == 0)
		*reason = bc_tpm_certify_reason(r);
	return rc;
}

static int check_answer(const struct tpm_cfg *c, const struct bc_join_input *in,
                        const Bettercompute__Attest__V1__TpmAnswer *a, struct tpm_check *ck,
                        const char **reason)
{
	struct tpm_proven *p = &ck->p;
	uint8_t secret_sha[32];
	int rc;

	ck->round = 2;
	if ((rc = check_evidence(c, in, a->evidence, p, reason)) != 0 || *reason ||
	    (rc = open_state(in, &a->state, p, secret_sha, &ck->not_after_ms, reason)) != 0 ||
	    *reason || (rc = check_secret(a, secret_sha, reason)) != 0 || *reason ||
	    (rc = check_quote(c, in, a, p, reason)) != 0 || *reason)
		return rc;
	if (a->node_key != NULL) {
		if ((rc = check_node_key(in, a->node_key, p, reason)) != 0 || *reason)
			return rc;
		p->certified = 1;
	} else if (!c->node_key_any) {
		*reason = BC_R_NODE_KEY_NOT_CERTIFIED;
	}
	return 0;
}

static int check_evidence_round(const struct tpm_cfg *c, const struct bc_join_input *in,
                                const Bettercompute__Attest__V1__TpmEvidence *ev,
                                struct tpm_check *ck, const char **reason)
{
	int rc;

	ck->round = 1;
	if ((rc = check_evidence(c, in, ev, &ck->p, reason)) != 0 || *reason)
		return rc;
	return challenge(c, in, &ck->p, ck);
}

/* Both messages start with field 1 of wire type 2. A TpmAnswer's evidence is a
 * message; a TpmEvidence's field 1 is a TPMT_PUBLIC, whose first byte (0x00) is
 * never a valid protobuf tag: so an answer never reads as evidence and back. */
static int decode_and_check(const struct tpm_cfg *c, const struct bc_join_input *in,
                            struct tpm_check *ck, const char **reason)
{
	Bettercompute__Attest__V1__TpmAnswer *a = NULL;
	Bettercompute__Attest__V1__TpmEvidence *ev = NULL;
	int rc = 0;

	if (in->attestation_len == 0 || in->attestation_len > EVIDENCE_MAX ||
	    in->challenge_key == NULL) {
		*reason = BC_R_TPM_EVIDENCE_MALFORMED;
		return 0;
	}
	a = bettercompute__attest__v1__tpm_answer__unpack(NULL, in->attestation_len,
	                                                  in->attestation);
	if (a != NULL && a->evidence != NULL)
		rc = check_answer(c, in, a, ck, reason);
	else if ((ev = bettercompute__attest__v1__tpm_evidence__unpack(NULL, in->attestation_len,
	                                                               in->attestation)) != NULL)
		rc = check_evidence_round(c, in, ev, ck, reason);
	else
		*reason = BC_R_TPM_EVIDENCE_MALFORMED;
	if (a != NULL)
		bettercompute__attest__v1__tpm_answer__free_unpacked(a, NULL);
	if (ev != NULL)
		bettercompute__attest__v1__tpm_evidence__free_unpacked(ev, NULL);
	return rc;
}

/* Before the transaction: every signature, chain, credential and quote. */
static int check(struct bc_attestor *self, const struct bc_join_input *in,
                 struct bc_attest_outcome *out, void **state)
{
	const struct tpm_cfg *c = self->ctx;
	struct tpm_check *ck;
	const char *why = NULL;
	int rc;

	if (c == NULL)
		return BC_ERR_CONFIG;
	if ((ck = calloc(1, sizeof(*ck))) == NULL)
		return BC_ERR_NOMEM;
	*state = ck;
	if ((rc = decode_and_check(c, in, ck, &why)) == 0 && why)
		bc_refuse(out, why);
	return rc;
}

static void release(struct bc_attestor *self, void *state)
{
	(void)self;
	check_free(state);
}

/* Inside the transaction: round 1 answers its challenge; round 2, in time, is placed. */
static int verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                  struct bc_attest_outcome *out)
{
	const struct tpm_cfg *c = self->ctx;
	const struct tpm_check *ck = in->check_state;
	const char *why = NULL;
	int rc;

	if (c == NULL || ck == NULL)
		return BC_ERR_INTERNAL;
	if (ck->round == 2) {
		if (in->now_ms > ck->not_after_ms) {
			bc_refuse(out, BC_R_CHALLENGE_EXPIRED);
			return 0;
		}
		if ((rc = tpm_place(tx, c, in, &ck->p, out, &why)) == 0 && why)
			bc_refuse(out, why);
		return rc;
	}
	/* the deferral's copy is JoinService's: a replayed transaction asks again */
	if ((out->deferral.challenge = malloc(ck->challenge_len)) == NULL)
		return BC_ERR_NOMEM;
	memcpy(out->deferral.challenge, ck->challenge, ck->challenge_len);
	out->deferral.challenge_len = ck->challenge_len;
	out->kind = BC_OUTCOME_DEFER;
	out->deferral.kind = BC_DEFER_CHALLENGE;
	out->deferral.not_after_ms = ck->not_after_ms;
	return 0;
}

static int configure(struct bc_attestor *self, const bc_toml *cfg, const char *table, char *err,
                     size_t errlen)
{
	struct tpm_cfg *c = NULL;
	int rc;

	if ((rc = tpm_cfg_load(cfg, table, &c, err, errlen)) != 0)
		return rc;
	tpm_cfg_free(self->ctx);
	self->ctx = c;
	self->roles = c->roles;
	self->n_roles = c->n_roles;
	return 0;
}

static void destroy(struct bc_attestor *self)
{
	tpm_cfg_free(self->ctx);
	self->ctx = NULL;
}

static const struct bc_attestor tpm = {
    .abi = BC_ATTESTOR_ABI,
    .id = BC_WIRE_ATTESTOR_TPM,
    .roles = default_roles,
    .n_roles = 1,
    .configure = configure,
    .verify = verify,
    .destroy = destroy,
    .check = check,
    .release = release,
};

const struct bc_attestor *bc_attestor_tpm(void)
{
	return &tpm;
}
