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

/* The evidence for the CSR whose SHA-256 is csr_sha256, signed by s (bc_signer_init:
 * the leaf's key, in memory or held elsewhere; a signature held elsewhere is checked
 * under its point before it is used). *json is malloc'd (NUL-terminated; its length
 * is strlen). */
BC_WUR int bc_x509pop_evidence(uint8_t *const *chain, const size_t *chain_lens, size_t n_chain,
                               const struct bc_signer *s, const char *node_id,
                               const uint8_t csr_sha256[static 32], int64_t client_time_ms,
                               char **json);

#endif
