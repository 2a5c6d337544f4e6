/* The attestor interface: what JoinService asks of each kind of evidence.
 *
 * An attestor works in two phases:
 *   - check() runs before the join's transaction begins and may not touch the store:
 *     decoding, signatures, certificate chains, JWS, quotes. It may refuse, and may
 *     hand what it learned to verify() through *state.
 *   - verify() runs inside the write transaction: it may read and write rows (lock a
 *     token, record a single use, insert a join request) and fills exactly one outcome.
 * Outcomes:
 *   - a result: where the machine joins (tenant, pool, site, or a known node);
 *   - a deferral (verify only): ask again later (approval) or answer a challenge;
 *     JoinService then commits the attestor's rows, issues nothing and answers a
 *     signed JoinPending or JoinChallenge; the agent comes back with the same CSR;
 *   - a refusal: a reason (a short kebab-case string with static lifetime, see
 *     bc/reasons.h). The machine only ever sees permission_denied; the reason goes to
 *     the security.join.refused event, the log and on_refusal.
 * check() returns 0, having refused (out->kind BC_OUTCOME_REFUSE) or not (kind left
 * BC_OUTCOME_NONE); verify() returns 0 when it filled an outcome. Either returns a
 * negative BC_ERR_* when it could not decide (out of memory, the database failed);
 * that is never a refusal. BC_ERR_RETRY / BC_ERR_BUSY from verify() replay the
 * transaction: verify() then runs again on the same in->check_state with a fresh
 * outcome, so verify() must not consume the state. release() frees it, once, after
 * the join is answered; it is called whenever check() left a state, also when it
 * refused.
 *
 * check() sees the process clock in in->now_ms; verify() sees database time. Time
 * windows that single use depends on belong in verify().
 *
 * Plugins: a shared object named in server.toml exports
 *   const struct bc_attestor *bc_attestor_plugin(void);
 * returning an attestor with abi = BC_ATTESTOR_ABI. One whose id is "join-token"
 * replaces the built-in. A plugin built for ABI 1 (no check, verify without state)
 * still loads: its struct is this one's prefix, and it runs without check(). */
#ifndef BC_ATTESTOR_H
#define BC_ATTESTOR_H

#include <stddef.h>
#include <stdint.h>

#include "bc/key_attestation.h"
#include "bc/store.h"
#include "bc/toml.h"

#define BC_ATTESTOR_ABI 2
#define BC_ID_MAX       64
#define BC_HWKEY_MAX    160
#define BC_REASON_MAX   64
/* allowed command kinds: at most BC_ALLOWED_KINDS_MAX of at most BC_ALLOWED_KIND_LEN
 * characters each; the JSON array of them fits BC_ALLOWED_KINDS_JSON_MAX with its NUL */
#define BC_ALLOWED_KINDS_MAX      32
#define BC_ALLOWED_KIND_LEN       64
#define BC_ALLOWED_KINDS_JSON_MAX (2 + BC_ALLOWED_KINDS_MAX * (BC_ALLOWED_KIND_LEN + 3) + 1)

struct bc_claims {
	const char *const *macs;
	size_t n_macs;
	const char *product_uuid; /* "" when absent */
	const char *serial;
	const char *hostname;
	const char *arch;
};

/* What JoinService hands an attestor. All pointers are owned by JoinService and live
 * for the call. */
struct bc_join_input {
	const char *attestor; /* never empty: "" on the wire is "join-token" */
	const uint8_t *attestation;
	size_t attestation_len;
	const uint8_t *csr; /* DER, already checked: P-256, self-signed */
	size_t csr_len;
	uint8_t csr_sha256[32];
	uint8_t csr_spki_sha256[32]; /* SHA-256 of the CSR key's SubjectPublicKeyInfo */
	const char *role;            /* node, site or ramdisk */
	struct bc_claims claims;
	const char *token; /* the opened sealed token, NULL when none */
	const char *agent_version;
	int64_t now_ms;               /* database time of this transaction */
	const char *trust_domain;     /* the control plane's SPIFFE trust domain */
	const uint8_t *challenge_key; /* 32 bytes shared by every replica (the PKI
	                                 bundle's): seals challenge state */
	uint64_t request_nonce;       /* random, one per request: the same when the
	                                 transaction is replayed (BUSY/RETRY), so an
	                                 attestor's memory can tell a replay of its own
	                                 transaction from another request */
	void *check_state;            /* ABI 2: what the attestor's check() left for
	                                 verify(), or NULL */
	/* the node CAs (bc/pki.h), for a built-in that checks a node certificate;
	   appended: a plugin of ABI 2 reads the members before it */
	const struct bc_pki *node_pki;
};

struct bc_attest_result {
	char tenant_id[BC_ID_MAX];
	char pool_id[BC_ID_MAX];         /* "" for none */
	char site_id[BC_ID_MAX];         /* "" for none */
	char node_id[BC_ID_MAX];         /* a known node: JoinService reclaims it in place */
	char token_id[BC_ID_MAX];        /* the token spent: JoinService enforces its
	                                    expect binding and allowReclaim */
	char role[16];                   /* the certificate's role; "" = the request's */
	char hardware_key[BC_HWKEY_MAX]; /* a trusted hardware key; "" = derive from
	                                    claims (token attestors) */
	char binding_kind[32];           /* node_bindings row to write, when set */
	char binding_key[BC_HWKEY_MAX];
	int node_key_tpm;       /* 1: the CSR key is proven TPM-held */
	char node_key_uri[160]; /* a urn:bc: statement for the certificate */
	int64_t cert_ttl_ms;    /* 0: the role's default */
};

enum bc_deferral_kind { BC_DEFER_APPROVAL = 1, BC_DEFER_CHALLENGE = 2 };

struct bc_attest_deferral {
	enum bc_deferral_kind kind;
	char request_id[BC_ID_MAX];   /* approval */
	uint32_t retry_after_seconds; /* approval: 0 = 30 */
	uint8_t *challenge;           /* challenge: malloc'd, JoinService frees */
	size_t challenge_len;
	int64_t not_after_ms;
};

enum bc_outcome_kind {
	BC_OUTCOME_NONE = 0,
	BC_OUTCOME_RESULT,
	BC_OUTCOME_DEFER,
	BC_OUTCOME_REFUSE
};

struct bc_attest_outcome {
	enum bc_outcome_kind kind;
	struct bc_attest_result result;
	struct bc_attest_deferral deferral;
	const char *reason; /* refusal: static string */
	/* known ids for the refusal event, when the attestor learned them */
	char tenant_id[BC_ID_MAX];
	char token_id[BC_ID_MAX];
	char node_id[BC_ID_MAX];
	/* Appended after ABI 2's members, so an older plugin's layout is a prefix of this
	 * one. A result: the command kinds the node may run, as a JSON array of strings
	 * (lower-case dotted words, an optional trailing ".*"), NUL-terminated. JoinService
	 * zeroes the outcome before every verify(): "" (an older plugin's, or one that
	 * sets none) is stored as []. A reclaim replaces the node's kinds with these. */
	char allowed_kinds_json[BC_ALLOWED_KINDS_JSON_MAX];
};

struct bc_attestor {
	uint32_t abi;             /* BC_ATTESTOR_ABI */
	const char *id;           /* "join-token", "x509pop", ... */
	const char *const *roles; /* roles it admits */
	size_t n_roles;
	void *ctx; /* the attestor's own state */
	/* Optional: read the attestor's [attestors.<id>] table of server.toml (table is
	 * that dotted name; cfg may have no such table). err names the key at fault. */
	int (*configure)(struct bc_attestor *self, const bc_toml *cfg, const char *table, char *err,
	                 size_t errlen);
	/* Required: inside the transaction. in->check_state is what check() left. */
	int (*verify)(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
	              struct bc_attest_outcome *out);
	void (*destroy)(struct bc_attestor *self); /* optional */
	/* ABI 2 (ABI 1 ends here). Optional: the checks that need no store. *state may be
	 * set to what verify() should see as in->check_state. */
	int (*check)(struct bc_attestor *self, const struct bc_join_input *in,
	             struct bc_attest_outcome *out, void **state);
	/* Optional: frees check()'s state. */
	void (*release)(struct bc_attestor *self, void *state);
};

/* The size of an ABI 1 attestor: the members up to destroy. */
#define BC_ATTESTOR_V1_SIZE (offsetof(struct bc_attestor, destroy) + sizeof(void (*)(void)))

/* What Renew hands a statement verifier: the leaf's statement and the next key. */
struct bc_statement_input {
	const char *statement;               /* the urn:bc: statement, as in the leaf */
	const struct bc_key_attestation *ka; /* NULL when the request carries none */
	uint8_t csr_sha256[32];
	uint8_t csr_spki_sha256[32];
};

/* A statement a certificate carries (urn:bc:tpm-ak:...) is proven again at every
 * renewal by the verifier registered for its prefix. verify() returns 0 and sets
 * *reason to NULL when proven, or to a refusal reason; a negative BC_ERR_* when the
 * check could not run. A statement no verifier claims is key-statement-unknown (or
 * key-statement-unsupported for a scheme bc/wire.h names that this service does not
 * prove), and a join whose result carries one is refused (join:node-key-statement). */
struct bc_statement_verifier {
	const char *prefix; /* matched against the statement's start */
	void *ctx;
	int (*verify)(void *ctx, const struct bc_statement_input *in, const char **reason);
};

typedef const struct bc_attestor *(*bc_attestor_plugin_fn)(void);

/* Helpers for attestors, filling an outcome. */
static inline void bc_refuse(struct bc_attest_outcome *out, const char *reason)
{
	out->kind = BC_OUTCOME_REFUSE;
	out->reason = reason;
}

#endif
