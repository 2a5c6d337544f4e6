/* Compact JWS/JWT verification and JWKS parsing (bc/jws.h), over OpenSSL 3 and
 * jansson. Nothing of the payload is read before its signature verifies. */
#include <limits.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/jws.h"
#include "bc/reasons.h"
#include "crypto/internal.h"

#define RSA_MIN_BITS 2048
#define RSA_MAX_BITS 8192

enum kty { KTY_RSA = 1, KTY_EC = 2 };

struct jwk {
	char kid[BC_JWS_KID_MAX];
	enum kty kty;
	char alg[16]; /* the JWK's own alg, "" when it has none */
	int weak;     /* an RSA modulus under RSA_MIN_BITS */
	int not_sig;  /* use is present and not "sig" */
	size_t sig_len;
	EVP_PKEY *pk;
};

struct bc_jwks {
	struct jwk keys[BC_JWKS_KEYS];
	size_t n;
};

static int b64url_member(const json_t *o, const char *key, uint8_t **out, size_t *len)
{
	const char *s;

	*out = NULL;
	*len = 0;
	if (bc_json_get_string(o, key, &s) != 0)
		return BC_ERR_INVALID;
	return bc_b64url_decode(s, strlen(s), out, len) == 0 && *len > 0 ? 0 : BC_ERR_INVALID;
}

static int rsa_from_jwk(const json_t *o, struct jwk *k)
{
	uint8_t *n = NULL, *e = NULL;
	size_t nlen, elen, skip = 0;
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	int rc = BC_ERR_INVALID, bits;

	if (b64url_member(o, "n", &n, &nlen) != 0 || b64url_member(o, "e", &e, &elen) != 0 ||
	    elen > 8)
		goto out;
	while (skip + 1 < nlen && n[skip] == 0)
		skip++;
	if ((bn = BN_bin2bn(n + skip, (int)(nlen - skip), NULL)) == NULL ||
	    (be = BN_bin2bn(e, (int)elen, NULL)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	bits = BN_num_bits(bn);
	if (bits > RSA_MAX_BITS || !BN_is_odd(be) || BN_is_one(be) || !BN_is_odd(bn))
		goto out;
	k->weak = bits < RSA_MIN_BITS;
	k->sig_len = (size_t)(bits + 7) / 8;
	if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    (ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &k->pk, EVP_PKEY_PUBLIC_KEY, params) != 1) {
		rc = bc_crypto_parse_err();
		goto out;
	}
	rc = 0;
out:
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	free(n);
	free(e);
	return rc;
}

static int ec_from_jwk(const json_t *o, struct jwk *k)
{
	uint8_t *x = NULL, *y = NULL, point[65];
	size_t xlen, ylen;
	int rc = BC_ERR_INVALID;

	if (b64url_member(o, "x", &x, &xlen) != 0 || b64url_member(o, "y", &y, &ylen) != 0 ||
	    xlen != 32 || ylen != 32)
		goto out;
	point[0] = 0x04;
	memcpy(point + 1, x, 32);
	memcpy(point + 33, y, 32);
	rc = bc_key_from_point(point, &k->pk) == 0 ? 0 : BC_ERR_INVALID;
	k->sig_len = 64;
out:
	free(x);
	free(y);
	return rc;
}

/* 1 when the key was read into k, 0 when it is of a kind we skip, < 0 invalid. */
static int jwk_parse(const json_t *o, struct jwk *k)
{
	const char *kty, *kid, *s;
	int rc;

	memset(k, 0, sizeof(*k));
	if (!json_is_object(o) || bc_json_get_string(o, "kty", &kty) != 0 ||
	    bc_json_get_string(o, "kid", &kid) != 0 || kid[0] == 0 || strlen(kid) >= BC_JWS_KID_MAX)
		return BC_ERR_INVALID;
	snprintf(k->kid, sizeof(k->kid), "%s", kid);
	if ((rc = bc_json_get_string(o, "alg", &s)) == 0 && strlen(s) < sizeof(k->alg))
		snprintf(k->alg, sizeof(k->alg), "%s", s);
	else if (rc != BC_ERR_NOT_FOUND)
		return BC_ERR_INVALID;
	if ((rc = bc_json_get_string(o, "use", &s)) == 0)
		k->not_sig = strcmp(s, "sig") != 0;
	else if (rc != BC_ERR_NOT_FOUND)
		return BC_ERR_INVALID;
	if (strcmp(kty, "RSA") == 0) {
		k->kty = KTY_RSA;
		rc = rsa_from_jwk(o, k);
	} else if (strcmp(kty, "EC") == 0) {
		if (bc_json_get_string(o, "crv", &s) != 0)
			return BC_ERR_INVALID;
		if (strcmp(s, "P-256") != 0)
			return 0;
		k->kty = KTY_EC;
		rc = ec_from_jwk(o, k);
	} else {
		return 0;
	}
	return rc == 0 ? 1 : rc;
}

static const struct jwk *find_kid(const bc_jwks *k, const char *kid)
{
	for (size_t i = 0; i < k->n; i++)
		if (strcmp(k->keys[i].kid, kid) == 0)
			return &k->keys[i];
	return NULL;
}

int bc_jwks_parse(const char *json, size_t len, bc_jwks **out)
{
	json_t *doc = NULL, *keys;
	bc_jwks *k;
	int rc = BC_ERR_INVALID;

	*out = NULL;
	if ((k = calloc(1, sizeof(*k))) == NULL)
		return BC_ERR_NOMEM;
	if (bc_json_parse(json, len, BC_JWKS_MAX, &doc, NULL, 0) != 0 || !json_is_object(doc) ||
	    !json_is_array(keys = json_object_get(doc, "keys")) ||
	    json_array_size(keys) > BC_JWKS_KEYS)
		goto out;
	for (size_t i = 0; i < json_array_size(keys); i++) {
		struct jwk tmp;
		int got = jwk_parse(json_array_get(keys, i), &tmp);
		if (got < 0) {
			EVP_PKEY_free(tmp.pk);
			rc = got;
			goto out;
		}
		if (got == 0)
			continue;
		if (find_kid(k, tmp.kid) != NULL) {
			EVP_PKEY_free(tmp.pk);
			goto out;
		}
		k->keys[k->n++] = tmp;
	}
	*out = k;
	k = NULL;
	rc = 0;
out:
	bc_jwks_free(k);
	json_decref(doc);
	return rc;
}

void bc_jwks_free(bc_jwks *k)
{
	if (k == NULL)
		return;
	for (size_t i = 0; i < k->n; i++)
		EVP_PKEY_free(k->keys[i].pk);
	free(k);
}

int bc_jwks_has(const bc_jwks *k, const char *kid)
{
	return k && find_kid(k, kid) != NULL;
}

size_t bc_jwks_count(const bc_jwks *k)
{
	return k ? k->n : 0;
}

/* The three parts of a compact token, decoded header and signature. */
struct parts {
	size_t signing_len; /* header "." payload */
	const char *payload;
	size_t payload_len;
	json_t *header;
	uint8_t *sig;
	size_t sig_len;
};

static void parts_free(struct parts *p)
{
	json_decref(p->header);
	free(p->sig);
	memset(p, 0, sizeof(*p));
}

static int b64url_json(const char *s, size_t len, json_t **out)
{
	uint8_t *raw = NULL;
	size_t n;
	int rc;

	*out = NULL;
	if ((rc = bc_b64url_decode(s, len, &raw, &n)) != 0)
		return rc == BC_ERR_NOMEM ? rc : BC_ERR_INVALID;
	rc = bc_json_parse(raw, n, BC_JWS_MAX, out, NULL, 0);
	free(raw);
	if (rc == 0 && !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		rc = BC_ERR_INVALID;
	}
	return rc == BC_ERR_NOMEM ? rc : rc ? BC_ERR_INVALID : 0;
}

static int split(const char *t, size_t len, struct parts *p)
{
	const char *d1, *d2;
	int rc;

	memset(p, 0, sizeof(*p));
	if (t == NULL || len == 0 || len > BC_JWS_MAX || memchr(t, 0, len) != NULL ||
	    (d1 = memchr(t, '.', len)) == NULL ||
	    (d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - t))) == NULL ||
	    memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - t)) != NULL || d1 == t || d2 == d1 + 1 ||
	    d2 + 1 == t + len)
		return BC_ERR_INVALID;
	p->signing_len = (size_t)(d2 - t);
	p->payload = d1 + 1;
	p->payload_len = (size_t)(d2 - d1 - 1);
	if ((rc = b64url_json(t, (size_t)(d1 - t), &p->header)) != 0)
		return rc;
	rc = bc_b64url_decode(d2 + 1, len - (size_t)(d2 + 1 - t), &p->sig, &p->sig_len);
	return rc == BC_ERR_NOMEM ? rc : rc ? BC_ERR_INVALID : 0;
}

int bc_jws_kid(const char *token, size_t len, char kid[static BC_JWS_KID_MAX])
{
	struct parts p;
	const char *s;
	int rc;

	kid[0] = 0;
	if ((rc = split(token, len, &p)) == 0) {
		if (bc_json_get_string(p.header, "kid", &s) == 0 && s[0] &&
		    strlen(s) < BC_JWS_KID_MAX)
			snprintf(kid, BC_JWS_KID_MAX, "%s", s);
		else
			rc = BC_ERR_INVALID;
	}
	parts_free(&p);
	return rc;
}

static int alg_allowed(const struct bc_jws_policy *p, const char *alg)
{
	/* never none or an HMAC, whatever the caller's list says */
	if (strcmp(alg, "RS256") != 0 && strcmp(alg, "ES256") != 0)
		return 0;
	for (size_t i = 0; i < p->n_algs; i++)
		if (strcmp(p->algs[i], alg) == 0)
			return 1;
	return 0;
}

/* The header's alg, kid and crit against the policy and the set: the key, or a reason. */
static const char *header_checks(const json_t *h, const bc_jwks *keys,
                                 const struct bc_jws_policy *p, const struct jwk **key)
{
	const char *alg, *kid;

	*key = NULL;
	if (bc_json_get_string(h, "alg", &alg) != 0 || !alg_allowed(p, alg))
		return BC_R_JWS_ALG;
	if (json_object_get(h, "crit") != NULL)
		return BC_R_JWS_CRIT;
	if (bc_json_get_string(h, "kid", &kid) != 0 || (*key = find_kid(keys, kid)) == NULL)
		return BC_R_JWS_KID;
	if (((*key)->kty == KTY_RSA) != (strcmp(alg, "RS256") == 0) ||
	    ((*key)->alg[0] && strcmp((*key)->alg, alg) != 0))
		return BC_R_JWS_ALG;
	if ((*key)->weak || (*key)->not_sig)
		return BC_R_JWS_KEY;
	return NULL;
}

static int verify_sig(const struct jwk *k, const char *t, const struct parts *p, int *ok)
{
	EVP_MD_CTX *md = NULL;
	uint8_t *der = NULL;
	const uint8_t *sig = p->sig;
	size_t sig_len = p->sig_len;
	int rc = 0;

	*ok = 0;
	if (p->sig_len != k->sig_len)
		return 0;
	if (k->kty == KTY_EC) {
		if ((rc = bc_ecdsa_p1363_to_der(p->sig, &der, &sig_len)) != 0)
			return rc == BC_ERR_NOMEM ? rc : 0;
		sig = der;
	}
	if ((md = EVP_MD_CTX_new()) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if (EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k->pk) != 1) {
		rc = bc_ossl_err();
		goto out;
	}
	*ok = EVP_DigestVerify(md, sig, sig_len, (const uint8_t *)t, p->signing_len) == 1;
	ERR_clear_error();
out:
	EVP_MD_CTX_free(md);
	free(der);
	return rc;
}

static int aud_contains(const json_t *aud, const char *want)
{
	if (json_is_string(aud))
		return strcmp(json_string_value(aud), want) == 0;
	if (!json_is_array(aud))
		return 0;
	for (size_t i = 0; i < json_array_size(aud); i++) {
		const char *s = json_string_value(json_array_get(aud, i));
		if (s && strcmp(s, want) == 0)
			return 1;
	}
	return 0;
}

/* seconds since the epoch, as JWT claims give them, to ms; 0 when out of range. */
static int claim_ms(const json_t *c, const char *key, int64_t *ms)
{
	int64_t s;
	int rc;

	*ms = 0;
	if ((rc = bc_json_get_int(c, key, &s)) != 0)
		return rc;
	if (s < 0 || s > INT64_MAX / 1000)
		return BC_ERR_INVALID;
	*ms = s * 1000;
	return 0;
}

static const char *claim_checks(const json_t *c, const struct bc_jws_policy *p)
{
	const char *iss;
	int64_t exp, nbf, iat;
	int rc;

	if (bc_json_get_string(c, "iss", &iss) != 0 || strcmp(iss, p->issuer) != 0)
		return BC_R_JWS_ISSUER;
	if (!aud_contains(json_object_get(c, "aud"), p->audience))
		return BC_R_JWS_AUDIENCE;
	if (claim_ms(c, "exp", &exp) != 0 || p->now_ms > exp + p->leeway_ms)
		return BC_R_JWS_EXPIRED;
	if ((rc = claim_ms(c, "nbf", &nbf)) != 0 && rc != BC_ERR_NOT_FOUND)
		return BC_R_JWS_MALFORMED;
	if (rc == 0 && nbf > p->now_ms + p->leeway_ms)
		return BC_R_JWS_NOT_YET_VALID;
	if (claim_ms(c, "iat", &iat) != 0)
		return BC_R_JWS_TOO_OLD;
	if (iat > p->now_ms + p->leeway_ms)
		return BC_R_JWS_NOT_YET_VALID;
	if (p->now_ms - iat > p->max_age_ms)
		return BC_R_JWS_TOO_OLD;
	return NULL;
}

int bc_jws_verify(const char *token, size_t len, const bc_jwks *keys, const struct bc_jws_policy *p,
                  json_t **claims, const char **reason)
{
	const struct jwk *k = NULL;
	struct parts parts;
	json_t *c = NULL;
	int rc, ok;

	*claims = NULL;
	*reason = NULL;
	if ((rc = split(token, len, &parts)) != 0) {
		parts_free(&parts);
		if (rc == BC_ERR_NOMEM)
			return rc;
		*reason = BC_R_JWS_MALFORMED;
		return 0;
	}
	if ((*reason = header_checks(parts.header, keys, p, &k)) != NULL)
		goto out;
	if ((rc = verify_sig(k, token, &parts, &ok)) != 0)
		goto out;
	if (!ok) {
		*reason = BC_R_JWS_SIGNATURE;
		goto out;
	}
	/* signed bytes only from here */
	if ((rc = b64url_json(parts.payload, parts.payload_len, &c)) != 0) {
		if (rc != BC_ERR_NOMEM) {
			*reason = BC_R_JWS_MALFORMED;
			rc = 0;
		}
		goto out;
	}
	if ((*reason = claim_checks(c, p)) == NULL) {
		*claims = c;
		c = NULL;
	}
out:
	json_decref(c);
	parts_free(&parts);
	return rc;
}
