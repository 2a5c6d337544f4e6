/* bc_jws_verify and bc_jwks_parse on arbitrary bytes. The first byte picks: even, the
 * rest is a token checked against a fixed set (an RSA-2048 and a P-256 key); odd, the
 * rest is a JWKS. A refusal leaves nothing behind; nothing is accepted (no token here
 * is signed by the set's keys, whose private halves are dropped). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/jws.h"

/* the test support's key and JWK makers, compiled in: fuzz builds have no test library */
#include "../support/bct_cloud.c"

static bc_jwks *keys;

/* A set of an RSA-2048, an RSA-1024 and a P-256 key, so the fuzzer reaches each key
 * type's checks; their private halves are dropped. */
static void init(void)
{
	EVP_PKEY *k[3] = {bct_rsa_key(2048), bct_rsa_key(1024), bct_ec_key()};
	char *j[3] = {bct_jwk(k[0], "rsa", "RS256"), bct_jwk(k[1], "weak", NULL),
	              bct_jwk(k[2], "ec", NULL)};
	char *set = bct_jwks((const char *const *)j, 3);

	if (set == NULL || bc_jwks_parse(set, strlen(set), &keys) != 0 || bc_jwks_count(keys) != 3)
		abort();
	for (int i = 0; i < 3; i++) {
		EVP_PKEY_free(k[i]);
		free(j[i]);
	}
	free(set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const algs[] = {"RS256", "ES256"};
	struct bc_jws_policy p = {.algs = algs,
	                          .n_algs = 2,
	                          .issuer = "https://accounts.google.com",
	                          .audience = "a",
	                          .now_ms = 1790000000000LL,
	                          .leeway_ms = 60000,
	                          .max_age_ms = 600000};
	char kid[BC_JWS_KID_MAX];
	const char *why = NULL;
	json_t *claims = NULL;
	bc_jwks *k = NULL;

	if (keys == NULL)
		init();
	if (size == 0)
		return 0;
	if (data[0] & 1) {
		if (bc_jwks_parse((const char *)data + 1, size - 1, &k) != 0 && k != NULL)
			abort();
		bc_jwks_free(k);
		return 0;
	}
	(void)bc_jws_kid((const char *)data + 1, size - 1, kid);
	if (bc_jws_verify((const char *)data + 1, size - 1, keys, &p, &claims, &why) != 0)
		return 0;
	if (why == NULL || claims != NULL)
		abort();
	return 0;
}
