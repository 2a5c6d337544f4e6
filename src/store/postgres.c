/* The PostgreSQL engine (libpq): one server connection per pooled connection, made
 * with a connect timeout and a lock timeout, each with a cache of named prepared
 * statements keyed by SQL text and parameter types.
 *
 * Every statement runs under a savepoint sent with it in one pipeline (one round
 * trip), so that a failed statement leaves the transaction usable, as on SQLite: a
 * caller may turn a unique violation into a refusal and go on writing. Results come
 * back whole, in text format. */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bc/clock.h"
#include "bc/log.h"
#include "store/engine.h"

#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#include <dlfcn.h>
#include <pthread.h>

/* libpq is loaded when a postgres:// store is opened, not linked: a server on SQLite
 * never maps it, nor what it links (libgnutls through libldap, among others). Every
 * function this file calls, resolved at load. */
#define PQ_FUNCS(X)                                                                                \
	X(PQclear)                                                                                 \
	X(PQcmdStatus)                                                                             \
	X(PQcmdTuples)                                                                             \
	X(PQconnectdbParams)                                                                       \
	X(PQconninfoFree)                                                                          \
	X(PQconninfoParse)                                                                         \
	X(PQenterPipelineMode)                                                                     \
	X(PQerrorMessage)                                                                          \
	X(PQexec)                                                                                  \
	X(PQexitPipelineMode)                                                                      \
	X(PQfinish)                                                                                \
	X(PQfname)                                                                                 \
	X(PQfnumber)                                                                               \
	X(PQfreemem)                                                                               \
	X(PQftype)                                                                                 \
	X(PQgetResult)                                                                             \
	X(PQgetisnull)                                                                             \
	X(PQgetlength)                                                                             \
	X(PQgetvalue)                                                                              \
	X(PQisthreadsafe)                                                                          \
	X(PQnfields)                                                                               \
	X(PQntuples)                                                                               \
	X(PQpipelineStatus)                                                                        \
	X(PQpipelineSync)                                                                          \
	X(PQreset)                                                                                 \
	X(PQresultErrorField)                                                                      \
	X(PQresultErrorMessage)                                                                    \
	X(PQresultStatus)                                                                          \
	X(PQsendPrepare)                                                                           \
	X(PQsendQueryParams)                                                                       \
	X(PQsendQueryPrepared)                                                                     \
	X(PQsetErrorVerbosity)                                                                     \
	X(PQsetNoticeReceiver)                                                                     \
	X(PQstatus)                                                                                \
	X(PQtransactionStatus)                                                                     \
	X(PQunescapeBytea)

static struct {
#define X(f) __typeof__(f) *f;
	PQ_FUNCS(X)
#undef X
} pq;
static pthread_once_t pq_once = PTHREAD_ONCE_INIT;
static char pq_error[256]; /* empty: loaded */

static void pq_load(void)
{
	const char *name = "libpq.so.5";
	void *h;

#ifdef BC_TESTING
	/* a test build may name another library, to show the error of a missing one */
	if (getenv("BC_TEST_LIBPQ") != NULL)
		name = getenv("BC_TEST_LIBPQ");
#endif
	if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(pq_error, sizeof(pq_error),
		         "postgres: cannot load %s (%s); install libpq5 (PostgreSQL's client "
		         "library) to use a postgres:// store",
		         name, dlerror());
		return;
	}
#define X(f)                                                                                       \
	if ((*(void **)&pq.f = dlsym(h, #f)) == NULL) {                                            \
		snprintf(pq_error, sizeof(pq_error),                                               \
		         "postgres: %s has no %s; install libpq5 14 or later", name, #f);          \
		return;                                                                            \
	}
	PQ_FUNCS(X)
#undef X
}

/* From here on, each PQ... call goes through the table. */
#define PQclear              (pq.PQclear)
#define PQcmdStatus          (pq.PQcmdStatus)
#define PQcmdTuples          (pq.PQcmdTuples)
#define PQconnectdbParams    (pq.PQconnectdbParams)
#define PQconninfoFree       (pq.PQconninfoFree)
#define PQconninfoParse      (pq.PQconninfoParse)
#define PQenterPipelineMode  (pq.PQenterPipelineMode)
#define PQerrorMessage       (pq.PQerrorMessage)
#define PQexec               (pq.PQexec)
#define PQexitPipelineMode   (pq.PQexitPipelineMode)
#define PQfinish             (pq.PQfinish)
#define PQfname              (pq.PQfname)
#define PQfnumber            (pq.PQfnumber)
#define PQfreemem            (pq.PQfreemem)
#define PQftype              (pq.PQftype)
#define PQgetResult          (pq.PQgetResult)
#define PQgetisnull          (pq.PQgetisnull)
#define PQgetlength          (pq.PQgetlength)
#define PQgetvalue           (pq.PQgetvalue)
#define PQisthreadsafe       (pq.PQisthreadsafe)
#define PQnfields            (pq.PQnfields)
#define PQntuples            (pq.PQntuples)
#define PQpipelineStatus     (pq.PQpipelineStatus)
#define PQpipelineSync       (pq.PQpipelineSync)
#define PQreset              (pq.PQreset)
#define PQresultErrorField   (pq.PQresultErrorField)
#define PQresultErrorMessage (pq.PQresultErrorMessage)
#define PQresultStatus       (pq.PQresultStatus)
#define PQsendPrepare        (pq.PQsendPrepare)
#define PQsendQueryParams    (pq.PQsendQueryParams)
#define PQsendQueryPrepared  (pq.PQsendQueryPrepared)
#define PQsetErrorVerbosity  (pq.PQsetErrorVerbosity)
#define PQsetNoticeReceiver  (pq.PQsetNoticeReceiver)
#define PQstatus             (pq.PQstatus)
#define PQtransactionStatus  (pq.PQtransactionStatus)
#define PQunescapeBytea      (pq.PQunescapeBytea)

#define STMT_CACHE_SIZE   64
#define CONNECT_TIMEOUT_S "5"
/* As the SQLite engine's busy timeout: a row lock not had in 5 s is BC_ERR_BUSY
 * rather than a wait as long as the holder's. A URL's own options replace it. */
#define SESSION_OPTIONS "-c lock_timeout=5000"
/* pg_advisory_xact_lock key for migrations: "bcschema" in ASCII */
#define SCHEMA_LOCK_KEY INT64_C(0x6263736368656d61)
#define NOW_SQL         "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint"
/* Parameters the extended protocol can carry. */
#define MAX_PARAMS 65535

/* Type OIDs, fixed by catalog/pg_type.h (a server header). */
enum { OID_UNKNOWN = 0, OID_BYTEA = 17, OID_INT8 = 20, OID_TEXT = 25 };

struct pg_state {
	char *url;
};

/* A slot of the statement cache. */
struct pg_stmt {
	char *key;     /* the SQL as the caller gave it; NULL: an empty slot */
	uint64_t hash; /* of key */
	Oid *types;    /* n, as prepared; OID_UNKNOWN: inferred by the server */
	size_t n;
	uint64_t used; /* the connection's tick when last run */
	char name[24];
};

struct pg_conn {
	struct bc_conn base;
	PGconn *pg;
	int broken; /* the server is gone, or the connection is in a state we left */
	int used;   /* a transaction ran on it: the server may have dropped it since */
	uint64_t tick;
	uint64_t serial; /* for statement names, never reused on a connection */
	struct pg_stmt cache[STMT_CACHE_SIZE];
};

/* A bytea of the current row, decoded on demand. */
struct pg_blob {
	unsigned char *p;
	size_t len;
};

struct pg_rows {
	struct bc_rows base;
	PGresult *res;
	int row; /* -1 before the first; nrows at the end */
	int nrows, ncols;
	struct pg_blob *blobs; /* ncols, for the current row */
};

/* Parameters in libpq's form: int8 and text as text, bytea as binary. */
struct pg_args {
	size_t n;
	Oid *types;
	const char **values;
	int *lengths;
	int *formats;
	char (*ints)[24];
};

static const uint8_t empty_blob[1];

/* ---- errors ---- */

/* SQLSTATEs that are not BC_ERR_DB. Connection failures are found by the state of
 * the connection as well, since libpq reports a lost one without a SQLSTATE. */
static const struct {
	const char *state;
	int rc;
} pg_states[] = {
    {"23505", BC_ERR_CONFLICT},
    {"40001", BC_ERR_RETRY},
    {"40P01", BC_ERR_RETRY},
    {"55P03", BC_ERR_BUSY},
    {"57014", BC_ERR_BUSY},
    {"57P01", BC_ERR_UNAVAILABLE},
    {"57P02", BC_ERR_UNAVAILABLE},
    {"57P03", BC_ERR_UNAVAILABLE},
    /* disk_full: retry once space is freed, as for a server away */
    {"53100", BC_ERR_UNAVAILABLE},
    /* a write in a READ transaction: a caller's mistake, as on SQLite */
    {"25006", BC_ERR_INVALID},
};

static int pg_sqlstate(const char *state)
{
	if (state == NULL)
		return BC_ERR_DB;
	if (strncmp(state, "08", 2) == 0)
		return BC_ERR_UNAVAILABLE;
	for (size_t i = 0; i < sizeof(pg_states) / sizeof(pg_states[0]); i++)
		if (strcmp(state, pg_states[i].state) == 0)
			return pg_states[i].rc;
	return BC_ERR_DB;
}

/* libpq's own text (a connection's failure spans lines) as one line. */
static void set_libpq_msg(const char *what, const char *msg)
{
	char line[400];
	size_t n = 0;

	for (; msg != NULL && *msg != '\0' && n + 1 < sizeof(line); msg++) {
		if (*msg == '\n' || *msg == '\t' || *msg == '\r' || *msg == ' ') {
			if (n > 0 && line[n - 1] != ' ')
				line[n++] = ' ';
		} else {
			line[n++] = *msg;
		}
	}
	while (n > 0 && line[n - 1] == ' ')
		n--;
	line[n] = '\0';
	bc_store_set_errmsg("postgres: %s: %s", what, n > 0 ? line : "unknown error");
}

/* The one adapter from libpq's errors to ours: res may be NULL (the message is
 * then the connection's). A lost connection marks c broken. */
static int pg_err(struct pg_conn *c, const PGresult *res, const char *what)
{
	const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *primary = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	int rc = pg_sqlstate(state);

	/* the server's primary message only: its DETAIL may quote a row's values
	 * (a unique key), which have no place in a log */
	if (primary != NULL)
		bc_store_set_errmsg("postgres: %s: %s (SQLSTATE %s)", what, primary,
		                    state != NULL ? state : "none");
	else if (res != NULL && PQresultErrorMessage(res)[0] != '\0')
		set_libpq_msg(what, PQresultErrorMessage(res));
	else
		set_libpq_msg(what, c != NULL ? PQerrorMessage(c->pg) : NULL);
	if (c != NULL && (PQstatus(c->pg) != CONNECTION_OK || rc == BC_ERR_UNAVAILABLE)) {
		c->broken = 1;
		rc = BC_ERR_UNAVAILABLE;
	}
	return rc;
}

static int pg_invalid(const char *msg)
{
	bc_store_set_errmsg("postgres: %s", msg);
	return BC_ERR_INVALID;
}

/* ---- the SQL text: parameters and statements ---- */

struct sql_scan {
	size_t n;            /* parameters given */
	unsigned char *seen; /* n + 1 flags */
	int beyond;          /* a $N above n, or $0 */
	int several;         /* something other than blanks after a ';' */
};

static int ident_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '_' || ch == '$' || (unsigned char)ch >= 0x80;
}

/* Past a literal that opens with q at s[i]; backslash escapes in E'' strings. */
static size_t skip_quoted(const char *s, size_t i, char q, int backslash)
{
	for (i++; s[i] != '\0'; i++) {
		if (backslash && s[i] == '\\' && s[i + 1] != '\0')
			i++;
		else if (s[i] == q && s[i + 1] == q)
			i++;
		else if (s[i] == q)
			return i + 1;
	}
	return i;
}

/* Past a block comment at s[i]; they nest in PostgreSQL. */
static size_t skip_block_comment(const char *s, size_t i)
{
	int depth = 0;

	while (s[i] != '\0') {
		if (s[i] == '/' && s[i + 1] == '*') {
			depth++;
			i += 2;
		} else if (s[i] == '*' && s[i + 1] == '/') {
			i += 2;
			if (--depth == 0)
				break;
		} else {
			i++;
		}
	}
	return i;
}

/* Past a $tag$...$tag$ literal at s[i], or i when s[i] opens none. */
static size_t skip_dollar_quote(const char *s, size_t i)
{
	size_t j = i + 1, taglen;
	const char *end;

	while (isalnum((unsigned char)s[j]) || s[j] == '_' || (unsigned char)s[j] >= 0x80)
		j++;
	if (s[j] != '$')
		return i;
	taglen = j + 1 - i;
	for (end = s + j + 1; (end = strchr(end, '$')) != NULL; end++)
		if (strncmp(end, s + i, taglen) == 0)
			return (size_t)(end - s) + taglen;
	return strlen(s);
}

/* A $N parameter at s[i] (a digit follows the '$'); returns the index past it. */
static size_t scan_param(const char *s, size_t i, struct sql_scan *sc)
{
	size_t v = 0;

	for (i++; isdigit((unsigned char)s[i]); i++)
		if (v <= MAX_PARAMS)
			v = v * 10 + (size_t)(s[i] - '0');
	if (v == 0 || v > sc->n)
		sc->beyond = 1;
	else
		sc->seen[v] = 1;
	return i;
}

/* One step of the scan at s[i]: the index of the next token. */
static size_t scan_step(const char *s, size_t i, struct sql_scan *sc)
{
	int prev_ident = i > 0 && ident_char(s[i - 1]);
	size_t next;

	switch (s[i]) {
	case '\'':
		return skip_quoted(s, i, '\'',
		                   i > 0 && (s[i - 1] == 'E' || s[i - 1] == 'e') &&
		                       !(i > 1 && ident_char(s[i - 2])));
	case '"': return skip_quoted(s, i, '"', 0);
	case '-':
		if (s[i + 1] != '-')
			return i + 1;
		while (s[i] != '\0' && s[i] != '\n')
			i++;
		return i;
	case '/': return s[i + 1] == '*' ? skip_block_comment(s, i) : i + 1;
	case '$':
		if (prev_ident)
			return i + 1;
		if (isdigit((unsigned char)s[i + 1]))
			return scan_param(s, i, sc);
		next = skip_dollar_quote(s, i);
		return next > i ? next : i + 1;
	case ';':
		if (!bc_sql_is_blank(s + i, strlen(s + i)))
			sc->several = 1;
		return strlen(s);
	default: return i + 1;
	}
}

/* The SQL must be one statement using exactly $1..$n, as the SQLite engine
 * requires: PostgreSQL would take a $2 that is never used, or refuse two
 * statements with a syntax error rather than as the caller's mistake. */
static int sql_check(const char *sql, size_t n)
{
	struct sql_scan sc = {.n = n};
	int rc = 0;

	if (bc_sql_is_blank(sql, strlen(sql)))
		return pg_invalid("no statement in the SQL");
	if ((sc.seen = calloc(n + 1, 1)) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; sql[i] != '\0';)
		i = scan_step(sql, i, &sc);
	for (size_t i = 1; i <= n; i++)
		if (!sc.seen[i])
			sc.beyond = 1;
	if (sc.several) {
		rc = pg_invalid("more than one statement in the SQL");
	} else if (sc.beyond) {
		bc_store_set_errmsg("postgres: the SQL must use exactly the parameters $1..$%zu",
		                    n);
		rc = BC_ERR_INVALID;
	}
	free(sc.seen);
	return rc;
}

/* ---- parameters ---- */

static void args_free(struct pg_args *a)
{
	free(a->types);
	free(a->values);
	free(a->lengths);
	free(a->formats);
	free(a->ints);
	memset(a, 0, sizeof(*a));
}

/* A NULL is sent untyped so that the server infers its type from the SQL: a
 * typed one would not go into a column of another type. */
static int arg_one(struct pg_args *a, size_t i, const bc_param *p)
{
	switch (p->type) {
	case BC_P_NULL: return 0;
	case BC_P_INT:
		snprintf(a->ints[i], sizeof(a->ints[i]), "%" PRId64, p->i);
		a->types[i] = OID_INT8;
		a->values[i] = a->ints[i];
		return 0;
	case BC_P_TEXT:
		if (p->p != NULL) {
			a->types[i] = OID_TEXT;
			a->values[i] = p->p;
		}
		return 0;
	case BC_P_BLOB:
		/* a NULL value would be SQL NULL, not an empty bytea */
		if (p->len > 0 && p->p == NULL)
			return pg_invalid("a blob parameter without bytes");
		if (p->len > INT_MAX) {
			bc_store_set_errmsg("postgres: a blob parameter of %zu bytes", p->len);
			return BC_ERR_LIMIT;
		}
		a->types[i] = OID_BYTEA;
		a->values[i] = p->len > 0 ? p->p : (const char *)empty_blob;
		a->lengths[i] = (int)p->len;
		a->formats[i] = 1;
		return 0;
	default: return pg_invalid("unknown parameter type");
	}
}

static int args_make(const bc_param *params, size_t n, struct pg_args *a)
{
	size_t m = n > 0 ? n : 1;
	int rc;

	memset(a, 0, sizeof(*a));
	if (n > MAX_PARAMS)
		return pg_invalid("too many parameters");
	a->n = n;
	a->types = calloc(m, sizeof(*a->types));
	a->values = calloc(m, sizeof(*a->values));
	a->lengths = calloc(m, sizeof(*a->lengths));
	a->formats = calloc(m, sizeof(*a->formats));
	a->ints = calloc(m, sizeof(*a->ints));
	if (a->types == NULL || a->values == NULL || a->lengths == NULL || a->formats == NULL ||
	    a->ints == NULL) {
		args_free(a);
		return BC_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if ((rc = arg_one(a, i, &params[i])) != 0) {
			args_free(a);
			return rc;
		}
	}
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

static void stmt_clear(struct pg_stmt *e)
{
	free(e->key);
	free(e->types);
	memset(e, 0, sizeof(*e));
}

/* A statement prepared with types the arguments fit: a NULL fits any type. */
static int stmt_fits(const struct pg_stmt *e, const struct pg_args *a)
{
	if (e->n != a->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->values[i] != NULL && e->types[i] != a->types[i])
			return 0;
	return 1;
}

static struct pg_stmt *stmt_find(struct pg_conn *c, const char *sql, uint64_t h,
                                 const struct pg_args *a)
{
	for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
		struct pg_stmt *e = &c->cache[i];

		if (e->key != NULL && e->hash == h && strcmp(e->key, sql) == 0 && stmt_fits(e, a))
			return e;
	}
	return NULL;
}

/* An empty slot, else the least recently used one. */
static struct pg_stmt *stmt_victim(struct pg_conn *c)
{
	struct pg_stmt *v = &c->cache[0];

	for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
		if (c->cache[i].key == NULL)
			return &c->cache[i];
		if (c->cache[i].used < v->used)
			v = &c->cache[i];
	}
	return v;
}

/* A new statement for sql with the arguments' types, not yet prepared. */
static int stmt_new(struct pg_conn *c, const char *sql, uint64_t h, const struct pg_args *a,
                    struct pg_stmt *out)
{
	memset(out, 0, sizeof(*out));
	if ((out->key = strdup(sql)) == NULL ||
	    (out->types = calloc(a->n > 0 ? a->n : 1, sizeof(Oid))) == NULL) {
		stmt_clear(out);
		return BC_ERR_NOMEM;
	}
	if (a->n > 0)
		memcpy(out->types, a->types, a->n * sizeof(Oid));
	out->n = a->n;
	out->hash = h;
	snprintf(out->name, sizeof(out->name), "bc_%" PRIu64, ++c->serial);
	return 0;
}

/* ---- running a statement ---- */

enum { CMD_SAVEPOINT, CMD_DEALLOCATE, CMD_PREPARE, CMD_EXECUTE, CMD_RELEASE, CMD_N };

/* What one pipeline sends: a statement to drop from the server's cache, one to
 * prepare, one to run with a. */
struct pg_pipe {
	char dealloc[40];         /* "" or DEALLOCATE <name> */
	const struct pg_stmt *st; /* to run */
	int prepare;              /* st is not on the server yet */
	const struct pg_args *a;
	int sent[CMD_N];
	ExecStatusType status[CMD_N];
	PGresult *exec; /* the Execute's result */
	PGresult *err;  /* the first command that failed */
};

static int send_simple(PGconn *pg, const char *sql)
{
	return PQsendQueryParams(pg, sql, 0, NULL, NULL, NULL, NULL, 0);
}

/* 1 when every command and the Sync went into libpq's buffer and out. */
static int pipe_send(PGconn *pg, struct pg_pipe *p)
{
	const struct pg_stmt *st = p->st;
	const struct pg_args *a = p->a;

	if (!PQenterPipelineMode(pg))
		return 0;
	if (!(p->sent[CMD_SAVEPOINT] = send_simple(pg, "SAVEPOINT bc_stmt")))
		return 0;
	if (p->dealloc[0] != '\0' && !(p->sent[CMD_DEALLOCATE] = send_simple(pg, p->dealloc)))
		return 0;
	if (p->prepare &&
	    !(p->sent[CMD_PREPARE] = PQsendPrepare(pg, st->name, st->key, (int)st->n, st->types)))
		return 0;
	if (!(p->sent[CMD_EXECUTE] = PQsendQueryPrepared(pg, st->name, (int)a->n, a->values,
	                                                 a->lengths, a->formats, 0)))
		return 0;
	if (!(p->sent[CMD_RELEASE] = send_simple(pg, "RELEASE SAVEPOINT bc_stmt")))
		return 0;
	return PQpipelineSync(pg);
}

/* One command's results, up to the NULL that ends them. */
static void pipe_collect_one(PGconn *pg, struct pg_pipe *p, int cmd)
{
	PGresult *r;

	p->status[cmd] = PGRES_PIPELINE_ABORTED;
	while ((r = PQgetResult(pg)) != NULL) {
		p->status[cmd] = PQresultStatus(r);
		if (p->status[cmd] == PGRES_FATAL_ERROR && p->err == NULL) {
			p->err = r;
			r = NULL;
		} else if (cmd == CMD_EXECUTE && p->exec == NULL &&
		           (p->status[cmd] == PGRES_TUPLES_OK ||
		            p->status[cmd] == PGRES_COMMAND_OK)) {
			p->exec = r;
			r = NULL;
		}
		PQclear(r);
	}
}

/* Reads what pipe_send sent, through the Sync, and leaves pipeline mode. 1 when
 * the connection is back to normal, whatever the commands did. */
static int pipe_collect(PGconn *pg, struct pg_pipe *p)
{
	PGresult *r;
	int synced = 0;

	for (int cmd = 0; cmd < CMD_N; cmd++) {
		if (p->sent[cmd])
			pipe_collect_one(pg, p, cmd);
		if (PQstatus(pg) != CONNECTION_OK)
			return 0;
	}
	if ((r = PQgetResult(pg)) != NULL) {
		synced = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
		PQclear(r);
	}
	return synced && PQexitPipelineMode(pg);
}

/* After a failed statement: back to the savepoint, so the transaction goes on. A
 * failure here leaves the transaction failed, which commit reports. */
static void pipe_recover(struct pg_conn *c)
{
	PGresult *r;

	if (c->broken || PQtransactionStatus(c->pg) != PQTRANS_INERROR)
		return;
	r = PQexec(c->pg, "ROLLBACK TO SAVEPOINT bc_stmt; RELEASE SAVEPOINT bc_stmt");
	if (PQstatus(c->pg) != CONNECTION_OK)
		c->broken = 1;
	PQclear(r);
}

/* Sends p in one round trip and reads the answers. *res: the Execute's result. */
static int pipe_run(struct pg_conn *c, struct pg_pipe *p, PGresult **res)
{
	int rc = 0;

	*res = NULL;
	if (!pipe_send(c->pg, p) || !pipe_collect(c->pg, p)) {
		/* a pipeline left half way cannot be resumed: this connection is done */
		(void)pg_err(c, p->err, "statement");
		c->broken = 1;
		rc = BC_ERR_UNAVAILABLE;
	} else if (p->err != NULL) {
		rc = pg_err(c, p->err, "statement");
		pipe_recover(c);
	} else if (p->exec == NULL) {
		/* COPY, or an empty statement: nothing this interface reads */
		bc_store_set_errmsg("postgres: statement: no result");
		rc = BC_ERR_DB;
	} else {
		*res = p->exec;
		p->exec = NULL;
	}
	PQclear(p->exec);
	PQclear(p->err);
	p->exec = p->err = NULL;
	return rc;
}

/* The cached statement for sql and a, prepared in the same round trip when new. */
static int stmt_run(struct pg_conn *c, const char *sql, const struct pg_args *a, PGresult **res)
{
	uint64_t h = sql_hash(sql);
	struct pg_stmt *slot = stmt_find(c, sql, h, a), fresh;
	struct pg_pipe p = {.a = a};
	int rc;

	*res = NULL;
	if (c->broken) {
		bc_store_set_errmsg(
		    "postgres: the connection was lost earlier in this transaction");
		return BC_ERR_UNAVAILABLE;
	}
	if (PQtransactionStatus(c->pg) == PQTRANS_INERROR) {
		bc_store_set_errmsg("postgres: the transaction failed earlier: roll it back");
		return BC_ERR_DB;
	}
	if (slot != NULL) {
		p.st = slot;
		slot->used = ++c->tick;
		return pipe_run(c, &p, res);
	}
	if ((rc = sql_check(sql, a->n)) != 0 || (rc = stmt_new(c, sql, h, a, &fresh)) != 0)
		return rc;
	/* the old statement leaves the cache whatever happens: its name is not reused */
	slot = stmt_victim(c);
	if (slot->key != NULL)
		snprintf(p.dealloc, sizeof(p.dealloc), "DEALLOCATE %s", slot->name);
	stmt_clear(slot);
	p.st = &fresh;
	p.prepare = 1;
	rc = pipe_run(c, &p, res);
	if (p.status[CMD_PREPARE] == PGRES_COMMAND_OK) {
		fresh.used = ++c->tick;
		*slot = fresh;
	} else {
		stmt_clear(&fresh);
	}
	return rc;
}

/* A statement with bc_params: the Execute's result in *res. */
static int run_params(struct pg_conn *c, const char *sql, const bc_param *params, size_t n,
                      PGresult **res)
{
	struct pg_args a;
	int rc;

	*res = NULL;
	if ((rc = args_make(params, n, &a)) != 0)
		return rc;
	rc = stmt_run(c, sql, &a, res);
	args_free(&a);
	return rc;
}

/* ---- the store-wide state ---- */

static void pg_close(void *state)
{
	struct pg_state *st = state;

	if (st == NULL)
		return;
	free(st->url);
	free(st);
}

/* 1 when msg quotes the password of url (postgres://user:password@host/...), as
 * libpq's message on a bad percent-escape in it does. */
static int shows_password(const char *msg, const char *url)
{
	const char *user = strstr(url, "://"), *colon, *at;
	char pw[256];
	size_t len;

	if (user == NULL)
		return 0;
	user += 3;
	len = strcspn(user, "/?#");
	if ((at = memrchr(user, '@', len)) == NULL ||
	    (colon = memchr(user, ':', (size_t)(at - user))) == NULL || at - colon - 1 <= 0)
		return 0;
	/* a password too long to check is taken as shown */
	if ((size_t)(at - colon - 1) >= sizeof(pw))
		return 1;
	snprintf(pw, sizeof(pw), "%.*s", (int)(at - colon - 1), colon + 1);
	return strstr(msg, pw) != NULL;
}

static int pg_open(const char *target, void **state, char *err, size_t errlen)
{
	PQconninfoOption *opts;
	struct pg_state *st;
	char *perr = NULL;

	*state = NULL;
	(void)pthread_once(&pq_once, pq_load);
	if (pq_error[0] != '\0') {
		bc_store_set_errmsg("%s", pq_error);
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s", pq_error);
		return BC_ERR_UNSUPPORTED;
	}
	if (!PQisthreadsafe()) {
		bc_store_set_errmsg("postgres: this libpq is not thread-safe");
		return BC_ERR_UNSUPPORTED;
	}
	/* a URL that does not parse is the operator's to fix, not a database away */
	if ((opts = PQconninfoParse(target, &perr)) == NULL) {
		if (perr == NULL)
			return BC_ERR_NOMEM;
		if (shows_password(perr, target))
			bc_store_set_errmsg(
			    "postgres: the database URL is not valid (near its password)");
		else
			bc_store_set_errmsg("postgres: the database URL is not valid: %.*s",
			                    (int)strcspn(perr, "\n"), perr);
		PQfreemem(perr);
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s", bc_store_errmsg());
		return BC_ERR_CONFIG;
	}
	PQconninfoFree(opts);
	if ((st = calloc(1, sizeof(*st))) == NULL || (st->url = strdup(target)) == NULL) {
		free(st);
		return BC_ERR_NOMEM;
	}
	*state = st;
	return 0;
}

/* ---- connections ---- */

static void pg_notice(void *arg, const PGresult *res)
{
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	(void)arg;
	/* NOTICEs are chatter ("already exists, skipping"); a WARNING is worth a line */
	if (sev != NULL && strcmp(sev, "WARNING") == 0)
		bc_log(BC_LOG_WARN, "postgres warning", "message", msg != NULL ? msg : "", NULL);
}

static void pg_disconnect(struct bc_conn *bc)
{
	struct pg_conn *c = (struct pg_conn *)bc;

	if (c == NULL)
		return;
	for (size_t i = 0; i < STMT_CACHE_SIZE; i++)
		stmt_clear(&c->cache[i]);
	/* a transaction left open is rolled back by the server */
	PQfinish(c->pg);
	free(c);
}

static int pg_connect(void *state, struct bc_conn **out)
{
	/* the URL comes last so that its own settings win */
	static const char *const keys[] = {"connect_timeout", "application_name", "client_encoding",
	                                   "options",         "dbname",           NULL};
	struct pg_state *st = state;
	const char *values[] = {CONNECT_TIMEOUT_S, "better-compute", "UTF8",
	                        SESSION_OPTIONS,   st->url,          NULL};
	struct pg_conn *c;
	int rc = 0;

	*out = NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return BC_ERR_NOMEM;
	c->base.eng = &bc_engine_postgres;
	if ((c->pg = PQconnectdbParams(keys, values, 1)) == NULL) {
		free(c);
		return BC_ERR_NOMEM;
	}
	if (PQstatus(c->pg) != CONNECTION_OK) {
		rc = pg_err(c, NULL, "cannot connect to the database");
		pg_disconnect(&c->base);
		return rc;
	}
	PQsetNoticeReceiver(c->pg, pg_notice, NULL);
	PQsetErrorVerbosity(c->pg, PQERRORS_TERSE);
	*out = &c->base;
	return 0;
}

/* A new server connection in place of one the server dropped while it was idle:
 * the prepared statements went with it. */
static int pg_reconnect(struct pg_conn *c)
{
	for (size_t i = 0; i < STMT_CACHE_SIZE; i++)
		stmt_clear(&c->cache[i]);
	PQreset(c->pg);
	if (PQstatus(c->pg) != CONNECTION_OK)
		return pg_err(c, NULL, "cannot connect to the database");
	PQsetNoticeReceiver(c->pg, pg_notice, NULL);
	PQsetErrorVerbosity(c->pg, PQERRORS_TERSE);
	c->broken = 0;
	return 0;
}

/* ---- transactions ---- */

/* A command without parameters or rows. *res (may be NULL) keeps the result. */
static int pg_simple(struct pg_conn *c, const char *sql, const char *what, PGresult **res)
{
	PGresult *r;
	int rc = 0;

	if (res != NULL)
		*res = NULL;
	r = PQexec(c->pg, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK &&
	    PQresultStatus(r) != PGRES_EMPTY_QUERY)
		rc = pg_err(c, r, what);
	if (rc == 0 && res != NULL)
		*res = r;
	else
		PQclear(r);
	return rc;
}

static int pg_begin(struct bc_conn *bc, enum bc_tx_mode mode)
{
	struct pg_conn *c = (struct pg_conn *)bc;
	const char *sql;
	int rc;

	switch (mode) {
	case BC_TX_READ: sql = "BEGIN READ ONLY"; break;
	case BC_TX_WRITE:
		/* FOR UPDATE row locks and unique constraints make single use */
		sql = "BEGIN ISOLATION LEVEL READ COMMITTED";
		break;
	default: return pg_invalid("unknown transaction mode");
	}
	rc = pg_simple(c, sql, "begin", NULL);
	/* nothing was done yet: a connection the server closed while it sat in the
	 * pool (a restart, a failover) is made again once, so the first transaction
	 * after the database returns works */
	if (rc == BC_ERR_UNAVAILABLE && c->used && (rc = pg_reconnect(c)) == 0)
		rc = pg_simple(c, sql, "begin", NULL);
	c->used = 1;
	return rc;
}

static int pg_rollback(struct bc_conn *bc)
{
	struct pg_conn *c = (struct pg_conn *)bc;

	if (c->broken) {
		bc_store_set_errmsg("postgres: rollback: the connection was lost");
		return BC_ERR_UNAVAILABLE;
	}
	switch (PQtransactionStatus(c->pg)) {
	case PQTRANS_IDLE: return 0;
	case PQTRANS_INTRANS:
	case PQTRANS_INERROR: return pg_simple(c, "ROLLBACK", "rollback", NULL);
	default:
		c->broken = 1;
		bc_store_set_errmsg("postgres: rollback: the connection is busy or lost");
		return BC_ERR_UNAVAILABLE;
	}
}

static int pg_commit(struct bc_conn *bc)
{
	struct pg_conn *c = (struct pg_conn *)bc;
	PGresult *r = NULL;
	char msg[512];
	int rc;

	if (c->broken) {
		bc_store_set_errmsg("postgres: commit: the connection was lost");
		return BC_ERR_UNAVAILABLE;
	}
	/* a connection lost here leaves the outcome unknown: UNAVAILABLE, not replayed */
	if ((rc = pg_simple(c, "COMMIT", "commit", &r)) == 0 &&
	    strcmp(PQcmdStatus(r), "ROLLBACK") == 0) {
		bc_store_set_errmsg("postgres: commit: a statement had failed: rolled back");
		rc = BC_ERR_DB;
	}
	PQclear(r);
	if (rc != 0 && !c->broken && PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
		/* keep the commit's message, not the rollback's */
		snprintf(msg, sizeof(msg), "%s", bc_store_errmsg());
		(void)pg_rollback(bc);
		bc_store_set_errmsg("%s", msg);
	}
	return rc;
}

static int pg_reusable(struct bc_conn *bc)
{
	struct pg_conn *c = (struct pg_conn *)bc;

	return !c->broken && PQstatus(c->pg) == CONNECTION_OK &&
	       PQtransactionStatus(c->pg) == PQTRANS_IDLE &&
	       PQpipelineStatus(c->pg) == PQ_PIPELINE_OFF;
}

static int pg_lock_schema(struct bc_conn *bc)
{
	struct pg_conn *c = (struct pg_conn *)bc;
	const bc_param p[] = {BC_INT(SCHEMA_LOCK_KEY)};
	PGresult *r = NULL;
	int rc;

	rc = run_params(c, "SELECT pg_advisory_xact_lock($1)", p, 1, &r);
	PQclear(r);
	return rc;
}

/* ---- statements and results ---- */

static int pg_exec(struct bc_conn *bc, const char *sql, const bc_param *params, size_t n,
                   int64_t *changes)
{
	struct pg_conn *c = (struct pg_conn *)bc;
	PGresult *r = NULL;
	const char *tag;
	int rc;

	if (changes != NULL)
		*changes = 0;
	if ((rc = run_params(c, sql, params, n, &r)) != 0)
		return rc;
	/* rows changed, as SQLite counts them: not a SELECT's rows */
	tag = PQcmdStatus(r);
	if (changes != NULL &&
	    (strncmp(tag, "INSERT ", 7) == 0 || strncmp(tag, "UPDATE ", 7) == 0 ||
	     strncmp(tag, "DELETE ", 7) == 0 || strncmp(tag, "MERGE ", 6) == 0))
		*changes = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return 0;
}

static int pg_exec_script(struct bc_conn *bc, const char *sql)
{
	return pg_simple((struct pg_conn *)bc, sql, "migration", NULL);
}

static void rows_drop_blobs(struct pg_rows *r)
{
	for (int i = 0; r->blobs != NULL && i < r->ncols; i++) {
		PQfreemem(r->blobs[i].p);
		r->blobs[i] = (struct pg_blob){0};
	}
}

static void pg_rows_free(struct bc_rows *br)
{
	struct pg_rows *r = (struct pg_rows *)br;

	rows_drop_blobs(r);
	free(r->blobs);
	PQclear(r->res);
	free(r);
}

static int pg_query(struct bc_conn *bc, const char *sql, const bc_param *params, size_t n,
                    struct bc_rows **out)
{
	struct pg_conn *c = (struct pg_conn *)bc;
	struct pg_rows *r;
	int rc;

	*out = NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return BC_ERR_NOMEM;
	r->base.eng = &bc_engine_postgres;
	r->row = -1;
	if ((rc = run_params(c, sql, params, n, &r->res)) != 0) {
		free(r);
		return rc;
	}
	r->nrows = PQntuples(r->res);
	r->ncols = PQnfields(r->res);
	if (r->ncols > 0 && (r->blobs = calloc((size_t)r->ncols, sizeof(*r->blobs))) == NULL) {
		pg_rows_free(&r->base);
		return BC_ERR_NOMEM;
	}
	*out = &r->base;
	return 0;
}

static int pg_rows_next(struct bc_rows *br)
{
	struct pg_rows *r = (struct pg_rows *)br;

	rows_drop_blobs(r);
	if (r->row < r->nrows)
		r->row++;
	return r->row < r->nrows ? 1 : 0;
}

static int col_ok(struct pg_rows *r, int col)
{
	return r->row >= 0 && r->row < r->nrows && col >= 0 && col < r->ncols;
}

static int pg_rows_is_null(struct bc_rows *br, int col)
{
	struct pg_rows *r = (struct pg_rows *)br;

	return !col_ok(r, col) || PQgetisnull(r->res, r->row, col);
}

static const char *pg_rows_text(struct bc_rows *br, int col)
{
	struct pg_rows *r = (struct pg_rows *)br;

	return pg_rows_is_null(br, col) ? "" : PQgetvalue(r->res, r->row, col);
}

/* int8 (and every integer type) in text; a boolean reads 1 or 0, as on SQLite */
static int64_t pg_rows_int(struct bc_rows *br, int col)
{
	const char *t = pg_rows_text(br, col);

	if (strcmp(t, "t") == 0)
		return 1;
	return strtoll(t, NULL, 10);
}

/* NULL for SQL NULL; a valid pointer for an empty value. A bytea is decoded from
 * its text form; any other column gives its text's bytes. */
static const uint8_t *pg_rows_blob(struct bc_rows *br, int col, size_t *len)
{
	struct pg_rows *r = (struct pg_rows *)br;
	struct pg_blob *b;

	if (len != NULL)
		*len = 0;
	if (pg_rows_is_null(br, col))
		return NULL;
	if (PQftype(r->res, col) != OID_BYTEA) {
		if (len != NULL)
			*len = (size_t)PQgetlength(r->res, r->row, col);
		return (const uint8_t *)PQgetvalue(r->res, r->row, col);
	}
	b = &r->blobs[col];
	if (b->p == NULL &&
	    (b->p = PQunescapeBytea((const unsigned char *)PQgetvalue(r->res, r->row, col),
	                            &b->len)) == NULL)
		return NULL;
	if (len != NULL)
		*len = b->len;
	return b->len > 0 ? b->p : empty_blob;
}

/* Not PQfnumber(): it folds an unquoted name to lower case and strips the quotes of
 * a quoted one, so that a name would match otherwise than on SQLite. */
static int pg_rows_col(struct bc_rows *br, const char *name)
{
	struct pg_rows *r = (struct pg_rows *)br;
	const char *c;

	for (int i = 0; i < r->ncols; i++)
		if ((c = PQfname(r->res, i)) != NULL && strcasecmp(c, name) == 0)
			return i;
	return -1;
}

static int pg_now_ms(struct bc_conn *bc, int64_t *out)
{
	struct pg_conn *c = (struct pg_conn *)bc;
	PGresult *r = NULL;
	int rc;

	*out = 0;
	if ((rc = run_params(c, NOW_SQL, NULL, 0, &r)) != 0)
		return rc;
	if (PQntuples(r) != 1 || PQgetisnull(r, 0, 0)) {
		PQclear(r);
		bc_store_set_errmsg("postgres: no database time");
		return BC_ERR_DB;
	}
	*out = strtoll(PQgetvalue(r, 0, 0), NULL, 10) + bc_clock_offset_ms();
	PQclear(r);
	return 0;
}

const struct bc_engine bc_engine_postgres = {
    .kind = BC_STORE_POSTGRES,
    .name = "postgres",
    .open = pg_open,
    .close = pg_close,
    .connect = pg_connect,
    .disconnect = pg_disconnect,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .reusable = pg_reusable,
    .lock_schema = pg_lock_schema,
    .backup = NULL,
    .exec = pg_exec,
    .exec_script = pg_exec_script,
    .query = pg_query,
    .rows_next = pg_rows_next,
    .rows_is_null = pg_rows_is_null,
    .rows_text = pg_rows_text,
    .rows_int = pg_rows_int,
    .rows_blob = pg_rows_blob,
    .rows_free = pg_rows_free,
    .rows_col = pg_rows_col,
    .now_ms = pg_now_ms,
};

#else /* no libpq at build time */

static int pg_open(const char *target, void **state, char *err, size_t errlen)
{
	(void)target;
	*state = NULL;
	bc_store_set_errmsg("this better-compute was built without libpq: no PostgreSQL");
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", bc_store_errmsg());
	return BC_ERR_UNSUPPORTED;
}

/* never reached: open() refuses */
const struct bc_engine bc_engine_postgres = {
    .kind = BC_STORE_POSTGRES,
    .name = "postgres",
    .open = pg_open,
};

#endif
