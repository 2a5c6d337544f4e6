/* Minting and parsing of every secret: see bc/secret.h. */
#include "bc/secret.h"

#include <openssl/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/wire.h"

#define ULID_LEN         26
#define TOKEN_SECRET_MIN 16
#define TOKEN_SECRET_MAX 128

static int is_b32(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
}

static int is_b64url(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

int bc_secret_mint(const char *prefix, const char *id, char **whole,
                   char hash_hex[BC_SECRET_HASH_HEX])
{
	uint8_t raw[32], d[32];
	char *b64 = NULL;
	int rc;

	*whole = NULL;
	hash_hex[0] = '\0';
	if ((rc = bc_random(raw, sizeof(raw))) != 0)
		goto out;
	if ((b64 = bc_b64url_encode(raw, sizeof(raw))) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = bc_sha256(b64, strlen(b64), d)) != 0)
		goto out;
	if (asprintf(whole, "%s%s_%s", prefix, id, b64) < 0) {
		*whole = NULL;
		rc = BC_ERR_NOMEM;
		goto out;
	}
	bc_hex_encode_to(d, sizeof(d), hash_hex);
out:
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(d, sizeof(d));
	if (b64 != NULL)
		bc_freezero(b64, strlen(b64));
	return rc;
}

/* prefix + id_prefix + 26 base32 + "_": the id copied out, the rest returned. */
static const char *split_id(const char *s, const char *prefix, const char *id_prefix,
                            char id[BC_SECRET_ID_LEN + 1])
{
	size_t p = strlen(prefix), q = strlen(id_prefix);

	if (s == NULL || strncmp(s, prefix, p) != 0 || strncmp(s + p, id_prefix, q) != 0)
		return NULL;
	for (size_t i = 0; i < ULID_LEN; i++)
		if (!is_b32(s[p + q + i]))
			return NULL;
	if (s[p + q + ULID_LEN] != '_')
		return NULL;
	memcpy(id, s + p, q + ULID_LEN);
	id[q + ULID_LEN] = '\0';
	return s + p + q + ULID_LEN + 1;
}

int bc_secret_parse_token(const char *token, char id[BC_SECRET_ID_LEN + 1], const char **secret)
{
	const char *s;
	size_t n;

	id[0] = '\0';
	*secret = NULL;
	if ((s = split_id(token, BC_WIRE_TOKEN_PREFIX, "tok_", id)) == NULL)
		goto bad;
	n = strlen(s);
	if (n < TOKEN_SECRET_MIN || n > TOKEN_SECRET_MAX)
		goto bad;
	*secret = s;
	return 0;
bad:
	id[0] = '\0';
	return BC_ERR_INVALID;
}

int bc_secret_parse_api_key(const char *key, char id[BC_SECRET_ID_LEN + 1], const char **secret)
{
	const char *s;

	id[0] = '\0';
	*secret = NULL;
	if ((s = split_id(key, BC_SECRET_API_KEY_PREFIX, "key_", id)) == NULL ||
	    strlen(s) != BC_SECRET_LEN)
		goto bad;
	for (size_t i = 0; i < BC_SECRET_LEN; i++)
		if (!is_b64url(s[i]))
			goto bad;
	*secret = s;
	return 0;
bad:
	id[0] = '\0';
	return BC_ERR_INVALID;
}

int bc_secret_matches(const char *secret, const char *stored_hex)
{
	char presented[BC_SECRET_HASH_HEX];
	uint8_t d[32];
	int rc;

	if ((rc = bc_sha256(secret, strlen(secret), d)) != 0)
		goto out;
	bc_hex_encode_to(d, sizeof(d), presented);
	rc = strlen(stored_hex) == 64 && bc_ct_equal(presented, stored_hex, 64);
out:
	OPENSSL_cleanse(d, sizeof(d));
	OPENSSL_cleanse(presented, sizeof(presented));
	return rc;
}
