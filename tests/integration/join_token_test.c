/* JoinService with the join-token attestor, in-process over loopback HTTP with the
 * real client: admission, every refusal by name, identical refusals on the wire,
 * single use under a race, expect bindings, reclaims and pool attestor policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "server/connect.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bctest.h"
#include "join/join.h"
#include "store/migrations.h"

static struct bct_cp cp;
static char pool_id[64];

static int64_t nodes_count(void)
{
	return bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0);
}

static int64_t uses_left(const char *tok_id)
{
	bc_param p[] = {BC_TEXT(tok_id)};
	return bct_count(&cp, "SELECT uses_left FROM join_tokens WHERE id = $1", p, 1);
}

static void test_token_join_admits(void **state)
{
	struct bct_token_opts to = {.pool = pool_id};
	struct bc_join_answer ans;
	struct bc_node_identity id;
	char tok_id[64];
	char *token = bct_token(&cp, &to, tok_id);
	(void)state;

	assert_non_null(token);
	struct bct_join_opts jo = {.token = token};
	uint64_t before = bc_store_statements(bc_server_store(cp.srv));
	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	/* the token's lock, use and expect, the pool, the node (with its current
	 * certificate), its inventory, its MACs (node_macs, for nodes list --mac), the
	 * certificate, the event and the audit row (docs/performance.md) */
	assert_int_equal(bc_store_statements(bc_server_store(cp.srv)) - before, 10);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	assert_int_equal(strncmp(ans.node_id, "node_", 5), 0);
	assert_int_equal(strlen(ans.node_id), 31);
	assert_true(ans.n_chain == 2);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	assert_string_equal(id.node_id, ans.node_id);
	assert_string_equal(id.role, "node");
	assert_int_equal(id.n_statements, 0);
	/* 24 hours from the issue time, notBefore backdated for clock skew */
	assert_true(id.not_after_ms - id.not_before_ms ==
	            24LL * 3600 * 1000 + BC_NODE_CERT_BACKDATE_MS);
	bc_node_identity_clear(&id);
	assert_int_equal(uses_left(tok_id), 0);

	bc_param p[] = {BC_TEXT(ans.node_id), BC_TEXT(pool_id)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND pool_id = $2 "
	                           "AND state = 'adopted' AND generation = 1 AND "
	                           "node_key = 'unattested'",
	                           p, 2),
	                 1);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "revoked_at IS NULL",
	                           p, 1),
	                 1);
	/* the node row names it as its current certificate */
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes n JOIN node_certs c ON "
	                           "c.serial = n.cert_serial AND c.not_after = n.cert_not_after "
	                           "WHERE n.id = $1",
	                           p, 1),
	                 1);
	char *data = bct_text(&cp,
	                      "SELECT data FROM events WHERE type = 'node.joined' AND "
	                      "subject = $1",
	                      p, 1);
	assert_non_null(data);
	assert_non_null(strstr(data, "\"nodeKey\":\"unattested\""));
	assert_non_null(strstr(data, tok_id));
	free(data);
	data = bct_text(&cp,
	                "SELECT data FROM audit WHERE action = 'node.joined' AND subject = $1 "
	                "AND actor = 'join:join-token'",
	                p, 1);
	assert_non_null(data);
	assert_non_null(strstr(data, "\"nodeKey\":\"unattested\""));
	free(data);
	bc_join_answer_free(&ans);
	free(token);
}

struct refusal_case {
	const char *name;
	const char *reason;
};

/* Asks for one refusal and checks that it is exactly the permission_denied bytes,
 * that the hook saw the named reason, and that nothing was admitted or spent. */
static void expect_refusal(const struct bct_join_opts *jo, const char *reason, const char *tok_id)
{
	int64_t before_nodes = nodes_count();
	int64_t before_uses = tok_id ? uses_left(tok_id) : 0;
	size_t before_refusals = bct_refusal_count(&cp);
	uint8_t *body = NULL;
	size_t len = 0;
	long status = 0;

	assert_int_equal(bct_join_raw(&cp, jo, &status, &body, &len), 0);
	assert_int_equal(status, 403);
	assert_int_equal(len, strlen(bc_connect_permission_denied));
	assert_memory_equal(body, bc_connect_permission_denied, len);
	assert_int_equal(bct_refusal_count(&cp), before_refusals + 1);
	assert_string_equal(bct_last_reason(&cp), reason);
	assert_int_equal(nodes_count(), before_nodes);
	if (tok_id)
		assert_int_equal(uses_left(tok_id), before_uses);
	free(body);
}

static void test_every_refusal_by_name_same_bytes(void **state)
{
	char tok_id[64], other_pool[64], site_id[64];
	struct bc_join_answer ans;
	(void)state;

	/* unknown token: well formed, never issued */
	{
		struct bct_join_opts jo = {.token = "bct_tok_01jd0000000000000000000000_"
		                                    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"};
		expect_refusal(&jo, "token-unknown", NULL);
	}
	/* malformed and missing tokens */
	{
		struct bct_join_opts jo = {.token = "not-a-token"};
		expect_refusal(&jo, "token-malformed", NULL);
		struct bct_join_opts none = {0};
		expect_refusal(&none, "token-missing", NULL);
	}
	/* wrong secret */
	{
		struct bct_token_opts to = {.pool = pool_id};
		char *t = bct_token(&cp, &to, tok_id);
		t[strlen(t) - 1] = t[strlen(t) - 1] == 'A' ? 'B' : 'A';
		struct bct_join_opts jo = {.token = t};
		expect_refusal(&jo, "token-secret", tok_id);
		/* a token id is no credential: the refusal names no token and is summarized */
		struct bct_refusal r = bct_last_refusal(&cp);
		assert_string_equal(r.token_id, "");
		assert_string_equal(r.tenant_id, "root");
		assert_string_equal(r.attestor, "join-token");
		assert_true(r.summarized);
		free(t);
	}
	/* revoked */
	{
		struct bct_token_opts to = {.pool = pool_id};
		char *t = bct_token(&cp, &to, tok_id);
		bc_param p[] = {BC_TEXT(tok_id), BC_INT(bc_now_ms())};
		assert_int_equal(
		    bct_exec(&cp, "UPDATE join_tokens SET revoked_at = $2 WHERE id = $1", p, 2), 0);
		struct bct_join_opts jo = {.token = t};
		expect_refusal(&jo, "token-revoked", tok_id);
		free(t);
	}
	/* expired at database time */
	{
		struct bct_token_opts to = {.pool = pool_id, .ttl_ms = -1000};
		char *t = bct_token(&cp, &to, tok_id);
		struct bct_join_opts jo = {.token = t};
		expect_refusal(&jo, "token-expired", tok_id);
		free(t);
	}
	/* no use left */
	{
		struct bct_token_opts to = {.pool = pool_id};
		char *t = bct_token(&cp, &to, tok_id);
		struct bct_join_opts jo = {.token = t};
		assert_int_equal(bct_join(&cp, &jo, &ans), 0);
		bc_join_answer_free(&ans);
		expect_refusal(&jo, "token-used-up", tok_id);
		free(t);
	}
	/* wrong role: a node token asked for a site, a site token for a node */
	{
		struct bct_token_opts to = {.pool = pool_id};
		char *t = bct_token(&cp, &to, tok_id);
		struct bct_join_opts jo = {.token = t, .role = "site"};
		expect_refusal(&jo, "token-role", tok_id);
		free(t);
		assert_int_equal(bct_site(&cp, "root", "dc1", site_id), 0);
		struct bct_token_opts so = {.site = site_id, .role = "site"};
		t = bct_token(&cp, &so, tok_id);
		struct bct_join_opts js = {.token = t, .role = "node"};
		expect_refusal(&js, "token-role", tok_id);
		free(t);
	}
	/* expect binding */
	{
		struct bct_token_opts to = {
		    .pool = pool_id,
		    .expect = "{\"productUuid\":\"6b1d0c3e-0000-4000-8000-00000000aaaa\"}"};
		char *t = bct_token(&cp, &to, tok_id);
		struct bct_join_opts jo = {.token = t,
		                           .product_uuid = "6b1d0c3e-0000-4000-8000-00000000bbbb"};
		expect_refusal(&jo, "join:expect-mismatch", tok_id);
		free(t);
		struct bct_token_opts tm = {.pool = pool_id,
		                            .expect = "{\"mac\":\"52:54:00:aa:bb:cc\"}"};
		t = bct_token(&cp, &tm, tok_id);
		struct bct_join_opts jm = {.token = t, .mac = "52:54:00:aa:bb:cd"};
		expect_refusal(&jm, "join:expect-mismatch", tok_id);
		free(t);
		struct bct_token_opts ts = {.pool = pool_id, .expect = "{\"serial\":\"S1\"}"};
		t = bct_token(&cp, &ts, tok_id);
		struct bct_join_opts jser = {.token = t, .serial = "S2"};
		expect_refusal(&jser, "join:expect-mismatch", tok_id);
		free(t);
	}
	/* reclaim: a machine whose hardware key another node holds, without allowReclaim */
	{
		const char *uuid = "6b1d0c3e-1111-4000-8000-000000000001";
		struct bct_token_opts to = {.pool = pool_id};
		char *t = bct_token(&cp, &to, tok_id);
		struct bct_join_opts jo = {.token = t, .product_uuid = uuid};
		assert_int_equal(bct_join(&cp, &jo, &ans), 0);
		free(t);
		t = bct_token(&cp, &to, tok_id);
		jo.token = t;
		expect_refusal(&jo, "join:reclaim", tok_id);
		/* the refusal and its event name the holding node, for the operator to find
		 * and delete it (docs/attestation.md) */
		struct bct_refusal r = bct_last_refusal(&cp);
		assert_string_equal(r.node_id, ans.node_id);
		assert_int_equal(bct_count(&cp,
		                           "SELECT COUNT(*) FROM events WHERE type = "
		                           "'security.join.refused' AND subject = $1 AND "
		                           "data LIKE '%join:reclaim%'",
		                           (bc_param[]){BC_TEXT(ans.node_id)}, 1),
		                 1);
		bc_join_answer_free(&ans);
		free(t);
	}
	/* pool-attestor: a pool that takes only tpm refuses tokens */
	{
		assert_int_equal(bct_tenant(&cp, "tnt_pool_owner"), 0);
		assert_int_equal(bct_pool(&cp, "tnt_pool_owner", "tpm-only",
		                          "{\"joinAttestors\":[\"tpm\"]}", other_pool),
		                 0);
		struct bct_token_opts to = {.tenant = "tnt_pool_owner", .pool = other_pool};
		char *t = bct_token(&cp, &to, tok_id);
		struct bct_join_opts jo = {.token = t};
		expect_refusal(&jo, "join:pool-attestor", tok_id);
		struct bct_refusal r = bct_last_refusal(&cp);
		assert_string_equal(r.tenant_id, "tnt_pool_owner");
		assert_string_equal(r.token_id, tok_id);
		/* published to the pool's owner */
		bc_param p[] = {BC_TEXT(tok_id)};
		char *data = bct_text(&cp,
		                      "SELECT data FROM events WHERE type = "
		                      "'security.join.refused' AND tenant_id = 'tnt_pool_owner' "
		                      "AND data LIKE '%' || $1 || '%'",
		                      p, 1);
		assert_non_null(data);
		assert_non_null(strstr(data, "\"reason\":\"join:pool-attestor\""));
		assert_non_null(strstr(data, "\"attestor\":\"join-token\""));
		free(data);
		free(t);
	}
	/* an attestor this server does not run, and a CSR that is not one */
	{
		struct bct_join_opts jo = {.attestor = "no-such-attestor"};
		expect_refusal(&jo, "attestor-unknown", NULL);
		const uint8_t junk[] = {0x30, 0x03, 0x02, 0x01, 0x00};
		struct bct_join_opts jc = {.csr = junk, .csr_len = sizeof(junk)};
		expect_refusal(&jc, "csr-invalid", NULL);
	}
}

/* The request's attestor name and claims are the requester's bytes: an attestor name
 * no attestor can have is refused without being echoed into the event (where 60 KB
 * or invalid UTF-8 would bloat the events table or make the event unwritable), and a
 * claim that is not UTF-8 is a refusal on both engines, not a failed insert. */
static void test_requester_bytes_stay_bounded(void **state)
{
	char tok_id[64], *longname, *data;
	(void)state;

	longname = malloc(60001);
	memset(longname, 'x', 60000);
	longname[60000] = 0;
	const char *names[] = {longname, "join-token\xff", "JOIN-TOKEN"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int64_t before = bct_count(&cp,
		                           "SELECT COUNT(*) FROM events WHERE type = "
		                           "'security.join.refused'",
		                           NULL, 0);
		struct bct_join_opts jo = {.attestor = names[i]};
		/* a minute apart: attestor-unknown is summarized, one event a minute */
		bc_clock_set_offset_ms((int64_t)(i + 1) * 61000);
		expect_refusal(&jo, "attestor-unknown", NULL);
		assert_string_equal(bct_last_refusal(&cp).attestor, "(invalid)");
		assert_int_equal(bct_count(&cp,
		                           "SELECT COUNT(*) FROM events WHERE type = "
		                           "'security.join.refused'",
		                           NULL, 0),
		                 before + 1);
		data = bct_text(&cp,
		                "SELECT data FROM events WHERE type = 'security.join.refused' "
		                "ORDER BY created_at DESC, id DESC LIMIT 1",
		                NULL, 0);
		assert_non_null(data);
		assert_non_null(strstr(data, "(invalid)"));
		assert_true(strlen(data) < 256);
		free(data);
	}
	free(longname);
	bc_clock_set_offset_ms(0);

	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(&cp, &to, tok_id);
	struct bct_join_opts bad = {.token = t, .serial = "SN\xc3\x28"};
	expect_refusal(&bad, "claims-invalid", tok_id);
	struct bct_join_opts good = {.token = t, .serial = "SN-\xc3\xa9"};
	struct bc_join_answer ans;
	assert_int_equal(bct_join(&cp, &good, &ans), 0);
	bc_join_answer_free(&ans);
	free(t);
}

static void test_reclaim_with_allow_reclaim(void **state)
{
	const char *uuid = "6b1d0c3e-2222-4000-8000-000000000002";
	struct bct_token_opts to = {.pool = pool_id};
	struct bct_token_opts tr = {.pool = pool_id, .allow_reclaim = 1};
	struct bc_join_answer a1, a2;
	char tok_id[64];
	(void)state;

	char *t1 = bct_token(&cp, &to, NULL), *t2 = bct_token(&cp, &tr, tok_id);
	struct bct_join_opts j1 = {.token = t1, .product_uuid = uuid};
	struct bct_join_opts j2 = {.token = t2,
	                           .product_uuid = "6B1D0C3E-2222-4000-8000-000000000002"};
	assert_int_equal(bct_join(&cp, &j1, &a1), 0);
	assert_int_equal(bct_join(&cp, &j2, &a2), 0);
	assert_string_equal(a1.node_id, a2.node_id);
	bc_param p[] = {BC_TEXT(a1.node_id)};
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", p, 1), 2);
	/* the older certificate is revoked, the new one is of generation 2 */
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "revoked_at IS NOT NULL AND generation = 1",
	                           p, 1),
	                 1);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                           "revoked_at IS NULL AND generation = 2",
	                           p, 1),
	                 1);
	/* and the node row names the new one as its current certificate */
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes n JOIN node_certs c ON "
	                           "c.serial = n.cert_serial AND c.not_after = n.cert_not_after "
	                           "WHERE n.id = $1 AND c.generation = 2",
	                           p, 1),
	                 1);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE type = 'node.reclaimed' "
	                           "AND subject = $1",
	                           p, 1),
	                 1);
	assert_int_equal(uses_left(tok_id), 0);
	bc_join_answer_free(&a1);
	bc_join_answer_free(&a2);
	free(t1);
	free(t2);
}

/* A machine of tenant beta claiming acme's product UUID: acme's machine still joins
 * (and reclaims itself), and acme's events say nothing of beta. */
static void test_claimed_uuid_in_another_tenant_does_not_lock_out(void **state)
{
	const char *uuid = "6b1d0c3e-5555-4000-8000-000000000005";
	char beta_pool[64];
	struct bc_join_answer fake, real, again;
	(void)state;

	assert_int_equal(bct_tenant(&cp, "tnt_beta_claims"), 0);
	assert_int_equal(bct_pool(&cp, "tnt_beta_claims", "beta", "{}", beta_pool), 0);
	struct bct_token_opts tb = {.tenant = "tnt_beta_claims", .pool = beta_pool};
	char *t1 = bct_token(&cp, &tb, NULL);
	struct bct_join_opts j1 = {.token = t1, .product_uuid = uuid};
	assert_int_equal(bct_join(&cp, &j1, &fake), 0);

	int64_t refusals = bct_count(&cp,
	                             "SELECT COUNT(*) FROM events WHERE tenant_id = 'root' AND "
	                             "type = 'security.join.refused'",
	                             NULL, 0);
	struct bct_token_opts ta = {.pool = pool_id};
	char *t2 = bct_token(&cp, &ta, NULL);
	struct bct_join_opts j2 = {.token = t2, .product_uuid = uuid};
	assert_int_equal(bct_join(&cp, &j2, &real), 0);
	assert_string_not_equal(real.node_id, fake.node_id);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM events WHERE tenant_id = 'root' AND "
	                           "type = 'security.join.refused'",
	                           NULL, 0),
	                 refusals);
	/* within acme the UUID still names acme's machine */
	struct bct_token_opts tr = {.pool = pool_id, .allow_reclaim = 1};
	char *t3 = bct_token(&cp, &tr, NULL);
	struct bct_join_opts j3 = {.token = t3, .product_uuid = uuid};
	assert_int_equal(bct_join(&cp, &j3, &again), 0);
	assert_string_equal(again.node_id, real.node_id);
	bc_join_answer_free(&fake);
	bc_join_answer_free(&real);
	bc_join_answer_free(&again);
	free(t1);
	free(t2);
	free(t3);
}

/* An allowReclaim token of one pool takes back no machine of another pool. */
static void test_reclaim_token_reclaims_only_in_its_pool(void **state)
{
	const char *uuid = "6b1d0c3e-6666-4000-8000-000000000006";
	char other_pool[64], tok_id[64];
	struct bc_join_answer a1, a2;
	(void)state;

	assert_int_equal(bct_pool(&cp, "root", "reclaim-elsewhere", "{}", other_pool), 0);
	struct bct_token_opts to = {.pool = pool_id};
	char *t1 = bct_token(&cp, &to, NULL);
	struct bct_join_opts j1 = {.token = t1, .product_uuid = uuid};
	assert_int_equal(bct_join(&cp, &j1, &a1), 0);
	struct bct_token_opts tr = {.pool = other_pool, .allow_reclaim = 1};
	char *t2 = bct_token(&cp, &tr, tok_id);
	struct bct_join_opts j2 = {.token = t2, .product_uuid = uuid};
	expect_refusal(&j2, "join:reclaim", tok_id);
	bc_param p[] = {BC_TEXT(a1.node_id)};
	assert_int_equal(bct_count(&cp, "SELECT generation FROM nodes WHERE id = $1", p, 1), 1);
	/* its own pool's token does */
	struct bct_token_opts ts = {.pool = pool_id, .allow_reclaim = 1};
	char *t3 = bct_token(&cp, &ts, NULL);
	j2.token = t3;
	assert_int_equal(bct_join(&cp, &j2, &a2), 0);
	assert_string_equal(a2.node_id, a1.node_id);
	bc_join_answer_free(&a1);
	bc_join_answer_free(&a2);
	free(t1);
	free(t2);
	free(t3);
}

/* allowReclaim takes back the same machine in the same role only */
static void test_reclaim_keeps_the_role(void **state)
{
	const char *uuid = "6b1d0c3e-4444-4000-8000-000000000004";
	struct bct_token_opts to = {.pool = pool_id};
	struct bc_join_answer a1;
	char site_id[64], tok_id[64];
	(void)state;

	char *t1 = bct_token(&cp, &to, NULL);
	struct bct_join_opts j1 = {.token = t1, .product_uuid = uuid};
	assert_int_equal(bct_join(&cp, &j1, &a1), 0);
	assert_int_equal(bct_site(&cp, "root", "dc-reclaim", site_id), 0);
	struct bct_token_opts ts = {.site = site_id, .role = "site", .allow_reclaim = 1};
	char *t2 = bct_token(&cp, &ts, tok_id);
	struct bct_join_opts j2 = {.token = t2, .role = "site", .product_uuid = uuid};
	expect_refusal(&j2, "join:reclaim", tok_id);
	bc_join_answer_free(&a1);
	free(t1);
	free(t2);
}

/* The node's MACs are kept canonical in node_macs (the --mac filter's index) at its
 * join; migration 8 fills node_macs for the nodes stored before it from nodes.macs,
 * leaving out what is no MAC. */
static void test_macs_kept_and_filled_by_migration_12(void **state)
{
	struct bct_token_opts to = {.pool = pool_id};
	struct bc_join_answer a;
	const struct bc_migration *m = NULL;
	const char *ins, *end;
	char *sql;
	(void)state;

	char *t = bct_token(&cp, &to, NULL);
	struct bct_join_opts j = {.token = t, .mac = "52-54-00-AA-BB-01"};
	assert_int_equal(bct_join(&cp, &j, &a), 0);
	bc_param p[] = {BC_TEXT(a.node_id)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_macs WHERE node_id = $1 AND "
	                           "tenant_id = 'root' AND mac = '52:54:00:aa:bb:01'",
	                           p, 1),
	                 1);
	/* as a node stored before migration 12: MACs in nodes.macs only */
	assert_int_equal(bct_exec(&cp,
	                          "UPDATE nodes SET macs = '[\"52:54:00:AA:BB:02\",\"52-54-00-"
	                          "aa-bb-03\",\"a-mac-that-is-long\",\"zz\"]' WHERE id = $1",
	                          p, 1),
	                 0);
	/* the table is new then: empty */
	assert_int_equal(bct_exec(&cp, "DELETE FROM node_macs", NULL, 0), 0);
	for (size_t i = 0; i < bc_migrations_count; i++)
		if (strcmp(bc_migrations[i].name, "012_node_find_fleet") == 0)
			m = &bc_migrations[i];
	assert_non_null(m);
	assert_non_null(ins = strstr(m->sql, "INSERT INTO node_macs"));
	assert_non_null(end = strstr(ins, ";\n"));
	assert_non_null(sql = strndup(ins, (size_t)(end - ins)));
	assert_int_equal(bct_exec(&cp, sql, NULL, 0), 0);
	free(sql);
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM node_macs WHERE node_id = $1", p, 1),
	                 2);
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM node_macs WHERE node_id = $1 AND mac IN "
	                           "('52:54:00:aa:bb:02', '52:54:00:aa:bb:03')",
	                           p, 1),
	                 2);
	bc_join_answer_free(&a);
	free(t);
}

static void test_placeholder_uuid_is_no_hardware_key(void **state)
{
	struct bct_token_opts to = {.pool = pool_id};
	struct bc_join_answer a1, a2;
	(void)state;

	char *t1 = bct_token(&cp, &to, NULL), *t2 = bct_token(&cp, &to, NULL);
	struct bct_join_opts j = {.token = t1,
	                          .product_uuid = "03000200-0400-0500-0006-000700080009"};
	assert_int_equal(bct_join(&cp, &j, &a1), 0);
	j.token = t2;
	assert_int_equal(bct_join(&cp, &j, &a2), 0);
	assert_string_not_equal(a1.node_id, a2.node_id);
	bc_join_answer_free(&a1);
	bc_join_answer_free(&a2);
	free(t1);
	free(t2);
}

static void test_site_token_admits_site(void **state)
{
	char site_id[64];
	struct bc_join_answer ans;
	struct bc_node_identity id;
	(void)state;

	assert_int_equal(bct_site(&cp, "root", "dc2", site_id), 0);
	struct bct_token_opts to = {.site = site_id, .role = "site"};
	char *t = bct_token(&cp, &to, NULL);
	struct bct_join_opts jo = {.token = t, .role = "site"};
	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &id, NULL), 0);
	assert_string_equal(id.role, "site");
	bc_node_identity_clear(&id);
	bc_join_answer_free(&ans);
	free(t);
}

static void test_pool_listing_join_token_admits(void **state)
{
	char p2[64];
	struct bc_join_answer ans;
	(void)state;

	assert_int_equal(
	    bct_pool(&cp, "root", "tokens-ok", "{\"joinAttestors\":[\"tpm\",\"join-token\"]}", p2),
	    0);
	struct bct_token_opts to = {.pool = p2};
	char *t = bct_token(&cp, &to, NULL);
	struct bct_join_opts jo = {.token = t};
	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	bc_join_answer_free(&ans);
	free(t);
}

static void test_undecodable_body_is_invalid_argument(void **state)
{
	struct bc_client_reply r = {0};
	char err[256];
	const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	(void)state;

	assert_int_equal(
	    bc_client_post(&cp.pins, BC_WIRE_PATH_JOIN, junk, sizeof(junk), &r, err, sizeof(err)),
	    0);
	assert_int_equal(r.status, 400);
	assert_non_null(memmem(r.body, r.len, "invalid_argument", 16));
	free(r.body);
}

static void test_32_clients_race_for_one_use(void **state)
{
	char tok_id[64];
	int admitted = 0, denied = 0;
	(void)state;

	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(&cp, &to, tok_id);
	struct bct_join_opts jo = {.token = t};
	int64_t before = nodes_count();
	assert_int_equal(bct_race(&cp, 32, &jo, &admitted, &denied), 0);
	assert_int_equal(admitted, 1);
	assert_int_equal(denied, 31);
	assert_int_equal(nodes_count(), before + 1);
	assert_int_equal(uses_left(tok_id), 0);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_token_join_admits),
	    cmocka_unit_test(test_every_refusal_by_name_same_bytes),
	    cmocka_unit_test(test_reclaim_with_allow_reclaim),
	    cmocka_unit_test(test_claimed_uuid_in_another_tenant_does_not_lock_out),
	    cmocka_unit_test(test_reclaim_token_reclaims_only_in_its_pool),
	    cmocka_unit_test(test_reclaim_keeps_the_role),
	    cmocka_unit_test(test_macs_kept_and_filled_by_migration_12),
	    cmocka_unit_test(test_placeholder_uuid_is_no_hardware_key),
	    cmocka_unit_test(test_site_token_admits_site),
	    cmocka_unit_test(test_pool_listing_join_token_admits),
	    cmocka_unit_test(test_undecodable_body_is_invalid_argument),
	    cmocka_unit_test(test_32_clients_race_for_one_use),
	    cmocka_unit_test(test_requester_bytes_stay_bounded),
	};
	if (bct_engine_skip())
		return BCT_SKIP;
	bct_pooled(&cp, NULL, pool_id);
	return cmocka_run_group_tests(tests, bct_pooled_setup, bct_pooled_teardown);
}
