/* leases: a site's site::boot lease as SiteService locks, grants and checks it, and
 * as the metrics read them. See rows/query.h. */
#ifndef BC_ROWS_LEASES_H
#define BC_ROWS_LEASES_H

#include <stddef.h>

#include <stdint.h>

#include "bc/attestor.h"
#include "rows/query.h"

struct bc_lease_held {
	char *name;
	char *holder;
	int64_t epoch;
};

/* Every site lease (name "site:...") unexpired at now_ms, in name order: *out an
 * array of *n (free it with bc_row_leases_free), usable after the transaction. */
BC_WUR int bc_row_leases_held(bc_tx *tx, int64_t now_ms, struct bc_lease_held **out, size_t *n);
void bc_row_leases_free(struct bc_lease_held *l, size_t n);

/* The row name of a site's site::boot lease: "site::boot/" + the site id. */
#define BC_ROW_SITE_LEASE_FMT "site::boot/%s"

struct bc_lease_row {
	char holder[BC_ID_MAX]; /* "" when nobody holds it */
	int64_t epoch;          /* the last epoch granted: 0 before the first */
	int64_t expires_at;
};

/* The lease name, its row locked until the transaction ends; a lease never granted is
 * made first (holder "", epoch 0), so two replicas racing lock the same row. 1. */
BC_WUR int bc_row_lease_lock(bc_tx *tx, const char *name, struct bc_lease_row *row);

/* Sets the locked lease name to (holder, epoch, expires_at), only while its epoch is
 * still was_epoch: BC_ERR_CONFLICT when another transaction moved it. */
BC_WUR int bc_row_lease_set(bc_tx *tx, const char *name, int64_t was_epoch, const char *holder,
                            int64_t epoch, int64_t expires_at);

/* 1 when holder holds the lease name at exactly epoch, unexpired at now_ms; else 0. */
BC_WUR int bc_row_lease_held(bc_tx *tx, const char *name, const char *holder, int64_t epoch,
                             int64_t now_ms);

/* 1 when holder holds the lease name at whatever epoch, unexpired at now_ms; else 0. */
BC_WUR int bc_row_lease_held_any(bc_tx *tx, const char *name, const char *holder, int64_t now_ms);

#endif
