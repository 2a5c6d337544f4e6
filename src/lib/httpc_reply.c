/* bc_httpc_read_reply: an answer read strictly and within bounds. picohttpparser splits
 * the head (phr_parse_response refuses a malformed status line or header line); this
 * file takes the framing from its fields and reads the body: exactly Content-Length
 * bytes, chunks (sizes checked against the bound before a byte is copied), or up to the
 * end of the stream when the head names neither. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bc/httpc.h"
#include "lib/picohttp.h"

#define LINE_MAX_LEN 1024 /* a chunk-size or trailer line */

/* The bytes read and not yet taken: buf[pos, len). */
struct rd {
	const struct bc_httpc_src *src;
	char buf[BC_HTTPC_HEAD_MAX];
	size_t pos, len;
};

/* The answer's framing, from its head. */
struct framing {
	int chunked;
	int has_length;
	uint64_t length;
};

/* More bytes at the end of buf (the taken ones dropped first): > 0, 0 at the end of the
 * stream, -1 on an error or when buf is full. */
static ssize_t fill(struct rd *r)
{
	ssize_t n;

	if (r->pos > 0) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	if (r->len == sizeof(r->buf))
		return -1;
	n = r->src->read(r->src->arg, r->buf + r->len, sizeof(r->buf) - r->len);
	if (n > 0)
		r->len += (size_t)n;
	return n;
}

static int name_is(const struct phr_header *hd, const char *name)
{
	size_t n = strlen(name);

	return hd->name_len == n && strncasecmp(hd->name, name, n) == 0;
}

/* A whole number of 1 to 19 digits, nothing else. */
static int digits(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 19)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

static int framing_of(const struct phr_header *hd, size_t n, struct framing *f, const char **why)
{
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < n; i++) {
		/* a NULL name continues the previous line (obsolete folding): refused */
		if (hd[i].name == NULL) {
			*why = "a folded header line";
			return BC_ERR_INVALID;
		}
		if (name_is(&hd[i], "Transfer-Encoding")) {
			if (f->chunked || hd[i].value_len != 7 ||
			    strncasecmp(hd[i].value, "chunked", 7) != 0) {
				*why = "a Transfer-Encoding other than chunked";
				return BC_ERR_INVALID;
			}
			f->chunked = 1;
		}
		if (name_is(&hd[i], "Content-Length")) {
			if (f->has_length++ ||
			    digits(hd[i].value, hd[i].value_len, &f->length) != 0) {
				*why = "a malformed or repeated Content-Length";
				return BC_ERR_INVALID;
			}
		}
	}
	if (f->chunked && f->has_length) {
		*why = "both a Content-Length and chunked framing";
		return BC_ERR_INVALID;
	}
	return 0;
}

/* The head of the next answer that is not an interim 1xx one, copied to resp->head. */
static int read_head(struct rd *r, struct bc_httpc_resp *resp, struct framing *f, const char **why)
{
	struct phr_header hd[BC_HTTPC_MAX_HEADERS];
	size_t nh, msg_len;
	const char *msg;
	int minor, status, n, rc;
	ssize_t got;

	for (;;) {
		nh = BC_HTTPC_MAX_HEADERS;
		n = phr_parse_response(r->buf + r->pos, r->len - r->pos, &minor, &status, &msg,
		                       &msg_len, hd, &nh, 0);
		if (n == -1 || (n > 0 && (status < 100 || status > 599))) {
			*why = "a malformed status line or header";
			return BC_ERR_INVALID;
		}
		if (n > 0 && status >= 200)
			break;
		if (n > 0) { /* 1xx: another head follows */
			r->pos += (size_t)n;
			continue;
		}
		if (r->len - r->pos == sizeof(r->buf)) {
			*why = "an answer head longer than the client's bound";
			return BC_ERR_LIMIT;
		}
		if ((got = fill(r)) <= 0) {
			*why = got == 0 ? "the connection closed before the answer's head ended"
			                : "the connection failed while reading the answer";
			return BC_ERR_UNAVAILABLE;
		}
	}
	if ((rc = framing_of(hd, nh, f, why)) != 0)
		return rc;
	if ((resp->head = malloc((size_t)n + 1)) == NULL)
		return BC_ERR_NOMEM;
	memcpy(resp->head, r->buf + r->pos, (size_t)n);
	resp->head[n] = '\0';
	resp->status = status;
	r->pos += (size_t)n;
	return 0;
}

/* Room for at least need more body bytes (need already checked against the bound). */
static int grow(struct bc_httpc_resp *resp, size_t *cap, size_t need)
{
	size_t c = *cap == 0 ? 4096 : *cap;
	char *p;

	while (c < resp->len + need + 1)
		c *= 2;
	if (c == *cap)
		return 0;
	if ((p = realloc(resp->body, c)) == NULL)
		return BC_ERR_NOMEM;
	resp->body = p;
	*cap = c;
	return 0;
}

/* n bytes of body: the buffered ones, then straight from the source. */
static int take(struct rd *r, struct bc_httpc_resp *resp, size_t n, const char **why)
{
	while (n > 0) {
		size_t k = r->len - r->pos;
		ssize_t got;

		if (k > 0) {
			k = k < n ? k : n;
			memcpy(resp->body + resp->len, r->buf + r->pos, k);
			r->pos += k;
		} else if ((got = r->src->read(r->src->arg, resp->body + resp->len, n)) > 0) {
			k = (size_t)got;
		} else {
			*why = got == 0 ? "the connection closed in the middle of the answer's body"
			                : "the connection failed while reading the answer";
			return BC_ERR_UNAVAILABLE;
		}
		resp->len += k;
		n -= k;
	}
	return 0;
}

/* One CRLF-ended line (without it) of at most LINE_MAX_LEN bytes, into line. */
static int read_line(struct rd *r, char line[static LINE_MAX_LEN + 1], const char **why)
{
	char *e;
	ssize_t got;

	for (;;) {
		size_t have = r->len - r->pos;
		if ((e = memchr(r->buf + r->pos, '\n', have)) != NULL) {
			size_t n = (size_t)(e - (r->buf + r->pos));
			if (n == 0 || e[-1] != '\r' || n - 1 > LINE_MAX_LEN) {
				*why = "a malformed chunk";
				return BC_ERR_INVALID;
			}
			memcpy(line, r->buf + r->pos, n - 1);
			line[n - 1] = '\0';
			r->pos += n + 1;
			return 0;
		}
		if (have > LINE_MAX_LEN + 1) {
			*why = "a malformed chunk";
			return BC_ERR_INVALID;
		}
		if ((got = fill(r)) <= 0) {
			*why = "the connection closed in the middle of the answer's body";
			return BC_ERR_UNAVAILABLE;
		}
	}
}

/* A chunk-size line: hex digits, then nothing or a ";extension". */
static int chunk_size(const char *line, uint64_t *size)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; line[i] != '\0' && line[i] != ';'; i++) {
		char c = line[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0 || i >= 15)
			return -1;
		v = v * 16 + (uint64_t)d;
	}
	if (i == 0)
		return -1;
	*size = v;
	return 0;
}

static int read_chunked(struct rd *r, size_t max, struct bc_httpc_resp *resp, size_t *cap,
                        const char **why)
{
	char line[LINE_MAX_LEN + 1];
	uint64_t size;
	int rc;

	for (;;) {
		if ((rc = read_line(r, line, why)) != 0)
			return rc;
		if (chunk_size(line, &size) != 0) {
			*why = "a malformed chunk size";
			return BC_ERR_INVALID;
		}
		if (size == 0)
			break;
		if (size > max - resp->len) {
			*why = "a body larger than the client's bound";
			return BC_ERR_LIMIT;
		}
		if ((rc = grow(resp, cap, (size_t)size)) != 0 ||
		    (rc = take(r, resp, (size_t)size, why)) != 0 ||
		    (rc = read_line(r, line, why)) != 0)
			return rc;
		if (line[0] != '\0') {
			*why = "a chunk longer than its size";
			return BC_ERR_INVALID;
		}
	}
	/* the trailer: header lines up to an empty one, ignored */
	do {
		if ((rc = read_line(r, line, why)) != 0)
			return rc;
	} while (line[0] != '\0');
	return 0;
}

/* Up to the end of the stream, at most max bytes. */
static int read_to_end(struct rd *r, size_t max, struct bc_httpc_resp *resp, size_t *cap,
                       const char **why)
{
	ssize_t got;
	size_t k;
	int rc;

	for (;;) {
		if ((k = r->len - r->pos) == 0) {
			if ((got = fill(r)) == 0)
				return 0;
			if (got < 0) {
				*why = "the connection failed while reading the answer";
				return BC_ERR_UNAVAILABLE;
			}
			k = (size_t)got;
		}
		if (k > max - resp->len) {
			*why = "a body larger than the client's bound";
			return BC_ERR_LIMIT;
		}
		if ((rc = grow(resp, cap, k)) != 0)
			return rc;
		memcpy(resp->body + resp->len, r->buf + r->pos, k);
		resp->len += k;
		r->pos += k;
	}
}

static int read_body(struct rd *r, size_t max, const struct framing *f, struct bc_httpc_resp *resp,
                     const char **why)
{
	size_t cap = 0;
	int rc;

	if (f->chunked)
		rc = read_chunked(r, max, resp, &cap, why);
	else if (!f->has_length)
		rc = read_to_end(r, max, resp, &cap, why);
	else if (f->length > max) {
		*why = "a body larger than the client's bound";
		rc = BC_ERR_LIMIT;
	} else if ((rc = grow(resp, &cap, (size_t)f->length)) == 0) {
		/* what may follow is not read: the connection is closed after the answer */
		rc = take(r, resp, (size_t)f->length, why);
	}
	if (rc == 0 && resp->body == NULL && (resp->body = malloc(1)) == NULL)
		rc = BC_ERR_NOMEM;
	if (rc == 0)
		resp->body[resp->len] = '\0';
	return rc;
}

int bc_httpc_read_reply(const struct bc_httpc_src *src, size_t max, int no_body,
                        struct bc_httpc_resp *resp, const char **why)
{
	struct rd *r = malloc(sizeof(*r));
	struct framing f;
	int rc;

	memset(resp, 0, sizeof(*resp));
	*why = "";
	if (r == NULL)
		return BC_ERR_NOMEM;
	r->src = src;
	r->pos = r->len = 0;
	if ((rc = read_head(r, resp, &f, why)) != 0)
		goto out;
	if (no_body || resp->status == 204 || resp->status == 304)
		goto out;
	rc = read_body(r, max, &f, resp, why);
out:
	if (rc == BC_ERR_NOMEM)
		*why = "out of memory";
	if (rc != 0) { /* a part of a body is no body */
		free(resp->body);
		resp->body = NULL;
		resp->len = 0;
	}
	free(r);
	return rc;
}

void bc_httpc_resp_free(struct bc_httpc_resp *resp)
{
	if (resp == NULL)
		return;
	free(resp->head);
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}
