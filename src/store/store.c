/* The store's engine-neutral half: URL parsing, the pool of connections,
 * transactions and results dispatched to an engine (engine.h), the one-value
 * helpers, bc_store_run, and migrations. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/files.h"
#include "bc/log.h"
#include "bc/store.h"
#include "store/engine.h"
#include "store/migrations.h"

#define POOL_MAX 16
/* Longer than any transaction should last: running out means one was leaked. */
#define POOL_WAIT_MS   30000
#define RUN_REPLAYS    5
#define RUN_BACKOFF_US 2000L

struct bc_store {
	const struct bc_engine *eng;
	void *state; /* the engine's, from eng->open() */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* signalled when a connection is returned or closed */
	int sync_ready;    /* mu and cv were initialised */
	struct bc_conn *idle[POOL_MAX];
	size_t nidle;
	size_t nopen;                    /* idle or held by a transaction */
	atomic_uint_fast64_t begun[2];   /* transactions begun, by mode */
	atomic_uint_fast64_t statements; /* bc_tx_exec and bc_tx_query calls sent */
	atomic_uint_fast64_t tx_us[2];   /* microseconds from begin to commit/rollback */
	/* "database unavailable" lines, at most one per BC_STORE_UNAVAILABLE_LOG_MS: under mu */
	int64_t unavail_logged_ms; /* CLOCK_MONOTONIC ms of the last line; 0: none yet */
	uint64_t unavail_since;    /* failures since that line */
};

struct bc_tx {
	bc_store *s;
	struct bc_conn *c;
	enum bc_tx_mode mode;
	uint64_t t0_us; /* CLOCK_MONOTONIC at the begin */
	int failed;     /* an error that must keep the transaction from committing */
};

static _Thread_local char tls_errmsg[512];

void bc_store_set_errmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tls_errmsg, sizeof(tls_errmsg), fmt, ap);
	va_end(ap);
}

const char *bc_store_errmsg(void)
{
	return tls_errmsg;
}

int bc_store_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t attr;
	int rc = BC_ERR_INTERNAL;

	if (pthread_condattr_init(&attr) != 0)
		return BC_ERR_INTERNAL;
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0)
		goto out;
	if (pthread_cond_init(cv, &attr) != 0)
		goto out;
	rc = 0;
out:
	pthread_condattr_destroy(&attr);
	return rc;
}

void bc_store_deadline(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* ---- SQL text helpers shared by the engines ---- */

int bc_sql_is_blank(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		if (isspace((unsigned char)s[i]) || s[i] == ';') {
			i++;
		} else if (s[i] == '-' && i + 1 < len && s[i + 1] == '-') {
			while (i < len && s[i] != '\n')
				i++;
		} else if (s[i] == '/' && i + 1 < len && s[i + 1] == '*') {
			for (i += 2; i < len && !(s[i] == '*' && i + 1 < len && s[i + 1] == '/');
			     i++)
				;
			i += 2;
		} else {
			return 0;
		}
	}
	return 1;
}

/* The index just past the word ending at end, when the bytes before end are word
 * (case-insensitive) preceded by at least one whitespace; 0 otherwise. */
static size_t word_before(const char *sql, size_t end, const char *word)
{
	size_t n = strlen(word);

	if (end < n + 1 || strncasecmp(sql + end - n, word, n) != 0 ||
	    !isspace((unsigned char)sql[end - n - 1]))
		return 0;
	return end - n;
}

static size_t skip_space_back(const char *sql, size_t end)
{
	while (end > 0 && isspace((unsigned char)sql[end - 1]))
		end--;
	return end;
}

size_t bc_sql_strip_for_update(const char *sql)
{
	size_t len = strlen(sql), e;

	e = skip_space_back(sql, len);
	if (e > 0 && sql[e - 1] == ';')
		e = skip_space_back(sql, e - 1);
	if ((e = word_before(sql, e, "update")) == 0)
		return len;
	if ((e = word_before(sql, skip_space_back(sql, e), "for")) == 0)
		return len;
	return skip_space_back(sql, e);
}

/* ---- the pool ---- */

static int pool_get(bc_store *s, struct bc_conn **out)
{
	struct timespec deadline;
	int wrc = 0, rc;

	*out = NULL;
	bc_store_deadline(&deadline, POOL_WAIT_MS);
	pthread_mutex_lock(&s->mu);
	while (s->nidle == 0 && s->nopen >= POOL_MAX && wrc == 0)
		wrc = pthread_cond_timedwait(&s->cv, &s->mu, &deadline);
	if (s->nidle > 0) {
		*out = s->idle[--s->nidle];
		pthread_mutex_unlock(&s->mu);
		return 0;
	}
	if (s->nopen >= POOL_MAX) {
		pthread_mutex_unlock(&s->mu);
		bc_store_set_errmsg("all %d database connections stayed busy for %d ms", POOL_MAX,
		                    POOL_WAIT_MS);
		return BC_ERR_BUSY;
	}
	s->nopen++;
	pthread_mutex_unlock(&s->mu);

	/* connecting may take a while (PostgreSQL over the network): not under mu */
	if ((rc = s->eng->connect(s->state, out)) != 0) {
		pthread_mutex_lock(&s->mu);
		s->nopen--;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
	}
	return rc;
}

/* Back to the idle list, or disconnected when the engine says it is unfit. */
static void pool_put(bc_store *s, struct bc_conn *c)
{
	int keep = s->eng->reusable(c);

	if (!keep)
		s->eng->disconnect(c);
	pthread_mutex_lock(&s->mu);
	if (keep)
		s->idle[s->nidle++] = c;
	else
		s->nopen--;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* ---- opening and closing ---- */

static void set_err(char *err, size_t errlen, const char *msg)
{
	bc_store_set_errmsg("%s", msg);
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", msg);
}

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int parse_url(const char *url, const struct bc_engine **eng, const char **target, char *err,
                     size_t errlen)
{
	*eng = NULL;
	*target = NULL;
	if (has_prefix(url, "postgres://") || has_prefix(url, "postgresql://")) {
		/* libpq reads the whole URL (postgres.c) */
		*eng = &bc_engine_postgres;
		*target = url;
		return 0;
	}
	if (has_prefix(url, "sqlite:")) {
		url += strlen("sqlite:");
		/* sqlite:///var/lib/x.db is the path /var/lib/x.db */
		if (has_prefix(url, "//"))
			url += 2;
	} else if (strstr(url, "://") != NULL) {
		set_err(err, errlen,
		        "unknown database URL scheme: use sqlite:<path> or postgres://");
		return BC_ERR_CONFIG;
	}
	if (*url == '\0') {
		set_err(err, errlen, "no SQLite database path in the database URL");
		return BC_ERR_CONFIG;
	}
	/* every connection of the pool must reach the same database: a file */
	if (strcmp(url, ":memory:") == 0 || has_prefix(url, "file:")) {
		set_err(err, errlen, "the SQLite database must be a plain file path");
		return BC_ERR_CONFIG;
	}
	*eng = &bc_engine_sqlite;
	*target = url;
	return 0;
}

static int store_new(const struct bc_engine *eng, bc_store **out)
{
	bc_store *s;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return BC_ERR_NOMEM;
	s->eng = eng;
	if (pthread_mutex_init(&s->mu, NULL) != 0) {
		free(s);
		return BC_ERR_INTERNAL;
	}
	if (bc_store_cond_init(&s->cv) != 0) {
		pthread_mutex_destroy(&s->mu);
		free(s);
		return BC_ERR_INTERNAL;
	}
	s->sync_ready = 1;
	*out = s;
	return 0;
}

static int migrate(bc_store *s, bc_migration_fn fn, void *arg, char *err, size_t errlen);

int bc_store_open(const char *url, bc_store **out, char *err, size_t errlen)
{
	return bc_store_open_flags(url, 0, out, err, errlen);
}

int bc_store_open_flags(const char *url, unsigned flags, bc_store **out, char *err, size_t errlen)
{
	const struct bc_engine *eng = NULL;
	const char *target = NULL;
	bc_store *s = NULL;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	tls_errmsg[0] = '\0';
	if (out == NULL || url == NULL) {
		set_err(err, errlen, "no database URL");
		return BC_ERR_INVALID;
	}
	*out = NULL;
	if ((rc = parse_url(url, &eng, &target, err, errlen)) != 0)
		goto out;
	if ((rc = store_new(eng, &s)) != 0)
		goto out;
	if ((rc = eng->open(target, &s->state, err, errlen)) != 0)
		goto out;
	if (!(flags & BC_STORE_NO_MIGRATE) && (rc = migrate(s, NULL, NULL, err, errlen)) != 0)
		goto out;
	*out = s;
	s = NULL;
out:
	if (rc != 0 && err != NULL && errlen > 0 && err[0] == '\0')
		snprintf(err, errlen, "%s", tls_errmsg[0] != '\0' ? tls_errmsg : bc_err_str(rc));
	bc_store_close(s);
	return rc;
}

void bc_store_close(bc_store *s)
{
	if (s == NULL)
		return;
	if (s->nopen != s->nidle) {
		/* a transaction still holds a connection and s: leak rather than free
		 * what it will touch */
		bc_log(BC_LOG_ERROR, "store closed with transactions open", NULL);
		return;
	}
	while (s->nidle > 0)
		s->eng->disconnect(s->idle[--s->nidle]);
	if (s->state != NULL)
		s->eng->close(s->state);
	if (s->sync_ready) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
	}
	free(s);
}

enum bc_store_engine bc_store_engine(const bc_store *s)
{
	return s->eng->kind;
}

/* ---- transactions ---- */

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The engine's BC_ERR_UNAVAILABLE said once per interval, with the failures since:
 * a full disk or a database away fails every request, and a line per request
 * would bury the cause (and fill the disk holding the log). */
static int seen(bc_store *s, int rc)
{
	char n[24];
	int64_t now;

	if (rc != BC_ERR_UNAVAILABLE)
		return rc;
	now = (int64_t)(mono_us() / 1000) + 1;
	pthread_mutex_lock(&s->mu);
	s->unavail_since++;
	if (s->unavail_logged_ms != 0 && now - s->unavail_logged_ms < BC_STORE_UNAVAILABLE_LOG_MS) {
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	snprintf(n, sizeof(n), "%" PRIu64, s->unavail_since);
	s->unavail_logged_ms = now;
	s->unavail_since = 0;
	pthread_mutex_unlock(&s->mu);
	bc_log(BC_LOG_ERROR, "database unavailable", "detail", bc_store_errmsg(), "failures", n,
	       "next", "at most one line a minute while it lasts", NULL);
	return rc;
}

uint64_t bc_store_tx_begun(bc_store *s, enum bc_tx_mode mode)
{
	return (mode == BC_TX_READ || mode == BC_TX_WRITE) ? atomic_load(&s->begun[mode]) : 0;
}

/* The transaction's time, from its begin to its end, into the store's sum. */
static void tx_timed(bc_tx *tx)
{
	atomic_fetch_add_explicit(&tx->s->tx_us[tx->mode], mono_us() - tx->t0_us,
	                          memory_order_relaxed);
}

uint64_t bc_store_tx_us(bc_store *s, enum bc_tx_mode mode)
{
	return (mode == BC_TX_READ || mode == BC_TX_WRITE) ? atomic_load(&s->tx_us[mode]) : 0;
}

uint64_t bc_store_statements(bc_store *s)
{
	return s != NULL ? atomic_load(&s->statements) : 0;
}

int bc_tx_begin(bc_store *s, enum bc_tx_mode mode, bc_tx **out)
{
	struct bc_conn *c = NULL;
	bc_tx *tx = NULL;
	int rc;

	if (out == NULL)
		return BC_ERR_INVALID;
	*out = NULL;
	if (s == NULL || (mode != BC_TX_READ && mode != BC_TX_WRITE))
		return BC_ERR_INVALID;
	if ((tx = calloc(1, sizeof(*tx))) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	tx->t0_us = mono_us();
	if ((rc = seen(s, pool_get(s, &c))) != 0)
		goto out;
	if ((rc = seen(s, s->eng->begin(c, mode))) != 0)
		goto out;
	atomic_fetch_add(&s->begun[mode], 1);
	tx->s = s;
	tx->c = c;
	tx->mode = mode;
	c = NULL;
	*out = tx;
	tx = NULL;
out:
	if (c != NULL)
		pool_put(s, c);
	free(tx);
	return rc;
}

int bc_tx_commit(bc_tx *tx)
{
	int rc;

	if (tx == NULL)
		return BC_ERR_INVALID;
	if (tx->failed != 0) {
		rc = tx->failed;
		(void)tx->s->eng->rollback(tx->c);
	} else {
		rc = seen(tx->s, tx->s->eng->commit(tx->c));
	}
	tx_timed(tx);
	pool_put(tx->s, tx->c);
	free(tx);
	return rc;
}

void bc_tx_rollback(bc_tx *tx)
{
	if (tx == NULL)
		return;
	/* a failed rollback leaves the connection unfit, which pool_put sees */
	(void)tx->s->eng->rollback(tx->c);
	tx_timed(tx);
	pool_put(tx->s, tx->c);
	free(tx);
}

bc_store *bc_tx_store(bc_tx *tx)
{
	return tx != NULL ? tx->s : NULL;
}

int64_t bc_tx_now_ms(bc_tx *tx)
{
	int64_t ms = 0;
	int rc;

	if (tx == NULL)
		return bc_now_ms();
	if ((rc = tx->s->eng->now_ms(tx->c, &ms)) != 0) {
		/* the caller gets a usable time but cannot commit what it decided on it */
		tx->failed = rc;
		ms = bc_now_ms();
	}
	return ms;
}

static int check_call(bc_tx *tx, const char *sql, const bc_param *params, size_t n)
{
	if (tx == NULL || sql == NULL || (params == NULL && n > 0)) {
		bc_store_set_errmsg("invalid arguments to a store call");
		return BC_ERR_INVALID;
	}
	return 0;
}

int bc_tx_exec(bc_tx *tx, const char *sql, const bc_param *params, size_t n, int64_t *changes)
{
	int rc;

	if (changes != NULL)
		*changes = 0;
	if ((rc = check_call(tx, sql, params, n)) != 0)
		return rc;
	atomic_fetch_add_explicit(&tx->s->statements, 1, memory_order_relaxed);
	return seen(tx->s, tx->s->eng->exec(tx->c, sql, params, n, changes));
}

int bc_tx_query(bc_tx *tx, const char *sql, const bc_param *params, size_t n, bc_rows **out)
{
	int rc;

	if (out == NULL)
		return BC_ERR_INVALID;
	*out = NULL;
	if ((rc = check_call(tx, sql, params, n)) != 0)
		return rc;
	atomic_fetch_add_explicit(&tx->s->statements, 1, memory_order_relaxed);
	return seen(tx->s, tx->s->eng->query(tx->c, sql, params, n, out));
}

int bc_tx_lock(bc_tx *tx, const char *sql, const bc_param *params, size_t n)
{
	bc_rows *r = NULL;
	int rc;

	if ((rc = check_call(tx, sql, params, n)) != 0)
		return rc;
	if (tx->s->eng->writes_hold_database)
		return 0;
	if ((rc = bc_tx_query(tx, sql, params, n, &r)) != 0)
		return rc;
	/* the rows are locked as they are read: every one of them */
	while ((rc = bc_rows_next(r)) == 1)
		;
	bc_rows_free(r);
	return rc < 0 ? rc : 0;
}

/* ---- results ---- */

int bc_rows_next(bc_rows *r)
{
	return r != NULL ? r->eng->rows_next(r) : BC_ERR_INVALID;
}

int bc_rows_is_null(bc_rows *r, int col)
{
	return r != NULL ? r->eng->rows_is_null(r, col) : 1;
}

const char *bc_rows_text(bc_rows *r, int col)
{
	return r != NULL ? r->eng->rows_text(r, col) : "";
}

int64_t bc_rows_int(bc_rows *r, int col)
{
	return r != NULL ? r->eng->rows_int(r, col) : 0;
}

const uint8_t *bc_rows_blob(bc_rows *r, int col, size_t *len)
{
	if (r == NULL) {
		if (len != NULL)
			*len = 0;
		return NULL;
	}
	return r->eng->rows_blob(r, col, len);
}

void bc_rows_free(bc_rows *r)
{
	if (r != NULL)
		r->eng->rows_free(r);
}

int bc_rows_col(bc_rows *r, const char *name)
{
	return r != NULL && name != NULL ? r->eng->rows_col(r, name) : -1;
}

int bc_rows_null_named(bc_rows *r, const char *name)
{
	return bc_rows_is_null(r, bc_rows_col(r, name));
}

const char *bc_rows_text_named(bc_rows *r, const char *name)
{
	return bc_rows_text(r, bc_rows_col(r, name));
}

int64_t bc_rows_int_named(bc_rows *r, const char *name)
{
	return bc_rows_int(r, bc_rows_col(r, name));
}

const uint8_t *bc_rows_blob_named(bc_rows *r, const char *name, size_t *len)
{
	return bc_rows_blob(r, bc_rows_col(r, name), len);
}

/* The first row of a query, or BC_ERR_NOT_FOUND; *out is freed by the caller. */
static int query_first(bc_tx *tx, const char *sql, const bc_param *params, size_t n, bc_rows **out)
{
	bc_rows *r = NULL;
	int rc;

	*out = NULL;
	if ((rc = bc_tx_query(tx, sql, params, n, &r)) != 0)
		goto out;
	if ((rc = bc_rows_next(r)) < 0)
		goto out;
	if (rc == 0) {
		bc_store_set_errmsg("no row");
		rc = BC_ERR_NOT_FOUND;
		goto out;
	}
	rc = 0;
	*out = r;
	r = NULL;
out:
	bc_rows_free(r);
	return rc;
}

/* NULL reads as 0, as bc_rows_int() */
int bc_tx_query_int(bc_tx *tx, const char *sql, const bc_param *params, size_t n, int64_t *out)
{
	bc_rows *r = NULL;
	int rc;

	if (out == NULL)
		return BC_ERR_INVALID;
	*out = 0;
	if ((rc = query_first(tx, sql, params, n, &r)) != 0)
		return rc;
	*out = bc_rows_int(r, 0);
	bc_rows_free(r);
	return 0;
}

/* NULL reads as "", as bc_rows_text() */
int bc_tx_query_text(bc_tx *tx, const char *sql, const bc_param *params, size_t n, char **out)
{
	bc_rows *r = NULL;
	int rc;

	if (out == NULL)
		return BC_ERR_INVALID;
	*out = NULL;
	if ((rc = query_first(tx, sql, params, n, &r)) != 0)
		goto out;
	if ((*out = strdup(bc_rows_text(r, 0))) == NULL)
		rc = BC_ERR_NOMEM;
out:
	bc_rows_free(r);
	return rc;
}

/* ---- bc_store_run ---- */

static int run_once(bc_store *s, enum bc_tx_mode mode, bc_tx_fn fn, void *arg)
{
	bc_tx *tx = NULL;
	int rc;

	if ((rc = bc_tx_begin(s, mode, &tx)) != 0)
		return rc;
	if ((rc = fn(tx, arg)) != 0) {
		bc_tx_rollback(tx);
		return rc;
	}
	return bc_tx_commit(tx);
}

/* Random, so that two transactions that collided do not meet again in step. */
static void backoff(int attempt)
{
	long max_us = RUN_BACKOFF_US << attempt;
	uint32_t r = 0;
	long us = max_us;
	struct timespec ts;

	if (RAND_bytes((unsigned char *)&r, sizeof(r)) == 1)
		us = max_us / 2 + (long)(r % (uint32_t)(max_us / 2 + 1));
	ts.tv_sec = us / 1000000L;
	ts.tv_nsec = (us % 1000000L) * 1000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int bc_store_run(bc_store *s, enum bc_tx_mode mode, bc_tx_fn fn, void *arg)
{
	int rc;

	if (s == NULL || fn == NULL)
		return BC_ERR_INVALID;
	for (int attempt = 0;; attempt++) {
		rc = run_once(s, mode, fn, arg);
		if ((rc != BC_ERR_BUSY && rc != BC_ERR_RETRY) || attempt >= RUN_REPLAYS)
			return rc;
		backoff(attempt);
	}
}

/* ---- schema version and migrations ---- */

static int read_version(bc_tx *tx, void *arg)
{
	return bc_tx_query_int(tx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", NULL,
	                       0, arg);
}

int bc_store_schema_version(bc_store *s, int64_t *out)
{
	if (out == NULL)
		return BC_ERR_INVALID;
	*out = 0;
	return bc_store_run(s, BC_TX_READ, read_version, out);
}

struct migration_ctx {
	const struct bc_migration *m;
	int64_t highest; /* the highest version compiled in */
	int applied;     /* m was applied by this transaction */
	char *err;
	size_t errlen;
};

/* 1 when the len bytes of line end in ';', after any "--" comment (outside quotes)
 * and whitespace: the end of a statement as migrations.h lays them out. */
static int ends_statement(const char *line, size_t len)
{
	int quoted = 0;

	for (size_t i = 0; i < len; i++) {
		if (line[i] == '\'')
			quoted = !quoted;
		else if (!quoted && line[i] == '-' && i + 1 < len && line[i + 1] == '-')
			len = i;
	}
	len = skip_space_back(line, len);
	return len > 0 && line[len - 1] == ';';
}

/* Runs a migration's SQL one statement at a time. */
static int run_script(bc_tx *tx, const char *sql)
{
	const char *p = sql, *line = sql, *start, *nl;
	size_t len;
	char *stmt;
	int rc;

	while (*line != '\0') {
		start = line;
		nl = strchr(line, '\n');
		len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		line = nl != NULL ? nl + 1 : line + len;
		if (!ends_statement(start, len) && *line != '\0')
			continue;
		/* p .. line is one statement, or comments only */
		if (!bc_sql_is_blank(p, (size_t)(line - p))) {
			if ((stmt = strndup(p, (size_t)(line - p))) == NULL)
				return BC_ERR_NOMEM;
			rc = tx->s->eng->exec_script(tx->c, stmt);
			free(stmt);
			if (rc != 0)
				return rc;
		}
		p = line;
	}
	return 0;
}

/* The one refusal of a schema newer than the binary, naming both versions. */
static int refuse_newer(int64_t v, int64_t highest, char *err, size_t errlen)
{
	char msg[160];

	if (v <= highest)
		return 0;
	snprintf(msg, sizeof(msg),
	         "the database schema is version %" PRId64
	         ", newer than this better-compute (%" PRId64 "): upgrade better-compute",
	         v, highest);
	set_err(err, errlen, msg);
	return BC_ERR_CONFIG;
}

static int check_not_newer(bc_tx *tx, struct migration_ctx *ctx)
{
	int64_t v = 0;
	int rc;

	if ((rc = read_version(tx, &v)) != 0)
		return rc;
	return refuse_newer(v, ctx->highest, ctx->err, ctx->errlen);
}

/* One migration in one write transaction. Everything is checked again inside it,
 * under the write lock, since another process may have opened the same database. */
static int apply_migration(bc_tx *tx, void *arg)
{
	struct migration_ctx *ctx = arg;
	const struct bc_engine *eng = tx->s->eng;
	int64_t done = 0;
	int rc;

	ctx->applied = 0;
	if (eng->lock_schema != NULL && (rc = eng->lock_schema(tx->c)) != 0)
		return rc;
	if ((rc = eng->exec_script(tx->c, "CREATE TABLE IF NOT EXISTS schema_migrations ("
	                                  "version BIGINT PRIMARY KEY, name TEXT NOT NULL, "
	                                  "applied_at BIGINT NOT NULL)")) != 0)
		return rc;
	if ((rc = check_not_newer(tx, ctx)) != 0)
		return rc;
	if ((rc = bc_tx_query_int(tx, "SELECT COUNT(*) FROM schema_migrations WHERE version = $1",
	                          (bc_param[]){BC_INT(ctx->m->version)}, 1, &done)) != 0)
		return rc;
	if (done > 0)
		return 0;
	if ((rc = run_script(tx, ctx->m->sql)) != 0)
		return rc;
	if ((rc = bc_tx_exec(tx,
	                     "INSERT INTO schema_migrations (version, name, applied_at) "
	                     "VALUES ($1, $2, $3)",
	                     (bc_param[]){BC_INT(ctx->m->version), BC_TEXT(ctx->m->name),
	                                  BC_INT(bc_tx_now_ms(tx))},
	                     3, NULL)) != 0)
		return rc;
	ctx->applied = 1;
	return 0;
}

/* The compiled-in migration with the lowest version above after, or NULL. */
static const struct bc_migration *next_migration(int64_t after)
{
	const struct bc_migration *m = NULL;

	for (size_t i = 0; i < bc_migrations_count; i++)
		if (bc_migrations[i].version > after &&
		    (m == NULL || bc_migrations[i].version < m->version))
			m = &bc_migrations[i];
	return m;
}

static int64_t highest_migration(void)
{
	int64_t v = 0;

	for (size_t i = 0; i < bc_migrations_count; i++)
		if (bc_migrations[i].version > v)
			v = bc_migrations[i].version;
	return v;
}

static int migrate(bc_store *s, bc_migration_fn fn, void *arg, char *err, size_t errlen)
{
	struct migration_ctx ctx = {.err = err, .errlen = errlen};
	char version[24];
	int rc;

	ctx.highest = highest_migration();
	for (ctx.m = next_migration(INT64_MIN); ctx.m != NULL;
	     ctx.m = next_migration(ctx.m->version)) {
		if ((rc = bc_store_run(s, BC_TX_WRITE, apply_migration, &ctx)) != 0) {
			if (rc != BC_ERR_CONFIG && err != NULL && errlen > 0)
				snprintf(err, errlen, "schema migration %s: %s", ctx.m->name,
				         bc_store_errmsg());
			return rc;
		}
		if (ctx.applied) {
			snprintf(version, sizeof(version), "%" PRId64, ctx.m->version);
			bc_log(BC_LOG_INFO, "schema migration applied", "version", version, "name",
			       ctx.m->name, NULL);
			if (fn != NULL)
				fn(arg, ctx.m->version, ctx.m->name);
		}
	}
	return 0;
}

int bc_store_migrate(bc_store *s, bc_migration_fn fn, void *arg, char *err, size_t errlen)
{
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (s == NULL)
		return BC_ERR_INVALID;
	return migrate(s, fn, arg, err, errlen);
}

/* The versions applied, read without creating schema_migrations. */
struct plan_read {
	int64_t applied[256];
	size_t n;
	int truncated;
};

static int read_applied(bc_tx *tx, void *arg)
{
	struct plan_read *p = arg;
	const char *has = bc_store_engine(tx->s) == BC_STORE_SQLITE
	                      ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
	                        "name = 'schema_migrations'"
	                      : "SELECT COUNT(*) FROM information_schema.tables WHERE "
	                        "table_schema = current_schema() AND table_name = "
	                        "'schema_migrations'";
	bc_rows *r = NULL;
	int64_t n = 0;
	int rc;

	p->n = 0;
	p->truncated = 0;
	if ((rc = bc_tx_query_int(tx, has, NULL, 0, &n)) != 0 || n == 0)
		return rc;
	if ((rc = bc_tx_query(tx, "SELECT version FROM schema_migrations ORDER BY version", NULL, 0,
	                      &r)) != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1) {
		if (p->n < sizeof(p->applied) / sizeof(p->applied[0]))
			p->applied[p->n++] = bc_rows_int(r, 0);
		else
			p->truncated = 1;
	}
	bc_rows_free(r);
	return rc < 0 ? rc : 0;
}

static int was_applied(const struct plan_read *p, int64_t v)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->applied[i] == v)
			return 1;
	return 0;
}

int bc_store_migration_plan(bc_store *s, int64_t *current, int64_t *latest, bc_migration_fn fn,
                            void *arg, char *err, size_t errlen)
{
	struct plan_read *p;
	const struct bc_migration *m;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (s == NULL || current == NULL || latest == NULL)
		return BC_ERR_INVALID;
	*current = 0;
	*latest = highest_migration();
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = bc_store_run(s, BC_TX_READ, read_applied, p)) != 0) {
		set_err(err, errlen, bc_store_errmsg());
		goto out;
	}
	if (p->truncated) {
		set_err(err, errlen, "schema_migrations holds more rows than any release made");
		rc = BC_ERR_DB;
		goto out;
	}
	*current = p->n > 0 ? p->applied[p->n - 1] : 0;
	if ((rc = refuse_newer(*current, *latest, err, errlen)) != 0)
		goto out;
	for (m = next_migration(INT64_MIN); m != NULL; m = next_migration(m->version))
		if (!was_applied(p, m->version) && fn != NULL)
			fn(arg, m->version, m->name);
out:
	free(p);
	return rc;
}

/* ---- backup ---- */

/* The directory part of path, malloc'd ("." for a bare name). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static int sync_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = 0;

	if (fd < 0)
		return BC_ERR_IO;
	if (fsync(fd) != 0)
		rc = BC_ERR_IO;
	if (close(fd) != 0)
		rc = BC_ERR_IO;
	return rc;
}

int bc_store_backup(bc_store *s, const char *path, int force, char *err, size_t errlen)
{
	const char *slash;
	char tmp[4096] = "", msg[600];
	char *dir = NULL;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (s == NULL || path == NULL || *path == '\0')
		return BC_ERR_INVALID;
	if (s->eng->backup == NULL) {
		set_err(err, errlen,
		        "the store is on PostgreSQL: back it up with pg_dump (a logical copy) or "
		        "pg_basebackup (a base backup, with WAL archiving for point-in-time "
		        "recovery); see docs/server.md, Backups");
		return BC_ERR_UNSUPPORTED;
	}
	if (!force && access(path, F_OK) == 0) {
		snprintf(msg, sizeof(msg), "%s exists; give --force to replace it, or another file",
		         path);
		set_err(err, errlen, msg);
		return BC_ERR_CONFLICT;
	}
	slash = strrchr(path, '/');
	if ((dir = dir_of(path)) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = bc_file_write_temp(dir, slash != NULL ? slash + 1 : path, "", 0, 0600, tmp,
	                             sizeof(tmp))) != 0) {
		snprintf(msg, sizeof(msg), "cannot create a file in %s: %s", dir, strerror(errno));
		set_err(err, errlen, msg);
		goto out;
	}
	if ((rc = s->eng->backup(s->state, tmp)) != 0) {
		set_err(err, errlen, bc_store_errmsg());
		goto out;
	}
	if (sync_file(tmp) != 0 || (force ? rename(tmp, path) : link(tmp, path)) != 0) {
		rc = errno == EEXIST ? BC_ERR_CONFLICT : BC_ERR_IO;
		snprintf(msg, sizeof(msg), "cannot put the copy in place at %s: %s", path,
		         strerror(errno));
		set_err(err, errlen, msg);
		goto out;
	}
	if (force)
		tmp[0] = '\0'; /* renamed: nothing to remove */
	if ((rc = bc_file_sync_dir(dir)) != 0) {
		snprintf(msg, sizeof(msg), "cannot sync %s: %s", dir, strerror(errno));
		set_err(err, errlen, msg);
	}
out:
	if (tmp[0] != '\0')
		unlink(tmp);
	free(dir);
	return rc;
}
