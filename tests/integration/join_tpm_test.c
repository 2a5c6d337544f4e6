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
#include "bct_tpm_agent.h"
#include "bct_http.h"
#include "bctest.h"
#include "bettercompute/attest/v1/tpm.pb-c.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "attest/attest.h"
#include "join/join.h"
#include "server/admin.h"

static struct bct_tpm_agent ag;

/* ---- the tests ---- */

static void test_tpm_join_admitted_and_reclaimed(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct bc_node_identity id;
	struct bct_tpm_answer a;
	char pool[64], urn[256], *h, node_id[64];
	(void)state;

	bct_tpm_cp_start_resolved(&ag, &cp, "{\"joinAttestors\":[\"tpm\"]}", pool);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	/* round 1 wrote nothing */
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 0);
	assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	snprintf(node_id, sizeof(node_id), "%s", ans.node_id);
	/* the certificate names the AK after the SPIFFE ID */
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	h = bct_hex(ag.ak_name, ag.ak_name_len);
	snprintf(urn, sizeof(urn), BC_WIRE_TPM_AK_URN_SHA256 "%s", h);
	free(h);
	assert_int_equal(id.n_statements, 1);
	assert_string_equal(id.statements[0], urn);
	bc_node_identity_clear(&id);
	bc_join_answer_free(&ans);
	/* bound to sha256(EK), nodeKey tpm in the event, the audit row and the node */
	bc_param p[] = {BC_TEXT(node_id), BC_TEXT(ag.ek_hex)};
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
	bct_tpm_answer_free(&a);

	/* the same TPM again (a reinstall: a new CSR for the key) is the same node */
	struct bct_blob csr2 = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node-again");
	bct_tpm_full_answer(&ag, &cp, &csr2, BCT_NK_HANDLE, &a);
	assert_int_equal(bct_tpm_round2(&ag, &cp, &csr2, &a, &ans), 0);
	assert_string_equal(ans.node_id, node_id);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 1);
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", p, 1), 2);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = 'node.reclaimed' "
	                           "AND subject = $1",
	                           p, 1),
	                 1);
	bc_join_answer_free(&ans);
	bct_tpm_answer_free(&a);
	bct_blob_free(&csr);
	bct_blob_free(&csr2);
	bct_cp_stop(&cp);
}

/* Every check of round 2 by name, each from an honest answer with one thing wrong. */
static void test_tpm_refusals_by_name(void **state)
{
	struct bct_cp cp;
	struct bct_tpm_answer a, b;
	char lines[1024];
	(void)state;

	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", bct_tpm_resolve(&ag, NULL, NULL));
	bct_tpm_cp_start(&ag, &cp, lines);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node"),
	                other = bct_tpm_csr(&ag, BCT_NK_HANDLE, "other");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);

	/* the answer for another CSR */
	bct_tpm_refused(&ag, &cp, &other, &a, "challenge-for-another-csr");
	/* the state altered */
	a.state.p[20] ^= 1;
	bct_tpm_refused(&ag, &cp, &csr, &a, "challenge-state");
	a.state.p[20] ^= 1;
	/* another secret */
	a.secret.p[0] ^= 1;
	bct_tpm_refused(&ag, &cp, &csr, &a, "credential-secret");
	a.secret.p[0] ^= 1;
	/* the quote's signature altered (the last byte of s) */
	a.qsig.p[a.qsig.n - 1] ^= 1;
	bct_tpm_refused(&ag, &cp, &csr, &a, "quote-signature");
	a.qsig.p[a.qsig.n - 1] ^= 1;
	/* a quote cut short */
	a.quote.n -= 1;
	bct_tpm_refused(&ag, &cp, &csr, &a, "quote-malformed");
	a.quote.n += 1;
	/* a PCR value that is not the quoted one, and one left out */
	a.pcrs[3][0] ^= 1;
	bct_tpm_refused(&ag, &cp, &csr, &a, "quote-pcr-digest");
	a.pcrs[3][0] ^= 1;
	a.n_pcrs--;
	bct_tpm_refused(&ag, &cp, &csr, &a, "quote-pcr-selection");
	a.n_pcrs++;
	/* the certification: cut short, signature altered, for another CSR, of another
	 * key's name, of a key that can decrypt, of a good key that is not the CSR's */
	a.cinfo.n -= 1;
	bct_tpm_refused(&ag, &cp, &csr, &a, "node-key-malformed");
	a.cinfo.n += 1;
	a.csig.p[a.csig.n - 1] ^= 1;
	bct_tpm_refused(&ag, &cp, &csr, &a, "node-key-signature");
	a.csig.p[a.csig.n - 1] ^= 1;
	{
		uint8_t d[32];
		assert_int_equal(bc_sha256(other.p, other.n, d), 0);
		bct_tpm_certify(&ag, BCT_NK_HANDLE, d, &a);
		bct_tpm_refused(&ag, &cp, &csr, &a, "node-key-nonce");
		assert_int_equal(bc_sha256(csr.p, csr.n, d), 0);
		bct_tpm_certify(&ag, BCT_NK_HANDLE, d, &a);
		bct_blob_free(&a.nk_pub);
		a.nk_pub = bct_tpm_tpmt(&ag, BCT_NK_OTHER ".pub");
		bct_tpm_refused(&ag, &cp, &csr, &a, "node-key-name");
		bct_blob_free(&a.nk_pub);
		a.nk_pub = bct_tpm_tpmt(&ag, BCT_NK_DECRYPT ".pub");
		bct_tpm_certify(&ag, BCT_NK_DECRYPT, d, &a);
		bct_tpm_refused(&ag, &cp, &csr, &a, "node-key-attributes");
		bct_blob_free(&a.nk_pub);
		a.nk_pub = bct_tpm_tpmt(&ag, BCT_NK_OTHER ".pub");
		bct_tpm_certify(&ag, BCT_NK_OTHER, d, &a);
		bct_tpm_refused(&ag, &cp, &csr, &a, "node-key-not-csr");
	}
	/* no certification under the default nodeKey = certified */
	a.has_nk = 0;
	bct_tpm_refused(&ag, &cp, &csr, &a, "node-key-not-certified");
	bct_tpm_answer_free(&a);

	/* a quote over another nonce: the secret's quote for the other CSR */
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	bct_tpm_full_answer(&ag, &cp, &other, BCT_NK_HANDLE, &b);
	bct_blob_free(&a.quote);
	bct_blob_free(&a.qsig);
	a.quote = bct_blob_dup(b.quote.p, b.quote.n);
	a.qsig = bct_blob_dup(b.qsig.p, b.qsig.n);
	bct_tpm_refused(&ag, &cp, &csr, &a, "quote-nonce");
	bct_tpm_answer_free(&b);

	/* after the challenge expired, by the test clock (5 minutes and a second) */
	bc_clock_set_offset_ms(5 * 60 * 1000 + 1000);
	bct_tpm_refused(&ag, &cp, &csr, &a, "challenge-expired");
	bc_clock_set_offset_ms(0);
	bct_tpm_answer_free(&a);

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
	bct_blob_free(&csr);
	bct_blob_free(&other);
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

	assert_int_equal(bct_tpm_sh(&ag.tpm,
	                            "openssl req -x509 -newkey ec -pkeyopt "
	                            "ec_paramgen_curve:P-256 -nodes -keyout other.key -out "
	                            "other.pem -subj /CN=other-manufacturer -days 2"),
	                 0);
	snprintf(other_root, sizeof(other_root), "%s/other.pem", ag.tpm.dir);
	snprintf(lines, sizeof(lines), "[attestors.tpm]\nek_roots = [\"%s\"]\n", other_root);
	assert_int_equal(bct_cp_start(&cp, lines), 0);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	ev = bct_tpm_evidence(&ag, &n);
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
		struct bct_blob saved = ag.ek_cert;
		ag.ek_cert = (struct bct_blob){NULL, 0};
		ev = bct_tpm_evidence(&ag, &n);
		jo.attestation = ev;
		jo.attestation_len = n;
		assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&cp), "ek-uncertified");
		ag.ek_cert = saved;
		free(ev);
	}
	bct_cp_stop(&cp);

	/* the right root, but no resolve or enrollment: unknown-ek after both rounds */
	bct_tpm_cp_start(&ag, &cp, NULL);
	struct bct_tpm_answer a;
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	bct_tpm_refused(&ag, &cp, &csr, &a, "unknown-ek");
	bct_tpm_answer_free(&a);
	bct_blob_free(&csr);
	bct_cp_stop(&cp);
}

/* ek_roots naming only the manufacturer's intermediate (as Intel's CNL CA is
 * published): the chain ends there, with no intermediate in the evidence, and the
 * TPM joins. An intermediate-only ek_roots of another CA still refuses it. */
static void test_tpm_ek_roots_intermediate_only(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct bct_tpm_answer a;
	struct bct_blob saved = ag.inter;
	char pool[64], issuer[512], other[512];
	size_t n;
	uint8_t *ev;
	(void)state;

	snprintf(issuer, sizeof(issuer), "%s/ca/issuercert.pem", ag.tpm.dir);
	ag.inter = (struct bct_blob){NULL, 0};
	bct_tpm_cp_start_resolved_roots(&ag, &cp, issuer, "{\"joinAttestors\":[\"tpm\"]}", pool);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_join_answer_free(&ans);
	bct_tpm_answer_free(&a);
	bct_cp_stop(&cp);

	/* another CA's root and intermediate; ek_roots names only the intermediate */
	assert_int_equal(
	    bct_tpm_sh(&ag.tpm,
	               "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	               "-keyout oroot.key -out oroot.pem -subj /CN=other-root -days 2 && "
	               "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	               "-keyout ointer.key -out ointer.csr -subj /CN=other-inter && "
	               "printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=critical,"
	               "keyCertSign\\n' > ca.ext && "
	               "openssl x509 -req -in ointer.csr -CA oroot.pem -CAkey oroot.key "
	               "-CAcreateserial -out ointer.pem -days 2 -extfile ca.ext"),
	    0);
	snprintf(other, sizeof(other), "%s/ointer.pem", ag.tpm.dir);
	ag.inter = saved;
	bct_tpm_cp_start_roots(&cp, other, NULL);
	ev = bct_tpm_evidence(&ag, &n);
	struct bct_join_opts jo = {.attestor = "tpm",
	                           .csr = csr.p,
	                           .csr_len = csr.n,
	                           .attestation = ev,
	                           .attestation_len = n};
	assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "ek-certificate-chain");
	free(ev);
	bct_blob_free(&csr);
	bct_cp_stop(&cp);
}

/* nodeKey any: an answer without certification is admitted with no statement. */
static void test_tpm_node_key_any(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct bc_node_identity id;
	struct bct_tpm_answer a;
	char lines[1024];
	(void)state;

	snprintf(lines, sizeof(lines), "resolve = \"%s\"\nnode_key = \"any\"\n",
	         bct_tpm_resolve(&ag, NULL, NULL));
	bct_tpm_cp_start(&ag, &cp, lines);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, NULL, &a);
	assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), 0);
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
	bct_tpm_answer_free(&a);
	bct_blob_free(&csr);
	bct_cp_stop(&cp);
}

/* A PCR policy that allows another PCR 0, then a command that refuses. */
static void test_tpm_pcr_policy(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct bct_tpm_answer a;
	char lines[2048], policy[512];
	(void)state;

	snprintf(policy, sizeof(policy), "%s/pcr-policy.toml", ag.tpm.dir);
	assert_int_equal(bct_write_file(policy, "0 = [\"11111111111111111111111111111111"
	                                        "11111111111111111111111111111111\"]\n"),
	                 0);
	snprintf(lines, sizeof(lines), "resolve = \"%s\"\npcr_policy = \"%s\"\n",
	         bct_tpm_resolve(&ag, NULL, NULL), policy);
	bct_tpm_cp_start(&ag, &cp, lines);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	bct_tpm_refused(&ag, &cp, &csr, &a, "pcr-policy");
	bct_tpm_answer_free(&a);
	bct_cp_stop(&cp);

	/* the command reads the values and answers; "accept" admits */
	snprintf(lines, sizeof(lines),
	         "resolve = \"%s\"\npcr_policy_command = \"grep -q "
	         "'\\\"bank\\\":\\\"sha256\\\"' && echo no-such-firmware\"\n",
	         ag.resolve_path);
	bct_tpm_cp_start(&ag, &cp, lines);
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	/* the command's own reason reaches the event, after pcr-policy: */
	bct_tpm_refused(&ag, &cp, &csr, &a, "pcr-policy:no-such-firmware");
	assert_int_equal(
	    bct_events(&cp, "security.join.refused", "pcr-policy:no-such-firmware", NULL), 1);
	bct_tpm_answer_free(&a);
	bct_cp_stop(&cp);
	snprintf(lines, sizeof(lines),
	         "resolve = \"%s\"\npcr_policy_command = \"grep -q "
	         "'\\\"pcrs\\\":{\\\"0\\\"' && echo accept\"\n",
	         ag.resolve_path);
	bct_tpm_cp_start(&ag, &cp, lines);
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), 0);
	bc_join_answer_free(&ans);
	bct_tpm_answer_free(&a);
	bct_blob_free(&csr);
	bct_cp_stop(&cp);
}

/* A resolve entry naming a node the EK is not bound to. */
static void test_tpm_bound_elsewhere(void **state)
{
	static const char *named = "node_0000000000000000000000000a";
	static const char *bound = "node_0000000000000000000000000b";
	struct bct_cp cp;
	struct bct_tpm_answer a;
	char lines[1024];
	(void)state;

	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", bct_tpm_resolve(&ag, NULL, named));
	bct_tpm_cp_start(&ag, &cp, lines);
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
	bc_param b[] = {BC_TEXT(ag.ek_hex), BC_TEXT(bound), BC_INT(bc_now_ms())};
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO node_bindings (kind, key, node_id, created_at) "
	                          "VALUES ('tpm-ek', $1, $2, $3)",
	                          b, 3),
	                 0);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	bct_tpm_refused(&ag, &cp, &csr, &a, "join:bound-elsewhere");
	bct_tpm_answer_free(&a);
	bct_blob_free(&csr);
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

static void test_tpm_enrollment_approve_and_deny(void **state)
{
	static const char *site = "site_0000000000000000000000000s";
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct api_body body;
	struct bct_tpm_answer a;
	char lines[1024], id[64], path[256], *key = NULL;
	(void)state;

	snprintf(lines, sizeof(lines),
	         "enrollment_tenant = \"root\"\nenrollment_site = \"%s\"\n"
	         "retry_after_seconds = 7\n",
	         site);
	for (int deny = 0; deny < 2; deny++) {
		bct_tpm_cp_start(&ag, &cp, lines);
		bc_param s[] = {BC_TEXT(site), BC_INT(bc_now_ms())};
		assert_int_equal(bct_exec(&cp,
		                          "INSERT INTO sites (id, tenant_id, name, created_at) "
		                          "VALUES ($1, 'root', 'lab', $2)",
		                          s, 2),
		                 0);
		assert_int_equal(bc_store_run(bct_store(&cp), BC_TX_WRITE, key_tx, &key), 0);
		struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
		bct_tpm_pending(&ag, &cp, &csr, 7, id);
		/* it waits: the same again, the same request */
		char again[64];
		bct_tpm_pending(&ag, &cp, &csr, 7, again);
		assert_string_equal(again, id);
		/* another CSR while it waits */
		struct bct_blob other = bct_tpm_csr(&ag, BCT_NK_HANDLE, "other");
		bct_tpm_full_answer(&ag, &cp, &other, BCT_NK_HANDLE, &a);
		bct_tpm_refused(&ag, &cp, &other, &a, "enrollment-csr");
		bct_tpm_answer_free(&a);
		bct_blob_free(&other);
		/* the operator sees it and decides */
		assert_int_equal(
		    api(&cp, key, "GET", "/v1/tenants/root/join-requests?state=pending", &body),
		    200);
		assert_non_null(strstr(body.buf, id));
		assert_non_null(strstr(body.buf, ag.ek_hex));
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
		bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
		if (deny) {
			bct_tpm_refused(&ag, &cp, &csr, &a, "enrollment-denied");
		} else {
			assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), 0);
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
		bct_tpm_answer_free(&a);
		bct_blob_free(&csr);
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
	struct bct_blob der;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned int dl = 32;

	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	EVP_DigestUpdate(md, BC_WIRE_SIG_DOMAIN, sizeof(BC_WIRE_SIG_DOMAIN));
	EVP_DigestUpdate(md, purpose, strlen(purpose) + 1);
	EVP_DigestUpdate(md, payload, n);
	EVP_DigestFinal_ex(md, d, &dl);
	EVP_MD_CTX_free(md);
	assert_int_equal(bct_tpm_write(&ag.tpm, "proof.dig", d, 32), 0);
	assert_int_equal(bct_tpm_sh(&ag.tpm,
	                            "rm -f proof.sig && tpm2_sign -c %s -g sha256 -s ecdsa -d "
	                            "-f plain -o proof.sig proof.dig",
	                            handle),
	                 0);
	der = bct_tpm_file(&ag, "proof.sig");
	assert_int_equal(bc_ecdsa_der_to_p1363(der.p, der.n, sig), 0);
	bct_blob_free(&der);
}

struct renew_case {
	const char *signer;            /* the leaf's key */
	const char *next;              /* the next key: its CSR */
	const char *certified;         /* the key the AK certifies (NULL: no key_attestation) */
	const char *key_public;        /* the public area sent as key_public (NULL: certified's) */
	const struct bct_blob *ak_pub; /* NULL: the AK's */
	int other_csr_nonce;           /* qualify the certification with another CSR's hash */
	int flip_signature;
};

/* A RenewRequest for leaf; the HTTP status and, on 200, the verified answer. */
static long renew_tpm(struct bct_cp *cp, const uint8_t *leaf, size_t leaf_len, const char *node_id,
                      const struct renew_case *c, struct bc_join_answer *ans)
{
	Bettercompute__Join__V1__RenewRequest rq = BETTERCOMPUTE__JOIN__V1__RENEW_REQUEST__INIT;
	Bettercompute__Join__V1__TpmKeyAttestation ka =
	    BETTERCOMPUTE__JOIN__V1__TPM_KEY_ATTESTATION__INIT;
	struct bct_blob csr = bct_tpm_csr(&ag, c->next, "node"), kp = {0};
	struct bct_tpm_answer a = {0};
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
		bct_tpm_certify(&ag, c->certified, q, &a);
		if (c->flip_signature)
			a.csig.p[a.csig.n - 1] ^= 1;
		snprintf(name, sizeof(name), "%s.pub",
		         c->key_public ? c->key_public : c->certified);
		kp = bct_tpm_tpmt(&ag, name);
		ka.ak_public = c->ak_pub ? (ProtobufCBinaryData){c->ak_pub->n, c->ak_pub->p}
		                         : (ProtobufCBinaryData){ag.ak.n, ag.ak.p};
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
	bct_blob_free(&csr);
	bct_blob_free(&kp);
	bct_tpm_answer_free(&a);
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
	struct bct_tpm_answer a;
	char pool[64], urn[256], *h;
	(void)state;

	bct_tpm_cp_start_resolved(&ag, &cp, "{}", pool);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), 0);
	bct_tpm_answer_free(&a);
	bct_blob_free(&csr);
	h = bct_hex(ag.ak_name, ag.ak_name_len);
	snprintf(urn, sizeof(urn), BC_WIRE_TPM_AK_URN_SHA256 "%s", h);
	free(h);
	const uint8_t *leaf = ans.chain[0];
	size_t leaf_len = ans.chain_lens[0];
	const char *node = ans.node_id;

	/* every reason of the table, each from a good renewal with one thing wrong */
	struct renew_case none = {BCT_NK_HANDLE, BCT_NK_OTHER, NULL, NULL, NULL, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &none, "key-attestation-missing");
	struct bct_blob not_ak = bct_tpm_tpmt(&ag, BCT_NK_OTHER ".pub");
	struct renew_case other_ak = {
	    BCT_NK_HANDLE, BCT_NK_OTHER, BCT_NK_OTHER, NULL, &not_ak, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &other_ak, "key-attestation-ak");
	bct_blob_free(&not_ak);
	struct renew_case nonce = {BCT_NK_HANDLE, BCT_NK_OTHER, BCT_NK_OTHER, NULL, NULL, 1, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &nonce, "node-key-nonce");
	struct renew_case badsig = {BCT_NK_HANDLE, BCT_NK_OTHER, BCT_NK_OTHER, NULL, NULL, 0, 1};
	expect_renew_refused(&cp, leaf, leaf_len, node, &badsig, "node-key-signature");
	struct renew_case badname = {
	    BCT_NK_HANDLE, BCT_NK_OTHER, BCT_NK_OTHER, BCT_NK_HANDLE, NULL, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &badname, "node-key-name");
	struct renew_case attrs = {BCT_NK_HANDLE, BCT_NK_DECRYPT, BCT_NK_DECRYPT, NULL, NULL, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &attrs, "node-key-attributes");
	struct renew_case notcsr = {BCT_NK_HANDLE, BCT_NK_OTHER, BCT_NK_HANDLE, NULL, NULL, 0, 0};
	expect_renew_refused(&cp, leaf, leaf_len, node, &notcsr, "node-key-not-csr");

	/* a good renewal keeps the statement although its CSR asks for none */
	struct renew_case good = {BCT_NK_HANDLE, BCT_NK_OTHER, BCT_NK_OTHER, NULL, NULL, 0, 0};
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
	struct renew_case again_none = {BCT_NK_OTHER, BCT_NK_HANDLE, NULL, NULL, NULL, 0, 0};
	expect_renew_refused(&cp, r1.chain[0], r1.chain_lens[0], node, &again_none,
	                     "key-attestation-missing");
	struct renew_case again = {BCT_NK_OTHER, BCT_NK_HANDLE, BCT_NK_HANDLE, NULL, NULL, 0, 0};
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
	struct bct_tpm_answer a;
	char pool[64];
	(void)state;

	bct_tpm_cp_start_resolved(&ag, &cp, "{}", pool);
	bc_join_drop_statement(bc_server_join(cp.srv), BC_WIRE_TPM_AK_URN_SCHEME);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "join:node-key-statement");
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 0);
	bct_tpm_answer_free(&a);
	bct_blob_free(&csr);
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
	if ((rc = bct_tpm_agent_start(&ag, "join_tpm_test")) != 0)
		return rc;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_tpm_agent_stop(&ag);
	return rc;
}
