/* src/agent/tpm*.c: bcd's TPM client against a real swtpm (scripts/swtpm.sh) with a
 * manufacturer CA made by the test, checked against tpm2-tools (an independent
 * implementation) and OpenSSL. Exits 77 when swtpm or tpm2-tools is missing.
 *
 * swtpm serves one connection at a time, so a test closes its connection before it
 * runs a tpm2-tools command. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_swtpm.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <tss2/tss2_mu.h>

#include "agent/tpm.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"

/* ---- helpers ---- */

/* The intermediate CA swtpm_localca issued the EK certificate under. */
static const char *issuer_pem(void)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/tpm/ca/issuercert.pem", dir);
	return p;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = malloc(65536);
	size_t n;

	assert_non_null(f);
	assert_non_null(p);
	n = fread(p, 1, 65536, f);
	fclose(f);
	*len = n;
	return p;
}

static void spit(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	fclose(f);
}

static struct bcd_tpm *open_tpm(void)
{
	struct bcd_tpm *t = NULL;
	char err[256];

	assert_int_equal(bcd_tpm_open(tcti, &t, err, sizeof(err)), 0);
	assert_non_null(t);
	return t;
}

/* No transient object or session is left in the TPM (a flush was missed). */
static void assert_tpm_empty(void)
{
	char out[300];
	size_t n;
	uint8_t *p;

	snprintf(out, sizeof(out), "%s/handles.txt", dir);
	assert_int_equal(
	    sh("tpm2_getcap handles-transient >%s && tpm2_getcap handles-loaded-session "
	       ">>%s && tpm2_getcap handles-saved-session >>%s",
	       out, out, out),
	    0);
	p = slurp(out, &n);
	assert_int_equal(n, 0);
	free(p);
}

static TPMT_PUBLIC parse_public(const uint8_t *p, size_t len)
{
	TPMT_PUBLIC pub;
	size_t off = 0;

	memset(&pub, 0, sizeof(pub));
	assert_int_equal(Tss2_MU_TPMT_PUBLIC_Unmarshal(p, len, &off, &pub), 0);
	assert_int_equal(off, len);
	return pub;
}

static EVP_PKEY *ecc_key(const TPMT_PUBLIC *pub)
{
	uint8_t point[65];
	EVP_PKEY *k = NULL;

	assert_int_equal(pub->type, TPM2_ALG_ECC);
	assert_int_equal(pub->unique.ecc.x.size, 32);
	assert_int_equal(pub->unique.ecc.y.size, 32);
	point[0] = 4;
	memcpy(point + 1, pub->unique.ecc.x.buffer, 32);
	memcpy(point + 33, pub->unique.ecc.y.buffer, 32);
	assert_int_equal(bc_key_from_point(point, &k), 0);
	return k;
}

static void name_of(const uint8_t *pub, size_t len, uint8_t name[static 34])
{
	name[0] = 0x00;
	name[1] = 0x0b;
	assert_int_equal(bc_sha256(pub, len, name + 2), 0);
}

/* Checks a TPMS_ATTEST and TPMT_SIGNATURE as a verifier would, with OpenSSL alone. */
static TPMS_ATTEST check_attest(const struct bcd_tpm_attest *a, EVP_PKEY *ak, uint16_t type,
                                const uint8_t *extra, size_t extra_len)
{
	TPMS_ATTEST at;
	TPMT_SIGNATURE sig;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t rs[64] = {0}, *der = NULL;
	size_t off = 0, derlen = 0;

	assert_int_equal(Tss2_MU_TPMS_ATTEST_Unmarshal(a->attest, a->attest_len, &off, &at), 0);
	assert_int_equal(off, a->attest_len);
	assert_int_equal(at.magic, TPM2_GENERATED_VALUE);
	assert_int_equal(at.type, type);
	assert_int_equal(at.extraData.size, extra_len);
	assert_memory_equal(at.extraData.buffer, extra, extra_len);
	off = 0;
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Unmarshal(a->sig, a->sig_len, &off, &sig), 0);
	assert_int_equal(off, a->sig_len);
	assert_int_equal(sig.sigAlg, TPM2_ALG_ECDSA);
	assert_int_equal(sig.signature.ecdsa.hash, TPM2_ALG_SHA256);
	memcpy(rs + 32 - sig.signature.ecdsa.signatureR.size, sig.signature.ecdsa.signatureR.buffer,
	       sig.signature.ecdsa.signatureR.size);
	memcpy(rs + 64 - sig.signature.ecdsa.signatureS.size, sig.signature.ecdsa.signatureS.buffer,
	       sig.signature.ecdsa.signatureS.size);
	assert_int_equal(bc_ecdsa_p1363_to_der(rs, &der, &derlen), 0);
	assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, ak), 1);
	assert_int_equal(EVP_DigestVerify(ctx, der, derlen, a->attest, a->attest_len), 1);
	EVP_MD_CTX_free(ctx);
	free(der);
	return at;
}

/* ---- tests ---- */

static void test_open_unreachable(void **state)
{
	struct bcd_tpm *t = (struct bcd_tpm *)0x1;
	char err[256];

	/* port 1 on loopback: nothing listens */
	assert_int_equal(bcd_tpm_open("swtpm:host=127.0.0.1,port=1", &t, err, sizeof(err)),
	                 BC_ERR_UNAVAILABLE);
	assert_null(t);
	assert_non_null(strstr(err, "swtpm:host=127.0.0.1,port=1"));
	assert_non_null(strstr(err, "cannot connect"));
	assert_int_equal(bcd_tpm_open("nosuchtcti:x", &t, err, sizeof(err)), BC_ERR_UNAVAILABLE);
	assert_non_null(strstr(err, "cannot connect"));
	assert_int_equal(bcd_tpm_open("", &t, err, sizeof(err)), BC_ERR_CONFIG);
	assert_int_equal(bcd_tpm_open("swtpm:host=127.0.0.1,\nport=1", &t, err, sizeof(err)),
	                 BC_ERR_CONFIG);
}

static void test_ek_rsa(void **state)
{
	struct bcd_tpm *t = open_tpm();
	struct bcd_tpm_ek ek;
	char path[300];
	uint8_t *tools;
	size_t n;

	assert_int_equal(bcd_tpm_ek(t, BCD_TPM_EK_RSA2048, &ek), 0);
	bcd_tpm_close(t);
	/* the same EK as tpm2_createek's (a TPM2B_PUBLIC: a 2-byte size, then the TPMT) */
	snprintf(path, sizeof(path), "%s/ek-rsa.pub", dir);
	assert_int_equal(sh("tpm2_createek -G rsa -u %s -c %s/ek-rsa.ctx >/dev/null && "
	                    "tpm2_flushcontext -t",
	                    path, dir),
	                 0);
	tools = slurp(path, &n);
	assert_int_equal(n, ek.pub_len + 2);
	assert_int_equal((tools[0] << 8) | tools[1], ek.pub_len);
	assert_memory_equal(tools + 2, ek.pub, ek.pub_len);
	free(tools);

	/* the certificate chains root -> issuercert -> EK certificate */
	{
		const unsigned char *p = ek.cert;
		X509 *cert, *root, *issuer;
		X509_STORE *store = X509_STORE_new();
		X509_STORE_CTX *ctx = X509_STORE_CTX_new();
		STACK_OF(X509) *untrusted = sk_X509_new_null();
		BIGNUM *nbn = NULL;
		uint8_t mod[256];
		TPMT_PUBLIC pub = parse_public(ek.pub, ek.pub_len);
		FILE *f;

		assert_non_null(ek.cert);
		assert_non_null(cert = d2i_X509(NULL, &p, (long)ek.cert_len));
		assert_ptr_equal(p, ek.cert + ek.cert_len);
		assert_non_null(f = fopen(root_pem, "r"));
		assert_non_null(root = PEM_read_X509(f, NULL, NULL, NULL));
		fclose(f);
		assert_non_null(f = fopen(issuer_pem(), "r"));
		assert_non_null(issuer = PEM_read_X509(f, NULL, NULL, NULL));
		fclose(f);
		assert_int_equal(X509_STORE_add_cert(store, root), 1);
		assert_true(sk_X509_push(untrusted, issuer) > 0);
		assert_int_equal(X509_STORE_CTX_init(ctx, store, cert, untrusted), 1);
		assert_int_equal(X509_verify_cert(ctx), 1);
		/* with only the root, no chain: the intermediate is needed */
		X509_STORE_CTX_cleanup(ctx);
		assert_int_equal(X509_STORE_CTX_init(ctx, store, cert, NULL), 1);
		assert_int_not_equal(X509_verify_cert(ctx), 1);
		/* its key is the EK's: the same modulus */
		assert_int_equal(
		    EVP_PKEY_get_bn_param(X509_get0_pubkey(cert), OSSL_PKEY_PARAM_RSA_N, &nbn), 1);
		assert_int_equal(BN_bn2binpad(nbn, mod, sizeof(mod)), 256);
		assert_int_equal(pub.unique.rsa.size, 256);
		assert_memory_equal(mod, pub.unique.rsa.buffer, 256);
		BN_free(nbn);
		X509_STORE_CTX_free(ctx);
		X509_STORE_free(store);
		sk_X509_free(untrusted);
		X509_free(cert);
		X509_free(root);
		X509_free(issuer);
	}
	bcd_tpm_ek_free(&ek);
	assert_tpm_empty();
}

static void test_ek_ecc(void **state)
{
	struct bcd_tpm *t = open_tpm();
	struct bcd_tpm_ek ek;
	char path[300];
	uint8_t *tools;
	size_t n;

	assert_int_equal(bcd_tpm_ek(t, BCD_TPM_EK_ECC_P256, &ek), 0);
	/* swtpm_setup certifies a P-384 EK at 0x01C00016 and none at 0x01C0000A: none is ours */
	assert_null(ek.cert);
	assert_int_equal(ek.cert_len, 0);
	assert_non_null(strstr(bcd_tpm_error(t), "another key"));
	bcd_tpm_close(t);
	snprintf(path, sizeof(path), "%s/ek-ecc.pub", dir);
	assert_int_equal(sh("tpm2_createek -G ecc -u %s -c %s/ek-ecc.ctx >/dev/null && "
	                    "tpm2_flushcontext -t",
	                    path, dir),
	                 0);
	tools = slurp(path, &n);
	assert_int_equal(n, ek.pub_len + 2);
	assert_memory_equal(tools + 2, ek.pub, ek.pub_len);
	free(tools);
	bcd_tpm_ek_free(&ek);
	assert_tpm_empty();
}

static void test_ak(void **state)
{
	struct bcd_tpm *t = open_tpm();
	struct bcd_tpm_ak a, b;
	uint8_t name[34];
	TPMT_PUBLIC pub;
	TPMA_OBJECT want = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT |
	                   TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
	                   TPMA_OBJECT_SENSITIVEDATAORIGIN;

	assert_int_equal(bcd_tpm_ak(t, &a), 0);
	bcd_tpm_close(t);
	pub = parse_public(a.pub, a.pub_len);
	assert_int_equal(pub.type, TPM2_ALG_ECC);
	assert_int_equal(pub.nameAlg, TPM2_ALG_SHA256);
	assert_int_equal(pub.objectAttributes & want, want);
	assert_int_equal(pub.objectAttributes & TPMA_OBJECT_DECRYPT, 0);
	assert_int_equal(pub.parameters.eccDetail.curveID, TPM2_ECC_NIST_P256);
	assert_int_equal(pub.parameters.eccDetail.scheme.scheme, TPM2_ALG_ECDSA);
	assert_int_equal(pub.parameters.eccDetail.scheme.details.ecdsa.hashAlg, TPM2_ALG_SHA256);
	name_of(a.pub, a.pub_len, name);
	assert_memory_equal(a.name, name, 34);
	/* another connection derives the same AK */
	t = open_tpm();
	assert_int_equal(bcd_tpm_ak(t, &b), 0);
	bcd_tpm_close(t);
	assert_memory_equal(a.name, b.name, 34);
	assert_int_equal(a.pub_len, b.pub_len);
	assert_memory_equal(a.pub, b.pub, a.pub_len);
	assert_tpm_empty();
}

/* tpm2-tools' credential file: u32 magic, u32 version, TPM2B_ID_OBJECT,
 * TPM2B_ENCRYPTED_SECRET. */
static void make_credential(const char *ekpub, const uint8_t name[static 34], const uint8_t *secret,
                            size_t len, uint8_t **id, size_t *id_len, uint8_t **enc,
                            size_t *enc_len)
{
	char hex[69], sec[300], out[300];
	uint8_t *p;
	size_t n, a;

	for (int i = 0; i < 34; i++)
		sprintf(hex + 2 * i, "%02x", name[i]);
	snprintf(sec, sizeof(sec), "%s/secret.bin", dir);
	snprintf(out, sizeof(out), "%s/cred.bin", dir);
	spit(sec, secret, len);
	assert_int_equal(sh("tpm2_makecredential -T none -u %s -s %s -n %s -o %s >/dev/null", ekpub,
	                    sec, hex, out),
	                 0);
	p = slurp(out, &n);
	assert_true(n > 12);
	assert_int_equal((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3],
	                 0xBADCC0DEu);
	a = 2 + ((size_t)p[8] << 8 | p[9]);
	assert_true(8 + a + 2 <= n);
	*id_len = a;
	*enc_len = n - 8 - a;
	assert_int_equal(*enc_len, 2 + ((size_t)p[8 + a] << 8 | p[8 + a + 1]));
	assert_non_null(*id = malloc(*id_len));
	assert_non_null(*enc = malloc(*enc_len + 1));
	memcpy(*id, p + 8, *id_len);
	memcpy(*enc, p + 8 + a, *enc_len);
	free(p);
}

static void test_activate(void **state)
{
	static const uint8_t cv[32] = "the server's challenge secret!!";
	struct bcd_tpm *t = open_tpm();
	struct bcd_tpm_ak ak;
	uint8_t *id = NULL, *enc = NULL, *got = NULL, other[34];
	size_t id_len, enc_len, got_len;
	char ekpub[300];

	assert_int_equal(bcd_tpm_ak(t, &ak), 0);
	bcd_tpm_close(t);
	snprintf(ekpub, sizeof(ekpub), "%s/ek-act.pub", dir);
	assert_int_equal(sh("tpm2_createek -G rsa -u %s -c %s/ek-act.ctx >/dev/null && "
	                    "tpm2_flushcontext -t",
	                    ekpub, dir),
	                 0);
	make_credential(ekpub, ak.name, cv, sizeof(cv), &id, &id_len, &enc, &enc_len);

	t = open_tpm();
	assert_int_equal(
	    bcd_tpm_activate(t, BCD_TPM_EK_RSA2048, id, id_len, enc, enc_len, &got, &got_len), 0);
	assert_int_equal(got_len, sizeof(cv));
	assert_memory_equal(got, cv, sizeof(cv));
	bc_freezero(got, got_len);
	/* a trailing byte, a truncated blob */
	enc[enc_len] = 0;
	assert_int_equal(
	    bcd_tpm_activate(t, BCD_TPM_EK_RSA2048, id, id_len, enc, enc_len + 1, &got, &got_len),
	    BC_ERR_TRAILING);
	assert_null(got);
	assert_int_equal(
	    bcd_tpm_activate(t, BCD_TPM_EK_RSA2048, id, id_len - 1, enc, enc_len, &got, &got_len),
	    BC_ERR_INVALID);
	/* an altered credential fails the TPM's integrity check, and leaks no slot */
	id[id_len - 1] ^= 1;
	assert_int_equal(
	    bcd_tpm_activate(t, BCD_TPM_EK_RSA2048, id, id_len, enc, enc_len, &got, &got_len),
	    BC_ERR_IO);
	assert_null(got);
	assert_int_not_equal(bcd_tpm_last_rc(t), 0);
	assert_non_null(strstr(bcd_tpm_error(t), "ActivateCredential"));
	/* under the ECC EK, the RSA EK's credential does not activate */
	id[id_len - 1] ^= 1;
	assert_int_not_equal(
	    bcd_tpm_activate(t, BCD_TPM_EK_ECC_P256, id, id_len, enc, enc_len, &got, &got_len), 0);
	bcd_tpm_close(t);
	free(id);
	free(enc);

	/* a credential for another name (another AK) does not activate with ours */
	memcpy(other, ak.name, 34);
	other[33] ^= 1;
	make_credential(ekpub, other, cv, sizeof(cv), &id, &id_len, &enc, &enc_len);
	t = open_tpm();
	assert_int_equal(
	    bcd_tpm_activate(t, BCD_TPM_EK_RSA2048, id, id_len, enc, enc_len, &got, &got_len),
	    BC_ERR_IO);
	/* and after all that, a good one still does: every slot was given back */
	free(id);
	free(enc);
	make_credential(ekpub, ak.name, cv, sizeof(cv), &id, &id_len, &enc, &enc_len);
	assert_int_equal(
	    bcd_tpm_activate(t, BCD_TPM_EK_RSA2048, id, id_len, enc, enc_len, &got, &got_len), 0);
	assert_memory_equal(got, cv, sizeof(cv));
	bc_freezero(got, got_len);
	bcd_tpm_close(t);
	free(id);
	free(enc);
	assert_tpm_empty();
}

static void check_quote(const struct bcd_tpm_attest *q, EVP_PKEY *akkey, const uint8_t *extra,
                        const uint32_t *want, size_t n_want)
{
	TPMS_ATTEST at = check_attest(q, akkey, TPM2_ST_ATTEST_QUOTE, extra, 32);
	const TPMS_PCR_SELECTION *s = &at.attested.quote.pcrSelect.pcrSelections[0];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t d[32];
	unsigned dlen = 0;

	assert_int_equal(q->pcr_hash_alg, TPM2_ALG_SHA256);
	assert_int_equal(q->n_pcrs, n_want);
	assert_int_equal(at.attested.quote.pcrSelect.count, 1);
	assert_int_equal(s->hash, TPM2_ALG_SHA256);
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (size_t i = 0; i < q->n_pcrs; i++) {
		assert_int_equal(q->pcrs[i].index, want[i]);
		assert_int_equal(q->pcrs[i].len, 32);
		assert_true(s->pcrSelect[want[i] / 8] & (1u << (want[i] % 8)));
		EVP_DigestUpdate(ctx, q->pcrs[i].digest, 32);
	}
	EVP_DigestFinal_ex(ctx, d, &dlen);
	EVP_MD_CTX_free(ctx);
	assert_int_equal(at.attested.quote.pcrDigest.size, 32);
	assert_memory_equal(at.attested.quote.pcrDigest.buffer, d, 32);
}

static void test_quote(void **state)
{
	/* unordered, a duplicate, and more than one PCR_Read's worth (8) */
	static const uint32_t ask[] = {7, 0, 1, 2, 3, 4, 5, 6, 16, 23, 0};
	static const uint32_t sorted[] = {0, 1, 2, 3, 4, 5, 6, 7, 16, 23};
	struct bcd_tpm *t = open_tpm();
	struct bcd_tpm_attest q, q2;
	struct bcd_tpm_ak ak;
	EVP_PKEY *akkey;
	uint8_t extra[32], before[32];
	uint32_t zero = 0, big = 24;

	assert_int_equal(bc_random(extra, sizeof(extra)), 0);
	assert_int_equal(bcd_tpm_ak(t, &ak), 0);
	{
		TPMT_PUBLIC pub = parse_public(ak.pub, ak.pub_len);
		akkey = ecc_key(&pub);
	}
	assert_int_equal(bcd_tpm_quote(t, TPM2_ALG_SHA256, ask, sizeof(ask) / sizeof(ask[0]), extra,
	                               sizeof(extra), &q),
	                 0);
	assert_memory_equal(q.ak_name, ak.name, 34);
	check_quote(&q, akkey, extra, sorted, sizeof(sorted) / sizeof(sorted[0]));
	memcpy(before, q.pcrs[8].digest, 32); /* PCR 16 */
	bcd_tpm_attest_free(&q);

	/* refused before the TPM sees them */
	assert_int_equal(bcd_tpm_quote(t, TPM2_ALG_SHA1, &zero, 1, extra, 32, &q),
	                 BC_ERR_UNSUPPORTED);
	assert_int_equal(bcd_tpm_quote(t, TPM2_ALG_SHA256, &big, 1, extra, 32, &q), BC_ERR_INVALID);
	assert_int_equal(bcd_tpm_quote(t, TPM2_ALG_SHA256, &zero, 0, extra, 32, &q),
	                 BC_ERR_INVALID);
	assert_int_equal(bcd_tpm_quote(t, TPM2_ALG_SHA256, &zero, 1, extra, 65, &q),
	                 BC_ERR_INVALID);
	assert_null(q.attest);
	/* the SHA-384 bank is not active on swtpm: a clear error, no slot leaked */
	assert_int_not_equal(bcd_tpm_quote(t, TPM2_ALG_SHA384, &zero, 1, extra, 32, &q), 0);
	bcd_tpm_close(t);

	/* a PCR extended: the next quote covers its new value */
	assert_int_equal(sh("tpm2_pcrextend 16:sha256=%064d >/dev/null", 1), 0);
	t = open_tpm();
	assert_int_equal(bcd_tpm_quote(t, TPM2_ALG_SHA256, ask, sizeof(ask) / sizeof(ask[0]), extra,
	                               sizeof(extra), &q2),
	                 0);
	check_quote(&q2, akkey, extra, sorted, sizeof(sorted) / sizeof(sorted[0]));
	assert_memory_not_equal(q2.pcrs[8].digest, before, 32);
	bcd_tpm_attest_free(&q2);
	bcd_tpm_close(t);
	EVP_PKEY_free(akkey);
	assert_tpm_empty();
}

static void test_nodekey(void **state)
{
	struct bcd_tpm *t = open_tpm();
	struct bcd_tpm_nodekey *k = NULL, *k2 = NULL, *k3 = NULL;
	struct bcd_tpm_attest c;
	struct bcd_tpm_ak ak;
	uint8_t unique[32], other[32], name[34], sig[64], digest[32], point[65], q[32], *csr = NULL;
	const uint8_t *pb, *pb2;
	size_t len, len2, csr_len = 0;
	EVP_PKEY *pub = NULL, *akkey;
	TPMT_PUBLIC tp;
	bc_buf msg;
	TPMA_OBJECT want = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
	                   TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH |
	                   TPMA_OBJECT_NODA | TPMA_OBJECT_SIGN_ENCRYPT;

	assert_int_equal(bcd_tpm_unique_new(unique), 0);
	memcpy(other, unique, 32);
	other[0] ^= 1;
	assert_int_equal(bcd_tpm_nodekey_load(t, unique, &k), 0);
	/* the same unique derives the same key, another unique another key */
	assert_int_equal(bcd_tpm_nodekey_load(t, unique, &k2), 0);
	pb = bcd_tpm_nodekey_public(k, &len);
	pb2 = bcd_tpm_nodekey_public(k2, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(pb, pb2, len);
	assert_int_equal(EVP_PKEY_eq(bcd_tpm_nodekey_pkey(k), bcd_tpm_nodekey_pkey(k2)), 1);
	bcd_tpm_nodekey_free(k2);
	assert_int_equal(bcd_tpm_nodekey_load(t, other, &k3), 0);
	assert_int_not_equal(EVP_PKEY_eq(bcd_tpm_nodekey_pkey(k), bcd_tpm_nodekey_pkey(k3)), 1);
	bcd_tpm_nodekey_free(k3);

	/* the template's attributes, and the name from the public area */
	tp = parse_public(pb, len);
	assert_int_equal(tp.objectAttributes, want);
	assert_int_equal(tp.parameters.eccDetail.curveID, TPM2_ECC_NIST_P256);
	name_of(pb, len, name);
	assert_memory_equal(bcd_tpm_nodekey_name(k), name, 34);

	/* a CSR made in the TPM passes the server's check, for this key */
	assert_int_equal(
	    bcd_tpm_nodekey_csr(t, k, "node_01hzx3k9q8w7e6r5t4y3u2i1o0", &csr, &csr_len), 0);
	assert_int_equal(bc_csr_check(csr, csr_len, &pub), 0);
	assert_int_equal(EVP_PKEY_eq(pub, bcd_tpm_nodekey_pkey(k)), 1);
	EVP_PKEY_free(pub);

	/* a proof signed in the TPM verifies as ES256 under a purpose */
	bc_buf_init(&msg, 0);
	assert_int_equal(bc_buf_put_cstr(&msg, BC_WIRE_SIG_DOMAIN), 0);
	assert_int_equal(bc_buf_put_cstr(&msg, BC_PURPOSE_RENEW), 0);
	assert_int_equal(bc_buf_put(&msg, "payload", 7), 0);
	assert_int_equal(bc_sha256(msg.p, msg.len, digest), 0);
	bc_buf_free(&msg);
	assert_int_equal(bcd_tpm_nodekey_sign(t, k, digest, 32, sig), 0);
	assert_int_equal(bc_p256_public_point(bcd_tpm_nodekey_pkey(k), point), 0);
	assert_int_equal(bc_es256_verify(point, BC_PURPOSE_RENEW, "payload", 7, sig, 64), 0);
	assert_int_equal(bcd_tpm_nodekey_sign(t, k, digest, 31, sig), BC_ERR_INVALID);

	/* the AK certifies it over sha256(csr) */
	assert_int_equal(bc_sha256(csr, csr_len, q), 0);
	assert_int_equal(bcd_tpm_certify(t, k, q, sizeof(q), &c), 0);
	assert_int_equal(bcd_tpm_ak(t, &ak), 0);
	assert_memory_equal(c.ak_name, ak.name, 34);
	tp = parse_public(ak.pub, ak.pub_len);
	akkey = ecc_key(&tp);
	{
		TPMS_ATTEST at = check_attest(&c, akkey, TPM2_ST_ATTEST_CERTIFY, q, sizeof(q));
		assert_int_equal(at.attested.certify.name.size, 34);
		assert_memory_equal(at.attested.certify.name.name, name, 34);
	}
	bcd_tpm_attest_free(&c);
	EVP_PKEY_free(akkey);
	bcd_tpm_nodekey_free(k);
	free(csr);

	/* a second connection derives the same key from the same unique */
	bcd_tpm_close(t);
	t = open_tpm();
	assert_int_equal(bcd_tpm_nodekey_load(t, unique, &k), 0);
	/* the name covers the whole public area, so the same name is the same key */
	assert_memory_equal(bcd_tpm_nodekey_name(k), name, 34);
	bcd_tpm_nodekey_free(k);
	bcd_tpm_close(t);
	assert_tpm_empty();
}

static void test_record(void **state)
{
	uint8_t unique[32], got[32], b33[33];
	char *pem = NULL, buf[8192];
	BIO *bio;
	char *data;
	long n;

	assert_int_equal(bc_random(unique, 32), 0);
	assert_int_equal(bcd_tpm_record_encode(unique, &pem), 0);
	assert_non_null(strstr(pem, "-----BEGIN BCD TPM NODE KEY-----"));
	assert_int_equal(bcd_tpm_record_decode(pem, strlen(pem), got), 0);
	assert_memory_equal(got, unique, 32);
	/* white space around it is fine; text after it, or before it, is not */
	snprintf(buf, sizeof(buf), "\n  %s\n\n", pem);
	assert_int_equal(bcd_tpm_record_decode(buf, strlen(buf), got), 0);
	snprintf(buf, sizeof(buf), "%sx\n", pem);
	assert_int_equal(bcd_tpm_record_decode(buf, strlen(buf), got), BC_ERR_TRAILING);
	snprintf(buf, sizeof(buf), "%s%s", pem, pem);
	assert_int_equal(bcd_tpm_record_decode(buf, strlen(buf), got), BC_ERR_TRAILING);
	snprintf(buf, sizeof(buf), "junk\n%s", pem);
	assert_int_equal(bcd_tpm_record_decode(buf, strlen(buf), got), BC_ERR_INVALID);
	/* another block type */
	snprintf(buf, sizeof(buf), "%s", pem);
	memcpy(strstr(buf, "BCD TPM NODE KEY"), "BCD TPM NODE KEX", 16);
	assert_int_equal(bcd_tpm_record_decode(buf, strlen(buf), got), BC_ERR_INVALID);
	assert_int_equal(bcd_tpm_record_decode(pem, 0, got), BC_ERR_INVALID);
	free(pem);

	/* 31 and 33 bytes */
	for (int sz = 31; sz <= 33; sz += 2) {
		assert_non_null(bio = BIO_new(BIO_s_mem()));
		memset(b33, 7, sizeof(b33));
		assert_true(PEM_write_bio(bio, BCD_TPM_NODE_KEY_PEM, "", b33, sz) > 0);
		n = BIO_get_mem_data(bio, &data);
		assert_int_equal(bcd_tpm_record_decode(data, (size_t)n, got), BC_ERR_INVALID);
		BIO_free(bio);
	}
	/* a header (as an encrypted PEM would have) */
	assert_non_null(bio = BIO_new(BIO_s_mem()));
	assert_true(
	    PEM_write_bio(bio, BCD_TPM_NODE_KEY_PEM, "Proc-Type: 4,ENCRYPTED\n", unique, 32) > 0);
	n = BIO_get_mem_data(bio, &data);
	assert_int_equal(bcd_tpm_record_decode(data, (size_t)n, got), BC_ERR_INVALID);
	BIO_free(bio);
	/* over the bound */
	memset(buf, ' ', sizeof(buf));
	buf[sizeof(buf) - 1] = '\0';
	assert_int_equal(bcd_tpm_record_decode(buf, strlen(buf), got), BC_ERR_LIMIT);
	/* an embedded NUL */
	assert_int_equal(bcd_tpm_record_decode("-----BEGIN \0", 12, got), BC_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record), cmocka_unit_test(test_open_unreachable),
	    cmocka_unit_test(test_ek_rsa), cmocka_unit_test(test_ek_ecc),
	    cmocka_unit_test(test_ak),     cmocka_unit_test(test_activate),
	    cmocka_unit_test(test_quote),  cmocka_unit_test(test_nodekey),
	};

	return agent_swtpm_run("agent_tpm_test", tests, sizeof(tests) / sizeof(tests[0]));
}
