/* The tpm attestor's options and policy paths no other test reaches, against the same
 * swtpm-backed agent as join_tpm_test.c (tests/support's bct_tpm_agent):
 *   allow_uncertified_ek  an EK without a certificate gets its challenge and joins
 *                         (refused ek-uncertified without the option);
 *   pending_ttl_seconds   an enrollment request past it is replaced by a new one, so
 *                         a machine that started over is no longer enrollment-csr;
 *   join:pool-attestor    a token reclaim of a TPM-bound node in a pool that takes
 *                         only tpm is refused: a token never takes over a node the
 *                         TPM vouched for there. */
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

#define UUID "4c4c4544-0042-3010-8052-b4c04f4b4b31"

static void test_allow_uncertified_ek(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct bct_tpm_answer a;
	struct bct_blob saved = ag.ek_cert;
	char lines[1024];
	(void)state;

	snprintf(lines, sizeof(lines),
	         "[attestors.tpm]\nallow_uncertified_ek = true\nresolve = \"%s\"\n",
	         bct_tpm_resolve(&ag, NULL, NULL));
	assert_int_equal(bct_cp_start(&cp, lines), 0);
	ag.ek_cert = (struct bct_blob){NULL, 0};
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	assert_int_equal(bct_tpm_round2(&ag, &cp, &csr, &a, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_join_answer_free(&ans);
	bct_tpm_answer_free(&a);
	bct_cp_stop(&cp);
	ag.ek_cert = saved;

	/* the same without the option: ek-uncertified at round 1 */
	snprintf(lines, sizeof(lines), "resolve = \"%s\"\n", ag.resolve_path);
	bct_tpm_cp_start(&ag, &cp, lines);
	ag.ek_cert = (struct bct_blob){NULL, 0};
	{
		size_t n;
		uint8_t *ev = bct_tpm_evidence(&ag, &n);
		struct bct_join_opts jo = {.attestor = "tpm",
		                           .csr = csr.p,
		                           .csr_len = csr.n,
		                           .attestation = ev,
		                           .attestation_len = n};
		assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&cp), "ek-uncertified");
		free(ev);
	}
	ag.ek_cert = saved;
	bct_blob_free(&csr);
	bct_cp_stop(&cp);
}

static void test_pending_ttl_expires(void **state)
{
	static const char *site = "site_0000000000000000000000000s";
	struct bct_cp cp;
	struct bct_tpm_answer a;
	char lines[1024], id[64], later[64];
	(void)state;

	snprintf(lines, sizeof(lines),
	         "enrollment_tenant = \"root\"\nenrollment_site = \"%s\"\n"
	         "retry_after_seconds = 7\npending_ttl_seconds = 60\n",
	         site);
	bct_tpm_cp_start(&ag, &cp, lines);
	bc_param s[] = {BC_TEXT(site), BC_INT(bc_now_ms())};
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO sites (id, tenant_id, name, created_at) "
	                          "VALUES ($1, 'root', 'lab', $2)",
	                          s, 2),
	                 0);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node"),
	                other = bct_tpm_csr(&ag, BCT_NK_HANDLE, "other");
	bct_tpm_pending(&ag, &cp, &csr, 7, id);
	/* within the minute, another CSR is refused */
	bct_tpm_full_answer(&ag, &cp, &other, BCT_NK_HANDLE, &a);
	bct_tpm_refused(&ag, &cp, &other, &a, "enrollment-csr");
	bct_tpm_answer_free(&a);
	/* past it, the request expired: the other CSR makes a new one */
	bc_clock_set_offset_ms(61 * 1000);
	bct_tpm_pending(&ag, &cp, &other, 7, later);
	assert_string_not_equal(later, id);
	bc_param r[] = {BC_TEXT(later)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM join_requests WHERE id = $1 AND "
	                           "state = 'pending'",
	                           r, 1),
	                 1);
	bc_clock_set_offset_ms(0);
	bct_blob_free(&csr);
	bct_blob_free(&other);
	bct_cp_stop(&cp);
}

static void test_token_reclaim_refused_by_tpm_only_pool(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct bct_tpm_answer a;
	char pool[64], node[64];
	(void)state;

	bct_tpm_cp_start_resolved(&ag, &cp, "{\"joinAttestors\":[\"tpm\"]}", pool);
	struct bct_blob csr = bct_tpm_csr(&ag, BCT_NK_HANDLE, "node");
	bct_tpm_full_answer(&ag, &cp, &csr, BCT_NK_HANDLE, &a);
	assert_int_equal(bct_tpm_round2_uuid(&ag, &cp, &csr, &a, UUID, &ans), 0);
	snprintf(node, sizeof(node), "%s", ans.node_id);
	bc_join_answer_free(&ans);
	bct_tpm_answer_free(&a);

	/* a reclaim token of that pool, the machine's UUID claimed */
	char *t = bct_token(&cp, &(struct bct_token_opts){.pool = pool, .allow_reclaim = 1}, NULL);
	struct bct_join_opts jo = {.token = t, .product_uuid = UUID};
	assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "join:pool-attestor");
	/* the node is untouched: still tpm's, generation 1 */
	bc_param p[] = {BC_TEXT(node)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND attestor = 'tpm' "
	                           "AND node_key = 'tpm' AND generation = 1",
	                           p, 1),
	                 1);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 1);
	free(t);
	bct_blob_free(&csr);
	bct_cp_stop(&cp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allow_uncertified_ek),
	    cmocka_unit_test(test_pending_ttl_expires),
	    cmocka_unit_test(test_token_reclaim_refused_by_tpm_only_pool),
	};
	int rc;

	if (bct_engine_skip())
		return BCT_SKIP;
	if ((rc = bct_tpm_agent_start(&ag, "options_tpm_test")) != 0)
		return rc;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_tpm_agent_stop(&ag);
	return rc;
}
