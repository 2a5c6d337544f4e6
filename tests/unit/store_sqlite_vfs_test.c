/* The bc-wal VFS (src/store/sqlite_vfs.c), which gathers a commit's WAL writes: what a
 * commit wrote is in the files when the commit returns (a copy of the database and its
 * WAL, opened on the default VFS, has it), another handle reads it at once, and the
 * writer reads back the frames it has spilled before committing. */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/sqlite_vfs.h"

#define BLOB_LEN 3000

static char dir[64];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static sqlite3 *open_db(const char *path, const char *vfs)
{
	sqlite3 *db = NULL;

	assert_int_equal(
	    sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
	                              "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
	                              "PRAGMA wal_autocheckpoint=0",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	return db;
}

static int64_t one(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int integrity_ok(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int ok;

	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL),
	                 SQLITE_OK);
	ok = sqlite3_step(st) == SQLITE_ROW &&
	     strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
	sqlite3_finalize(st);
	return ok;
}

/* rows n0 .. n0+n-1, each with a BLOB_LEN blob, in the open transaction */
static void insert(sqlite3 *db, int n0, int n)
{
	sqlite3_stmt *st = NULL;

	assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO t (id, b) VALUES (?, randomblob(?))",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	for (int i = n0; i < n0 + n; i++) {
		sqlite3_bind_int(st, 1, i);
		sqlite3_bind_int(st, 2, BLOB_LEN);
		assert_int_equal(sqlite3_step(st), SQLITE_DONE);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char buf[65536];
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

/* The rows a copy of the files holds now, read on the default VFS: what a crash at
 * this moment would leave. */
static int64_t rows_in_copy(const char *path)
{
	char from[160], to[160];
	sqlite3 *db;
	int64_t n;

	snprintf(to, sizeof(to), "%s/copy.db", dir);
	unlink(to);
	copy_file(path, to);
	snprintf(from, sizeof(from), "%s-wal", path);
	snprintf(to, sizeof(to), "%s/copy.db-wal", dir);
	copy_file(from, to);
	snprintf(to, sizeof(to), "%s/copy.db-shm", dir);
	unlink(to);
	snprintf(to, sizeof(to), "%s/copy.db", dir);
	db = open_db(to, NULL);
	assert_true(integrity_ok(db));
	n = one(db, "SELECT COUNT(*) FROM t WHERE length(b) = 3000");
	sqlite3_close(db);
	return n;
}

static void test_commits_reach_the_file(void **state)
{
	char path[128];
	sqlite3 *w, *r;

	(void)state;
	assert_int_equal(bc_sqlite_vfs_register(), 0);
	assert_non_null(sqlite3_vfs_find(BC_SQLITE_VFS_NAME));
	snprintf(path, sizeof(path), "%s/bc.db", dir);
	w = open_db(path, BC_SQLITE_VFS_NAME);
	r = open_db(path, BC_SQLITE_VFS_NAME);
	assert_int_equal(
	    sqlite3_exec(w, "CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)", NULL, NULL, NULL),
	    SQLITE_OK);
	/* a large commit: more frames than one buffer, written in pieces */
	assert_int_equal(sqlite3_exec(w, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	insert(w, 0, 400);
	assert_int_equal(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(one(r, "SELECT COUNT(*) FROM t"), 400);
	assert_int_equal(rows_in_copy(path), 400);
	/* a small one: its few frames all fit in the buffer, and must not stay there */
	assert_int_equal(sqlite3_exec(w, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	insert(w, 400, 1);
	assert_int_equal(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(one(r, "SELECT COUNT(*) FROM t"), 401);
	assert_int_equal(rows_in_copy(path), 401);
	/* a transaction larger than the page cache spills frames to the WAL before its
	 * commit, and reads them back */
	assert_int_equal(sqlite3_exec(w, "PRAGMA cache_size=8; BEGIN", NULL, NULL, NULL),
	                 SQLITE_OK);
	insert(w, 1000, 300);
	assert_int_equal(one(w, "SELECT SUM(length(b)) FROM t WHERE id >= 1000"), 300 * BLOB_LEN);
	assert_int_equal(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(one(r, "SELECT COUNT(*) FROM t"), 701);
	assert_int_equal(rows_in_copy(path), 701);
	/* a checkpoint reads the WAL back into the database */
	assert_int_equal(sqlite3_exec(w, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
	                 SQLITE_OK);
	assert_int_equal(one(r, "SELECT COUNT(*) FROM t"), 701);
	sqlite3_close(r);
	assert_int_equal(sqlite3_close(w), SQLITE_OK);
	r = open_db(path, NULL);
	assert_int_equal(one(r, "SELECT COUNT(*) FROM t"), 701);
	sqlite3_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_commits_reach_the_file),
	};
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/bc-vfs-test.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return rc;
}
