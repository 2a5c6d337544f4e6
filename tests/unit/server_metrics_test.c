/* src/server/metrics.c: the exposition text, its bounds and its escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/metrics.h"

static char *render(struct bc_metrics *m)
{
	struct bc_metrics_extra x = {
	    .store = NULL, .refusals_dropped = 3, .version = "9.9", .connections = -1};
	char *t = bc_metrics_render(m, &x);

	assert_non_null(t);
	return t;
}

static int count_lines(const char *t, const char *prefix)
{
	int n = 0;
	for (const char *p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		n += strncmp(p, prefix, strlen(prefix)) == 0;
	return n;
}

static void test_counters_and_histogram(void **state)
{
	struct bc_metrics *m = NULL;
	struct bc_join_outcome joined = {.type = BC_JOIN_OUTCOME_JOINED, .attestor = "join-token"};
	char *t;

	(void)state;
	assert_int_equal(bc_metrics_new(&m), 0);
	bc_metrics_refusal(m, "join-token", "token-unknown");
	bc_metrics_refusal(m, "join-token", "token-unknown");
	bc_metrics_outcome(m, &joined);
	bc_metrics_rpc(m, "Join", 200, 0.003);
	bc_metrics_rpc(m, "Join", 200, 7.0);
	bc_metrics_shed(m, "Renew");
	bc_metrics_shed(m, "Renew");
	bc_metrics_shed(m, "Other");
	bc_metrics_prune(m, &(struct bc_prune_counts){.node_certs = 7, .audit = 2}, 1);
	bc_metrics_prune(m, &(struct bc_prune_counts){.node_certs = 3, .events = 1}, 0);
	t = render(m);
	assert_non_null(strstr(t, "bc_prune_deleted_total{kind=\"node_certs\"} 10\n"));
	assert_non_null(strstr(t, "bc_prune_deleted_total{kind=\"audit\"} 2\n"));
	assert_non_null(strstr(t, "bc_prune_deleted_total{kind=\"events\"} 1\n"));
	assert_non_null(strstr(t, "bc_prune_deleted_total{kind=\"join_tokens\"} 0\n"));
	assert_non_null(strstr(t, "bc_prune_runs_total{result=\"ok\"} 1\n"));
	assert_non_null(strstr(t, "bc_prune_runs_total{result=\"error\"} 1\n"));
	assert_non_null(strstr(
	    t, "bc_join_refusals_total{attestor=\"join-token\",reason=\"token-unknown\"} 2\n"));
	assert_non_null(
	    strstr(t, "bc_join_outcomes_total{attestor=\"join-token\",outcome=\"joined\"} 1\n"));
	/* cumulative buckets: 3 ms is under 5 ms; 7 s only under +Inf */
	assert_non_null(strstr(
	    t, "bc_rpc_duration_seconds_bucket{method=\"Join\",code=\"200\",le=\"0.0025\"} 0\n"));
	assert_non_null(strstr(
	    t, "bc_rpc_duration_seconds_bucket{method=\"Join\",code=\"200\",le=\"0.005\"} 1\n"));
	assert_non_null(strstr(
	    t, "bc_rpc_duration_seconds_bucket{method=\"Join\",code=\"200\",le=\"2.5\"} 1\n"));
	/* past the 3 s shedding deadline: 5 s and 10 s buckets, 7 s in the last */
	assert_non_null(
	    strstr(t, "bc_rpc_duration_seconds_bucket{method=\"Join\",code=\"200\",le=\"5\"} 1\n"));
	assert_non_null(strstr(
	    t, "bc_rpc_duration_seconds_bucket{method=\"Join\",code=\"200\",le=\"10\"} 2\n"));
	assert_non_null(strstr(
	    t, "bc_rpc_duration_seconds_bucket{method=\"Join\",code=\"200\",le=\"+Inf\"} 2\n"));
	assert_non_null(
	    strstr(t, "bc_rpc_duration_seconds_count{method=\"Join\",code=\"200\"} 2\n"));
	assert_non_null(strstr(t, "bc_store_up 0\n"));
	assert_non_null(strstr(t, "bc_requests_shed_total{method=\"Join\"} 0\n"));
	assert_non_null(strstr(t, "bc_requests_shed_total{method=\"Renew\"} 2\n"));
	assert_non_null(strstr(t, "bc_requests_shed_total{method=\"(other)\"} 1\n"));
	assert_non_null(strstr(t, "bc_on_refusal_dropped_total 3\n"));
	assert_non_null(strstr(t, "bc_build_info{version=\"9.9\"} 1\n"));
	free(t);
	bc_metrics_free(m);
}

/* A plugin's reason is any static string: quoted, it cannot break the format; and no
 * number of distinct reasons grows the table past its bound. */
static void test_escaping_and_bounds(void **state)
{
	struct bc_metrics *m = NULL;
	char reason[32];
	char *t;

	(void)state;
	assert_int_equal(bc_metrics_new(&m), 0);
	bc_metrics_refusal(m, "lab", "a\"b\\c\nd");
	for (int i = 0; i < 1000; i++) {
		snprintf(reason, sizeof(reason), "r-%d", i);
		bc_metrics_refusal(m, "lab", reason);
	}
	bc_metrics_refusal(m, "lab", "r-0");
	t = render(m);
	assert_non_null(strstr(t, "reason=\"a\\\"b\\\\c\\nd\"} 1\n"));
	assert_non_null(strstr(t, "reason=\"r-0\"} 2\n"));
	assert_int_equal(count_lines(t, "bc_join_refusals_total{"), 256 + 1);
	/* 1,000 distinct reasons + 1 escaped: 256 series, the other 745 under (other) */
	assert_non_null(strstr(t, "reason=\"(other)\"} 745\n"));
	free(t);
	bc_metrics_free(m);
}

/* Renewals are counted apart from joins, bcd doctor's checks apart from renewals. */
static void test_renewals_and_checks(void **state)
{
	struct bc_metrics *m = NULL;
	struct bc_join_outcome renewed = {.type = BC_JOIN_OUTCOME_RENEWED};
	struct bc_join_outcome replayed = {.type = BC_JOIN_OUTCOME_RENEWED, .replayed = 1};
	struct bc_join_outcome checked = {.type = BC_JOIN_OUTCOME_CHECKED};
	char *t;

	(void)state;
	assert_int_equal(bc_metrics_new(&m), 0);
	bc_metrics_outcome(m, &renewed);
	bc_metrics_outcome(m, &renewed);
	bc_metrics_outcome(m, &replayed);
	bc_metrics_outcome(m, &checked);
	bc_metrics_renew_refusal(m, "renew-revoked", 0);
	bc_metrics_renew_refusal(m, "renew-revoked", 1);
	bc_metrics_renew_refusal(m, "renew-retired", 1);
	t = render(m);
	assert_non_null(strstr(t, "bc_renew_outcomes_total{outcome=\"renewed\"} 2\n"));
	assert_non_null(strstr(t, "bc_renew_outcomes_total{outcome=\"replayed\"} 1\n"));
	assert_non_null(strstr(t, "bc_renew_outcomes_total{outcome=\"refused\"} 1\n"));
	assert_non_null(strstr(t, "bc_renew_refusals_total{reason=\"renew-revoked\"} 1\n"));
	assert_null(strstr(t, "bc_renew_refusals_total{reason=\"renew-retired\"}"));
	assert_non_null(strstr(t, "bc_renew_checks_total{result=\"current\"} 1\n"));
	assert_non_null(strstr(t, "bc_renew_checks_total{result=\"refused\"} 2\n"));
	/* nothing under a join attestor */
	assert_int_equal(count_lines(t, "bc_join_outcomes_total{"), 0);
	assert_int_equal(count_lines(t, "bc_join_refusals_total{"), 0);
	free(t);
	bc_metrics_free(m);
}

/* The admin API and SiteService by method and status; a method or status no server
 * answers is one bounded series, never one per sender. */
static void test_admin_and_site(void **state)
{
	struct bc_metrics *m = NULL;
	char *t;

	(void)state;
	assert_int_equal(bc_metrics_new(&m), 0);
	bc_metrics_admin(m, "GET", 200);
	bc_metrics_admin(m, "GET", 200);
	bc_metrics_admin(m, "POST", 400);
	bc_metrics_admin(m, "BREW", 405);
	bc_metrics_admin(m, "COFFEE", 405);
	bc_metrics_admin(m, "GET", 999);
	bc_metrics_site(m, "AcquireLease", 200);
	bc_metrics_site(m, "FetchSecret", 403);
	t = render(m);
	assert_non_null(strstr(t, "bc_admin_requests_total{method=\"GET\",code=\"200\"} 2\n"));
	assert_non_null(strstr(t, "bc_admin_requests_total{method=\"POST\",code=\"400\"} 1\n"));
	assert_non_null(strstr(t, "bc_admin_requests_total{method=\"(other)\",code=\"405\"} 2\n"));
	assert_non_null(strstr(t, "bc_admin_requests_total{method=\"GET\",code=\"other\"} 1\n"));
	assert_non_null(
	    strstr(t, "bc_site_requests_total{method=\"AcquireLease\",code=\"200\"} 1\n"));
	assert_non_null(
	    strstr(t, "bc_site_requests_total{method=\"FetchSecret\",code=\"403\"} 1\n"));
	/* process_* from /proc, and no connections gauge when the caller knows none */
	assert_int_equal(count_lines(t, "process_open_fds "), 1);
	assert_int_equal(count_lines(t, "process_max_fds "), 1);
	assert_int_equal(count_lines(t, "process_cpu_seconds_total "), 1);
	assert_int_equal(count_lines(t, "process_resident_memory_bytes "), 1);
	assert_int_equal(count_lines(t, "bc_http_connections "), 0);
	free(t);
	bc_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counters_and_histogram),
	    cmocka_unit_test(test_renewals_and_checks),
	    cmocka_unit_test(test_admin_and_site),
	    cmocka_unit_test(test_escaping_and_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
