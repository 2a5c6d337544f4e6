/* Retention: bc_store_prune() (store.h). Each kind of row is deleted in batches, one
 * transaction per batch, so that a large backlog never holds the token rows' locks
 * (or SQLite's only write lock) for long, and a prune that stops halfway has removed
 * only whole batches. Every "past" is database time, read in each batch's
 * transaction, as JoinService reads it. */
#include <stdint.h>

#include "bc/store.h"

#define DEFAULT_BATCH 5000

/* What a kind's $1 is: database time, or that less a retention. */
enum cut { CUT_NOW, CUT_EVENTS, CUT_AUDIT, CUT_CERTS };

/* One DELETE per kind: $1 is the cut-off, $2 the batch. DELETE has no LIMIT in
 * PostgreSQL (nor in a default SQLite build), hence the keys chosen by a subquery;
 * each subquery reads an index of the column it compares (migration 007), so a prune
 * with nothing to delete reads nothing. */
static const struct prune_kind {
	const char *sql;
	enum cut cut;
} kinds[] = {
    {"DELETE FROM attestation_uses WHERE (attestor, subject) IN (SELECT attestor, subject "
     "FROM attestation_uses WHERE expires_at IS NOT NULL AND expires_at < $1 LIMIT $2)",
     CUT_NOW},
    {"DELETE FROM join_tokens WHERE id IN (SELECT id FROM join_tokens WHERE expires_at < $1 "
     "OR uses_left <= 0 OR revoked_at IS NOT NULL LIMIT $2)",
     CUT_NOW},
    /* an approved request that has not expired waits for its machine's next round:
     * kept, or the machine would start over as pending */
    {"DELETE FROM join_requests WHERE id IN (SELECT id FROM join_requests WHERE state IN "
     "('denied', 'used') OR expires_at < $1 LIMIT $2)",
     CUT_NOW},
    {"DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < $1 LIMIT $2)",
     CUT_EVENTS},
    /* a certificate no check accepts any longer: expired past the longest grace (revoked
     * or superseded ones too); a node's current one stays, for the node's view */
    {"DELETE FROM node_certs WHERE serial IN (SELECT c.serial FROM node_certs c WHERE "
     "c.not_after < $1 AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = c.node_id AND "
     "n.cert_serial = c.serial) LIMIT $2)",
     CUT_CERTS},
    {"DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE created_at < $1 LIMIT $2)",
     CUT_AUDIT},
};

struct batch {
	const struct prune_kind *k;
	int64_t limit, back_ms; /* $1 is database time less back_ms */
	int64_t removed;        /* by this batch's transaction, if it commits */
};

static int prune_batch(bc_tx *tx, void *arg)
{
	struct batch *b = arg;
	int64_t at = bc_tx_now_ms(tx) - b->back_ms;

	b->removed = 0;
	return bc_tx_exec(tx, b->k->sql, (bc_param[]){BC_INT(at), BC_INT(b->limit)}, 2,
	                  &b->removed);
}

static int prune_kind(bc_store *s, const struct prune_kind *k, const struct bc_prune_opts *o,
                      int64_t back_ms, int64_t *count)
{
	struct batch b = {
	    .k = k, .limit = o->batch > 0 ? o->batch : DEFAULT_BATCH, .back_ms = back_ms};
	int rc;

	do {
		if ((rc = bc_store_run(s, BC_TX_WRITE, prune_batch, &b)) != 0)
			return rc;
		*count += b.removed;
	} while (b.removed >= b.limit);
	return 0;
}

/* How far back of database time a kind's cut-off is; 0 with *keep set: the kind is
 * kept forever. */
static int64_t back_of(enum cut c, const struct bc_prune_opts *o, int *keep)
{
	*keep = 0;
	switch (c) {
	case CUT_NOW: return 0;
	case CUT_EVENTS: *keep = o->event_retention_ms == 0; return o->event_retention_ms;
	case CUT_AUDIT: *keep = o->audit_retention_ms == 0; return o->audit_retention_ms;
	case CUT_CERTS: return BC_CERT_GRACE_MAX_MS;
	default: *keep = 1; return 0;
	}
}

int bc_store_prune(bc_store *s, const struct bc_prune_opts *o, struct bc_prune_counts *out)
{
	int64_t *counts[sizeof(kinds) / sizeof(kinds[0])];
	int keep, rc;

	if (out == NULL)
		return BC_ERR_INVALID;
	*out = (struct bc_prune_counts){0};
	if (s == NULL || o == NULL || o->batch < 0 || o->event_retention_ms < 0 ||
	    o->audit_retention_ms < 0)
		return BC_ERR_INVALID;
	counts[0] = &out->attestation_uses;
	counts[1] = &out->join_tokens;
	counts[2] = &out->join_requests;
	counts[3] = &out->events;
	counts[4] = &out->node_certs;
	counts[5] = &out->audit;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		int64_t back = back_of(kinds[i].cut, o, &keep);
		if (keep)
			continue;
		if ((rc = prune_kind(s, &kinds[i], o, back, counts[i])) != 0)
			return rc;
	}
	return 0;
}
