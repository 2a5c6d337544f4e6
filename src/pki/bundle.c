/* The PKI bundle sealed under the server secret.
 *
 * Plaintext: a JSON object with "v":1, the trust domain, both CA certificates
 * (PEM), every private key (PKCS#8 PEM), the join signing key id and the
 * challenge key (hex). It is sealed with AES-256-GCM under
 * HKDF-SHA256(secret, info BUNDLE_INFO), aad BUNDLE_INFO, a random nonce, in
 * the envelope {"v":1,"alg":"A256GCM","nonce":b64,"ct":b64}. */
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"

#define BUNDLE_INFO   "bettercompute pki bundle v1"
#define KEY_INFO      "bettercompute pki key v1"
#define BUNDLE_ALG    "A256GCM"
#define BUNDLE_MAX    (64u * 1024)
#define BUNDLE_FIELDS 10
#define NONCE_LEN     12
#define TAG_LEN       16

/* jansson frees its strings without wiping them: the values of the plaintext
 * object (PEM private keys, the challenge key) are wiped in place first. The
 * buffers are jansson's own heap copies, so writing to them is sound. */
static void json_wipe_strings(json_t *obj)
{
	if (!json_is_object(obj))
		return;
	for (void *it = json_object_iter(obj); it != NULL; it = json_object_iter_next(obj, it)) {
		json_t *v = json_object_iter_value(it);
		if (json_is_string(v))
			OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
	}
}

/* A string member without embedded NULs. */
static int get_str(const json_t *obj, const char *key, const char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!json_is_string(v))
		return BC_ERR_INVALID;
	if (strlen(json_string_value(v)) != json_string_length(v))
		return BC_ERR_INVALID;
	*out = json_string_value(v);
	return 0;
}

static int derive_key(const uint8_t secret[static 32], const char *info, uint8_t key[static 32])
{
	static const uint8_t no_salt[1];

	return bc_hkdf_sha256(no_salt, 0, secret, 32, info, strlen(info), key, 32);
}

static int put_str(json_t *obj, const char *key, const char *s)
{
	json_t *v;

	if ((v = json_string(s)) == NULL)
		return BC_ERR_NOMEM;
	return json_object_set_new(obj, key, v) == 0 ? 0 : BC_ERR_NOMEM;
}

static int put_key(json_t *obj, const char *name, EVP_PKEY *key)
{
	char *pem = NULL;
	int rc;

	if ((rc = bc_key_to_pem(key, &pem)) != 0)
		return rc;
	rc = put_str(obj, name, pem);
	bc_freezero(pem, strlen(pem));
	return rc;
}

static int put_cert(json_t *obj, const char *name, X509 *x)
{
	char *pem = NULL;
	int rc;

	if ((rc = bc_x509_to_pem(x, &pem)) != 0)
		return rc;
	rc = put_str(obj, name, pem);
	free(pem);
	return rc;
}

static int bundle_to_json(const bc_pki *pki, json_t *obj)
{
	char hex[2 * sizeof(pki->challenge_key) + 1];
	int rc;

	if (json_object_set_new(obj, "v", json_integer(1)) != 0)
		return BC_ERR_NOMEM;
	bc_hex_encode_to(pki->challenge_key, sizeof(pki->challenge_key), hex);
	if ((rc = put_str(obj, "trust_domain", pki->trust_domain)) != 0 ||
	    (rc = put_cert(obj, "node_ca", pki->node_ca)) != 0 ||
	    (rc = put_key(obj, "node_ca_key", pki->node_ca_key)) != 0 ||
	    (rc = put_key(obj, "join_signing_key", pki->join_signing)) != 0 ||
	    (rc = put_str(obj, "join_signing_kid", pki->join_signing_kid)) != 0 ||
	    (rc = put_key(obj, "join_encryption_key", pki->join_encryption)) != 0 ||
	    (rc = put_str(obj, "challenge_key", hex)) != 0 ||
	    (rc = put_cert(obj, "tls_ca", pki->tls_ca)) != 0 ||
	    (rc = put_key(obj, "tls_ca_key", pki->tls_ca_key)) != 0)
		goto out;
out:
	OPENSSL_cleanse(hex, sizeof(hex));
	return rc;
}

/* The plaintext bytes. json_dumpb writes into our buffer directly, so no
 * intermediate copy of the keys is left unwiped in freed memory. */
static int plaintext_dump(const bc_pki *pki, uint8_t **pt, size_t *ptlen)
{
	const size_t flags = JSON_COMPACT | JSON_SORT_KEYS;
	json_t *obj = NULL;
	size_t n;
	int rc;

	*pt = NULL;
	*ptlen = 0;
	if ((obj = json_object()) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = bundle_to_json(pki, obj)) != 0)
		goto out;
	rc = BC_ERR_INTERNAL;
	if ((n = json_dumpb(obj, NULL, 0, flags)) == 0 || n > BUNDLE_MAX)
		goto out;
	rc = BC_ERR_NOMEM;
	if ((*pt = malloc(n)) == NULL)
		goto out;
	rc = BC_ERR_INTERNAL;
	if (json_dumpb(obj, (char *)*pt, n, flags) != n) {
		bc_freezero(*pt, n);
		*pt = NULL;
		goto out;
	}
	*ptlen = n;
	rc = 0;
out:
	json_wipe_strings(obj);
	json_decref(obj);
	return rc;
}

static int envelope_text(const uint8_t nonce[static NONCE_LEN], const uint8_t *ct, size_t ctlen,
                         char **text)
{
	char *n64 = NULL, *c64 = NULL;
	json_t *env = NULL;
	int rc = BC_ERR_NOMEM;

	*text = NULL;
	if ((n64 = bc_b64_encode(nonce, NONCE_LEN)) == NULL ||
	    (c64 = bc_b64_encode(ct, ctlen)) == NULL)
		goto out;
	if ((env = json_pack("{s:i,s:s,s:s,s:s}", "v", 1, "alg", BUNDLE_ALG, "nonce", n64, "ct",
	                     c64)) == NULL)
		goto out;
	if ((*text = bc_json_dump(env)) == NULL)
		goto out;
	rc = 0;
out:
	json_decref(env);
	free(n64);
	free(c64);
	return rc;
}

/* pt sealed under secret with info (HKDF info and aad) into the envelope. */
static int seal_bytes(const uint8_t *pt, size_t ptlen, const uint8_t secret[static 32],
                      const char *info, char **text)
{
	uint8_t key[32], nonce[NONCE_LEN];
	uint8_t *ct = NULL;
	int rc;

	*text = NULL;
	if ((rc = derive_key(secret, info, key)) != 0)
		goto out;
	if ((rc = bc_random(nonce, sizeof(nonce))) != 0)
		goto out;
	if ((ct = malloc(ptlen + TAG_LEN)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	rc = bc_aes256gcm_seal(key, nonce, info, strlen(info), pt, ptlen, ct);
	if (rc != 0)
		goto out;
	rc = envelope_text(nonce, ct, ptlen + TAG_LEN, text);
out:
	OPENSSL_cleanse(key, sizeof(key));
	free(ct);
	return rc;
}

int bc_pki_seal(const bc_pki *pki, const uint8_t secret[static 32], char **text)
{
	uint8_t *pt = NULL;
	size_t ptlen = 0;
	int rc;

	*text = NULL;
	if (pki == NULL || secret == NULL)
		return BC_ERR_INVALID;
	if ((rc = plaintext_dump(pki, &pt, &ptlen)) == 0)
		rc = seal_bytes(pt, ptlen, secret, BUNDLE_INFO, text);
	bc_freezero(pt, ptlen);
	return rc;
}

int bc_pki_seal_key(EVP_PKEY *key, const uint8_t secret[static 32], char **text)
{
	char *pem = NULL;
	int rc;

	*text = NULL;
	if (key == NULL || secret == NULL)
		return BC_ERR_INVALID;
	if ((rc = bc_key_to_pem(key, &pem)) != 0)
		return rc;
	rc = seal_bytes((const uint8_t *)pem, strlen(pem), secret, KEY_INFO, text);
	bc_freezero(pem, strlen(pem));
	return rc;
}

/* The envelope's nonce and ciphertext. Any flaw is BC_ERR_INVALID here; the
 * caller reports it as BC_ERR_VERIFY. */
static int envelope_fields(const char *text, size_t len, uint8_t nonce[static NONCE_LEN],
                           uint8_t **ct, size_t *ctlen)
{
	const char *alg, *s;
	json_t *env = NULL;
	uint8_t *n = NULL;
	size_t nlen = 0;
	int64_t v;
	char err[128];
	int rc;

	*ct = NULL;
	*ctlen = 0;
	if ((rc = bc_json_parse(text, len, BUNDLE_MAX, &env, err, sizeof(err))) != 0)
		goto out;
	rc = BC_ERR_INVALID;
	if (!json_is_object(env) || json_object_size(env) != 4)
		goto out;
	if (bc_json_get_int(env, "v", &v) != 0 || v != 1)
		goto out;
	if (get_str(env, "alg", &alg) != 0 || strcmp(alg, BUNDLE_ALG) != 0)
		goto out;
	if ((rc = get_str(env, "nonce", &s)) != 0 ||
	    (rc = bc_b64_decode(s, strlen(s), &n, &nlen)) != 0)
		goto out;
	rc = BC_ERR_INVALID;
	if (nlen != NONCE_LEN)
		goto out;
	memcpy(nonce, n, NONCE_LEN);
	if ((rc = get_str(env, "ct", &s)) != 0 ||
	    (rc = bc_b64_decode(s, strlen(s), ct, ctlen)) != 0)
		goto out;
	rc = *ctlen < TAG_LEN ? BC_ERR_INVALID : 0;
out:
	if (rc != 0) {
		free(*ct);
		*ct = NULL;
		*ctlen = 0;
	}
	free(n);
	json_decref(env);
	return rc;
}

/* The plaintext, or BC_ERR_VERIFY for anything short of an authentic
 * envelope under this secret. */
static int envelope_open(const char *text, size_t len, const uint8_t secret[static 32],
                         const char *info, uint8_t **pt, size_t *ptlen)
{
	uint8_t key[32], nonce[NONCE_LEN];
	uint8_t *ct = NULL;
	size_t ctlen = 0;
	int rc;

	*pt = NULL;
	*ptlen = 0;
	if ((rc = envelope_fields(text, len, nonce, &ct, &ctlen)) != 0) {
		rc = rc == BC_ERR_NOMEM ? rc : BC_ERR_VERIFY;
		goto out;
	}
	if ((rc = derive_key(secret, info, key)) != 0)
		goto out;
	/* one spare byte: malloc(0) may return NULL */
	if ((*pt = malloc(ctlen - TAG_LEN + 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	rc = bc_aes256gcm_open(key, nonce, info, strlen(info), ct, ctlen, *pt);
	if (rc != 0) {
		rc = rc == BC_ERR_NOMEM ? rc : BC_ERR_VERIFY;
		free(*pt);
		*pt = NULL;
		goto out;
	}
	*ptlen = ctlen - TAG_LEN;
out:
	OPENSSL_cleanse(key, sizeof(key));
	free(ct);
	return rc;
}

/* A CA certificate and its key: the key is P-256 and matches the certificate,
 * which is a CA and signed by that key. */
static int read_ca(const json_t *obj, const char *cert_name, const char *key_name, X509 **cert,
                   EVP_PKEY **key)
{
	const char *s;
	int rc;

	if ((rc = get_str(obj, cert_name, &s)) != 0 || (rc = pki_x509_from_pem(s, cert)) != 0)
		return rc;
	if ((rc = get_str(obj, key_name, &s)) != 0 ||
	    (rc = bc_key_from_pem(s, strlen(s), key)) != 0)
		return rc;
	rc = BC_ERR_INVALID;
	if (X509_check_private_key(*cert, *key) == 1 && X509_check_ca(*cert) == 1 &&
	    X509_verify(*cert, *key) == 1)
		rc = 0;
	ERR_clear_error();
	return rc;
}

static int read_key(const json_t *obj, const char *name, EVP_PKEY **key)
{
	const char *s;
	int rc;

	if ((rc = get_str(obj, name, &s)) != 0)
		return rc;
	return bc_key_from_pem(s, strlen(s), key);
}

static int read_fields(const json_t *obj, bc_pki *pki)
{
	const char *s;
	int rc;

	if ((rc = read_ca(obj, "node_ca", "node_ca_key", &pki->node_ca, &pki->node_ca_key)) != 0 ||
	    (rc = read_key(obj, "join_signing_key", &pki->join_signing)) != 0 ||
	    (rc = read_key(obj, "join_encryption_key", &pki->join_encryption)) != 0 ||
	    (rc = read_ca(obj, "tls_ca", "tls_ca_key", &pki->tls_ca, &pki->tls_ca_key)) != 0)
		return rc;
	/* the key id is recomputed, never taken on trust */
	if ((rc = bc_key_id(pki->join_signing, pki->join_signing_kid)) != 0)
		return rc;
	if ((rc = get_str(obj, "join_signing_kid", &s)) != 0)
		return rc;
	if (strcmp(s, pki->join_signing_kid) != 0)
		return BC_ERR_INVALID;
	if ((rc = get_str(obj, "challenge_key", &s)) != 0)
		return rc;
	if (strlen(s) != 2 * sizeof(pki->challenge_key))
		return BC_ERR_INVALID;
	return bc_hex_decode_to(s, pki->challenge_key, sizeof(pki->challenge_key));
}

static int bundle_from_plaintext(const uint8_t *pt, size_t ptlen, bc_pki **out)
{
	json_t *obj = NULL;
	bc_pki *pki = NULL;
	const char *td;
	int64_t v;
	char err[128];
	int rc;

	*out = NULL;
	if ((rc = bc_json_parse(pt, ptlen, BUNDLE_MAX, &obj, err, sizeof(err))) != 0)
		goto out;
	rc = BC_ERR_INVALID;
	if (!json_is_object(obj) || json_object_size(obj) != BUNDLE_FIELDS)
		goto out;
	if (bc_json_get_int(obj, "v", &v) != 0 || v != 1)
		goto out;
	if (get_str(obj, "trust_domain", &td) != 0 || !bc_trust_domain_valid(td))
		goto out;
	rc = BC_ERR_NOMEM;
	if ((pki = calloc(1, sizeof(*pki))) == NULL || (pki->trust_domain = strdup(td)) == NULL ||
	    (pki->live = pki_live_new()) == NULL)
		goto out;
	if ((rc = read_fields(obj, pki)) != 0)
		goto out;
	*out = pki;
	pki = NULL;
out:
	if (rc != 0 && rc != BC_ERR_NOMEM)
		rc = BC_ERR_INVALID;
	bc_pki_free(pki);
	json_wipe_strings(obj);
	json_decref(obj);
	return rc;
}

int bc_pki_open(const char *text, size_t len, const uint8_t secret[static 32], bc_pki **out)
{
	uint8_t *pt = NULL;
	size_t ptlen = 0;
	int rc;

	*out = NULL;
	if (text == NULL || secret == NULL)
		return BC_ERR_INVALID;
	if (len > BUNDLE_MAX)
		return BC_ERR_LIMIT;
	if ((rc = envelope_open(text, len, secret, BUNDLE_INFO, &pt, &ptlen)) != 0)
		goto out;
	rc = bundle_from_plaintext(pt, ptlen, out);
out:
	bc_freezero(pt, ptlen);
	return rc;
}

int bc_pki_open_key(const char *text, const uint8_t secret[static 32], EVP_PKEY **key)
{
	uint8_t *pt = NULL;
	size_t ptlen = 0, len;
	int rc;

	*key = NULL;
	if (text == NULL || secret == NULL)
		return BC_ERR_INVALID;
	if ((len = strlen(text)) > BUNDLE_MAX)
		return BC_ERR_LIMIT;
	if ((rc = envelope_open(text, len, secret, KEY_INFO, &pt, &ptlen)) != 0)
		return rc;
	rc = bc_key_from_pem((const char *)pt, ptlen, key);
	bc_freezero(pt, ptlen);
	return rc != 0 && rc != BC_ERR_NOMEM ? BC_ERR_INVALID : rc;
}
