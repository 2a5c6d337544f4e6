/* src/tpm against an independent implementation: swtpm and tpm2-tools. Names as
 * tpm2_createak prints them, credentials our MakeCredential makes activated by
 * tpm2_activatecredential (RSA-2048, ECC P-256 and P-384 EKs), quote signatures of
 * ECDSA, RSASSA and RSAPSS AKs verified; and the negatives of every parser: truncated
 * input, trailing bytes, wrong types, non-canonical encodings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/hmac.h>

#include "bc/crypto.h"
#include "bct_tpm.h"
#include "tpm/tpm.h"

static struct bct_tpm tpm;

/* The EK's policy: PolicySecret(TPM_RH_ENDORSEMENT) in a policy session. */
#define ACTIVATE                                                                                   \
	"rm -f cred.out && tpm2_startauthsession --policy-session -S s.ctx && "                    \
	"tpm2_policysecret -S s.ctx -c e && tpm2_activatecredential -c akx.ctx -C %s "             \
	"-i cred.in -o cred.out -P session:s.ctx"
/* An EK with userWithAuth and no policy: password sessions for both keys. */
#define ACTIVATE_PW                                                                                \
	"rm -f cred.out && tpm2_activatecredential -c akx.ctx -C %s -i cred.in -o cred.out"

/* A TPM2B_PUBLIC file as tpm2-tools writes it (-f tss): the TPMT_PUBLIC after the
 * 2-byte size. */
static uint8_t *tpmt_of(const char *file, size_t *len)
{
	size_t n = 0;
	uint8_t *p = bct_tpm_read(&tpm, file, &n), *q;

	assert_non_null(p);
	assert_true(n > 2);
	assert_int_equal(((size_t)p[0] << 8 | p[1]), n - 2);
	q = malloc(n - 2);
	memcpy(q, p + 2, n - 2);
	free(p);
	*len = n - 2;
	return q;
}

static void test_public_negatives(void **state)
{
	TPMT_PUBLIC pub;
	uint8_t *ak, *buf;
	size_t n;
	(void)state;

	assert_int_equal(bct_tpm_sh(&tpm, "tpm2_createak -C 0x81010001 -c ak.ctx -G ecc -g sha256 "
	                                  "-s ecdsa -u ak.pub -n ak.name -f tss"),
	                 0);
	ak = tpmt_of("ak.pub", &n);
	assert_int_equal(bc_tpm_public_parse(ak, n, &pub), 0);
	assert_int_equal(pub.type, TPM2_ALG_ECC);
	assert_int_equal(bc_tpm_check_ak(&pub), 0);
	/* an AK is not a node key's shape of EK */
	assert_int_equal(bc_tpm_check_ek(&pub), BC_ERR_INVALID);
	/* every truncation is refused */
	for (size_t k = 0; k < n; k++)
		assert_true(bc_tpm_public_parse(ak, k, &pub) < 0);
	/* trailing bytes */
	buf = malloc(n + 1);
	memcpy(buf, ak, n);
	buf[n] = 0;
	assert_int_equal(bc_tpm_public_parse(buf, n + 1, &pub), BC_ERR_TRAILING);
	/* a wrong type */
	memcpy(buf, ak, n);
	buf[0] = 0x99;
	buf[1] = 0x99;
	assert_true(bc_tpm_public_parse(buf, n, &pub) < 0);
	/* decrypt set: not an AK */
	memcpy(buf, ak, n);
	buf[5] |= 0x02; /* objectAttributes bytes 4..7: 0x00020000 is decrypt */
	assert_int_equal(bc_tpm_public_parse(buf, n, &pub), 0);
	assert_int_equal(bc_tpm_check_ak(&pub), BC_ERR_INVALID);
	/* too large */
	assert_int_equal(bc_tpm_public_parse(ak, BC_TPM_MAX_STRUCT + 1, &pub), BC_ERR_LIMIT);
	free(buf);
	free(ak);
}

static void test_name_is_tpm2_tools(void **state)
{
	uint8_t name[BC_TPM_NAME_MAX], *ak, *want;
	size_t n, len, wl;
	TPMT_PUBLIC pub;
	(void)state;

	ak = tpmt_of("ak.pub", &n);
	assert_int_equal(bc_tpm_public_parse(ak, n, &pub), 0);
	assert_int_equal(bc_tpm_name(&pub, ak, n, name, &len), 0);
	want = bct_tpm_read(&tpm, "ak.name", &wl);
	assert_non_null(want);
	assert_int_equal(len, wl);
	assert_memory_equal(name, want, len);
	free(want);
	free(ak);
}

static int activate_cmd(const char *ek_handle, int policy)
{
	return policy ? bct_tpm_sh(&tpm, ACTIVATE, ek_handle)
	              : bct_tpm_sh(&tpm, ACTIVATE_PW, ek_handle);
}

/* Our credential for the AK akx (akx.pub, akx.ctx) under ek, activated by
 * tpm2_activatecredential: the EK authorized by its PolicySecret (policy) or by a
 * password. */
static void activate_ak(const char *ek_handle, const char *ek_pub, int policy)
{
	uint8_t secret[32], name[BC_TPM_NAME_MAX], *ek, *ak, *id = NULL, *enc = NULL, *got;
	size_t ekn, akn, nl, idl, encl, gl;
	TPMT_PUBLIC ekp, akp;
	uint8_t hdr[8] = {0xba, 0xdc, 0xc0, 0xde, 0, 0, 0, 1};
	FILE *f;
	char path[600];

	ek = tpmt_of(ek_pub, &ekn);
	ak = tpmt_of("akx.pub", &akn);
	assert_int_equal(bc_tpm_public_parse(ek, ekn, &ekp), 0);
	assert_int_equal(bc_tpm_check_ek(&ekp), 0);
	assert_int_equal(bc_tpm_public_parse(ak, akn, &akp), 0);
	assert_int_equal(bc_tpm_name(&akp, ak, akn, name, &nl), 0);
	assert_int_equal(bc_random(secret, 32), 0);
	assert_int_equal(bc_tpm_make_credential(&ekp, name, nl, secret, 32, &id, &idl, &enc, &encl),
	                 0);
	snprintf(path, sizeof(path), "%s/cred.in", tpm.dir);
	assert_non_null(f = fopen(path, "wb"));
	fwrite(hdr, 1, 8, f);
	fwrite(id, 1, idl, f);
	fwrite(enc, 1, encl, f);
	fclose(f);
	assert_int_equal(activate_cmd(ek_handle, policy), 0);
	got = bct_tpm_read(&tpm, "cred.out", &gl);
	assert_non_null(got);
	assert_int_equal(gl, 32);
	assert_memory_equal(got, secret, 32);
	/* the credential for another name does not activate */
	name[nl - 1] ^= 1;
	free(id);
	free(enc);
	assert_int_equal(bc_tpm_make_credential(&ekp, name, nl, secret, 32, &id, &idl, &enc, &encl),
	                 0);
	assert_non_null(f = fopen(path, "wb"));
	fwrite(hdr, 1, 8, f);
	fwrite(id, 1, idl, f);
	fwrite(enc, 1, encl, f);
	fclose(f);
	assert_int_not_equal(activate_cmd(ek_handle, policy), 0);
	free(got);
	free(id);
	free(enc);
	free(ek);
	free(ak);
}

/* An AK as tpm2_createak makes it, under an EK with the standard policy. */
static void activate(const char *ek_handle, const char *ek_pub)
{
	assert_int_equal(bct_tpm_sh(&tpm,
	                            "tpm2_createak -C %s -c akx.ctx -G ecc -g sha256 -s ecdsa "
	                            "-u akx.pub -n akx.name -f tss",
	                            ek_handle),
	                 0);
	activate_ak(ek_handle, ek_pub, 1);
}

static void test_make_credential_rsa_ek(void **state)
{
	(void)state;
	assert_int_equal(bct_tpm_sh(&tpm, "tpm2_readpublic -c 0x81010001 -o ekrsa.pub -f tss"), 0);
	activate("0x81010001", "ekrsa.pub");
}

static void test_make_credential_ecc_ek(void **state)
{
	(void)state;
	assert_int_equal(bct_tpm_sh(&tpm, "tpm2_createek -c ekecc.ctx -G ecc -u ekecc.pub -f tss"),
	                 0);
	activate("ekecc.ctx", "ekecc.pub");
}

/* An EK on P-384: a restricted decryption primary in the endorsement hierarchy,
 * nameAlg halg, symmetric aes (e.g. "aes256cfb"). swtpm's own P-384 EK (the
 * high-range template) wants a PolicyOR session tpm2_activatecredential does not
 * set up, so this one has userWithAuth and no policy: password sessions authorize
 * it. tpm2_createak authorizes its parent with PolicySecret, which an EK without a
 * policy refuses (0x99D), so the AK (a restricted ECDSA key, nameAlg ak_halg, curve
 * ak_curve) is made with tpm2_create and tpm2_load under the EK. */
static void activate_p384(const char *halg, const char *aes, uint16_t name_alg, uint16_t bits,
                          const char *ak_halg, const char *ak_curve)
{
	uint8_t secret[32], name[BC_TPM_NAME_MAX], *ek, *ak, *id = NULL, *enc = NULL;
	size_t ekn, akn, nl, idl, encl, hs = bc_tpm_hash_size(name_alg);
	TPMT_PUBLIC ekp, akp;

	assert_int_equal(bct_tpm_sh(&tpm,
	                            "tpm2_createprimary -C e -g %s -G ecc384:%s -a "
	                            "'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|"
	                            "restricted|decrypt' -c ekp.ctx >/dev/null && "
	                            "tpm2_readpublic -c ekp.ctx -o ekp.pub -f tss >/dev/null",
	                            halg, aes),
	                 0);
	assert_int_equal(bct_tpm_sh(&tpm,
	                            "tpm2_create -C ekp.ctx -g %s -G %s:ecdsa-%s:null -a "
	                            "'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|"
	                            "restricted|sign' -u akx.pub -r akx.priv >/dev/null && "
	                            "tpm2_load -C ekp.ctx -u akx.pub -r akx.priv -c akx.ctx "
	                            ">/dev/null",
	                            ak_halg, ak_curve, ak_halg),
	                 0);
	/* the path under test: a P-384 EK of this nameAlg and AES key size */
	ek = tpmt_of("ekp.pub", &ekn);
	assert_int_equal(bc_tpm_public_parse(ek, ekn, &ekp), 0);
	assert_int_equal(ekp.type, TPM2_ALG_ECC);
	assert_int_equal(ekp.parameters.eccDetail.curveID, TPM2_ECC_NIST_P384);
	assert_int_equal(ekp.nameAlg, name_alg);
	assert_int_equal(ekp.parameters.eccDetail.symmetric.keyBits.aes, bits);
	assert_int_equal(ekp.unique.ecc.x.size, 48);
	ak = tpmt_of("akx.pub", &akn);
	assert_int_equal(bc_tpm_public_parse(ak, akn, &akp), 0);
	assert_int_equal(bc_tpm_check_ak(&akp), 0);
	assert_int_equal(bc_tpm_name(&akp, ak, akn, name, &nl), 0);
	/* the shapes: u16 || integrity (|H|) || encId (u16 || 32); the point Q at 48 bytes */
	assert_int_equal(bc_random(secret, 32), 0);
	assert_int_equal(bc_tpm_make_credential(&ekp, name, nl, secret, 32, &id, &idl, &enc, &encl),
	                 0);
	assert_int_equal(idl, 2 + 2 + hs + 2 + 32);
	assert_int_equal(encl, 2 + 2 + 48 + 2 + 48);
	free(id);
	free(enc);
	free(ek);
	free(ak);
	activate_ak("ekp.ctx", "ekp.pub", 0);
}

static void test_make_credential_p384_sha384_ek(void **state)
{
	(void)state;
	activate_p384("sha384", "aes256cfb", TPM2_ALG_SHA384, 256, "sha384", "ecc384");
}

static void test_make_credential_p384_sha256_ek(void **state)
{
	(void)state;
	activate_p384("sha256", "aes256cfb", TPM2_ALG_SHA256, 256, "sha256", "ecc256");
}

/* SHA-384 EK, AES-128, a SHA-256 AK name */
static void test_make_credential_p384_sha384_aes128_ek(void **state)
{
	(void)state;
	activate_p384("sha384", "aes128cfb", TPM2_ALG_SHA384, 128, "sha256", "ecc256");
}

static void quote_with(const char *alg, const char *scheme)
{
	static const char nonce[] =
	    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	uint8_t *ak, *q, *s;
	size_t akn, qn, sn;
	TPMT_PUBLIC pub;
	TPMS_ATTEST att;
	TPMT_SIGNATURE sig;
	EVP_PKEY *key = NULL;

	assert_int_equal(bct_tpm_sh(&tpm,
	                            "tpm2_createak -C 0x81010001 -c aq.ctx -G %s -g sha256 "
	                            "-s %s -u aq.pub -f tss",
	                            alg, scheme),
	                 0);
	assert_int_equal(bct_tpm_sh(&tpm,
	                            "tpm2_quote -c aq.ctx -l sha256:0,1,2,3,4,5,6,7 -q %s "
	                            "-m q.msg -s q.sig -g sha256 --scheme %s",
	                            nonce, scheme),
	                 0);
	ak = tpmt_of("aq.pub", &akn);
	q = bct_tpm_read(&tpm, "q.msg", &qn);
	s = bct_tpm_read(&tpm, "q.sig", &sn);
	assert_int_equal(bc_tpm_public_parse(ak, akn, &pub), 0);
	assert_int_equal(bc_tpm_check_ak(&pub), 0);
	assert_int_equal(bc_tpm_public_key(&pub, &key), 0);
	assert_int_equal(bc_tpm_attest_parse(q, qn, &att), 0);
	assert_int_equal(att.magic, TPM2_GENERATED_VALUE);
	assert_int_equal(att.type, TPM2_ST_ATTEST_QUOTE);
	assert_int_equal(att.extraData.size, 32);
	assert_int_equal(bc_tpm_signature_parse(s, sn, &sig), 0);
	assert_int_equal(bc_tpm_signature_verify(key, &sig, q, qn), 0);
	/* one bit of the quote changed: no longer verifies */
	q[qn - 1] ^= 1;
	assert_int_equal(bc_tpm_signature_verify(key, &sig, q, qn), BC_ERR_VERIFY);
	q[qn - 1] ^= 1;
	/* the selection: SHA-256 0-7, and PCR 8 is not covered */
	uint32_t sel[24], want[] = {0, 7}, more[] = {8};
	size_t n = 0;
	assert_int_equal(
	    bc_tpm_selection(&att.attested.quote.pcrSelect, TPM2_ALG_SHA256, want, 2, sel, &n), 0);
	assert_int_equal(n, 8);
	assert_int_equal(
	    bc_tpm_selection(&att.attested.quote.pcrSelect, TPM2_ALG_SHA256, more, 1, sel, &n),
	    BC_ERR_INVALID);
	assert_int_equal(
	    bc_tpm_selection(&att.attested.quote.pcrSelect, TPM2_ALG_SHA384, want, 2, sel, &n),
	    BC_ERR_INVALID);
	/* negatives: truncation, trailing bytes, a signature of an unknown algorithm */
	for (size_t k = 0; k < qn; k++)
		assert_true(bc_tpm_attest_parse(q, k, &att) < 0);
	uint8_t *big = malloc(qn + 1);
	memcpy(big, q, qn);
	big[qn] = 0;
	assert_int_equal(bc_tpm_attest_parse(big, qn + 1, &att), BC_ERR_TRAILING);
	free(big);
	for (size_t k = 0; k < sn; k++)
		assert_true(bc_tpm_signature_parse(s, k, &sig) < 0);
	s[0] = 0x00;
	s[1] = 0x01; /* TPM_ALG_RSA is no signature */
	assert_true(bc_tpm_signature_parse(s, sn, &sig) < 0);
	EVP_PKEY_free(key);
	free(ak);
	free(q);
	free(s);
}

static void test_quote_ecdsa(void **state)
{
	(void)state;
	quote_with("ecc", "ecdsa");
}

static void test_quote_rsassa(void **state)
{
	(void)state;
	quote_with("rsa", "rsassa");
}

static void test_quote_rsapss(void **state)
{
	(void)state;
	quote_with("rsa", "rsapss");
}

/* The PCR digest of tpm2_pcrread's values is the quote's. */
static void test_pcr_digest(void **state)
{
	uint8_t *v, *q, d[64];
	const uint8_t *vals[8];
	size_t vn, qn, dl;
	TPMS_ATTEST att;
	(void)state;

	assert_int_equal(
	    bct_tpm_sh(&tpm,
	               "tpm2_pcrextend 3:sha256=%s && tpm2_pcrread "
	               "sha256:0,1,2,3,4,5,6,7 -o pcrs.bin && tpm2_quote -c aq.ctx "
	               "-l sha256:0,1,2,3,4,5,6,7 -q 00 -m q2.msg -s q2.sig -g sha256 "
	               "--scheme rsapss",
	               "0101010101010101010101010101010101010101010101010101010101010101"),
	    0);
	v = bct_tpm_read(&tpm, "pcrs.bin", &vn);
	q = bct_tpm_read(&tpm, "q2.msg", &qn);
	assert_int_equal(vn, 8 * 32);
	for (int i = 0; i < 8; i++)
		vals[i] = v + 32 * i;
	assert_int_equal(bc_tpm_attest_parse(q, qn, &att), 0);
	assert_int_equal(bc_tpm_pcr_digest(TPM2_ALG_SHA256, TPM2_ALG_SHA256, vals, 8, d, &dl), 0);
	assert_int_equal(dl, att.attested.quote.pcrDigest.size);
	assert_memory_equal(d, att.attested.quote.pcrDigest.buffer, dl);
	free(v);
	free(q);
}

/* KDFa of Part 1 against a known answer: SHA-256, key "key", label "label",
 * U "u", V "v", 256 bits = HMAC-SHA256("key", 00000001 "label" 00 "u" "v" 00000100). */
static void test_kdfa_single_block(void **state)
{
	uint8_t out[32], want[32],
	    msg[4 + 6 + 2 + 4] = {0, 0, 0, 1, 'l', 'a', 'b', 'e', 'l', 0, 'u', 'v', 0, 0, 1, 0};
	unsigned int wl = 0;
	(void)state;

	assert_int_equal(bc_tpm_kdfa(TPM2_ALG_SHA256, (const uint8_t *)"key", 3, "label",
	                             (const uint8_t *)"u", 1, (const uint8_t *)"v", 1, 256, out),
	                 0);
	assert_non_null(HMAC(EVP_sha256(), "key", 3, msg, sizeof(msg), want, &wl));
	assert_memory_equal(out, want, 32);
	assert_int_equal(
	    bc_tpm_kdfa(0x0004, (const uint8_t *)"key", 3, "l", NULL, 0, NULL, 0, 256, out),
	    BC_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_public_negatives),
	    cmocka_unit_test(test_name_is_tpm2_tools),
	    cmocka_unit_test(test_make_credential_rsa_ek),
	    cmocka_unit_test(test_make_credential_ecc_ek),
	    cmocka_unit_test(test_make_credential_p384_sha384_ek),
	    cmocka_unit_test(test_make_credential_p384_sha256_ek),
	    cmocka_unit_test(test_make_credential_p384_sha384_aes128_ek),
	    cmocka_unit_test(test_quote_ecdsa),
	    cmocka_unit_test(test_quote_rsassa),
	    cmocka_unit_test(test_quote_rsapss),
	    cmocka_unit_test(test_pcr_digest),
	    cmocka_unit_test(test_kdfa_single_block),
	};
	int rc = bct_tpm_start(&tpm);

	/* swtpm or tpm2-tools missing: skipped, not failed */
	if (rc != 0) {
		bct_tpm_stop(&tpm);
		return rc == 77 ? 77 : 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_tpm_stop(&tpm);
	return rc;
}
