/* The attestor interface: what JoinService asks of each kind of evidence.
 *
 * An attestor runs inside JoinService's join transaction. It reads the request's
 * evidence, may read and write rows through the transaction (lock a token, record a
 * single use, insert a join request), and fills exactly one outcome:
 *   - a result: where the machine joins (tenant, pool, site, or a known node);
 *   - a deferral: ask again later (approval) or answer a challenge; JoinService then
 *     commits the attestor's rows, issues nothing and answers a signed JoinPending or
 *     JoinChallenge; the agent comes back with the same CSR;
 *   - a refusal: a reason (a short kebab-case string with static lifetime). The machine
 *     only ever sees permission_denied; the reason goes to the security.join.refused
 *     event, the log and on_refusal.
 * verify() returns 0 when it filled an outcome, or a negative BC_ERR_* when it could
 * not decide (the database failed); BC_ERR_RETRY / BC_ERR_BUSY replay the transaction.
 *
 * Plugins: a shared object named in server.toml exports
 *   const struct bc_attestor *bc_attestor_plugin(void);
 * returning an attestor with abi = BC_ATTESTOR_ABI. One whose id is "join-token"
 * replaces the built-in. */
#ifndef BC_ATTESTOR_H
#define BC_ATTESTOR_H

#include <stddef.h>
#include <stdint.h>

#include "bc/store.h"
#include "bc/toml.h"

#define BC_ATTESTOR_ABI 1
#define BC_ID_MAX       64
#define BC_HWKEY_MAX    160
#define BC_REASON_MAX   64

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
	int (*verify)(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
	              struct bc_attest_outcome *out);
	void (*destroy)(struct bc_attestor *self); /* optional */
};

typedef const struct bc_attestor *(*bc_attestor_plugin_fn)(void);

/* Helpers for attestors, filling an outcome. */
static inline void bc_refuse(struct bc_attest_outcome *out, const char *reason)
{
	out->kind = BC_OUTCOME_REFUSE;
	out->reason = reason;
}

#endif
