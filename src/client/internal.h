/* Helpers shared by the files of src/client; not part of the public API. */
#ifndef BC_CLIENT_INTERNAL_H
#define BC_CLIENT_INTERNAL_H

#include <openssl/evp.h>
#include <stddef.h>

/* BC_CLIENT_MAX_RESPONSE: the largest answer read, in bc/client.h */
#include "bc/client.h"

/* A bounded, printable copy of an untrusted string for an error message: at most
 * 64 characters, anything outside printable ASCII shown as '?', "..." when cut. */
#define BC_CLIENT_SHOW_LEN 72
void bc_client_show(const char *s, char out[static BC_CLIENT_SHOW_LEN]);

/* A non-200 answer from JoinService, in one line: what ("join", "renewal") was refused
 * or failed. The Connect message is not shown: every refusal reads the same on purpose,
 * and the reason is in the server's event (named by event). BC_ERR_DENIED for
 * permission_denied, BC_ERR_INVALID for invalid_argument (or 400), BC_ERR_UNAVAILABLE
 * for anything else. */
int bc_client_refused(const char *what, const char *event, long status, const uint8_t *resp,
                      size_t len, char *err, size_t errlen);

/* A SignedResponse from the pinned join signing key under purpose: unpacked (free
 * with bettercompute__join__v1__signed_response__free_unpacked, also on failure when
 * *out is set), its key id the pinned one and its signature verified. 0,
 * BC_ERR_LIMIT, BC_ERR_INVALID or BC_ERR_VERIFY, with err saying which. */
#include "bc/client.h"
#include "bettercompute/join/v1/join.pb-c.h"
int bc_client_open_signed(const struct bc_client_pins *pins, const char *purpose,
                          const uint8_t *resp, size_t len,
                          Bettercompute__Join__V1__SignedResponse **out, char *err, size_t errlen);

/* The point of the pinned join signing key whose key id is kid (any pinned signing
 * key: active, next or kept), or NULL when the agent does not pin it. */
const uint8_t *bc_client_pinned_signer(const struct bc_client_pins *pins, const char *kid);

/* bc_client_open_join_response_csr for a CSR the caller already checked: its SHA-256
 * and its key's uncompressed point. */
int bc_client_open_answer(const struct bc_client_pins *pins, const uint8_t *resp, size_t len,
                          const uint8_t csr_sha256[static 32], const uint8_t csr_point[static 65],
                          struct bc_join_answer *out, char *err, size_t errlen);

/* The node a leaf certificate names (its SPIFFE ID, by bc_pki_node_identity's rules for
 * trust_domain) into node_id, and, when point is not NULL, that it certifies that P-256
 * key. 0; BC_ERR_INVALID when it is not a node certificate of trust_domain;
 * BC_ERR_VERIFY (node_id set) when it is for another key. */
int bc_client_leaf_node(const uint8_t *der, size_t len, const char *trust_domain,
                        const uint8_t *point, char node_id[static 64]);

#endif
