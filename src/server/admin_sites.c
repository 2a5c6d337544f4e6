/* GET /v1/tenants/{t}/sites/{id}: a site with its site::boot lease (holder, epoch,
 * expiry); POST .../release-lease: an operator ends the lease, so another site node
 * takes it at the next epoch (the old holder is fenced). */
#include <stdio.h>
#include <string.h>

#include "rows/leases.h"
#include "rows/sites.h"
#include "server/admin_internal.h"

static json_t *site_row(bc_rows *r)
{
	return json_pack("{s:o, s:o, s:o, s:o}", "id", admin_col_text(r, 0), "tenantId",
	                 admin_col_text(r, 1), "name", admin_col_text(r, 2), "createdAt",
	                 admin_col_time(r, 3));
}

static int answer_site(bc_tx *tx, struct admin_call *c, int released)
{
	struct bc_lease_row l;
	char name[BC_ID_MAX + 16];
	json_t *s = NULL;
	int64_t now = bc_tx_now_ms(tx);
	bc_rows *r;
	int rc;

	if ((rc = bc_row_sites_query(tx, c->arg[0], c->arg[1], &r)) == 0)
		rc = admin_rows_one(r, site_row, &s);
	if (rc == BC_ERR_NOT_FOUND)
		return admin_fail(c, rc, "site not found");
	if (rc != 0)
		return rc;
	snprintf(name, sizeof(name), BC_ROW_SITE_LEASE_FMT, c->arg[1]);
	if ((rc = bc_row_lease_lock(tx, name, &l)) < 0)
		goto out;
	if (released && l.holder[0] && l.expires_at > now) {
		json_t *d = json_pack("{s:s, s:s, s:I}", "siteId", c->arg[1], "holder", l.holder,
		                      "epoch", (json_int_t)l.epoch);
		if ((rc = bc_row_lease_set(tx, name, l.epoch, "", l.epoch, now)) == 0)
			rc = admin_record(tx, c, c->arg[0], "site.lease.released", c->arg[1], d, 1);
		json_decref(d);
		if (rc != 0)
			goto out;
		l.holder[0] = 0;
		l.expires_at = now;
	}
	int live = l.holder[0] && l.expires_at > now;
	json_object_set_new(s, "lease",
	                    json_pack("{s:s, s:o, s:I, s:o}", "name", "site::boot", "holder",
	                              live ? json_string(l.holder) : json_null(), "epoch",
	                              (json_int_t)l.epoch, "expiresAt",
	                              live ? admin_time(l.expires_at) : json_null()));
	return admin_answer(c, 200, s);
out:
	json_decref(s);
	return rc;
}

int admin_sites_get(bc_tx *tx, struct admin_call *c)
{
	return answer_site(tx, c, 0);
}

int admin_sites_release_lease(bc_tx *tx, struct admin_call *c)
{
	return answer_site(tx, c, 1);
}
