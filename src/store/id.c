/* ULIDs for row ids: 48 bits of Unix ms then 80 random bits, in Crockford base32. */
#include <openssl/rand.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/store.h"
#include "store/id.h"

#define ULID_CHARS      26
#define ULID_TIME_CHARS 10
#define ULID_MAX_MS     ((int64_t)1 << 48)

static const char crockford[] = "0123456789abcdefghjkmnpqrstvwxyz";

static int prefix_ok(const char *prefix)
{
	if (prefix == NULL || *prefix == '\0')
		return 0;
	for (; *prefix != '\0'; prefix++)
		if (!((*prefix >= 'a' && *prefix <= 'z') || (*prefix >= '0' && *prefix <= '9')))
			return 0;
	return 1;
}

/* n characters for the low 5n bits of v, most significant first */
static void encode(uint64_t v, char *out, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		out[i] = crockford[v & 31];
		v >>= 5;
	}
}

/* 5 bytes, big-endian: 40 bits, 8 characters */
static uint64_t be40(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 5; i++)
		v = (v << 8) | p[i];
	return v;
}

int bc_id_format(const char *prefix, int64_t ms, const uint8_t rnd[static 10], char *out,
                 size_t outlen)
{
	size_t plen;
	char *u;

	if (out != NULL && outlen > 0)
		out[0] = '\0';
	if (out == NULL || !prefix_ok(prefix) || ms < 0 || ms >= ULID_MAX_MS)
		return BC_ERR_INVALID;
	plen = strlen(prefix);
	if (outlen < plen + 1 + ULID_CHARS + 1)
		return BC_ERR_LIMIT;
	memcpy(out, prefix, plen);
	out[plen] = '_';
	u = out + plen + 1;
	/* 10 characters hold 50 bits: the time's 48 and two leading zeros */
	encode((uint64_t)ms, u, ULID_TIME_CHARS);
	encode(be40(rnd), u + ULID_TIME_CHARS, 8);
	encode(be40(rnd + 5), u + ULID_TIME_CHARS + 8, 8);
	u[ULID_CHARS] = '\0';
	return 0;
}

int bc_new_id(const char *prefix, char *out, size_t outlen)
{
	uint8_t rnd[10];
	int rc;

	if (out != NULL && outlen > 0)
		out[0] = '\0';
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return BC_ERR_CRYPTO;
	rc = bc_id_format(prefix, bc_now_ms(), rnd, out, outlen);
	return rc;
}
