/* The store on SQLite: the cases every engine passes (store_cases.h), and what is
 * SQLite's own: the file, WAL and pragmas, processes opening one file at once, the
 * database URLs of a path, and FOR UPDATE removed from the SQL. */
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bc/clock.h"
#include "bc/err.h"
#include "bc/store.h"
#include "store/engine.h"
#include "store/migrations.h"

/* set in main() before anything reads the clock */
#define TEST_OFFSET_MS  86400000LL
#define STORE_BLOB_TYPE "BLOB"
#define STORE_TABLE_EXISTS_SQL                                                                     \
	"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = $1"

struct fx {
	char dir[64];
	char path[128];
	char url[160];
	bc_store *s;
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rmrf(const char *dir)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/bc-store-test.XXXXXX");
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/bc.db", f->dir);
	snprintf(f->url, sizeof(f->url), "sqlite:%s", f->path);
	if (bc_store_open(f->url, &f->s, err, sizeof(err)) != 0) {
		fprintf(stderr, "open: %s\n", err);
		rmrf(f->dir);
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
	rmrf(f->dir);
	free(f);
	return 0;
}

#include "store_cases.h"

/* ---- backup ---- */

/* a copy of what was committed, 0600, refused over an existing file without force */
static void test_backup(void **state)
{
	struct fx *f = *state;
	char out[200], url[220], err[512];
	bc_store *b = NULL;
	struct stat st;

	snprintf(out, sizeof(out), "%s/copy.db", f->dir);
	snprintf(url, sizeof(url), "sqlite:%s", out);
	make_table(f->s);
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, s) VALUES (1, 'kept')", NULL, 0), 0);
	assert_int_equal(bc_store_backup(f->s, out, 0, err, sizeof(err)), 0);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(bc_store_backup(f->s, out, 0, err, sizeof(err)), BC_ERR_CONFLICT);
	assert_non_null(strstr(err, "exists; give --force"));
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, s) VALUES (2, 'later')", NULL, 0), 0);
	assert_int_equal(bc_store_backup(f->s, out, 1, err, sizeof(err)), 0);
	assert_int_equal(bc_store_open(url, &b, err, sizeof(err)), 0);
	assert_true(count1(b, "SELECT COUNT(*) FROM t", NULL, 0) == 2);
	bc_store_close(b);
	/* a directory that does not exist: said, nothing left */
	snprintf(out, sizeof(out), "%s/no/such/dir.db", f->dir);
	assert_int_equal(bc_store_backup(f->s, out, 0, err, sizeof(err)), BC_ERR_IO);
	assert_non_null(strstr(err, "cannot create a file in"));
}

/* ---- opening and migrations ---- */

static void test_open_creates_and_migrates(void **state)
{
	struct fx *f = *state;
	struct stat st;
	int64_t v = -1;
	bc_tx *tx = NULL;
	char *mode = NULL;

	assert_int_equal(bc_store_engine(f->s), BC_STORE_SQLITE);
	assert_int_equal(bc_store_schema_version(f->s, &v), 0);
	assert_true(v == highest_migration());
	assert_true(v >= 1);
	assert_true(count1(f->s, "SELECT COUNT(*) FROM schema_migrations", NULL, 0) ==
	            (int64_t)bc_migrations_count);
	/* private from the start */
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	assert_int_equal(bc_tx_query_text(tx, "PRAGMA journal_mode", NULL, 0, &mode), 0);
	assert_string_equal(mode, "wal");
	assert_int_equal(bc_tx_query_int(tx, "PRAGMA synchronous", NULL, 0, &v), 0);
	assert_true(v == 2); /* FULL */
	assert_int_equal(bc_tx_query_int(tx, "PRAGMA foreign_keys", NULL, 0, &v), 0);
	assert_true(v == 1);
	assert_int_equal(bc_tx_commit(tx), 0);
	free(mode);
}

static void test_concurrent_open_processes(void **state)
{
	struct fx *f = *state;
	char url[200], err[256];
	int fds[2], status;
	pid_t pid[2];
	bc_store *s = NULL;
	char c;

	snprintf(url, sizeof(url), "sqlite:%s/race.db", f->dir);
	assert_int_equal(pipe(fds), 0);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			/* both wait here, then open the new file at once */
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
}

static void test_urls(void **state)
{
	struct fx *f = *state;
	char url[200], err[256];
	bc_store *s = NULL;

	static const char *bad[] = {
	    "", "sqlite:", "sqlite://", ":memory:", "sqlite::memory:", "file:x.db", "mysql://h/db"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(bc_store_open(bad[i], &s, err, sizeof(err)), BC_ERR_CONFIG);
		assert_null(s);
		assert_true(err[0] != '\0');
	}
	snprintf(url, sizeof(url), "%s/no/such/dir/x.db", f->dir);
	assert_int_equal(bc_store_open(url, &s, err, sizeof(err)), BC_ERR_IO);
	assert_non_null(strstr(err, "no/such/dir"));

	/* a plain path, and sqlite:///absolute */
	snprintf(url, sizeof(url), "%s/plain.db", f->dir);
	assert_int_equal(bc_store_open(url, &s, err, sizeof(err)), 0);
	bc_store_close(s);
	snprintf(url, sizeof(url), "sqlite://%s/plain.db", f->dir);
	assert_int_equal(bc_store_open(url, &s, err, sizeof(err)), 0);
	assert_true(count1(s, "SELECT COUNT(*) FROM schema_migrations", NULL, 0) ==
	            (int64_t)bc_migrations_count);
	bc_store_close(s);
}

/* ---- FOR UPDATE ---- */

static void test_for_update_stripped(void **state)
{
	static const char *forms[] = {
	    "SELECT i FROM t WHERE id = $1 FOR UPDATE",
	    "SELECT i FROM t WHERE id = $1 for update",
	    "SELECT i FROM t WHERE id = $1\n\tFor\n  Update  ;  \n",
	    "SELECT i FROM t WHERE id = $1 FOR UPDATE;",
	};
	struct fx *f = *state;
	bc_tx *tx = NULL;
	int64_t v = 0;
	char *s = NULL;

	make_table(f->s);
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, i) VALUES (1, 41)", NULL, 0), 0);
	assert_int_equal(bc_tx_begin(f->s, BC_TX_WRITE, &tx), 0);
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		v = 0;
		assert_int_equal(bc_tx_query_int(tx, forms[i], (bc_param[]){BC_INT(1)}, 1, &v), 0);
		assert_true(v == 41);
	}
	/* only a trailing clause goes */
	assert_int_equal(bc_tx_query_text(tx, "SELECT 'x FOR UPDATE'", NULL, 0, &s), 0);
	assert_string_equal(s, "x FOR UPDATE");
	free(s);
	assert_int_equal(bc_tx_query_int(tx, "SELECT i FROM t FOR UPDATE OF t", NULL, 0, &v),
	                 BC_ERR_DB);
	bc_tx_rollback(tx);

	assert_int_equal(bc_sql_strip_for_update("SELECT 1 FOR UPDATE"), strlen("SELECT 1"));
	assert_int_equal(bc_sql_strip_for_update("SELECT 1 FORUPDATE"),
	                 strlen("SELECT 1 FORUPDATE"));
	assert_int_equal(bc_sql_strip_for_update("SELECT xFOR UPDATE"),
	                 strlen("SELECT xFOR UPDATE"));
	assert_int_equal(bc_sql_strip_for_update("FOR UPDATE"), strlen("FOR UPDATE"));
	assert_int_equal(bc_sql_strip_for_update("UPDATE t SET a = 1"),
	                 strlen("UPDATE t SET a = 1"));
	assert_int_equal(bc_sql_strip_for_update(""), 0);
	assert_int_equal(bc_sql_strip_for_update("x for update ; ;"), strlen("x for update ; ;"));
}

/* Group commit: concurrent write transactions share one SQLite transaction each
 * batch, each in a savepoint. One that fails (a unique conflict, every fifth) leaves
 * nothing of its own and nothing of the others' undone; one whose commit returned is
 * visible at once to a read on another connection. */
#define GC_THREADS 8
#define GC_TXS     100

struct gc_arg {
	bc_store *s;
	int id;
	int wrong; /* a commit not seen, a failure seen, an unexpected result */
};

struct gc_tx {
	int64_t id;
	int fail;
};

static int gc_insert(bc_tx *tx, void *p)
{
	const struct gc_tx *t = p;
	int rc;

	if ((rc = bc_tx_exec(tx, "INSERT INTO t (id, i) VALUES ($1, $1)",
	                     (bc_param[]){BC_INT(t->id)}, 1, NULL)) != 0)
		return rc;
	if (!t->fail)
		return 0;
	/* 'dup' is there from the start: a conflict, after this transaction's insert */
	return bc_tx_exec(tx, "INSERT INTO t (id, u) VALUES ($1, 'dup')",
	                  (bc_param[]){BC_INT(-t->id)}, 1, NULL);
}

static void *gc_thread(void *p)
{
	struct gc_arg *a = p;

	for (int i = 0; i < GC_TXS; i++) {
		struct gc_tx t = {.id = (int64_t)a->id * 1000 + i + 1, .fail = i % 5 == 0};
		int rc = bc_store_run(a->s, BC_TX_WRITE, gc_insert, &t);
		bc_tx *tx = NULL;
		int64_t n = -1;

		if (rc != (t.fail ? BC_ERR_CONFLICT : 0))
			a->wrong++;
		if (bc_tx_begin(a->s, BC_TX_READ, &tx) != 0 ||
		    bc_tx_query_int(tx, "SELECT COUNT(*) FROM t WHERE id = $1",
		                    (bc_param[]){BC_INT(t.id)}, 1, &n) != 0 ||
		    n != (t.fail ? 0 : 1))
			a->wrong++;
		bc_tx_rollback(tx);
	}
	return NULL;
}

static void test_group_commit_isolates_failures(void **state)
{
	struct fx *f = *state;
	struct gc_arg args[GC_THREADS];
	pthread_t th[GC_THREADS];

	make_table(f->s);
	assert_int_equal(exec1(f->s, "INSERT INTO t (id, u) VALUES (0, 'dup')", NULL, 0), 0);
	for (int i = 0; i < GC_THREADS; i++) {
		args[i] = (struct gc_arg){.s = f->s, .id = i + 1};
		assert_int_equal(pthread_create(&th[i], NULL, gc_thread, &args[i]), 0);
	}
	for (int i = 0; i < GC_THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(args[i].wrong, 0);
	}
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t WHERE id > 0", NULL, 0) ==
	            GC_THREADS * (GC_TXS - GC_TXS / 5));
	assert_true(count1(f->s, "SELECT COUNT(*) FROM t WHERE id < 0", NULL, 0) == 0);
	/* and all of it is in the file: another store sees it */
	bc_store *other = NULL;
	char err[256];
	assert_int_equal(bc_store_open(f->url, &other, err, sizeof(err)), 0);
	assert_true(count1(other, "SELECT COUNT(*) FROM t WHERE id > 0", NULL, 0) ==
	            GC_THREADS * (GC_TXS - GC_TXS / 5));
	bc_store_close(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_open_creates_and_migrates, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_backup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_concurrent_open_processes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_urls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_for_update_stripped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_group_commit_isolates_failures, setup, teardown),
	    STORE_SHARED_CASES(setup, teardown),
	};

	/* before the first clock read in this process: the offset is read once */
	setenv("BC_TEST_CLOCK_OFFSET_MS", "86400000", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
