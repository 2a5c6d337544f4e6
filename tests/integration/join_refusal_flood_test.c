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

static struct bct_cp cp;
static char pool_id[64];

static int setup(void **state)
{
	(void)state;
	bc_clock_set_offset_ms(0);
	if (bct_cp_start(&cp, *state ? ((const char **)*state)[0] : NULL) != 0)
		return -1;
	return bct_pool(&cp, "root", "default", "{}", pool_id);
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	bc_clock_set_offset_ms(0);
	return 0;
}

static void refuse(const struct bct_join_opts *jo)
{
	uint8_t *body = NULL;
	size_t len = 0;
	long status = 0;

	assert_int_equal(bct_join_raw(&cp, jo, &status, &body, &len), 0);
	assert_int_equal(status, 403);
	free(body);
}

/* SELECT what FROM the refusal events of reason (then tail), and its parameter. */
static void refused_query(const char *what, const char *reason, const char *tail,
                          char sql[static 256], char like[static 128])
{
	snprintf(like, 128, "%%\"reason\":\"%s\"%%", reason);
	snprintf(sql, 256,
	         "SELECT %s FROM events WHERE type = 'security.join.refused' AND data LIKE $1%s",
	         what, tail);
}

static int64_t events_of(const char *reason)
{
	char sql[256], like[128];
	refused_query("COUNT(*)", reason, "", sql, like);
	bc_param p[] = {BC_TEXT(like)};
	return bct_count(&cp, sql, p, 1);
}

static char *newest_event_of(const char *reason)
{
	char sql[256], like[128];
	refused_query("data", reason, " ORDER BY created_at DESC, id DESC LIMIT 1", sql, like);
	bc_param p[] = {BC_TEXT(like)};
	return bct_text(&cp, sql, p, 1);
}

/* A token of the default pool, revoked: its refusals are backed by its secret. */
static char *revoked_token(char tok_id[64])
{
	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(&cp, &to, tok_id);

	assert_non_null(t);
	bc_param p[] = {BC_TEXT(tok_id)};
	assert_int_equal(bct_exec(&cp, "UPDATE join_tokens SET revoked_at = 1 WHERE id = $1", p, 1),
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
	struct bct_join_opts unknown = {.token = UNKNOWN_TOKEN};
	struct bct_join_opts no_attestor = {.attestor = "no-such-attestor"};
	char tok_id[64], *data;
	struct timespec t0;
	const int flood = 200;
	double secs;
	(void)state;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < flood; i++)
		refuse(&unknown);
	secs = seconds_since(&t0);
	for (int i = 0; i < 20; i++)
		refuse(&no_attestor);
	/* every refusal reached the hook by name; one event per reason was written */
	assert_string_equal(bct_last_reason(&cp), "attestor-unknown");
	assert_int_equal(events_of("token-unknown"), 1);
	assert_int_equal(events_of("attestor-unknown"), 1);
	printf("flood: %d token-unknown refusals in %.2f s (%.0f/s answered), %lld event(s) "
	       "written for them\n",
	       flood, secs, flood / secs, (long long)events_of("token-unknown"));

	/* past the minute, the next one publishes the count of all since the last */
	bc_clock_set_offset_ms(BC_REFUSAL_SUMMARY_MS + 1000);
	refuse(&unknown);
	assert_int_equal(events_of("token-unknown"), 2);
	data = newest_event_of("token-unknown");
	assert_non_null(data);
	assert_non_null(strstr(data, "\"count\":200"));
	assert_non_null(strstr(data, "\"summarized\":true"));
	free(data);
	assert_int_equal(events_of("attestor-unknown"), 1);

	/* a refusal of a token whose secret matched is recorded one by one */
	char *t = revoked_token(tok_id);
	struct bct_join_opts revoked = {.token = t};
	for (int i = 0; i < 5; i++)
		refuse(&revoked);
	assert_string_equal(bct_last_reason(&cp), "token-revoked");
	assert_int_equal(events_of("token-revoked"), 5);
	data = newest_event_of("token-revoked");
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
	struct bct_token_opts to = {.pool = pool_id};
	char tok_id[64], *data;
	const int flood = 2000;
	int64_t before = bct_count(&cp, "SELECT COUNT(*) FROM events", NULL, 0);
	uint64_t hooked = bct_refusal_total(&cp);
	(void)state;

	char *t = bct_token(&cp, &to, tok_id);
	assert_non_null(t);
	t[strlen(t) - 1] = t[strlen(t) - 1] == 'A' ? 'B' : 'A';
	struct bct_join_opts wrong = {.token = t};
	for (int i = 0; i < flood; i++)
		refuse(&wrong);
	assert_string_equal(bct_last_reason(&cp), "token-secret");
	/* on_refusal (and so the metrics) saw every one */
	assert_int_equal(bct_refusal_total(&cp) - hooked, flood);
	/* one summary, naming no token */
	assert_int_equal(events_of("token-secret"), 1);
	assert_true(bct_count(&cp, "SELECT COUNT(*) FROM events", NULL, 0) - before <= 3);
	data = newest_event_of("token-secret");
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
	const char *hookdir = ((const char **)*state)[1];
	char tok_id[64], path[512];
	long max_running = 0, ran;
	uint64_t dropped;
	const int flood = 40;

	char *t = revoked_token(tok_id);
	struct bct_join_opts revoked = {.token = t};
	for (int i = 0; i < flood; i++)
		refuse(&revoked);
	dropped = bc_server_refusals_dropped(cp.srv);
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
	char *hookdir;
	int rc;

	if (bct_engine_skip())
		return BCT_SKIP;
	if ((hookdir = bct_tmpdir()) == NULL)
		return 1;
	snprintf(toml, sizeof(toml), HOOK_DIR_FMT, hookdir);
	const char *hook_state[2] = {toml, hookdir};
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_prestate_setup_teardown(
	        test_refusal_flood_writes_one_event_per_reason_per_minute, setup, teardown, NULL),
	    cmocka_unit_test_prestate_setup_teardown(
	        test_wrong_secret_for_a_real_token_is_summarized, setup, teardown, NULL),
	    cmocka_unit_test_prestate_setup_teardown(test_on_refusal_flood_runs_bounded_processes,
	                                             setup, teardown, (void *)hook_state),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_rmrf(hookdir);
	free(hookdir);
	return rc;
}
