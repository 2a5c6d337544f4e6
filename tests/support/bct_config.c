#include "bct_config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/toml.h"

/* text with each "@D@" replaced by k->dir, malloc'd. */
static char *fill(const struct bct_config *k, const char *text)
{
	size_t dl = k->dir ? strlen(k->dir) : 0, n = 0, cap = strlen(text) + 1;
	char *out;

	for (const char *p = text; k->dir && (p = strstr(p, "@D@")) != NULL; p += 3)
		cap += dl;
	assert_non_null(out = malloc(cap));
	for (const char *p = text; *p;) {
		if (k->dir && strncmp(p, "@D@", 3) == 0) {
			memcpy(out + n, k->dir, dl);
			n += dl;
			p += 3;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return out;
}

int bct_configure(const struct bct_config *k, struct bc_attestor *a, const char *text, char *err,
                  size_t errlen)
{
	char perr[256], *filled = fill(k, text);
	bc_toml *t = NULL;
	int rc;

	if (bc_toml_parse(filled, strlen(filled), &t, perr, sizeof(perr)) != 0)
		fail_msg("not TOML (%s): %s", perr, filled);
	free(filled);
	err[0] = '\0';
	rc = a->configure(a, t, k->table, err, errlen);
	bc_toml_free(t);
	return rc;
}

int bct_configure_logged(const struct bct_config *k, struct bc_attestor *a, const char *text,
                         char *err, size_t errlen, struct bct_capture *c)
{
	int rc;

	assert_int_equal(bct_capture_start(c), 0);
	rc = bct_configure(k, a, text, err, errlen);
	bct_capture_end(c);
	return rc;
}

void bct_config_loads(const struct bct_config *k, const char *text)
{
	struct bc_attestor a = *k->attestor();
	char err[512];

	if (bct_configure(k, &a, text, err, sizeof(err)) != 0)
		fail_msg("refused: %s\n--- %s", err, text);
	assert_non_null(a.ctx);
	a.destroy(&a);
	assert_null(a.ctx);
}

static void refused(const struct bct_config *k, const char *text, const char *want, int exact)
{
	struct bc_attestor a = *k->attestor();
	char err[512];
	int rc = bct_configure(k, &a, text, err, sizeof(err));

	if (rc != BC_ERR_CONFIG)
		fail_msg("configure returned %d, not BC_ERR_CONFIG (%s)\n--- %s", rc, err, text);
	if (exact ? strcmp(err, want) != 0 : strstr(err, want) == NULL)
		fail_msg("got \"%s\", want \"%s\"", err, want);
	assert_null(a.ctx);
}

void bct_config_refused(const struct bct_config *k, const char *text, const char *want)
{
	refused(k, text, want, 0);
}

void bct_config_refused_exact(const struct bct_config *k, const char *text, const char *want)
{
	refused(k, text, want, 1);
}
