/* Moving a store: bc_store_copy() (store.h), what `better-compute store copy` runs
 * to take an operator from the embedded SQLite store to PostgreSQL.
 *
 * The target is written in ONE transaction, so a copy that fails leaves it as empty
 * as it was and can run again; rows go in multi-row INSERTs (PostgreSQL runs each
 * statement under a savepoint, so thousands of single-row statements would cost a
 * savepoint each). The source is read in one read transaction: stop the servers on
 * it first, as the copy is only as consistent as that transaction's view. Columns are
 * read from the source's catalogue, so a column added by a later migration is copied
 * without a change here; a table added by one must be put in `tables` (in foreign-key
 * order), and until it is, the copy refuses rather than leave it behind. */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/store.h"

#define DEFAULT_BATCH 500
/* below both engines' limits on parameters per statement (SQLite 32766) */
#define MAX_PARAMS 30000
#define MAX_COLS   64

/* Every table of the schema but schema_migrations, parents before children. */
static const char *const tables[] = {
    "tenants",       "api_keys",      "pools",
    "sites",         "nodes",         "node_certs",
    "join_tokens",   "node_bindings", "attestation_uses",
    "join_requests", "leases",        "workflows",
    "inventory",     "events",        "audit",
    "pki_keys",      "pki_state",     "node_macs",
};
#define N_TABLES (sizeof(tables) / sizeof(tables[0]))

enum kind { K_TEXT = 0, K_INT, K_BLOB };

struct table {
	const char *name;
	char *cols[MAX_COLS];
	enum kind kinds[MAX_COLS];
	size_t ncols;
};

struct val {
	int null;
	int64_t i;
	void *p; /* text (NUL-terminated) or blob */
	size_t len;
};

struct copy {
	bc_tx *src, *dst;
	int64_t batch;
	char *err;
	size_t errlen;
};

static int fail(struct copy *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct copy *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->ncols; i++)
		free(t->cols[i]);
	t->ncols = 0;
}

static int known_table(const char *name)
{
	if (strcmp(name, "schema_migrations") == 0)
		return 1;
	for (size_t i = 0; i < N_TABLES; i++)
		if (strcmp(name, tables[i]) == 0)
			return 1;
	return 0;
}

/* A table of the source that the list above lacks would be silently left behind. */
static int check_source_tables(struct copy *c)
{
	const char *sql =
	    bc_store_engine(bc_tx_store(c->src)) == BC_STORE_SQLITE
	        ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
	          "'sqlite_%'"
	        : "SELECT table_name FROM information_schema.tables WHERE table_schema = "
	          "current_schema() AND table_type = 'BASE TABLE'";
	bc_rows *r = NULL;
	int rc;

	if ((rc = bc_tx_query(c->src, sql, NULL, 0, &r)) != 0)
		return fail(c, rc, "cannot list the source's tables: %s", bc_store_errmsg());
	while ((rc = bc_rows_next(r)) == 1) {
		if (!known_table(bc_rows_text(r, 0))) {
			rc = fail(
			    c, BC_ERR_CONFIG,
			    "the source holds a table %s that this better-compute cannot copy: "
			    "use the better-compute that wrote it",
			    bc_rows_text(r, 0));
			break;
		}
	}
	bc_rows_free(r);
	return rc < 0 ? rc : 0;
}

static int check_versions(struct copy *c)
{
	const char *sql = "SELECT COALESCE(MAX(version), 0) FROM schema_migrations";
	int64_t a = 0, b = 0;
	char va[24], vb[24];
	int rc;

	if ((rc = bc_tx_query_int(c->src, sql, NULL, 0, &a)) != 0 ||
	    (rc = bc_tx_query_int(c->dst, sql, NULL, 0, &b)) != 0)
		return fail(c, rc, "cannot read the schema versions: %s", bc_store_errmsg());
	if (a != b) {
		snprintf(va, sizeof(va), "%" PRId64, a);
		snprintf(vb, sizeof(vb), "%" PRId64, b);
		return fail(c, BC_ERR_CONFIG,
		            "the source's schema is version %s and the target's %s: open both with "
		            "the same better-compute (serve or init migrates them)",
		            va, vb);
	}
	return 0;
}

static int check_target_empty(struct copy *c)
{
	char sql[160];
	int64_t n = 0;
	int rc;

	for (size_t i = 0; i < N_TABLES; i++) {
		snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM (SELECT 1 FROM %s LIMIT 1) x",
		         tables[i]);
		if ((rc = bc_tx_query_int(c->dst, sql, NULL, 0, &n)) != 0)
			return fail(c, rc, "cannot read the target's table %s: %s", tables[i],
			            bc_store_errmsg());
		if (n > 0)
			return fail(
			    c, BC_ERR_CONFLICT,
			    "target is not empty (table %s holds rows): copy only into a new "
			    "database",
			    tables[i]);
	}
	return 0;
}

static enum kind kind_of(const char *type)
{
	if (strcasestr(type, "int") != NULL)
		return K_INT;
	if (strcasestr(type, "blob") != NULL || strcasestr(type, "bytea") != NULL)
		return K_BLOB;
	return K_TEXT;
}

/* Column names go into SQL text: only what our schema uses. */
static int name_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

static int read_columns(struct copy *c, struct table *t)
{
	const char *sql =
	    bc_store_engine(bc_tx_store(c->src)) == BC_STORE_SQLITE
	        ? "SELECT name, type FROM pragma_table_info($1) ORDER BY cid"
	        : "SELECT column_name, data_type FROM information_schema.columns WHERE "
	          "table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position";
	bc_rows *r = NULL;
	int rc;

	if ((rc = bc_tx_query(c->src, sql, (bc_param[]){BC_TEXT(t->name)}, 1, &r)) != 0)
		return fail(c, rc, "cannot read the columns of %s: %s", t->name, bc_store_errmsg());
	while ((rc = bc_rows_next(r)) == 1) {
		if (t->ncols == MAX_COLS || !name_ok(bc_rows_text(r, 0))) {
			rc = fail(c, BC_ERR_CONFIG, "table %s: unexpected column %s", t->name,
			          bc_rows_text(r, 0));
			break;
		}
		if ((t->cols[t->ncols] = strdup(bc_rows_text(r, 0))) == NULL) {
			rc = BC_ERR_NOMEM;
			break;
		}
		t->kinds[t->ncols++] = kind_of(bc_rows_text(r, 1));
	}
	bc_rows_free(r);
	if (rc == 0 && t->ncols == 0)
		rc = fail(c, BC_ERR_CONFIG, "the source has no table %s", t->name);
	return rc < 0 ? rc : 0;
}

/* "<prefix>c1, c2, ..." into an open stream. */
static void put_cols(FILE *f, const struct table *t)
{
	for (size_t i = 0; i < t->ncols; i++)
		fprintf(f, "%s%s", i ? ", " : "", t->cols[i]);
}

static char *select_sql(const struct table *t)
{
	char *sql = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&sql, &len);

	if (f == NULL)
		return NULL;
	fputs("SELECT ", f);
	put_cols(f, t);
	fprintf(f, " FROM %s", t->name);
	if (fclose(f) != 0) {
		free(sql);
		return NULL;
	}
	return sql;
}

static char *insert_sql(const struct table *t, size_t rows)
{
	char *sql = NULL;
	size_t len = 0, n = 1;
	FILE *f = open_memstream(&sql, &len);

	if (f == NULL)
		return NULL;
	fprintf(f, "INSERT INTO %s (", t->name);
	put_cols(f, t);
	fputs(") VALUES ", f);
	for (size_t r = 0; r < rows; r++) {
		fputs(r ? ", (" : "(", f);
		for (size_t i = 0; i < t->ncols; i++)
			fprintf(f, "%s$%zu", i ? ", " : "", n++);
		fputc(')', f);
	}
	if (fclose(f) != 0) {
		free(sql);
		return NULL;
	}
	return sql;
}

/* The current row's value of column i, owned by v. */
static int take(bc_rows *r, int i, enum kind k, struct val *v)
{
	const void *p;

	memset(v, 0, sizeof(*v));
	if ((v->null = bc_rows_is_null(r, i)) != 0)
		return 0;
	if (k == K_INT) {
		v->i = bc_rows_int(r, i);
		return 0;
	}
	if (k == K_BLOB)
		p = bc_rows_blob(r, i, &v->len);
	else
		v->len = strlen((const char *)(p = bc_rows_text(r, i)));
	if ((v->p = malloc(v->len + 1)) == NULL)
		return BC_ERR_NOMEM;
	if (v->len > 0)
		memcpy(v->p, p, v->len);
	((char *)v->p)[v->len] = '\0';
	return 0;
}

static void vals_clear(struct val *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].p);
		v[i].p = NULL;
	}
}

static int flush(struct copy *c, const struct table *t, struct val *v, bc_param *p, size_t rows)
{
	size_t n = rows * t->ncols;
	char *sql;
	int rc;

	if (rows == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		enum kind k = t->kinds[i % t->ncols];

		if (v[i].null)
			p[i] = BC_NULL;
		else if (k == K_INT)
			p[i] = BC_INT(v[i].i);
		else if (k == K_BLOB)
			p[i] = BC_BLOB(v[i].p, v[i].len);
		else
			p[i] = BC_TEXT((const char *)v[i].p);
	}
	if ((sql = insert_sql(t, rows)) == NULL)
		return BC_ERR_NOMEM;
	rc = bc_tx_exec(c->dst, sql, p, n, NULL);
	free(sql);
	if (rc != 0)
		return fail(c, rc, "cannot write rows of %s into the target: %s", t->name,
		            bc_store_errmsg());
	vals_clear(v, n);
	return 0;
}

static int copy_rows(struct copy *c, const struct table *t, int64_t *copied)
{
	size_t per = (size_t)c->batch, rows = 0;
	struct val *v = NULL;
	bc_param *p = NULL;
	bc_rows *r = NULL;
	char *sql = NULL;
	int rc;

	if (per * t->ncols > MAX_PARAMS)
		per = MAX_PARAMS / t->ncols;
	v = calloc(per * t->ncols, sizeof(*v));
	p = calloc(per * t->ncols, sizeof(*p));
	if (v == NULL || p == NULL || (sql = select_sql(t)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = bc_tx_query(c->src, sql, NULL, 0, &r)) != 0) {
		rc = fail(c, rc, "cannot read %s from the source: %s", t->name, bc_store_errmsg());
		goto out;
	}
	while ((rc = bc_rows_next(r)) == 1) {
		for (size_t i = 0; i < t->ncols; i++)
			if ((rc = take(r, (int)i, t->kinds[i], &v[rows * t->ncols + i])) != 0)
				goto out;
		(*copied)++;
		if (++rows == per) {
			if ((rc = flush(c, t, v, p, rows)) != 0)
				goto out;
			rows = 0;
		}
	}
	if (rc < 0) {
		rc = fail(c, rc, "cannot read %s from the source: %s", t->name, bc_store_errmsg());
		goto out;
	}
	rc = flush(c, t, v, p, rows);
out:
	bc_rows_free(r);
	if (v != NULL)
		vals_clear(v, per * t->ncols);
	free(v);
	free(p);
	free(sql);
	return rc;
}

static int copy_all(struct copy *c, struct bc_copy_report *out)
{
	struct table t;
	int rc;

	if ((rc = check_source_tables(c)) != 0 || (rc = check_versions(c)) != 0 ||
	    (rc = check_target_empty(c)) != 0)
		return rc;
	for (size_t i = 0; i < N_TABLES; i++) {
		memset(&t, 0, sizeof(t));
		t.name = tables[i];
		out->tables[i].table = tables[i];
		out->n_tables = i + 1;
		if ((rc = read_columns(c, &t)) == 0)
			rc = copy_rows(c, &t, &out->tables[i].rows);
		table_free(&t);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int bc_store_copy(bc_store *from, bc_store *to, int64_t batch, struct bc_copy_report *out,
                  char *err, size_t errlen)
{
	char dummy[1];
	struct copy c = {.batch = batch > 0 ? batch : DEFAULT_BATCH,
	                 .err = err != NULL && errlen > 0 ? err : dummy,
	                 .errlen = err != NULL && errlen > 0 ? errlen : sizeof(dummy)};
	int rc;

	c.err[0] = '\0';
	if (out == NULL)
		return BC_ERR_INVALID;
	memset(out, 0, sizeof(*out));
	if (from == NULL || to == NULL || from == to || batch < 0)
		return fail(&c, BC_ERR_INVALID, "store copy: invalid arguments");
	if ((rc = bc_tx_begin(from, BC_TX_READ, &c.src)) != 0)
		return fail(&c, rc, "cannot read the source: %s", bc_store_errmsg());
	if ((rc = bc_tx_begin(to, BC_TX_WRITE, &c.dst)) != 0) {
		rc = fail(&c, rc, "cannot write the target: %s", bc_store_errmsg());
		goto out;
	}
	if ((rc = copy_all(&c, out)) != 0)
		goto out;
	rc = bc_tx_commit(c.dst);
	c.dst = NULL;
	if (rc != 0)
		rc = fail(&c, rc, "cannot commit the copy into the target: %s", bc_store_errmsg());
out:
	bc_tx_rollback(c.dst);
	bc_tx_rollback(c.src);
	return rc;
}
