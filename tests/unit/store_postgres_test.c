/* The store on PostgreSQL: the cases every engine passes (store_cases.h), each on a
 * fresh database of the server in BC_TEST_POSTGRES_URL (scripts/pg.sh start), and
 * what is PostgreSQL's own: session settings, replicas migrating at once, URLs that
 * do not connect, FOR UPDATE that blocks, SQLSTATEs, timeouts, deadlocks replayed,
 * and connections the server drops. Without the variable the program is skipped
 * (exit 77). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#if __has_include(<libpq-fe.h>)
#include <arpa/inet.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/err.h"
#include "bc/store.h"
#include "bct_pg.h"
#include "store/engine.h"
#include "store/migrations.h"

/* set in main() before anything reads the clock */
#define TEST_OFFSET_MS  86400000LL
#define STORE_BLOB_TYPE "BYTEA"
#define STORE_TABLE_EXISTS_SQL                                                                     \
	"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() "    \
	"AND table_name = $1"

struct fx {
	char name[64];
	char url[512];
	bc_store *s;
};

static const char *server_url; /* BC_TEST_POSTGRES_URL */

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[512];

	if (f == NULL)
		return -1;
	if (bct_pg_create(server_url, f->name, sizeof(f->name), f->url, sizeof(f->url), err,
	                  sizeof(err)) != 0) {
		fprintf(stderr, "create database: %s\n", err);
		free(f);
		return -1;
	}
	if (bc_store_open(f->url, &f->s, err, sizeof(err)) != 0) {
		fprintf(stderr, "open: %s\n", err);
		bct_pg_drop(server_url, f->name);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	bc_store_close(f->s);
	bct_pg_drop(server_url, f->name);
	free(f);
	return 0;
}

#include "store_cases.h"

static char *text1(bc_tx *tx, const char *sql)
{
	char *s = NULL;

	assert_int_equal(bc_tx_query_text(tx, sql, NULL, 0, &s), 0);
	return s;
}

static void assert_text(bc_tx *tx, const char *sql, const char *want)
{
	char *s = text1(tx, sql);

	assert_string_equal(s, want);
	free(s);
}

static void make_counter(bc_store *s, int rows)
{
	assert_int_equal(
	    exec1(s, "CREATE TABLE counter (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)", NULL, 0),
	    0);
	for (int i = 1; i <= rows; i++)
		assert_int_equal(exec1(s, "INSERT INTO counter (id, v) VALUES ($1, 1)",
		                       (bc_param[]){BC_INT(i)}, 1),
		                 0);
}

/* One command on the test server's database through libpq, outside the store. */
static void admin_exec(const char *url, const char *sql)
{
	PGconn *pg = PQconnectdb(url);
	PGresult *r;

	assert_int_equal(PQstatus(pg), CONNECTION_OK);
	r = PQexec(pg, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(pg));
	PQclear(r);
	PQfinish(pg);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* ---- opening and migrations ---- */

static void test_open_migrates_with_settings(void **state)
{
	struct fx *f = *state;
	int64_t v = -1;
	bc_tx *tx = NULL;

	assert_int_equal(bc_store_engine(f->s), BC_STORE_POSTGRES);
	assert_int_equal(bc_store_schema_version(f->s, &v), 0);
	assert_true(v == highest_migration());
	assert_true(count1(f->s, "SELECT COUNT(*) FROM schema_migrations", NULL, 0) ==
	            (int64_t)bc_migrations_count);

	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	assert_text(tx, "SELECT current_setting('transaction_isolation')", "read committed");
	assert_text(tx, "SELECT current_setting('transaction_read_only')", "off");
	assert_text(tx, "SELECT current_setting('lock_timeout')", "5s");
	assert_text(tx, "SELECT current_setting('client_encoding')", "UTF8");
	assert_text(tx, "SELECT current_setting('application_name')", "better-compute");
	assert_int_equal(bc_tx_commit(tx), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	assert_text(tx, "SELECT current_setting('transaction_read_only')", "on");
	bc_tx_rollback(tx);
}

/* Two replicas starting together on an empty database migrate it once. */
static void test_concurrent_open_processes(void **state)
{
	char name[64], url[512], err[512];
	int fds[2], status;
	pid_t pid[2];
	bc_store *s = NULL;
	char c;

	(void)state;
	assert_int_equal(
	    bct_pg_create(server_url, name, sizeof(name), url, sizeof(url), err, sizeof(err)), 0);
	assert_int_equal(pipe(fds), 0);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			/* both wait here, then open the empty database at once */
			close(fds[1]);
			(void)!read(fds[0], &c, 1);
			_exit(bc_store_open(url, &s, err, sizeof(err)) == 0 ? 0 : 1);
		}
	}
	close(fds[0]);
	close(fds[1]);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(bc_store_open(url, &s, err, sizeof(err)), 0);
	assert_true(count1(s, "SELECT COUNT(*) FROM schema_migrations", NULL, 0) ==
	            (int64_t)bc_migrations_count);
	bc_store_close(s);
	assert_int_equal(bct_pg_drop(server_url, name), 0);
}

/* A loopback port nothing listens on (as far as anyone can know). */
static int closed_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void test_urls(void **state)
{
	struct fx *f = *state;
	char url[600], err[512];
	bc_store *s = NULL;
	const char *rest;

	/* not a URL libpq reads: the operator's to fix */
	assert_int_equal(
	    bc_store_open("postgres://bc@127.0.0.1/x?no_such_option=1", &s, err, sizeof(err)),
	    BC_ERR_CONFIG);
	assert_null(s);
	assert_non_null(strstr(err, "no_such_option"));
	/* libpq quotes a bad escape, here in the password: not repeated */
	assert_int_equal(bc_store_open("postgres://bc:pa%zzss@127.0.0.1/x", &s, err, sizeof(err)),
	                 BC_ERR_CONFIG);
	assert_null(strstr(err, "zzss"));
	assert_non_null(strstr(err, "not valid"));

	/* nothing listening: away, and the message says what failed */
	snprintf(url, sizeof(url), "postgres://bc@127.0.0.1:%d/postgres", closed_port());
	assert_int_equal(bc_store_open(url, &s, err, sizeof(err)), BC_ERR_UNAVAILABLE);
	assert_null(s);
	assert_non_null(strstr(err, "cannot connect to the database"));
	assert_non_null(strstr(err, "127.0.0.1"));

	/* a database that is not there */
	snprintf(url, sizeof(url), "%.*s/bct_no_such_database",
	         (int)(strrchr(f->url, '/') - f->url), f->url);
	assert_int_equal(bc_store_open(url, &s, err, sizeof(err)), BC_ERR_UNAVAILABLE);
	assert_non_null(strstr(err, "bct_no_such_database"));

	/* the postgresql:// spelling */
	assert_true((rest = strstr(f->url, "://")) != NULL);
	snprintf(url, sizeof(url), "postgresql%s", rest);
	assert_int_equal(bc_store_open(url, &s, err, sizeof(err)), 0);
	assert_int_equal(bc_store_engine(s), BC_STORE_POSTGRES);
	bc_store_close(s);
}

/* ---- results ---- */

static void test_blobs_and_types(void **state)
{
	struct fx *f = *state;
	bc_tx *tx = NULL;
	bc_rows *r = NULL;
	const uint8_t *p, *q;
	size_t len = 0, qlen = 0;

	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	assert_int_equal(bc_tx_query(tx,
	                             "SELECT '\\x00ff01'::bytea, 'abc'::text, true, false, "
	                             "'\\x'::bytea, 12345678901234::numeric",
	                             NULL, 0, &r),
	                 0);
	assert_int_equal(bc_rows_next(r), 1);
	/* a bytea is decoded, and stays valid while another column is read */
	p = bc_rows_blob(r, 0, &len);
	q = bc_rows_blob(r, 1, &qlen);
	assert_int_equal(len, 3);
	assert_memory_equal(p, "\x00\xff\x01", 3);
	/* other columns give their text */
	assert_int_equal(qlen, 3);
	assert_memory_equal(q, "abc", 3);
	assert_true(bc_rows_int(r, 2) == 1);
	assert_true(bc_rows_int(r, 3) == 0);
	assert_non_null(bc_rows_blob(r, 4, &len));
	assert_int_equal(len, 0);
	assert_true(bc_rows_int(r, 5) == 12345678901234LL);
	assert_int_equal(bc_rows_next(r), 0);
	bc_rows_free(r);

	/* the same SQL with a NULL, then a value, for the same parameter */
	assert_int_equal(
	    bc_tx_query(tx, "SELECT COALESCE($1, 'none')", (bc_param[]){BC_NULL}, 1, &r), 0);
	assert_int_equal(bc_rows_next(r), 1);
	assert_string_equal(bc_rows_text(r, 0), "none");
	bc_rows_free(r);
	assert_int_equal(
	    bc_tx_query(tx, "SELECT COALESCE($1, 'none')", (bc_param[]){BC_TEXT("some")}, 1, &r),
	    0);
	assert_int_equal(bc_rows_next(r), 1);
	assert_string_equal(bc_rows_text(r, 0), "some");
	bc_rows_free(r);
	bc_tx_rollback(tx);
}

/* Prepared once per connection, and no more of them on the server than the cache
 * holds. */
static void test_statement_cache_on_server(void **state)
{
	const char *count = "SELECT COUNT(*) FROM pg_prepared_statements";
	struct fx *f = *state;
	bc_tx *tx = NULL;
	char sql[64];
	int64_t v = 0;

	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(
		    bc_tx_query_int(tx, "SELECT 1 + $1", (bc_param[]){BC_INT(i)}, 1, &v), 0);
	assert_int_equal(bc_tx_query_int(tx,
	                                 "SELECT COUNT(*) FROM pg_prepared_statements WHERE "
	                                 "statement = 'SELECT 1 + $1'",
	                                 NULL, 0, &v),
	                 0);
	assert_true(v == 1);
	for (int i = 0; i < 100; i++) {
		snprintf(sql, sizeof(sql), "SELECT %d", i);
		assert_int_equal(bc_tx_query_int(tx, sql, NULL, 0, &v), 0);
		assert_true(v == i);
	}
	assert_int_equal(bc_tx_query_int(tx, count, NULL, 0, &v), 0);
	assert_true(v == 64);
	bc_tx_rollback(tx);
}

/* A statement whose first run fails stays prepared; one that does not parse is
 * forgotten; the transaction goes on after both. */
static void test_failed_statements(void **state)
{
	const char *ins = "INSERT INTO t (id, u) VALUES ($1, $2)";
	struct fx *f = *state;
	bc_tx *tx = NULL;

	make_table(f->s);
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, u) VALUES (1, 'a')", NULL, 0), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	assert_int_equal(bc_tx_exec(tx, ins, (bc_param[]){BC_INT(2), BC_TEXT("a")}, 2, NULL),
	                 BC_ERR_CONFLICT);
	/* the constraint and the SQLSTATE, not the DETAIL that quotes the key's value */
	assert_non_null(strstr(bc_store_errmsg(), "t_u_key"));
	assert_non_null(strstr(bc_store_errmsg(), "23505"));
	assert_null(strstr(bc_store_errmsg(), "(a)"));
	assert_int_equal(bc_tx_exec(tx, ins, (bc_param[]){BC_INT(2), BC_TEXT("b")}, 2, NULL), 0);
	assert_int_equal(
	    bc_tx_exec(tx, "INSERT INTO nope (x) VALUES ($1)", (bc_param[]){BC_INT(1)}, 1, NULL),
	    BC_ERR_DB);
	assert_non_null(strstr(bc_store_errmsg(), "nope"));
	assert_int_equal(bc_tx_exec(tx, "SELECT 1 / 0", NULL, 0, NULL), BC_ERR_DB);
	assert_int_equal(bc_tx_exec(tx, ins, (bc_param[]){BC_INT(3), BC_TEXT("c")}, 2, NULL), 0);
	assert_int_equal(bc_tx_commit(tx), 0);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 3);
	/* the SQL scanner: literals, comments and dollar quotes hide $N and ';' */
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx), 0);
	assert_text(tx, "SELECT '$2; x' || $$ $3 ; $$ || E'\\'$4' -- $5;\n /* $6; /* $7 */ */",
	            "$2; x $3 ; '$4");
	bc_tx_rollback(tx);
}

/* ---- errors: the SQLSTATE adapter ---- */

static void test_sqlstates(void **state)
{
	static const struct {
		const char *state;
		int rc;
	} cases[] = {
	    {"23505", BC_ERR_CONFLICT},    {"40001", BC_ERR_RETRY},
	    {"40P01", BC_ERR_RETRY},       {"55P03", BC_ERR_BUSY},
	    {"57014", BC_ERR_BUSY},        {"23503", BC_ERR_DB},
	    {"22012", BC_ERR_DB},          {"XX000", BC_ERR_DB},
	    {"08006", BC_ERR_UNAVAILABLE}, {"57P01", BC_ERR_UNAVAILABLE},
	    {"53100", BC_ERR_UNAVAILABLE},
	};
	struct fx *f = *state;
	char sql[160];
	bc_tx *tx = NULL;
	int64_t v = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(sql, sizeof(sql),
		         "DO $$ BEGIN RAISE EXCEPTION 'raised %s' USING ERRCODE = '%s'; END $$",
		         cases[i].state, cases[i].state);
		assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
		if (bc_tx_exec(tx, sql, NULL, 0, NULL) != cases[i].rc)
			fail_msg("SQLSTATE %s: not %s", cases[i].state, bc_err_str(cases[i].rc));
		assert_non_null(strstr(bc_store_errmsg(), "raised"));
		/* the transaction goes on, unless the connection is taken for lost */
		if (cases[i].rc != BC_ERR_UNAVAILABLE) {
			assert_int_equal(bc_tx_query_int(tx, "SELECT 7", NULL, 0, &v), 0);
			assert_true(v == 7);
			assert_int_equal(bc_tx_commit(tx), 0);
		} else {
			assert_int_equal(bc_tx_commit(tx), BC_ERR_UNAVAILABLE);
		}
	}
	/* and the store works on */
	assert_true(count1(f->s, "SELECT 5", NULL, 0) == 5);
}

/* store backup: PostgreSQL's own tools, named; nothing written */
static void test_backup_unsupported(void **state)
{
	struct fx *f = *state;
	char err[512];

	assert_int_equal(bc_store_backup(f->s, "/tmp/bc-pg-backup-never.db", 0, err, sizeof(err)),
	                 BC_ERR_UNSUPPORTED);
	assert_non_null(strstr(err, "pg_dump"));
	assert_non_null(strstr(err, "pg_basebackup"));
	assert_int_equal(access("/tmp/bc-pg-backup-never.db", F_OK), -1);
}

static void test_timeouts_are_busy(void **state)
{
	struct fx *f = *state;
	bc_tx *a = NULL, *b = NULL;
	int64_t v = 0;

	make_counter(f->s, 1);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &a), 0);
	assert_int_equal(
	    bc_tx_query_int(a, "SELECT v FROM counter WHERE id = 1 FOR UPDATE", NULL, 0, &v), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &b), 0);
	assert_int_equal(bc_tx_exec(b, "SET LOCAL lock_timeout = '50ms'", NULL, 0, NULL), 0);
	assert_int_equal(
	    bc_tx_query_int(b, "SELECT v FROM counter WHERE id = 1 FOR UPDATE", NULL, 0, &v),
	    BC_ERR_BUSY);
	assert_non_null(strstr(bc_store_errmsg(), "lock timeout"));
	assert_int_equal(bc_tx_exec(b, "SET LOCAL statement_timeout = '50ms'", NULL, 0, NULL), 0);
	assert_int_equal(bc_tx_exec(b, "SELECT pg_sleep(10)", NULL, 0, NULL), BC_ERR_BUSY);
	assert_non_null(strstr(bc_store_errmsg(), "statement timeout"));
	bc_tx_rollback(b);
	bc_tx_rollback(a);
}

/* ---- FOR UPDATE ---- */

struct blocked {
	bc_store *s;
	int rc;
	int64_t seen;
	int done;
	pthread_mutex_t mu;
};

static void *lock_row_thread(void *p)
{
	struct blocked *b = p;
	bc_tx *tx = NULL;
	int64_t v = -1;
	int rc;

	if ((rc = bc_tx_begin(b->s, BC_TX_WRITE, &tx)) == 0) {
		rc = bc_tx_query_int(tx, "SELECT v FROM counter WHERE id = 1 FOR UPDATE", NULL, 0,
		                     &v);
		rc = rc == 0 ? bc_tx_commit(tx) : (bc_tx_rollback(tx), rc);
	}
	pthread_mutex_lock(&b->mu);
	b->rc = rc;
	b->seen = v;
	b->done = 1;
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

static int lock_waiters(bc_store *s)
{
	return (int)count1(s,
	                   "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = "
	                   "current_database() AND wait_event_type = 'Lock'",
	                   NULL, 0);
}

static void test_for_update_blocks_second_writer(void **state)
{
	struct fx *f = *state;
	struct blocked b = {.s = f->s, .mu = PTHREAD_MUTEX_INITIALIZER};
	pthread_t th;
	bc_tx *tx = NULL;
	int64_t v = 0;
	int waited;

	make_counter(f->s, 1);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	/* kept as written: SQLite would refuse the OF clause */
	assert_int_equal(bc_tx_query_int(tx,
	                                 "SELECT v FROM counter WHERE id = 1 FOR UPDATE OF counter",
	                                 NULL, 0, &v),
	                 0);
	assert_int_equal(pthread_create(&th, NULL, lock_row_thread, &b), 0);
	/* the second writer waits on the row lock, as the server sees it */
	for (waited = 0; waited < 5000 && lock_waiters(f->s) == 0; waited += 10)
		sleep_ms(10);
	assert_true(waited < 5000);
	pthread_mutex_lock(&b.mu);
	assert_false(b.done);
	pthread_mutex_unlock(&b.mu);
	assert_int_equal(bc_tx_exec(tx, "UPDATE counter SET v = 2 WHERE id = 1", NULL, 0, NULL), 0);
	assert_int_equal(bc_tx_commit(tx), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* and reads the row as the first left it */
	assert_int_equal(b.rc, 0);
	assert_true(b.seen == 2);
}

/* ---- bc_store_run ---- */

struct deadlock_arg {
	bc_store *s;
	pthread_barrier_t *barrier;
	int64_t first, second;
	int calls;
	int rc;
};

/* Locks first, waits for the other thread to lock its first, then locks second:
 * the first attempts of the two threads deadlock, whatever the timing. */
static int lock_both(bc_tx *tx, void *p)
{
	const char *lock = "SELECT v FROM counter WHERE id = $1 FOR UPDATE";
	struct deadlock_arg *a = p;
	int64_t v;
	int rc;

	if ((rc = bc_tx_query_int(tx, lock, (bc_param[]){BC_INT(a->first)}, 1, &v)) != 0)
		return rc;
	if (++a->calls == 1)
		pthread_barrier_wait(a->barrier);
	if ((rc = bc_tx_query_int(tx, lock, (bc_param[]){BC_INT(a->second)}, 1, &v)) != 0)
		return rc;
	return bc_tx_exec(tx, "UPDATE counter SET v = v + 1 WHERE id = $1 OR id = $2",
	                  (bc_param[]){BC_INT(a->first), BC_INT(a->second)}, 2, NULL);
}

static void *deadlock_thread(void *p)
{
	struct deadlock_arg *a = p;

	a->rc = bc_store_run(a->s, BC_TX_WRITE, lock_both, a);
	return NULL;
}

static void test_run_replays_deadlock(void **state)
{
	struct fx *f = *state;
	pthread_barrier_t barrier;
	struct deadlock_arg a[2] = {{.s = f->s, .barrier = &barrier, .first = 1, .second = 2},
	                            {.s = f->s, .barrier = &barrier, .first = 2, .second = 1}};
	pthread_t th[2];

	make_counter(f->s, 2);
	assert_int_equal(pthread_barrier_init(&barrier, NULL, 2), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, deadlock_thread, &a[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&barrier);
	/* the server chose one victim; bc_store_run replayed it once */
	assert_int_equal(a[0].rc, 0);
	assert_int_equal(a[1].rc, 0);
	assert_int_equal(a[0].calls + a[1].calls, 3);
	assert_true(count1(f->s, "SELECT SUM(v) FROM counter", NULL, 0) == 2 + 4);
}

/* ---- a database that goes away ---- */

static int insert_row(bc_tx *tx, void *p)
{
	int *calls = p;

	++*calls;
	return bc_tx_exec(tx,
	                  "INSERT INTO t (id) VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM t))",
	                  NULL, 0, NULL);
}

static void test_terminated_connection(void **state)
{
	struct fx *f = *state;
	bc_tx *a = NULL, *b = NULL;
	int64_t pid = 0, v = 0;
	int calls = 0;

	make_table(f->s);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &a), 0);
	assert_int_equal(bc_tx_exec(a, "INSERT INTO t (id) VALUES (100)", NULL, 0, NULL), 0);
	assert_int_equal(bc_tx_query_int(a, "SELECT pg_backend_pid()", NULL, 0, &pid), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &b), 0);
	assert_int_equal(bc_tx_query_int(b, "SELECT pg_terminate_backend($1::int, 5000)::int",
	                                 (bc_param[]){BC_INT(pid)}, 1, &v),
	                 0);
	assert_true(v == 1);
	bc_tx_rollback(b);

	assert_int_equal(bc_tx_query_int(a, "SELECT 1", NULL, 0, &v), BC_ERR_UNAVAILABLE);
	assert_true(strlen(bc_store_errmsg()) > 0);
	assert_int_equal(bc_tx_commit(a), BC_ERR_UNAVAILABLE);
	/* nothing of it was committed, and the next transaction works */
	assert_int_equal(bc_store_run(f->s, BC_TX_WRITE, insert_row, &calls), 0);
	assert_int_equal(calls, 1);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 1);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t WHERE id = 100", NULL, 0) == 0);
}

/* Connections the server closed while they sat in the pool (a restart, say) are
 * made again at the next transaction: no error reaches the caller. */
static void test_idle_connections_dropped(void **state)
{
	struct fx *f = *state;
	bc_tx *tx[4] = {NULL};
	char sql[256];
	int calls = 0;

	make_table(f->s);
	for (int i = 0; i < 4; i++)
		assert_int_equal(bc_tx_begin(f->s, BC_TX_READ, &tx[i]), 0);
	for (int i = 0; i < 4; i++)
		bc_tx_rollback(tx[i]);
	snprintf(
	    sql, sizeof(sql),
	    "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = '%s' "
	    "AND pid <> pg_backend_pid()",
	    f->name);
	admin_exec(server_url, sql);
	for (int i = 0; i < 6; i++) {
		calls = 0;
		assert_int_equal(bc_store_run(f->s, BC_TX_WRITE, insert_row, &calls), 0);
		assert_int_equal(calls, 1);
	}
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t", NULL, 0) == 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_open_migrates_with_settings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_concurrent_open_processes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_urls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_blobs_and_types, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_statement_cache_on_server, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_statements, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sqlstates, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_backup_unsupported, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeouts_are_busy, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_for_update_blocks_second_writer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_run_replays_deadlock, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_terminated_connection, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_connections_dropped, setup, teardown),
	    STORE_SHARED_CASES(setup, teardown),
	};

	server_url = getenv("BC_TEST_POSTGRES_URL");
	if (server_url == NULL || server_url[0] == '\0') {
		printf("skipped: BC_TEST_POSTGRES_URL not set\n");
		return 77;
	}
	/* before the first clock read in this process: the offset is read once */
	setenv("BC_TEST_CLOCK_OFFSET_MS", "86400000", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* no libpq at build time */

int main(void)
{
	printf("skipped: built without libpq\n");
	return 77;
}

#endif
