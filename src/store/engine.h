/* The engine interface behind include/bc/store.h: what SQLite (sqlite.c) and
 * PostgreSQL (postgres.c) each provide, and what store.c dispatches to.
 *
 * store.c owns the pool of connections, transactions, URL parsing, migrations and
 * bc_store_run; an engine owns one connection's work and turns its library's errors
 * into BC_ERR_* through one adapter, leaving the library's message with
 * bc_store_set_errmsg() for bc_store_errmsg().
 *
 * A connection is used by one thread at a time: the one whose transaction holds it.
 * Every function returns 0 or a negative BC_ERR_* unless said otherwise. */
#ifndef BC_STORE_ENGINE_H
#define BC_STORE_ENGINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "bc/store.h"

/* The first member of an engine's connection, so store.c can hold any of them. */
struct bc_conn {
	const struct bc_engine *eng;
};

/* The first member of an engine's result: bc_rows_* dispatch through eng. */
struct bc_rows {
	const struct bc_engine *eng;
};

struct bc_engine {
	enum bc_store_engine kind;
	const char *name;

	/* Store-wide state from target (the URL with any "sqlite:" prefix removed;
	 * the whole URL for PostgreSQL). err receives a message on failure. */
	int (*open)(const char *target, void **state, char *err, size_t errlen);
	void (*close)(void *state); /* every connection is already disconnected */

	/* A new connection, ready for begin(). */
	int (*connect)(void *state, struct bc_conn **out);
	void (*disconnect)(struct bc_conn *c);

	/* begin() takes whatever lock mode needs (SQLite: BEGIN IMMEDIATE for a
	 * write); a READ transaction refuses statements that write. commit() and
	 * rollback() end the transaction whatever the result (a failed commit rolls
	 * back). reusable(): 1 when the connection may go back to the pool (no
	 * transaction left open, not broken), 0 to disconnect it. */
	int (*begin)(struct bc_conn *c, enum bc_tx_mode mode);
	int (*commit)(struct bc_conn *c);
	int (*rollback)(struct bc_conn *c);
	int (*reusable)(struct bc_conn *c);

	/* Serializes schema migrations between processes until the transaction ends
	 * (PostgreSQL: an advisory lock). NULL when begin(BC_TX_WRITE) already does
	 * (SQLite: BEGIN IMMEDIATE). */
	int (*lock_schema)(struct bc_conn *c);
	/* 1 when a write transaction already holds the whole database (SQLite: its one
	 * write lock), so row locks taken only for themselves (bc_tx_lock) add nothing
	 * and are not sent. */
	int writes_hold_database;
	/* A consistent copy of the whole database, taken while others use it, into the
	 * existing empty file to. NULL when the engine has none (PostgreSQL: pg_dump). */
	int (*backup)(void *state, const char *to);

	/* One statement with $1..$n parameters, as in store.h. exec_script() runs one
	 * statement of a migration: no parameters, no statement cache. */
	int (*exec)(struct bc_conn *c, const char *sql, const bc_param *params, size_t n,
	            int64_t *changes);
	int (*exec_script)(struct bc_conn *c, const char *sql);
	int (*query)(struct bc_conn *c, const char *sql, const bc_param *params, size_t n,
	             struct bc_rows **out);

	/* As bc_rows_next() and the accessors of store.h; an out-of-range col reads as
	 * NULL. rows_free() accepts only non-NULL results. */
	int (*rows_next)(struct bc_rows *r);
	int (*rows_is_null)(struct bc_rows *r, int col);
	const char *(*rows_text)(struct bc_rows *r, int col);
	int64_t (*rows_int)(struct bc_rows *r, int col);
	const uint8_t *(*rows_blob)(struct bc_rows *r, int col, size_t *len);
	void (*rows_free)(struct bc_rows *r);
	/* The index of the first result column named name (ASCII case-insensitive, no
	 * quote handling), or -1; name is not NULL. */
	int (*rows_col)(struct bc_rows *r, const char *name);

	/* Database time in Unix ms, test clock offset included. */
	int (*now_ms)(struct bc_conn *c, int64_t *out);
};

extern const struct bc_engine bc_engine_sqlite;
/* Without libpq at build time, its open() refuses with BC_ERR_UNSUPPORTED. */
extern const struct bc_engine bc_engine_postgres;

/* Keeps a message for this thread's bc_store_errmsg(); never fails (truncates). */
void bc_store_set_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 1 when the len bytes at s hold only whitespace, ';' and SQL comments (-- to the
 * end of a line, and block comments), 0 otherwise. */
int bc_sql_is_blank(const char *s, size_t len);

/* The length of sql without a trailing "FOR UPDATE" (case-insensitive, surrounded
 * by whitespace, optionally followed by ';' and whitespace): the engines that lock
 * otherwise (SQLite) prepare only that prefix. strlen(sql) when there is none. */
size_t bc_sql_strip_for_update(const char *sql);

/* A pthread_cond_t on CLOCK_MONOTONIC, and a deadline ms from now on that clock,
 * for the timed waits of the pool and of an engine's own locks. */
int bc_store_cond_init(pthread_cond_t *cv);
void bc_store_deadline(struct timespec *ts, long ms);

#endif
