/* An attestor's agent side: what bcd join sends as JoinRequest.attestation. The tpm
 * attestor's producer (EK and AK evidence, then the ActivateCredential answer and
 * quote) plugs in here; join-token has none (its credential is the sealed token).
 *
 * Contract: every function returns 0 or a negative BC_ERR_* and, on failure, one line
 * in err. *out is malloc'd by the producer and freed (bc_freezero) by the caller.
 * Both rounds are bound to the same CSR, whose SHA-256 they get. */
#ifndef BCD_PRODUCER_H
#define BCD_PRODUCER_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

struct bcd_config;
struct bcd_nodekey;

/* A challenge from a verified join answer: the attestor it names, its JoinChallenge
 * payload, and the SHA-256 of the CSR both rounds are bound to. */
struct bcd_challenge {
	const char *attestor;
	const uint8_t *payload;
	size_t len;
	const uint8_t *csr_sha256; /* 32 bytes */
};

struct bcd_producer {
	const char *attestor; /* the JoinRequest.attestor it produces for */
	void *ctx;            /* the producer's own state */
	/* Round 1: the evidence, for the CSR of node_key. */
	int (*evidence)(void *ctx, EVP_PKEY *node_key, const uint8_t csr_sha256[static 32],
	                uint8_t **out, size_t *outlen, char *err, size_t errlen);
	/* A challenge's answer (up to 3 rounds). */
	int (*answer)(void *ctx, const struct bcd_challenge *c, uint8_t **out, size_t *outlen,
	              char *err, size_t errlen);
	/* Releases ctx (may be NULL). */
	void (*free)(void *ctx);
	/* Optional (NULL: not needed): the join's node key, borrowed until free, given
	 * before round 1. The tpm producer has its AK certify it when it is in the TPM. */
	void (*hold_node_key)(void *ctx, const struct bcd_nodekey *key);
};

struct bcd_opts;

/* One row of bcd's table of attestors: make builds the producer from the config and
 * bcd join's options; NULL for one whose credential is the sealed token (join-token,
 * provisioned) or whose producer starts elsewhere (x509pop, discovery). Every
 * BC_WIRE_ATTESTOR_* has a row. */
struct bcd_producer_kind {
	const char *id;
	int (*make)(const struct bcd_config *cfg, const struct bcd_opts *o,
	            struct bcd_producer **out, char *err, size_t errlen);
};
/* The row of attestor, or NULL. */
const struct bcd_producer_kind *bcd_producer_kind(const char *attestor);

/* The producer for an attestor id (NULL: join-token) with o's options (may be NULL);
 * *out is NULL for an attestor whose credential is the sealed token. BC_ERR_UNSUPPORTED,
 * err listing bcd join's attestors, for one bcd join cannot produce evidence for from
 * the config; BC_ERR_NOT_FOUND for tpm on a machine without a TPM (cfg names it). */
BC_WUR int bcd_producer_for(const struct bcd_config *cfg, const char *attestor,
                            const struct bcd_opts *o, struct bcd_producer **out, char *err,
                            size_t errlen);

/* The tpm attestor's producer (tpm_producer.c) on the TPM of tcti: round 1 the EK
 * (RSA-2048, its certificate from NV when there is one) and the AK; each challenge
 * answered with ActivateCredential, a quote over the challenge's PCRs with extraData
 * sha256(secret || sha256(csr)), the PCR values and, for a node key in this TPM, the
 * AK's certification of it over sha256(csr). */
BC_WUR int bcd_tpm_producer_new(const char *tcti, struct bcd_producer **out, char *err,
                                size_t errlen);
/* The cloud-iid producer (cloud.c) for provider (NULL: [cloud] provider), the OIDC
 * token from token_file (NULL: [cloud] identity_token_file or _command). */
BC_WUR int bcd_cloud_producer_new(const struct bcd_config *cfg, const char *provider,
                                  const char *token_file, struct bcd_producer **out, char *err,
                                  size_t errlen);
void bcd_producer_free(struct bcd_producer *p);

#endif
