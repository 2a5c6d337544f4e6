/* The request head, read strictly: picohttpparser splits it (phr_parse_request refuses
 * control characters in the request target and bad tokens), this file decides what of
 * it a request may carry. The rules (RFC 9112):
 *  - a request target in origin form ("/..."); its path percent-decoded, %00 refused;
 *  - HTTP/1.1 needs one Host (RFC 9112 3.2);
 *  - a body is framed one way: one Content-Length of digits, or Transfer-Encoding:
 *    chunked alone; both, or Content-Length twice, is ambiguous (request smuggling,
 *    RFC 9112 6.3) and refused; any other transfer coding is refused;
 *  - no obsolete line folding (a header line starting with a space);
 *  - a field name is a token: "Content-Length : 5" (whitespace before the colon) is
 *    refused, never read as some other header (RFC 9112 5.1): phr_parse_request
 *    refuses it (tests/unit/server_http_parse_test.c holds it to that);
 *  - Transfer-Encoding once, "chunked" alone: repeated, or a list ("chunked, chunked"),
 *    is refused (RFC 9112 6.1). */
#include "server/http_parse.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "lib/picohttp.h"

#define ERR(msg) "{\"code\":\"invalid_argument\",\"message\":\"" msg "\"}"
const char HTTP_BAD_REQUEST_LINE[] = ERR("malformed request line");
const char HTTP_BAD_FRAMING[] = ERR("ambiguous request framing (repeated Content-Length, or "
                                    "Content-Length with Transfer-Encoding)");
const char HTTP_NO_HOST[] = ERR("an HTTP/1.1 request needs one Host header");
const char HTTP_BAD_LENGTH[] = ERR("malformed Content-Length");
const char HTTP_BAD_TRANSFER_ENCODING[] = ERR("unsupported Transfer-Encoding");
const char HTTP_BAD_CHUNK[] = ERR("malformed chunked body");
const char HTTP_HEAD_TOO_LARGE[] =
    "{\"code\":\"resource_exhausted\",\"message\":\"request headers too large\"}";
static const char OUT_OF_MEMORY[] = "{\"code\":\"internal\",\"message\":\"internal error\"}";

static int name_is(const struct phr_header *hd, const char *name)
{
	return hd->name_len == strlen(name) && strncasecmp(hd->name, name, hd->name_len) == 0;
}

static int value_is(const struct phr_header *hd, const char *v)
{
	return hd->value_len == strlen(v) && strncasecmp(hd->value, v, hd->value_len) == 0;
}

static char *dup_n(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s != NULL) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* In place; a '%' not followed by two hex digits stays as it is. A query (plus: '+'
 * is a space) keeps %00 as those three characters; a path with one is refused (-1):
 * a C string would end there. */
static int unescape(char *s, int plus)
{
	char *w = s;

	for (const char *r = s; *r != '\0'; r++) {
		int hi, lo;

		if (*r == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0) {
			if (hi == 0 && lo == 0 && !plus)
				return -1;
			if (hi == 0 && lo == 0) {
				*w++ = *r;
				continue;
			}
			*w++ = (char)(hi * 16 + lo);
			r += 2;
		} else {
			*w++ = plus && *r == '+' ? ' ' : *r;
		}
	}
	*w = '\0';
	return 0;
}

static int parse_length(const struct phr_header *hd, uint64_t *out)
{
	uint64_t v = 0;

	if (hd->value_len == 0)
		return -1;
	for (size_t i = 0; i < hd->value_len; i++) {
		char c = hd->value[i];

		if (c < '0' || c > '9')
			return -1;
		v = v > (UINT64_MAX - 9) / 10 ? UINT64_MAX : v * 10 + (uint64_t)(c - '0');
	}
	*out = v;
	return 0;
}

struct head_scan {
	unsigned hosts, lengths, encodings;
	const struct phr_header *content_type, *authorization;
};

/* One pass over the headers: counts and the values kept. Returns the refusal's body,
 * NULL when none. */
static const char *scan_headers(const struct phr_header *hd, size_t n, struct http_head *h,
                                struct head_scan *sc)
{
	for (size_t i = 0; i < n; i++, hd++) {
		if (hd->name == NULL || hd->name_len == 0)
			return HTTP_BAD_REQUEST_LINE; /* obsolete line folding */
		if (name_is(hd, "host")) {
			sc->hosts++;
		} else if (name_is(hd, "content-length")) {
			if (sc->lengths++ == 0 && parse_length(hd, &h->content_length) != 0)
				return HTTP_BAD_LENGTH;
			h->has_length = 1;
		} else if (name_is(hd, "transfer-encoding")) {
			sc->encodings++;
			h->chunked = value_is(hd, "chunked");
		} else if (name_is(hd, "content-type")) {
			sc->content_type = hd;
		} else if (name_is(hd, "authorization")) {
			sc->authorization = hd;
		} else if (name_is(hd, "connection")) {
			if (value_is(hd, "close"))
				h->keep_alive = 0;
		} else if (name_is(hd, "expect")) {
			h->expect_continue = value_is(hd, "100-continue");
		}
	}
	if (sc->lengths > 1 || (sc->lengths && sc->encodings))
		return HTTP_BAD_FRAMING;
	if (sc->encodings > 1 || (sc->encodings && !h->chunked))
		return HTTP_BAD_TRANSFER_ENCODING;
	if (h->minor == 1 && sc->hosts != 1)
		return HTTP_NO_HOST;
	return NULL;
}

static int copy_target(const char *p, size_t n, struct http_head *h)
{
	const char *q = memchr(p, '?', n);
	size_t plen = q ? (size_t)(q - p) : n;

	if ((h->path = dup_n(p, plen)) == NULL)
		return BC_ERR_NOMEM;
	if (q != NULL && (h->query = dup_n(q + 1, n - plen - 1)) == NULL)
		return BC_ERR_NOMEM;
	return 0;
}

static int copy_value(const struct phr_header *hd, char **out)
{
	*out = hd ? dup_n(hd->value, hd->value_len) : dup_n("", 0);
	return *out ? 0 : BC_ERR_NOMEM;
}

static int refuse(int *status, const char **body, int st, const char *b)
{
	*status = st;
	*body = b;
	return st == 500 ? BC_ERR_NOMEM : BC_ERR_INVALID;
}

int bc_http_parse_head(const char *buf, size_t len, struct http_head *h, int *status,
                       const char **body)
{
	struct phr_header hd[HTTP_MAX_HEADERS];
	size_t n = HTTP_MAX_HEADERS, mlen, tlen;
	const char *m, *t, *why;
	struct head_scan sc = {0};
	int r;

	memset(h, 0, sizeof(*h));
	r = phr_parse_request(buf, len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX, &m, &mlen, &t, &tlen,
	                      &h->minor, hd, &n, 0);
	if (r == -2)
		return len >= HTTP_HEAD_MAX ? refuse(status, body, 431, HTTP_HEAD_TOO_LARGE) : 0;
	/* -1 is also more than HTTP_MAX_HEADERS lines */
	if (r < 0 || mlen == 0 || tlen == 0 || t[0] != '/' || h->minor > 1)
		return refuse(status, body, 400, HTTP_BAD_REQUEST_LINE);
	h->keep_alive = h->minor == 1;
	if ((why = scan_headers(hd, n, h, &sc)) != NULL)
		return refuse(status, body, 400, why);
	if ((h->method = dup_n(m, mlen)) == NULL || copy_target(t, tlen, h) != 0 ||
	    copy_value(sc.content_type, &h->content_type) != 0 ||
	    copy_value(sc.authorization, &h->authorization) != 0) {
		http_head_free(h);
		return refuse(status, body, 500, OUT_OF_MEMORY);
	}
	if (unescape(h->path, 0) != 0) {
		http_head_free(h);
		return refuse(status, body, 400, HTTP_BAD_REQUEST_LINE);
	}
	return r;
}

void http_head_free(struct http_head *h)
{
	free(h->method);
	free(h->path);
	free(h->query);
	free(h->content_type);
	if (h->authorization != NULL)
		explicit_bzero(h->authorization, strlen(h->authorization));
	free(h->authorization);
	memset(h, 0, sizeof(*h));
}

int http_parse_query(char *query, const char **keys, const char **vals, size_t max, size_t *n)
{
	char *next;

	*n = 0;
	for (char *p = query; p != NULL && *p != '\0'; p = next) {
		char *eq;

		if ((next = strchr(p, '&')) != NULL)
			*next++ = '\0';
		if (*p == '\0')
			continue;
		if (*n == max)
			return BC_ERR_LIMIT;
		if ((eq = strchr(p, '=')) != NULL)
			*eq++ = '\0';
		(void)unescape(p, 1);
		if (eq != NULL)
			(void)unescape(eq, 1);
		keys[*n] = p;
		vals[*n] = eq ? eq : "";
		(*n)++;
	}
	return 0;
}

int http_chunked_decode(struct http_chunked *d, char *buf, size_t *len, size_t *rest)
{
	ssize_t r;

	d->consume_trailer = 1;
	r = phr_decode_chunked((struct phr_chunked_decoder *)d, buf, len);
	*rest = 0;
	if (r == -1)
		return BC_ERR_INVALID;
	if (r == -2)
		return 0;
	*rest = (size_t)r;
	return 1;
}
