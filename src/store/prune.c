/* Retention: bc_store_prune() (store.h). Each kind of row is deleted in batches, one
 * transaction per batch, so that a large backlog never holds the token rows' locks
 * (or SQLite's only write lock) for long, and a prune that stops halfway has removed
 * only whole batches. Every "past" is database time, read in each batch's
 * transaction, as JoinService reads it. */
#include <stdint.h>

#include "bc/store.h"

#define DEFAULT_BATCH 5000

/* One DELETE per kind: $1 is database time, $2 the batch. DELETE has no LIMIT in
 * PostgreSQL (nor in a default SQLite build), hence the keys chosen by a subquery. */
static const struct prune_kind {
	const char *sql;
	int events; /* $1 is the retention cut-off rather than now */
} kinds[] = {
    {"DELETE FROM attestation_uses WHERE (attestor, subject) IN (SELECT attestor, subject "
     "FROM attestation_uses WHERE expires_at IS NOT NULL AND expires_at < $1 LIMIT $2)",
     0},
    {"DELETE FROM join_tokens WHERE id IN (SELECT id FROM join_tokens WHERE expires_at < $1 "
     "OR uses_left <= 0 OR revoked_at IS NOT NULL LIMIT $2)",
     0},
    /* an approved request that has not expired waits for its machine's next round:
     * kept, or the machine would start over as pending */
    {"DELETE FROM join_requests WHERE id IN (SELECT id FROM join_requests WHERE state IN "
     "('denied', 'used') OR expires_at < $1 LIMIT $2)",
     0},
    {"DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < $1 LIMIT $2)", 1},
};

struct batch {
	const struct prune_kind *k;
	int64_t limit, retention_ms;
	int64_t removed; /* by this batch's transaction, if it commits */
};

static int prune_batch(bc_tx *tx, void *arg)
{
	struct batch *b = arg;
	int64_t at = bc_tx_now_ms(tx);

	b->removed = 0;
	if (b->k->events)
		at -= b->retention_ms;
	return bc_tx_exec(tx, b->k->sql, (bc_param[]){BC_INT(at), BC_INT(b->limit)}, 2,
	                  &b->removed);
}

static int prune_kind(bc_store *s, const struct prune_kind *k, const struct bc_prune_opts *o,
                      int64_t *count)
{
	struct batch b = {.k = k,
	                  .limit = o->batch > 0 ? o->batch : DEFAULT_BATCH,
	                  .retention_ms = o->event_retention_ms};
	int rc;

	do {
		if ((rc = bc_store_run(s, BC_TX_WRITE, prune_batch, &b)) != 0)
			return rc;
		*count += b.removed;
	} while (b.removed >= b.limit);
	return 0;
}

int bc_store_prune(bc_store *s, const struct bc_prune_opts *o, struct bc_prune_counts *out)
{
	int64_t *counts[4];
	int rc;

	if (out == NULL)
		return BC_ERR_INVALID;
	*out = (struct bc_prune_counts){0};
	if (s == NULL || o == NULL || o->batch < 0 || o->event_retention_ms < 0)
		return BC_ERR_INVALID;
	counts[0] = &out->attestation_uses;
	counts[1] = &out->join_tokens;
	counts[2] = &out->join_requests;
	counts[3] = &out->events;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (kinds[i].events && o->event_retention_ms == 0)
			continue;
		if ((rc = prune_kind(s, &kinds[i], o, counts[i])) != 0)
			return rc;
	}
	return 0;
}
