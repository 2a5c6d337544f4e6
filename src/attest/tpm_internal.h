/* The tpm attestor's pieces: its configuration ([attestors.tpm], tpm_config.c),
 * where a proven EK joins (binding, resolve, enrollment: tpm_place.c), the PCR
 * policy (tpm_pcr.c) and the two rounds (tpm.c). */
#ifndef BC_ATTEST_TPM_INTERNAL_H
#define BC_ATTEST_TPM_INTERNAL_H

#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/attestor.h"
#include "tpm/tpm.h"

#define TPM_BINDING_KIND         "tpm-ek"
#define TPM_CHALLENGE_TTL_MAX_MS (5 * 60 * 1000)
#define TPM_PCR_MAX              24

/* One resolve entry: an EK (hex sha256 of its public area) or an EK certificate
 * (issuer as RFC 2253 text, serial as lower-case hex without leading zeros). */
struct tpm_place_entry {
	char ek_sha256[65]; /* "" for a certificate entry */
	char *issuer;       /* NULL for an EK entry */
	char serial[80];
	char tenant[BC_ID_MAX];
	char pool[BC_ID_MAX];
	char site[BC_ID_MAX];
	char node[BC_ID_MAX];
};

struct tpm_pcr_allowed {
	size_t n; /* 0: this PCR is not constrained */
	uint8_t (*digests)[64];
};

struct tpm_cfg {
	X509 **roots;
	size_t n_roots;
	int allow_uncertified;
	uint16_t pcr_alg;
	uint32_t pcrs[TPM_PCR_MAX];
	size_t n_pcrs;
	int has_pcr_policy;
	struct tpm_pcr_allowed policy[TPM_PCR_MAX];
	char *policy_cmd;
	struct tpm_place_entry *resolve;
	size_t n_resolve;
	char enroll_tenant[BC_ID_MAX]; /* "" : no enrollment */
	char enroll_site[BC_ID_MAX];
	char enroll_pool[BC_ID_MAX];
	int64_t pending_ttl_s;
	int64_t retry_after_s;
	int64_t challenge_ttl_ms;
	int node_key_any;
	const char *roles[2];
	size_t n_roles;
};

/* What round 1's checks learned of the evidence (both rounds run them). */
struct tpm_proven {
	TPMT_PUBLIC ek, ak;
	EVP_PKEY *ak_key;
	uint8_t ek_sha256[32];
	char ek_hex[65];
	uint8_t ak_name[BC_TPM_NAME_MAX];
	size_t ak_name_len;
	uint8_t evidence_sha256[32];
	char *issuer; /* the EK certificate's, or NULL */
	char serial[80];
	int certified; /* the node key was certified by the AK */
};

/* tpm_config.c */
BC_WUR int tpm_cfg_load(const bc_toml *t, const char *table, struct tpm_cfg **out, char *err,
                        size_t errlen);
void tpm_cfg_free(struct tpm_cfg *c);

/* tpm_pcr.c: whether the PCR values pass the policy: 0 with *reason left NULL, or set
 * to pcr-policy (also when the policy command cannot answer: never admit on an
 * error). values are the selected PCRs' digests, indexes ascending. < 0 when out of
 * memory. */
BC_WUR int tpm_pcr_policy(const struct tpm_cfg *c, const char *ek_hex, const uint32_t *idx,
                          const uint8_t *const *values, size_t n, const char **reason);

/* tpm_place.c: fills out with a result or a deferral for a proven EK, or sets *reason
 * (a refusal: verify() refuses with it). 0, or < 0. */
BC_WUR int tpm_place(bc_tx *tx, const struct tpm_cfg *c, const struct bc_join_input *in,
                     const struct tpm_proven *p, struct bc_attest_outcome *out,
                     const char **reason);

#endif
