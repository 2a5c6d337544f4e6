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

struct bcd_producer {
	const char *attestor; /* the JoinRequest.attestor it produces for */
	void *ctx;            /* the producer's own state */
	/* Round 1: the evidence, for the CSR of node_key. */
	int (*evidence)(void *ctx, EVP_PKEY *node_key, const uint8_t csr_sha256[static 32],
	                uint8_t **out, size_t *outlen, char *err, size_t errlen);
	/* A challenge's answer (up to 3 rounds); challenge is the JoinChallenge payload of
	 * the verified answer, for the attestor named in it. */
	int (*answer)(void *ctx, const char *attestor, const uint8_t *challenge, size_t len,
	              const uint8_t csr_sha256[static 32], uint8_t **out, size_t *outlen, char *err,
	              size_t errlen);
	/* Releases ctx (may be NULL). */
	void (*free)(void *ctx);
};

/* The producer for an attestor id; *out is NULL for an attestor with none
 * (join-token). BC_ERR_UNSUPPORTED for an attestor this build cannot produce for. */
BC_WUR int bcd_producer_for(const char *attestor, struct bcd_producer **out, char *err,
                            size_t errlen);
void bcd_producer_free(struct bcd_producer *p);

#endif
