/* The tpm attestor end to end, in-process over loopback HTTP, against an agent made
 * of tpm2-tools commands alone on a real swtpm whose EK certificate a manufacturer
 * CA of the test issued: tpm2_createak, tpm2_activatecredential, tpm2_quote,
 * tpm2_pcrread, tpm2_sign (the CSR, signed in the TPM by the node key) and a raw
 * TPM2_Certify through tpm2_send (tpm2_certify 5.4 takes no qualifying data). The
 * protobuf messages are assembled here. So our MakeCredential and checks are proven
 * against the TCG tools, not against a client of ours. */
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
#include "bc/wire.h"
#include "bct_tpm.h"
#include "bct_http.h"
#include "bctest.h"
#include "bettercompute/attest/v1/tpm.pb-c.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "attest/attest.h"
#include "join/join.h"
#include "server/admin.h"

#define AK_HANDLE  "0x81000011"
#define NK_HANDLE  "0x81000010" /* the node key: owner hierarchy, the spec's attributes */
#define NK_DECRYPT "0x81000012" /* sign and decrypt: not a node key */
#define NK_OTHER   "0x81000013" /* a good node key, but not the CSR's */
#define EK_HANDLE  "0x81010001"
#define NK_ATTRS   "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|sign"

static struct bct_tpm tpm;

struct blob {
	uint8_t *p;
	size_t n;
};

/* What the agent sends: round 1's evidence and round 2's answer, field by field so
 * a test can alter one. */
static struct blob ek, ek_cert, inter, ak;
static uint8_t ak_name[64];
static size_t ak_name_len;
static char ek_hex[65];

struct answer {
	struct blob state, secret, quote, qsig, nk_pub, cinfo, csig;
	uint8_t pcrs[24][32];
	uint32_t idx[24];
	size_t n_pcrs;
	int has_nk;
};

static void blob_free(struct blob *b)
{
	free(b->p);
	b->p = NULL;
	b->n = 0;
}

static struct blob blob_dup(const void *p, size_t n)
{
	struct blob b = {malloc(n ? n : 1), n};
	memcpy(b.p, p, n);
	return b;
}

static struct blob file_blob(const char *name)
{
	struct blob b;
	b.p = bct_tpm_read(&tpm, name, &b.n);
	assert_non_null(b.p);
	return b;
}

static void answer_free(struct answer *a)
{
	blob_free(&a->state);
	blob_free(&a->secret);
	blob_free(&a->quote);
	blob_free(&a->qsig);
	blob_free(&a->nk_pub);
	blob_free(&a->cinfo);
	blob_free(&a->csig);
}

/* A TPM2B_PUBLIC file's TPMT_PUBLIC. */
static struct blob tpmt_file(const char *name)
{
	struct blob f = file_blob(name), b;
	assert_true(f.n > 2);
	b = blob_dup(f.p + 2, f.n - 2);
	blob_free(&f);
	return b;
}

/* ---- the agent, by tpm2-tools ---- */

static int agent_prepare(void)
{
	uint8_t d[32];
	char *h;

	if (bct_tpm_sh(&tpm, "tpm2_readpublic -c " EK_HANDLE " -o ek.pub -f tss && "
	                     "tpm2_nvread 0x01c00002 -o ekcert.der && "
	                     "openssl x509 -in ca/issuercert.pem -outform der -out inter.der && "
	                     "tpm2_createak -C " EK_HANDLE " -c ak.ctx -G ecc -g sha256 -s ecdsa "
	                     "-u ak.pub -n ak.name -f tss && "
	                     "tpm2_evictcontrol -C o -c ak.ctx " AK_HANDLE) != 0 ||
	    bct_tpm_sh(&tpm,
	               "tpm2_createprimary -C o -g sha256 -G ecc256:ecdsa-sha256 -a '" NK_ATTRS
	               "' -c nk.ctx && tpm2_evictcontrol -C o -c nk.ctx " NK_HANDLE) != 0 ||
	    bct_tpm_sh(&tpm,
	               "tpm2_createprimary -C o -g sha256 -G ecc256 -a '" NK_ATTRS
	               "|decrypt' -c nkd.ctx && tpm2_evictcontrol -C o -c nkd.ctx " NK_DECRYPT) !=
	        0 ||
	    bct_tpm_sh(&tpm,
	               "tpm2_createprimary -C e -g sha256 -G ecc256:ecdsa-sha256 -a '" NK_ATTRS
	               "' -c nko.ctx && tpm2_evictcontrol -C o -c nko.ctx " NK_OTHER) != 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		static const char *const h_[] = {NK_HANDLE, NK_DECRYPT, NK_OTHER};
		if (bct_tpm_sh(&tpm,
		               "tpm2_readpublic -c %s -o %s.pub -f tss && tpm2_readpublic -c %s "
		               "-o %s.pem -f pem",
		               h_[i], h_[i], h_[i], h_[i]) != 0)
			return -1;
	}
	ek = tpmt_file("ek.pub");
	ak = tpmt_file("ak.pub");
	ek_cert = file_blob("ekcert.der");
	inter = file_blob("inter.der");
	struct blob nm = file_blob("ak.name");
	memcpy(ak_name, nm.p, nm.n);
	ak_name_len = nm.n;
	blob_free(&nm);
	if (bc_sha256(ek.p, ek.n, d) != 0)
		return -1;
	h = bct_hex(d, 32);
	snprintf(ek_hex, sizeof(ek_hex), "%s", h);
	free(h);
	return 0;
}

/* A CSR for the key at handle, subject CN=cn, signed in the TPM (tpm2_sign over the
 * SHA-256 of the to-be-signed part). */
static struct blob make_csr(const char *handle, const char *cn)
{
	char pem_name[64];
	struct blob pem, sig, out = {0};
	X509_REQ *req = X509_REQ_new();
	X509_NAME *name = X509_NAME_new();
	X509_ALGOR *alg = X509_ALGOR_new();
	ASN1_BIT_STRING *bits = ASN1_BIT_STRING_new();
	uint8_t *tbs = NULL, d[32];
	EVP_PKEY *key;
	BIO *bio;
	int n;

	snprintf(pem_name, sizeof(pem_name), "%s.pem", handle);
	pem = file_blob(pem_name);
	bio = BIO_new_mem_buf(pem.p, (int)pem.n);
	key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	assert_non_null(key);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	assert_int_equal(X509_REQ_set_subject_name(req, name), 1);
	assert_int_equal(X509_REQ_set_pubkey(req, key), 1);
	assert_true((n = i2d_re_X509_REQ_tbs(req, &tbs)) > 0);
	assert_int_equal(bc_sha256(tbs, (size_t)n, d), 0);
	assert_int_equal(bct_tpm_write(&tpm, "csr.dig", d, 32), 0);
	assert_int_equal(bct_tpm_sh(&tpm,
	                            "rm -f csr.sig && tpm2_sign -c %s -g sha256 -s ecdsa -d "
	                            "-f plain -o csr.sig csr.dig",
	                            handle),
	                 0);
	sig = file_blob("csr.sig");
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
	out = blob_dup(der, (size_t)n);
	OPENSSL_free(der);
	OPENSSL_free(tbs);
	X509_ALGOR_free(alg);
	X509_NAME_free(name);
	X509_REQ_free(req);
	EVP_PKEY_free(key);
	BIO_free(bio);
	blob_free(&pem);
	blob_free(&sig);
	EVP_PKEY *chk = NULL;
	assert_int_equal(bc_csr_check(out.p, out.n, &chk), 0);
	EVP_PKEY_free(chk);
	return out;
}

static uint8_t *evidence_pack(size_t *len)
{
	Bettercompute__Attest__V1__TpmEvidence ev = BETTERCOMPUTE__ATTEST__V1__TPM_EVIDENCE__INIT;
	ProtobufCBinaryData im = {inter.n, inter.p};
	uint8_t *out;

	ev.ek_public = (ProtobufCBinaryData){ek.n, ek.p};
	ev.ek_certificate = (ProtobufCBinaryData){ek_cert.n, ek_cert.p};
	ev.n_ek_intermediates = inter.n ? 1 : 0; /* none when the test cleared it */
	ev.ek_intermediates = inter.n ? &im : NULL;
	ev.ak_public = (ProtobufCBinaryData){ak.n, ak.p};
	*len = bettercompute__attest__v1__tpm_evidence__get_packed_size(&ev);
	out = malloc(*len);
	bettercompute__attest__v1__tpm_evidence__pack(&ev, out);
	return out;
}

/* TPM2_Certify of obj by the AK, qualified by q (32 bytes), through tpm2_send: two
 * password sessions with empty auth, the AK's own scheme. */
static void certify(const char *obj, const uint8_t q[32], struct answer *a)
{
	uint8_t cmd[128], *p = cmd + 10;
	unsigned long oh = strtoul(obj, NULL, 16), sh = strtoul(AK_HANDLE, NULL, 16);
	static const uint8_t pw[9] = {0x40, 0, 0, 0x09, 0, 0, 0, 0, 0};
	struct blob rsp;
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
	assert_int_equal(bct_tpm_write(&tpm, "certify.cmd", cmd, n), 0);
	assert_int_equal(bct_tpm_sh(&tpm, "tpm2_send -o certify.rsp < certify.cmd"), 0);
	rsp = file_blob("certify.rsp");
	assert_true(rsp.n > 16);
	assert_memory_equal(rsp.p + 6, "\0\0\0\0", 4); /* TPM_RC_SUCCESS */
	size_t psize =
	    (size_t)rsp.p[10] << 24 | (size_t)rsp.p[11] << 16 | (size_t)rsp.p[12] << 8 | rsp.p[13];
	size_t alen = (size_t)rsp.p[14] << 8 | rsp.p[15];
	assert_true(16 + alen <= rsp.n && psize > 2 + alen);
	blob_free(&a->cinfo);
	blob_free(&a->csig);
	a->cinfo = blob_dup(rsp.p + 16, alen);
	a->csig = blob_dup(rsp.p + 16 + alen, psize - 2 - alen);
	blob_free(&rsp);
}

/* Round 2 the way an honest agent answers, with the node key at nk certified. */
static void answer_make(const Bettercompute__Attest__V1__TpmChallenge *ch, const struct blob *csr,
                        const char *nk, struct answer *a)
{
	static const uint8_t magic[8] = {0xba, 0xdc, 0xc0, 0xde, 0, 0, 0, 1};
	uint8_t cred[4096], d[32], buf[64], nonce[32];
	char list[128] = "sha256:", *hex, nkpub[64];
	size_t off = 0;
	struct blob pcrs;

	memset(a, 0, sizeof(*a));
	memcpy(cred, magic, 8);
	memcpy(cred + 8, ch->credential_blob.data, ch->credential_blob.len);
	off = 8 + ch->credential_blob.len;
	memcpy(cred + off, ch->encrypted_secret.data, ch->encrypted_secret.len);
	off += ch->encrypted_secret.len;
	assert_int_equal(bct_tpm_write(&tpm, "cred.in", cred, off), 0);
	assert_int_equal(bct_tpm_sh(&tpm,
	                            "rm -f cred.out && tpm2_startauthsession --policy-session "
	                            "-S s.ctx && tpm2_policysecret -S s.ctx -c e && "
	                            "tpm2_activatecredential -c " AK_HANDLE " -C " EK_HANDLE
	                            " -i cred.in -o cred.out -P session:s.ctx"),
	                 0);
	a->secret = file_blob("cred.out");
	a->state = blob_dup(ch->state.data, ch->state.len);
	assert_int_equal(ch->pcr_hash_alg, 0x000B);
	for (size_t i = 0; i < ch->n_pcrs; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%u", i ? "," : "",
		         ch->pcrs[i]);
	assert_int_equal(bc_sha256(csr->p, csr->n, d), 0);
	memcpy(buf, a->secret.p, 32);
	memcpy(buf + 32, d, 32);
	assert_int_equal(bc_sha256(buf, 64, nonce), 0);
	hex = bct_hex(nonce, 32);
	assert_int_equal(bct_tpm_sh(&tpm,
	                            "tpm2_pcrread %s -o pcrs.bin && tpm2_quote -c " AK_HANDLE
	                            " -l %s -q %s -m quote.msg -s quote.sig -g sha256",
	                            list, list, hex),
	                 0);
	free(hex);
	a->quote = file_blob("quote.msg");
	a->qsig = file_blob("quote.sig");
	pcrs = file_blob("pcrs.bin");
	assert_int_equal(pcrs.n, 32 * ch->n_pcrs);
	for (size_t i = 0; i < ch->n_pcrs; i++) {
		a->idx[i] = ch->pcrs[i];
		memcpy(a->pcrs[i], pcrs.p + 32 * i, 32);
	}
	a->n_pcrs = ch->n_pcrs;
	blob_free(&pcrs);
	if (nk == NULL)
		return;
	a->has_nk = 1;
	snprintf(nkpub, sizeof(nkpub), "%s.pub", nk);
	a->nk_pub = tpmt_file(nkpub);
	certify(nk, d, a);
}

static uint8_t *answer_pack(const struct answer *a, size_t *len)
{
	Bettercompute__Attest__V1__TpmEvidence ev = BETTERCOMPUTE__ATTEST__V1__TPM_EVIDENCE__INIT;
	Bettercompute__Attest__V1__TpmAnswer an = BETTERCOMPUTE__ATTEST__V1__TPM_ANSWER__INIT;
	Bettercompute__Attest__V1__KeyCertification kc =
	    BETTERCOMPUTE__ATTEST__V1__KEY_CERTIFICATION__INIT;
	Bettercompute__Attest__V1__PcrValue pv[24], *pp[24];
	ProtobufCBinaryData im = {inter.n, inter.p};
	uint8_t *out;

	ev.ek_public = (ProtobufCBinaryData){ek.n, ek.p};
	ev.ek_certificate = (ProtobufCBinaryData){ek_cert.n, ek_cert.p};
	ev.n_ek_intermediates = inter.n ? 1 : 0; /* none when the test cleared it */
	ev.ek_intermediates = inter.n ? &im : NULL;
	ev.ak_public = (ProtobufCBinaryData){ak.n, ak.p};
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

static Bettercompute__Attest__V1__TpmChallenge *round1(struct bct_cp *cp, const struct blob *csr)
{
	Bettercompute__Attest__V1__TpmChallenge *ch;
	struct bc_join_answer ans;
	size_t n;
	uint8_t *ev = evidence_pack(&n);
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

static int round2(struct bct_cp *cp, const struct blob *csr, const struct answer *a,
                  struct bc_join_answer *ans)
{
	size_t n;
	uint8_t *p = answer_pack(a, &n);
	struct bct_join_opts jo = {.attestor = "tpm",
	                           .csr = csr->p,
	                           .csr_len = csr->n,
	                           .attestation = p,
	                           .attestation_len = n};
	int rc = bct_join(cp, &jo, ans);

	free(p);
	return rc;
}

static void expect_refused(struct bct_cp *cp, const struct blob *csr, const struct answer *a,
                           const char *reason)
{
	struct bc_join_answer ans;
	int64_t before = bct_count(cp, "SELECT COUNT(*) FROM nodes", NULL, 0);

	assert_int_equal(round2(cp, csr, a, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(cp), reason);
	assert_int_equal(bct_count(cp, "SELECT COUNT(*) FROM nodes", NULL, 0), before);
}

/* Both rounds with nk certified (NULL: none). */
static void full_answer(struct bct_cp *cp, const struct blob *csr, const char *nk, struct answer *a)
{
	Bettercompute__Attest__V1__TpmChallenge *ch = round1(cp, csr);
	answer_make(ch, csr, nk, a);
	bettercompute__attest__v1__tpm_challenge__free_unpacked(ch, NULL);
}

static char resolve_path[512];

/* A control plane whose [attestors.tpm] has ek_roots = [roots] and these lines. */
static void cp_start_roots(struct bct_cp *cp, const char *roots, const char *lines)
{
	char toml[4096];

	snprintf(toml, sizeof(toml), "[attestors.tpm]\nek_roots = [\"%s\"]\n%s\n", roots,
	         lines ? lines : "");
	assert_int_equal(bct_cp_start(cp, toml), 0);
}

/* The same with the test's manufacturer root. */
static void cp_start(struct bct_cp *cp, const char *lines)
{
	cp_start_roots(cp, tpm.root_pem, lines);
}

/* A resolve file sending the test's EK into pool (and naming node when set). */
static const char *write_resolve(const char *pool, const char *node)
{
	char text[1024];

	snprintf(resolve_path, sizeof(resolve_path), "%s/resolve-%s.toml", tpm.dir,
	         node ? node : pool);
	snprintf(text, sizeof(text), "[ek.%s]\ntenant = \"root\"\n%s%s%s\n%s%s%s\n", ek_hex,
	         pool ? "pool = \"" : "", pool ? pool : "", pool ? "\"" : "",
	         node ? "node = \"" : "", node ? node : "", node ? "\"" : "");
	assert_int_equal(bct_write_file(resolve_path, text), 0);
	return resolve_path;
}

/* A control plane whose resolve file sends the test's EK into a pool of root with
 * this policy; the pool's id into pool[64]. The pool's id is made first: the resolve
 * file names it before the store exists. */
static void cp_start_resolved_roots(struct bct_cp *cp, const char *roots, const char *policy,
                                    char pool[64])
{
	char lines[1024];

	assert_int_equal(bc_new_id("pool", pool, 64), 0);
	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", write_resolve(pool, NULL));
	cp_start_roots(cp, roots, lines);
	bc_param pp[] = {BC_TEXT(pool), BC_TEXT(policy), BC_INT(bc_now_ms())};
	assert_int_equal(bct_exec(cp,
	                          "INSERT INTO pools (id, tenant_id, name, policy, created_at, "
	                          "updated_at) VALUES ($1, 'root', 'tpm', $2, $3, $3)",
	                          pp, 3),
	                 0);
}

static void cp_start_resolved(struct bct_cp *cp, const char *policy, char pool[64])
{
	cp_start_resolved_roots(cp, tpm.root_pem, policy, pool);
}

/* ---- the tests ---- */

static void test_tpm_join_admitted_and_reclaimed(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct bc_node_identity id;
	struct answer a;
	char pool[64], urn[256], *h, node_id[64];
	(void)state;

	cp_start_resolved(&cp, "{\"joinAttestors\":[\"tpm\"]}", pool);
	struct blob csr = make_csr(NK_HANDLE, "node");
	full_answer(&cp, &csr, NK_HANDLE, &a);
	/* round 1 wrote nothing */
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 0);
	assert_int_equal(round2(&cp, &csr, &a, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	snprintf(node_id, sizeof(node_id), "%s", ans.node_id);
	/* the certificate names the AK after the SPIFFE ID */
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	h = bct_hex(ak_name, ak_name_len);
	snprintf(urn, sizeof(urn), BC_WIRE_TPM_AK_URN_SHA256 "%s", h);
	free(h);
	assert_int_equal(id.n_statements, 1);
	assert_string_equal(id.statements[0], urn);
	bc_node_identity_clear(&id);
	bc_join_answer_free(&ans);
	/* bound to sha256(EK), nodeKey tpm in the event, the audit row and the node */
	bc_param p[] = {BC_TEXT(node_id), BC_TEXT(ek_hex)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_bindings WHERE node_id = $1 AND "
	                           "kind = 'tpm-ek' AND key = $2",
	                           p, 2),
	                 1);
	bc_param np[] = {BC_TEXT(node_id), BC_TEXT(pool)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND node_key = "
	                           "'tpm' AND attestor = 'tpm' AND pool_id = $2",
	                           np, 2),
	                 1);
	char *data = bct_text(
	    &cp, "SELECT data FROM events WHERE type = 'node.joined' AND subject = $1", p, 1);
	assert_non_null(data);
	assert_non_null(strstr(data, "\"nodeKey\":\"tpm\""));
	free(data);
	data = bct_text(&cp, "SELECT data FROM audit WHERE action = 'node.joined' AND subject = $1",
	                p, 1);
	assert_non_null(data);
	assert_non_null(strstr(data, "\"nodeKey\":\"tpm\""));
	free(data);
	answer_free(&a);

	/* the same TPM again (a reinstall: a new CSR for the key) is the same node */
	struct blob csr2 = make_csr(NK_HANDLE, "node-again");
	full_answer(&cp, &csr2, NK_HANDLE, &a);
	assert_int_equal(round2(&cp, &csr2, &a, &ans), 0);
	assert_string_equal(ans.node_id, node_id);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 1);
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", p, 1), 2);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = 'node.reclaimed' "
	                           "AND subject = $1",
	                           p, 1),
	                 1);
	bc_join_answer_free(&ans);
	answer_free(&a);
	blob_free(&csr);
	blob_free(&csr2);
	bct_cp_stop(&cp);
}

/* Every check of round 2 by name, each from an honest answer with one thing wrong. */
static void test_tpm_refusals_by_name(void **state)
{
	struct bct_cp cp;
	struct answer a, b;
	char lines[1024];
	(void)state;

	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", write_resolve(NULL, NULL));
	cp_start(&cp, lines);
	struct blob csr = make_csr(NK_HANDLE, "node"), other = make_csr(NK_HANDLE, "other");
	full_answer(&cp, &csr, NK_HANDLE, &a);

	/* the answer for another CSR */
	expect_refused(&cp, &other, &a, "challenge-for-another-csr");
	/* the state altered */
	a.state.p[20] ^= 1;
	expect_refused(&cp, &csr, &a, "challenge-state");
	a.state.p[20] ^= 1;
	/* another secret */
	a.secret.p[0] ^= 1;
	expect_refused(&cp, &csr, &a, "credential-secret");
	a.secret.p[0] ^= 1;
	/* the quote's signature altered (the last byte of s) */
	a.qsig.p[a.qsig.n - 1] ^= 1;
	expect_refused(&cp, &csr, &a, "quote-signature");
	a.qsig.p[a.qsig.n - 1] ^= 1;
	/* a quote cut short */
	a.quote.n -= 1;
	expect_refused(&cp, &csr, &a, "quote-malformed");
	a.quote.n += 1;
	/* a PCR value that is not the quoted one, and one left out */
	a.pcrs[3][0] ^= 1;
	expect_refused(&cp, &csr, &a, "quote-pcr-digest");
	a.pcrs[3][0] ^= 1;
	a.n_pcrs--;
	expect_refused(&cp, &csr, &a, "quote-pcr-selection");
	a.n_pcrs++;
	/* the certification: cut short, signature altered, for another CSR, of another
	 * key's name, of a key that can decrypt, of a good key that is not the CSR's */
	a.cinfo.n -= 1;
	expect_refused(&cp, &csr, &a, "node-key-malformed");
	a.cinfo.n += 1;
	a.csig.p[a.csig.n - 1] ^= 1;
	expect_refused(&cp, &csr, &a, "node-key-signature");
	a.csig.p[a.csig.n - 1] ^= 1;
	{
		uint8_t d[32];
		assert_int_equal(bc_sha256(other.p, other.n, d), 0);
		certify(NK_HANDLE, d, &a);
		expect_refused(&cp, &csr, &a, "node-key-nonce");
		assert_int_equal(bc_sha256(csr.p, csr.n, d), 0);
		certify(NK_HANDLE, d, &a);
		blob_free(&a.nk_pub);
		a.nk_pub = tpmt_file(NK_OTHER ".pub");
		expect_refused(&cp, &csr, &a, "node-key-name");
		blob_free(&a.nk_pub);
		a.nk_pub = tpmt_file(NK_DECRYPT ".pub");
		certify(NK_DECRYPT, d, &a);
		expect_refused(&cp, &csr, &a, "node-key-attributes");
		blob_free(&a.nk_pub);
		a.nk_pub = tpmt_file(NK_OTHER ".pub");
		certify(NK_OTHER, d, &a);
		expect_refused(&cp, &csr, &a, "node-key-not-csr");
	}
	/* no certification under the default nodeKey = certified */
	a.has_nk = 0;
	expect_refused(&cp, &csr, &a, "node-key-not-certified");
	answer_free(&a);

	/* a quote over another nonce: the secret's quote for the other CSR */
	full_answer(&cp, &csr, NK_HANDLE, &a);
	full_answer(&cp, &other, NK_HANDLE, &b);
	blob_free(&a.quote);
	blob_free(&a.qsig);
	a.quote = blob_dup(b.quote.p, b.quote.n);
	a.qsig = blob_dup(b.qsig.p, b.qsig.n);
	expect_refused(&cp, &csr, &a, "quote-nonce");
	answer_free(&b);

	/* after the challenge expired, by the test clock (5 minutes and a second) */
	bc_clock_set_offset_ms(5 * 60 * 1000 + 1000);
	expect_refused(&cp, &csr, &a, "challenge-expired");
	bc_clock_set_offset_ms(0);
	answer_free(&a);

	/* evidence that is not a TpmEvidence */
	{
		struct bc_join_answer ans;
		uint8_t junk[3] = {0x00, 0x01, 0x02};
		struct bct_join_opts jo = {.attestor = "tpm",
		                           .csr = csr.p,
		                           .csr_len = csr.n,
		                           .attestation = junk,
		                           .attestation_len = 3};
		assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&cp), "tpm-evidence-malformed");
	}
	blob_free(&csr);
	blob_free(&other);
	bct_cp_stop(&cp);
}

/* The EK's certificate under another root; no certificate; an unknown EK. */
static void test_tpm_ek_refusals(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	char lines[1024], other_root[512];
	size_t n;
	uint8_t *ev;
	(void)state;

	assert_int_equal(bct_tpm_sh(&tpm, "openssl req -x509 -newkey ec -pkeyopt "
	                                  "ec_paramgen_curve:P-256 -nodes -keyout other.key -out "
	                                  "other.pem -subj /CN=other-manufacturer -days 2"),
	                 0);
	snprintf(other_root, sizeof(other_root), "%s/other.pem", tpm.dir);
	snprintf(lines, sizeof(lines), "[attestors.tpm]\nek_roots = [\"%s\"]\n", other_root);
	assert_int_equal(bct_cp_start(&cp, lines), 0);
	struct blob csr = make_csr(NK_HANDLE, "node");
	ev = evidence_pack(&n);
	struct bct_join_opts jo = {.attestor = "tpm",
	                           .csr = csr.p,
	                           .csr_len = csr.n,
	                           .attestation = ev,
	                           .attestation_len = n};
	assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "ek-certificate-chain");
	free(ev);
	/* no EK certificate at all */
	{
		struct blob saved = ek_cert;
		ek_cert = (struct blob){NULL, 0};
		ev = evidence_pack(&n);
		jo.attestation = ev;
		jo.attestation_len = n;
		assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&cp), "ek-uncertified");
		ek_cert = saved;
		free(ev);
	}
	bct_cp_stop(&cp);

	/* the right root, but no resolve or enrollment: unknown-ek after both rounds */
	cp_start(&cp, NULL);
	struct answer a;
	full_answer(&cp, &csr, NK_HANDLE, &a);
	expect_refused(&cp, &csr, &a, "unknown-ek");
	answer_free(&a);
	blob_free(&csr);
	bct_cp_stop(&cp);
}

/* ek_roots naming only the manufacturer's intermediate (as Intel's CNL CA is
 * published): the chain ends there, with no intermediate in the evidence, and the
 * TPM joins. An intermediate-only ek_roots of another CA still refuses it. */
static void test_tpm_ek_roots_intermediate_only(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct answer a;
	struct blob saved = inter;
	char pool[64], issuer[512], other[512];
	size_t n;
	uint8_t *ev;
	(void)state;

	snprintf(issuer, sizeof(issuer), "%s/ca/issuercert.pem", tpm.dir);
	inter = (struct blob){NULL, 0};
	cp_start_resolved_roots(&cp, issuer, "{\"joinAttestors\":[\"tpm\"]}", pool);
	struct blob csr = make_csr(NK_HANDLE, "node");
	full_answer(&cp, &csr, NK_HANDLE, &a);
	assert_int_equal(round2(&cp, &csr, &a, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_join_answer_free(&ans);
	answer_free(&a);
	bct_cp_stop(&cp);

	/* another CA's root and intermediate; ek_roots names only the intermediate */
	assert_int_equal(
	    bct_tpm_sh(&tpm, "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	                     "-keyout oroot.key -out oroot.pem -subj /CN=other-root -days 2 && "
	                     "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	                     "-keyout ointer.key -out ointer.csr -subj /CN=other-inter && "
	                     "printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=critical,"
	                     "keyCertSign\\n' > ca.ext && "
	                     "openssl x509 -req -in ointer.csr -CA oroot.pem -CAkey oroot.key "
	                     "-CAcreateserial -out ointer.pem -days 2 -extfile ca.ext"),
	    0);
	snprintf(other, sizeof(other), "%s/ointer.pem", tpm.dir);
	inter = saved;
	cp_start_roots(&cp, other, NULL);
	ev = evidence_pack(&n);
	struct bct_join_opts jo = {.attestor = "tpm",
	                           .csr = csr.p,
	                           .csr_len = csr.n,
	                           .attestation = ev,
	                           .attestation_len = n};
	assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "ek-certificate-chain");
	free(ev);
	blob_free(&csr);
	bct_cp_stop(&cp);
}

/* nodeKey any: an answer without certification is admitted with no statement. */
static void test_tpm_node_key_any(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct bc_node_identity id;
	struct answer a;
	char lines[1024];
	(void)state;

	snprintf(lines, sizeof(lines), "resolve = \"%s\"\nnode_key = \"any\"\n",
	         write_resolve(NULL, NULL));
	cp_start(&cp, lines);
	struct blob csr = make_csr(NK_HANDLE, "node");
	full_answer(&cp, &csr, NULL, &a);
	assert_int_equal(round2(&cp, &csr, &a, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	assert_int_equal(id.n_statements, 0);
	bc_node_identity_clear(&id);
	bc_param p[] = {BC_TEXT(ans.node_id)};
	char *data = bct_text(
	    &cp, "SELECT data FROM events WHERE type = 'node.joined' AND subject = $1", p, 1);
	assert_non_null(strstr(data, "\"nodeKey\":\"unattested\""));
	free(data);
	bc_join_answer_free(&ans);
	answer_free(&a);
	blob_free(&csr);
	bct_cp_stop(&cp);
}

/* A PCR policy that allows another PCR 0, then a command that refuses. */
static void test_tpm_pcr_policy(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct answer a;
	char lines[2048], policy[512];
	(void)state;

	snprintf(policy, sizeof(policy), "%s/pcr-policy.toml", tpm.dir);
	assert_int_equal(bct_write_file(policy, "0 = [\"11111111111111111111111111111111"
	                                        "11111111111111111111111111111111\"]\n"),
	                 0);
	snprintf(lines, sizeof(lines), "resolve = \"%s\"\npcr_policy = \"%s\"\n",
	         write_resolve(NULL, NULL), policy);
	cp_start(&cp, lines);
	struct blob csr = make_csr(NK_HANDLE, "node");
	full_answer(&cp, &csr, NK_HANDLE, &a);
	expect_refused(&cp, &csr, &a, "pcr-policy");
	answer_free(&a);
	bct_cp_stop(&cp);

	/* the command reads the values and answers; "accept" admits */
	snprintf(lines, sizeof(lines),
	         "resolve = \"%s\"\npcr_policy_command = \"grep -q "
	         "'\\\"bank\\\":\\\"sha256\\\"' && echo no-such-firmware\"\n",
	         resolve_path);
	cp_start(&cp, lines);
	full_answer(&cp, &csr, NK_HANDLE, &a);
	/* the command's own reason reaches the event, after pcr-policy: */
	expect_refused(&cp, &csr, &a, "pcr-policy:no-such-firmware");
	assert_int_equal(
	    bct_events(&cp, "security.join.refused", "pcr-policy:no-such-firmware", NULL), 1);
	answer_free(&a);
	bct_cp_stop(&cp);
	snprintf(lines, sizeof(lines),
	         "resolve = \"%s\"\npcr_policy_command = \"grep -q "
	         "'\\\"pcrs\\\":{\\\"0\\\"' && echo accept\"\n",
	         resolve_path);
	cp_start(&cp, lines);
	full_answer(&cp, &csr, NK_HANDLE, &a);
	assert_int_equal(round2(&cp, &csr, &a, &ans), 0);
	bc_join_answer_free(&ans);
	answer_free(&a);
	blob_free(&csr);
	bct_cp_stop(&cp);
}

/* A resolve entry naming a node the EK is not bound to. */
static void test_tpm_bound_elsewhere(void **state)
{
	static const char *named = "node_0000000000000000000000000a";
	static const char *bound = "node_0000000000000000000000000b";
	struct bct_cp cp;
	struct answer a;
	char lines[1024];
	(void)state;

	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", write_resolve(NULL, named));
	cp_start(&cp, lines);
	for (int i = 0; i < 2; i++) {
		bc_param p[] = {BC_TEXT(i ? bound : named), BC_INT(bc_now_ms())};
		assert_int_equal(
		    bct_exec(&cp,
		             "INSERT INTO nodes (id, tenant_id, role, state, attestor, "
		             "joined_at, updated_at) VALUES ($1, 'root', 'node', "
		             "'adopted', 'join-token', $2, $2)",
		             p, 2),
		    0);
	}
	bc_param b[] = {BC_TEXT(ek_hex), BC_TEXT(bound), BC_INT(bc_now_ms())};
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO node_bindings (kind, key, node_id, created_at) "
	                          "VALUES ('tpm-ek', $1, $2, $3)",
	                          b, 3),
	                 0);
	struct blob csr = make_csr(NK_HANDLE, "node");
	full_answer(&cp, &csr, NK_HANDLE, &a);
	expect_refused(&cp, &csr, &a, "join:bound-elsewhere");
	answer_free(&a);
	blob_free(&csr);
	bct_cp_stop(&cp);
}

/* ---- enrollment through the admin API ---- */

struct api_body {
	char buf[16384];
	size_t n;
};

static long api(struct bct_cp *cp, const char *key, const char *method, const char *path,
                struct api_body *out)
{
	char *text = NULL;
	long status = bct_http(cp, method, path, key, NULL, &text);

	assert_true(status > 0);
	memset(out, 0, sizeof(*out));
	if (text != NULL) {
		out->n = strlen(text) < sizeof(out->buf) - 1 ? strlen(text) : sizeof(out->buf) - 1;
		memcpy(out->buf, text, out->n);
		free(text);
	}
	return status;
}

static int key_tx(bc_tx *tx, void *arg)
{
	return bc_admin_create_api_key(tx, "root", "test", (char **)arg);
}

/* Round 2 while the request waits: pending, with its id. */
static void expect_pending(struct bct_cp *cp, const struct blob *csr, char id[64])
{
	struct bc_join_answer ans;
	struct answer a;

	full_answer(cp, csr, NK_HANDLE, &a);
	assert_int_equal(round2(cp, csr, &a, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	assert_int_equal(strncmp(ans.request_id, "jr_", 3), 0);
	assert_int_equal(ans.retry_after_seconds, 7);
	snprintf(id, 64, "%s", ans.request_id);
	bc_join_answer_free(&ans);
	answer_free(&a);
}

static void test_tpm_enrollment_approve_and_deny(void **state)
{
	static const char *site = "site_0000000000000000000000000s";
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct api_body body;
	struct answer a;
	char lines[1024], id[64], path[256], *key = NULL;
	(void)state;

	snprintf(lines, sizeof(lines),
	         "enrollment_tenant = \"root\"\nenrollment_site = \"%s\"\n"
	         "retry_after_seconds = 7\n",
	         site);
	for (int deny = 0; deny < 2; deny++) {
		cp_start(&cp, lines);
		bc_param s[] = {BC_TEXT(site), BC_INT(bc_now_ms())};
		assert_int_equal(bct_exec(&cp,
		                          "INSERT INTO sites (id, tenant_id, name, created_at) "
		                          "VALUES ($1, 'root', 'lab', $2)",
		                          s, 2),
		                 0);
		assert_int_equal(bc_store_run(bct_store(&cp), BC_TX_WRITE, key_tx, &key), 0);
		struct blob csr = make_csr(NK_HANDLE, "node");
		expect_pending(&cp, &csr, id);
		/* it waits: the same again, the same request */
		char again[64];
		expect_pending(&cp, &csr, again);
		assert_string_equal(again, id);
		/* another CSR while it waits */
		struct blob other = make_csr(NK_HANDLE, "other");
		full_answer(&cp, &other, NK_HANDLE, &a);
		expect_refused(&cp, &other, &a, "enrollment-csr");
		answer_free(&a);
		blob_free(&other);
		/* the operator sees it and decides */
		assert_int_equal(
		    api(&cp, key, "GET", "/v1/tenants/root/join-requests?state=pending", &body),
		    200);
		assert_non_null(strstr(body.buf, id));
		assert_non_null(strstr(body.buf, ek_hex));
		snprintf(path, sizeof(path), "/v1/tenants/root/join-requests/%s/%s", id,
		         deny ? "deny" : "approve");
		assert_int_equal(api(&cp, key, "POST", path, &body), 200);
		assert_non_null(strstr(body.buf, deny ? "\"denied\"" : "\"approved\""));
		/* decided once */
		assert_int_equal(api(&cp, key, "POST", path, &body), 409);
		bc_param e[] = {BC_TEXT(deny ? "join-request.denied" : "join-request.approved"),
		                BC_TEXT(id)};
		assert_int_equal(bct_count(&cp,
		                           "SELECT COUNT(*) FROM events WHERE type = $1 AND "
		                           "subject = $2",
		                           e, 2),
		                 1);
		assert_int_equal(bct_count(&cp,
		                           "SELECT COUNT(*) FROM audit WHERE action = $1 AND "
		                           "subject = $2",
		                           e, 2),
		                 1);
		full_answer(&cp, &csr, NK_HANDLE, &a);
		if (deny) {
			expect_refused(&cp, &csr, &a, "enrollment-denied");
		} else {
			assert_int_equal(round2(&cp, &csr, &a, &ans), 0);
			assert_int_equal(ans.state, BC_JOIN_JOINED);
			bc_param n[] = {BC_TEXT(ans.node_id), BC_TEXT(site)};
			assert_int_equal(bct_count(&cp,
			                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND "
			                           "site_id = $2",
			                           n, 2),
			                 1);
			bc_param r[] = {BC_TEXT(id)};
			char *st =
			    bct_text(&cp, "SELECT state FROM join_requests WHERE id = $1", r, 1);
			assert_string_equal(st, "used");
			free(st);
			bc_join_answer_free(&ans);
		}
		answer_free(&a);
		blob_free(&csr);
		free(key);
		key = NULL;
		bct_cp_stop(&cp);
	}
}

static void test_tpm_config_errors(void **state)
{
	struct bct_cp cp;
	(void)state;

	/* unknown keys name themselves; no roots without allow_uncertified_ek */
	assert_int_not_equal(bct_cp_start(&cp, "[attestors.tpm]\nallow_uncertified_ek = true\n"
	                                       "ek_root = [\"x\"]\n"),
	                     0);
	bct_cp_stop(&cp);
	assert_int_not_equal(bct_cp_start(&cp, "[attestors.tpm]\n"), 0);
	bct_cp_stop(&cp);
	assert_int_not_equal(bct_cp_start(&cp, "[attestors.tpm]\nallow_uncertified_ek = true\n"
	                                       "challenge_ttl_ms = 300001\n"),
	                     0);
	bct_cp_stop(&cp);
	assert_int_equal(bct_cp_start(&cp, "[attestors.tpm]\nallow_uncertified_ek = true\n"
	                                   "pcrs = \"0-7,10\"\nroles = [\"node\", \"site\"]\n"),
	                 0);
	bct_cp_stop(&cp);
}

/* ---- renewals of a TPM-held key (the AK certifies the next key) ---- */

/* ES256 under a purpose, by the TPM key at handle: P1363 r||s. */
static void tpm_sign(const char *handle, const char *purpose, const uint8_t *payload, size_t n,
                     uint8_t sig[64])
{
	uint8_t d[32];
	struct blob der;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned int dl = 32;

	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	EVP_DigestUpdate(md, BC_WIRE_SIG_DOMAIN, sizeof(BC_WIRE_SIG_DOMAIN));
	EVP_DigestUpdate(md, purpose, strlen(purpose) + 1);
	EVP_DigestUpdate(md, payload, n);
	EVP_DigestFinal_ex(md, d, &dl);
	EVP_MD_CTX_free(md);
	assert_int_equal(bct_tpm_write(&tpm, "proof.dig", d, 32), 0);
	assert_int_equal(bct_tpm_sh(&tpm,
	                            "rm -f proof.sig && tpm2_sign -c %s -g sha256 -s ecdsa -d "
	                            "-f plain -o proof.sig proof.dig",
	                            handle),
	                 0);
	der = file_blob("proof.sig");
	assert_int_equal(bc_ecdsa_der_to_p1363(der.p, der.n, sig), 0);
	blob_free(&der);
}

struct renew_case {
	const char *signer;        /* the leaf's key */
	const char *next;          /* the next key: its CSR */
	const char *certified;     /* the key the AK certifies (NULL: no key_attestation) */
	const char *key_public;    /* the public area sent as key_public (NULL: certified's) */
	const struct blob *ak_pub; /* NULL: the AK's */
	int other_csr_nonce;       /* qualify the certification with another CSR's hash */
	int flip_signature;
};

/* A RenewRequest for leaf; the HTTP status and, on 200, the verified answer. */
static long renew_tpm(struct bct_cp *cp, const uint8_t *leaf, size_t leaf_len, const char *node_id,
                      const struct renew_case *c, struct bc_join_answer *ans)
{
	Bettercompute__Join__V1__RenewRequest rq = BETTERCOMPUTE__JOIN__V1__RENEW_REQUEST__INIT;
	Bettercompute__Join__V1__TpmKeyAttestation ka =
	    BETTERCOMPUTE__JOIN__V1__TPM_KEY_ATTESTATION__INIT;
	struct blob csr = make_csr(c->next, "node"), kp = {0};
	struct answer a = {0};
	struct bc_client_reply r = {0};
	uint8_t d[32], q[32], sig[64], payload[256], *wire;
	ProtobufCBinaryData chain[1] = {{leaf_len, (uint8_t *)leaf}};
	size_t n = 0, wire_len;
	char err[256], name[64];
	int64_t t = bc_now_ms();

	assert_int_equal(bc_sha256(csr.p, csr.n, d), 0);
	memcpy(payload, d, 32);
	n = 32 + (size_t)snprintf((char *)payload + 32, 64, "%s", node_id) + 1;
	for (int i = 0; i < 8; i++)
		payload[n++] = (uint8_t)((uint64_t)t >> (56 - 8 * i));
	tpm_sign(c->signer, "renew", payload, n, sig);
	rq.chain = chain;
	rq.n_chain = 1;
	rq.csr = (ProtobufCBinaryData){csr.n, csr.p};
	rq.client_time_ms = t;
	rq.proof = (ProtobufCBinaryData){64, sig};
	if (c->certified) {
		memcpy(q, d, 32);
		if (c->other_csr_nonce)
			q[0] ^= 0xff;
		certify(c->certified, q, &a);
		if (c->flip_signature)
			a.csig.p[a.csig.n - 1] ^= 1;
		snprintf(name, sizeof(name), "%s.pub",
		         c->key_public ? c->key_public : c->certified);
		kp = tpmt_file(name);
		ka.ak_public = c->ak_pub ? (ProtobufCBinaryData){c->ak_pub->n, c->ak_pub->p}
		                         : (ProtobufCBinaryData){ak.n, ak.p};
		ka.key_public = (ProtobufCBinaryData){kp.n, kp.p};
		ka.certify_info = (ProtobufCBinaryData){a.cinfo.n, a.cinfo.p};
		ka.signature = (ProtobufCBinaryData){a.csig.n, a.csig.p};
		rq.key_attestation = &ka;
	}
	wire_len = bettercompute__join__v1__renew_request__get_packed_size(&rq);
	wire = malloc(wire_len);
	bettercompute__join__v1__renew_request__pack(&rq, wire);
	assert_int_equal(
	    bc_client_post(&cp->pins, BC_WIRE_PATH_RENEW, wire, wire_len, &r, err, sizeof(err)), 0);
	if (r.status == 200)
		assert_int_equal(bc_client_open_join_response_csr(&cp->pins, r.body, r.len, csr.p,
		                                                  csr.n, ans, err, sizeof(err)),
		                 0);
	free(wire);
	free(r.body);
	blob_free(&csr);
	blob_free(&kp);
	answer_free(&a);
	return r.status;
}

static void expect_renew_refused(struct bct_cp *cp, const uint8_t *leaf, size_t leaf_len,
                                 const char *node_id, const struct renew_case *c,
                                 const char *reason)
{
	struct bc_join_answer ans;
	bc_param p[] = {BC_TEXT(reason), BC_TEXT(node_id)};
	const char *sql = "SELECT COUNT(*) FROM events WHERE type = 'security.renew.refused' AND "
	                  "subject = $2 AND data LIKE '%\"' || $1 || '\"%'";
	int64_t before = bct_count(cp, sql, p, 2);

	assert_int_equal(renew_tpm(cp, leaf, leaf_len, node_id, c, &ans), 403);
	assert_int_equal(bct_count(cp, sql, p, 2), before + 1);
}

static void test_tpm_renewal_certified_by_the_ak(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans, r1, r2;
	struct bc_node_identity id;
	struct answer a;
	char pool[64], urn[256], *h;
	(void)state;

	cp_start_resolved(&cp, "{}", pool);
	struct blob csr = make_csr(NK_HANDLE, "node");
	full_answer(&cp, &csr, NK_HANDLE, &a);
	assert_int_equal(round2(&cp, &csr, &a, &ans), 0);
	answer_free(&a);
	blob_free(&csr);
	h = bct_hex(ak_name, ak_name_len);
	snprintf(urn, sizeof(urn), BC_WIRE_TPM_AK_URN_SHA256 "%s", h);
	free(h);
	const uint8_t *leaf = ans.chain[0];
	size_t leaf_len = ans.chain_lens[0];
	const char *node = ans.node_id;

	/* every reason of the table, each from a good renewal with one thing wrong */
	struct renew_case none = {NK_HANDLE, NK_OTHER, NULL, NULL, NULL, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &none, "key-attestation-missing");
	struct blob not_ak = tpmt_file(NK_OTHER ".pub");
	struct renew_case other_ak = {NK_HANDLE, NK_OTHER, NK_OTHER, NULL, &not_ak, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &other_ak, "key-attestation-ak");
	blob_free(&not_ak);
	struct renew_case nonce = {NK_HANDLE, NK_OTHER, NK_OTHER, NULL, NULL, 1, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &nonce, "node-key-nonce");
	struct renew_case badsig = {NK_HANDLE, NK_OTHER, NK_OTHER, NULL, NULL, 0, 1};
	expect_renew_refused(&cp, leaf, leaf_len, node, &badsig, "node-key-signature");
	struct renew_case badname = {NK_HANDLE, NK_OTHER, NK_OTHER, NK_HANDLE, NULL, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &badname, "node-key-name");
	struct renew_case attrs = {NK_HANDLE, NK_DECRYPT, NK_DECRYPT, NULL, NULL, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &attrs, "node-key-attributes");
	struct renew_case notcsr = {NK_HANDLE, NK_OTHER, NK_HANDLE, NULL, NULL, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &notcsr, "node-key-not-csr");

	/* a good renewal keeps the statement although its CSR asks for none */
	struct renew_case good = {NK_HANDLE, NK_OTHER, NK_OTHER, NULL, NULL, 0, 0};
	assert_int_equal(renew_tpm(&cp, leaf, leaf_len, node, &good, &r1), 200);
	assert_int_equal(bc_pki_node_identity(r1.chain[0], r1.chain_lens[0], "bc.test", &id, NULL),
	                 0);
	assert_int_equal(id.n_statements, 1);
	assert_string_equal(id.statements[0], urn);
	bc_node_identity_clear(&id);
	bc_param np[] = {BC_TEXT(node)};
	char *stmts = bct_text(&cp,
	                       "SELECT statements FROM node_certs WHERE node_id = $1 ORDER BY "
	                       "created_at DESC, serial LIMIT 1",
	                       np, 1);
	assert_non_null(stmts);
	assert_non_null(strstr(stmts, urn));
	free(stmts);
	/* and the next renewal needs the AK again */
	struct renew_case again_none = {NK_OTHER, NK_HANDLE, NULL, NULL, NULL, 0, 0};
	expect_renew_refused(&cp, r1.chain[0], r1.chain_lens[0], node, &again_none,
	                     "key-attestation-missing");
	struct renew_case again = {NK_OTHER, NK_HANDLE, NK_HANDLE, NULL, NULL, 0, 0};
	assert_int_equal(renew_tpm(&cp, r1.chain[0], r1.chain_lens[0], node, &again, &r2), 200);
	bc_join_answer_free(&r2);
	bc_join_answer_free(&r1);

	/* a JoinService that cannot prove statements again renews none */
	bc_join_drop_statement(bc_server_join(cp.srv), BC_WIRE_TPM_AK_URN_SCHEME);
	expect_renew_refused(&cp, leaf, leaf_len, node, &good, "key-statement-unsupported");
	assert_int_equal(
	    bc_join_register_statement(bc_server_join(cp.srv), bc_attest_tpm_statements()), 0);
	bc_join_answer_free(&ans);
	bct_cp_stop(&cp);
}

/* A JoinService that could not prove the AK statement again at renewal issues none:
 * the certified join is refused rather than given a certificate that cannot renew. */
static void test_tpm_statement_renewals_cannot_prove(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct answer a;
	char pool[64];
	(void)state;

	cp_start_resolved(&cp, "{}", pool);
	bc_join_drop_statement(bc_server_join(cp.srv), BC_WIRE_TPM_AK_URN_SCHEME);
	struct blob csr = make_csr(NK_HANDLE, "node");
	full_answer(&cp, &csr, NK_HANDLE, &a);
	assert_int_equal(round2(&cp, &csr, &a, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "join:node-key-statement");
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 0);
	answer_free(&a);
	blob_free(&csr);
	bct_cp_stop(&cp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tpm_join_admitted_and_reclaimed),
	    cmocka_unit_test(test_tpm_refusals_by_name),
	    cmocka_unit_test(test_tpm_ek_refusals),
	    cmocka_unit_test(test_tpm_ek_roots_intermediate_only),
	    cmocka_unit_test(test_tpm_node_key_any),
	    cmocka_unit_test(test_tpm_pcr_policy),
	    cmocka_unit_test(test_tpm_bound_elsewhere),
	    cmocka_unit_test(test_tpm_enrollment_approve_and_deny),
	    cmocka_unit_test(test_tpm_config_errors),
	    cmocka_unit_test(test_tpm_renewal_certified_by_the_ak),
	    cmocka_unit_test(test_tpm_statement_renewals_cannot_prove),
	};
	int rc;

	if (bct_engine_skip())
		return BCT_SKIP;
	if ((rc = bct_tpm_start(&tpm)) != 0 || (rc = agent_prepare()) != 0) {
		if (rc != 77)
			fprintf(stderr,
			        "join_tpm_test: swtpm or the agent's keys did not start (%s)\n",
			        tpm.dir);
		bct_tpm_stop(&tpm);
		return rc == 77 ? 77 : 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_tpm_stop(&tpm);
	return rc;
}
