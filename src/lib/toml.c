/* The TOML subset of include/bc/toml.h.
 *
 * Choices beyond the header:
 * - Dotted keys (`a.b = 1`) are refused: write a [a] table instead. Every key
 *   therefore belongs to the table of the header above it.
 * - A quoted key may not be empty or contain '.', so that a dotted lookup path
 *   names exactly one key or table.
 * - Basic strings accept TOML's escapes \b \t \n \f \r \" \\ \uXXXX \UXXXXXXXX;
 *   an escape of U+0000 or of a surrogate is refused (values are C strings).
 * - Control characters other than tab (and CR only before LF) are refused
 *   anywhere in the file, as TOML refuses them in strings and comments and they
 *   have no place elsewhere.
 * - At most TOML_MAX_NODES keys and tables, so the work done is bounded too
 *   (the path index is an unkeyed hash: fine for a local config file, and the
 *   cap bounds even a crafted one).
 * - As in TOML, [a.b] creates [a] implicitly and [a] may follow it once.
 * Errors are BC_ERR_CONFIG (BC_ERR_LIMIT for size) with "line N: ...". */
#include "bc/toml.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bc/buf.h"
#include "bc/files.h"
#include "lib/utf8.h"

#define TOML_MAX_BYTES (1024u * 1024u)
#define TOML_MAX_NODES 16384u
#define NO_NODE        ((size_t)-1)
#define END            (-1)

enum node_kind { N_TABLE, N_STRING, N_INT, N_BOOL, N_STRINGS };

struct value {
	enum node_kind kind;
	char *str;
	int64_t i;
	int b;
	char **strs; /* NULL-terminated */
	size_t nstrs, capstrs;
};

struct node {
	char *path;       /* full dotted path; "" for the root table */
	const char *name; /* last segment, inside path */
	int line;
	int defined; /* a table named by its own header (or the root) */
	struct value v;
	const char **keys; /* tables: names of direct keys, in file order */
	size_t nkeys, capkeys;
	const char **subs; /* tables: names of direct sub-tables, in file order */
	size_t nsubs, capsubs;
};

struct bc_toml {
	struct node **nodes;
	size_t n, cap;
	size_t *slots; /* open addressing over paths: node index + 1, 0 is empty */
	size_t nslots;
};

struct parser {
	const char *s;
	size_t len, pos;
	int line;
	bc_toml *t;
	size_t table; /* the current table's node */
	char *err;
	size_t errlen;
};

static const char *const no_names[1] = {NULL};

/* ---- the tree ---- */

static uint64_t hash_path(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static size_t find(const bc_toml *t, const char *path)
{
	size_t i, idx;

	if (t == NULL || path == NULL || t->nslots == 0)
		return NO_NODE;
	i = (size_t)hash_path(path) & (t->nslots - 1);
	while ((idx = t->slots[i]) != 0) {
		if (strcmp(t->nodes[idx - 1]->path, path) == 0)
			return idx - 1;
		i = (i + 1) & (t->nslots - 1);
	}
	return NO_NODE;
}

static void slot_put(size_t *slots, size_t nslots, const char *path, size_t idx)
{
	size_t i = (size_t)hash_path(path) & (nslots - 1);

	while (slots[i] != 0)
		i = (i + 1) & (nslots - 1);
	slots[i] = idx + 1;
}

/* Keeps the table at most half full, so a probe always ends. */
static int index_grow(bc_toml *t)
{
	size_t nslots, *slots;

	if (2 * (t->n + 1) <= t->nslots)
		return 0;
	nslots = t->nslots ? 2 * t->nslots : 64;
	if ((slots = calloc(nslots, sizeof(*slots))) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; i < t->n; i++)
		slot_put(slots, nslots, t->nodes[i]->path, i);
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

static int push_name(const char ***v, size_t *n, size_t *cap, const char *name)
{
	const char **nv;
	size_t ncap;

	if (*n + 1 >= *cap) {
		ncap = *cap ? 2 * *cap : 8;
		if ((nv = realloc(*v, ncap * sizeof(*nv))) == NULL)
			return BC_ERR_NOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = name;
	(*v)[*n] = NULL;
	return 0;
}

static void value_clear(struct value *v)
{
	if (v->str)
		bc_freezero(v->str, strlen(v->str));
	for (size_t i = 0; i < v->nstrs; i++)
		bc_freezero(v->strs[i], strlen(v->strs[i]));
	free(v->strs);
	memset(v, 0, sizeof(*v));
}

static void node_free(struct node *nd)
{
	if (nd == NULL)
		return;
	free(nd->path);
	value_clear(&nd->v);
	free(nd->keys);
	free(nd->subs);
	free(nd);
}

/* Adds a node under parent, taking path and the value's contents (freed on
 * failure too). */
static int add_node(bc_toml *t, char *path, size_t parent, struct value *v, int line, size_t *idx)
{
	struct node *nd = NULL, **nn, *pn;
	const char *dot;
	int rc;

	*idx = NO_NODE;
	if (t->n >= TOML_MAX_NODES) {
		rc = BC_ERR_LIMIT;
		goto out;
	}
	if ((nd = calloc(1, sizeof(*nd))) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if (t->n == t->cap) {
		if ((nn = realloc(t->nodes, (t->cap ? 2 * t->cap : 16) * sizeof(*nn))) == NULL) {
			rc = BC_ERR_NOMEM;
			goto out;
		}
		t->nodes = nn;
		t->cap = t->cap ? 2 * t->cap : 16;
	}
	if ((rc = index_grow(t)) != 0)
		goto out;
	nd->path = path;
	path = NULL;
	nd->name = (dot = strrchr(nd->path, '.')) ? dot + 1 : nd->path;
	nd->line = line;
	nd->v = *v;
	memset(v, 0, sizeof(*v));
	if (parent != NO_NODE) {
		pn = t->nodes[parent];
		if (nd->v.kind == N_TABLE)
			rc = push_name(&pn->subs, &pn->nsubs, &pn->capsubs, nd->name);
		else
			rc = push_name(&pn->keys, &pn->nkeys, &pn->capkeys, nd->name);
		if (rc != 0)
			goto out;
	}
	slot_put(t->slots, t->nslots, nd->path, t->n);
	*idx = t->n;
	t->nodes[t->n++] = nd;
	nd = NULL;
out:
	free(path);
	value_clear(v);
	node_free(nd);
	return rc;
}

/* "a.b" + "c" -> "a.b.c"; "" + "c" -> "c". */
static char *join_path(const char *parent, const char *name)
{
	size_t pl = strlen(parent), nl = strlen(name);
	char *s;

	if ((s = malloc(pl + nl + 2)) == NULL)
		return NULL;
	if (pl) {
		memcpy(s, parent, pl);
		s[pl++] = '.';
	}
	memcpy(s + pl, name, nl + 1);
	return s;
}

/* ---- lexing ---- */

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parser *p, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "line %d: %s", p->line, msg);
	return BC_ERR_CONFIG;
}

static int peek_at(const struct parser *p, size_t ahead)
{
	if (ahead >= p->len - p->pos)
		return END;
	return (unsigned char)p->s[p->pos + ahead];
}

static int peek(const struct parser *p)
{
	return peek_at(p, 0);
}

/* What was found, for messages: never echoes a byte that is not printable. */
static const char *describe(int c, char buf[static 16])
{
	if (c == END)
		return "end of file";
	if (c == '\n' || c == '\r')
		return "end of line";
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, 16, "'%c'", c);
	else
		snprintf(buf, 16, "byte 0x%02x", (unsigned)c);
	return buf;
}

static int is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static void skip_ws(struct parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		p->pos++;
}

/* Consumes a line break (the pre-scan saw every CR is followed by LF). */
static int eat_newline(struct parser *p)
{
	if (peek(p) == '\r')
		p->pos++;
	if (peek(p) != '\n')
		return 0;
	p->pos++;
	p->line++;
	return 1;
}

static void skip_comment(struct parser *p)
{
	if (peek(p) != '#')
		return;
	while (peek(p) != END && peek(p) != '\n' && peek(p) != '\r')
		p->pos++;
}

/* After a header or a value: blanks, a comment, then the end of the line. */
static int end_line(struct parser *p)
{
	char b[16];
	int c;

	skip_ws(p);
	skip_comment(p);
	c = peek(p);
	if (c == END || eat_newline(p))
		return 0;
	return fail(p, "expected the end of the line, found %s", describe(c, b));
}

/* NUL, control characters and invalid UTF-8 are refused up front, with the
 * line they are on. */
static int prescan(struct parser *p)
{
	const uint8_t *s = (const uint8_t *)p->s;
	size_t i = 0, n;

	while (i < p->len) {
		if (s[i] == 0)
			return fail(p, "NUL byte");
		if (s[i] == '\r' && (i + 1 == p->len || s[i + 1] != '\n'))
			return fail(p, "carriage return not followed by a line feed");
		if ((s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') || s[i] == 0x7f)
			return fail(p, "control character 0x%02x", s[i]);
		if ((n = bc_utf8_seq_len(s + i, p->len - i)) == 0)
			return fail(p, "invalid UTF-8");
		if (s[i] == '\n')
			p->line++;
		i += n;
	}
	p->line = 1;
	return 0;
}

/* ---- strings ---- */

static int put_utf8(bc_buf *b, uint32_t cp)
{
	uint8_t u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (uint8_t)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (uint8_t)(0xc0 | cp >> 6);
		u[1] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (uint8_t)(0xe0 | cp >> 12);
		u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (uint8_t)(0xf0 | cp >> 18);
		u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return bc_buf_put(b, u, n);
}

/* \uXXXX or \UXXXXXXXX, p->pos on the 'u' or 'U'. */
static int parse_unicode(struct parser *p, bc_buf *b)
{
	size_t n = peek(p) == 'u' ? 4 : 8;
	uint32_t cp = 0;
	int c;

	p->pos++;
	for (size_t i = 0; i < n; i++) {
		c = peek(p);
		if (c >= '0' && c <= '9')
			cp = cp << 4 | (uint32_t)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			cp = cp << 4 | (uint32_t)((c | 0x20) - 'a' + 10);
		else
			return fail(p, "\\%c needs %zu hex digits", n == 4 ? 'u' : 'U', n);
		p->pos++;
	}
	if (cp == 0)
		return fail(p, "\\u0000 is not allowed in a string");
	if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return fail(p, "escape of an invalid code point U+%04X", (unsigned)cp);
	return put_utf8(b, cp) == 0 ? 0 : fail(p, "string too long");
}

static int parse_escape(struct parser *p, bc_buf *b)
{
	char tmp[16];
	int c;

	p->pos++; /* the backslash */
	switch ((c = peek(p))) {
	case 'b': c = '\b'; break;
	case 't': c = '\t'; break;
	case 'n': c = '\n'; break;
	case 'f': c = '\f'; break;
	case 'r': c = '\r'; break;
	case '"': c = '"'; break;
	case '\\': c = '\\'; break;
	case 'u':
	case 'U': return parse_unicode(p, b);
	default: return fail(p, "invalid escape \\ followed by %s", describe(c, tmp));
	}
	p->pos++;
	return bc_buf_put_u8(b, (uint8_t)c) == 0 ? 0 : fail(p, "string too long");
}

/* A "basic" or 'literal' string on one line, p->pos on the opening quote. */
static int parse_string(struct parser *p, char **out)
{
	int q = peek(p), c, rc = 0;
	size_t len;
	bc_buf b;

	*out = NULL;
	if (peek_at(p, 1) == q && peek_at(p, 2) == q)
		return fail(p, "multi-line strings are not supported");
	bc_buf_init(&b, TOML_MAX_BYTES + 1);
	p->pos++;
	while ((c = peek(p)) != q) {
		if (c == END || c == '\n' || c == '\r') {
			rc = fail(p, "unterminated string");
			goto out;
		}
		if (c == '\\' && q == '"') {
			if ((rc = parse_escape(p, &b)) != 0)
				goto out;
			continue;
		}
		if ((rc = bc_buf_put_u8(&b, (uint8_t)c)) != 0) {
			rc = fail(p, "string too long");
			goto out;
		}
		p->pos++;
	}
	p->pos++;
	if ((rc = bc_buf_put_u8(&b, 0)) != 0) {
		rc = fail(p, "string too long");
		goto out;
	}
	if ((*out = (char *)bc_buf_steal(&b, &len)) == NULL)
		rc = BC_ERR_NOMEM;
out:
	bc_buf_free(&b);
	return rc;
}

/* Keys become lookup paths and appear in "unknown key" messages. */
static int quoted_key_ok(const char *k)
{
	if (*k == '\0')
		return 0;
	for (; *k; k++)
		if (*k == '.' || (unsigned char)*k < 0x20 || *k == 0x7f)
			return 0;
	return 1;
}

static int parse_key(struct parser *p, char **out)
{
	size_t start = p->pos;
	char b[16];
	int c = peek(p), rc;

	*out = NULL;
	if (c == '"' || c == '\'') {
		if ((rc = parse_string(p, out)) != 0)
			return rc;
		if (!quoted_key_ok(*out)) {
			free(*out);
			*out = NULL;
			return fail(
			    p, "a quoted key may not be empty or hold '.' or a control character");
		}
		return 0;
	}
	while (is_bare(peek(p)))
		p->pos++;
	if (p->pos == start)
		return fail(p, "expected a key, found %s", describe(c, b));
	if ((*out = strndup(p->s + start, p->pos - start)) == NULL)
		return BC_ERR_NOMEM;
	return 0;
}

/* ---- values ---- */

/* Decimal with optional sign and '_' between digits; no leading zeros. */
static int parse_int(struct parser *p, int64_t *out)
{
	uint64_t mag = 0, lim = INT64_MAX;
	int neg = 0, c, digits = 0;

	*out = 0;
	if (peek(p) == '+' || peek(p) == '-') {
		neg = peek(p) == '-';
		p->pos++;
	}
	lim += (uint64_t)neg;
	if (peek(p) == '0' &&
	    (peek_at(p, 1) == 'x' || peek_at(p, 1) == 'o' || peek_at(p, 1) == 'b'))
		return fail(p, "hexadecimal, octal and binary integers are not supported");
	if (peek(p) == '0' &&
	    (peek_at(p, 1) == '_' || (peek_at(p, 1) >= '0' && peek_at(p, 1) <= '9')))
		return fail(p, "leading zeros are not allowed");
	for (;;) {
		c = peek(p);
		if (c == '_') {
			if (digits == 0 || peek_at(p, 1) < '0' || peek_at(p, 1) > '9')
				return fail(p, "'_' in an integer must be between digits");
			p->pos++;
			continue;
		}
		if (c < '0' || c > '9')
			break;
		if (mag > (lim - (uint64_t)(c - '0')) / 10)
			return fail(p, "integer out of range");
		mag = mag * 10 + (uint64_t)(c - '0');
		digits++;
		p->pos++;
	}
	if (digits == 0)
		return fail(p, "expected a value");
	if (c == '.' || c == 'e' || c == 'E')
		return fail(p, "floats are not supported");
	if (c == '-' || c == ':')
		return fail(p, "dates and times are not supported");
	if (is_bare(c))
		return fail(p, "invalid integer");
	/* -2^63 has no positive counterpart: negate in unsigned arithmetic */
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

static int parse_bool(struct parser *p, int *out)
{
	*out = 0;
	if (p->len - p->pos >= 4 && memcmp(p->s + p->pos, "true", 4) == 0 &&
	    !is_bare(peek_at(p, 4))) {
		p->pos += 4;
		*out = 1;
		return 0;
	}
	if (p->len - p->pos >= 5 && memcmp(p->s + p->pos, "false", 5) == 0 &&
	    !is_bare(peek_at(p, 5))) {
		p->pos += 5;
		return 0;
	}
	return fail(p, "expected a value (true and false are lower case)");
}

/* Blank space inside an array: blanks, comments and line breaks. */
static void skip_array_space(struct parser *p)
{
	for (;;) {
		skip_ws(p);
		skip_comment(p);
		if (!eat_newline(p))
			return;
	}
}

static int push_string(struct value *v, char *s)
{
	size_t ncap = v->capstrs ? 2 * v->capstrs : 8;
	char **ns;

	/* room for one more and the NULL after it */
	if (v->nstrs + 2 > v->capstrs) {
		if ((ns = realloc(v->strs, ncap * sizeof(*ns))) == NULL) {
			bc_freezero(s, strlen(s));
			return BC_ERR_NOMEM;
		}
		v->strs = ns;
		v->capstrs = ncap;
	}
	v->strs[v->nstrs++] = s;
	v->strs[v->nstrs] = NULL;
	return 0;
}

/* [ "a", 'b', ] over one or more lines; strings only. */
static int parse_array(struct parser *p, struct value *v)
{
	char b[16], *s;
	int c, rc, open_line = p->line;

	v->kind = N_STRINGS;
	/* non-NULL even when empty, for callers that iterate to the NULL */
	if ((v->strs = calloc(1, sizeof(*v->strs))) == NULL)
		return BC_ERR_NOMEM;
	v->capstrs = 1;
	p->pos++;
	for (;;) {
		skip_array_space(p);
		if ((c = peek(p)) == ']')
			break;
		if (c == END)
			return fail(p, "unterminated array (opened on line %d)", open_line);
		if (c != '"' && c != '\'')
			return fail(p, "arrays may hold only strings, found %s", describe(c, b));
		if ((rc = parse_string(p, &s)) != 0 || (rc = push_string(v, s)) != 0)
			return rc;
		skip_array_space(p);
		if ((c = peek(p)) == ']')
			break;
		if (c != ',')
			return fail(p, "expected ',' or ']' in the array, found %s",
			            describe(c, b));
		p->pos++;
	}
	p->pos++;
	return 0;
}

static int parse_value(struct parser *p, struct value *v)
{
	char b[16];
	int c = peek(p);

	memset(v, 0, sizeof(*v));
	switch (c) {
	case '"':
	case '\'': v->kind = N_STRING; return parse_string(p, &v->str);
	case '[': return parse_array(p, v);
	case '{': return fail(p, "inline tables are not supported");
	case 't':
	case 'f': v->kind = N_BOOL; return parse_bool(p, &v->b);
	case '+':
	case '-':
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9': v->kind = N_INT; return parse_int(p, &v->i);
	default: break;
	}
	if ((c == 'i' && peek_at(p, 1) == 'n' && peek_at(p, 2) == 'f') ||
	    (c == 'n' && peek_at(p, 1) == 'a' && peek_at(p, 2) == 'n'))
		return fail(p, "floats are not supported");
	return fail(p, "expected a value, found %s", describe(c, b));
}

/* ---- statements ---- */

static int add_table(struct parser *p, const char *path, size_t parent, size_t *idx)
{
	struct value tv = {.kind = N_TABLE};
	char *copy;
	int rc;

	*idx = NO_NODE;
	if ((copy = strdup(path)) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = add_node(p->t, copy, parent, &tv, p->line, idx)) == BC_ERR_LIMIT)
		(void)fail(p, "too many keys and tables");
	return rc;
}

/* Makes the table path exist (its parents implicitly) and the current one. */
static int define_table(struct parser *p, char *path)
{
	size_t idx, parent = 0;
	struct node *nd;
	char *dot;
	int rc = 0;

	for (dot = strchr(path, '.'); dot != NULL; dot = strchr(dot + 1, '.')) {
		*dot = '\0';
		if ((idx = find(p->t, path)) == NO_NODE)
			rc = add_table(p, path, parent, &idx);
		else if (p->t->nodes[idx]->v.kind != N_TABLE)
			rc = fail(p, "'%s' is a key (line %d), not a table", path,
			          p->t->nodes[idx]->line);
		*dot = '.';
		if (rc != 0)
			return rc;
		parent = idx;
	}
	if ((idx = find(p->t, path)) == NO_NODE) {
		if ((rc = add_table(p, path, parent, &idx)) != 0)
			return rc;
	} else if (p->t->nodes[idx]->v.kind != N_TABLE) {
		return fail(p, "table [%s] is already a key (line %d)", path,
		            p->t->nodes[idx]->line);
	} else if (p->t->nodes[idx]->defined) {
		return fail(p, "duplicate table [%s] (first on line %d)", path,
		            p->t->nodes[idx]->line);
	}
	nd = p->t->nodes[idx];
	nd->defined = 1;
	nd->line = p->line;
	p->table = idx;
	return 0;
}

/* [a.b."c"], p->pos on the '['. */
static int parse_header(struct parser *p)
{
	char b[16], *seg = NULL, *path = NULL, *np;
	int c, rc;

	p->pos++;
	if (peek(p) == '[')
		return fail(p, "arrays of tables ([[...]]) are not supported");
	if ((path = strdup("")) == NULL)
		return BC_ERR_NOMEM;
	for (;;) {
		skip_ws(p);
		if ((rc = parse_key(p, &seg)) != 0)
			goto out;
		np = join_path(path, seg);
		free(seg);
		free(path);
		if ((path = np) == NULL) {
			rc = BC_ERR_NOMEM;
			goto out;
		}
		skip_ws(p);
		if ((c = peek(p)) == ']')
			break;
		if (c != '.') {
			rc = fail(p, "expected '.' or ']' in the table header, found %s",
			          describe(c, b));
			goto out;
		}
		p->pos++;
	}
	p->pos++;
	if ((rc = define_table(p, path)) != 0)
		goto out;
	rc = end_line(p);
out:
	free(path);
	return rc;
}

/* key = value, in the current table. */
static int parse_keyval(struct parser *p)
{
	struct value v = {.kind = N_STRING};
	char b[16], *key = NULL, *path = NULL;
	int line = p->line, rc;
	size_t idx;

	if ((rc = parse_key(p, &key)) != 0)
		goto out;
	skip_ws(p);
	if (peek(p) == '.') {
		rc = fail(p, "dotted keys are not supported: put '%s' in a [table]", key);
		goto out;
	}
	if (peek(p) != '=') {
		rc =
		    fail(p, "expected '=' after the key '%s', found %s", key, describe(peek(p), b));
		goto out;
	}
	p->pos++;
	skip_ws(p);
	if ((path = join_path(p->t->nodes[p->table]->path, key)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((idx = find(p->t, path)) != NO_NODE) {
		rc = fail(p, "duplicate key '%s' (first on line %d)", path, p->t->nodes[idx]->line);
		goto out;
	}
	if ((rc = parse_value(p, &v)) != 0)
		goto out;
	rc = add_node(p->t, path, p->table, &v, line, &idx);
	path = NULL;
	if (rc == BC_ERR_LIMIT)
		(void)fail(p, "too many keys and tables");
	if (rc == 0)
		rc = end_line(p);
out:
	value_clear(&v);
	free(key);
	free(path);
	return rc;
}

static int parse_document(struct parser *p)
{
	int c, rc;

	if ((rc = prescan(p)) != 0)
		return rc;
	while (p->pos < p->len) {
		skip_ws(p);
		c = peek(p);
		if (c == '[')
			rc = parse_header(p);
		else if (c == '#' || c == '\n' || c == '\r' || c == END)
			rc = end_line(p);
		else
			rc = parse_keyval(p);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int bc_toml_parse(const char *text, size_t len, bc_toml **out, char *err, size_t errlen)
{
	struct value root = {.kind = N_TABLE};
	struct parser p = {.s = text, .len = len, .line = 1, .err = err, .errlen = errlen};
	bc_toml *t = NULL;
	char *path = NULL;
	size_t idx;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (text == NULL && len > 0)
		return BC_ERR_INVALID;
	if (len > TOML_MAX_BYTES) {
		if (err && errlen)
			snprintf(err, errlen, "larger than %u bytes", TOML_MAX_BYTES);
		return BC_ERR_LIMIT;
	}
	if (text == NULL)
		p.s = "";
	if ((t = calloc(1, sizeof(*t))) == NULL || (path = strdup("")) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = add_node(t, path, NO_NODE, &root, 0, &idx)) != 0)
		goto out;
	t->nodes[idx]->defined = 1;
	p.t = t;
	p.table = idx;
	if ((rc = parse_document(&p)) != 0)
		goto out;
	*out = t;
	t = NULL;
out:
	if (rc == BC_ERR_NOMEM && err && errlen)
		snprintf(err, errlen, "out of memory");
	bc_toml_free(t);
	return rc;
}

/* ---- files ---- */

int bc_toml_load(const char *path, bc_toml **out, char *err, size_t errlen)
{
	char msg[256] = "", *text = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (path == NULL)
		return BC_ERR_INVALID;
	/* no BC_FILE_TEXT: the parser refuses a NUL byte and names its line */
	switch ((rc = bc_file_read(path, TOML_MAX_BYTES, BC_FILE_FOLLOW, &text, &len))) {
	case 0: rc = bc_toml_parse(text, len, out, msg, sizeof(msg)); break;
	case BC_ERR_LIMIT:
		snprintf(msg, sizeof(msg), "larger than %u bytes", TOML_MAX_BYTES);
		break;
	case BC_ERR_INVALID:
		if (errno == EINVAL) {
			rc = BC_ERR_IO;
			snprintf(msg, sizeof(msg), "not a regular file");
			break;
		}
		/* a symbolic link (ELOOP) is said as an open error */
		__attribute__((fallthrough));
	case BC_ERR_NOT_FOUND:
		snprintf(msg, sizeof(msg), "cannot open: %s", strerror(errno));
		break;
	default: snprintf(msg, sizeof(msg), "read failed: %s", strerror(errno)); break;
	}
	if (rc != 0 && err && errlen)
		snprintf(err, errlen, "%s: %s", path, msg);
	bc_freezero(text, len + 1);
	return rc;
}

void bc_toml_free(bc_toml *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		node_free(t->nodes[i]);
	free(t->nodes);
	free(t->slots);
	free(t);
}

/* ---- lookups ---- */

static int lookup(const bc_toml *t, const char *path, enum node_kind kind, const struct node **nd)
{
	size_t idx;

	*nd = NULL;
	if ((idx = find(t, path)) == NO_NODE)
		return BC_ERR_NOT_FOUND;
	if (t->nodes[idx]->v.kind != kind)
		return BC_ERR_INVALID;
	*nd = t->nodes[idx];
	return 0;
}

int bc_toml_get_string(const bc_toml *t, const char *path, const char **out)
{
	const struct node *nd;
	int rc;

	*out = NULL;
	if ((rc = lookup(t, path, N_STRING, &nd)) != 0)
		return rc;
	*out = nd->v.str;
	return 0;
}

int bc_toml_get_int(const bc_toml *t, const char *path, int64_t *out)
{
	const struct node *nd;
	int rc;

	*out = 0;
	if ((rc = lookup(t, path, N_INT, &nd)) != 0)
		return rc;
	*out = nd->v.i;
	return 0;
}

int bc_toml_get_bool(const bc_toml *t, const char *path, int *out)
{
	const struct node *nd;
	int rc;

	*out = 0;
	if ((rc = lookup(t, path, N_BOOL, &nd)) != 0)
		return rc;
	*out = nd->v.b;
	return 0;
}

int bc_toml_get_strings(const bc_toml *t, const char *path, const char *const **out, size_t *n)
{
	const struct node *nd;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = lookup(t, path, N_STRINGS, &nd)) != 0)
		return rc;
	*out = (const char *const *)nd->v.strs;
	*n = nd->v.nstrs;
	return 0;
}

int bc_toml_has_table(const bc_toml *t, const char *path)
{
	const struct node *nd;

	return lookup(t, path, N_TABLE, &nd) == 0;
}

int bc_toml_keys(const bc_toml *t, const char *table, const char *const **keys, size_t *n)
{
	const struct node *nd;
	int rc;

	*keys = NULL;
	*n = 0;
	if ((rc = lookup(t, table, N_TABLE, &nd)) != 0)
		return rc;
	*keys = nd->keys ? (const char *const *)nd->keys : no_names;
	*n = nd->nkeys;
	return 0;
}

int bc_toml_tables(const bc_toml *t, const char *table, const char *const **names, size_t *n)
{
	const struct node *nd;
	int rc;

	*names = NULL;
	*n = 0;
	if ((rc = lookup(t, table, N_TABLE, &nd)) != 0)
		return rc;
	*names = nd->subs ? (const char *const *)nd->subs : no_names;
	*n = nd->nsubs;
	return 0;
}
