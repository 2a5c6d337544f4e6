/* The agent's side of JoinService: make a key and CSR, seal a token, call Join over
 * HTTP (bc/httpc.h), and verify the signed answer before trusting anything in it.
 * Used by the test client now and by bcd.
 *
 * Trust comes from what the agent pinned (better-compute daemon config): the server
 * URL, the join signing key (its key id AND its public key), the join encryption key
 * (to seal tokens) and a CA bundle (the server's TLS CA and the node CA). */
#ifndef BC_CLIENT_H
#define BC_CLIENT_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/crypto.h"
#include "bc/err.h"
#include "bc/key_attestation.h"
#include "bc/pki.h"

/* One pinned join key. state is BC_JOIN_KEY_ACTIVE or _NEXT as the latest statement
 * said, or BC_CLIENT_PIN_KEPT: pinned before, not in the latest statement (kept until a
 * statement marks it retired). A retired key is never pinned. */
#define BC_CLIENT_PIN_KEPT 4
struct bc_client_pin {
	enum bc_join_key_use use;
	int state;
	char kid[BC_KEY_ID_LEN + 1];
	uint8_t point[65];
	EVP_PKEY *key;
};

struct bc_client_pins {
	char *server_url;               /* https://host:port, or http:// on a loopback address */
	char *join_signing_kid;         /* hex SHA-256 of the join signing key's SPKI */
	EVP_PKEY *join_signing;         /* its public key */
	uint8_t join_signing_point[65]; /* and its point, what answers are verified under */
	EVP_PKEY *join_encryption;      /* the join encryption public key */
	char *ca_bundle_pem;            /* PEM: TLS CA then node CA */
	char *trust_domain;
	/* every pinned join key, the active pair above included: answers verify under any
	 * signing key here; tokens are sealed to the active encryption key only */
	struct bc_client_pin keys[BC_JOIN_KEYS_MAX];
	size_t n_keys;
	int64_t sequence; /* of the last pins-update applied; 0: the config's pins */
};

/* The pins from the JSON that `better-compute daemon config --json` prints:
 * {"server":..,"joinSigningKeyId":..,"joinSigningKey":PEM,"joinEncryptionKey":PEM,
 *  "caBundle":PEM,"trustDomain":..}. The key id must be the signing key's own.
 * err names the field at fault. */
BC_WUR int bc_client_pins_from_json(const char *json, size_t len, struct bc_client_pins *out,
                                    char *err, size_t errlen);
void bc_client_pins_free(struct bc_client_pins *p);
/* Points pins at another server URL (bcd ramdisk's bc.server=) by the same rule the pins'
 * "server" is read with: https (with the pins' CA bundle), or http only to a loopback
 * address; scheme, host, port and a plain path only. The URL kept is its normal form.
 * 0, or BC_ERR_CONFIG with err "pins: server: <why>" and the pins unchanged. */
BC_WUR int bc_client_pins_set_server(struct bc_client_pins *p, const char *url, char *err,
                                     size_t errlen);

/* ---- join key rotation: the pins-update statement (pins_update.c) ----
 * Every JoinService answer may carry one (JoinResponseBody.pins_update): a
 * SignedResponse whose body is a PinsUpdate, purpose pins-update, by a join signing
 * key the agent pins. Refusal reasons, set in *reason: */
/* not a SignedResponse holding a PinsUpdate as described in join.proto: a key of an
 * unknown use or state, a key id not its key's, a key listed twice, no active key or
 * two of one use, more than BC_JOIN_KEYS_MAX keys, a sequence under 1 */
#define BC_PINS_R_MALFORMED "pins-update-malformed"
/* signed by a key id the agent does not pin (or over 64 characters) */
#define BC_PINS_R_SIGNER "pins-update-signer"
/* the signature does not verify under the pinned key with purpose pins-update (another
 * purpose's signature, another body) */
#define BC_PINS_R_SIGNATURE "pins-update-signature"
/* its sequence is below the pins' (a statement older than one applied) */
#define BC_PINS_R_OLDER "pins-update-older"
/* it names another trust domain than the pinned one */
#define BC_PINS_R_TRUST_DOMAIN "pins-update-trust-domain"

struct bc_pins_update {
	int64_t sequence;
	int64_t issued_at_ms;
	char signer_kid[BC_KEY_ID_LEN + 1];
	struct bc_client_pin keys[BC_JOIN_KEYS_MAX]; /* as listed, retired ones included */
	size_t n_keys;
};
void bc_pins_update_free(struct bc_pins_update *u);
/* Verifies and decodes a statement against pins: 0 with *out filled (free with
 * bc_pins_update_free); else BC_ERR_VERIFY (signer, signature, older, trust domain) or
 * BC_ERR_INVALID (malformed, or over BC_CLIENT_MAX_RESPONSE) with *reason one of the
 * BC_PINS_R_* above and err one line; BC_ERR_NOMEM. A statement of the pins' own
 * sequence is accepted (applying it changes nothing). */
BC_WUR int bc_client_pins_update_open(const struct bc_client_pins *pins, const uint8_t *stmt,
                                      size_t len, struct bc_pins_update *out, const char **reason,
                                      char *err, size_t errlen);
/* Applies an opened statement: the pins become its active and next keys, plus every
 * earlier pin it does not name (state BC_CLIENT_PIN_KEPT); a key it marks retired is
 * unpinned; join_signing, join_signing_kid and join_encryption become its active keys.
 * *changed is 1 when the sequence rose (0: the same statement again, nothing done).
 * BC_ERR_NOMEM leaves pins unchanged. */
BC_WUR int bc_client_pins_apply(struct bc_client_pins *pins, const struct bc_pins_update *u,
                                int *changed);
/* The pin set as JSON for bcd's pins file: {"base":base,"sequence":N,"keys":[{"use":..,
 * "state":"active"|"next"|"kept","keyId":..,"key":base64 SPKI DER}]} (malloc'd). base
 * names what the set grew from (bcd: the config's join_signing_key_id). */
BC_WUR int bc_client_pins_set_to_json(const struct bc_client_pins *pins, const char *base,
                                      char **json);
/* Replaces the pins' key set by such JSON (what bcd wrote after a statement) when its
 * base is base; another base (the config was written again since) leaves the pins as
 * they are with *stale 1. Checked like a statement's keys: known use and state, key ids
 * their keys', one active key of each use, at most BC_JOIN_KEYS_MAX, sequence at least
 * 1; BC_ERR_CONFIG with err naming what is wrong, pins unchanged. */
BC_WUR int bc_client_pins_set_from_json(struct bc_client_pins *pins, const char *json, size_t len,
                                        const char *base, int *stale, char *err, size_t errlen);
/* The state's name as bcd doctor shows it: "active", "next", "kept". */
const char *bc_client_pin_state_name(int state);

/* ---- the built-in attestors, as a joining machine uses them (attestors.c) ---- */

/* What a joining machine does with an attestor (flags of a row). */
#define BC_CA_JOIN       0x01u  /* bcd join --attestor takes it */
#define BC_CA_INSTALL    0x02u  /* an install script's first join may use it */
#define BC_CA_TOKEN      0x04u  /* its credential is the sealed join token */
#define BC_CA_TOKEN_FILE 0x08u  /* the token comes from --token-file or BCD_JOIN_TOKEN */
#define BC_CA_SITE       0x10u  /* a site machine joins with it (--role site) */
#define BC_CA_KEY_IN_TPM 0x20u  /* the node key is made in the TPM, never in a file */
#define BC_CA_REJOIN     0x40u  /* it re-joins with the identity already there */
#define BC_CA_PROVIDER   0x80u  /* it takes --provider (a cloud) */
#define BC_CA_RAMDISK    0x100u /* bcd ramdisk joins with it, never bcd join */

struct bc_client_attestor {
	const char *id;       /* a BC_WIRE_ATTESTOR_* */
	unsigned flags;       /* BC_CA_* */
	const char *no_token; /* why it takes no token file (NULL for one that takes one) */
};
/* The row of id, or NULL for an id no built-in attestor has. */
const struct bc_client_attestor *bc_client_attestor(const char *id);
/* The i-th row (0 ..), NULL past the last: for a walk over the table. */
const struct bc_client_attestor *bc_client_attestor_at(size_t i);
/* "join-token, tpm, ...": the ids of the rows that have every flag of flags, in the
 * table's order, into buf (truncated to len); returns buf. */
const char *bc_client_attestor_names(unsigned flags, char *buf, size_t len);

/* "bettercompute join token v1"; aad = sha256(csr); out = enc || ct (malloc'd). */
BC_WUR int bc_client_seal_token(EVP_PKEY *join_encryption, const char *token,
                                const uint8_t csr_sha256[static 32], uint8_t **out, size_t *outlen);

struct bc_client_claims {
	char **macs;
	size_t n_macs;
	char *product_uuid;
	char *serial;
	char *hostname;
	char *arch;
};

struct bc_join_params {
	const char *attestor;       /* NULL or "" = join-token */
	const char *role;           /* "node" (default) or "site" / "ramdisk" */
	const char *token;          /* sealed to the pins' encryption key; NULL for none */
	const uint8_t *attestation; /* attestor evidence, may be NULL */
	size_t attestation_len;
	const struct bc_client_claims *claims;
	EVP_PKEY *key;      /* the node key: the CSR is made from it */
	const uint8_t *csr; /* or a CSR already made (same CSR on every round) */
	size_t csr_len;
	const char *agent_version;
};

enum bc_join_state { BC_JOIN_JOINED = 1, BC_JOIN_PENDING = 2, BC_JOIN_CHALLENGE = 3 };

struct bc_join_answer {
	enum bc_join_state state;
	char node_id[64];
	uint8_t **chain; /* DER, leaf first */
	size_t *chain_lens;
	size_t n_chain;
	uint8_t **trust_bundle;
	size_t *trust_bundle_lens;
	size_t n_trust_bundle;
	char trust_domain[256];
	int64_t issued_at_ms;
	char request_id[64]; /* pending */
	uint32_t retry_after_seconds;
	char challenge_attestor[64]; /* challenge */
	uint8_t *challenge;
	size_t challenge_len;
	int64_t challenge_not_after_ms;
	/* the answer's pins-update statement as it came (inside the verified answer, but
	 * opened on its own with bc_client_pins_update_open), or NULL */
	uint8_t *pins_update;
	size_t pins_update_len;
};
void bc_join_answer_free(struct bc_join_answer *a);

/* One Join round trip. Returns 0 with the verified answer; BC_ERR_DENIED when the
 * server refused (permission_denied); BC_ERR_VERIFY when the answer's signature, key
 * id or csr_sha256 is not what was pinned and sent (nothing in it is used);
 * BC_ERR_UNAVAILABLE when the server could not be reached; err says what happened
 * in one line. */
BC_WUR int bc_client_join(const struct bc_client_pins *pins, const struct bc_join_params *p,
                          struct bc_join_answer *out, char *err, size_t errlen);

/* Verifies a serialized SignedResponse against the pins and the CSR's SHA-256 and
 * decodes the JoinResponseBody (exposed for tests and fuzzing). */
BC_WUR int bc_client_open_join_response(const struct bc_client_pins *pins, const uint8_t *resp,
                                        size_t len, const uint8_t csr_sha256[static 32],
                                        struct bc_join_answer *out, char *err, size_t errlen);

/* Added: the function above has only the CSR's hash, so it cannot check that a
 * JOINED answer's leaf certificate is for the CSR's key. This one takes the CSR
 * itself (DER, checked with bc_csr_check; its SHA-256 is the binding) and also
 * refuses (BC_ERR_VERIFY) a leaf whose SubjectPublicKeyInfo is not the CSR's.
 * bc_client_join uses it; anything that keeps a JOINED answer must use it too. */
BC_WUR int bc_client_open_join_response_csr(const struct bc_client_pins *pins, const uint8_t *resp,
                                            size_t len, const uint8_t *csr, size_t csr_len,
                                            struct bc_join_answer *out, char *err, size_t errlen);

/* The largest answer the client reads from the server, whatever its status. */
#define BC_CLIENT_MAX_RESPONSE (1024u * 1024u)

/* An HTTP answer: its status and body (malloc'd, free(); at most
 * BC_CLIENT_MAX_RESPONSE bytes), and its Retry-After in seconds (0: none). */
struct bc_client_reply {
	long status;
	uint8_t *body;
	size_t len;
	unsigned retry_after_s;
};

/* POST body to url + path with Content-Type: application/proto; out receives the
 * answer (zeroed first; body NULL on failure). TLS verified against
 * pins->ca_bundle_pem. */
BC_WUR int bc_client_post(const struct bc_client_pins *pins, const char *path, const void *body,
                          size_t len, struct bc_client_reply *out, char *err, size_t errlen);

/* The Retry-After (in seconds, at most 3600) of the last answer this thread had from
 * bc_client_post, and so from bc_client_join, bc_client_renew and the site calls: 0
 * when it had none (or no answer). A caller that failed with BC_ERR_UNAVAILABLE waits
 * at least this long before it tries again. */
unsigned bc_client_retry_after_s(void);
/* The wait that Retry-After asks for, as every agent takes it: drawn from [1, 5/4) of
 * it, so that the agents a server told the same come back spread; 0 when there was
 * none. */
int64_t bc_client_retry_after_wait_ms(void);

/* A renewal: the current chain and key, and the CSR of the key the new certificate is
 * for (made by the caller: bc_csr_make for a key in memory, bcd_nodekey_csr for one in
 * a TPM). */
struct bc_renew_params {
	const uint8_t *const *chain; /* the node's current chain (DER, leaf first, 1 to 8) */
	const size_t *chain_lens;
	size_t n_chain;
	/* the current key (bc_signer_init), in memory or held elsewhere: it must be the
	 * leaf's; it makes the proof, checked under its point before it is sent */
	const struct bc_signer *signer;
	const uint8_t *csr; /* DER, must pass bc_csr_check */
	size_t csr_len;
	const struct bc_key_attestation *ka; /* NULL: none */
};

/* One Renew round trip (JoinService/Renew) for p. The request carries p->csr and a
 * proof by p->signer (purpose renew over sha256(csr) || node id 0x00 ||
 * client_time_ms, 8-byte big-endian, bc_now_ms()); with p->ka, the key attestation
 * goes along (a field missing, empty or over BC_KA_FIELD_MAX is BC_ERR_INVALID before
 * anything is sent). A signer that is not the leaf's key, or a CSR that does not
 * check, is BC_ERR_INVALID. The answer is opened like a join's
 * (bc_client_open_join_response_csr) and must be JOINED for the node the current leaf
 * names (BC_ERR_VERIFY otherwise). Returns as bc_client_join: BC_ERR_DENIED when
 * refused (the reason is only in the server's security.renew.refused event),
 * BC_ERR_UNAVAILABLE when unreachable. out is freed with bc_join_answer_free; nothing
 * is kept on failure. pins->trust_domain is needed. */
BC_WUR int bc_client_renew(const struct bc_client_pins *pins, const struct bc_renew_params *p,
                           struct bc_join_answer *out, char *err, size_t errlen);

/* Asks whether p->chain's leaf is still current (RenewRequest.check_only): the proof as
 * bc_client_renew's, p->csr a CSR for the leaf's own key (DER), p->ka unused,
 * nothing issued. 0 when the server answered the same leaf, signed; BC_ERR_DENIED when
 * it refused (revoked, superseded, another identity generation, the node retired,
 * expired, or the client's time out of the window: the reason is only in the server's
 * security.renew.refused event); BC_ERR_VERIFY for an answer that is not for this
 * leaf; BC_ERR_UNAVAILABLE when unreachable. err says what happened. */
BC_WUR int bc_client_renew_check(const struct bc_client_pins *pins, const struct bc_renew_params *p,
                                 char *err, size_t errlen);
/* bc_client_renew_check that also hands back the answer's pins-update statement as it
 * came (malloc'd, to open with bc_client_pins_update_open; NULL, 0 when it had none or
 * on failure): how bcd doctor sees whether a pins update is pending. */
BC_WUR int bc_client_renew_check_pins(const struct bc_client_pins *pins,
                                      const struct bc_renew_params *p, uint8_t **pins_update,
                                      size_t *pins_update_len, char *err, size_t errlen);

/* Fills *q (zeroed first) with what every request to the control plane shares: url,
 * the pinned CA bundle alone (never the system store), the proxy of the environment for
 * https only (plain http is loopback only), the client's connect and total timeouts. The
 * caller sets the method, headers, body and bound; q points into pins and url. */
struct bc_httpc_req;
void bc_client_httpc_req(const struct bc_client_pins *pins, const char *url,
                         struct bc_httpc_req *q);

/* ---- a site node's calls: SiteService and JoinService/FetchSecret ---- */

/* Who calls: a site node's current chain (DER, leaf first, 1 to 8) and its key, held
 * wherever (a signer made by bc_signer_init: the leaf's key), and the site it serves. */
struct bc_site_caller {
	const uint8_t *const *chain;
	const size_t *chain_lens;
	size_t n_chain;
	const struct bc_signer *signer;
	const char *site_id;
};

enum bc_lease_call { BC_LEASE_ACQUIRE = 1, BC_LEASE_RENEW, BC_LEASE_RELEASE };

/* A verified LeaseBody of the caller's site. */
struct bc_lease_answer {
	char holder[64]; /* "" when nobody holds it */
	uint64_t epoch;
	int64_t expires_at_ms; /* database time */
	int held;              /* the caller holds it after the call */
	int64_t issued_at_ms;  /* database time of the answer */
};

/* AcquireLease (epoch 0), RenewLease or ReleaseLease of site::boot, ttl_seconds asked
 * (0: the server's default). The answer's signature (purpose site-response) and site
 * are checked before anything in it is used. Returns as bc_client_join. */
BC_WUR int bc_client_lease(const struct bc_client_pins *pins, const struct bc_site_caller *c,
                           enum bc_lease_call call, uint64_t epoch, uint32_t ttl_seconds,
                           struct bc_lease_answer *out, char *err, size_t errlen);

struct bc_boot_entry {
	char mac[18];
	char workflow_id[64];
	char product_uuid[37]; /* "" when none */
	char node_id[64];      /* "" when none */
	int64_t not_after_ms;
};

/* ListBootEntries for the holder of epoch: *entries malloc'd (free()), *n of them (at
 * most 1024), *issued_at_ms the answer's database time. */
BC_WUR int bc_client_boot_entries(const struct bc_client_pins *pins, const struct bc_site_caller *c,
                                  uint64_t epoch, struct bc_boot_entry **entries, size_t *n,
                                  int64_t *issued_at_ms, char *err, size_t errlen);

/* FetchSecret(kind discovery-token) for mac and workflow_id ("" for a MAC no workflow
 * names): *token the discovery token as minted (malloc'd; wipe and free it),
 * *not_after_ms its end. The answer is verified under secret-response. */
BC_WUR int bc_client_fetch_secret(const struct bc_client_pins *pins, const struct bc_site_caller *c,
                                  const char *workflow_id, const char *mac, char **token,
                                  int64_t *not_after_ms, char *err, size_t errlen);

/* What a boot server vouches for (site.proto DiscoveryAssertion). */
struct bc_discovery_fields {
	const char *site_id;
	const char *signer_node_id;
	uint64_t lease_epoch;
	const char *mac;
	const char *ip;           /* "" or NULL for none */
	const char *product_uuid; /* "" or NULL */
	const char *workflow_id;  /* "" or NULL */
	int64_t issued_at_ms;
	int64_t not_after_ms;
};

/* A serialized SignedDiscoveryAssertion of f, signed by s (bc_signer_init) under
 * discovery-assertion; key_id is s's key's. *out malloc'd. */
BC_WUR int bc_client_sign_assertion(const struct bc_discovery_fields *f, const struct bc_signer *s,
                                    uint8_t **out, size_t *len);

#endif
