/* The tpm attestor's refusals no other test reaches, against the same swtpm-backed
 * agent as join_tpm_test.c (tests/support's bct_tpm_agent: tpm2-tools on a
 * real swtpm whose EK certificate a manufacturer CA of the test issued):
 *   ek-malformed         an EK public area that does not parse
 *   ek-certificate-key   an EK certificate of that CA for another key
 *   ak-malformed         an AK public area that does not parse
 *   ak-attributes        an AK that can decrypt; one that is not restricted; a
 *                        restricted decryption key (the EK) as AK
 *   challenge-evidence   round 2 carrying another AK than round 1's evidence
 *   quote-type           the AK's certification (TPM_ST_ATTEST_CERTIFY) as the quote
 *   quote-magic          a quote without TPM_GENERATED_VALUE, signed by the AK (only
 *                        data that does not start with it can be signed by a
 *                        restricted key: TPM2_Hash gives it a ticket) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bct_tpm_agent.h"
#include "bctest.h"

static struct bct_tpm_agent ag;

/* Round 1 with the evidence as evidence_pack() makes it from the globals: refused by
 * name, nothing written. */
static void round1_refused(struct bct_cp *cp, const struct bct_blob *csr, const char *reason)
{
	struct bc_join_answer ans;
	size_t n;
	uint8_t *ev = bct_tpm_evidence(&ag, &n);
	struct bct_join_opts jo = {.attestor = "tpm",
	                           .csr = csr->p,
	                           .csr_len = csr->n,
	                           .attestation = ev,
	                           .attestation_len = n};

	assert_int_equal(bct_join(cp, &jo, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(cp), reason);
	assert_int_equal(bct_count(cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 0);
	free(ev);
}

static void test_round1_refusals(void **state)
{
	struct bct_cp cp;
	struct bct_blob saved, other;
	static uint8_t junk[] = {0x00, 0x23, 0x00, 0x0b, 0xff};
	(void)state;

	bct_tpm_cp_start(&ag, &cp, NULL);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");

	/* the EK public area cut to a few bytes */
	saved = ag.ek;
	ag.ek = (struct bct_blob){junk, sizeof(junk)};
	round1_refused(&cp, &csr, "ek-malformed");
	ag.ek = saved;
	/* the AK's likewise */
	saved = ag.ak;
	ag.ak = (struct bct_blob){junk, sizeof(junk)};
	round1_refused(&cp, &csr, "ak-malformed");
	/* an AK that can decrypt (sign|decrypt, not restricted) */
	ag.ak = bct_tpm_tpmt(&ag, BCT_NK_DECRYPT ".pub");
	round1_refused(&cp, &csr, "ak-attributes");
	bct_blob_free(&ag.ak);
	/* a signing key that is not restricted: it could sign a forged quote */
	ag.ak = bct_tpm_tpmt(&ag, BCT_NK_HANDLE ".pub");
	round1_refused(&cp, &csr, "ak-attributes");
	bct_blob_free(&ag.ak);
	/* a restricted key that decrypts (the EK itself) */
	ag.ak = bct_blob_dup(ag.ek.p, ag.ek.n);
	round1_refused(&cp, &csr, "ak-attributes");
	bct_blob_free(&ag.ak);
	ag.ak = saved;

	/* an EK certificate the manufacturer's CA issued, but for another key */
	assert_int_equal(bct_tpm_sh(&ag.tpm,
	                            "openssl req -new -newkey rsa:2048 -nodes -keyout other-ek.key "
	                            "-subj /CN=other-ek -out other-ek.csr && openssl x509 -req -in "
	                            "other-ek.csr -CA ca/issuercert.pem -CAkey ca/signkey.pem "
	                            "-CAcreateserial -days 2 -outform der -out other-ek.der"),
	                 0);
	other = bct_tpm_file(&ag, "other-ek.der");
	saved = ag.ek_cert;
	ag.ek_cert = other;
	round1_refused(&cp, &csr, "ek-certificate-key");
	ag.ek_cert = saved;
	bct_blob_free(&other);

	/* the control: the agent's own evidence gets its challenge */
	Bettercompute__Attest__V1__TpmChallenge *ch = bct_tpm_round1(&ag, &cp, &csr);
	bettercompute__attest__v1__tpm_challenge__free_unpacked(ch, NULL);
	bct_blob_free(&csr);
	bct_cp_stop(&cp);
}

static void test_round2_refusals(void **state)
{
	struct bct_cp cp;
	struct bct_tpm_answer a;
	struct bct_blob saved, quote, sig;
	(void)state;

	char lines[1024];

	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", bct_tpm_resolve(&ag, NULL, NULL));
	bct_tpm_cp_start(&ag, &cp, lines);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);

	/* round 2 names another AK of the same TPM than round 1 did */
	assert_int_equal(bct_tpm_sh(&ag.tpm, "tpm2_createak -C " BCT_EK_HANDLE " -c ak2.ctx -G ecc "
	                                     "-g sha256 -s ecdsa -u ak2.pub -n ak2.name -f tss"),
	                 0);
	saved = ag.ak;
	ag.ak = bct_tpm_tpmt(&ag, "ak2.pub");
	bct_tpm_refused(&ag, &cp, &csr, &a, "challenge-evidence");
	bct_blob_free(&ag.ak);
	ag.ak = saved;

	/* the AK's certification of the node key in place of the quote: signed by the AK,
	 * made by the TPM, but no quote */
	quote = a.quote;
	sig = a.qsig;
	a.quote = bct_blob_dup(a.cinfo.p, a.cinfo.n);
	a.qsig = bct_blob_dup(a.csig.p, a.csig.n);
	bct_tpm_refused(&ag, &cp, &csr, &a, "quote-type");
	bct_blob_free(&a.quote);
	bct_blob_free(&a.qsig);

	/* the quote with its magic altered, signed by the AK through TPM2_Hash's ticket */
	a.quote = bct_blob_dup(quote.p, quote.n);
	a.quote.p[3] ^= 0x01; /* TPM_GENERATED_VALUE 0xff544347, big-endian */
	assert_int_equal(bct_tpm_write(&ag.tpm, "forged.msg", a.quote.p, a.quote.n), 0);
	assert_int_equal(
	    bct_tpm_sh(&ag.tpm,
	               "rm -f forged.sig && tpm2_hash -C e -g sha256 "
	               "-t forged.tkt -o forged.dig forged.msg && tpm2_sign -c " BCT_AK_HANDLE
	               " -g sha256 -s ecdsa -d -t forged.tkt -o forged.sig "
	               "forged.dig"),
	    0);
	a.qsig = bct_tpm_file(&ag, "forged.sig");
	bct_tpm_refused(&ag, &cp, &csr, &a, "quote-magic");
	bct_blob_free(&a.quote);
	bct_blob_free(&a.qsig);

	/* the control: the honest answer is admitted */
	a.quote = quote;
	a.qsig = sig;
	{
		struct bc_join_answer ans;
		assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), 0);
		assert_int_equal(ans.state, BC_JOIN_JOINED);
		bc_join_answer_free(&ans);
	}
	bct_tpm_answer_free(&a);
	bct_blob_free(&csr);
	bct_cp_stop(&cp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round1_refusals),
	    cmocka_unit_test(test_round2_refusals),
	};
	int rc;

	if (bct_engine_skip())
		return BCT_SKIP;
	if ((rc = bct_tpm_agent_start(&ag, "reasons_tpm_test")) != 0)
		return rc;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_tpm_agent_stop(&ag);
	return rc;
}
