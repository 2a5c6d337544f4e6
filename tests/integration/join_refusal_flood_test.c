/* Refusal floods over loopback HTTP: refusals no credential backs are summarized (one
 * event per reason per minute, with the count), refusals that name a token are still
 * recorded one by one, and on_refusal runs from a bounded queue with a bounded number
 * of processes. Prints the figures of a small flood: refusals per second answered and
 * events written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bctest.h"
#include "join/refusal_summary.h"

#define UNKNOWN_TOKEN                                                                              \
	"bct_tok_01jd0000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

#define JOIN_REFUSED "security.join.refused"

static char pool_id[64];
static char *hookdir; /* where the on_refusal command of the last case writes */

/* a control plane (its extra_toml the case's prestate) with a default pool */
static int setup(void **state)
{
	if (bct_cp_setup(state) != 0)
		return -1;
	return bct_pool(*state, "root", "default", "{}", pool_id);
}

static void refuse(struct bct_cp *cp, const struct bct_join_opts *jo)
{
	uint8_t *body = NULL;
	size_t len = 0;
	long status = 0;

	assert_int_equal(bct_join_raw(cp, jo, &status, &body, &len), 0);
	assert_int_equal(status, 403);
	free(body);
}

/* A token of the default pool, revoked: its refusals are backed by its secret. */
static char *revoked_token(struct bct_cp *cp, char tok_id[64])
{
	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(cp, &to, tok_id);

	assert_non_null(t);
	bc_param p[] = {BC_TEXT(tok_id)};
	assert_int_equal(bct_exec(cp, "UPDATE join_tokens SET revoked_at = 1 WHERE id = $1", p, 1),
	                 0);
	return t;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_refusal_flood_writes_one_event_per_reason_per_minute(void **state)
{
	struct bct_cp *cp = *state;
	struct bct_join_opts unknown = {.token = UNKNOWN_TOKEN};
	struct bct_join_opts no_attestor = {.attestor = "no-such-attestor"};
	char tok_id[64], *data;
	struct timespec t0;
	const int flood = 200;
	double secs;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < flood; i++)
		refuse(cp, &unknown);
	secs = seconds_since(&t0);
	for (int i = 0; i < 20; i++)
		refuse(cp, &no_attestor);
	/* every refusal reached the hook by name; one event per reason was written */
	assert_string_equal(bct_last_reason(cp), "attestor-unknown");
	assert_int_equal(bct_events(cp, JOIN_REFUSED, "token-unknown", NULL), 1);
	assert_int_equal(bct_events(cp, JOIN_REFUSED, "attestor-unknown", NULL), 1);
	printf("flood: %d token-unknown refusals in %.2f s (%.0f/s answered), %lld event(s) "
	       "written for them\n",
	       flood, secs, flood / secs,
	       (long long)bct_events(cp, JOIN_REFUSED, "token-unknown", NULL));

	/* past the minute, the next one publishes the count of all since the last */
	bc_clock_set_offset_ms(BC_REFUSAL_SUMMARY_MS + 1000);
	refuse(cp, &unknown);
	assert_int_equal(bct_events(cp, JOIN_REFUSED, "token-unknown", NULL), 2);
	data = bct_event_newest(cp, JOIN_REFUSED, "token-unknown", NULL);
	assert_non_null(data);
	assert_non_null(strstr(data, "\"count\":200"));
	assert_non_null(strstr(data, "\"summarized\":true"));
	free(data);
	assert_int_equal(bct_events(cp, JOIN_REFUSED, "attestor-unknown", NULL), 1);

	/* a refusal of a token whose secret matched is recorded one by one */
	char *t = revoked_token(cp, tok_id);
	struct bct_join_opts revoked = {.token = t};
	for (int i = 0; i < 5; i++)
		refuse(cp, &revoked);
	assert_string_equal(bct_last_reason(cp), "token-revoked");
	assert_int_equal(bct_events(cp, JOIN_REFUSED, "token-revoked", NULL), 5);
	data = bct_event_newest(cp, JOIN_REFUSED, "token-revoked", NULL);
	assert_non_null(data);
	assert_null(strstr(data, "summarized"));
	assert_non_null(strstr(data, tok_id));
	free(data);
	free(t);
}

/* A real token id with a wrong secret: an id is printed in lists, events and iPXE
 * scripts, so it is no credential and the refusals are summarized like any other. */
static void test_wrong_secret_for_a_real_token_is_summarized(void **state)
{
	struct bct_cp *cp = *state;
	struct bct_token_opts to = {.pool = pool_id};
	char tok_id[64], *data;
	const int flood = 2000;
	int64_t before = bct_events(cp, NULL, NULL, NULL);
	uint64_t hooked = bct_refusal_total(cp);

	char *t = bct_token(cp, &to, tok_id);
	assert_non_null(t);
	t[strlen(t) - 1] = t[strlen(t) - 1] == 'A' ? 'B' : 'A';
	struct bct_join_opts wrong = {.token = t};
	for (int i = 0; i < flood; i++)
		refuse(cp, &wrong);
	assert_string_equal(bct_last_reason(cp), "token-secret");
	/* on_refusal (and so the metrics) saw every one */
	assert_int_equal(bct_refusal_total(cp) - hooked, flood);
	/* one summary, naming no token */
	assert_int_equal(bct_events(cp, JOIN_REFUSED, "token-secret", NULL), 1);
	assert_true(bct_events(cp, NULL, NULL, NULL) - before <= 3);
	data = bct_event_newest(cp, JOIN_REFUSED, "token-secret", NULL);
	assert_non_null(data);
	assert_non_null(strstr(data, "\"summarized\":true"));
	assert_null(strstr(data, tok_id));
	free(data);
	free(t);
}

/* on_refusal_processes = 2, on_refusal_queue = 4, each command 0.4 s: 40 refusals
 * that name a token (each passed on) at once. */
#define HOOK_DIR_FMT                                                                               \
	"on_refusal = \"d=%s; mkdir -p $d/run; touch $d/run/$$; ls $d/run | wc -l >> "             \
	"$d/concurrent; sleep 0.4; rm $d/run/$$; echo x >> $d/done\"\n"                            \
	"on_refusal_processes = 2\non_refusal_queue = 4\n"

static long count_lines(const char *path, long *max)
{
	char line[64];
	long n = 0;
	FILE *f = fopen(path, "r");

	if (max)
		*max = 0;
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (max && atol(line) > *max)
			*max = atol(line);
	}
	fclose(f);
	return n;
}

static void test_on_refusal_flood_runs_bounded_processes(void **state)
{
	struct bct_cp *cp = *state;
	char tok_id[64], path[512];
	long max_running = 0, ran;
	uint64_t dropped;
	const int flood = 40;

	char *t = revoked_token(cp, tok_id);
	struct bct_join_opts revoked = {.token = t};
	for (int i = 0; i < flood; i++)
		refuse(cp, &revoked);
	dropped = bc_server_refusals_dropped(cp->srv);
	/* 2 running and 4 waiting at most while the flood lasts: most are dropped */
	assert_true(dropped > 0);
	assert_true(dropped < (uint64_t)flood);
	snprintf(path, sizeof(path), "%s/done", hookdir);
	for (int i = 0; i < 200 && count_lines(path, NULL) < flood - (long)dropped; i++)
		usleep(50 * 1000);
	ran = count_lines(path, NULL);
	assert_int_equal(ran, flood - (long)dropped);
	snprintf(path, sizeof(path), "%s/concurrent", hookdir);
	assert_int_equal(count_lines(path, &max_running), ran);
	assert_true(max_running >= 1);
	assert_true(max_running <= 2);
	printf("on_refusal flood: %d refusals, %ld commands run (at most %ld at once), %llu "
	       "dropped and counted\n",
	       flood, ran, max_running, (unsigned long long)dropped);
	free(t);
}

int main(void)
{
	char toml[1024];
	int rc;

	if (bct_engine_skip())
		return BCT_SKIP;
	if ((hookdir = bct_tmpdir()) == NULL)
		return 1;
	snprintf(toml, sizeof(toml), HOOK_DIR_FMT, hookdir);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_refusal_flood_writes_one_event_per_reason_per_minute, setup, bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_wrong_secret_for_a_real_token_is_summarized, setup,
	                                    bct_cp_teardown),
	    cmocka_unit_test_prestate_setup_teardown(test_on_refusal_flood_runs_bounded_processes,
	                                             setup, bct_cp_teardown, toml),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_rmrf(hookdir);
	free(hookdir);
	return rc;
}
