/* inventory (inventory.h). */
#include "rows/inventory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/canon.h"
#include "bc/json.h"
#include "rows/internal.h"

int bc_row_inventory_insert(bc_tx *tx, const char *node_id, const struct bc_claims *c,
                            int64_t now_ms, int prune)
{
	json_t *macs = json_array(), *o = NULL;
	char *data = NULL, m[BC_MAC_LEN + 1], u[BC_UUID_LEN + 1];
	int rc = BC_ERR_NOMEM;

	/* canonical where they have the shape, so a later comparison is a strcmp */
	for (size_t i = 0; macs != NULL && i < c->n_macs; i++)
		if (json_array_append_new(
		        macs, json_string(bc_mac_canon(c->macs[i], m) == 0 ? m : c->macs[i])) != 0)
			goto out;
	if (bc_uuid_canon(c->product_uuid, u) != 0)
		snprintf(u, sizeof(u), "%s", "");
	o = json_pack("{s:O, s:s, s:s, s:s, s:s}", "macs", macs, "productUuid",
	              u[0] ? u : c->product_uuid, "serial", c->serial, "hostname", c->hostname,
	              "arch", c->arch);
	if (o == NULL || (data = bc_json_dump(o)) == NULL)
		goto out;
	bc_param p[] = {BC_TEXT(node_id), BC_INT(now_ms), BC_TEXT(data)};
	if ((rc = bc_tx_exec(tx,
	                     "INSERT INTO inventory (node_id, taken_at, data) VALUES ($1, $2, $3) "
	                     "ON CONFLICT (node_id, taken_at) DO UPDATE SET data = excluded.data",
	                     p, 3, NULL)) != 0)
		goto out;
	/* a node that re-joins often (x509pop) must not grow its history without end */
	if (!prune)
		goto out;
	bc_param q[] = {BC_TEXT(node_id), BC_INT(BC_ROW_INVENTORY_KEEP - 1)};
	rc = bc_tx_exec(tx,
	                "DELETE FROM inventory WHERE node_id = $1 AND taken_at < (SELECT taken_at "
	                "FROM inventory WHERE node_id = $1 ORDER BY taken_at DESC LIMIT 1 "
	                "OFFSET $2)",
	                q, 2, NULL);
out:
	free(data);
	json_decref(o);
	json_decref(macs);
	return rc;
}

int bc_row_inventory_newest_uuid(bc_tx *tx, const char *node_id, char uuid[BC_ID_MAX])
{
	bc_rows *r = NULL;
	json_t *o = NULL;
	const char *d, *v;
	int rc;

	uuid[0] = 0;
	if ((rc = bc_row_first(tx,
	                       "SELECT data FROM inventory WHERE node_id = $1 "
	                       "ORDER BY taken_at DESC LIMIT 1",
	                       (bc_param[]){BC_TEXT(node_id)}, 1, &r)) != 1)
		return rc;
	d = bc_rows_text_named(r, "data");
	/* written by bc_row_inventory_insert: a record that does not read names no UUID */
	if (bc_json_parse(d, strlen(d), 0, &o, NULL, 0) == 0 &&
	    bc_json_get_string(o, "productUuid", &v) == 0)
		snprintf(uuid, BC_ID_MAX, "%s", v);
	json_decref(o);
	bc_rows_free(r);
	return 1;
}

int bc_row_inventory_list(bc_tx *tx, const char *node_id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(node_id)};

	return bc_tx_query(tx,
	                   "SELECT taken_at, data FROM inventory WHERE node_id = $1 "
	                   "ORDER BY taken_at",
	                   p, 1, out);
}
