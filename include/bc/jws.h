/* A strict verifier of compact JWS/JWT identity tokens (RFC 7515, 7519, 8725) and the
 * JSON Web Key Sets that hold their keys.
 *
 * Tokens: b64url(header) "." b64url(payload) "." b64url(signature), base64url without
 * padding (no '+', '/', '=', white space), header and payload JSON objects without
 * duplicate keys, nothing after the signature. RS256 (RSASSA-PKCS1-v1_5 SHA-256, moduli
 * of 2048 to 8192 bits) and ES256 (P-256, a 64-byte R || S signature) only, and only
 * those the caller's allow-list names; "none" and HS* never. The header needs a kid the
 * set holds, may not carry crit, and its alg must be the key's type and the JWK's own
 * alg when it has one.
 *
 * A refusal is 0 with *reason one of the BC_R_JWS_* strings of bc/reasons.h; a
 * negative BC_ERR_* means the check could not run (out of memory). */
#ifndef BC_JWS_H
#define BC_JWS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

#define BC_JWS_MAX     (16 * 1024)  /* the longest token accepted */
#define BC_JWKS_MAX    (256 * 1024) /* the largest key set read */
#define BC_JWKS_KEYS   64           /* the most keys a set may hold */
#define BC_JWS_KID_MAX 128

typedef struct bc_jwks bc_jwks;

/* {"keys":[...]}: RSA keys (n, e) and EC P-256 keys (crv, x, y). A key of another kty,
 * or of an unknown crv, is skipped (a provider may add kinds); a key without kid, a
 * kid twice, or a key that does not decode is BC_ERR_INVALID. An RSA key under 2048
 * bits is kept, so a token naming it is refused by name (jws-key). *out is freed with
 * bc_jwks_free. */
BC_WUR int bc_jwks_parse(const char *json, size_t len, bc_jwks **out);
void bc_jwks_free(bc_jwks *k);
size_t bc_jwks_count(const bc_jwks *k);
/* 1 when the set holds a key with that kid. */
int bc_jwks_has(const bc_jwks *k, const char *kid);

struct bc_jws_policy {
	const char *const *algs; /* the allow-list: "RS256", "ES256" */
	size_t n_algs;
	const char *issuer;   /* iss must be exactly this */
	const char *audience; /* aud (a string or an array) must contain this */
	int64_t now_ms;
	int64_t leeway_ms;  /* on exp, nbf and iat */
	int64_t max_age_ms; /* now - iat at most this */
};

/* The token's kid, unverified, into kid[BC_JWS_KID_MAX]: to decide whether the set
 * must be fetched again. BC_ERR_INVALID when the header does not parse or has none. */
BC_WUR int bc_jws_kid(const char *token, size_t len, char kid[static BC_JWS_KID_MAX]);

/* Verifies token against keys and p. On success *reason is NULL and *claims the
 * payload (json_decref it); on a refusal *claims is NULL. */
BC_WUR int bc_jws_verify(const char *token, size_t len, const bc_jwks *keys,
                         const struct bc_jws_policy *p, json_t **claims, const char **reason);

#endif
