/* Every decoder on arbitrary bytes. The decoders are canonical, so whatever one
 * accepts must encode back to the very input (hex up to letter case, as it
 * accepts both cases); and every encoding must decode to the bytes encoded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"

typedef int (*decode_fn)(const char *, size_t, uint8_t **, size_t *);
typedef char *(*encode_fn)(const void *, size_t);

static int same(const char *a, const uint8_t *b, size_t n, int fold_case)
{
	if (strlen(a) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char x = (unsigned char)a[i], y = b[i];
		if (fold_case && y >= 'A' && y <= 'F')
			y = (unsigned char)(y - 'A' + 'a');
		if (x != y)
			return 0;
	}
	return 1;
}

static void decode_then_encode(decode_fn dec, encode_fn enc, const uint8_t *data, size_t size,
                               int fold_case)
{
	uint8_t *out = NULL;
	size_t len = 0;
	char *back;

	if (dec((const char *)data, size, &out, &len) != 0) {
		if (out != NULL || len != 0)
			abort();
		return;
	}
	if (out == NULL || out[len] != 0)
		abort();
	back = enc(out, len);
	if (back == NULL || !same(back, data, size, fold_case))
		abort();
	free(back);
	free(out);
}

static void encode_then_decode(decode_fn dec, encode_fn enc, const uint8_t *data, size_t size)
{
	uint8_t *out = NULL;
	size_t len = 0;
	char *s = enc(data, size);

	if (s == NULL || dec(s, strlen(s), &out, &len) != 0)
		abort();
	if (len != size || (size && memcmp(out, data, size) != 0))
		abort();
	free(out);
	free(s);
}

/* bc_hex_decode_to must agree with bc_hex_decode on the same C string, and
 * refuse a length other than 2*outlen. */
static void hex_to(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	uint8_t *a = NULL, *b = malloc(size / 2 + 1);
	size_t alen = 0, slen;
	int ra, rb;

	if (s == NULL || b == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	slen = strlen(s);
	ra = bc_hex_decode(s, slen, &a, &alen);
	rb = bc_hex_decode_to(s, b, slen / 2);
	if ((ra == 0) != (rb == 0) || (ra == 0 && (alen != slen / 2 || memcmp(a, b, alen) != 0)))
		abort();
	if (slen != size / 2 * 2 && bc_hex_decode_to(s, b, size / 2) == 0)
		abort();
	free(a);
	free(b);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_then_encode(bc_b64url_decode, bc_b64url_encode, data, size, 0);
	decode_then_encode(bc_b64_decode, bc_b64_encode, data, size, 0);
	decode_then_encode(bc_hex_decode, bc_hex_encode, data, size, 1);
	encode_then_decode(bc_b64url_decode, bc_b64url_encode, data, size);
	encode_then_decode(bc_b64_decode, bc_b64_encode, data, size);
	encode_then_decode(bc_hex_decode, bc_hex_encode, data, size);
	hex_to(data, size);
	return 0;
}
