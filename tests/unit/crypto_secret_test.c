/* bc/secret.h: minted secrets parse back to their id and hash, and every malformed
 * token or API key is refused by its parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/secret.h"
#include "bc/wire.h"

#define TOK_ID "tok_01hzzzzzzzzzzzzzzzzzzzzzzz"
#define KEY_ID "key_01hzzzzzzzzzzzzzzzzzzzzzzz"

static void test_mint_token_round_trip(void **state)
{
	char hash[BC_SECRET_HASH_HEX], id[BC_SECRET_ID_LEN + 1], hex[65];
	const char *secret;
	char *whole = NULL;
	uint8_t d[32];

	(void)state;
	assert_int_equal(strlen(TOK_ID), BC_SECRET_ID_LEN);
	assert_int_equal(bc_secret_mint(BC_WIRE_TOKEN_PREFIX, TOK_ID, &whole, hash), 0);
	assert_int_equal(strlen(whole), 4 + BC_SECRET_ID_LEN + 1 + BC_SECRET_LEN);
	assert_int_equal(strncmp(whole, "bct_" TOK_ID "_", 4 + BC_SECRET_ID_LEN + 1), 0);
	assert_int_equal(bc_secret_parse_token(whole, id, &secret), 0);
	assert_string_equal(id, TOK_ID);
	assert_ptr_equal(secret, whole + 4 + BC_SECRET_ID_LEN + 1);
	/* the stored hash is of the secret part, as text */
	assert_int_equal(bc_sha256(secret, strlen(secret), d), 0);
	bc_hex_encode_to(d, sizeof(d), hex);
	assert_string_equal(hex, hash);
	assert_int_equal(bc_secret_matches(secret, hash), 1);
	assert_int_equal(bc_secret_matches("another secret", hash), 0);
	assert_int_equal(bc_secret_matches(secret, "abcd"), 0);
	bc_freezero(whole, strlen(whole));
}

static void test_mint_api_key_round_trip(void **state)
{
	char hash[BC_SECRET_HASH_HEX], id[BC_SECRET_ID_LEN + 1], hash2[BC_SECRET_HASH_HEX];
	const char *secret;
	char *a = NULL, *b = NULL;

	(void)state;
	assert_int_equal(bc_secret_mint(BC_SECRET_API_KEY_PREFIX, KEY_ID, &a, hash), 0);
	assert_int_equal(bc_secret_parse_api_key(a, id, &secret), 0);
	assert_string_equal(id, KEY_ID);
	assert_int_equal(bc_secret_matches(secret, hash), 1);
	/* a key is no token, nor a token a key */
	assert_int_equal(bc_secret_parse_token(a, id, &secret), BC_ERR_INVALID);
	assert_string_equal(id, "");
	assert_null(secret);
	/* two mints differ */
	assert_int_equal(bc_secret_mint(BC_SECRET_API_KEY_PREFIX, KEY_ID, &b, hash2), 0);
	assert_string_not_equal(a, b);
	assert_string_not_equal(hash, hash2);
	free(a);
	free(b);
}

static void test_token_malformed(void **state)
{
	static const char *const bad[] = {
	    "",
	    "bct_",
	    "bck_" TOK_ID "_0123456789abcdef",                     /* another prefix */
	    "bct_key_01hzzzzzzzzzzzzzzzzzzzzzzz_0123456789abcdef", /* another id kind */
	    "bct_tok_01HZZZZZZZZZZZZZZZZZZZZZZZ_0123456789abcdef", /* upper case */
	    "bct_tok_01hzzzzzzzzzzzzzzzzzzzzzz_0123456789abcdef",  /* 25 characters */
	    "bct_" TOK_ID "0123456789abcdef",                      /* no '_' */
	    "bct_" TOK_ID "_0123456789abcde",                      /* 15 bytes of secret */
	    "bct_" TOK_ID,                                         /* no secret */
	};
	char id[BC_SECRET_ID_LEN + 1], longer[4 + BC_SECRET_ID_LEN + 1 + 130];
	const char *secret;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		secret = "x";
		assert_int_equal(bc_secret_parse_token(bad[i], id, &secret), BC_ERR_INVALID);
		assert_string_equal(id, "");
		assert_null(secret);
	}
	assert_int_equal(bc_secret_parse_token(NULL, id, &secret), BC_ERR_INVALID);
	/* 16 and 128 bytes of secret pass; 129 does not */
	assert_int_equal(bc_secret_parse_token("bct_" TOK_ID "_0123456789abcdef", id, &secret), 0);
	snprintf(longer, sizeof(longer), "bct_" TOK_ID "_%0128d", 0);
	assert_int_equal(bc_secret_parse_token(longer, id, &secret), 0);
	snprintf(longer, sizeof(longer), "bct_" TOK_ID "_%0129d", 0);
	assert_int_equal(bc_secret_parse_token(longer, id, &secret), BC_ERR_INVALID);
}

static void test_api_key_malformed(void **state)
{
	/* 43 base64url characters */
	const char *good = "bck_" KEY_ID "_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA-";
	static const char *const bad[] = {
	    "bck_" KEY_ID "_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",   /* 42 */
	    "bck_" KEY_ID "_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", /* 44 */
	    "bck_" KEY_ID "_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",  /* not base64url */
	    "bck_" KEY_ID "_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+",
	    "bct_" KEY_ID "_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA-", /* a token's prefix */
	    "bck_tok_01hzzzzzzzzzzzzzzzzzzzzzzz_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA-",
	    "bck_key_01hzzzzzzzzzzzzzzzzzzzzzz!_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA-",
	    "Bearer bck_" KEY_ID "_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA-",
	    "",
	};
	char id[BC_SECRET_ID_LEN + 1];
	const char *secret;

	(void)state;
	assert_int_equal(bc_secret_parse_api_key(good, id, &secret), 0);
	assert_string_equal(id, KEY_ID);
	assert_string_equal(secret, good + 4 + BC_SECRET_ID_LEN + 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(bc_secret_parse_api_key(bad[i], id, &secret), BC_ERR_INVALID);
		assert_string_equal(id, "");
		assert_null(secret);
	}
	assert_int_equal(bc_secret_parse_api_key(NULL, id, &secret), BC_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mint_token_round_trip),
	    cmocka_unit_test(test_mint_api_key_round_trip),
	    cmocka_unit_test(test_token_malformed),
	    cmocka_unit_test(test_api_key_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
