/* List cursors (bc/cursor.h). The payload is text so that a cursor can be read when
 * debugging; every field is parsed back strictly, one function a field. */
#include "bc/cursor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"

static int list_ok(const char *list)
{
	size_t n = list ? strlen(list) : 0;

	if (n == 0 || n > BC_CURSOR_LIST_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((list[i] >= 'a' && list[i] <= 'z') || list[i] == '_'))
			return 0;
	return 1;
}

static int id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* 1..BC_CURSOR_ID_MAX bytes of id_char. */
static int id_ok(const char *s, size_t n)
{
	if (n == 0 || n > BC_CURSOR_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!id_char(s[i]))
			return 0;
	return 1;
}

int bc_cursor_encode(const char *list, const struct bc_cursor *k,
                     char out[static BC_CURSOR_MAX + 1])
{
	char text[BC_CURSOR_LIST_MAX + BC_CURSOR_ID_MAX + 32], *b64;
	int n;

	out[0] = '\0';
	if (!list_ok(list) || k->at < 0 || !id_ok(k->id, strnlen(k->id, sizeof(k->id))))
		return BC_ERR_INVALID;
	n = snprintf(text, sizeof(text), "%s.%c.%lld.%s", list, k->before ? 'p' : 'n',
	             (long long)k->at, k->id);
	if (n < 0 || (size_t)n >= sizeof(text))
		return BC_ERR_INVALID;
	if ((b64 = bc_b64url_encode(text, (size_t)n)) == NULL)
		return BC_ERR_NOMEM;
	n = snprintf(out, BC_CURSOR_MAX + 1, "%s", b64);
	free(b64);
	return n > 0 && n <= BC_CURSOR_MAX ? 0 : BC_ERR_INVALID;
}

/* A decimal from 0 to INT64_MAX without a sign or leading zero, ending at p[n]. */
static int parse_at(const char *p, size_t n, int64_t *at)
{
	uint64_t v = 0;

	if (n == 0 || n > 19 || (p[0] == '0' && n > 1))
		return BC_ERR_INVALID;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return BC_ERR_INVALID;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v > (uint64_t)INT64_MAX)
		return BC_ERR_INVALID;
	*at = (int64_t)v;
	return 0;
}

/* text: "<list>.<n|p>.<at>.<id>" of len bytes (NUL-terminated by the decoder). */
static int parse_text(const char *list, const char *text, size_t len, struct bc_cursor *k)
{
	size_t ln = strlen(list);
	const char *at, *dot;

	if (memchr(text, '\0', len) != NULL || len < ln + 3 || memcmp(text, list, ln) != 0 ||
	    text[ln] != '.')
		return BC_ERR_INVALID;
	if ((text[ln + 1] != 'n' && text[ln + 1] != 'p') || text[ln + 2] != '.')
		return BC_ERR_INVALID;
	k->before = text[ln + 1] == 'p';
	at = text + ln + 3;
	if ((dot = memchr(at, '.', len - (size_t)(at - text))) == NULL ||
	    parse_at(at, (size_t)(dot - at), &k->at) != 0)
		return BC_ERR_INVALID;
	if (!id_ok(dot + 1, len - (size_t)(dot + 1 - text)))
		return BC_ERR_INVALID;
	memcpy(k->id, dot + 1, len - (size_t)(dot + 1 - text));
	return 0;
}

int bc_cursor_decode(const char *list, const char *s, struct bc_cursor *k)
{
	size_t slen, len = 0;
	uint8_t *text = NULL;
	int rc;

	memset(k, 0, sizeof(*k));
	if (!list_ok(list) || s == NULL)
		return BC_ERR_INVALID;
	if ((slen = strnlen(s, BC_CURSOR_MAX + 1)) > BC_CURSOR_MAX)
		return BC_ERR_LIMIT;
	if (slen == 0 || bc_b64url_decode(s, slen, &text, &len) != 0)
		return BC_ERR_INVALID;
	rc = parse_text(list, (const char *)text, len, k);
	free(text);
	if (rc != 0)
		memset(k, 0, sizeof(*k));
	return rc;
}
