/* The tpm attestor's refusals no other test reaches, against the same swtpm-backed
 * agent as join_tpm_test.c (its fixture is included, not copied: tpm2-tools on a
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
#define main join_tpm_test_main
#include "join_tpm_test.c"
#undef main

/* Round 1 with the evidence as evidence_pack() makes it from the globals: refused by
 * name, nothing written. */
static void round1_refused(struct bct_cp *cp, const struct blob *csr, const char *reason)
{
	struct bc_join_answer ans;
	size_t n;
	uint8_t *ev = evidence_pack(&n);
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
	struct blob saved, other;
	static uint8_t junk[] = {0x00, 0x23, 0x00, 0x0b, 0xff};
	(void)state;

	cp_start(&cp, NULL);
	struct blob csr = make_csr(NK_HANDLE, "node");

	/* the EK public area cut to a few bytes */
	saved = ek;
	ek = (struct blob){junk, sizeof(junk)};
	round1_refused(&cp, &csr, "ek-malformed");
	ek = saved;
	/* the AK's likewise */
	saved = ak;
	ak = (struct blob){junk, sizeof(junk)};
	round1_refused(&cp, &csr, "ak-malformed");
	/* an AK that can decrypt (sign|decrypt, not restricted) */
	ak = tpmt_file(NK_DECRYPT ".pub");
	round1_refused(&cp, &csr, "ak-attributes");
	blob_free(&ak);
	/* a signing key that is not restricted: it could sign a forged quote */
	ak = tpmt_file(NK_HANDLE ".pub");
	round1_refused(&cp, &csr, "ak-attributes");
	blob_free(&ak);
	/* a restricted key that decrypts (the EK itself) */
	ak = blob_dup(ek.p, ek.n);
	round1_refused(&cp, &csr, "ak-attributes");
	blob_free(&ak);
	ak = saved;

	/* an EK certificate the manufacturer's CA issued, but for another key */
	assert_int_equal(bct_tpm_sh(&tpm,
	                            "openssl req -new -newkey rsa:2048 -nodes -keyout other-ek.key "
	                            "-subj /CN=other-ek -out other-ek.csr && openssl x509 -req -in "
	                            "other-ek.csr -CA ca/issuercert.pem -CAkey ca/signkey.pem "
	                            "-CAcreateserial -days 2 -outform der -out other-ek.der"),
	                 0);
	other = file_blob("other-ek.der");
	saved = ek_cert;
	ek_cert = other;
	round1_refused(&cp, &csr, "ek-certificate-key");
	ek_cert = saved;
	blob_free(&other);

	/* the control: the agent's own evidence gets its challenge */
	Bettercompute__Attest__V1__TpmChallenge *ch = round1(&cp, &csr);
	bettercompute__attest__v1__tpm_challenge__free_unpacked(ch, NULL);
	blob_free(&csr);
	bct_cp_stop(&cp);
}

static void test_round2_refusals(void **state)
{
	struct bct_cp cp;
	struct answer a;
	struct blob saved, quote, sig;
	(void)state;

	char lines[1024];

	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", write_resolve(NULL, NULL));
	cp_start(&cp, lines);
	struct blob csr = make_csr(NK_HANDLE, "node");
	full_answer(&cp, &csr, NK_HANDLE, &a);

	/* round 2 names another AK of the same TPM than round 1 did */
	assert_int_equal(bct_tpm_sh(&tpm, "tpm2_createak -C " EK_HANDLE " -c ak2.ctx -G ecc "
	                                  "-g sha256 -s ecdsa -u ak2.pub -n ak2.name -f tss"),
	                 0);
	saved = ak;
	ak = tpmt_file("ak2.pub");
	expect_refused(&cp, &csr, &a, "challenge-evidence");
	blob_free(&ak);
	ak = saved;

	/* the AK's certification of the node key in place of the quote: signed by the AK,
	 * made by the TPM, but no quote */
	quote = a.quote;
	sig = a.qsig;
	a.quote = blob_dup(a.cinfo.p, a.cinfo.n);
	a.qsig = blob_dup(a.csig.p, a.csig.n);
	expect_refused(&cp, &csr, &a, "quote-type");
	blob_free(&a.quote);
	blob_free(&a.qsig);

	/* the quote with its magic altered, signed by the AK through TPM2_Hash's ticket */
	a.quote = blob_dup(quote.p, quote.n);
	a.quote.p[3] ^= 0x01; /* TPM_GENERATED_VALUE 0xff544347, big-endian */
	assert_int_equal(bct_tpm_write(&tpm, "forged.msg", a.quote.p, a.quote.n), 0);
	assert_int_equal(
	    bct_tpm_sh(&tpm, "rm -f forged.sig && tpm2_hash -C e -g sha256 "
	                     "-t forged.tkt -o forged.dig forged.msg && tpm2_sign -c " AK_HANDLE
	                     " -g sha256 -s ecdsa -d -t forged.tkt -o forged.sig "
	                     "forged.dig"),
	    0);
	a.qsig = file_blob("forged.sig");
	expect_refused(&cp, &csr, &a, "quote-magic");
	blob_free(&a.quote);
	blob_free(&a.qsig);

	/* the control: the honest answer is admitted */
	a.quote = quote;
	a.qsig = sig;
	{
		struct bc_join_answer ans;
		assert_int_equal(round2(&cp, &csr, &a, &ans), 0);
		assert_int_equal(ans.state, BC_JOIN_JOINED);
		bc_join_answer_free(&ans);
	}
	answer_free(&a);
	blob_free(&csr);
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
	if ((rc = bct_tpm_start(&tpm)) != 0 || (rc = agent_prepare()) != 0) {
		if (rc != 77)
			fprintf(stderr,
			        "reasons_tpm_test: swtpm or the agent's keys did not start (%s)\n",
			        tpm.dir);
		bct_tpm_stop(&tpm);
		return rc == 77 ? 77 : 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_tpm_stop(&tpm);
	return rc;
}
