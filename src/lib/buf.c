#include "bc/buf.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#define BC_BUF_DEFAULT_MAX (16u * 1024 * 1024)
#define BC_BUF_MIN_CAP     64u

/* A reader over NULL points here instead, so that a zero-length read still
 * yields a valid pointer and never computes NULL + 0 (undefined in C). */
static const uint8_t empty_range[1];

void bc_reader_init(bc_reader *r, const void *p, size_t len)
{
	r->p = p ? p : empty_range;
	r->len = p ? len : 0;
	r->off = 0;
}

size_t bc_reader_left(const bc_reader *r)
{
	/* off > len only if a caller wrote the fields: read nothing rather than wrap */
	return r->off <= r->len ? r->len - r->off : 0;
}

int bc_reader_bytes(bc_reader *r, size_t n, const uint8_t **out)
{
	*out = NULL;
	if (r->p == NULL) {
		/* a zeroed reader that never went through bc_reader_init: empty */
		if (n > 0)
			return BC_ERR_TRUNCATED;
		*out = empty_range;
		return 0;
	}
	if (n > bc_reader_left(r))
		return BC_ERR_TRUNCATED;
	*out = r->p + r->off;
	r->off += n;
	return 0;
}

static int read_be(bc_reader *r, size_t n, uint64_t *v)
{
	const uint8_t *p;
	int rc;

	*v = 0;
	if ((rc = bc_reader_bytes(r, n, &p)) != 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		*v = (*v << 8) | p[i];
	return 0;
}

int bc_reader_u8(bc_reader *r, uint8_t *v)
{
	uint64_t x;
	int rc = read_be(r, 1, &x);
	*v = (uint8_t)x;
	return rc;
}

int bc_reader_u16(bc_reader *r, uint16_t *v)
{
	uint64_t x;
	int rc = read_be(r, 2, &x);
	*v = (uint16_t)x;
	return rc;
}

int bc_reader_u32(bc_reader *r, uint32_t *v)
{
	uint64_t x;
	int rc = read_be(r, 4, &x);
	*v = (uint32_t)x;
	return rc;
}

int bc_reader_u64(bc_reader *r, uint64_t *v)
{
	return read_be(r, 8, v);
}

int bc_reader_b16(bc_reader *r, const uint8_t **out, size_t *len)
{
	size_t save = r->off;
	uint16_t n;
	int rc;

	*out = NULL;
	*len = 0;
	if ((rc = bc_reader_u16(r, &n)) != 0)
		return rc;
	if ((rc = bc_reader_bytes(r, n, out)) != 0) {
		r->off = save;
		return rc;
	}
	*len = n;
	return 0;
}

int bc_reader_done(const bc_reader *r)
{
	return bc_reader_left(r) == 0 ? 0 : BC_ERR_TRAILING;
}

void bc_buf_init(bc_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max ? max : BC_BUF_DEFAULT_MAX;
}

static int reserve(bc_buf *b, size_t n)
{
	size_t need, cap;
	uint8_t *np;

	/* a zeroed bc_buf (not passed to bc_buf_init) gets the documented default */
	if (b->max == 0)
		b->max = BC_BUF_DEFAULT_MAX;
	if (n > b->max || b->len > b->max - n)
		return BC_ERR_LIMIT;
	need = b->len + n;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : BC_BUF_MIN_CAP;
	if (cap > b->max)
		cap = b->max;
	while (cap < need)
		cap = cap > b->max / 2 ? b->max : cap * 2;
	/* no realloc: the old bytes may be secret and must be wiped, not left behind */
	if ((np = malloc(cap)) == NULL)
		return BC_ERR_NOMEM;
	if (b->len)
		memcpy(np, b->p, b->len);
	bc_freezero(b->p, b->cap);
	b->p = np;
	b->cap = cap;
	return 0;
}

int bc_buf_put(bc_buf *b, const void *p, size_t n)
{
	int rc;

	if (n == 0)
		return 0;
	if (p == NULL)
		return BC_ERR_INVALID;
	if ((rc = reserve(b, n)) != 0)
		return rc;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static int put_be(bc_buf *b, uint64_t v, size_t n)
{
	uint8_t tmp[8];

	for (size_t i = 0; i < n; i++)
		tmp[n - 1 - i] = (uint8_t)(v >> (8 * i));
	return bc_buf_put(b, tmp, n);
}

int bc_buf_put_u8(bc_buf *b, uint8_t v)
{
	return put_be(b, v, 1);
}
int bc_buf_put_u16(bc_buf *b, uint16_t v)
{
	return put_be(b, v, 2);
}
int bc_buf_put_u32(bc_buf *b, uint32_t v)
{
	return put_be(b, v, 4);
}
int bc_buf_put_u64(bc_buf *b, uint64_t v)
{
	return put_be(b, v, 8);
}

int bc_buf_put_cstr(bc_buf *b, const char *s)
{
	if (s == NULL)
		return BC_ERR_INVALID;
	return bc_buf_put(b, s, strlen(s) + 1);
}

uint8_t *bc_buf_steal(bc_buf *b, size_t *len)
{
	uint8_t *p = b->p;

	*len = b->len;
	if (p == NULL) {
		/* callers may rely on a non-NULL pointer for an empty result */
		p = malloc(1);
	}
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void bc_buf_free(bc_buf *b)
{
	bc_freezero(b->p, b->cap);
	b->p = NULL;
	b->len = b->cap = 0;
}

void bc_freezero(void *p, size_t len)
{
	if (p == NULL)
		return;
	OPENSSL_cleanse(p, len);
	free(p);
}
