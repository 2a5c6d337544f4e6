/* bc_store_prune() on the store of a control plane, on each engine (BC_TEST_ENGINE):
 * what is past at database time goes, what is not stays, batches of any size remove
 * everything, a retention of 0 keeps every event or audit row, and certificates go
 * only past the grace and when no node's current one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "bc/clock.h"
#include "bc/store.h"
#include "bctest.h"

#define HOUR_MS (3600LL * 1000)
#define DAY_MS  (24 * HOUR_MS)

static struct bct_cp cp;
static char pool_id[64];

static void use(const char *subject, int64_t expires_at, int null_expiry)
{
	bc_param p[] = {BC_TEXT(subject), null_expiry ? BC_NULL : BC_INT(expires_at),
	                BC_INT(bc_now_ms())};
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO attestation_uses (attestor, subject, expires_at, "
	                          "created_at) VALUES ('x509pop', $1, $2, $3)",
	                          p, 3),
	                 0);
}

static void request(const char *id, const char *state, int64_t expires_at)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(state), BC_INT(bc_now_ms()), BC_INT(expires_at)};
	assert_int_equal(
	    bct_exec(&cp,
	             "INSERT INTO join_requests (id, tenant_id, attestor, request_key, "
	             "csr_sha256, state, created_at, expires_at) VALUES ($1, 'root', "
	             "'discovery', $1, '00', $2, $3, $4)",
	             p, 4),
	    0);
}

static void event(const char *id, int64_t created_at)
{
	bc_param p[] = {BC_TEXT(id), BC_INT(created_at)};
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO events (id, tenant_id, type, created_at) VALUES "
	                          "($1, 'root', 'test.prune', $2)",
	                          p, 2),
	                 0);
}

static char *token(int64_t ttl_ms, char id[64])
{
	struct bct_token_opts o = {.pool = pool_id, .ttl_ms = ttl_ms};
	return bct_token(&cp, &o, id);
}

static int64_t count(const char *sql)
{
	return bct_count(&cp, sql, NULL, 0);
}

static void test_prunes_what_is_past(void **state)
{
	int64_t now = bc_now_ms();
	char active[64], expired[64], spent[64], revoked[64];
	struct bc_prune_opts o = {.batch = 5000, .event_retention_ms = 90 * DAY_MS};
	struct bc_prune_counts n;
	int64_t events_before;

	(void)state;
	use("expired", now - HOUR_MS, 0);
	use("later", now + HOUR_MS, 0);
	use("forever", 0, 1);
	free(token(HOUR_MS, active));
	free(token(-HOUR_MS, expired));
	free(token(HOUR_MS, spent));
	free(token(HOUR_MS, revoked));
	assert_int_equal(bct_exec(&cp, "UPDATE join_tokens SET uses_left = 0 WHERE id = $1",
	                          (bc_param[]){BC_TEXT(spent)}, 1),
	                 0);
	assert_int_equal(bct_exec(&cp, "UPDATE join_tokens SET revoked_at = $2 WHERE id = $1",
	                          (bc_param[]){BC_TEXT(revoked), BC_INT(now)}, 2),
	                 0);
	request("jr_pending", "pending", now + HOUR_MS);
	request("jr_approved", "approved", now + HOUR_MS);
	request("jr_denied", "denied", now + HOUR_MS);
	request("jr_used", "used", now + HOUR_MS);
	request("jr_stale", "pending", now - HOUR_MS);
	events_before = count("SELECT COUNT(*) FROM events");
	event("evt_old1", now - 100 * DAY_MS);
	event("evt_old2", now - 91 * DAY_MS);
	event("evt_recent", now - 89 * DAY_MS);

	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), 0);
	assert_true(n.attestation_uses == 1);
	assert_true(n.join_tokens == 3);
	assert_true(n.join_requests == 3);
	assert_true(n.events == 2);
	assert_true(count("SELECT COUNT(*) FROM attestation_uses WHERE subject = 'expired'") == 0);
	assert_true(count("SELECT COUNT(*) FROM attestation_uses") == 2);
	assert_true(bct_count(&cp, "SELECT COUNT(*) FROM join_tokens WHERE id = $1",
	                      (bc_param[]){BC_TEXT(active)}, 1) == 1);
	assert_true(count("SELECT COUNT(*) FROM join_tokens") == 1);
	assert_true(count("SELECT COUNT(*) FROM join_requests WHERE id IN ('jr_pending', "
	                  "'jr_approved')") == 2);
	assert_true(count("SELECT COUNT(*) FROM join_requests") == 2);
	assert_true(count("SELECT COUNT(*) FROM events") == events_before + 1);
	assert_true(count("SELECT COUNT(*) FROM events WHERE id = 'evt_recent'") == 1);

	/* nothing left to do: a second run removes nothing */
	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), 0);
	assert_true(n.attestation_uses + n.join_tokens + n.join_requests + n.events == 0);
}

/* Batches smaller than the backlog, and one that divides it exactly, remove it all. */
static void test_batches(void **state)
{
	int64_t now = bc_now_ms();
	struct bc_prune_opts o = {.batch = 5, .event_retention_ms = DAY_MS};
	struct bc_prune_counts n;
	char s[32];

	(void)state;
	for (int i = 0; i < 12; i++) {
		snprintf(s, sizeof(s), "old%02d", i);
		use(s, now - HOUR_MS - i, 0);
		snprintf(s, sizeof(s), "evt_b%02d", i);
		event(s, now - 2 * DAY_MS);
	}
	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), 0);
	assert_true(n.attestation_uses == 12);
	assert_true(n.events >= 12);
	assert_true(count("SELECT COUNT(*) FROM attestation_uses") == 0);
	assert_true(count("SELECT COUNT(*) FROM events WHERE type = 'test.prune'") == 0);

	for (int i = 0; i < 10; i++) {
		snprintf(s, sizeof(s), "again%02d", i);
		use(s, now - HOUR_MS, 0);
	}
	o.batch = 5;
	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), 0);
	assert_true(n.attestation_uses == 10);
}

static void test_zero_retention_keeps_events(void **state)
{
	struct bc_prune_opts o = {.batch = 0, .event_retention_ms = 0};
	struct bc_prune_counts n;

	(void)state;
	event("evt_ancient", 1);
	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), 0);
	assert_true(n.events == 0);
	assert_true(count("SELECT COUNT(*) FROM events WHERE id = 'evt_ancient'") == 1);
	o.batch = -1;
	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), BC_ERR_INVALID);
	o.batch = 0;
	o.audit_retention_ms = -1;
	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), BC_ERR_INVALID);
}

/* Audit rows go after their retention, 0 keeps them; a certificate goes once it
 * expired past the longest x509pop grace, unless it is its node's current one. */
static void test_audit_and_certificates(void **state)
{
	int64_t now = bc_now_ms();
	struct bc_prune_opts o = {.audit_retention_ms = 30 * DAY_MS};
	struct bc_prune_counts n;
	bc_param old[] = {BC_INT(now - 31 * DAY_MS)}, recent[] = {BC_INT(now - 29 * DAY_MS)},
	         gone[] = {BC_INT(now - BC_CERT_GRACE_MAX_MS - HOUR_MS)},
	         kept[] = {BC_INT(now - BC_CERT_GRACE_MAX_MS + HOUR_MS)};

	(void)state;
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO audit (id, tenant_id, actor, action, created_at) "
	                          "VALUES ('aud_old', 'root', 'a', 'x', $1)",
	                          old, 1),
	                 0);
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO audit (id, tenant_id, actor, action, created_at) "
	                          "VALUES ('aud_recent', 'root', 'a', 'x', $1)",
	                          recent, 1),
	                 0);
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO nodes (id, tenant_id, role, state, attestor, "
	                          "joined_at, updated_at, cert_serial) VALUES ('node_p', 'root', "
	                          "'node', 'adopted', 'x', 1, 1, 'cur')",
	                          NULL, 0),
	                 0);
	static const char *const certs[] = {"gone", "cur", "kept"};
	for (size_t i = 0; i < 3; i++) {
		bc_param p[] = {BC_TEXT(certs[i]), i == 2 ? kept[0] : gone[0]};
		assert_int_equal(
		    bct_exec(&cp,
		             "INSERT INTO node_certs (serial, node_id, generation, "
		             "der, der_sha256, not_before, not_after, created_at) "
		             "VALUES ($1, 'node_p', 1, decode('00', 'hex'), $1, 1, $2, "
		             "1)",
		             p, 2),
		    0);
	}
	o.audit_retention_ms = 0;
	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), 0);
	assert_true(n.audit == 0 && n.node_certs == 1);
	assert_true(count("SELECT COUNT(*) FROM audit WHERE id = 'aud_old'") == 1);
	assert_true(count("SELECT COUNT(*) FROM node_certs WHERE node_id = 'node_p'") == 2);
	assert_true(count("SELECT COUNT(*) FROM node_certs WHERE serial = 'gone'") == 0);
	o.audit_retention_ms = 30 * DAY_MS;
	assert_int_equal(bc_store_prune(bct_store(&cp), &o, &n), 0);
	assert_true(n.audit == 1 && n.node_certs == 0);
	assert_true(count("SELECT COUNT(*) FROM audit WHERE id LIKE 'aud_%'") == 1);
	assert_true(count("SELECT COUNT(*) FROM audit WHERE id = 'aud_recent'") == 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_prunes_what_is_past, bct_pooled_setup,
	                                    bct_pooled_teardown),
	    cmocka_unit_test_setup_teardown(test_batches, bct_pooled_setup, bct_pooled_teardown),
	    cmocka_unit_test_setup_teardown(test_zero_retention_keeps_events, bct_pooled_setup,
	                                    bct_pooled_teardown),
	    cmocka_unit_test_setup_teardown(test_audit_and_certificates, bct_pooled_setup,
	                                    bct_pooled_teardown),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	bct_pooled(&cp, NULL, pool_id);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
