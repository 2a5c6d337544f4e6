/* pki_keys and pki_state: the rotating keys of the PKI (each generation's certificate,
 * its private key sealed under the server secret, its state and times) and the trust
 * bundle's spiffe_sequence. Nothing here opens a sealed key: src/server/node_cas.c
 * does. See rows/query.h. */
#ifndef BC_ROWS_PKI_KEYS_H
#define BC_ROWS_PKI_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "rows/query.h"

#define BC_PKI_KIND_NODE_CA         "node-ca"
#define BC_PKI_KIND_JOIN_SIGNING    "join-signing"
#define BC_PKI_KIND_JOIN_ENCRYPTION "join-encryption"
#define BC_PKI_PREPARED             "prepared"
#define BC_PKI_ACTIVE               "active"
#define BC_PKI_RETIRED              "retired"

struct bc_pki_key_row {
	int64_t id;
	char kind[24];
	char state[16];
	char *cert_pem;
	char *key_sealed;
	char public_sha256[65];
	int64_t created_at;
	int64_t activated_at; /* 0: never */
	int64_t retired_at;   /* 0: not retired */
	int forced;
};

/* The rows of kind, in id order, except those retired before retired_since (0: every
 * row): *out an array of *n, freed with bc_row_pki_keys_free. */
BC_WUR int bc_row_pki_keys_list(bc_tx *tx, const char *kind, int64_t retired_since,
                                struct bc_pki_key_row **out, size_t *n);
void bc_row_pki_keys_free(struct bc_pki_key_row *rows, size_t n);

/* Inserts row (its id the next free one, written back into row->id): 1 inserted, 0 when
 * a row of that kind already holds that public key (nothing changed). */
BC_WUR int bc_row_pki_key_insert(bc_tx *tx, struct bc_pki_key_row *row);

/* Moves row id from state was to state, stamping activated_at or retired_at with
 * at_ms (and forced): BC_ERR_CONFLICT when the row is no longer in state was. */
BC_WUR int bc_row_pki_key_set_state(bc_tx *tx, int64_t id, const char *was, const char *state,
                                    int64_t at_ms, int forced);

/* The trust bundle's spiffe_sequence: 0 before the first. bc_row_pki_sequence_raise sets
 * it to at least floor and one above what it was, and returns the new value in *out. */
BC_WUR int bc_row_pki_sequence(bc_tx *tx, int64_t *out);
BC_WUR int bc_row_pki_sequence_raise(bc_tx *tx, int64_t floor, int64_t *out);

#endif
