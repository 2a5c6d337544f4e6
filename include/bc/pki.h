/* The PKI bundle, CSR checks, node certificates, SPIFFE IDs and urn:bc: statements.
 *
 * The bundle holds everything the control plane signs or decrypts with: the trust
 * domain, the node CA (certificate and key), the join signing key (signs every
 * JoinService answer), the join encryption key (opens sealed tokens), the tpm
 * challenge key (32 bytes, seals challenge state) and the server TLS CA
 * (certificate and key) that signs the server's own TLS certificate.
 * On disk it is sealed under the server secret (32 bytes): see bc_pki_seal(). */
#ifndef BC_PKI_H
#define BC_PKI_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

#define BC_NODE_CERT_TTL_MS    (24LL * 3600 * 1000)
#define BC_RAMDISK_CERT_TTL_MS (2LL * 3600 * 1000)
/* A node certificate's notBefore is this much before its issue time, so that a node
 * whose clock runs behind the database's still accepts the certificate it was just
 * given (step-ca and SPIRE backdate the same way). The lifetime (ttl) counts from
 * the issue time, not from notBefore. */
#define BC_NODE_CERT_BACKDATE_MS (5LL * 60 * 1000)
#define BC_MAX_URIS              4

struct bc_pki_live;
/* A join key: the join signing key signs every JoinService answer and the pins-update
 * statement, the join encryption key opens sealed tokens. The bundle holds generation 1
 * of each (join_signing, join_encryption below); the store's pki_keys table holds every
 * generation (kinds 'join-signing' and 'join-encryption') and the set read from it
 * (struct bc_node_cas) holds them as bc_join_key. States as the pins-update statement
 * names them: next (the store's prepared), active, retired. */
enum bc_join_key_use { BC_JOIN_KEY_SIGNING = 1, BC_JOIN_KEY_ENCRYPTION = 2 };
enum bc_join_key_state { BC_JOIN_KEY_ACTIVE = 1, BC_JOIN_KEY_NEXT = 2, BC_JOIN_KEY_RETIRED = 3 };
#define BC_JOIN_KEYS_MAX 8 /* keys in a pins-update statement */
struct bc_join_key {
	enum bc_join_key_use use;
	enum bc_join_key_state state;
	EVP_PKEY *key; /* private; public only for a retired key */
	int64_t id;    /* the generation: pki_keys.id */
	int64_t activated_ms, retired_ms;
	char kid[65];      /* filled by bc_node_cas_finish */
	uint8_t point[65]; /* its public point, likewise */
};

typedef struct bc_pki {
	char *trust_domain;
	X509 *node_ca;
	EVP_PKEY *node_ca_key;
	EVP_PKEY *join_signing;
	char join_signing_kid[65];
	EVP_PKEY *join_encryption;
	uint8_t challenge_key[32];
	X509 *tls_ca;
	EVP_PKEY *tls_ca_key;
	/* the node CA and join key set read from the store (bc_pki_node_cas_install), which
	   then takes the place of node_ca for issuing, verifying and the trust bundle, and of
	   the join pair for signing answers and opening tokens; NULL until then */
	struct bc_pki_live *live;
} bc_pki;

/* "join-signing", "join-encryption"; "active", "next", "retired"; NULL for another
 * value. bc_join_key_use_of / _state_of: the reverse (0 for an unknown name). */
const char *bc_join_key_use_name(enum bc_join_key_use use);
const char *bc_join_key_state_name(enum bc_join_key_state state);
enum bc_join_key_use bc_join_key_use_of(const char *name);
enum bc_join_key_state bc_join_key_state_of(const char *name);
/* A new bundle with fresh keys; trust_domain is a DNS-like name
 * ([a-z0-9.-], 1..255). */
int bc_trust_domain_valid(const char *trust_domain); /* 1 when valid, else 0 */
BC_WUR int bc_pki_generate(const char *trust_domain, bc_pki **out);
void bc_pki_free(bc_pki *pki); /* wipes the private keys */

/* The bundle as text: a JSON envelope {"v":1,"alg":"A256GCM","nonce":..,"ct":..}
 * whose plaintext (the keys) is AES-256-GCM under HKDF-SHA256(secret,
 * info "bettercompute pki bundle v1"). bc_pki_open returns BC_ERR_VERIFY when
 * the secret is wrong or the text was altered, and for any text that is not such
 * an envelope (a caller cannot tell these apart); BC_ERR_LIMIT over 64 KiB;
 * BC_ERR_INVALID when an authentic plaintext does not hold a consistent bundle
 * (a key not matching its CA certificate, a wrong key id, a wrong version).
 * The plaintext is wiped after use. */
BC_WUR int bc_pki_seal(const bc_pki *pki, const uint8_t secret[static 32], char **text);
BC_WUR int bc_pki_open(const char *text, size_t len, const uint8_t secret[static 32], bc_pki **out);

/* CSR checks: DER PKCS#10, a P-256 key, a self-signature (ECDSA with SHA-256) that
 * verifies; nothing else is read from it. *pub receives the key (caller frees);
 * bc_csr_check_point gives it as its uncompressed point instead (zeroed on error), for
 * a server that only puts it in a certificate. Errors: BC_ERR_INVALID (not a CSR, not
 * a named-curve P-256 key with an uncompressed point, another signature algorithm),
 * BC_ERR_TRAILING (bytes after the DER), BC_ERR_LIMIT (over 64 KiB), BC_ERR_VERIFY
 * (signature). */
BC_WUR int bc_csr_check(const uint8_t *der, size_t len, EVP_PKEY **pub);
BC_WUR int bc_csr_check_point(const uint8_t *der, size_t len, uint8_t point[static 65]);
/* A CSR for key (subject CN = cn, no extensions), DER malloc'd. */
BC_WUR int bc_csr_make(EVP_PKEY *key, const char *cn, uint8_t **der, size_t *len);

/* Roles in a SPIFFE ID. */
#define BC_ROLE_NODE        "node"
#define BC_ROLE_SITE        "site"
#define BC_ROLE_RAMDISK     "ramdisk"
#define BC_ROLE_NODE_TENANT "node-tenant"
int bc_role_valid(const char *role); /* 1 for one of the four roles, else 0 */
/* 1 when node_id is "node_" followed by 26 of [0-9a-z], else 0. */
int bc_node_id_valid(const char *node_id);

/* spiffe://<trust domain>/<role>/<node id>, malloc'd; NULL when a part is not
 * valid (see above) or memory ran out. */
char *bc_spiffe_id(const char *trust_domain, const char *role, const char *node_id);

struct bc_node_cert_req {
	const char *node_id;
	const char *role;              /* node, site, ramdisk, node-tenant */
	EVP_PKEY *pub;                 /* the CSR's key, or NULL and: */
	const uint8_t *point;          /* its uncompressed point (65 bytes) */
	const char *const *statements; /* urn:bc: URIs, at most BC_MAX_URIS - 1 */
	size_t n_statements;
	int64_t not_before_ms; /* the issue time: database time */
	int64_t ttl_ms;        /* 0: 24 hours (2 hours for ramdisk); capped likewise */
};

/* Issues a node certificate under the node CA (the installed set's issuing CA when a
 * set is installed, see bc_pki_node_cas_install): subject CN the node id, EKU
 * clientAuth, URI SANs: the SPIFFE ID first then the statements; a random 128-bit
 * serial (hex, lower case, into serial_hex[33]). The certificate's times are
 * whole seconds: notBefore is not_before_ms - BC_NODE_CERT_BACKDATE_MS (not before
 * 1970) rounded down, and *not_after_ms receives notAfter as the certificate says
 * it (not_before_ms + ttl, rounded down). BC_ERR_INVALID for an invalid node id or role, a key that
 * is not P-256 (or both pub and point given, or neither), a statement that is not urn:bc:
 * (printable, at most 1024 bytes) or more than BC_MAX_URIS - 1 statements. */
BC_WUR int bc_pki_issue_node_cert(const bc_pki *pki, const struct bc_node_cert_req *req,
                                  uint8_t **der, size_t *len, char serial_hex[static 33],
                                  int64_t *not_after_ms);
/* The same under the issuing CA of set (NULL: the bundle's node CA), for a caller that
 * took one set for its whole request and names that CA in its answer. */
struct bc_node_cas;
BC_WUR int bc_pki_issue_node_cert_by(const bc_pki *pki, const struct bc_node_cas *set,
                                     const struct bc_node_cert_req *req, uint8_t **der, size_t *len,
                                     char serial_hex[static 33], int64_t *not_after_ms);

/* What a node certificate says, read from its URI SANs: the one SPIFFE ID (never
 * a statement) gives node id and role; statements are the urn:bc: URIs after it.
 * Refuses (BC_ERR_INVALID) a certificate with no SPIFFE ID, two of them, one in
 * another trust domain, a non-urn:bc: URI after it, or more than BC_MAX_URIS.
 * The SPIFFE ID must be the first URI, its path "/<role>/<node id>" with a valid
 * role and node id; any SAN other than a URI (DNS, IP, email...) is refused.
 * Times are notBefore/notAfter in ms; serial_hex the lower-case hex of the
 * serial's bytes. The DER must be one certificate with nothing after it
 * (BC_ERR_TRAILING). id is zeroed first and left zeroed on error; the caller
 * frees the statements with bc_node_identity_clear(). The signature is not
 * checked here: see bc_pki_verify_node_cert(). */
struct bc_node_identity {
	char node_id[64];
	char role[16];
	char *statements[BC_MAX_URIS];
	size_t n_statements;
	int64_t not_before_ms;
	int64_t not_after_ms;
	char serial_hex[41];
};
/* The one reader of a node certificate's identity (our own form without OpenSSL's
 * X509 decoder, src/pki/node_read.c; anything else through it, with the same answer).
 * point, when not NULL, receives the certificate's key as its uncompressed point
 * (zeroed when the key is not P-256, and on error). */
BC_WUR int bc_pki_node_identity(const uint8_t *der, size_t len, const char *trust_domain,
                                struct bc_node_identity *id, uint8_t *point);
void bc_node_identity_clear(struct bc_node_identity *id);
/* The one check that the node CA signed der (issuer name and key identifier, then
 * the signature; validity times are the caller's to check against database time): any
 * active CA of the installed set, else the bundle's node CA.
 * BC_ERR_VERIFY when it was not. */
BC_WUR int bc_pki_verify_node_cert(const bc_pki *pki, const uint8_t *der, size_t len);
/* The node CA and TLS CA as DER (for JoinResponseBody.trust_bundle) and PEM.
 * bc_x509_from_der refuses input over 64 KiB (BC_ERR_LIMIT) and bytes after
 * the certificate (BC_ERR_TRAILING). */
BC_WUR int bc_x509_to_der(X509 *x, uint8_t **der, size_t *len);
BC_WUR int bc_x509_to_pem(X509 *x, char **pem);
BC_WUR int bc_x509_from_der(const uint8_t *der, size_t len, X509 **out);
/* The first certificate of a PEM text. */
BC_WUR int bc_x509_from_pem(const char *pem, X509 **out);

/* The trust bundle relying parties fetch to verify node certificates (public only).
 * cas: 1..BC_TRUST_MAX_CAS node CA certificates, in the order served.
 * bc_pki_trust_pem: the certificates as concatenated PEM (malloc'd).
 * bc_pki_trust_spiffe: a SPIFFE trust bundle (SPIFFE Trust Domain and Bundle, 4):
 * {"keys":[{"kty":"EC","crv":"P-256","x":..,"y":..,"use":"x509-svid","x5c":[DER
 * in standard base64]}, ...], "spiffe_sequence":sequence,
 * "spiffe_refresh_hint":refresh_hint_s}, compact JSON with sorted keys (malloc'd).
 * BC_ERR_INVALID for no CA, too many, a NULL one, a CA key that is not P-256, a
 * negative sequence or a refresh hint under 1 s.
 * bc_pki_trust_sequence: the newest notBefore among cas in seconds since 1970, so
 * that adding a CA (always made later than those before it) raises it; 0 for an
 * invalid list. */
#define BC_TRUST_MAX_CAS        8
#define BC_TRUST_REFRESH_HINT_S 300
BC_WUR int bc_pki_trust_pem(X509 *const *cas, size_t n, char **pem);
BC_WUR int bc_pki_trust_spiffe(X509 *const *cas, size_t n, int64_t sequence, int64_t refresh_hint_s,
                               char **json);
int64_t bc_pki_trust_sequence(X509 *const *cas, size_t n);
/* The one home of what the trust bundle of pki holds: the node CAs in use (the installed
 * set's prepared and active CAs, with its sequence; else the bundle's CA with
 * bc_pki_trust_sequence), as bc_pki_trust_pem (spiffe 0) or bc_pki_trust_spiffe with
 * BC_TRUST_REFRESH_HINT_S (spiffe 1). */
BC_WUR int bc_pki_trust_bundle(const bc_pki *pki, int spiffe, char **out);

/* The notAfter (ms) of the node CA that issues now (the store's set once installed,
 * else the bundle's): when certificates it signs stop chaining. */
BC_WUR int bc_pki_node_ca_not_after(const bc_pki *pki, int64_t *ms);

/* A server TLS certificate signed by the TLS CA for the given host names and IP
 * addresses (SANs), valid one year; PEM outputs malloc'd (key PKCS#8: wipe it
 * with bc_freezero). An IP literal becomes an iPAddress SAN, anything else a
 * dNSName of [A-Za-z0-9.-]; 1..32 hosts; the first is the subject CN. */
BC_WUR int bc_pki_server_tls_cert(const bc_pki *pki, const char *const *hosts, size_t n,
                                  char **cert_pem, char **key_pem);

/* The server's TLS certificate read back (the first of a PEM chain). ours: 1 when the
 * bundle's server TLS CA issued and signed it and it names hosts (SANs, in order, as
 * bc_pki_server_tls_cert takes them): the server renews such a certificate itself;
 * 0 for one the operator supplied, which is never replaced. Times in ms. BC_ERR_INVALID
 * when cert_pem holds no certificate or an unreadable time. Free with
 * bc_server_tls_clear. bc_server_tls_renew_at: when to renew, two thirds into its life. */
#define BC_SERVER_TLS_MAX_HOSTS 32
struct bc_server_tls {
	int ours;
	int64_t not_before_ms, not_after_ms;
	char *hosts[BC_SERVER_TLS_MAX_HOSTS];
	size_t n_hosts;
};
BC_WUR int bc_pki_server_tls_read(const bc_pki *pki, const char *cert_pem,
                                  struct bc_server_tls *info);
int64_t bc_server_tls_renew_at(const struct bc_server_tls *info);
void bc_server_tls_clear(struct bc_server_tls *info);

/* The node CAs of the store, one generation each (docs/server.md, "PKI lifecycle").
 * A prepared CA is published in the trust bundle and signs nothing; active CAs verify,
 * and the one activated last issues every new node certificate; a retired CA verifies
 * nothing, and a leaf it issued is refused even when stored (see
 * bc_pki_node_ca_retired). A set is immutable once installed and shared by
 * reference: bc_pki_node_cas_get gives the current one, bc_node_cas_put lets it go. */
#define BC_NODE_CAS_MAX BC_TRUST_MAX_CAS
enum bc_ca_state { BC_CA_PREPARED = 1, BC_CA_ACTIVE, BC_CA_RETIRED };
struct bc_node_ca {
	int64_t id; /* the generation: pki_keys.id */
	enum bc_ca_state state;
	X509 *cert;
	EVP_PKEY *key; /* NULL for a retired CA */
	int64_t created_ms, activated_ms, retired_ms;
	uint8_t *der; /* cert as DER (bc_node_cas_finish) */
	size_t der_len;
};
#define BC_JOIN_SET_MAX 16 /* join keys in a set, retired ones included */
struct bc_node_cas {
	int64_t sequence; /* spiffe_sequence */
	size_t n;
	struct bc_node_ca ca[BC_NODE_CAS_MAX];
	size_t issuing; /* index of the active CA activated last (bc_node_cas_finish) */
	/* the join keys read with the CAs (none in a set made for the CAs alone) */
	struct bc_join_key join[BC_JOIN_SET_MAX];
	size_t n_join;
	size_t join_current[3]; /* by use (1, 2): the active key activated last */
	int refs;
};
/* A new empty set (refs 1). bc_node_cas_add takes cert and key (key may be NULL for
 * a retired CA); bc_node_cas_finish checks the set and fills der and issuing:
 * BC_ERR_INVALID when no CA is active, a CA is not P-256, or a non-retired CA's key does
 * not match its certificate; BC_ERR_LIMIT over BC_NODE_CAS_MAX. */
BC_WUR int bc_node_cas_new(int64_t sequence, struct bc_node_cas **out);
BC_WUR int bc_node_cas_add(struct bc_node_cas *cas, const struct bc_node_ca *ca);
BC_WUR int bc_node_cas_finish(struct bc_node_cas *cas);
void bc_node_cas_put(struct bc_node_cas *cas);
/* The join keys of a set (src/pki/join_keys.c). bc_node_cas_add_join takes k->key (also
 * on error; BC_ERR_LIMIT over BC_JOIN_SET_MAX). bc_node_cas_finish (through
 * bc_node_cas_finish_join) fills kid and point and picks the current key of each use:
 * BC_ERR_INVALID for a key that is not P-256, one listed twice, a key not retired
 * without its private part, or join keys without an active one of each use.
 * bc_node_cas_join_current: the active key of use activated last (it signs every
 * answer; new tokens are sealed to it), NULL when the set holds no join key.
 * bc_node_cas_join_openers: the keys a sealed token is tried with, the current
 * encryption key first, then the other active and next ones (never a retired one).
 * bc_node_cas_join_announced: what a pins-update statement names: the current key of
 * each use (active), the next ones, then the keys retired last as many as fit (an
 * older active key is left out: agents keep it until it is announced retired). */
BC_WUR int bc_node_cas_add_join(struct bc_node_cas *cas, const struct bc_join_key *k);
BC_WUR int bc_node_cas_finish_join(struct bc_node_cas *cas);
const struct bc_join_key *bc_node_cas_join_current(const struct bc_node_cas *cas,
                                                   enum bc_join_key_use use);
size_t bc_node_cas_join_openers(const struct bc_node_cas *cas,
                                const struct bc_join_key *out[static BC_JOIN_SET_MAX]);
size_t bc_node_cas_join_announced(const struct bc_node_cas *cas,
                                  const struct bc_join_key *out[static BC_JOIN_KEYS_MAX]);
/* The current join key of use (a reference the caller frees) and its key id: the
 * installed set's (bc_node_cas_join_current) when it holds join keys, else the
 * bundle's. What `daemon config` gives: tokens are sealed to this encryption key. */
BC_WUR int bc_pki_join_current(const bc_pki *pki, enum bc_join_key_use use, EVP_PKEY **key,
                               char kid[static 65]);
/* The set of the bundle alone (sequence 0): its node CA and its join pair, active; what
 * a server uses before it read the store's, and a test without a store. */
BC_WUR int bc_pki_bundle_set(const bc_pki *pki, struct bc_node_cas **out);
/* Installs cas (its reference passes to pki) in place of the set before, which its
 * holders keep until they put it. */
void bc_pki_node_cas_install(const bc_pki *pki, struct bc_node_cas *cas);
/* The current set with a reference the caller puts, or NULL when none is installed. */
struct bc_node_cas *bc_pki_node_cas_get(const bc_pki *pki);
/* 1 when der names as its issuer (name and key identifier) a CA of the installed set
 * that is retired, else 0 (no signature checked: for leaves already known to be ours
 * by their stored row). */
int bc_pki_node_ca_retired(const bc_pki *pki, const uint8_t *der, size_t len);
/* A new node CA for pki's trust domain, valid ten years from now_ms (a day early),
 * its CN naming the time it was made. */
BC_WUR int bc_pki_new_node_ca(const bc_pki *pki, int64_t now_ms, X509 **cert, EVP_PKEY **key);
/* One private key sealed under the server secret as bc_pki_seal seals the bundle (the
 * same envelope, its own HKDF info), and opened: bc_pki_open_key returns BC_ERR_VERIFY
 * for a wrong secret or altered text. */
BC_WUR int bc_pki_seal_key(EVP_PKEY *key, const uint8_t secret[static 32], char **text);
BC_WUR int bc_pki_open_key(const char *text, const uint8_t secret[static 32], EVP_PKEY **key);

#endif
