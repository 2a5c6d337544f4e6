/* The site::boot lease (SiteService), FetchSecret and the discovery attestor,
 * in-process over loopback HTTP with the real client: site nodes joined with site
 * tokens hold and lose the lease, fetch discovery tokens and sign assertions, and
 * ramdisks join with them. Every discovery refusal and every SiteService refusal by
 * name; a fenced boot server can no longer vouch or fetch tokens; two replicas
 * accept one assertion once and grant the lease once; unknown machines wait for an
 * operator under approval = "unknown-machines". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bct_discovery.h"
#include "bctest.h"
#include "bettercompute/site/v1/site.pb-c.h"

#define MAC_A  "52:54:00:aa:00:01"
#define MAC_B  "52:54:00:aa:00:02"
#define MAC_U  "52:54:00:aa:00:0f"
#define UUID_A "6b1f3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e"
#define UUID_B "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"
#define UUID_C "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a9f"
#define MIN_MS (60LL * 1000)

static struct bct_cp cp;
static char site1[64], site2[64];

/* s holds the site's lease (taking it, waiting out nobody). */
static void hold(struct bct_site_node *s)
{
	struct bc_lease_answer a;
	assert_int_equal(bct_lease(&cp, s, BC_LEASE_ACQUIRE, 0, &a), 0);
	assert_true(a.held);
}

static void release(struct bct_site_node *s)
{
	struct bc_lease_answer a;
	assert_int_equal(bct_lease(&cp, s, BC_LEASE_RELEASE, 0, &a), 0);
	assert_false(a.held);
}

static char *token_for(struct bct_site_node *s, const char *wf, const char *mac)
{
	int rc;
	char *t = bct_fetch_token(&cp, s, wf, mac, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(t);
	return t;
}

/* The same on cp, in root. */
static void commission(const char *site, const char *mac, const char *uuid, const char *node,
                       char wf[64])
{
	bct_commission(&cp, "root", site, mac, uuid, node, wf);
}

/* A join with a freshly signed assertion a and the token, refused by name. */
static void refused_with(const struct bct_assertion *a, const char *token, const char *mac,
                         const char *uuid, const char *reason)
{
	struct bc_join_answer ans;
	size_t len;
	uint8_t *att = bct_assertion_sign(a, &len);
	struct bct_ramdisk r = {
	    .token = token, .att = att, .att_len = len, .mac = mac, .uuid = uuid};

	assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), reason);
	free(att);
}

static int64_t uses_left_of(const char *token)
{
	char id[64];
	memcpy(id, token + 4, 30);
	id[30] = 0;
	bc_param p[] = {BC_TEXT(id)};
	return bct_count(&cp, "SELECT uses_left FROM join_tokens WHERE id = $1", p, 1);
}

static int setup(void **state)
{
	(void)state;
	if (bct_cp_start(&cp, "[attestors.discovery]\n") != 0)
		return -1;
	if (bct_site(&cp, "root", "dc1", site1) != 0 || bct_site(&cp, "root", "dc2", site2) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	return 0;
}

/* Each test starts with nobody holding either site's lease. */
static int fresh_leases(void **state)
{
	(void)state;
	return bct_exec(&cp, "UPDATE leases SET holder = '', expires_at = 0", NULL, 0);
}

/* ---- the lease ---- */

static void test_lease_epochs_grow_and_fence(void **state)
{
	struct bct_site_node a, b;
	struct bc_lease_answer l;
	(void)state;

	bct_site_node(&cp, "root", site1, &a);
	bct_site_node(&cp, "root", site1, &b);
	assert_int_equal(bct_lease(&cp, &a, BC_LEASE_ACQUIRE, 1000, &l), 0);
	assert_true(l.held);
	uint64_t e1 = l.epoch;
	assert_true(e1 >= 1);
	assert_string_equal(l.holder, a.ans.node_id);
	/* the server caps the TTL at 300 s */
	assert_int_equal(l.expires_at_ms - l.issued_at_ms, 300000);
	/* the holder asking again keeps its epoch; the default TTL is 30 s */
	assert_int_equal(bct_lease(&cp, &a, BC_LEASE_ACQUIRE, 0, &l), 0);
	assert_true(l.held);
	assert_int_equal(l.epoch, e1);
	assert_int_equal(l.expires_at_ms - l.issued_at_ms, 30000);
	/* another site node sees who holds it */
	assert_int_equal(bct_lease(&cp, &b, BC_LEASE_ACQUIRE, 0, &l), 0);
	assert_false(l.held);
	assert_string_equal(l.holder, a.ans.node_id);
	assert_int_equal(l.epoch, e1);
	/* renew by the holder of exactly that epoch */
	assert_int_equal(bct_lease(&cp, &a, BC_LEASE_RENEW, 0, &l), 0);
	assert_true(l.held);
	b.epoch = e1;
	assert_int_equal(bct_lease(&cp, &b, BC_LEASE_RENEW, 0, &l), 0);
	assert_false(l.held);
	/* released, then taken by b at the next epoch: a is fenced */
	release(&a);
	assert_int_equal(bct_lease(&cp, &b, BC_LEASE_ACQUIRE, 0, &l), 0);
	assert_true(l.held);
	assert_int_equal(l.epoch, e1 + 1);
	assert_int_equal(bct_lease(&cp, &a, BC_LEASE_RENEW, 0, &l), 0);
	assert_false(l.held);
	assert_int_equal(l.epoch, e1 + 1);
	/* a release by a fenced holder changes nothing */
	assert_int_equal(bct_lease(&cp, &a, BC_LEASE_RELEASE, 0, &l), 0);
	assert_string_equal(l.holder, b.ans.node_id);
	/* expired: b cannot renew it, a takes it at the next epoch */
	bc_clock_set_offset_ms(31000);
	assert_int_equal(bct_lease(&cp, &b, BC_LEASE_RENEW, 0, &l), 0);
	assert_false(l.held);
	assert_int_equal(bct_lease(&cp, &a, BC_LEASE_ACQUIRE, 0, &l), 0);
	assert_true(l.held);
	assert_int_equal(l.epoch, e1 + 2);
	bc_clock_set_offset_ms(0);
	/* the lease of another site is another row */
	struct bct_site_node c;
	bct_site_node(&cp, "root", site2, &c);
	assert_int_equal(bct_lease(&cp, &c, BC_LEASE_ACQUIRE, 0, &l), 0);
	assert_true(l.held);
	assert_int_equal(l.epoch, 1);
	release(&c);
	bct_site_node_free(&a);
	bct_site_node_free(&b);
	bct_site_node_free(&c);
}

/* A LeaseRequest made by hand: name, epoch, client time, the signing key, its
 * purpose and the operation (path) as given. */
static int raw_lease_as(struct bct_site_node *s, const char *site, const char *name, uint64_t epoch,
                        int64_t when, EVP_PKEY *signer, const char *purpose, const char *path)
{
	Bettercompute__Site__V1__LeaseRequest rq = BETTERCOMPUTE__SITE__V1__LEASE_REQUEST__INIT;
	ProtobufCBinaryData chain = {.data = s->ans.chain[0], .len = s->ans.chain_lens[0]};
	struct bc_client_reply r = {0};
	uint8_t sig[BC_SIG_LEN], *body;
	size_t len;
	char err[256];
	bc_buf p;

	rq.chain = &chain;
	rq.n_chain = 1;
	rq.site_id = (char *)site;
	rq.name = (char *)name;
	rq.epoch = epoch;
	rq.client_time_ms = when;
	assert_int_equal(bc_lease_payload(&p, site, name, epoch, 0, when), 0);
	assert_int_equal(bct_sign(signer, purpose, p.p, p.len, sig), 0);
	bc_buf_free(&p);
	rq.proof.data = sig;
	rq.proof.len = sizeof(sig);
	len = bettercompute__site__v1__lease_request__get_packed_size(&rq);
	body = malloc(len);
	bettercompute__site__v1__lease_request__pack(&rq, body);
	assert_int_equal(bc_client_post(&cp.pins, path, body, len, &r, err, sizeof(err)), 0);
	free(body);
	free(r.body);
	return (int)r.status;
}

static int raw_lease(struct bct_site_node *s, const char *site, const char *name, int64_t when,
                     EVP_PKEY *signer)
{
	return raw_lease_as(s, site, name, 0, when, signer, BC_PURPOSE_LEASE_ACQUIRE,
	                    BC_WIRE_PATH_ACQUIRE_LEASE);
}

static void site_refused(int rc, const char *reason)
{
	assert_int_equal(rc, BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), reason);
}

static void test_site_service_refusals_by_name(void **state)
{
	struct bct_site_node a, other;
	struct bc_lease_answer l;
	struct bc_boot_entry *es = NULL;
	size_t n;
	int64_t at;
	char err[256];
	EVP_PKEY *stranger = NULL;
	(void)state;

	bct_site_node(&cp, "root", site1, &a);
	bct_site_node(&cp, "root", site2, &other);
	assert_int_equal(bc_key_generate(&stranger), 0);
	/* the request's own shape: not the lease's name, a stale client time, a proof by
	 * another key; every refusal is the same 403 */
	assert_int_equal(raw_lease(&a, site1, "site::other", bc_now_ms(), a.key), 403);
	assert_string_equal(bct_last_reason(&cp), "site-malformed");
	assert_int_equal(raw_lease(&a, site1, BC_WIRE_LEASE_BOOT, bc_now_ms() - 2 * MIN_MS, a.key),
	                 403);
	assert_string_equal(bct_last_reason(&cp), "site-client-time");
	assert_int_equal(raw_lease(&a, site1, BC_WIRE_LEASE_BOOT, bc_now_ms(), stranger), 403);
	assert_string_equal(bct_last_reason(&cp), "site-proof");
	/* a proof names its operation: the older single purpose "lease-request" proves
	 * nothing, and a RenewLease proof (captured, replayed within its 60 s) is no
	 * ReleaseLease proof */
	assert_int_equal(raw_lease_as(&a, site1, BC_WIRE_LEASE_BOOT, 0, bc_now_ms(), a.key,
	                              "lease-request", BC_WIRE_PATH_ACQUIRE_LEASE),
	                 403);
	assert_string_equal(bct_last_reason(&cp), "site-proof");
	hold(&a);
	int64_t now = bc_now_ms();
	assert_int_equal(raw_lease_as(&a, site1, BC_WIRE_LEASE_BOOT, a.epoch, now, a.key,
	                              BC_PURPOSE_LEASE_RENEW, BC_WIRE_PATH_RENEW_LEASE),
	                 200);
	assert_int_equal(raw_lease_as(&a, site1, BC_WIRE_LEASE_BOOT, a.epoch, now, a.key,
	                              BC_PURPOSE_LEASE_RENEW, BC_WIRE_PATH_RELEASE_LEASE),
	                 403);
	assert_string_equal(bct_last_reason(&cp), "site-proof");
	assert_int_equal(raw_lease_as(&a, site1, BC_WIRE_LEASE_BOOT, a.epoch, now, a.key,
	                              BC_PURPOSE_LEASE_RENEW, BC_WIRE_PATH_ACQUIRE_LEASE),
	                 403);
	assert_string_equal(bct_last_reason(&cp), "site-proof");
	/* still the holder: the replay released nothing */
	bc_param holder[] = {BC_TEXT(a.ans.node_id)};
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM leases WHERE holder = $1", holder, 1),
	                 1);
	release(&a);
	/* a site node of another site */
	a.c.site_id = site2;
	site_refused(bct_lease(&cp, &a, BC_LEASE_ACQUIRE, 0, &l), "site-wrong-site");
	a.c.site_id = site1;
	/* a node certificate is no site certificate */
	{
		struct bct_token_opts to = {0};
		char *t = bct_token(&cp, &to, NULL);
		struct bct_site_node nd;
		memset(&nd, 0, sizeof(nd));
		assert_int_equal(bc_key_generate(&nd.key), 0);
		struct bct_join_opts jo = {.token = t, .key = nd.key};
		assert_int_equal(bct_join(&cp, &jo, &nd.ans), 0);
		nd.c = a.c;
		nd.c.chain = (const uint8_t *const *)nd.ans.chain;
		nd.c.chain_lens = nd.ans.chain_lens;
		nd.c.n_chain = nd.ans.n_chain;
		assert_int_equal(bc_signer_init(&nd.signer, nd.key, NULL, NULL), 0);
		nd.c.signer = &nd.signer;
		site_refused(bct_lease(&cp, &nd, BC_LEASE_ACQUIRE, 0, &l), "site-role");
		bct_site_node_free(&nd);
		free(t);
	}
	/* boot entries and tokens go only to the holder */
	site_refused(bc_client_boot_entries(&cp.pins, &a.c, 1, &es, &n, &at, err, sizeof(err)),
	             "site-not-holder");
	int rc;
	assert_null(bct_fetch_token(&cp, &a, "", MAC_U, &rc));
	site_refused(rc, "site-not-holder");
	hold(&a);
	site_refused(
	    bc_client_boot_entries(&cp.pins, &a.c, a.epoch + 1, &es, &n, &at, err, sizeof(err)),
	    "site-not-holder");
	/* FetchSecret's own */
	assert_null(bct_fetch_token(&cp, &a, "", "not-a-mac", &rc));
	site_refused(rc, "secret-kind");
	char wf[64];
	commission(site1, MAC_A, NULL, NULL, wf);
	assert_null(bct_fetch_token(&cp, &a, wf, MAC_B, &rc));
	site_refused(rc, "secret-workflow");
	assert_null(bct_fetch_token(&cp, &a, "wf_00000000000000000000000000", MAC_A, &rc));
	site_refused(rc, "secret-workflow");
	/* a revoked certificate */
	bc_param p[] = {BC_TEXT(a.ans.node_id)};
	assert_int_equal(
	    bct_exec(&cp, "UPDATE node_certs SET revoked_at = 1 WHERE node_id = $1", p, 1), 0);
	site_refused(bct_lease(&cp, &a, BC_LEASE_RENEW, 0, &l), "site-not-current");
	EVP_PKEY_free(stranger);
	bct_site_node_free(&a);
	bct_site_node_free(&other);
}

/* s renewed to next_key: the same node and site, the successor's chain. */
static void renewed(const struct bct_site_node *s, EVP_PKEY *next_key, struct bct_site_node *out)
{
	memset(out, 0, sizeof(*out));
	assert_int_equal(bct_renew(&cp, &s->ans, s->key, next_key, &out->ans), 0);
	out->key = next_key;
	out->c = s->c;
	out->c.chain = (const uint8_t *const *)out->ans.chain;
	out->c.chain_lens = out->ans.chain_lens;
	out->c.n_chain = out->ans.n_chain;
	assert_int_equal(bc_signer_init(&out->signer, next_key, NULL, NULL), 0);
	out->c.signer = &out->signer;
}

/* A site certificate rotated away (the node renewed L1 -> L2 -> L3: using L2
 * superseded L1) acts no more for its node: AcquireLease, FetchSecret and an
 * assertion signed by L1's key are refused by name, as Renew is; L3 goes on. */
static void test_a_superseded_site_certificate_is_refused(void **state)
{
	struct bct_site_node l1, l2, l3;
	struct bc_join_answer ans;
	struct bc_lease_answer l;
	EVP_PKEY *k2 = NULL, *k3 = NULL, *k4 = NULL;
	char wf[64], *t;
	size_t len;
	int rc;
	(void)state;

	bct_site_node(&cp, "root", site1, &l1);
	assert_int_equal(bc_key_generate(&k2), 0);
	assert_int_equal(bc_key_generate(&k3), 0);
	assert_int_equal(bc_key_generate(&k4), 0);
	renewed(&l1, k2, &l2);
	renewed(&l2, k3, &l3);
	/* L1: no lease, no renewal */
	site_refused(bct_lease(&cp, &l1, BC_LEASE_ACQUIRE, 0, &l), "site-not-current");
	site_refused(bct_renew(&cp, &l1.ans, l1.key, k4, &ans), "renew-superseded");
	/* L3 holds the lease; L1, of the same node, fetches no token */
	hold(&l3);
	assert_null(bct_fetch_token(&cp, &l1, "", MAC_U, &rc));
	site_refused(rc, "site-not-current");
	site_refused(bct_lease(&cp, &l1, BC_LEASE_RENEW, 0, &l), "site-not-current");
	/* an assertion signed by L1's key vouches for nothing; by L3's it does */
	/* a machine of its own: the other tests' UUIDs stay new */
	commission(site1, MAC_B, UUID_C, NULL, wf);
	t = token_for(&l3, wf, MAC_B);
	struct bct_assertion as = bct_vouch(&l3, MAC_B, wf, UUID_C);
	as.key = l1.key;
	refused_with(&as, t, MAC_B, UUID_C, "discovery-signature");
	as.key = l3.key;
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {
	    .token = t, .att = att, .att_len = len, .mac = MAC_B, .uuid = UUID_C};
	assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), 0);
	bc_join_answer_free(&ans);
	free(att);
	free(t);
	release(&l3);
	EVP_PKEY_free(k4);
	bct_site_node_free(&l1);
	bct_site_node_free(&l2);
	bct_site_node_free(&l3);
}

static void test_boot_entries_and_tokens_for_the_holder(void **state)
{
	struct bct_site_node a;
	struct bc_boot_entry *es = NULL;
	char wf[64], wf2[64], wf_other[64], err[256];
	size_t n = 0;
	int64_t at = 0;
	int rc;
	(void)state;

	bct_site_node(&cp, "root", site1, &a);
	hold(&a);
	commission(site1, "52-54-00-AA-00-21", UUID_A, NULL, wf);
	commission(site1, "52:54:00:aa:00:22", NULL, NULL, wf2);
	commission(site2, "52:54:00:aa:00:23", NULL, NULL, wf_other);
	assert_int_equal(
	    bc_client_boot_entries(&cp.pins, &a.c, a.epoch, &es, &n, &at, err, sizeof(err)), 0);
	int seen = 0;
	for (size_t i = 0; i < n; i++) {
		assert_string_not_equal(es[i].workflow_id, wf_other);
		if (strcmp(es[i].workflow_id, wf) == 0) {
			/* canonical, with the operator's product UUID */
			assert_string_equal(es[i].mac, "52:54:00:aa:00:21");
			assert_string_equal(es[i].product_uuid, UUID_A);
			seen++;
		}
		seen += strcmp(es[i].workflow_id, wf2) == 0;
	}
	assert_int_equal(seen, 2);
	free(es);
	/* a token for the entry: single use, bound to the MAC, the site and the workflow */
	char *t = token_for(&a, wf, "52:54:00:aa:00:21");
	char id[64];
	memcpy(id, t + 4, 30);
	id[30] = 0;
	bc_param p[] = {BC_TEXT(id), BC_TEXT(site1), BC_TEXT(wf)};
	assert_int_equal(
	    bct_count(&cp,
	              "SELECT COUNT(*) FROM join_tokens WHERE id = $1 AND site_id = $2 "
	              "AND workflow_id = $3 AND role = 'discovery' AND uses_left = 1 "
	              "AND expect = '{\"mac\":\"52:54:00:aa:00:21\"}'",
	              p, 3),
	    1);
	free(t);
	/* unknown MACs: at most BC_SITE_UNKNOWN_TOKENS_MAX (64) live tokens per site */
	assert_int_equal(bct_exec(&cp, "DELETE FROM join_tokens WHERE role = 'discovery'", NULL, 0),
	                 0);
	for (int i = 0; i < 64; i++) {
		char *u = bct_fetch_token(&cp, &a, "", MAC_U, &rc);
		assert_int_equal(rc, 0);
		free(u);
	}
	assert_null(bct_fetch_token(&cp, &a, "", MAC_U, &rc));
	site_refused(rc, "secret-limit");
	/* a token spent or expired no longer counts */
	assert_int_equal(bct_exec(&cp,
	                          "UPDATE join_tokens SET uses_left = 0 WHERE role = "
	                          "'discovery'",
	                          NULL, 0),
	                 0);
	free(token_for(&a, "", MAC_U));
	/* a commission workflow: at most BC_SITE_WORKFLOW_TOKENS_MAX (16) live tokens */
	for (int i = 0; i < 16; i++)
		free(token_for(&a, wf2, "52:54:00:aa:00:22"));
	assert_null(bct_fetch_token(&cp, &a, wf2, "52:54:00:aa:00:22", &rc));
	site_refused(rc, "secret-limit");
	release(&a);
	bct_site_node_free(&a);
}

/* ---- the attestor ---- */

static void test_a_vouched_ramdisk_joins_once(void **state)
{
	struct bct_site_node a;
	struct bc_join_answer ans, again;
	struct bc_node_identity id;
	char wf[64];
	size_t len;
	(void)state;

	bct_site_node(&cp, "root", site1, &a);
	hold(&a);
	commission(site1, MAC_A, UUID_A, NULL, wf);
	char *t = token_for(&a, wf, MAC_A);
	struct bct_assertion as = bct_vouch(&a, MAC_A, wf, UUID_A);
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {
	    .token = t, .att = att, .att_len = len, .mac = MAC_A, .uuid = UUID_A};
	assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	assert_string_equal(id.role, "ramdisk");
	assert_true(id.not_after_ms - id.not_before_ms <=
	            2LL * 3600 * 1000 + BC_NODE_CERT_BACKDATE_MS);
	printf("ramdisk certificate: %lld s\n",
	       (long long)((id.not_after_ms - id.not_before_ms) / 1000));
	bc_node_identity_clear(&id);
	assert_int_equal(uses_left_of(t), 0);
	/* its site, its product UUID (the boot entry's, which the operator set) as a key
	 * of its tenant, never of the fleet, and its inventory */
	bc_param p[] = {BC_TEXT(ans.node_id), BC_TEXT(site1)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND site_id = $2 AND "
	                           "role = 'ramdisk' AND attestor = 'discovery' AND hardware_key "
	                           "IS NULL AND claimed_key = 'uuid:" UUID_A "'",
	                           p, 2),
	                 1);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM inventory WHERE node_id = $1", p, 1),
	                 1);
	/* the command kinds a ramdisk may run, by default */
	char *kinds = bct_text(&cp, "SELECT allowed_kinds FROM nodes WHERE id = $1", p, 1);
	assert_non_null(kinds);
	printf("ramdisk allowed kinds: %s\n", kinds);
	assert_string_equal(kinds, "[\"inventory.refresh\",\"logs.collect\",\"diag.*\","
	                           "\"disk.wipe\",\"deploy.*\",\"boot.kexec\"]");
	free(kinds);
	/* the assertion admitted one join: a second token does not make it new */
	char *t2 = token_for(&a, wf, MAC_A);
	r.token = t2;
	assert_int_equal(bct_ramdisk_join(&cp, &r, &again), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "assertion-reused");
	assert_int_equal(uses_left_of(t2), 1);
	/* re-commissioned: the reclaim gives the node what this result says, whatever
	 * another attestor recorded before */
	assert_int_equal(bct_exec(&cp,
	                          "UPDATE nodes SET allowed_kinds = '[\"old.kind\"]', attestor = "
	                          "'join-token' WHERE id = $1",
	                          p, 1),
	                 0);
	char wf2[64];
	commission(site1, MAC_A, UUID_A, ans.node_id, wf2);
	char *t3 = token_for(&a, wf2, MAC_A);
	struct bct_assertion as3 = bct_vouch(&a, MAC_A, wf2, UUID_A);
	uint8_t *att3 = bct_assertion_sign(&as3, &len);
	struct bct_ramdisk r3 = {
	    .token = t3, .att = att3, .att_len = len, .mac = MAC_A, .uuid = UUID_A};
	assert_int_equal(bct_ramdisk_join(&cp, &r3, &again), 0);
	assert_int_equal(again.state, BC_JOIN_JOINED);
	assert_string_equal(again.node_id, ans.node_id);
	kinds = bct_text(&cp,
	                 "SELECT allowed_kinds FROM nodes WHERE id = $1 AND attestor = 'discovery' "
	                 "AND generation = 2",
	                 p, 1);
	assert_non_null(kinds);
	assert_string_equal(kinds, "[\"inventory.refresh\",\"logs.collect\",\"diag.*\","
	                           "\"disk.wipe\",\"deploy.*\",\"boot.kexec\"]");
	free(kinds);
	bc_join_answer_free(&again);
	free(att3);
	free(t3);
	bc_join_answer_free(&ans);
	free(att);
	free(t);
	free(t2);
	release(&a);
	bct_site_node_free(&a);
}

static void test_every_discovery_refusal_by_name(void **state)
{
	struct bct_site_node a, b, other;
	struct bc_join_answer ans;
	struct bct_assertion as;
	char wf[64], *t;
	(void)state;

	bct_site_node(&cp, "root", site1, &a);
	bct_site_node(&cp, "root", site1, &b);
	bct_site_node(&cp, "root", site2, &other);
	hold(&a);
	hold(&other);
	commission(site1, MAC_A, UUID_A, NULL, wf);
	t = token_for(&a, wf, MAC_A);
	as = bct_vouch(&a, MAC_A, wf, UUID_A);

	/* check(): the bytes, and the machine against them */
	{
		static const uint8_t junk[] = {0x0a, 0xff, 0x01};
		struct bct_ramdisk r = {
		    .token = t, .att = junk, .att_len = sizeof(junk), .mac = MAC_A};
		assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&cp), "discovery-malformed");
		r.att = NULL;
		r.att_len = 0;
		assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&cp), "discovery-malformed");
	}
	{
		/* signed, but out of shape */
		struct bct_assertion x = as;
		x.epoch = 0;
		refused_with(&x, t, MAC_A, UUID_A, "discovery-malformed");
		x = as;
		x.mac = "52:54:00:aa:00";
		refused_with(&x, t, MAC_A, UUID_A, "discovery-malformed");
		x = as;
		x.uuid = "not-a-uuid";
		refused_with(&x, t, MAC_A, UUID_A, "discovery-malformed");
		x = as;
		x.not_after = x.issued_at;
		refused_with(&x, t, MAC_A, UUID_A, "discovery-malformed");
		x = as;
		x.site = "";
		refused_with(&x, t, MAC_A, UUID_A, "discovery-malformed");
		x = as;
		x.wf = "wf with spaces";
		refused_with(&x, t, MAC_A, UUID_A, "discovery-malformed");
	}
	refused_with(&as, t, MAC_B, UUID_A, "discovery-mac-not-claimed");
	refused_with(&as, t, MAC_A, UUID_B, "product-uuid-mismatch");
	refused_with(&as, t, MAC_A, NULL, "product-uuid-mismatch");
	/* the token */
	refused_with(&as, NULL, MAC_A, UUID_A, "token-missing");
	{
		struct bct_token_opts to = {.site = site1};
		char *node_tok = bct_token(&cp, &to, NULL);
		refused_with(&as, node_tok, MAC_A, UUID_A, "not-single-use");
		free(node_tok);
	}
	{
		char *t_other = token_for(&other, "", MAC_A);
		refused_with(&as, t_other, MAC_A, UUID_A, "discovery-site-mismatch");
		free(t_other);
	}
	{
		char *t_b = token_for(&a, "", MAC_B);
		struct bct_assertion nowf = bct_vouch(&a, MAC_A, NULL, UUID_A);
		refused_with(&nowf, t_b, MAC_A, UUID_A, "discovery-token-mac");
		free(t_b);
		char *t_u = token_for(&a, "", MAC_A);
		refused_with(&as, t_u, MAC_A, UUID_A, "discovery-workflow-mismatch");
		free(t_u);
	}
	/* the signer */
	{
		struct bct_assertion x = as;
		x.signer = "node_00000000000000000000000000";
		refused_with(&x, t, MAC_A, UUID_A, "discovery-signer-unknown");
		x.signer = other.ans.node_id; /* a site node of another site */
		refused_with(&x, t, MAC_A, UUID_A, "discovery-signer-unknown");
		x = as;
		x.epoch = as.epoch + 1;
		refused_with(&x, t, MAC_A, UUID_A, "discovery-fenced");
		x = bct_vouch(&b, MAC_A, wf, UUID_A); /* b holds no lease at a's epoch */
		x.epoch = as.epoch;
		refused_with(&x, t, MAC_A, UUID_A, "discovery-fenced");
		EVP_PKEY *k = NULL;
		assert_int_equal(bc_key_generate(&k), 0);
		x = as;
		x.key = k; /* signed by a key that is not the signer's */
		refused_with(&x, t, MAC_A, UUID_A, "discovery-signature");
		EVP_PKEY_free(k);
		/* freshness: past not_after, or 15 minutes after issued_at */
		x = as;
		x.not_after = bc_now_ms() - 1;
		x.issued_at = x.not_after - MIN_MS;
		refused_with(&x, t, MAC_A, UUID_A, "discovery-expired");
		x = as;
		x.issued_at = bc_now_ms() - 16 * MIN_MS;
		x.not_after = bc_now_ms() + MIN_MS;
		refused_with(&x, t, MAC_A, UUID_A, "discovery-expired");
		x = as;
		x.issued_at = bc_now_ms() + 5 * MIN_MS;
		x.not_after = x.issued_at + MIN_MS;
		refused_with(&x, t, MAC_A, UUID_A, "discovery-expired");
	}
	/* a retired signer */
	{
		bc_param p[] = {BC_TEXT(a.ans.node_id)};
		assert_int_equal(
		    bct_exec(&cp, "UPDATE nodes SET state = 'retired' WHERE id = $1", p, 1), 0);
		refused_with(&as, t, MAC_A, UUID_A, "discovery-signer-retired");
		assert_int_equal(
		    bct_exec(&cp, "UPDATE nodes SET state = 'adopted' WHERE id = $1", p, 1), 0);
	}
	/* a cancelled workflow */
	{
		bc_param p[] = {BC_TEXT(wf)};
		assert_int_equal(
		    bct_exec(&cp, "UPDATE workflows SET state = 'cancelled' WHERE id = $1", p, 1),
		    0);
		refused_with(&as, t, MAC_A, UUID_A, "workflow-not-running");
		assert_int_equal(
		    bct_exec(&cp, "UPDATE workflows SET state = 'running' WHERE id = $1", p, 1), 0);
	}
	/* after every refusal the token still admits the vouched machine, once */
	assert_int_equal(uses_left_of(t), 1);
	size_t len;
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {
	    .token = t, .att = att, .att_len = len, .mac = MAC_A, .uuid = UUID_A};
	assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), 0);
	bc_join_answer_free(&ans);
	assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "token-used-up");
	/* a ramdisk only */
	{
		struct bct_join_opts jo = {.attestor = "discovery",
		                           .role = "node",
		                           .token = t,
		                           .attestation = att,
		                           .attestation_len = len,
		                           .mac = MAC_A};
		assert_int_equal(bct_join(&cp, &jo, &ans), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&cp), "role-not-admitted");
	}
	free(att);
	free(t);
	release(&a);
	release(&other);
	bct_site_node_free(&a);
	bct_site_node_free(&b);
	bct_site_node_free(&other);
}

static void test_a_fenced_boot_server_can_no_longer_vouch(void **state)
{
	struct bct_site_node a, b;
	struct bc_join_answer ans;
	struct bc_lease_answer l;
	struct bc_boot_entry *es = NULL;
	char wf[64], err[256];
	size_t n, len;
	int64_t at;
	int rc;
	(void)state;

	bct_site_node(&cp, "root", site1, &a);
	bct_site_node(&cp, "root", site1, &b);
	hold(&a);
	commission(site1, MAC_A, NULL, NULL, wf);
	char *t = token_for(&a, wf, MAC_A);
	struct bct_assertion as = bct_vouch(&a, MAC_A, wf, NULL);
	uint8_t *att = bct_assertion_sign(&as, &len);
	/* a's lease expires and b takes it */
	bc_clock_set_offset_ms(31000);
	assert_int_equal(bct_lease(&cp, &b, BC_LEASE_ACQUIRE, 0, &l), 0);
	assert_true(l.held);
	assert_int_equal(l.epoch, a.epoch + 1);
	/* a's assertion, its token fetches and its boot entries are refused */
	struct bct_ramdisk r = {.token = t, .att = att, .att_len = len, .mac = MAC_A};
	assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "discovery-fenced");
	assert_null(bct_fetch_token(&cp, &a, wf, MAC_A, &rc));
	site_refused(rc, "site-not-holder");
	site_refused(
	    bc_client_boot_entries(&cp.pins, &a.c, a.epoch, &es, &n, &at, err, sizeof(err)),
	    "site-not-holder");
	assert_int_equal(bct_lease(&cp, &a, BC_LEASE_RENEW, 0, &l), 0);
	assert_false(l.held);
	/* b vouches now */
	char *t2 = token_for(&b, wf, MAC_A);
	struct bct_assertion bs = bct_vouch(&b, MAC_A, wf, NULL);
	uint8_t *att2 = bct_assertion_sign(&bs, &len);
	struct bct_ramdisk r2 = {.token = t2, .att = att2, .att_len = len, .mac = MAC_A};
	assert_int_equal(bct_ramdisk_join(&cp, &r2, &ans), 0);
	bc_join_answer_free(&ans);
	bc_clock_set_offset_ms(0);
	free(att);
	free(att2);
	free(t);
	free(t2);
	bct_site_node_free(&a);
	bct_site_node_free(&b);
}

/* ---- two replicas ---- */

struct acquirer {
	struct bct_cp *on;
	struct bct_site_node *s;
	struct bc_lease_answer l;
	int rc;
};

static void *acquire(void *arg)
{
	struct acquirer *q = arg;
	char err[256];
	q->rc = bc_client_lease(&q->on->pins, &q->s->c, BC_LEASE_ACQUIRE, 0, 0, &q->l, err,
	                        sizeof(err));
	return NULL;
}

static void test_two_replicas_grant_once_and_accept_once(void **state)
{
	struct bct_cp replica;
	struct bct_site_node a, b;
	struct bc_join_answer ans;
	char wf[64];
	size_t len;
	pthread_t th[2];
	(void)state;

	assert_int_equal(bct_cp_replica_toml(&cp, &replica, "[attestors.discovery]\n"), 0);
	bct_site_node(&cp, "root", site1, &a);
	bct_site_node(&cp, "root", site1, &b);
	/* a and b ask two replicas at once: one of them holds it */
	struct acquirer qa = {.on = &cp, .s = &a}, qb = {.on = &replica, .s = &b};
	assert_int_equal(pthread_create(&th[0], NULL, acquire, &qa), 0);
	assert_int_equal(pthread_create(&th[1], NULL, acquire, &qb), 0);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	assert_int_equal(qa.rc, 0);
	assert_int_equal(qb.rc, 0);
	assert_int_equal(qa.l.held + qb.l.held, 1);
	assert_int_equal(qa.l.epoch, qb.l.epoch);
	struct bct_site_node *h = qa.l.held ? &a : &b;
	h->epoch = qa.l.epoch;
	/* one assertion, two tokens, two replicas: one join */
	commission(site1, MAC_B, NULL, NULL, wf);
	char *t1 = token_for(h, wf, MAC_B), *t2 = token_for(h, wf, MAC_B);
	struct bct_assertion as = bct_vouch(h, MAC_B, wf, NULL);
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {.token = t1, .att = att, .att_len = len, .mac = MAC_B};
	assert_int_equal(bct_ramdisk_join(&replica, &r, &ans), 0);
	bc_join_answer_free(&ans);
	r.token = t2;
	assert_int_equal(bct_ramdisk_join(&cp, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "assertion-reused");
	/* racing: 8 joins of one assertion with 8 tokens through both replicas */
	struct bct_assertion as2 = bct_vouch(h, MAC_B, wf, NULL);
	as2.issued_at -= 1; /* another assertion */
	uint8_t *att2 = bct_assertion_sign(&as2, &len);
	char *tok[8];
	for (int i = 0; i < 8; i++)
		tok[i] = token_for(h, wf, MAC_B);
	int admitted = 0, denied = 0;
	for (int i = 0; i < 8; i++) {
		struct bct_ramdisk ri = {
		    .token = tok[i], .att = att2, .att_len = len, .mac = MAC_B};
		int rc = bct_ramdisk_join(i % 2 ? &replica : &cp, &ri, &ans);
		if (rc == 0) {
			admitted++;
			bc_join_answer_free(&ans);
		}
		denied += rc == BC_ERR_DENIED;
		free(tok[i]);
	}
	assert_int_equal(admitted, 1);
	assert_int_equal(denied, 7);
	printf("one assertion over two replicas: %d admitted, %d refused\n", admitted, denied);
	free(att);
	free(att2);
	free(t1);
	free(t2);
	bct_cp_stop(&replica);
	bct_site_node_free(&a);
	bct_site_node_free(&b);
}

/* ---- approvals ---- */

/* The hex SHA-256 of a CSR, as join_requests and the admin API show it. */
static void csr_hex(const uint8_t *csr, size_t len, char out[65])
{
	uint8_t d[32];
	assert_int_equal(bc_sha256(csr, len, d), 0);
	bc_hex_encode_to(d, sizeof(d), out);
}

/* A control plane of its own with the discovery options in toml, a site named name
 * and a site node a of it holding the site's lease. */
static void own_boot_server(struct bct_cp *on, const char *toml, const char *name, char site[64],
                            struct bct_site_node *a)
{
	struct bc_lease_answer l;

	assert_int_equal(bct_cp_start(on, toml), 0);
	assert_int_equal(bct_site(on, "root", name, site), 0);
	bct_site_node(on, "root", site, a);
	assert_int_equal(bct_lease(on, a, BC_LEASE_ACQUIRE, 0, &l), 0);
	assert_true(l.held);
}

static void test_unknown_machines_wait_for_an_operator(void **state)
{
	struct bct_cp ap;
	struct bct_site_node a;
	struct bc_join_answer ans;
	EVP_PKEY *key = NULL, *key2 = NULL;
	uint8_t *csr = NULL, *csr2 = NULL;
	size_t csr_len, csr2_len, len;
	char site[64], wf[64];
	(void)state;

	own_boot_server(&ap,
	                "[attestors.discovery]\n"
	                "approval = \"unknown-machines\"\n"
	                "retry_after_seconds = 5\n",
	                "dc-ap", site, &a);
	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_csr_make(key, BC_WIRE_CSR_CN, &csr, &csr_len), 0);
	int rc;
	char *t = bct_fetch_token(&ap, &a, "", MAC_U, &rc);
	assert_int_equal(rc, 0);
	struct bct_assertion as = bct_vouch(&a, MAC_U, NULL, NULL);
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {.token = t,
	                        .att = att,
	                        .att_len = len,
	                        .mac = MAC_U,
	                        .uuid = UUID_B,
	                        .csr = csr,
	                        .csr_len = csr_len};
	/* pending: a join request, nothing spent */
	assert_int_equal(bct_ramdisk_join(&ap, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	assert_int_equal(ans.retry_after_seconds, 5);
	char jr[64];
	snprintf(jr, sizeof(jr), "%s", ans.request_id);
	bc_join_answer_free(&ans);
	bc_param p[] = {BC_TEXT(jr), BC_TEXT(site)};
	char *claims =
	    bct_text(&ap,
	             "SELECT claims FROM join_requests WHERE id = $1 AND site_id = $2 AND "
	             "attestor = 'discovery' AND state = 'pending'",
	             p, 2);
	assert_non_null(claims);
	assert_non_null(strstr(claims, MAC_U));
	assert_non_null(strstr(claims, UUID_B));
	free(claims);
	assert_int_equal(
	    bct_count(&ap,
	              "SELECT COUNT(*) FROM events WHERE type = 'join.request.created' "
	              "AND subject = $1",
	              p, 1),
	    1);
	/* asking again waits on the same request */
	assert_int_equal(bct_ramdisk_join(&ap, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	assert_string_equal(ans.request_id, jr);
	bc_join_answer_free(&ans);
	/* the tried takeover: another CSR (an attacker's, or a restarted ramdisk's) with
	 * fresh evidence never replaces what the operator is approving, nor do other
	 * claims with the same CSR */
	char hex[65], *shown;
	csr_hex(csr, csr_len, hex);
	assert_int_equal(bc_key_generate(&key2), 0);
	assert_int_equal(bc_csr_make(key2, BC_WIRE_CSR_CN, &csr2, &csr2_len), 0);
	r.csr = csr2;
	r.csr_len = csr2_len;
	assert_int_equal(bct_ramdisk_join(&ap, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&ap), "enrollment-csr");
	r.csr = csr;
	r.csr_len = csr_len;
	r.serial = "ATTACKER-1";
	assert_int_equal(bct_ramdisk_join(&ap, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&ap), "enrollment-csr");
	r.serial = NULL;
	shown = bct_text(&ap, "SELECT csr_sha256 FROM join_requests WHERE id = $1", p, 1);
	assert_non_null(shown);
	assert_string_equal(shown, hex);
	free(shown);
	/* approved: the CSR the operator saw joins, once; the other is still refused */
	assert_int_equal(
	    bct_exec(&ap, "UPDATE join_requests SET state = 'approved' WHERE id = $1", p, 1), 0);
	r.csr = csr2;
	r.csr_len = csr2_len;
	assert_int_equal(bct_ramdisk_join(&ap, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&ap), "enrollment-csr");
	r.csr = csr;
	r.csr_len = csr_len;
	assert_int_equal(bct_ramdisk_join(&ap, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_join_answer_free(&ans);
	free(att);
	free(t);
	/* denied: refused by name */
	t = bct_fetch_token(&ap, &a, "", MAC_B, &rc);
	assert_int_equal(rc, 0);
	as = bct_vouch(&a, MAC_B, NULL, NULL);
	att = bct_assertion_sign(&as, &len);
	r = (struct bct_ramdisk){
	    .token = t, .att = att, .att_len = len, .mac = MAC_B, .csr = csr, .csr_len = csr_len};
	assert_int_equal(bct_ramdisk_join(&ap, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	snprintf(jr, sizeof(jr), "%s", ans.request_id);
	bc_param d[] = {BC_TEXT(jr)};
	bc_join_answer_free(&ans);
	assert_int_equal(
	    bct_exec(&ap, "UPDATE join_requests SET state = 'denied' WHERE id = $1", d, 1), 0);
	assert_int_equal(bct_ramdisk_join(&ap, &r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&ap), "discovery-denied");
	(void)wf;
	free(att);
	free(t);
	free(csr);
	free(csr2);
	EVP_PKEY_free(key);
	EVP_PKEY_free(key2);
	bct_site_node_free(&a);
	bct_cp_stop(&ap);
}

static void test_configured_allowed_kinds_are_the_nodes(void **state)
{
	struct bct_cp kp;
	struct bct_site_node a;
	struct bc_join_answer ans;
	char site[64], wf[64];
	size_t len;
	(void)state;

	own_boot_server(&kp,
	                "[attestors.discovery]\n"
	                "allowed_kinds = [\"inventory.refresh\", \"disk.wipe\", \"diag.*\"]\n",
	                "dc-kinds", site, &a);
	int rc;
	char *t = bct_fetch_token(&kp, &a, "", MAC_B, &rc);
	assert_int_equal(rc, 0);
	struct bct_assertion as = bct_vouch(&a, MAC_B, NULL, UUID_B);
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {
	    .token = t, .att = att, .att_len = len, .mac = MAC_B, .uuid = UUID_B};
	assert_int_equal(bct_ramdisk_join(&kp, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_param p[] = {BC_TEXT(ans.node_id)};
	char *kinds = bct_text(&kp, "SELECT allowed_kinds FROM nodes WHERE id = $1", p, 1);
	assert_non_null(kinds);
	printf("configured allowed kinds: %s\n", kinds);
	assert_string_equal(kinds, "[\"inventory.refresh\",\"disk.wipe\",\"diag.*\"]");
	free(kinds);
	/* a node another attestor admitted has none */
	char *other = bct_text(&kp, "SELECT allowed_kinds FROM nodes WHERE id <> $1 LIMIT 1", p, 1);
	assert_non_null(other);
	assert_string_equal(other, "[]");
	free(other);
	(void)wf;
	bc_join_answer_free(&ans);
	free(att);
	free(t);
	bct_site_node_free(&a);
	bct_cp_stop(&kp);
}

/* A second tenant, its own site and a site node b of it holding the site's lease. */
static void other_tenant(struct bct_cp *on, const char *tenant, char site[64],
                         struct bct_site_node *b)
{
	struct bc_lease_answer l;

	assert_int_equal(bct_tenant(on, tenant), 0);
	assert_int_equal(bct_site(on, tenant, "dc-other", site), 0);
	bct_site_node(on, tenant, site, b);
	assert_int_equal(bct_lease(on, b, BC_LEASE_ACQUIRE, 0, &l), 0);
	assert_true(l.held);
}

/* The tried attack: tenant B's boot server vouched for a MAC of its own whose machine
 * (and whose boot entry, which B's operator set) claims tenant A's machine's UUID. B's
 * join request is B's: A's real machine gets its own request in A, B's denial does
 * not refuse it, each request's events go to its own tenant, and A's approval admits
 * A's machine in A. */
static void test_requests_belong_to_their_tenant(void **state)
{
	struct bct_cp ap;
	struct bct_site_node a, b;
	struct bct_vouched va, vb;
	struct bc_join_answer ans;
	EVP_PKEY *ka = NULL, *kb = NULL;
	uint8_t *csr_a = NULL, *csr_b = NULL;
	size_t la, lb;
	char site_a[64], site_b[64], wf_a[64], wf_b[64], jr_a[64], jr_b[64], hex_a[65], hex_b[65];
	(void)state;

	own_boot_server(&ap,
	                "[attestors.discovery]\n"
	                "approval = \"always\"\n"
	                "hardware_key = \"product-uuid\"\n",
	                "dc-a", site_a, &a);
	other_tenant(&ap, "tnt_b", site_b, &b);
	bct_key_csr(&ka, &csr_a, &la);
	bct_key_csr(&kb, &csr_b, &lb);
	csr_hex(csr_a, la, hex_a);
	csr_hex(csr_b, lb, hex_b);
	/* B first: its machine and its entry claim A's UUID */
	bct_commission(&ap, "tnt_b", site_b, MAC_B, UUID_A, NULL, wf_b);
	bct_vouched(&ap, &b, wf_b, MAC_B, UUID_A, &vb);
	vb.r.csr = csr_b;
	vb.r.csr_len = lb;
	assert_int_equal(bct_ramdisk_join(&ap, &vb.r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	snprintf(jr_b, sizeof(jr_b), "%s", ans.request_id);
	bc_join_answer_free(&ans);
	/* A's real machine, through A's site, with the UUID A's operator set */
	bct_commission(&ap, "root", site_a, MAC_A, UUID_A, NULL, wf_a);
	bct_vouched(&ap, &a, wf_a, MAC_A, UUID_A, &va);
	va.r.csr = csr_a;
	va.r.csr_len = la;
	assert_int_equal(bct_ramdisk_join(&ap, &va.r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	snprintf(jr_a, sizeof(jr_a), "%s", ans.request_id);
	bc_join_answer_free(&ans);
	printf("tenant B's request %s, tenant A's %s\n", jr_b, jr_a);
	assert_string_not_equal(jr_a, jr_b);
	/* each in its tenant, with its own machine's CSR: A's list shows A's machine */
	bc_param pa[] = {BC_TEXT(jr_a), BC_TEXT(hex_a)};
	bc_param pb[] = {BC_TEXT(jr_b), BC_TEXT(hex_b)};
	assert_int_equal(bct_count(&ap,
	                           "SELECT COUNT(*) FROM join_requests WHERE id = $1 AND "
	                           "tenant_id = 'root' AND csr_sha256 = $2 AND request_key = "
	                           "'uuid:" UUID_A "'",
	                           pa, 2),
	                 1);
	assert_int_equal(bct_count(&ap,
	                           "SELECT COUNT(*) FROM join_requests WHERE id = $1 AND "
	                           "tenant_id = 'tnt_b' AND csr_sha256 = $2",
	                           pb, 2),
	                 1);
	/* each request's event goes to its own tenant only */
	assert_int_equal(bct_count(&ap,
	                           "SELECT COUNT(*) FROM events WHERE type = "
	                           "'join.request.created' AND subject = $1 AND tenant_id = 'root'",
	                           pa, 1),
	                 1);
	assert_int_equal(bct_count(&ap,
	                           "SELECT COUNT(*) FROM events WHERE subject = $1 AND "
	                           "tenant_id <> 'tnt_b'",
	                           pb, 1),
	                 0);
	/* B denies its request: B's machine is refused, in B; A's still waits on its own */
	assert_int_equal(
	    bct_exec(&ap, "UPDATE join_requests SET state = 'denied' WHERE id = $1", pb, 1), 0);
	assert_int_equal(bct_ramdisk_join(&ap, &vb.r, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&ap), "discovery-denied");
	assert_string_equal(bct_last_refusal(&ap).tenant_id, "tnt_b");
	assert_int_equal(bct_ramdisk_join(&ap, &va.r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_PENDING);
	assert_string_equal(ans.request_id, jr_a);
	bc_join_answer_free(&ans);
	/* A approves: A's machine joins in A */
	assert_int_equal(
	    bct_exec(&ap, "UPDATE join_requests SET state = 'approved' WHERE id = $1", pa, 1), 0);
	assert_int_equal(bct_ramdisk_join(&ap, &va.r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	bc_param pn[] = {BC_TEXT(ans.node_id)};
	assert_int_equal(
	    bct_count(&ap, "SELECT COUNT(*) FROM nodes WHERE id = $1 AND tenant_id = 'root'", pn,
	              1),
	    1);
	bc_join_answer_free(&ans);
	bct_vouched_free(&va);
	bct_vouched_free(&vb);
	free(csr_a);
	free(csr_b);
	EVP_PKEY_free(ka);
	EVP_PKEY_free(kb);
	bct_site_node_free(&a);
	bct_site_node_free(&b);
	bct_cp_stop(&ap);
}

/* The tried attack: B's boot server signs the UUID iPXE's query carries, here A's
 * machine's, for a MAC of its own. B's node holds it only as a claim within B; A's
 * real machine, commissioned with that UUID, then joins in A (no join:reclaim), and
 * neither node holds a fleet-wide hardware key. */
static void test_a_claimed_uuid_binds_no_other_tenant(void **state)
{
	struct bct_cp cq;
	struct bct_site_node a, b;
	struct bct_vouched va, vb;
	struct bc_join_answer ans_a, ans_b;
	char site_a[64], site_b[64], wf_a[64];
	(void)state;

	own_boot_server(&cq, "[attestors.discovery]\n", "dc-a", site_a, &a);
	other_tenant(&cq, "tnt_b", site_b, &b);
	bct_vouched(&cq, &b, "", MAC_B, UUID_A, &vb);
	assert_int_equal(bct_ramdisk_join(&cq, &vb.r, &ans_b), 0);
	assert_int_equal(ans_b.state, BC_JOIN_JOINED);
	bc_param pb[] = {BC_TEXT(ans_b.node_id)};
	assert_int_equal(
	    bct_count(&cq,
	              "SELECT COUNT(*) FROM nodes WHERE id = $1 AND tenant_id = "
	              "'tnt_b' AND hardware_key IS NULL AND claimed_key = 'uuid:" UUID_A "'",
	              pb, 1),
	    1);
	/* A's real machine */
	bct_commission(&cq, "root", site_a, MAC_A, UUID_A, NULL, wf_a);
	bct_vouched(&cq, &a, wf_a, MAC_A, UUID_A, &va);
	assert_int_equal(bct_ramdisk_join(&cq, &va.r, &ans_a), 0);
	assert_int_equal(ans_a.state, BC_JOIN_JOINED);
	assert_string_not_equal(ans_a.node_id, ans_b.node_id);
	bc_param pa[] = {BC_TEXT(ans_a.node_id)};
	assert_int_equal(bct_count(&cq,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND tenant_id = "
	                           "'root' AND hardware_key IS NULL AND claimed_key = 'uuid:" UUID_A
	                           "'",
	                           pa, 1),
	                 1);
	assert_int_equal(
	    bct_count(&cq, "SELECT COUNT(*) FROM nodes WHERE hardware_key IS NOT NULL", NULL, 0),
	    0);
	printf("B's claim of A's UUID: B's %s and A's %s both joined, each in its tenant\n",
	       ans_b.node_id, ans_a.node_id);
	bc_join_answer_free(&ans_a);
	bc_join_answer_free(&ans_b);
	bct_vouched_free(&va);
	bct_vouched_free(&vb);
	bct_site_node_free(&a);
	bct_site_node_free(&b);
	bct_cp_stop(&cq);
}

/* commission --product-uuid binds the machine: an assertion naming another UUID (the
 * query's, which the machine chose), or none, is refused discovery-entry-uuid and
 * spends nothing. */
static void test_the_boot_entry_uuid_binds_the_commission(void **state)
{
	struct bct_site_node a;
	char wf[64];
	(void)state;

	bct_site_node(&cp, "root", site1, &a);
	hold(&a);
	commission(site1, MAC_B, UUID_B, NULL, wf);
	char *t = token_for(&a, wf, MAC_B);
	struct bct_assertion as = bct_vouch(&a, MAC_B, wf, UUID_C);
	refused_with(&as, t, MAC_B, UUID_C, "discovery-entry-uuid");
	as = bct_vouch(&a, MAC_B, wf, NULL);
	refused_with(&as, t, MAC_B, UUID_B, "discovery-entry-uuid");
	assert_int_equal(uses_left_of(t), 1);
	free(t);
	release(&a);
	bct_site_node_free(&a);
}

/* A ramdisk identity ends: its first certificate lasts cert_ttl_seconds, and Renew
 * refuses it (renew-role), however often it is asked. */
static void test_a_ramdisk_identity_ends(void **state)
{
	struct bct_cp tp;
	struct bct_site_node a;
	struct bc_join_answer ans, next;
	struct bc_node_identity id;
	EVP_PKEY *key = NULL, *k2 = NULL;
	char site[64];
	size_t len;
	int rc;
	(void)state;

	own_boot_server(&tp, "[attestors.discovery]\ncert_ttl_seconds = 600\n", "dc-ttl", site, &a);
	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_key_generate(&k2), 0);
	char *t = bct_fetch_token(&tp, &a, "", MAC_A, &rc);
	assert_int_equal(rc, 0);
	struct bct_assertion as = bct_vouch(&a, MAC_A, NULL, NULL);
	uint8_t *att = bct_assertion_sign(&as, &len);
	struct bct_ramdisk r = {.token = t, .att = att, .att_len = len, .mac = MAC_A, .key = key};
	assert_int_equal(bct_ramdisk_join(&tp, &r, &ans), 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	assert_int_equal(id.not_after_ms - id.not_before_ms, 600 * 1000 + BC_NODE_CERT_BACKDATE_MS);
	bc_node_identity_clear(&id);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(bct_renew(&tp, &ans, key, k2, &next), BC_ERR_DENIED);
		assert_string_equal(bct_last_reason(&tp), "renew-role");
	}
	bc_param p[] = {BC_TEXT(ans.node_id)};
	assert_int_equal(bct_count(&tp, "SELECT COUNT(*) FROM node_certs WHERE node_id = $1", p, 1),
	                 1);
	printf("ramdisk certificate: 600 s, renewals refused renew-role\n");
	bc_join_answer_free(&ans);
	free(att);
	free(t);
	EVP_PKEY_free(key);
	EVP_PKEY_free(k2);
	bct_site_node_free(&a);
	bct_cp_stop(&tp);
}

int main(void)
{
	if (bct_engine_skip())
		return BCT_SKIP;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_lease_epochs_grow_and_fence, fresh_leases),
	    cmocka_unit_test_setup(test_site_service_refusals_by_name, fresh_leases),
	    cmocka_unit_test_setup(test_a_superseded_site_certificate_is_refused, fresh_leases),
	    cmocka_unit_test_setup(test_boot_entries_and_tokens_for_the_holder, fresh_leases),
	    cmocka_unit_test_setup(test_a_vouched_ramdisk_joins_once, fresh_leases),
	    cmocka_unit_test_setup(test_every_discovery_refusal_by_name, fresh_leases),
	    cmocka_unit_test_setup(test_a_fenced_boot_server_can_no_longer_vouch, fresh_leases),
	    cmocka_unit_test_setup(test_two_replicas_grant_once_and_accept_once, fresh_leases),
	    cmocka_unit_test(test_unknown_machines_wait_for_an_operator),
	    cmocka_unit_test(test_configured_allowed_kinds_are_the_nodes),
	    cmocka_unit_test(test_requests_belong_to_their_tenant),
	    cmocka_unit_test(test_a_claimed_uuid_binds_no_other_tenant),
	    cmocka_unit_test_setup(test_the_boot_entry_uuid_binds_the_commission, fresh_leases),
	    cmocka_unit_test(test_a_ramdisk_identity_ends),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
