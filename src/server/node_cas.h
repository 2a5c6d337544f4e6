/* The set every replica issues, verifies, signs and opens tokens with: the node CAs and
 * the join keys of the store (pki_keys), read whole into one immutable struct
 * bc_node_cas and installed in the pki (docs/server.md, "PKI lifecycle"). The changes
 * that `pki rotate|activate|retire` make, and generation 1 of each kind, are
 * server/pki_changes.h's. Each change raises spiffe_sequence by one; a replica reads the
 * sequence every BC_NODE_CAS_REFRESH_MS and the whole set when it moved. */
#ifndef BC_SERVER_NODE_CAS_H
#define BC_SERVER_NODE_CAS_H

#include <stddef.h>
#include <stdint.h>

#include "bc/pki.h"
#include "bc/store.h"
#include "rows/pki_keys.h"

#define BC_NODE_CAS_REFRESH_MS 2000
/* A CA's certificates are all expired this long after the CA that follows it was
 * activated: the longest node certificate, and a replica's refresh. */
#define BC_NODE_CA_LAST_CERT_MS (BC_NODE_CERT_TTL_MS + 2 * BC_NODE_CAS_REFRESH_MS + 1000)

/* Reads the set (seeding it first) and installs it in pki when its sequence is not
 * *known (0: always), updating *known: the node CAs (a retired one while its leaves may
 * be unexpired), the join keys in use, then retired join keys (the newest first, public
 * halves only) while BC_JOIN_SET_MAX allows. BC_ERR_VERIFY when a sealed key does not
 * open with secret; BC_ERR_INVALID when the rows do not form a set. */
BC_WUR int bc_node_cas_refresh(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32],
                               int64_t *known);

/* A thread that refreshes pki's set every BC_NODE_CAS_REFRESH_MS until stopped; a
 * failed read is logged and tried again. */
struct bc_node_cas_watch;
BC_WUR int bc_node_cas_watch_start(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32],
                                   int64_t known, struct bc_node_cas_watch **out);
void bc_node_cas_watch_stop(struct bc_node_cas_watch *w);

#endif
