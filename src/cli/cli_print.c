/* Output for people: aligned tables with a header row (like kubectl) and detail
 * views of one object. Every cell is text from the server, so it is cleaned of
 * control characters before it is printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/json.h"
#include "cli/cli.h"

#define COL_GAP 3

const char *cli_jstr(const json_t *obj, const char *key)
{
	const json_t *v = obj ? json_object_get(obj, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A dotted path: "certificate.notAfter". */
static const json_t *lookup(const json_t *obj, const char *path)
{
	char key[64];

	while (obj != NULL && json_is_object(obj)) {
		size_t n = strcspn(path, ".");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		obj = json_object_get(obj, key);
		if (path[n] == '\0')
			return obj;
		path += n + 1;
	}
	return NULL;
}

void cli_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;

	for (; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
		/* U+0080..U+009F (C1 controls, ESC's 8-bit forms) are C2 80..C2 9F */
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			p[0] = p[1] = '?';
	}
}

void cli_sanitize_lines(char *s)
{
	for (char *line = s; line != NULL && *line != '\0';) {
		char *nl = strchr(line, '\n');

		if (nl != NULL)
			*nl = '\0';
		cli_sanitize(line);
		if (nl == NULL)
			break;
		*nl = '\n';
		line = nl + 1;
	}
}

void cli_time_short(const char *in, char out[static 32])
{
	size_t n = strlen(in);

	/* 2026-11-29T10:00:00[.000]Z */
	if (n >= 20 && n <= 30 && in[10] == 'T' && in[n - 1] == 'Z' && in[4] == '-' &&
	    in[13] == ':') {
		snprintf(out, 32, "%.10s %.8sZ", in, in + 11);
		return;
	}
	snprintf(out, 32, "%s", in);
}

static char *join_list(const json_t *arr)
{
	size_t total = 1, i;
	const json_t *v;
	char *s;

	json_array_foreach(arr, i, v) total +=
	    (json_is_string(v) ? strlen(json_string_value(v)) : 1) + 1;
	if ((s = calloc(1, total)) == NULL)
		return NULL;
	json_array_foreach(arr, i, v)
	{
		if (i > 0)
			strcat(s, ",");
		strcat(s, json_is_string(v) ? json_string_value(v) : "?");
	}
	return s;
}

static char *scalar_text(const json_t *v, enum cli_fmt fmt)
{
	char buf[64];

	if (v == NULL || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
		return strdup("-");
	if (json_is_string(v) && fmt == CLI_TIME) {
		cli_time_short(json_string_value(v), buf);
		return strdup(buf);
	}
	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (json_is_integer(v)) {
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return strdup(buf);
	}
	if (json_is_boolean(v))
		return strdup(json_is_true(v) ? "yes" : "no");
	if (json_is_array(v) && fmt == CLI_LIST)
		return json_array_size(v) ? join_list(v) : strdup("-");
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

/* active, used, expired or revoked; times compare as strings in one RFC 3339 form */
static char *token_state(const json_t *obj)
{
	const json_t *left = json_object_get(obj, "usesLeft");
	const char *exp = cli_jstr(obj, "expiresAt");
	char now[40];

	bc_time_format_ms(bc_now_ms(), now, sizeof(now));
	if (cli_jstr(obj, "revokedAt") != NULL)
		return strdup("revoked");
	if (json_is_integer(left) && json_integer_value(left) <= 0)
		return strdup("used");
	if (exp != NULL && strcmp(exp, now) <= 0)
		return strdup("expired");
	return strdup("active");
}

/* "in 23h59m", "in 6d23h", "expired 2h ago": the two largest units ahead, one behind. */
static char *expiry_text(const json_t *v)
{
	int64_t at = json_is_string(v) ? cli_parse_time(json_string_value(v)) : -1, d, s;
	char buf[48];

	if (at < 0)
		return strdup("-");
	d = at - bc_now_ms();
	s = (d < 0 ? -d : d) / 1000;
	if (d < 0) {
		if (s >= 86400)
			snprintf(buf, sizeof(buf), "expired %lldd ago", (long long)(s / 86400));
		else if (s >= 3600)
			snprintf(buf, sizeof(buf), "expired %lldh ago", (long long)(s / 3600));
		else
			snprintf(buf, sizeof(buf), "expired %lldm ago", (long long)(s / 60));
	} else if (s >= 86400) {
		snprintf(buf, sizeof(buf), "in %lldd%lldh", (long long)(s / 86400),
		         (long long)(s % 86400 / 3600));
	} else if (s >= 3600) {
		snprintf(buf, sizeof(buf), "in %lldh%02lldm", (long long)(s / 3600),
		         (long long)(s % 3600 / 60));
	} else {
		snprintf(buf, sizeof(buf), "in %lldm", (long long)(s / 60));
	}
	return strdup(buf);
}

static char *cell_text(const json_t *obj, const struct cli_col *col)
{
	const json_t *a, *b;
	char buf[64];

	switch (col->fmt) {
	case CLI_USES:
		a = json_object_get(obj, "usesLeft");
		b = json_object_get(obj, "usesTotal");
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
		         json_integer_value(a), json_integer_value(b));
		return strdup(buf);
	case CLI_TARGET:
		/* the name, else the id: a pool's, else a site's */
		a = json_object_get(
		    obj, json_is_string(json_object_get(obj, "poolId")) ? "poolName" : "siteName");
		b = json_object_get(obj, json_is_string(json_object_get(obj, "poolId")) ? "poolId"
		                                                                        : "siteId");
		return scalar_text(json_is_string(a) ? a : b, CLI_STR);
	case CLI_EXPIRY: return expiry_text(lookup(obj, col->key));
	case CLI_TOKEN_STATE: return token_state(obj);
	case CLI_STR:
	case CLI_TIME:
	case CLI_LIST:
	case CLI_JSON:
	default: return scalar_text(lookup(obj, col->key), col->fmt);
	}
}

/* Characters, not bytes, so that UTF-8 names keep the columns aligned. */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static void cut(char *s, size_t max)
{
	size_t w = 0;

	if (max < 4 || text_width(s) <= max)
		return;
	for (char *p = s; *p != '\0'; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && ++w > max - 3) {
			strcpy(p, "...");
			return;
		}
	}
}

static int make_cell(const json_t *obj, const struct cli_col *col, size_t max, char **out)
{
	*out = NULL;
	if ((*out = cell_text(obj, col)) == NULL)
		return BC_ERR_NOMEM;
	cli_sanitize(*out);
	cut(*out, max);
	return 0;
}

static void print_row(char *const *cells, const size_t *widths, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		fputs(cells[j], stdout);
		if (j + 1 < n)
			printf("%*s", (int)(widths[j] - text_width(cells[j]) + COL_GAP), "");
	}
	fputc('\n', stdout);
}

int cli_print_table(const json_t *array, const struct cli_col *cols, size_t n)
{
	size_t rows = json_array_size(array), w[16] = {0}, k = 0, m = 0;
	char **cells = NULL, *head[16];
	int rc = 0;

	for (size_t j = 0; j < n; j++) {
		if (!cols[j].in_list)
			continue;
		if (m == 16)
			return BC_ERR_INTERNAL;
		head[m++] = (char *)cols[j].header;
	}
	if (m == 0)
		return BC_ERR_INTERNAL;
	if ((cells = calloc(rows * m + 1, sizeof(*cells))) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; i < rows && rc == 0; i++)
		for (size_t j = 0; j < n && rc == 0; j++)
			if (cols[j].in_list)
				rc = make_cell(json_array_get(array, i), &cols[j], cols[j].max,
				               &cells[k++]);
	for (size_t i = 0; rc == 0 && i < rows * m + m; i++) {
		const char *s = i < m ? head[i] : cells[i - m];
		size_t tw = text_width(s);

		w[i % m] = tw > w[i % m] ? tw : w[i % m];
	}
	if (rc == 0) {
		print_row(head, w, m);
		for (size_t i = 0; i < rows; i++)
			print_row(cells + i * m, w, m);
	}
	for (size_t i = 0; i < rows * m; i++)
		free(cells[i]);
	free(cells);
	return rc;
}

int cli_print_object(const json_t *obj, const struct cli_col *cols, size_t n)
{
	size_t w = 0;
	char *cell;
	int rc;

	for (size_t j = 0; j < n; j++)
		w = strlen(cols[j].header) > w ? strlen(cols[j].header) : w;
	for (size_t j = 0; j < n; j++) {
		if ((rc = make_cell(obj, &cols[j], 0, &cell)) != 0)
			return rc;
		printf("%-*s%s\n", (int)(w + COL_GAP), cols[j].header, cell);
		free(cell);
	}
	return 0;
}

int cli_show_list(struct cli *c, const struct cli_resp *r, const char *key,
                  const struct cli_col *cols, size_t n)
{
	const json_t *arr = json_object_get(r->json, key);
	int rc;

	if (c->json) {
		cli_print_raw(r);
		return 0;
	}
	if (!json_is_array(arr))
		return cli_fail(c, BC_ERR_IO,
		                "the control plane's answer has no \"%s\" list; is --server a "
		                "`" CLI_NAME " serve` of this version?",
		                key);
	rc = cli_print_table(arr, cols, n);
	/* a page of a longer list says how to reach the next one */
	if (rc == 0 && json_is_string(json_object_get(r->json, "nextCursor")))
		fprintf(stderr, "more %s: add --cursor %s\n", key,
		        json_string_value(json_object_get(r->json, "nextCursor")));
	return rc;
}

int cli_show_object(struct cli *c, const struct cli_resp *r, const json_t *obj,
                    const struct cli_col *cols, size_t n)
{
	if (c->json) {
		cli_print_raw(r);
		return 0;
	}
	return cli_print_object(obj != NULL ? obj : r->json, cols, n);
}

int cli_print_json(json_t *v)
{
	char *s;

	if (v == NULL)
		return BC_ERR_NOMEM;
	s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (s == NULL)
		return BC_ERR_NOMEM;
	puts(s);
	free(s);
	return 0;
}
