/* The store: one schema, two engines (SQLite, the embedded default; PostgreSQL for
 * several replicas), reached through a small SQL interface so that the queries of
 * JoinService and the admin API are written once.
 *
 * SQL is written in the common dialect of both engines with $1, $2, ... parameters.
 * "FOR UPDATE" at the end of a SELECT locks the rows on PostgreSQL; on SQLite the
 * engine removes it, since a write transaction there (BEGIN IMMEDIATE) already holds
 * the database's only write lock. Times are integers of Unix milliseconds; blobs are
 * bytea/BLOB; booleans are integers 0/1.
 *
 * Errors: BC_ERR_CONFLICT for a unique-constraint violation, BC_ERR_BUSY when a lock
 * could not be taken in time, BC_ERR_RETRY for a serialization failure or deadlock
 * (replay the whole transaction), BC_ERR_UNAVAILABLE when the database is away or
 * its disk is full (SQLITE_FULL, PostgreSQL's disk_full), BC_ERR_DB otherwise; bc_store_errmsg()
 * has the engine's last message for the thread.
 *
 * Threads: a bc_store is shared; each bc_tx belongs to the thread that began it. */
#ifndef BC_STORE_H
#define BC_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

typedef struct bc_store bc_store;
typedef struct bc_tx bc_tx;
typedef struct bc_rows bc_rows;

enum bc_store_engine { BC_STORE_SQLITE = 1, BC_STORE_POSTGRES = 2 };

/* url: "postgres://..." or "postgresql://..." for PostgreSQL; "sqlite:<path>" or a
 * plain path for SQLite (created if missing, WAL, synchronous=FULL, busy timeout).
 * Opening applies the numbered migrations not yet applied, in order, each in its own
 * transaction; a database whose schema is newer than this binary knows is refused
 * (BC_ERR_CONFIG, with a message). err receives a message on failure. */
BC_WUR int bc_store_open(const char *url, bc_store **out, char *err, size_t errlen);
void bc_store_close(bc_store *s);
enum bc_store_engine bc_store_engine(const bc_store *s);
/* As bc_store_open, with flags: BC_STORE_NO_MIGRATE opens without applying any
 * migration or checking the schema's version (for store migrate --check and store
 * backup, which must not change a database a server of another version serves). */
#define BC_STORE_NO_MIGRATE 0x1
BC_WUR int bc_store_open_flags(const char *url, unsigned flags, bc_store **out, char *err,
                               size_t errlen);
/* The highest migration applied. */
int bc_store_schema_version(bc_store *s, int64_t *out);

/* What opening would migrate: *current is the highest version applied (0 for a
 * database without schema_migrations), *latest the highest this binary holds, and
 * fn (may be NULL) is called for each migration not applied yet, in order. Reads
 * only. BC_ERR_CONFIG, with err naming both versions, for a schema newer than this
 * binary. */
typedef void (*bc_migration_fn)(void *arg, int64_t version, const char *name);
BC_WUR int bc_store_migration_plan(bc_store *s, int64_t *current, int64_t *latest,
                                   bc_migration_fn fn, void *arg, char *err, size_t errlen);
/* Applies the migrations not applied yet, as bc_store_open does; fn (may be NULL) is
 * called for each one this call applied. */
BC_WUR int bc_store_migrate(bc_store *s, bc_migration_fn fn, void *arg, char *err, size_t errlen);

/* A consistent copy of a SQLite store, taken while others read and write it
 * (SQLite's online backup API, one read transaction), into a new file at path: mode
 * 0600, fsynced with its directory, in place only once whole (a temporary file,
 * then link(), or rename() with force). BC_ERR_CONFLICT when path exists and force
 * is 0; BC_ERR_UNSUPPORTED for PostgreSQL (use pg_dump or pg_basebackup);
 * BC_ERR_IO / BC_ERR_DB otherwise, with err. */
BC_WUR int bc_store_backup(bc_store *s, const char *path, int force, char *err, size_t errlen);

/* The store logs "database unavailable" (an engine's BC_ERR_UNAVAILABLE: PostgreSQL
 * away, a full disk) at most once per this many ms, with the count of failures since
 * the last line; callers need not log each failed request. */
#define BC_STORE_UNAVAILABLE_LOG_MS 60000
const char *bc_store_errmsg(void);

enum bc_tx_mode { BC_TX_READ = 0, BC_TX_WRITE = 1 };
BC_WUR int bc_tx_begin(bc_store *s, enum bc_tx_mode mode, bc_tx **out);
BC_WUR int bc_tx_commit(bc_tx *tx); /* frees tx whatever the result */
void bc_tx_rollback(bc_tx *tx);     /* frees tx; NULL is fine */
bc_store *bc_tx_store(bc_tx *tx);
/* Transactions of that mode begun on s since it opened: for metrics and tests. */
uint64_t bc_store_tx_begun(bc_store *s, enum bc_tx_mode mode);
/* Microseconds those transactions took, from the begin (waiting for a connection
 * included) to the commit or rollback, summed: for metrics. */
uint64_t bc_store_tx_us(bc_store *s, enum bc_tx_mode mode);
/* SQL statements (bc_tx_exec, bc_tx_query and the helpers over them) sent on s since
 * it opened, not counting each transaction's begin and commit. */
uint64_t bc_store_statements(bc_store *s);

/* Database time in Unix ms (PostgreSQL clock_timestamp(); SQLite: the process
 * clock), plus the test clock offset in a BC_TESTING build. Read once per call. */
int64_t bc_tx_now_ms(bc_tx *tx);

enum bc_param_type { BC_P_NULL = 0, BC_P_TEXT, BC_P_INT, BC_P_BLOB };
typedef struct {
	enum bc_param_type type;
	const void *p; /* TEXT (NUL-terminated) or BLOB */
	size_t len;    /* BLOB */
	int64_t i;     /* INT */
} bc_param;
/* A NULL string binds SQL NULL. */
static inline bc_param bc_param_text(const char *s)
{
	return (bc_param){.type = s ? BC_P_TEXT : BC_P_NULL, .p = s};
}
#define BC_TEXT(s)    bc_param_text(s)
#define BC_INT(v)     ((bc_param){.type = BC_P_INT, .i = (v)})
#define BC_BLOB(b, n) ((bc_param){.type = BC_P_BLOB, .p = (b), .len = (n)})
#define BC_NULL       ((bc_param){.type = BC_P_NULL})

/* A statement without rows; *changes (may be NULL) receives the rows affected. */
BC_WUR int bc_tx_exec(bc_tx *tx, const char *sql, const bc_param *params, size_t n,
                      int64_t *changes);
/* A query; step through the rows with bc_rows_next(). Free the result before the
 * transaction ends. */
BC_WUR int bc_tx_query(bc_tx *tx, const char *sql, const bc_param *params, size_t n, bc_rows **out);
/* A SELECT ... FOR UPDATE run only for the row locks it takes, its rows not read. On
 * SQLite it is not run at all: a write transaction there already holds the database's
 * only write lock, and the statement would only cost its time. */
BC_WUR int bc_tx_lock(bc_tx *tx, const char *sql, const bc_param *params, size_t n);
/* 1: a row is ready; 0: no more rows; < 0: an error. */
int bc_rows_next(bc_rows *r);
int bc_rows_is_null(bc_rows *r, int col);
const char *bc_rows_text(bc_rows *r, int col); /* "" for NULL; valid until the next step */
int64_t bc_rows_int(bc_rows *r, int col);      /* 0 for NULL */
const uint8_t *bc_rows_blob(bc_rows *r, int col, size_t *len);
void bc_rows_free(bc_rows *r);

/* Columns by name. A result column's name is its AS alias, or for a plain column
 * reference the column's own name ("c.der" is "der"); write AS for anything
 * else, and for two columns of the same name. name is matched ASCII case-insensitively
 * and as written: no quotes are removed or case folded, on either engine.
 * bc_rows_col() is the index of the first column of that name, or -1 for none (or a
 * NULL r or name); it holds before the first bc_rows_next() and on every row. The
 * _named readers are the accessors above at that index: an unknown name reads as
 * NULL, the way an out-of-range column does. */
int bc_rows_col(bc_rows *r, const char *name);
int bc_rows_null_named(bc_rows *r, const char *name);
const char *bc_rows_text_named(bc_rows *r, const char *name);
int64_t bc_rows_int_named(bc_rows *r, const char *name);
const uint8_t *bc_rows_blob_named(bc_rows *r, const char *name, size_t *len);

/* One row, one column helpers: BC_ERR_NOT_FOUND when the query returns no row. */
BC_WUR int bc_tx_query_int(bc_tx *tx, const char *sql, const bc_param *params, size_t n,
                           int64_t *out);
/* malloc'd copy */
BC_WUR int bc_tx_query_text(bc_tx *tx, const char *sql, const bc_param *params, size_t n,
                            char **out);

/* Runs fn in a transaction, replaying it (up to 5 times, with a short backoff) when
 * it returns BC_ERR_RETRY or BC_ERR_BUSY. fn must not commit or roll back: 0 commits,
 * anything else rolls back and is returned. */
typedef int (*bc_tx_fn)(bc_tx *tx, void *arg);
BC_WUR int bc_store_run(bc_store *s, enum bc_tx_mode mode, bc_tx_fn fn, void *arg);

/* New ids: prefix + "_" + 26 lower-case base32 characters (a ULID: 48-bit ms time,
 * 80 random bits), into out[prefix len + 28]. */
BC_WUR int bc_new_id(const char *prefix, char *out, size_t outlen);

/* ---- retention (prune.c) ---- */

/* A certificate is kept this long past its notAfter: the longest grace x509pop may
 * be configured with ([attestors.x509pop] grace_seconds), so that no certificate an
 * x509pop join could still accept is ever deleted. */
#define BC_CERT_GRACE_MAX_MS (90LL * 24 * 3600 * 1000)

struct bc_prune_opts {
	int64_t batch;              /* rows per transaction; 0: 5000 */
	int64_t event_retention_ms; /* events older than this go; 0: keep every event */
	int64_t audit_retention_ms; /* audit rows older than this go; 0: keep every row */
};
struct bc_prune_counts {
	int64_t attestation_uses; /* expires_at set and past */
	int64_t join_tokens;      /* expired, spent (uses_left = 0) or revoked */
	int64_t join_requests;    /* denied or used (decided and done), or expired */
	int64_t events;           /* older than the retention */
	int64_t node_certs;       /* expired BC_CERT_GRACE_MAX_MS ago, not a node's current */
	int64_t audit;            /* older than the audit retention */
};
/* Deletes what retention allows (docs/server.md, "Retention"), at database time, in transactions of
 * at most o->batch rows each (replayed on BC_ERR_RETRY/BUSY), until none is left. *out counts what
 * was removed, including by batches committed before an error: a failed prune leaves only whole
 * batches removed and can simply run again. */
BC_WUR int bc_store_prune(bc_store *s, const struct bc_prune_opts *o, struct bc_prune_counts *out);

/* ---- moving a store (copy.c) ---- */

#define BC_COPY_MAX_TABLES 32
struct bc_copy_report {
	size_t n_tables;
	struct {
		const char *table; /* static */
		int64_t rows;
	} tables[BC_COPY_MAX_TABLES];
};
/* Copies every table of from into to, in one write transaction on to (all or
 * nothing), with multi-row INSERTs of at most batch rows (0: 500). Both stores are
 * open, hence migrated; their schema versions must be equal (BC_ERR_CONFIG
 * otherwise). Refused with BC_ERR_CONFLICT, "target is not empty", when any table
 * of to other than schema_migrations holds a row, and with BC_ERR_CONFIG when from
 * holds a table this binary does not know how to copy. schema_migrations itself is
 * not copied: the target's own rows say the same versions. err receives one line
 * on failure. */
BC_WUR int bc_store_copy(bc_store *from, bc_store *to, int64_t batch, struct bc_copy_report *out,
                         char *err, size_t errlen);

#endif
