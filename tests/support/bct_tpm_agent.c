/* The swtpm-backed agent of the tpm attestor's tests, by tpm2-tools: its keys are made
 * once (agent_prepare), then each exchange reads and writes files of the TPM's
 * directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bct_tpm_agent.h"

void bct_blob_free(struct bct_blob *b)
{
	free(b->p);
	b->p = NULL;
	b->n = 0;
}

struct bct_blob bct_blob_dup(const void *p, size_t n)
{
	struct bct_blob b = {malloc(n ? n : 1), n};
	memcpy(b.p, p, n);
	return b;
}

struct bct_blob bct_tpm_file(struct bct_tpm_agent *ag, const char *name)
{
	struct bct_blob b;
	b.p = bct_tpm_read(&ag->tpm, name, &b.n);
	assert_non_null(b.p);
	return b;
}

void bct_tpm_answer_free(struct bct_tpm_answer *a)
{
	bct_blob_free(&a->state);
	bct_blob_free(&a->secret);
	bct_blob_free(&a->quote);
	bct_blob_free(&a->qsig);
	bct_blob_free(&a->nk_pub);
	bct_blob_free(&a->cinfo);
	bct_blob_free(&a->csig);
}

struct bct_blob bct_tpm_tpmt(struct bct_tpm_agent *ag, const char *name)
{
	struct bct_blob f = bct_tpm_file(ag, name), b;
	assert_true(f.n > 2);
	b = bct_blob_dup(f.p + 2, f.n - 2);
	bct_blob_free(&f);
	return b;
}

static int agent_prepare(struct bct_tpm_agent *ag)
{
	uint8_t d[32];
	char *h;

	if (bct_tpm_sh(&ag->tpm,
	               "tpm2_readpublic -c " BCT_EK_HANDLE " -o ek.pub -f tss && "
	               "tpm2_nvread 0x01c00002 -o ekcert.der && "
	               "openssl x509 -in ca/issuercert.pem -outform der -out inter.der && "
	               "tpm2_createak -C " BCT_EK_HANDLE " -c ak.ctx -G ecc -g sha256 -s ecdsa "
	               "-u ak.pub -n ak.name -f tss && "
	               "tpm2_evictcontrol -C o -c ak.ctx " BCT_AK_HANDLE) != 0 ||
	    bct_tpm_sh(&ag->tpm,
	               "tpm2_createprimary -C o -g sha256 -G ecc256:ecdsa-sha256 -a '" BCT_NK_ATTRS
	               "' -c nk.ctx && tpm2_evictcontrol -C o -c nk.ctx " BCT_NK_HANDLE) != 0 ||
	    bct_tpm_sh(
	        &ag->tpm,
	        "tpm2_createprimary -C o -g sha256 -G ecc256 -a '" BCT_NK_ATTRS
	        "|decrypt' -c nkd.ctx && tpm2_evictcontrol -C o -c nkd.ctx " BCT_NK_DECRYPT) != 0 ||
	    bct_tpm_sh(&ag->tpm,
	               "tpm2_createprimary -C e -g sha256 -G ecc256:ecdsa-sha256 -a '" BCT_NK_ATTRS
	               "' -c nko.ctx && tpm2_evictcontrol -C o -c nko.ctx " BCT_NK_OTHER) != 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		static const char *const h_[] = {BCT_NK_HANDLE, BCT_NK_DECRYPT, BCT_NK_OTHER};
		if (bct_tpm_sh(&ag->tpm,
		               "tpm2_readpublic -c %s -o %s.pub -f tss && tpm2_readpublic -c %s "
		               "-o %s.pem -f pem",
		               h_[i], h_[i], h_[i], h_[i]) != 0)
			return -1;
	}
	ag->ek = bct_tpm_tpmt(ag, "ek.pub");
	ag->ak = bct_tpm_tpmt(ag, "ak.pub");
	ag->ek_cert = bct_tpm_file(ag, "ekcert.der");
	ag->inter = bct_tpm_file(ag, "inter.der");
	ag->made[0] = ag->ek, ag->made[1] = ag->ak, ag->made[2] = ag->ek_cert;
	ag->made[3] = ag->inter;
	struct bct_blob nm = bct_tpm_file(ag, "ak.name");
	memcpy(ag->ak_name, nm.p, nm.n);
	ag->ak_name_len = nm.n;
	bct_blob_free(&nm);
	if (bc_sha256(ag->ek.p, ag->ek.n, d) != 0)
		return -1;
	h = bct_hex(d, 32);
	snprintf(ag->ek_hex, sizeof(ag->ek_hex), "%s", h);
	free(h);
	return 0;
}

struct bct_blob bct_tpm_csr(struct bct_tpm_agent *ag, const char *handle, const char *cn)
{
	char pem_name[64];
	struct bct_blob pem, sig, out = {0};
	X509_REQ *req = X509_REQ_new();
	X509_NAME *name = X509_NAME_new();
	X509_ALGOR *alg = X509_ALGOR_new();
	ASN1_BIT_STRING *bits = ASN1_BIT_STRING_new();
	uint8_t *tbs = NULL, d[32];
	EVP_PKEY *key;
	BIO *bio;
	int n;

	snprintf(pem_name, sizeof(pem_name), "%s.pem", handle);
	pem = bct_tpm_file(ag, pem_name);
	bio = BIO_new_mem_buf(pem.p, (int)pem.n);
	key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	assert_non_null(key);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	assert_int_equal(X509_REQ_set_subject_name(req, name), 1);
	assert_int_equal(X509_REQ_set_pubkey(req, key), 1);
	assert_true((n = i2d_re_X509_REQ_tbs(req, &tbs)) > 0);
	assert_int_equal(bc_sha256(tbs, (size_t)n, d), 0);
	assert_int_equal(bct_tpm_write(&ag->tpm, "csr.dig", d, 32), 0);
	assert_int_equal(bct_tpm_sh(&ag->tpm,
	                            "rm -f csr.sig && tpm2_sign -c %s -g sha256 -s ecdsa -d "
	                            "-f plain -o csr.sig csr.dig",
	                            handle),
	                 0);
	sig = bct_tpm_file(ag, "csr.sig");
	X509_ALGOR_set0(alg, OBJ_nid2obj(NID_ecdsa_with_SHA256), V_ASN1_UNDEF, NULL);
	assert_int_equal(X509_REQ_set1_signature_algo(req, alg), 1);
	assert_int_equal(ASN1_BIT_STRING_set(bits, sig.p, (int)sig.n), 1);
	/* no unused bits: left to itself, OpenSSL counts a signature's trailing zero bits as
	 * unused and encodes a BIT STRING that no longer verifies */
	bits->flags &= ~(ASN1_STRING_FLAG_BITS_LEFT | 0x07);
	bits->flags |= ASN1_STRING_FLAG_BITS_LEFT;
	X509_REQ_set0_signature(req, bits);
	assert_int_equal(X509_REQ_verify(req, key), 1);
	uint8_t *der = NULL;
	assert_true((n = i2d_X509_REQ(req, &der)) > 0);
	out = bct_blob_dup(der, (size_t)n);
	OPENSSL_free(der);
	OPENSSL_free(tbs);
	X509_ALGOR_free(alg);
	X509_NAME_free(name);
	X509_REQ_free(req);
	EVP_PKEY_free(key);
	BIO_free(bio);
	bct_blob_free(&pem);
	bct_blob_free(&sig);
	EVP_PKEY *chk = NULL;
	assert_int_equal(bc_csr_check(out.p, out.n, &chk), 0);
	EVP_PKEY_free(chk);
	return out;
}

/* ev from ag's fields; im holds the intermediate ev points to. */
static void evidence_fill(const struct bct_tpm_agent *ag,
                          Bettercompute__Attest__V1__TpmEvidence *ev, ProtobufCBinaryData *im)
{
	*im = (ProtobufCBinaryData){ag->inter.n, ag->inter.p};
	ev->ek_public = (ProtobufCBinaryData){ag->ek.n, ag->ek.p};
	ev->ek_certificate = (ProtobufCBinaryData){ag->ek_cert.n, ag->ek_cert.p};
	ev->n_ek_intermediates = ag->inter.n ? 1 : 0; /* none when the test cleared it */
	ev->ek_intermediates = ag->inter.n ? im : NULL;
	ev->ak_public = (ProtobufCBinaryData){ag->ak.n, ag->ak.p};
}

uint8_t *bct_tpm_evidence(struct bct_tpm_agent *ag, size_t *len)
{
	Bettercompute__Attest__V1__TpmEvidence ev = BETTERCOMPUTE__ATTEST__V1__TPM_EVIDENCE__INIT;
	ProtobufCBinaryData im;
	uint8_t *out;

	evidence_fill(ag, &ev, &im);
	*len = bettercompute__attest__v1__tpm_evidence__get_packed_size(&ev);
	out = malloc(*len);
	bettercompute__attest__v1__tpm_evidence__pack(&ev, out);
	return out;
}

void bct_tpm_certify(struct bct_tpm_agent *ag, const char *obj, const uint8_t q[32],
                     struct bct_tpm_answer *a)
{
	uint8_t cmd[128], *p = cmd + 10;
	unsigned long oh = strtoul(obj, NULL, 16), sh = strtoul(BCT_AK_HANDLE, NULL, 16);
	static const uint8_t pw[9] = {0x40, 0, 0, 0x09, 0, 0, 0, 0, 0};
	struct bct_blob rsp;
	size_t n;

	for (int k = 0; k < 4; k++)
		*p++ = (uint8_t)(oh >> (24 - 8 * k));
	for (int k = 0; k < 4; k++)
		*p++ = (uint8_t)(sh >> (24 - 8 * k));
	*p++ = 0, *p++ = 0, *p++ = 0, *p++ = 18;
	memcpy(p, pw, 9), p += 9;
	memcpy(p, pw, 9), p += 9;
	*p++ = 0, *p++ = 32;
	memcpy(p, q, 32), p += 32;
	*p++ = 0x00, *p++ = 0x10; /* TPM_ALG_NULL: the key's scheme */
	n = (size_t)(p - cmd);
	uint8_t hdr[10] = {0x80, 0x02, 0, 0, (uint8_t)(n >> 8), (uint8_t)n, 0, 0, 0x01, 0x48};
	memcpy(cmd, hdr, 10);
	assert_int_equal(bct_tpm_write(&ag->tpm, "certify.cmd", cmd, n), 0);
	assert_int_equal(bct_tpm_sh(&ag->tpm, "tpm2_send -o certify.rsp < certify.cmd"), 0);
	rsp = bct_tpm_file(ag, "certify.rsp");
	assert_true(rsp.n > 16);
	assert_memory_equal(rsp.p + 6, "\0\0\0\0", 4); /* TPM_RC_SUCCESS */
	size_t psize =
	    (size_t)rsp.p[10] << 24 | (size_t)rsp.p[11] << 16 | (size_t)rsp.p[12] << 8 | rsp.p[13];
	size_t alen = (size_t)rsp.p[14] << 8 | rsp.p[15];
	assert_true(16 + alen <= rsp.n && psize > 2 + alen);
	bct_blob_free(&a->cinfo);
	bct_blob_free(&a->csig);
	a->cinfo = bct_blob_dup(rsp.p + 16, alen);
	a->csig = bct_blob_dup(rsp.p + 16 + alen, psize - 2 - alen);
	bct_blob_free(&rsp);
}

void bct_tpm_answer_make(struct bct_tpm_agent *ag,
                         const Bettercompute__Attest__V1__TpmChallenge *ch,
                         const struct bct_blob *csr, const char *nk, struct bct_tpm_answer *a)
{
	static const uint8_t magic[8] = {0xba, 0xdc, 0xc0, 0xde, 0, 0, 0, 1};
	uint8_t cred[4096], d[32], buf[64], nonce[32];
	char list[128] = "sha256:", *hex, nkpub[64];
	size_t off = 0;
	struct bct_blob pcrs;

	memset(a, 0, sizeof(*a));
	memcpy(cred, magic, 8);
	memcpy(cred + 8, ch->credential_blob.data, ch->credential_blob.len);
	off = 8 + ch->credential_blob.len;
	memcpy(cred + off, ch->encrypted_secret.data, ch->encrypted_secret.len);
	off += ch->encrypted_secret.len;
	assert_int_equal(bct_tpm_write(&ag->tpm, "cred.in", cred, off), 0);
	assert_int_equal(bct_tpm_sh(&ag->tpm,
	                            "rm -f cred.out && tpm2_startauthsession --policy-session "
	                            "-S s.ctx && tpm2_policysecret -S s.ctx -c e && "
	                            "tpm2_activatecredential -c " BCT_AK_HANDLE " -C " BCT_EK_HANDLE
	                            " -i cred.in -o cred.out -P session:s.ctx"),
	                 0);
	a->secret = bct_tpm_file(ag, "cred.out");
	a->state = bct_blob_dup(ch->state.data, ch->state.len);
	assert_int_equal(ch->pcr_hash_alg, 0x000B);
	for (size_t i = 0; i < ch->n_pcrs; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%u", i ? "," : "",
		         ch->pcrs[i]);
	assert_int_equal(bc_sha256(csr->p, csr->n, d), 0);
	memcpy(buf, a->secret.p, 32);
	memcpy(buf + 32, d, 32);
	assert_int_equal(bc_sha256(buf, 64, nonce), 0);
	hex = bct_hex(nonce, 32);
	assert_int_equal(bct_tpm_sh(&ag->tpm,
	                            "tpm2_pcrread %s -o pcrs.bin && tpm2_quote -c " BCT_AK_HANDLE
	                            " -l %s -q %s -m quote.msg -s quote.sig -g sha256",
	                            list, list, hex),
	                 0);
	free(hex);
	a->quote = bct_tpm_file(ag, "quote.msg");
	a->qsig = bct_tpm_file(ag, "quote.sig");
	pcrs = bct_tpm_file(ag, "pcrs.bin");
	assert_int_equal(pcrs.n, 32 * ch->n_pcrs);
	for (size_t i = 0; i < ch->n_pcrs; i++) {
		a->idx[i] = ch->pcrs[i];
		memcpy(a->pcrs[i], pcrs.p + 32 * i, 32);
	}
	a->n_pcrs = ch->n_pcrs;
	bct_blob_free(&pcrs);
	if (nk == NULL)
		return;
	a->has_nk = 1;
	snprintf(nkpub, sizeof(nkpub), "%s.pub", nk);
	a->nk_pub = bct_tpm_tpmt(ag, nkpub);
	bct_tpm_certify(ag, nk, d, a);
}

uint8_t *bct_tpm_answer_pack(struct bct_tpm_agent *ag, const struct bct_tpm_answer *a, size_t *len)
{
	Bettercompute__Attest__V1__TpmEvidence ev = BETTERCOMPUTE__ATTEST__V1__TPM_EVIDENCE__INIT;
	Bettercompute__Attest__V1__TpmAnswer an = BETTERCOMPUTE__ATTEST__V1__TPM_ANSWER__INIT;
	Bettercompute__Attest__V1__KeyCertification kc =
	    BETTERCOMPUTE__ATTEST__V1__KEY_CERTIFICATION__INIT;
	Bettercompute__Attest__V1__PcrValue pv[24], *pp[24];
	ProtobufCBinaryData im;
	uint8_t *out;

	evidence_fill(ag, &ev, &im);
	an.evidence = &ev;
	an.state = (ProtobufCBinaryData){a->state.n, a->state.p};
	an.secret = (ProtobufCBinaryData){a->secret.n, a->secret.p};
	an.quote = (ProtobufCBinaryData){a->quote.n, a->quote.p};
	an.quote_signature = (ProtobufCBinaryData){a->qsig.n, a->qsig.p};
	an.pcr_hash_alg = 0x000B;
	for (size_t i = 0; i < a->n_pcrs; i++) {
		bettercompute__attest__v1__pcr_value__init(&pv[i]);
		pv[i].index = a->idx[i];
		pv[i].digest = (ProtobufCBinaryData){32, (uint8_t *)a->pcrs[i]};
		pp[i] = &pv[i];
	}
	an.n_pcrs = a->n_pcrs;
	an.pcrs = pp;
	if (a->has_nk) {
		kc.key_public = (ProtobufCBinaryData){a->nk_pub.n, a->nk_pub.p};
		kc.certify_info = (ProtobufCBinaryData){a->cinfo.n, a->cinfo.p};
		kc.signature = (ProtobufCBinaryData){a->csig.n, a->csig.p};
		an.node_key = &kc;
	}
	*len = bettercompute__attest__v1__tpm_answer__get_packed_size(&an);
	out = malloc(*len);
	bettercompute__attest__v1__tpm_answer__pack(&an, out);
	return out;
}

/* ---- rounds against a control plane ---- */

Bettercompute__Attest__V1__TpmChallenge *bct_tpm_round1(struct bct_tpm_agent *ag, struct bct_cp *cp,
                                                        const struct bct_blob *csr)
{
	Bettercompute__Attest__V1__TpmChallenge *ch;
	struct bc_join_answer ans;
	size_t n;
	uint8_t *ev = bct_tpm_evidence(ag, &n);
	struct bct_join_opts jo = {.attestor = "tpm",
	                           .csr = csr->p,
	                           .csr_len = csr->n,
	                           .attestation = ev,
	                           .attestation_len = n};

	assert_int_equal(bct_join(cp, &jo, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_CHALLENGE);
	assert_string_equal(ans.challenge_attestor, "tpm");
	ch = bettercompute__attest__v1__tpm_challenge__unpack(NULL, ans.challenge_len,
	                                                      ans.challenge);
	assert_non_null(ch);
	bc_join_answer_free(&ans);
	free(ev);
	return ch;
}

int bct_tpm_round2(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                   const struct bct_tpm_answer *a, struct bc_join_answer *ans)
{
	return bct_tpm_round2_uuid(ag, cp, csr, a, NULL, ans);
}

int bct_tpm_round2_uuid(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                        const struct bct_tpm_answer *a, const char *uuid,
                        struct bc_join_answer *ans)
{
	size_t n;
	uint8_t *p = bct_tpm_answer_pack(ag, a, &n);
	struct bct_join_opts jo = {.attestor = "tpm",
	                           .csr = csr->p,
	                           .csr_len = csr->n,
	                           .attestation = p,
	                           .attestation_len = n,
	                           .product_uuid = uuid};
	int rc = bct_join(cp, &jo, ans);

	free(p);
	return rc;
}

void bct_tpm_refused(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                     const struct bct_tpm_answer *a, const char *reason)
{
	struct bc_join_answer ans;
	int64_t before = bct_count(cp, "SELECT COUNT(*) FROM nodes", NULL, 0);

	assert_int_equal(bct_tpm_round2(ag, cp, csr, a, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(cp), reason);
	assert_int_equal(bct_count(cp, "SELECT COUNT(*) FROM nodes", NULL, 0), before);
}

void bct_tpm_pending(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                     uint32_t retry_after, char id[64])
{
	struct bc_join_answer ans;
	struct bct_tpm_answer a;

	bct_tpm_full_answer(ag, cp, csr, BCT_NK_HANDLE, &a);
	assert_int_equal(bct_tpm_round2(ag, cp, csr, &a, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	assert_int_equal(strncmp(ans.request_id, "jr_", 3), 0);
	assert_int_equal(ans.retry_after_seconds, retry_after);
	snprintf(id, 64, "%s", ans.request_id);
	bc_join_answer_free(&ans);
	bct_tpm_answer_free(&a);
}

void bct_tpm_full_answer(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                         const char *nk, struct bct_tpm_answer *a)
{
	Bettercompute__Attest__V1__TpmChallenge *ch = bct_tpm_round1(ag, cp, csr);
	bct_tpm_answer_make(ag, ch, csr, nk, a);
	bettercompute__attest__v1__tpm_challenge__free_unpacked(ch, NULL);
}

void bct_tpm_cp_start_roots(struct bct_cp *cp, const char *roots, const char *lines)
{
	char toml[4096];

	snprintf(toml, sizeof(toml), "[attestors.tpm]\nek_roots = [\"%s\"]\n%s\n", roots,
	         lines ? lines : "");
	assert_int_equal(bct_cp_start(cp, toml), 0);
}

void bct_tpm_cp_start(struct bct_tpm_agent *ag, struct bct_cp *cp, const char *lines)
{
	bct_tpm_cp_start_roots(cp, ag->tpm.root_pem, lines);
}

const char *bct_tpm_resolve(struct bct_tpm_agent *ag, const char *pool, const char *node)
{
	char text[1024];

	snprintf(ag->resolve_path, sizeof(ag->resolve_path), "%s/resolve-%s.toml", ag->tpm.dir,
	         node ? node : pool);
	snprintf(text, sizeof(text), "[ek.%s]\ntenant = \"root\"\n%s%s%s\n%s%s%s\n", ag->ek_hex,
	         pool ? "pool = \"" : "", pool ? pool : "", pool ? "\"" : "",
	         node ? "node = \"" : "", node ? node : "", node ? "\"" : "");
	assert_int_equal(bct_write_file(ag->resolve_path, text), 0);
	return ag->resolve_path;
}

void bct_tpm_cp_start_resolved_roots(struct bct_tpm_agent *ag, struct bct_cp *cp, const char *roots,
                                     const char *policy, char pool[64])
{
	char lines[1024];

	assert_int_equal(bc_new_id("pool", pool, 64), 0);
	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", bct_tpm_resolve(ag, pool, NULL));
	bct_tpm_cp_start_roots(cp, roots, lines);
	bc_param pp[] = {BC_TEXT(pool), BC_TEXT(policy), BC_INT(bc_now_ms())};
	assert_int_equal(bct_exec(cp,
	                          "INSERT INTO pools (id, tenant_id, name, policy, created_at, "
	                          "updated_at) VALUES ($1, 'root', 'tpm', $2, $3, $3)",
	                          pp, 3),
	                 0);
}

void bct_tpm_cp_start_resolved(struct bct_tpm_agent *ag, struct bct_cp *cp, const char *policy,
                               char pool[64])
{
	bct_tpm_cp_start_resolved_roots(ag, cp, ag->tpm.root_pem, policy, pool);
}

int bct_tpm_agent_start(struct bct_tpm_agent *ag, const char *test)
{
	int rc;

	memset(ag, 0, sizeof(*ag));
	if ((rc = bct_tpm_start(&ag->tpm)) == 0 && (rc = agent_prepare(ag)) == 0)
		return 0;
	if (rc != 77)
		fprintf(stderr, "%s: swtpm or the agent's keys did not start (%s)\n", test,
		        ag->tpm.dir);
	bct_tpm_agent_stop(ag);
	return rc == 77 ? 77 : 1;
}

void bct_tpm_agent_stop(struct bct_tpm_agent *ag)
{
	bct_tpm_stop(&ag->tpm);
	for (size_t i = 0; i < sizeof(ag->made) / sizeof(ag->made[0]); i++)
		bct_blob_free(&ag->made[i]);
}
