/* The agent's side of the x509pop attestor: evidence that this machine still holds the
 * key of a recent certificate, bound to its new CSR.
 *
 * {"v":1,"nodeId":..,"chain":["<b64 DER>",...],"clientTime":<ms>,"sig":"<b64 P1363>"}
 * sig is ES256 under purpose x509pop over sha256(csr) || node id || 0x00 || client time
 * (8 bytes big-endian), by key (the leaf's key). */
#ifndef BC_X509POP_H
#define BC_X509POP_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/crypto.h"
#include "bc/err.h"

/* *json is malloc'd (NUL-terminated; its length is strlen). */
BC_WUR int bc_x509pop_evidence(uint8_t *const *chain, const size_t *chain_lens, size_t n_chain,
                               EVP_PKEY *key, const char *node_id,
                               const uint8_t csr_sha256[static 32], int64_t client_time_ms,
                               char **json);

/* Added: the same evidence by a key held elsewhere (a TPM): pub is its public half,
 * sign(sign_ctx, "x509pop", payload, ...) makes the signature, checked under pub
 * before it is used (bc_es256_sign_with). */
BC_WUR int bc_x509pop_evidence_with(uint8_t *const *chain, const size_t *chain_lens, size_t n_chain,
                                    EVP_PKEY *pub, bc_sign_fn sign, void *sign_ctx,
                                    const char *node_id, const uint8_t csr_sha256[static 32],
                                    int64_t client_time_ms, char **json);

#endif
