/* The rotating keys of the PKI in the store (pki_keys): the node CA and the two join
 * keys, one generation a row, and the changes `pki rotate|activate|retire|status` make
 * to them on the store directly (docs/server.md, "PKI lifecycle"). One implementation
 * for the three kinds; what differs is in one table (pki_changes.c).
 *
 * Generation 1 of each kind is the PKI bundle's key: bc_pki_keys_seed() writes it into
 * the table (active since the bundle's node CA began) the first time a server or a pki
 * command meets a store without it, and raises spiffe_sequence to at least the bundle's
 * sequence so that it never goes down. Each change raises spiffe_sequence by one; every
 * replica reads it again within BC_NODE_CAS_REFRESH_MS (server/node_cas.h).
 *
 * States: prepared (a node CA in the trust bundle signing nothing; a join key announced
 * as next: agents pin it, and a token sealed to a next encryption key opens), active
 * (the one activated last issues, signs answers, or is what new tokens are sealed to;
 * older active ones still verify, or open tokens, until retired), retired (nothing;
 * a retired join key is announced retired so that agents unpin it). */
#ifndef BC_SERVER_PKI_CHANGES_H
#define BC_SERVER_PKI_CHANGES_H

#include <stddef.h>
#include <stdint.h>

#include "bc/pki.h"
#include "bc/store.h"
#include "rows/pki_keys.h"

/* Join keys of one use in a set at most (active and prepared: a rotate beyond is
 * refused), so that the pins-update statement keeps room for retired ones. */
#define BC_JOIN_KEYS_IN_USE 3

/* 1 when kind is node-ca, join-signing or join-encryption, else 0. */
int bc_pki_kind_known(const char *kind);

/* Writes generation 1 of each kind the store does not hold yet (0 either way). */
BC_WUR int bc_pki_keys_seed(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32]);

/* One change. kind names the key; id 0 picks the generation (rotate: out only).
 * Each function returns 0, BC_ERR_CONFLICT with why (a sentence for the operator) when
 * refused, or another error.
 * rotate: a new prepared key (a node CA: a new CA certificate), refused while one of
 *   kind is prepared or too many are in use.
 * activate: the prepared one (or id) becomes active and the one activated last.
 * retire: the oldest active one that is not the one activated last (or the prepared or
 *   active one named by id). A node CA is refused while certificates it signed may be
 *   unexpired (until: when they all are) unless force. The current join key (activated
 *   last) only with force, and only when a prepared one exists: that one is activated
 *   in the same transaction (took_over: its generation). forced (out): retired before
 *   its time (a node CA's unexpired certificates, the current join key). */
struct bc_pki_change {
	const char *kind;
	int64_t id;
	int force;
	int64_t until;
	int64_t took_over;
	int forced;
	char why[320];
};
BC_WUR int bc_pki_key_rotate(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32],
                             struct bc_pki_change *c);
BC_WUR int bc_pki_key_activate(bc_store *st, struct bc_pki_change *c);
BC_WUR int bc_pki_key_retire(bc_store *st, struct bc_pki_change *c);

/* Every row of kind (any state), for pki status: free with bc_row_pki_keys_free.
 * *now_ms receives database time. bc_pki_key_current: the index of the active row
 * activated last (it issues or signs), or n. bc_node_ca_last_cert: when row i's
 * certificates are all expired (0: unknown yet, it issues or was never active). */
BC_WUR int bc_pki_keys_list(bc_store *st, const char *kind, struct bc_pki_key_row **rows, size_t *n,
                            int64_t *now_ms);
size_t bc_pki_key_current(const struct bc_pki_key_row *rows, size_t n);
int64_t bc_node_ca_last_cert(const struct bc_pki_key_row *rows, size_t n, size_t i);

#endif
