/* Every refusal reason reached by a test (DESIGN.md): each BC_R_* constant of
 * include/bc/reasons.h is named by some file under tests/ (the constant; in C, its
 * string as a string literal, "join:pool-unknown", so that a comment does not count;
 * in a script, its string standing alone, reason=quote-type), and every reason the
 * refusal tables of docs/attestation.md document is one of those constants. A reason
 * whose only test is removed fails here by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_REASONS 256
#define MAX_FILE    (4u << 20)

struct reason {
	char constant[64];
	char string[64];
	int named;
};

static struct reason reasons[MAX_REASONS];
static size_t n_reasons;

/* The whole file as a C string (NUL bytes of binary files read as spaces); NULL when it
 * cannot be read or is over MAX_FILE. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	size_t n = 0;

	if (f == NULL)
		return NULL;
	if ((s = malloc(MAX_FILE + 1)) != NULL) {
		n = fread(s, 1, MAX_FILE + 1, f);
		if (n > MAX_FILE) {
			free(s);
			s = NULL;
		} else {
			for (size_t i = 0; i < n; i++)
				s[i] = s[i] == '\0' ? ' ' : s[i];
			s[n] = '\0';
		}
	}
	fclose(f);
	return s;
}

static void read_reasons(void)
{
	char path[512], *text, *p;

	snprintf(path, sizeof(path), "%s/include/bc/reasons.h", BC_SOURCE_DIR);
	text = slurp(path);
	assert_non_null(text);
	n_reasons = 0;
	for (p = text; (p = strstr(p, "#define BC_R_")) != NULL; p++) {
		struct reason *r = &reasons[n_reasons];

		assert_true(n_reasons < MAX_REASONS);
		if (sscanf(p, "#define %63s \"%63[^\"]\"", r->constant, r->string) != 2)
			continue;
		r->named = 0;
		n_reasons++;
	}
	free(text);
	assert_true(n_reasons > 100); /* the header was read, not an empty file */
}

static int reason_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == ':';
}

/* s names word standing alone: not a part of a longer name (token-role is not named by
 * token-roles, BC_R_TOKEN by BC_R_TOKEN_ROLE). */
static int names(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = s; (p = strstr(p, word)) != NULL; p++)
		if ((p == s || !reason_char(p[-1])) && !reason_char(p[n]))
			return 1;
	return 0;
}

/* In C, the string literal "word" (a test compares against it). */
static int quotes(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = s; (p = strstr(p, word)) != NULL; p++)
		if (p > s && p[-1] == '"' && p[n] == '"')
			return 1;
	return 0;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t len = strlen(path);
	int c_file =
	    len > 2 && (strcmp(path + len - 2, ".c") == 0 || strcmp(path + len - 2, ".h") == 0);
	char *text;
	(void)st;
	(void)ftw;

	if (type != FTW_F || strstr(path, "/node_modules/") != NULL ||
	    strstr(path, "reasons_coverage_test.c") != NULL)
		return 0;
	if ((text = slurp(path)) == NULL)
		return 0;
	for (size_t i = 0; i < n_reasons; i++)
		if (!reasons[i].named)
			reasons[i].named = names(text, reasons[i].constant) ||
			                   (c_file ? quotes(text, reasons[i].string)
			                           : names(text, reasons[i].string));
	free(text);
	return 0;
}

static void test_every_reason_is_named_by_a_test(void **state)
{
	char dir[512];
	int missing = 0;
	(void)state;

	read_reasons();
	snprintf(dir, sizeof(dir), "%s/tests", BC_SOURCE_DIR);
	assert_int_equal(nftw(dir, visit, 16, FTW_PHYS), 0);
	for (size_t i = 0; i < n_reasons; i++) {
		if (reasons[i].named)
			continue;
		print_message("no test under tests/ names %s (\"%s\")\n", reasons[i].constant,
		              reasons[i].string);
		missing++;
	}
	assert_int_equal(missing, 0);
}

static int is_reason(const char *s)
{
	for (size_t i = 0; i < n_reasons; i++)
		if (strcmp(reasons[i].string, s) == 0)
			return 1;
	return 0;
}

/* The backquoted names of a table row's first cell, each checked; returns how many were
 * not reasons. A pattern (`discovery-*`) stands for a family documented elsewhere. */
static int check_row(const char *row, int *documented)
{
	const char *end = strchr(row + 1, '|');
	int bad = 0;

	for (const char *p = row; end != NULL && (p = strchr(p, '`')) != NULL && p < end;) {
		const char *q = strchr(p + 1, '`');
		char name[64];

		if (q == NULL || q > end || (size_t)(q - p - 1) >= sizeof(name))
			break;
		memcpy(name, p + 1, (size_t)(q - p - 1));
		name[q - p - 1] = '\0';
		p = q + 1;
		if (strchr(name, '*') != NULL)
			continue;
		(*documented)++;
		if (!is_reason(name)) {
			print_message("docs/attestation.md documents \"%s\", no BC_R_* constant\n",
			              name);
			bad++;
		}
	}
	return bad;
}

/* The rows of the tables headed "| Reason |" between "## Refusals" and "## Events". */
static void test_every_documented_reason_is_a_constant(void **state)
{
	char path[512], *text, *p, *stop, *nl;
	int bad = 0, documented = 0, in_table = 0;
	(void)state;

	read_reasons();
	snprintf(path, sizeof(path), "%s/docs/attestation.md", BC_SOURCE_DIR);
	assert_non_null(text = slurp(path));
	assert_non_null(p = strstr(text, "\n## Refusals\n"));
	assert_non_null(stop = strstr(p, "\n## Events\n"));
	*stop = '\0';
	for (p++; p != NULL && *p != '\0'; p = nl ? nl + 1 : NULL) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl = '\0';
		if (strncmp(p, "| Reason |", 10) == 0)
			in_table = 1;
		else if (p[0] != '|')
			in_table = 0;
		else if (in_table && strncmp(p, "| `", 3) == 0)
			bad += check_row(p, &documented);
	}
	free(text);
	assert_true(documented > 100); /* the tables were read */
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_reason_is_named_by_a_test),
	    cmocka_unit_test(test_every_documented_reason_is_a_constant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
