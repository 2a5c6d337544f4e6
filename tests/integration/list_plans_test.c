/* Every list of the admin API reads an index, never sorts its table (issue: a year at
 * 100,000 nodes), on each engine (BC_TEST_ENGINE): the plan of each list query, with
 * and without each filter, on a store filled directly with enough rows (and, on
 * PostgreSQL, ANALYZEd) that a planner without the index would scan and sort. No
 * timing is asserted. The test then drops an index and shows that its check fails,
 * so the check itself can fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/cursor.h"
#include "bc/store.h"
#include "bctest.h"
#include "rows/history.h"
#include "rows/join_requests.h"
#include "rows/nodes.h"
#include "rows/tokens.h"
#include "rows/workflows.h"

/* rows a list's table gets: one in fifty in the tenant the lists read, the others in
 * another, so that reading the tenant's rows by any index but one that starts with
 * the tenant would read fifty times the page */
#define FILL 20000

static struct bct_cp cp;
static int pg;

/* INSERT ... SELECT over 1..FILL in the common dialect; i is the number. */
static void fill(const char *insert_select)
{
	char sql[1024];

	snprintf(sql, sizeof(sql),
	         "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) %s",
	         FILL, insert_select);
	assert_int_equal(bct_exec(&cp, sql, NULL, 0), 0);
}

static int setup(void **state)
{
	(void)state;
	if (bct_cp_start(&cp, NULL) != 0)
		return -1;
	pg = bc_store_engine(bct_store(&cp)) == BC_STORE_POSTGRES;
	if (bct_tenant(&cp, "other") != 0)
		return -1;
	fill("INSERT INTO nodes (id, tenant_id, role, state, attestor, hostname, product_uuid, "
	     "serial, joined_at, updated_at, cert_not_after) SELECT 'node_' || (100000 + i), "
	     "CASE WHEN i % 50 = 0 THEN 'root' ELSE 'other' END, 'node', CASE WHEN i % 7 = 0 "
	     "THEN 'cordoned' ELSE 'adopted' END, 'join-token', 'h' || i, 'u' || i, 's' || i, "
	     "i, i, i * 1000 FROM s");
	fill("INSERT INTO node_macs (tenant_id, mac, node_id) SELECT CASE WHEN i % 50 = 0 THEN "
	     "'root' ELSE 'other' END, 'm' || (i % 1000), 'node_' || (100000 + i) FROM s");
	fill("INSERT INTO events (id, tenant_id, type, subject, created_at) SELECT 'evt_' || "
	     "(100000 + i), CASE WHEN i % 50 = 0 THEN 'root' ELSE 'other' END, 'node.renewed', "
	     "'node_' || (100000 + i % 500), i FROM s");
	fill("INSERT INTO audit (id, tenant_id, actor, action, subject, created_at) SELECT "
	     "'aud_' || (100000 + i), CASE WHEN i % 50 = 0 THEN 'root' ELSE 'other' END, 'a', "
	     "'node.cordoned', 'node_' || (100000 + i % 500), i FROM s");
	fill("INSERT INTO join_tokens (id, tenant_id, role, secret_hash, uses_left, uses_total, "
	     "expires_at, created_at) SELECT 'tok_' || (100000 + i), CASE WHEN i % 50 = 0 THEN "
	     "'root' ELSE 'other' END, 'node', '00', 1, 1, i, i FROM s");
	fill("INSERT INTO workflows (id, tenant_id, kind, state, created_at, updated_at) SELECT "
	     "'wf_' || (100000 + i), CASE WHEN i % 50 = 0 THEN 'root' ELSE 'other' END, "
	     "'commission', 'running', i, i FROM s");
	fill("INSERT INTO join_requests (id, tenant_id, attestor, request_key, csr_sha256, state, "
	     "created_at, expires_at) SELECT 'jr_' || (100000 + i), CASE WHEN i % 50 = 0 THEN "
	     "'root' ELSE 'other' END, 'tpm', 'k' || i, '00', CASE WHEN i % 3 = 0 THEN 'pending' "
	     "ELSE 'used' END, i, i FROM s");
	return bct_exec(&cp, "ANALYZE", NULL, 0);
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	return 0;
}

struct plan_arg {
	const struct bc_row_where *w;
	char plan[16384];
};

static int plan_fn(bc_tx *tx, void *arg)
{
	struct plan_arg *a = arg;
	return bc_row_where_plan(tx, a->w, a->plan, sizeof(a->plan));
}

/* Leading spaces of a PostgreSQL plan line. */
static size_t indent(const char *l)
{
	return strspn(l, " ");
}

/* PostgreSQL: outside the SubPlans a row's columns read (a node's pool name, its
 * newest inventory), an index condition on the list's table, no Sort, no sequential
 * scan of it. */
static int pg_plan_ok(char *plan, const char *table)
{
	char seq[64], on[64];
	int cond = 0, bad = 0;
	size_t skip = SIZE_MAX;

	snprintf(seq, sizeof(seq), "Seq Scan on %s", table);
	snprintf(on, sizeof(on), " on %s", table);
	for (char *save = NULL, *l = strtok_r(plan, "\n", &save); l != NULL;
	     l = strtok_r(NULL, "\n", &save)) {
		size_t in = indent(l);
		const char *t = l + in;
		if (skip != SIZE_MAX && in > skip)
			continue;
		skip = SIZE_MAX;
		if (strncmp(t, "SubPlan", 7) == 0 || strncmp(t, "InitPlan", 8) == 0) {
			skip = in;
			continue;
		}
		if (strncmp(t, "->  ", 4) == 0)
			t += 4;
		bad |= strncmp(t, "Sort", 4) == 0 || strncmp(t, "Incremental Sort", 16) == 0 ||
		       strstr(t, seq) != NULL;
		cond |= strncmp(t, "Index Cond:", 11) == 0 && strstr(t, "tenant_id") != NULL;
	}
	return cond && !bad;
}

/* SQLite: the list's table searched by an index, no temporary B-tree for an ORDER BY
 * (nor a GROUP BY) anywhere. */
static int sqlite_plan_ok(const char *plan, const char *alias)
{
	char search[64];

	snprintf(search, sizeof(search), "SEARCH %s USING ", alias);
	return strstr(plan, search) != NULL && strstr(plan, "TEMP B-TREE") == NULL;
}

/* The store plans are read from: the control plane's, or (after an index is dropped)
 * one opened anew, whose statement cache holds no plan made before. */
static bc_store *plans_store;

/* 1 when w's plan reads the list's table (its SQL alias) by an index without a sort. */
static int plan_ok(const struct bc_row_where *w, const char *table, const char *alias,
                   const char *what)
{
	struct plan_arg a = {.w = w};
	char copy[sizeof(a.plan)];
	int ok;

	assert_int_equal(
	    bc_store_run(plans_store ? plans_store : bct_store(&cp), BC_TX_READ, plan_fn, &a), 0);
	memcpy(copy, a.plan, sizeof(copy));
	ok = pg ? pg_plan_ok(a.plan, table) : sqlite_plan_ok(a.plan, alias);
	if (!ok || getenv("BC_TEST_SHOW_PLANS") != NULL)
		print_message("%s: %s:\n%s\n", what,
		              ok ? "an index, no sort" : "no index or a sort", copy);
	return ok;
}

/* Each page kind of a list whose rows are named prefix_<100000 + i>: the first, the
 * one after row i = 10000 (in the middle of the tenant's rows), the one before it. at:
 * the order key's integer at that row (0 for lists in id order). */
struct pages {
	struct bc_cursor after, before;
	struct bc_row_page p[3];
};
#define N_PAGES 3

static void pages_of(struct pages *pp, const char *prefix, int64_t at)
{
	memset(pp, 0, sizeof(*pp));
	snprintf(pp->after.id, sizeof(pp->after.id), "%s_110000", prefix);
	pp->after.at = at;
	pp->before = pp->after;
	pp->before.before = 1;
	pp->p[0] = (struct bc_row_page){.cursor = NULL, .limit = 100};
	pp->p[1] = (struct bc_row_page){.cursor = &pp->after, .limit = 100};
	pp->p[2] = (struct bc_row_page){.cursor = &pp->before, .limit = 100};
}

static void test_nodes_plans(void **state)
{
	const struct bc_row_node_filter filters[] = {
	    {0},
	    {.state = "cordoned"},
	    {.pool_id = "pool_x"},
	    {.site_id = "site_x"},
	    {.role = "site"},
	    {.attestor = "tpm"},
	    {.hostname = "h77"},
	    {.product_uuid = "u77"},
	    {.serial = "s77"},
	    {.mac = "m100"},
	    {.expiring_before = 9000000},
	};
	struct bc_row_where w;
	struct pages id_order, expiry;
	char what[64];

	(void)state;
	pages_of(&id_order, "node", 0);
	pages_of(&expiry, "node", 10000 * 1000);
	for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		for (size_t j = 0; j < N_PAGES; j++) {
			const struct pages *pp = filters[i].expiring_before ? &expiry : &id_order;
			snprintf(what, sizeof(what), "nodes filter %zu page %zu", i, j);
			bc_row_nodes_list_sql("root", &filters[i], &pp->p[j], &w);
			assert_true(plan_ok(&w, "nodes", "n", what));
		}
}

static void test_history_plans(void **state)
{
	const struct bc_row_history_filter filters[] = {
	    {0},
	    {.type = "node.renewed"},
	    {.subject = "node_100007"},
	    {.has_since = 1, .since = 100},
	    {.has_since = 1, .since = 100, .has_until = 1, .until = 200},
	};
	struct bc_row_where w;
	struct pages ev, au;
	char what[64];

	(void)state;
	pages_of(&ev, "evt", 10000);
	pages_of(&au, "aud", 10000);
	for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		for (size_t j = 0; j < N_PAGES; j++) {
			snprintf(what, sizeof(what), "events filter %zu page %zu", i, j);
			bc_row_events_list_sql("root", &filters[i], &ev.p[j], &w);
			assert_true(plan_ok(&w, "events", "events", what));
			snprintf(what, sizeof(what), "audit filter %zu page %zu", i, j);
			bc_row_audit_list_sql("root", &filters[i], &au.p[j], &w);
			assert_true(plan_ok(&w, "audit", "audit", what));
		}
}

static void test_other_plans(void **state)
{
	struct bc_row_where w;
	struct pages tok, wf, jr;

	(void)state;
	pages_of(&tok, "tok", 0);
	pages_of(&wf, "wf", 0);
	pages_of(&jr, "jr", 0);
	for (size_t j = 0; j < N_PAGES; j++) {
		bc_row_tokens_list_sql("root", &tok.p[j], &w);
		assert_true(plan_ok(&w, "join_tokens", "join_tokens", "tokens"));
		bc_row_workflows_list_sql("root", &wf.p[j], &w);
		assert_true(plan_ok(&w, "workflows", "workflows", "workflows"));
		bc_row_join_requests_list_sql("root", NULL, &jr.p[j], &w);
		assert_true(plan_ok(&w, "join_requests", "join_requests", "join requests"));
		bc_row_join_requests_list_sql("root", "pending", &jr.p[j], &w);
		assert_true(plan_ok(&w, "join_requests", "join_requests", "join requests"));
	}
}

/* The check fails when the index a list reads is gone: the nodes list without
 * (tenant_id, id), the events list without (tenant_id, created_at, id). */
static void test_check_fails_without_index(void **state)
{
	const struct bc_row_node_filter none = {0};
	const struct bc_row_history_filter all = {0};
	const struct bc_row_page first = {.limit = 100};
	struct bc_row_where w;
	char err[256];

	(void)state;
	assert_int_equal(bct_exec(&cp, "DROP INDEX nodes_tenant_id", NULL, 0), 0);
	assert_int_equal(bct_exec(&cp, "DROP INDEX events_tenant_time", NULL, 0), 0);
	assert_int_equal(bc_store_open(cp.cfg.database, &plans_store, err, sizeof(err)), 0);
	bc_row_nodes_list_sql("root", &none, &first, &w);
	assert_false(plan_ok(&w, "nodes", "n", "nodes without nodes_tenant_id (expected)"));
	bc_row_events_list_sql("root", &all, &first, &w);
	assert_false(
	    plan_ok(&w, "events", "events", "events without events_tenant_time (expected)"));
	bc_store_close(plans_store);
	plans_store = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nodes_plans),
	    cmocka_unit_test(test_history_plans),
	    cmocka_unit_test(test_other_plans),
	    cmocka_unit_test(test_check_fails_without_index),
	};

	if (bct_engine_skip())
		return 0;
	return cmocka_run_group_tests(tests, setup, teardown);
}
