/* Retention over time (docs/server.md, "Retention"), on each engine: 120 simulated
 * days of renewals of N nodes, written directly (one certificate, one node.renewed
 * event and one audit row per renewal, every 16 hours), then the test clock moved to
 * the end and the server's own prune run once. The store keeps only what retention
 * implies: no certificate expired past the grace unless it is a node's current one,
 * no event or audit row past its retention, and at most the formula's count of each.
 *
 * N is 20 so that the test takes seconds; BC_SCALE_NODES=10000 runs the size
 * (minutes, not in make check). */
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

#define HOUR_MS    (3600LL * 1000)
#define DAY_MS     (24 * HOUR_MS)
#define RENEW_MS   (16 * HOUR_MS) /* a renewal every 16 hours */
#define LIFE_MS    (24 * HOUR_MS) /* each certificate valid a day */
#define DAYS       120
#define EVENT_DAYS 90
#define AUDIT_DAYS 30

static struct bct_cp cp;
static int64_t nodes = 20;

static int setup(void **state)
{
	const char *n = getenv("BC_SCALE_NODES");

	(void)state;
	if (n != NULL && atoll(n) > 0)
		nodes = atoll(n);
	return bct_cp_start(&cp, "event_retention_days = 90\naudit_retention_days = 30\n");
}

static int teardown(void **state)
{
	(void)state;
	bc_clock_set_offset_ms(0);
	bct_cp_stop(&cp);
	return 0;
}

/* INSERT ... SELECT over i in 0 .. n - 1 (the common dialect); $1 is t0, $2 renewals a
 * node. */
static void fill(int64_t n, const char *insert_select, int64_t t0, int64_t per_node)
{
	char sql[1536];
	bc_param p[] = {BC_INT(t0), BC_INT(per_node)};

	snprintf(sql, sizeof(sql),
	         "WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < %lld) "
	         "%s",
	         (long long)(n - 1), insert_select);
	assert_int_equal(bct_exec(&cp, sql, p, 2), 0);
}

static int64_t count(const char *sql, int64_t v)
{
	return bct_count(&cp, sql, (bc_param[]){BC_INT(v)}, 1);
}

static void test_120_days_of_renewals(void **state)
{
	const int64_t per_node = DAYS * DAY_MS / RENEW_MS + 1; /* renewal j at t0 + j * 16h */
	int64_t t0 = bc_now_ms(), before, certs, events, audit;
	int64_t certs_max, events_max, audit_max;

	(void)state;
	/* node k's current certificate is its last renewal's; node k's renewal j is row
	 * i = k * per_node + j */
	fill(nodes,
	     "INSERT INTO nodes (id, tenant_id, role, state, attestor, joined_at, updated_at, "
	     "cert_serial, cert_not_after) SELECT 'node_' || i, 'root', 'node', 'adopted', "
	     "'join-token', $1, $1, 'c' || (i * $2 + $2 - 1), $1 + ($2 - 1) * 57600000 + "
	     "86400000 FROM s",
	     t0, per_node);
	fill(nodes * per_node,
	     "INSERT INTO node_certs (serial, node_id, generation, der, der_sha256, "
	     "not_before, not_after, created_at) SELECT 'c' || i, 'node_' || (i / $2), 1, "
	     "decode('00', 'hex'), 'c' || i, $1 + (i % $2) * 57600000, $1 + (i % $2) * 57600000 + "
	     "86400000, $1 + (i "
	     "% $2) * 57600000 FROM s",
	     t0, per_node);
	fill(nodes * per_node,
	     "INSERT INTO events (id, tenant_id, type, subject, created_at) SELECT 'evt_' || i, "
	     "'root', 'node.renewed', 'node_' || (i / $2), $1 + (i % $2) * 57600000 FROM s",
	     t0, per_node);
	fill(nodes * per_node,
	     "INSERT INTO audit (id, tenant_id, actor, action, subject, created_at) SELECT "
	     "'aud_' || i, 'root', 'node', 'node.renewed', 'node_' || (i / $2), $1 + (i % $2) * "
	     "57600000 FROM s",
	     t0, per_node);
	/* a node whose only certificate expired long ago keeps it: it is its current one */
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO nodes (id, tenant_id, role, state, attestor, "
	                          "joined_at, updated_at, cert_serial, cert_not_after) VALUES "
	                          "('node_old', 'root', 'node', 'cordoned', 'join-token', 1, 1, "
	                          "'old', 2)",
	                          NULL, 0),
	                 0);
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO node_certs (serial, node_id, generation, der, "
	                          "der_sha256, not_before, not_after, created_at) VALUES ('old', "
	                          "'node_old', 1, decode('00', 'hex'), 'old', 1, 2, 1)",
	                          NULL, 0),
	                 0);

	/* 120 days and an hour later (the hour keeps every row clear of a cut-off) */
	bc_clock_set_offset_ms(DAYS * DAY_MS + HOUR_MS);
	before = bc_now_ms();
	bc_server_prune_now(cp.srv);

	/* nothing past its retention is left, everything within it stays: per node, the
	 * renewals j whose certificate ended within the grace, whose event and audit row
	 * are within their retention */
	certs_max = events_max = audit_max = 0;
	for (int64_t j = 0; j < per_node; j++) {
		int64_t at = t0 + j * RENEW_MS;
		certs_max += at + LIFE_MS >= before - BC_CERT_GRACE_MAX_MS;
		events_max += at >= before - EVENT_DAYS * DAY_MS;
		audit_max += at >= before - AUDIT_DAYS * DAY_MS;
	}
	certs = count("SELECT COUNT(*) FROM node_certs WHERE serial <> 'old' AND $1 = $1", 0);
	events = count("SELECT COUNT(*) FROM events WHERE type = 'node.renewed' AND $1 = $1", 0);
	audit = count("SELECT COUNT(*) FROM audit WHERE action = 'node.renewed' AND $1 = $1", 0);
	print_message("%lld nodes, %lld renewals each over %d days: %lld certificates, %lld "
	              "events, %lld audit rows after prune (%lld, %lld, %lld a node)\n",
	              (long long)nodes, (long long)per_node, DAYS, (long long)certs,
	              (long long)events, (long long)audit, (long long)certs_max,
	              (long long)events_max, (long long)audit_max);
	assert_int_equal(certs, nodes * certs_max);
	assert_int_equal(events, nodes * events_max);
	assert_int_equal(audit, nodes * audit_max);
	/* the formula of docs/server.md bounds them: (grace + lifetime) / interval + 1
	 * certificates, retention / interval + 1 events and audit rows a node */
	assert_true(certs_max <= (BC_CERT_GRACE_MAX_MS + LIFE_MS) / RENEW_MS + 1);
	assert_true(events_max <= EVENT_DAYS * DAY_MS / RENEW_MS + 1);
	assert_true(audit_max <= AUDIT_DAYS * DAY_MS / RENEW_MS + 1);
	/* every node keeps its current certificate, the long-expired one too */
	assert_int_equal(count("SELECT COUNT(*) FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM "
	                       "node_certs c WHERE c.serial = n.cert_serial) AND $1 = $1",
	                       0),
	                 0);
	assert_int_equal(count("SELECT COUNT(*) FROM node_certs WHERE serial = 'old' AND "
	                       "not_after < $1",
	                       before),
	                 1);

	/* a second run deletes nothing */
	before = count("SELECT COUNT(*) FROM node_certs WHERE $1 = $1", 0);
	bc_server_prune_now(cp.srv);
	assert_int_equal(count("SELECT COUNT(*) FROM node_certs WHERE $1 = $1", 0), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_120_days_of_renewals),
	};

	if (bct_engine_skip())
		return 0;
	return cmocka_run_group_tests(tests, setup, teardown);
}
