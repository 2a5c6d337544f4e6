/* base64url, base64 and hex.
 *
 * The alphabets are mapped with arithmetic instead of lookup tables (after
 * WireGuard's encoding.c), so that decoding or encoding a secret does not index
 * memory by its bits. Only the final "was every character valid" result is
 * branched on. */
#include "bc/codec.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"

/* All ones when lo <= c <= hi, else 0, without a branch. c is 0..255 and the
 * bounds are printable ASCII, so both differences stay above -256 and the
 * arithmetic shift of their AND yields -1 or 0. */
static int ct_in_range(int c, int lo, int hi)
{
	return ((lo - 1 - c) & (c - (hi + 1))) >> 8;
}

/* 0..63, or -1 when c is outside the alphabet. */
static int b64_value(unsigned char uc, int url)
{
	int c = uc;
	int v = -1;

	v += ct_in_range(c, 'A', 'Z') & (c - 'A' + 1);
	v += ct_in_range(c, 'a', 'z') & (c - 'a' + 27);
	v += ct_in_range(c, '0', '9') & (c - '0' + 53);
	if (url) {
		v += ct_in_range(c, '-', '-') & 63;
		v += ct_in_range(c, '_', '_') & 64;
	} else {
		v += ct_in_range(c, '+', '+') & 63;
		v += ct_in_range(c, '/', '/') & 64;
	}
	return v;
}

static char b64_char(unsigned x, int url)
{
	int v = (int)(x & 63);
	int c = 'A' + v;

	c += ((25 - v) >> 8) & 6;
	c -= ((51 - v) >> 8) & 75;
	c -= ((61 - v) >> 8) & (url ? 13 : 15);
	c += ((62 - v) >> 8) & (url ? 49 : 3);
	return (char)c;
}

/* 0..15, or -1 when c is not a hex digit of either case. */
static int hex_value(unsigned char uc)
{
	int c = uc;
	int v = -1;

	v += ct_in_range(c, '0', '9') & (c - '0' + 1);
	v += ct_in_range(c, 'a', 'f') & (c - 'a' + 11);
	v += ct_in_range(c, 'A', 'F') & (c - 'A' + 11);
	return v;
}

static char hex_char(unsigned x)
{
	int v = (int)(x & 15);

	return (char)('0' + v + (((9 - v) >> 8) & 39));
}

/* Encodes len bytes into b64 characters without padding; out has room. */
static size_t b64_encode_body(const uint8_t *p, size_t len, char *out, int url)
{
	size_t i, o = 0;
	uint32_t w;

	for (i = 0; i + 3 <= len; i += 3) {
		w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = b64_char(w >> 18, url);
		out[o++] = b64_char(w >> 12, url);
		out[o++] = b64_char(w >> 6, url);
		out[o++] = b64_char(w, url);
	}
	if (len - i == 1) {
		w = (uint32_t)p[i] << 16;
		out[o++] = b64_char(w >> 18, url);
		out[o++] = b64_char(w >> 12, url);
	} else if (len - i == 2) {
		w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		out[o++] = b64_char(w >> 18, url);
		out[o++] = b64_char(w >> 12, url);
		out[o++] = b64_char(w >> 6, url);
	}
	return o;
}

static char *b64_encode(const void *p, size_t len, int url)
{
	size_t groups, olen, o;
	char *out;

	if (p == NULL && len > 0)
		return NULL;
	groups = len / 3 + (len % 3 != 0);
	if (groups > (SIZE_MAX - 1) / 4)
		return NULL;
	olen = groups * 4;
	if ((out = malloc(olen + 1)) == NULL)
		return NULL;
	o = len ? b64_encode_body(p, len, out, url) : 0;
	while (!url && o < olen)
		out[o++] = '=';
	out[o] = '\0';
	return out;
}

char *bc_b64url_encode(const void *p, size_t len)
{
	return b64_encode(p, len, 1);
}

char *bc_b64_encode(const void *p, size_t len)
{
	return b64_encode(p, len, 0);
}

/* Decodes n (not 1 mod 4) unpadded characters into out. Refuses a character
 * outside the alphabet and unused low bits that are not zero, so that every
 * byte string has exactly one accepted encoding. */
static int b64_decode_body(const char *s, size_t n, uint8_t *out, int url)
{
	size_t i, o = 0;
	uint32_t w = 0;
	int v, bad = 0, bits = 0;

	for (i = 0; i < n; i++) {
		v = b64_value((unsigned char)s[i], url);
		bad |= v;
		w = (w << 6) | (uint32_t)(v & 63);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(w >> bits);
			w &= (1u << bits) - 1;
		}
	}
	/* the bits left over are the encoding's padding bits */
	bad |= -(int)(w != 0);
	return bad < 0 ? BC_ERR_INVALID : 0;
}

static int b64_decode(const char *s, size_t slen, uint8_t **out, size_t *len, int url)
{
	size_t chars = slen, olen;
	uint8_t *p = NULL;
	int rc;

	*out = NULL;
	*len = 0;
	if (s == NULL && slen > 0)
		return BC_ERR_INVALID;
	if (!url) {
		/* padded: whole quads, '=' only as the last one or two characters */
		if (slen % 4 != 0)
			return BC_ERR_INVALID;
		if (chars > 0 && s[chars - 1] == '=')
			chars--;
		if (chars > 0 && s[chars - 1] == '=' && slen - chars == 1)
			chars--;
	}
	if (chars % 4 == 1)
		return BC_ERR_INVALID;
	olen = chars / 4 * 3 + (chars % 4 ? chars % 4 - 1 : 0);
	if ((p = malloc(olen + 1)) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = b64_decode_body(s, chars, p, url)) != 0)
		goto out;
	p[olen] = 0;
	*out = p;
	*len = olen;
	p = NULL;
out:
	bc_freezero(p, olen + 1);
	return rc;
}

int bc_b64url_decode(const char *s, size_t slen, uint8_t **out, size_t *len)
{
	return b64_decode(s, slen, out, len, 1);
}

int bc_b64_decode(const char *s, size_t slen, uint8_t **out, size_t *len)
{
	return b64_decode(s, slen, out, len, 0);
}

void bc_hex_encode_to(const void *p, size_t len, char *out)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex_char(b[i] >> 4);
		out[2 * i + 1] = hex_char(b[i]);
	}
	out[2 * len] = '\0';
}

char *bc_hex_encode(const void *p, size_t len)
{
	char *out;

	if ((p == NULL && len > 0) || len > (SIZE_MAX - 1) / 2)
		return NULL;
	if ((out = malloc(2 * len + 1)) == NULL)
		return NULL;
	bc_hex_encode_to(p, len, out);
	return out;
}

/* Decodes 2*n hex characters into n bytes; out is wiped when one is invalid. */
static int hex_decode_body(const char *s, uint8_t *out, size_t n)
{
	int hi, lo, bad = 0;

	for (size_t i = 0; i < n; i++) {
		hi = hex_value((unsigned char)s[2 * i]);
		lo = hex_value((unsigned char)s[2 * i + 1]);
		bad |= hi | lo;
		out[i] = (uint8_t)((hi & 15) << 4 | (lo & 15));
	}
	if (bad < 0) {
		OPENSSL_cleanse(out, n);
		return BC_ERR_INVALID;
	}
	return 0;
}

int bc_hex_decode(const char *s, size_t slen, uint8_t **out, size_t *len)
{
	uint8_t *p;
	int rc;

	*out = NULL;
	*len = 0;
	if ((s == NULL && slen > 0) || slen % 2 != 0)
		return BC_ERR_INVALID;
	if ((p = malloc(slen / 2 + 1)) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = hex_decode_body(s, p, slen / 2)) != 0) {
		free(p);
		return rc;
	}
	p[slen / 2] = 0;
	*out = p;
	*len = slen / 2;
	return 0;
}

int bc_hex_decode_to(const char *s, uint8_t *out, size_t outlen)
{
	if (out == NULL && outlen > 0)
		return BC_ERR_INVALID;
	if (s == NULL || outlen > SIZE_MAX / 2 || strnlen(s, 2 * outlen + 1) != 2 * outlen) {
		if (outlen > 0)
			OPENSSL_cleanse(out, outlen);
		return BC_ERR_INVALID;
	}
	return hex_decode_body(s, out, outlen);
}
