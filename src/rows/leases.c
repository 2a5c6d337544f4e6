/* leases (leases.h). */
#include "rows/leases.h"

#include <stdlib.h>
#include <string.h>

#include "rows/internal.h"

void bc_row_leases_free(struct bc_lease_held *l, size_t n)
{
	for (size_t i = 0; l != NULL && i < n; i++) {
		free(l[i].name);
		free(l[i].holder);
	}
	free(l);
}

static int append(void *list, size_t *n, bc_rows *r)
{
	struct bc_lease_held **l = list, *g = realloc(*l, (*n + 1) * sizeof(**l));

	if (g == NULL)
		return BC_ERR_NOMEM;
	*l = g;
	g[*n].name = strdup(bc_rows_text(r, 0));
	g[*n].holder = strdup(bc_rows_text(r, 1));
	g[*n].epoch = bc_rows_int(r, 2);
	(*n)++;
	return g[*n - 1].name && g[*n - 1].holder ? 0 : BC_ERR_NOMEM;
}

static void clear(void *list, size_t *n)
{
	struct bc_lease_held **l = list;

	bc_row_leases_free(*l, *n);
	*l = NULL;
	*n = 0;
}

int bc_row_leases_held(bc_tx *tx, int64_t now_ms, struct bc_lease_held **out, size_t *n)
{
	*out = NULL;
	bc_param p[] = {BC_INT(now_ms)};
	return bc_row_collect(tx,
	                      "SELECT name, holder, epoch FROM leases WHERE name LIKE 'site:%' AND "
	                      "expires_at > $1 ORDER BY name",
	                      p, 1, out, n, append, clear);
}

int bc_row_lease_lock(bc_tx *tx, const char *name, struct bc_lease_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	if ((rc = bc_tx_exec(tx,
	                     "INSERT INTO leases (name, holder, epoch, expires_at) VALUES "
	                     "($1, '', 0, 0) ON CONFLICT (name) DO NOTHING",
	                     (bc_param[]){BC_TEXT(name)}, 1, NULL)) != 0)
		return rc;
	if ((rc = bc_row_first(
	         tx, "SELECT holder, epoch, expires_at FROM leases WHERE name = $1 FOR UPDATE",
	         (bc_param[]){BC_TEXT(name)}, 1, &r)) != 1)
		return rc == 0 ? BC_ERR_INTERNAL : rc; /* inserted a moment ago */
	bc_row_copy_col(row->holder, sizeof(row->holder), r, "holder");
	row->epoch = bc_rows_int_named(r, "epoch");
	row->expires_at = bc_rows_int_named(r, "expires_at");
	bc_rows_free(r);
	return 1;
}

int bc_row_lease_set(bc_tx *tx, const char *name, int64_t was_epoch, const char *holder,
                     int64_t epoch, int64_t expires_at)
{
	int64_t changed = 0;
	int rc;

	bc_param p[] = {BC_TEXT(name), BC_TEXT(holder), BC_INT(epoch), BC_INT(expires_at),
	                BC_INT(was_epoch)};
	if ((rc = bc_tx_exec(tx,
	                     "UPDATE leases SET holder = $2, epoch = $3, expires_at = $4 "
	                     "WHERE name = $1 AND epoch = $5",
	                     p, 5, &changed)) != 0)
		return rc;
	return changed == 1 ? 0 : BC_ERR_CONFLICT;
}

int bc_row_lease_held(bc_tx *tx, const char *name, const char *holder, int64_t epoch,
                      int64_t now_ms)
{
	int64_t n = 0;
	int rc;

	bc_param p[] = {BC_TEXT(name), BC_TEXT(holder), BC_INT(epoch), BC_INT(now_ms)};
	if ((rc = bc_tx_query_int(tx,
	                          "SELECT COUNT(*) FROM leases WHERE name = $1 AND holder = $2 "
	                          "AND epoch = $3 AND expires_at > $4",
	                          p, 4, &n)) != 0)
		return rc;
	return n > 0;
}

int bc_row_lease_held_any(bc_tx *tx, const char *name, const char *holder, int64_t now_ms)
{
	int64_t n = 0;
	int rc;

	bc_param p[] = {BC_TEXT(name), BC_TEXT(holder), BC_INT(now_ms)};
	if ((rc = bc_tx_query_int(tx,
	                          "SELECT COUNT(*) FROM leases WHERE name = $1 AND holder = $2 AND "
	                          "expires_at > $3",
	                          p, 3, &n)) != 0)
		return rc;
	return n > 0;
}
