/* SiteService and FetchSecret floods over loopback HTTP: requests that no credential
 * backs (an empty chain, a site certificate with a proof by another key) are
 * summarized like Join's (one security.site.refused event per reason per minute, with
 * the count), each reaches on_refusal, and a refusal of a site node's own proven
 * request is still recorded by itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bctest.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "bettercompute/site/v1/site.pb-c.h"
#include "server/server.h"

#define FLOOD 2000
#define MAC_U "52:54:00:aa:00:0f"

#define SITE_REFUSED "security.site.refused"

static char site1[64];

/* a control plane with one site */
static int setup(void **state)
{
	if (bct_cp_setup(state) != 0)
		return -1;
	return bct_site(*state, "root", "dc1", site1);
}

/* An AcquireLease with no chain at all. */
static uint8_t *lease_without_chain(size_t *len)
{
	Bettercompute__Site__V1__LeaseRequest rq = BETTERCOMPUTE__SITE__V1__LEASE_REQUEST__INIT;
	uint8_t sig[BC_SIG_LEN] = {0}, *body;

	rq.site_id = site1;
	rq.name = (char *)BC_WIRE_LEASE_BOOT;
	rq.client_time_ms = bc_now_ms();
	rq.proof.data = sig;
	rq.proof.len = sizeof(sig);
	*len = bettercompute__site__v1__lease_request__get_packed_size(&rq);
	assert_non_null(body = malloc(*len));
	bettercompute__site__v1__lease_request__pack(&rq, body);
	return body;
}

/* A FetchSecret with leaf (a site certificate of ours) and a proof by signer. */
static uint8_t *secret_request(const uint8_t *leaf, size_t leaf_len, EVP_PKEY *signer, size_t *len)
{
	Bettercompute__Join__V1__SecretRequest rq = BETTERCOMPUTE__JOIN__V1__SECRET_REQUEST__INIT;
	ProtobufCBinaryData chain = {.data = (uint8_t *)leaf, .len = leaf_len};
	uint8_t sig[BC_SIG_LEN], *body;
	bc_buf p;

	rq.chain = &chain;
	rq.n_chain = 1;
	rq.workflow_id = "";
	rq.kind = (char *)BC_WIRE_SECRET_DISCOVERY;
	rq.mac = MAC_U;
	rq.client_time_ms = bc_now_ms();
	assert_int_equal(bc_secret_payload(&p, rq.workflow_id, rq.kind, rq.mac, rq.client_time_ms),
	                 0);
	assert_int_equal(bct_sign(signer, BC_PURPOSE_SECRET_REQUEST, p.p, p.len, sig), 0);
	bc_buf_free(&p);
	rq.proof.data = sig;
	rq.proof.len = sizeof(sig);
	*len = bettercompute__join__v1__secret_request__get_packed_size(&rq);
	assert_non_null(body = malloc(*len));
	bettercompute__join__v1__secret_request__pack(&rq, body);
	return body;
}

static void test_unbacked_site_requests_are_summarized(void **state)
{
	struct bct_token_opts to = {.site = site1, .role = "site"};
	struct bc_join_answer site;
	EVP_PKEY *key = NULL, *stranger = NULL;
	uint8_t *body;
	size_t len;
	int64_t before;
	uint64_t hooked;
	struct bct_cp *cp = *state;
	char *t, *data;

	/* a real site node: its certificate is no secret */
	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_key_generate(&stranger), 0);
	assert_non_null(t = bct_token(cp, &to, NULL));
	struct bct_join_opts jo = {.token = t, .role = "site", .key = key};
	assert_int_equal(bct_join(cp, &jo, &site), 0);
	free(t);

	/* AcquireLease with an empty chain */
	before = bct_events(cp, NULL, NULL, NULL);
	hooked = bct_refusal_total(cp);
	body = lease_without_chain(&len);
	for (int i = 0; i < FLOOD; i++)
		assert_int_equal(bct_post(cp, BC_WIRE_PATH_ACQUIRE_LEASE, body, len), 403);
	free(body);
	assert_string_equal(bct_last_reason(cp), "site-malformed");
	assert_int_equal(bct_refusal_total(cp) - hooked, FLOOD);
	assert_int_equal(bct_events(cp, SITE_REFUSED, "site-malformed", NULL), 1);
	assert_true(bct_events(cp, NULL, NULL, NULL) - before <= 3);
	printf("site flood: %d AcquireLease without a chain, %lld event row(s)\n", FLOOD,
	       (long long)(bct_events(cp, NULL, NULL, NULL) - before));

	/* FetchSecret with the site's certificate and a proof by another key */
	before = bct_events(cp, NULL, NULL, NULL);
	hooked = bct_refusal_total(cp);
	body = secret_request(site.chain[0], site.chain_lens[0], stranger, &len);
	for (int i = 0; i < FLOOD; i++)
		assert_int_equal(bct_post(cp, BC_WIRE_PATH_FETCH_SECRET, body, len), 403);
	free(body);
	assert_string_equal(bct_last_reason(cp), "site-proof");
	assert_int_equal(bct_refusal_total(cp) - hooked, FLOOD);
	assert_int_equal(bct_events(cp, SITE_REFUSED, "site-proof", NULL), 1);
	assert_true(bct_events(cp, NULL, NULL, NULL) - before <= 3);
	/* the summary names no node: anyone may hold the certificate */
	assert_int_equal(bct_events(cp, SITE_REFUSED, NULL, site.node_id), 0);
	printf("site flood: %d FetchSecret with another key's proof, %lld event row(s)\n", FLOOD,
	       (long long)(bct_events(cp, NULL, NULL, NULL) - before));

	/* past the minute, the next publishes the count of all since the last */
	bc_clock_set_offset_ms(61000);
	body = lease_without_chain(&len);
	assert_int_equal(bct_post(cp, BC_WIRE_PATH_ACQUIRE_LEASE, body, len), 403);
	free(body);
	assert_int_equal(bct_events(cp, SITE_REFUSED, "site-malformed", NULL), 2);
	data = bct_event_newest(cp, SITE_REFUSED, "site-malformed", NULL);
	assert_non_null(data);
	assert_non_null(strstr(data, "\"count\":2000"));
	assert_non_null(strstr(data, "\"summarized\":true"));
	free(data);

	/* a site certificate of the same form that another node CA signed, naming the site
	 * node, with a valid proof by its own key: not ours, so site-malformed and
	 * summarized like any request no credential backs */
	{
		bc_pki *other = NULL;
		uint8_t *forged = NULL;
		size_t forged_len;
		char serial[33];
		int64_t na;
		struct bc_node_cert_req req = {.node_id = site.node_id,
		                               .role = "site",
		                               .pub = stranger,
		                               .not_before_ms = bc_now_ms()};
		assert_int_equal(bc_pki_generate(bc_server_pki(cp->srv)->trust_domain, &other), 0);
		assert_int_equal(
		    bc_pki_issue_node_cert(other, &req, &forged, &forged_len, serial, &na), 0);
		before = bct_events(cp, NULL, NULL, NULL);
		hooked = bct_refusal_total(cp);
		body = secret_request(forged, forged_len, stranger, &len);
		for (int i = 0; i < FLOOD; i++)
			assert_int_equal(bct_post(cp, BC_WIRE_PATH_FETCH_SECRET, body, len), 403);
		free(body);
		assert_string_equal(bct_last_reason(cp), "site-malformed");
		assert_int_equal(bct_refusal_total(cp) - hooked, FLOOD);
		assert_true(bct_events(cp, NULL, NULL, NULL) - before <= 3);
		printf("site flood: %d FetchSecret with a forged site certificate, %lld event "
		       "row(s)\n",
		       FLOOD, (long long)(bct_events(cp, NULL, NULL, NULL) - before));
		bc_pki_free(other);
		free(forged);
	}

	/* the site node's own proven request, refused (it holds no lease): one event each,
	 * naming it */
	before = bct_events(cp, SITE_REFUSED, "site-not-holder", NULL);
	body = secret_request(site.chain[0], site.chain_lens[0], key, &len);
	for (int i = 0; i < 3; i++)
		assert_int_equal(bct_post(cp, BC_WIRE_PATH_FETCH_SECRET, body, len), 403);
	free(body);
	assert_string_equal(bct_last_reason(cp), "site-not-holder");
	assert_int_equal(bct_events(cp, SITE_REFUSED, "site-not-holder", NULL), before + 3);
	assert_int_equal(bct_events(cp, SITE_REFUSED, NULL, site.node_id), 3);
	struct bct_refusal r = bct_last_refusal(cp);
	assert_string_equal(r.attestor, "site");
	assert_string_equal(r.node_id, site.node_id);
	assert_int_equal(r.count, 1);
	assert_false(r.summarized);

	bc_join_answer_free(&site);
	EVP_PKEY_free(key);
	EVP_PKEY_free(stranger);
}

int main(void)
{
	if (bct_engine_skip())
		return BCT_SKIP;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_unbacked_site_requests_are_summarized, setup,
	                                    bct_cp_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
