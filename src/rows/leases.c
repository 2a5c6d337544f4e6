/* leases for the metrics (leases.h). */
#include "rows/leases.h"

#include <stdlib.h>
#include <string.h>

void bc_row_leases_free(struct bc_lease_held *l, size_t n)
{
	for (size_t i = 0; l != NULL && i < n; i++) {
		free(l[i].name);
		free(l[i].holder);
	}
	free(l);
}

static int append(struct bc_lease_held **l, size_t *n, bc_rows *r)
{
	struct bc_lease_held *g = realloc(*l, (*n + 1) * sizeof(**l));

	if (g == NULL)
		return BC_ERR_NOMEM;
	*l = g;
	g[*n].name = strdup(bc_rows_text(r, 0));
	g[*n].holder = strdup(bc_rows_text(r, 1));
	g[*n].epoch = bc_rows_int(r, 2);
	(*n)++;
	return g[*n - 1].name && g[*n - 1].holder ? 0 : BC_ERR_NOMEM;
}

int bc_row_leases_held(bc_tx *tx, int64_t now_ms, struct bc_lease_held **out, size_t *n)
{
	bc_rows *r = NULL;
	int rc;

	*out = NULL;
	*n = 0;
	bc_param p[] = {BC_INT(now_ms)};
	if ((rc = bc_tx_query(tx,
	                      "SELECT name, holder, epoch FROM leases WHERE name LIKE 'site:%' AND "
	                      "expires_at > $1 ORDER BY name",
	                      p, 1, &r)) != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1)
		if ((rc = append(out, n, r)) != 0)
			break;
	bc_rows_free(r);
	if (rc < 0) {
		bc_row_leases_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc < 0 ? rc : 0;
}
