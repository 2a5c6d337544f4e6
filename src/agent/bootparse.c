/* The untrusted text of commissioning: the ramdisk's kernel command line (bc.token,
 * bc.assertion, bc.server) and an iPXE script request (its head, and the query of its
 * target: mac, uuid, ip).
 * Both are bounded and strict: a parameter given twice, a value out of shape or too
 * long is refused, never guessed at. */
#include <arpa/inet.h>
#include <ctype.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/canon.h"
#include "bc/codec.h"
#include "bc/wire.h"

static int token_ok(const char *t, size_t n)
{
	size_t p = strlen(BC_WIRE_TOKEN_PREFIX);

	if (n <= p || n > BC_WIRE_TOKEN_MAX || memcmp(t, BC_WIRE_TOKEN_PREFIX, p) != 0)
		return 0;
	for (size_t i = p; i < n; i++)
		if (!isalnum((unsigned char)t[i]) && t[i] != '_' && t[i] != '-')
			return 0;
	return 1;
}

static int server_ok(const char *s, size_t n)
{
	/* s is not NUL-terminated: every comparison is bounded by n */
	if (n >= sizeof(((struct bcd_cmdline *)0)->server) ||
	    !((n > 8 && memcmp(s, "https://", 8) == 0) || (n > 7 && memcmp(s, "http://", 7) == 0)))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return 0;
	return 1;
}

void bcd_cmdline_free(struct bcd_cmdline *c)
{
	if (c == NULL)
		return;
	bc_freezero(c->assertion, c->assertion_len);
	OPENSSL_cleanse(c->token, sizeof(c->token));
	c->assertion = NULL;
	c->assertion_len = 0;
}

int bcd_cmdline_parse(const char *text, size_t len, struct bcd_cmdline *c)
{
	static const char tk[] = BC_WIRE_CMDLINE_TOKEN "=", as[] = BC_WIRE_CMDLINE_ASSERTION "=",
	                  sv[] = BC_WIRE_CMDLINE_SERVER "=";
	size_t i = 0;
	int rc = BC_ERR_INVALID;

	memset(c, 0, sizeof(*c));
	if (len > BCD_CMDLINE_MAX || memchr(text, 0, len) != NULL)
		return BC_ERR_INVALID;
	while (i < len) {
		size_t s, n;
		while (i < len && isspace((unsigned char)text[i]))
			i++;
		s = i;
		while (i < len && !isspace((unsigned char)text[i]))
			i++;
		n = i - s;
		const char *w = text + s;
		if (n > sizeof(tk) - 1 && memcmp(w, tk, sizeof(tk) - 1) == 0) {
			w += sizeof(tk) - 1;
			n -= sizeof(tk) - 1;
			if (c->token[0] || !token_ok(w, n))
				goto bad;
			memcpy(c->token, w, n);
			c->token[n] = 0;
		} else if (n > sizeof(as) - 1 && memcmp(w, as, sizeof(as) - 1) == 0) {
			w += sizeof(as) - 1;
			n -= sizeof(as) - 1;
			if (c->assertion || n > 2 * BC_WIRE_ASSERTION_MAX ||
			    bc_b64url_decode(w, n, &c->assertion, &c->assertion_len) != 0 ||
			    c->assertion_len == 0 || c->assertion_len > BC_WIRE_ASSERTION_MAX)
				goto bad;
		} else if (n > sizeof(sv) - 1 && memcmp(w, sv, sizeof(sv) - 1) == 0) {
			w += sizeof(sv) - 1;
			n -= sizeof(sv) - 1;
			if (c->server[0] || !server_ok(w, n))
				goto bad;
			memcpy(c->server, w, n);
			c->server[n] = 0;
		}
	}
	if (c->token[0] == 0 || c->assertion == NULL) {
		rc = BC_ERR_NOT_FOUND;
		goto bad;
	}
	return 0;
bad:
	bcd_cmdline_free(c);
	memset(c, 0, sizeof(*c));
	return rc;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* A query value, percent-decoded, into out (at most max - 1 bytes). */
static int decode_value(const char *v, size_t n, char *out, size_t max)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = v[i];
		if (ch == '%') {
			int hi, lo;
			if (i + 2 >= n || (hi = hexval(v[i + 1])) < 0 ||
			    (lo = hexval(v[i + 2])) < 0)
				return BC_ERR_INVALID;
			ch = (char)(hi * 16 + lo);
			i += 2;
		} else if (ch == '+') {
			ch = ' ';
		}
		if ((unsigned char)ch <= 0x20 || (unsigned char)ch >= 0x7f || o + 1 >= max)
			return BC_ERR_INVALID;
		out[o++] = ch;
	}
	out[o] = 0;
	return 0;
}

int bcd_boot_query_parse(const char *target, size_t len, struct bcd_boot_query *q)
{
	static const char path[] = "/boot.ipxe";
	char mac[64] = "", uuid[64] = "", ip[64] = "";
	int seen_mac = 0, seen_uuid = 0, seen_ip = 0;
	size_t i;

	memset(q, 0, sizeof(*q));
	if (len > BCD_QUERY_MAX || len < sizeof(path) - 1 || memchr(target, 0, len) != NULL ||
	    memcmp(target, path, sizeof(path) - 1) != 0)
		return BC_ERR_INVALID;
	i = sizeof(path) - 1;
	if (i < len && target[i] != '?')
		return BC_ERR_INVALID;
	i++;
	while (i < len) {
		size_t s = i, eq;
		while (i < len && target[i] != '&')
			i++;
		for (eq = s; eq < i && target[eq] != '='; eq++)
			;
		const char *k = target + s, *v = target + eq + 1;
		size_t kn = eq - s, vn = eq < i ? i - eq - 1 : 0;
		char *dst = NULL;
		int *seen = NULL;
		if (kn == 3 && memcmp(k, "mac", 3) == 0)
			dst = mac, seen = &seen_mac;
		else if (kn == 4 && memcmp(k, "uuid", 4) == 0)
			dst = uuid, seen = &seen_uuid;
		else if (kn == 2 && memcmp(k, "ip", 2) == 0)
			dst = ip, seen = &seen_ip;
		if (dst != NULL) {
			if (*seen || eq >= i || decode_value(v, vn, dst, 64) != 0)
				return BC_ERR_INVALID;
			*seen = 1;
		}
		i++; /* the '&' */
	}
	if (bc_mac_canon(mac, q->mac) != 0)
		return BC_ERR_INVALID;
	if (uuid[0] && bc_uuid_canon(uuid, q->uuid) != 0)
		return BC_ERR_INVALID;
	if (ip[0]) {
		unsigned char buf[16];
		if (inet_pton(AF_INET, ip, buf) != 1 && inet_pton(AF_INET6, ip, buf) != 1)
			return BC_ERR_INVALID;
		snprintf(q->ip, sizeof(q->ip), "%s", ip);
	}
	return 0;
}

/* Bytes a request line or header line may hold: visible ASCII, space and tab. A NUL,
 * a bare CR or any other control byte ends the parse: nothing downstream guesses. */
static int line_bytes_ok(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)p[i];
		if ((ch < 0x20 && ch != '\t') || ch >= 0x7f)
			return 0;
	}
	return 1;
}

/* A line of buf[from..len): *n its length without the LF and an optional CR before
 * it, *next where the following line starts. 0 when whole, BC_ERR_TRUNCATED when no LF
 * came yet, BC_ERR_INVALID for a byte no line may hold (seen as soon as it arrives). */
static int next_line(const char *buf, size_t len, size_t from, size_t *n, size_t *next)
{
	const char *p = buf + from, *nl = memchr(p, '\n', len - from);
	size_t k = nl ? (size_t)(nl - p) : len - from;

	if (nl && k > 0 && p[k - 1] == '\r')
		k--;
	if (!line_bytes_ok(p, nl ? k : (k > 0 && p[k - 1] == '\r' ? k - 1 : k)))
		return BC_ERR_INVALID;
	if (nl == NULL)
		return BC_ERR_TRUNCATED;
	*n = k;
	*next = (size_t)(nl - buf) + 1;
	return 0;
}

/* "GET <target> HTTP/1.0|1: the target's place in line, or 0 when out of shape. */
static int request_line(const char *line, size_t n, size_t *t_off, size_t *t_len)
{
	static const char get[] = "GET ", ver[] = " HTTP/1.";
	const size_t vl = sizeof(ver) - 1;

	if (n < sizeof(get) - 1 + 1 + vl + 1 || memcmp(line, get, sizeof(get) - 1) != 0 ||
	    memcmp(line + n - vl - 1, ver, vl) != 0 || (line[n - 1] != '0' && line[n - 1] != '1'))
		return 0;
	*t_off = sizeof(get) - 1;
	*t_len = n - vl - 1 - *t_off;
	/* one space on each side: the target itself holds none, nor a tab */
	return memchr(line + *t_off, ' ', *t_len) == NULL &&
	       memchr(line + *t_off, '\t', *t_len) == NULL;
}

/* A header line "name: value": a name of token characters, then anything line_bytes_ok
 * allows. A line starting with a space or tab (obsolete folding) is refused. */
static int header_line(const char *line, size_t n)
{
	size_t i = 0;

	while (i < n && line[i] != '\0' &&
	       (isalnum((unsigned char)line[i]) || strchr("!#$%&'*+-.^_`|~", line[i]) != NULL))
		i++;
	return i > 0 && i < n && line[i] == ':';
}

int bcd_site_request_parse(const char *buf, size_t len, struct bcd_boot_query *q)
{
	size_t n, at = 0, t_off, t_len;
	int rc;

	memset(q, 0, sizeof(*q));
	if (len > BCD_REQUEST_MAX)
		len = BCD_REQUEST_MAX;
	/* the request line: refused as soon as what came cannot start one */
	if (memcmp(buf, "GET ", len < 4 ? len : 4) != 0)
		return BC_ERR_INVALID;
	if ((rc = next_line(buf, len, 0, &n, &at)) != 0)
		return rc == BC_ERR_TRUNCATED && len > BCD_REQUEST_LINE_MAX ? BC_ERR_INVALID : rc;
	if (n >= BCD_REQUEST_LINE_MAX || !request_line(buf, n, &t_off, &t_len))
		return BC_ERR_INVALID;
	for (;;) {
		size_t start = at;
		if ((rc = next_line(buf, len, start, &n, &at)) != 0)
			return rc == BC_ERR_TRUNCATED && len >= BCD_REQUEST_MAX ? BC_ERR_LIMIT : rc;
		if (n == 0)
			break;
		if (!header_line(buf + start, n))
			return BC_ERR_INVALID;
	}
	if (bcd_boot_query_parse(buf + t_off, t_len, q) != 0) {
		memset(q, 0, sizeof(*q)); /* filled only for a request answered */
		return BC_ERR_NOT_FOUND;
	}
	return 0;
}
