/* The SQLite engine: one database file in WAL mode, synchronous=FULL, foreign keys
 * on; one sqlite3 handle per pooled connection for reads (no SQLite mutex: a handle
 * is used by one thread at a time), and one for every write transaction of the
 * process, which commits concurrent writers together (group commit, see sl_state);
 * each handle with a cache of prepared statements. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <semaphore.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/codec.h"
#include "store/engine.h"
#include "store/sqlite_vfs.h"

#define BUSY_TIMEOUT_MS 5000
#define STMT_CACHE_SIZE 64

/* A slot of the statement cache. */
struct sl_stmt {
	char *key;     /* the SQL as the caller gave it; NULL: an empty slot */
	uint64_t hash; /* of key */
	sqlite3_stmt *st;
	uint64_t used; /* the handle's tick when last taken */
	int in_use;    /* a result holds st */
};

/* The transaction statements every write runs (group commit: a savepoint in a batch),
 * prepared once per handle rather than parsed by sqlite3_exec on every call. */
enum sl_ctl { CTL_BEGIN, CTL_BEGIN_IMMEDIATE, CTL_COMMIT, CTL_SAVEPOINT, CTL_RELEASE, CTL_N };
static const char *const ctl_sql[CTL_N] = {"BEGIN", "BEGIN IMMEDIATE", "COMMIT", "SAVEPOINT bc_tx",
                                           "RELEASE bc_tx"};

/* One sqlite3 handle and its prepared statements. */
struct sl_handle {
	sqlite3 *db;
	uint64_t tick;
	struct sl_stmt cache[STMT_CACHE_SIZE];
	sqlite3_stmt *ctl[CTL_N];
};

/* A write transaction waiting, its work done, for the batch it joined to commit. It
 * waits on a semaphore of its own, which the committer posts once rc is set: one
 * wake-up each, and none contends for the state's mutex to return. */
struct sl_member {
	struct sl_member *next;
	sem_t sem;
	int rc;
};

struct sl_state {
	char *path;
	/* SQLite lets one writer at a time in. Writers of this process queue here,
	 * woken in turn, rather than in SQLite's busy handler, which polls with
	 * sleeps; the busy timeout still covers other processes. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int writing;
	/* Group commit. Every write transaction of this process runs on one handle,
	 * inside a savepoint of one SQLite transaction, the batch. A writer done with its
	 * work hands the handle to the next one waiting and waits for the batch; the
	 * last (no writer waiting, or MAX_BATCH in) commits it once, with one WAL write
	 * and one fsync for all, and tells each member the result. A member's work is
	 * durable when its commit returns, as before; a batch whose commit fails fails
	 * for every member, so none is told of a write that was lost. */
	struct sl_handle *writer; /* opened at the first write transaction */
	unsigned waiting;         /* writers waiting in writer_lock */
	int batch_open;           /* BEGIN IMMEDIATE done, COMMIT not yet */
	unsigned batch_members;   /* savepoints released into the open batch */
	int batch_broken;         /* SQLite ended the batch itself (an I/O error...): its rc */
	struct sl_member *members;
};

#define MAX_BATCH 32

struct sl_conn {
	struct bc_conn base;
	struct sl_state *state;
	struct sl_handle own;
	struct sl_handle *h; /* &own, or the state's writer in a write transaction */
	enum bc_tx_mode mode;
	int holds_writer;
};

struct sl_rows {
	struct bc_rows base;
	struct sl_conn *c;
	sqlite3_stmt *st;
	struct sl_stmt *slot; /* NULL: not cached, finalized with the result */
	int on_row;
	/* the last step returned DONE or an error: stepping again would rerun it */
	int done;
	int err;
};

static const uint8_t empty_blob[1];

/* The one adapter from SQLite's result codes to ours. */
static int sl_err(sqlite3 *db, int src, const char *what)
{
	bc_store_set_errmsg("sqlite: %s: %s", what,
	                    db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(src));
	switch (src & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED: return BC_ERR_BUSY;
	case SQLITE_CONSTRAINT:
		if (src == SQLITE_CONSTRAINT_UNIQUE || src == SQLITE_CONSTRAINT_PRIMARYKEY)
			return BC_ERR_CONFLICT;
		return BC_ERR_DB;
	case SQLITE_NOMEM: return BC_ERR_NOMEM;
	case SQLITE_TOOBIG: return BC_ERR_LIMIT;
	/* the disk is full: what failed was rolled back; retry once space is freed */
	case SQLITE_FULL: return BC_ERR_UNAVAILABLE;
	default: return BC_ERR_DB;
	}
}

static int sl_invalid(const char *msg)
{
	bc_store_set_errmsg("sqlite: %s", msg);
	return BC_ERR_INVALID;
}

/* ---- handles ---- */

static void handle_close(struct sl_handle *h)
{
	if (h == NULL)
		return;
	for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
		sqlite3_finalize(h->cache[i].st);
		free(h->cache[i].key);
		h->cache[i] = (struct sl_stmt){0};
	}
	for (size_t i = 0; i < CTL_N; i++) {
		sqlite3_finalize(h->ctl[i]);
		h->ctl[i] = NULL;
	}
	/* _v2: a statement a leaked result still holds keeps the handle alive */
	sqlite3_close_v2(h->db);
	h->db = NULL;
}

/* One of the transaction statements on h, prepared on its first use. */
static int ctl_run(struct sl_handle *h, enum sl_ctl which, const char *what)
{
	int src;

	if (h->ctl[which] == NULL &&
	    (src = sqlite3_prepare_v3(h->db, ctl_sql[which], -1, SQLITE_PREPARE_PERSISTENT,
	                              &h->ctl[which], NULL)) != SQLITE_OK)
		return sl_err(h->db, src, what);
	src = sqlite3_step(h->ctl[which]);
	if (src != SQLITE_DONE) {
		int rc = sl_err(h->db, src, what);
		sqlite3_reset(h->ctl[which]);
		return rc;
	}
	sqlite3_reset(h->ctl[which]);
	return 0;
}

static int sl_set_wal(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	const char *mode;
	int src, rc = 0;

	if ((src = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL)) != SQLITE_OK) {
		rc = sl_err(db, src, "journal_mode");
		goto out;
	}
	if ((src = sqlite3_step(st)) != SQLITE_ROW) {
		rc = sl_err(db, src, "journal_mode");
		goto out;
	}
	mode = (const char *)sqlite3_column_text(st, 0);
	if (mode == NULL || strcasecmp(mode, "wal") != 0) {
		bc_store_set_errmsg("sqlite: the database cannot use WAL mode (it is in %s mode)",
		                    mode != NULL ? mode : "an unknown");
		rc = BC_ERR_DB;
	}
out:
	sqlite3_finalize(st);
	return rc;
}

/* PostgreSQL's decode(text, 'hex') and encode(bytea, 'hex') on SQLite, so that one
 * migration (008's certificate DER from hex to bytes) and its tests read the same on
 * both engines. Any other format, or text that is not hex, is an error, as there. */
static int sl_hex_format(sqlite3_context *ctx, sqlite3_value *fmt)
{
	const char *f = (const char *)sqlite3_value_text(fmt);

	if (f != NULL && strcmp(f, "hex") == 0)
		return 1;
	sqlite3_result_error(ctx, "encode and decode know only the format 'hex'", -1);
	return 0;
}

static void sl_decode(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *s;
	uint8_t *out = NULL;
	size_t len = 0;
	int rc;

	(void)argc;
	if (!sl_hex_format(ctx, argv[1]) || sqlite3_value_type(argv[0]) == SQLITE_NULL)
		return;
	s = (const char *)sqlite3_value_text(argv[0]);
	rc = s != NULL ? bc_hex_decode(s, (size_t)sqlite3_value_bytes(argv[0]), &out, &len)
	               : BC_ERR_NOMEM;
	if (rc == BC_ERR_NOMEM)
		sqlite3_result_error_nomem(ctx);
	else if (rc != 0)
		sqlite3_result_error(ctx, "decode: not hex", -1);
	else
		sqlite3_result_blob64(ctx, out, len, free);
}

static void sl_encode(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const void *b;
	char *hex;

	(void)argc;
	if (!sl_hex_format(ctx, argv[1]) || sqlite3_value_type(argv[0]) == SQLITE_NULL)
		return;
	b = sqlite3_value_blob(argv[0]);
	if ((hex = bc_hex_encode(b, (size_t)sqlite3_value_bytes(argv[0]))) == NULL)
		sqlite3_result_error_nomem(ctx);
	else
		sqlite3_result_text64(ctx, hex, strlen(hex), free, SQLITE_UTF8);
}

static int sl_functions(sqlite3 *db)
{
	const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
	int src;

	if ((src = sqlite3_create_function(db, "decode", 2, flags, NULL, sl_decode, NULL, NULL)) !=
	        SQLITE_OK ||
	    (src = sqlite3_create_function(db, "encode", 2, flags, NULL, sl_encode, NULL, NULL)) !=
	        SQLITE_OK)
		return sl_err(db, src, "create_function");
	return 0;
}

static int sl_configure(sqlite3 *db)
{
	int src, rc;

	sqlite3_extended_result_codes(db, 1);
	/* first, so that the journal mode change below waits for other processes */
	if ((src = sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS)) != SQLITE_OK)
		return sl_err(db, src, "busy_timeout");
	/* no writable_schema or similar ways to corrupt the file through SQL */
	if ((src = sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL)) != SQLITE_OK)
		return sl_err(db, src, "defensive");
	if ((rc = sl_set_wal(db)) != 0)
		return rc;
	/* temp_store=MEMORY: every write transaction runs in a savepoint of a shared batch
	 * (group commit), and a savepoint keeps the pages it changes in a statement journal.
	 * As files those cost a create, an unlink and two pwrites per page, about half the
	 * write syscalls of a join; in memory they are bounded by the pages one batch
	 * touches. */
	if ((src = sqlite3_exec(db,
	                        "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; "
	                        "PRAGMA temp_store=MEMORY",
	                        NULL, NULL, NULL)) != SQLITE_OK)
		return sl_err(db, src, "pragma");
	return sl_functions(db);
}

/* On the "bc-wal" VFS, which gathers a commit's WAL frames into one write: sound with
 * the synchronous=FULL that sl_configure sets (sqlite_vfs.h). */
static int handle_open(const char *path, struct sl_handle *h)
{
	int src, rc;

	h->db = NULL;
	if (bc_sqlite_vfs_register() != 0) {
		bc_store_set_errmsg("sqlite: cannot register the %s VFS", BC_SQLITE_VFS_NAME);
		return BC_ERR_INTERNAL;
	}
	src = sqlite3_open_v2(path, &h->db,
	                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	                      BC_SQLITE_VFS_NAME);
	if (src != SQLITE_OK)
		rc = sl_err(h->db, src, "open");
	else
		rc = sl_configure(h->db);
	if (rc != 0)
		handle_close(h);
	return rc;
}

/* ---- the store-wide state and its writer lock ---- */

static void sl_close(void *state)
{
	struct sl_state *st = state;

	if (st == NULL)
		return;
	if (st->writer != NULL) {
		handle_close(st->writer);
		free(st->writer);
	}
	pthread_cond_destroy(&st->cv);
	pthread_mutex_destroy(&st->mu);
	free(st->path);
	free(st);
}

/* The file is made here, mode 0600, so that it is private from the start; SQLite
 * gives the -wal and -shm files the mode of the database. */
static int sl_create_file(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		bc_store_set_errmsg("cannot open the database %s: %s", path, strerror(errno));
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s", bc_store_errmsg());
		return BC_ERR_IO;
	}
	close(fd);
	return 0;
}

/* Before SQLite's first use in the process: no memory statistics, which SQLite keeps
 * under a global mutex taken on every allocation (nothing here reads them). If SQLite
 * was already initialized, the call is refused and nothing changes. */
static pthread_once_t sl_config_once = PTHREAD_ONCE_INIT;

static void sl_config(void)
{
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static int sl_open(const char *target, void **state, char *err, size_t errlen)
{
	struct sl_state *st = NULL;
	int rc;

	*state = NULL;
	pthread_once(&sl_config_once, sl_config);
	if ((rc = sl_create_file(target, err, errlen)) != 0)
		return rc;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return BC_ERR_NOMEM;
	if ((st->path = strdup(target)) == NULL) {
		free(st);
		return BC_ERR_NOMEM;
	}
	if (pthread_mutex_init(&st->mu, NULL) != 0 || bc_store_cond_init(&st->cv) != 0) {
		/* mu is left behind if only cv failed: not worth a second path */
		free(st->path);
		free(st);
		return BC_ERR_INTERNAL;
	}
	*state = st;
	return 0;
}

static int writer_lock(struct sl_state *st)
{
	struct timespec deadline;
	int wrc = 0, rc = 0;

	bc_store_deadline(&deadline, BUSY_TIMEOUT_MS);
	pthread_mutex_lock(&st->mu);
	st->waiting++;
	while (st->writing && wrc == 0)
		wrc = pthread_cond_timedwait(&st->cv, &st->mu, &deadline);
	st->waiting--;
	if (st->writing) {
		bc_store_set_errmsg("sqlite: another write transaction held the database for %d ms",
		                    BUSY_TIMEOUT_MS);
		rc = BC_ERR_BUSY;
	} else {
		st->writing = 1;
	}
	pthread_mutex_unlock(&st->mu);
	return rc;
}

/* The end of a write transaction's turn on the writer handle. member (NULL for a
 * transaction rolled back, whose work is no longer in the batch) joins the batch.
 * With a writer waiting and room in the batch, the turn passes to it and this waits
 * for the batch's end; otherwise this commits the batch. Returns the batch's result
 * for a member, 0 otherwise. Called with st->writing held by this thread. */
static int writer_finish(struct sl_conn *c, struct sl_member *member)
{
	struct sl_state *st = c->state;
	struct sl_handle *w = st->writer;
	struct sl_member *list, *next;
	int rc = 0;

	c->h = &c->own;
	c->holds_writer = 0;
	/* a member that cannot wait for the batch (no semaphore) commits it itself */
	int can_pass = 1;

	if (member != NULL) {
		*member = (struct sl_member){0};
		can_pass = sem_init(&member->sem, 0, 0) == 0;
	}
	pthread_mutex_lock(&st->mu);
	if (member != NULL) {
		member->next = st->members;
		st->members = member;
		st->batch_members++;
	}
	if (can_pass && st->batch_open && !st->batch_broken && st->waiting > 0 &&
	    st->batch_members < MAX_BATCH) {
		st->writing = 0;
		pthread_mutex_unlock(&st->mu);
		pthread_cond_signal(&st->cv);
		if (member == NULL)
			return 0;
		while (sem_wait(&member->sem) != 0 && errno == EINTR)
			;
		rc = member->rc;
		sem_destroy(&member->sem);
		return rc;
	}
	pthread_mutex_unlock(&st->mu);
	/* the turn is still this thread's: the commit runs without the mutex held */
	if (st->batch_broken) {
		rc = st->batch_broken;
	} else if (st->batch_open) {
		rc = ctl_run(w, CTL_COMMIT, "commit");
	}
	if (!sqlite3_get_autocommit(w->db)) {
		/* a failed COMMIT may leave the transaction open: nothing of it stays */
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", bc_store_errmsg());
		(void)sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
		bc_store_set_errmsg("%s", msg);
	}
	pthread_mutex_lock(&st->mu);
	list = st->members;
	st->members = NULL;
	st->batch_members = 0;
	st->batch_open = 0;
	st->batch_broken = 0;
	st->writing = 0;
	pthread_mutex_unlock(&st->mu);
	pthread_cond_signal(&st->cv);
	/* a member's frame may be gone once it is posted: its next is read first */
	for (struct sl_member *m = list; m != NULL; m = next) {
		next = m->next;
		m->rc = rc;
		if (m != member)
			sem_post(&m->sem);
	}
	if (member != NULL && can_pass)
		sem_destroy(&member->sem);
	return rc;
}

/* ---- connections ---- */

static void sl_disconnect(struct bc_conn *bc)
{
	struct sl_conn *c = (struct sl_conn *)bc;

	if (c == NULL)
		return;
	if (c->holds_writer)
		(void)writer_finish(c, NULL);
	handle_close(&c->own);
	free(c);
}

static int sl_connect(void *state, struct bc_conn **out)
{
	struct sl_state *st = state;
	struct sl_conn *c;
	int rc;

	*out = NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return BC_ERR_NOMEM;
	c->base.eng = &bc_engine_sqlite;
	c->state = st;
	c->h = &c->own;
	if ((rc = handle_open(st->path, &c->own)) != 0) {
		free(c);
		return rc;
	}
	*out = &c->base;
	return 0;
}

/* ---- transactions ---- */

static int sl_run(struct sl_conn *c, const char *sql, const char *what)
{
	int src;

	if ((src = sqlite3_exec(c->h->db, sql, NULL, NULL, NULL)) != SQLITE_OK)
		return sl_err(c->h->db, src, what);
	return 0;
}

/* A write transaction: the writer's turn, the batch begun if none is open, and a
 * savepoint of its own in it. */
static int begin_write(struct sl_conn *c)
{
	struct sl_state *st = c->state;
	int rc;

	if ((rc = writer_lock(st)) != 0)
		return rc;
	c->holds_writer = 1;
	if (st->writer == NULL) {
		struct sl_handle *w = calloc(1, sizeof(*w));
		if (w == NULL || (rc = handle_open(st->path, w)) != 0) {
			free(w);
			(void)writer_finish(c, NULL);
			return rc != 0 ? rc : BC_ERR_NOMEM;
		}
		st->writer = w;
	}
	c->h = st->writer;
	if (!st->batch_open) {
		if ((rc = ctl_run(c->h, CTL_BEGIN_IMMEDIATE, "begin")) != 0) {
			(void)writer_finish(c, NULL);
			return rc;
		}
		st->batch_open = 1;
	}
	if ((rc = ctl_run(c->h, CTL_SAVEPOINT, "begin")) != 0) {
		if (sqlite3_get_autocommit(st->writer->db))
			st->batch_broken = rc;
		(void)writer_finish(c, NULL);
	}
	return rc;
}

static int sl_begin(struct bc_conn *bc, enum bc_tx_mode mode)
{
	struct sl_conn *c = (struct sl_conn *)bc;

	c->mode = mode;
	switch (mode) {
	case BC_TX_READ: return ctl_run(c->h, CTL_BEGIN, "begin");
	case BC_TX_WRITE: return begin_write(c);
	default: return sl_invalid("unknown transaction mode");
	}
}

static int sl_rollback(struct bc_conn *bc)
{
	struct sl_conn *c = (struct sl_conn *)bc;
	struct sl_state *st = c->state;
	int rc = 0;

	if (!c->holds_writer) {
		/* SQLite ends the transaction itself on some errors */
		if (!sqlite3_get_autocommit(c->h->db))
			rc = sl_run(c, "ROLLBACK", "rollback");
		return rc;
	}
	/* SQLite ended the whole batch (an I/O error, a full disk): the other members'
	 * work went with it, and the batch fails for them too */
	if (sqlite3_get_autocommit(c->h->db)) {
		if (st->batch_broken == 0)
			st->batch_broken = BC_ERR_DB;
	} else if ((rc = sl_run(c, "ROLLBACK TO bc_tx", "rollback")) != 0 ||
	           (rc = sl_run(c, "RELEASE bc_tx", "rollback")) != 0) {
		st->batch_broken = rc;
	}
	(void)writer_finish(c, NULL);
	return rc;
}

static int sl_commit(struct bc_conn *bc)
{
	struct sl_conn *c = (struct sl_conn *)bc;
	struct sl_member me;
	int rc;

	if (!c->holds_writer) {
		if ((rc = ctl_run(c->h, CTL_COMMIT, "commit")) != 0 &&
		    !sqlite3_get_autocommit(c->h->db))
			(void)sl_run(c, "ROLLBACK", "rollback");
		return rc;
	}
	if ((rc = ctl_run(c->h, CTL_RELEASE, "commit")) != 0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", bc_store_errmsg());
		(void)sl_rollback(bc);
		bc_store_set_errmsg("%s", msg);
		return rc;
	}
	return writer_finish(c, &me);
}

static int sl_reusable(struct bc_conn *bc)
{
	struct sl_conn *c = (struct sl_conn *)bc;

	return sqlite3_get_autocommit(c->own.db) && !c->holds_writer;
}

static int sl_now_ms(struct bc_conn *bc, int64_t *out)
{
	*out = bc_now_ms();
	return 0;
}

/* ---- the statement cache ---- */

/* FNV-1a: only to skip most string comparisons */
static uint64_t sql_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

/* Prepares sql without a trailing FOR UPDATE, refusing anything but exactly one
 * statement. */
static int stmt_prepare(struct sl_conn *c, const char *sql, unsigned flags, sqlite3_stmt **out)
{
	size_t len = bc_sql_strip_for_update(sql);
	const char *tail = NULL;
	int src;

	*out = NULL;
	if (len > INT_MAX)
		return sl_invalid("SQL text too long");
	if ((src = sqlite3_prepare_v3(c->h->db, sql, (int)len, flags, out, &tail)) != SQLITE_OK)
		return sl_err(c->h->db, src, "prepare");
	if (*out == NULL)
		return sl_invalid("no statement in the SQL");
	if (tail != NULL && !bc_sql_is_blank(tail, len - (size_t)(tail - sql))) {
		sqlite3_finalize(*out);
		*out = NULL;
		return sl_invalid("more than one statement in the SQL");
	}
	return 0;
}

/* An empty slot, else the least recently used one no result holds; NULL if all
 * are held. */
static struct sl_stmt *stmt_victim(struct sl_conn *c)
{
	struct sl_stmt *v = NULL, *e;

	for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
		e = &c->h->cache[i];
		if (e->in_use)
			continue;
		if (e->key == NULL)
			return e;
		if (v == NULL || e->used < v->used)
			v = e;
	}
	return v;
}

static struct sl_stmt *stmt_find(struct sl_conn *c, const char *sql, uint64_t h)
{
	for (size_t i = 0; i < STMT_CACHE_SIZE; i++)
		if (c->h->cache[i].key != NULL && c->h->cache[i].hash == h &&
		    strcmp(c->h->cache[i].key, sql) == 0)
			return &c->h->cache[i];
	return NULL;
}

/* A prepared statement for sql: a cached one (*slot set) or, when the cache cannot
 * hold it, a private one (*slot NULL). Give it back with stmt_put(). */
static int stmt_get(struct sl_conn *c, const char *sql, sqlite3_stmt **out, struct sl_stmt **slot)
{
	uint64_t h = sql_hash(sql);
	struct sl_stmt *e = stmt_find(c, sql, h);
	char *key = NULL;
	int rc;

	*out = NULL;
	*slot = NULL;
	if (e != NULL && !e->in_use) {
		e->in_use = 1;
		e->used = ++c->h->tick;
		*out = e->st;
		*slot = e;
		return 0;
	}
	/* the same query open twice at once gets a private copy */
	if (e != NULL || (e = stmt_victim(c)) == NULL || (key = strdup(sql)) == NULL)
		return stmt_prepare(c, sql, 0, out);
	if ((rc = stmt_prepare(c, sql, SQLITE_PREPARE_PERSISTENT, out)) != 0) {
		free(key);
		return rc;
	}
	sqlite3_finalize(e->st);
	free(e->key);
	*e = (struct sl_stmt){.key = key, .hash = h, .st = *out, .used = ++c->h->tick, .in_use = 1};
	*slot = e;
	return 0;
}

static void stmt_put(sqlite3_stmt *st, struct sl_stmt *slot)
{
	if (st == NULL)
		return;
	if (slot == NULL) {
		sqlite3_finalize(st);
		return;
	}
	/* no copies of the last parameters left behind */
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	slot->in_use = 0;
}

/* ---- parameters ---- */

static int bind_one(struct sl_conn *c, sqlite3_stmt *st, int idx, const bc_param *p)
{
	int src;

	switch (p->type) {
	case BC_P_NULL: src = sqlite3_bind_null(st, idx); break;
	case BC_P_INT: src = sqlite3_bind_int64(st, idx, p->i); break;
	case BC_P_TEXT:
		if (p->p == NULL)
			src = sqlite3_bind_null(st, idx);
		else
			src = sqlite3_bind_text64(st, idx, p->p, strlen(p->p), SQLITE_TRANSIENT,
			                          SQLITE_UTF8);
		break;
	case BC_P_BLOB:
		/* a NULL pointer would bind SQL NULL, not an empty blob */
		if (p->len == 0)
			src = sqlite3_bind_zeroblob(st, idx, 0);
		else if (p->p == NULL)
			return sl_invalid("a blob parameter without bytes");
		else
			src = sqlite3_bind_blob64(st, idx, p->p, p->len, SQLITE_TRANSIENT);
		break;
	default: return sl_invalid("unknown parameter type");
	}
	if (src != SQLITE_OK)
		return sl_err(c->h->db, src, "bind");
	return 0;
}

/* By name, so $N may come in any order and more than once. The SQL must use
 * exactly $1..$n, as PostgreSQL requires. */
static int bind_all(struct sl_conn *c, sqlite3_stmt *st, const bc_param *params, size_t n)
{
	char name[24];
	int idx, rc;

	if ((size_t)sqlite3_bind_parameter_count(st) != n) {
		bc_store_set_errmsg("sqlite: the SQL has %d parameters, %zu given",
		                    sqlite3_bind_parameter_count(st), n);
		return BC_ERR_INVALID;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "$%zu", i + 1);
		if ((idx = sqlite3_bind_parameter_index(st, name)) == 0) {
			bc_store_set_errmsg("sqlite: %s is not in the SQL", name);
			return BC_ERR_INVALID;
		}
		if ((rc = bind_one(c, st, idx, &params[i])) != 0)
			return rc;
	}
	return 0;
}

/* A statement ready to step: cached or private, parameters bound. */
static int stmt_ready(struct sl_conn *c, const char *sql, const bc_param *params, size_t n,
                      sqlite3_stmt **out, struct sl_stmt **slot)
{
	int rc;

	if ((rc = stmt_get(c, sql, out, slot)) != 0)
		return rc;
	/* keeps READ transactions out of the writers' queue (writer_lock) */
	if (c->mode == BC_TX_READ && !sqlite3_stmt_readonly(*out))
		rc = sl_invalid("a statement that writes in a read transaction");
	else
		rc = bind_all(c, *out, params, n);
	if (rc != 0) {
		stmt_put(*out, *slot);
		*out = NULL;
		*slot = NULL;
	}
	return rc;
}

/* ---- statements and results ---- */

static int sl_exec(struct bc_conn *bc, const char *sql, const bc_param *params, size_t n,
                   int64_t *changes)
{
	struct sl_conn *c = (struct sl_conn *)bc;
	sqlite3_stmt *st = NULL;
	struct sl_stmt *slot = NULL;
	int64_t before = sqlite3_total_changes64(c->h->db);
	int src, rc;

	if (changes != NULL)
		*changes = 0;
	if ((rc = stmt_ready(c, sql, params, n, &st, &slot)) != 0)
		goto out;
	while ((src = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (src != SQLITE_DONE) {
		rc = sl_err(c->h->db, src, "exec");
		goto out;
	}
	/* sqlite3_changes() keeps the last INSERT/UPDATE/DELETE's count through
	 * other statements: 0 for a statement that changed nothing */
	if (changes != NULL && sqlite3_total_changes64(c->h->db) != before)
		*changes = sqlite3_changes64(c->h->db);
out:
	stmt_put(st, slot);
	return rc;
}

static int sl_exec_script(struct bc_conn *bc, const char *sql)
{
	return sl_run((struct sl_conn *)bc, sql, "migration");
}

static void sl_rows_free(struct bc_rows *br)
{
	struct sl_rows *r = (struct sl_rows *)br;

	stmt_put(r->st, r->slot);
	free(r);
}

static int sl_query(struct bc_conn *bc, const char *sql, const bc_param *params, size_t n,
                    struct bc_rows **out)
{
	struct sl_conn *c = (struct sl_conn *)bc;
	struct sl_rows *r;
	int rc;

	*out = NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return BC_ERR_NOMEM;
	r->base.eng = &bc_engine_sqlite;
	r->c = c;
	if ((rc = stmt_ready(c, sql, params, n, &r->st, &r->slot)) != 0) {
		free(r);
		return rc;
	}
	*out = &r->base;
	return 0;
}

static int sl_rows_next(struct bc_rows *br)
{
	struct sl_rows *r = (struct sl_rows *)br;
	int src;

	if (r->done)
		return r->err;
	if ((src = sqlite3_step(r->st)) == SQLITE_ROW) {
		r->on_row = 1;
		return 1;
	}
	r->on_row = 0;
	r->done = 1;
	r->err = src == SQLITE_DONE ? 0 : sl_err(r->c->h->db, src, "query");
	return r->err;
}

static int col_ok(struct sl_rows *r, int col)
{
	return r->on_row && col >= 0 && col < sqlite3_data_count(r->st);
}

static int sl_rows_is_null(struct bc_rows *br, int col)
{
	struct sl_rows *r = (struct sl_rows *)br;

	return !col_ok(r, col) || sqlite3_column_type(r->st, col) == SQLITE_NULL;
}

static const char *sl_rows_text(struct bc_rows *br, int col)
{
	struct sl_rows *r = (struct sl_rows *)br;
	const unsigned char *t;

	if (!col_ok(r, col) || (t = sqlite3_column_text(r->st, col)) == NULL)
		return "";
	return (const char *)t;
}

static int64_t sl_rows_int(struct bc_rows *br, int col)
{
	struct sl_rows *r = (struct sl_rows *)br;

	return col_ok(r, col) ? sqlite3_column_int64(r->st, col) : 0;
}

/* NULL for SQL NULL; a valid pointer for an empty blob */
static const uint8_t *sl_rows_blob(struct bc_rows *br, int col, size_t *len)
{
	struct sl_rows *r = (struct sl_rows *)br;
	const uint8_t *p;
	size_t n;

	if (len != NULL)
		*len = 0;
	if (sl_rows_is_null(br, col))
		return NULL;
	p = sqlite3_column_blob(r->st, col);
	n = (size_t)sqlite3_column_bytes(r->st, col);
	if (p == NULL || n == 0)
		return empty_blob;
	if (len != NULL)
		*len = n;
	return p;
}

/* One read transaction over the whole copy (step -1): the copy is the database as of
 * its start, while the server's writers go on in the WAL. to is an existing empty
 * file. */
static int sl_backup(void *state, const char *to)
{
	struct sl_state *st = state;
	struct sl_handle src = {0};
	sqlite3 *dst = NULL;
	sqlite3_backup *b = NULL;
	int src_rc, rc;

	if ((rc = handle_open(st->path, &src)) != 0)
		return rc;
	if ((src_rc = sqlite3_open_v2(to, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
	                              NULL)) != SQLITE_OK) {
		rc = sl_err(dst, src_rc, "backup: open the copy");
		goto out;
	}
	if ((b = sqlite3_backup_init(dst, "main", src.db, "main")) == NULL) {
		rc = sl_err(dst, sqlite3_errcode(dst), "backup");
		goto out;
	}
	/* the busy timeout does not cover a backup step: wait here, as long */
	for (int waited = 0;
	     ((src_rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || src_rc == SQLITE_LOCKED) &&
	     waited < BUSY_TIMEOUT_MS;
	     waited += 10)
		sqlite3_sleep(10);
	if (src_rc != SQLITE_DONE) {
		rc = sl_err(dst, src_rc, "backup");
		goto out;
	}
	rc = 0;
out:
	if (b != NULL && (src_rc = sqlite3_backup_finish(b)) != SQLITE_OK && rc == 0)
		rc = sl_err(dst, src_rc, "backup");
	if (dst != NULL && sqlite3_close(dst) != SQLITE_OK && rc == 0)
		rc = sl_err(NULL, SQLITE_IOERR, "backup: close the copy");
	handle_close(&src);
	return rc;
}

/* The names of the prepared statement: there before the first step. */
static int sl_rows_col(struct bc_rows *br, const char *name)
{
	struct sl_rows *r = (struct sl_rows *)br;
	int n = sqlite3_column_count(r->st);
	const char *c;

	for (int i = 0; i < n; i++)
		if ((c = sqlite3_column_name(r->st, i)) != NULL && strcasecmp(c, name) == 0)
			return i;
	return -1;
}

const struct bc_engine bc_engine_sqlite = {
    .kind = BC_STORE_SQLITE,
    .name = "sqlite",
    .writes_hold_database = 1,
    .open = sl_open,
    .close = sl_close,
    .connect = sl_connect,
    .disconnect = sl_disconnect,
    .begin = sl_begin,
    .commit = sl_commit,
    .rollback = sl_rollback,
    .reusable = sl_reusable,
    .lock_schema = NULL,
    .backup = sl_backup,
    .exec = sl_exec,
    .exec_script = sl_exec_script,
    .query = sl_query,
    .rows_next = sl_rows_next,
    .rows_is_null = sl_rows_is_null,
    .rows_text = sl_rows_text,
    .rows_int = sl_rows_int,
    .rows_blob = sl_rows_blob,
    .rows_free = sl_rows_free,
    .rows_col = sl_rows_col,
    .now_ms = sl_now_ms,
};
