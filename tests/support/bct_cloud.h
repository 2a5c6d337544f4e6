/* Test support for cloud-iid: keys, JWKS, JWTs signed with the test's own keys, and an
 * AWS-shaped "region certificate" with the document's signature and PKCS#7. Every
 * function returns NULL (or a negative BC_ERR_*) on failure; what it returns is the
 * caller's to free (free(), EVP_PKEY_free(), X509_free()). */
#ifndef BCT_CLOUD_H
#define BCT_CLOUD_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>

EVP_PKEY *bct_rsa_key(int bits);
EVP_PKEY *bct_ec_key(void);
/* A JWK (JSON object text) of the public key; alg NULL leaves it out. */
char *bct_jwk(EVP_PKEY *k, const char *kid, const char *alg);
/* {"keys":[jwks...]} */
char *bct_jwks(const char *const *jwks, size_t n);
/* b64url(header) "." b64url(payload) "." signature: RS256 for an RSA key, ES256 (P1363)
 * for an EC key, whatever the header says. */
char *bct_jwt(EVP_PKEY *k, const char *header_json, const char *payload_json);
/* A self-signed certificate of k (an RSA key). */
X509 *bct_self_cert(EVP_PKEY *k, const char *cn);
int bct_write_cert(const char *path, X509 *x);
/* Several certificates, PEM, one after another in one file. */
int bct_write_certs(const char *path, X509 *const *xs, size_t n);
/* PKCS#7 SignedData (DER) of doc, attached, SHA-256, by x and k. */
uint8_t *bct_pkcs7(X509 *x, EVP_PKEY *k, const char *doc, const char *md, size_t *len);
/* RSA PKCS#1 v1.5 SHA-256 over doc. */
uint8_t *bct_rsa_sign(EVP_PKEY *k, const char *doc, size_t *len);

#endif
