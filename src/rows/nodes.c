/* nodes (nodes.h). */
#include "rows/nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/canon.h"
#include "rows/certs.h"
#include "rows/internal.h"

/* What the node's newest join claimed (inventory, newest last). */
#define NEWEST_INVENTORY(col)                                                                      \
	"(SELECT i." col                                                                           \
	" FROM inventory i WHERE i.node_id = n.id ORDER BY i.taken_at DESC LIMIT 1)"
/* clang-format off */
#define NODE_SELECT                                                                           \
	"SELECT n.id, n.tenant_id, n.pool_id, n.site_id, n.role, n.state, n.generation, "     \
	"n.product_uuid, n.serial, n.macs, n.hostname, n.arch, n.agent_version, n.attestor, " \
	"n.node_key, n.joined_at, n.updated_at, n.identity_revoked_at, "                      \
	"n.cert_serial, n.cert_not_after, "                                                   \
	NEWEST_INVENTORY("taken_at") ", " NEWEST_INVENTORY("data") ", "                       \
	"n.allowed_kinds, (SELECT p.name FROM pools p WHERE p.id = n.pool_id), "              \
	"(SELECT s.name FROM sites s WHERE s.id = n.site_id) FROM nodes n "
/* clang-format on */

void bc_row_nodes_list_sql(const char *tenant_id, const struct bc_row_node_filter *f,
                           const struct bc_row_page *pg, struct bc_row_where *w)
{
	const struct {
		const char *cond, *v;
	} eq[] = {
	    {"n.pool_id =", f->pool_id},
	    {"n.site_id =", f->site_id},
	    {"n.role =", f->role},
	    {"n.state =", f->state},
	    {"n.attestor =", f->attestor},
	    {"n.hostname =", f->hostname},
	    {"n.product_uuid =", f->product_uuid},
	    {"n.serial =", f->serial},
	};

	bc_row_where_init(w, NODE_SELECT "WHERE n.tenant_id = $1", BC_TEXT(tenant_id));
	for (size_t i = 0; i < sizeof(eq) / sizeof(eq[0]); i++)
		if (eq[i].v != NULL)
			bc_row_where_add(w, eq[i].cond, BC_TEXT(eq[i].v));
	if (f->mac != NULL) {
		bc_row_where_add(w,
		                 "n.id IN (SELECT m.node_id FROM node_macs m WHERE m.tenant_id = "
		                 "n.tenant_id AND m.mac =",
		                 BC_TEXT(f->mac));
		bc_row_where_raw(w, ")");
	}
	if (f->expiring_before != 0) {
		bc_row_where_add(w, "n.cert_not_after <=", BC_INT(f->expiring_before));
		bc_row_where_page(w, "n.cert_not_after", "n.id", 0, pg);
	} else {
		bc_row_where_page(w, NULL, "n.id", 0, pg);
	}
}

int bc_row_nodes_list(bc_tx *tx, const char *tenant_id, const struct bc_row_node_filter *f,
                      const struct bc_row_page *pg, bc_rows **out)
{
	struct bc_row_where w;

	bc_row_nodes_list_sql(tenant_id, f, pg, &w);
	return bc_row_where_query(tx, &w, out);
}

int bc_row_nodes_fleet(bc_tx *tx, int64_t now_ms, const int64_t until[static BC_ROW_FLEET_WINDOWS],
                       bc_rows **out)
{
	bc_param p[] = {BC_INT(now_ms), BC_INT(until[0]), BC_INT(until[1]), BC_INT(until[2])};

	return bc_tx_query(tx,
	                   "SELECT state, COUNT(*), "
	                   "SUM(CASE WHEN cert_not_after > $1 AND cert_not_after <= $2 THEN 1 "
	                   "ELSE 0 END), "
	                   "SUM(CASE WHEN cert_not_after > $1 AND cert_not_after <= $3 THEN 1 "
	                   "ELSE 0 END), "
	                   "SUM(CASE WHEN cert_not_after > $1 AND cert_not_after <= $4 THEN 1 "
	                   "ELSE 0 END) FROM nodes GROUP BY state",
	                   p, 4, out);
}

int bc_row_nodes_count(bc_tx *tx, const char *tenant_id, bc_rows **out)
{
	return bc_tx_query(tx,
	                   "SELECT state, COUNT(*) FROM nodes WHERE tenant_id = $1 GROUP BY state",
	                   (bc_param[]){BC_TEXT(tenant_id)}, 1, out);
}

int bc_row_nodes_count_by(bc_tx *tx, const char *tenant_id, enum bc_node_count_by by, bc_rows **out)
{
	static const char *const sql[] = {
	    [BC_NODE_COUNT_ROLE] = "SELECT role, COUNT(*) FROM nodes WHERE tenant_id = $1 "
	                           "GROUP BY role",
	    [BC_NODE_COUNT_ATTESTOR] = "SELECT attestor, COUNT(*) FROM nodes WHERE tenant_id = $1 "
	                               "GROUP BY attestor",
	    [BC_NODE_COUNT_POOL] = "SELECT pool_id, COUNT(*) FROM nodes WHERE tenant_id = $1 "
	                           "GROUP BY pool_id",
	};

	if ((unsigned)by >= sizeof(sql) / sizeof(sql[0]))
		return BC_ERR_INVALID;
	return bc_tx_query(tx, sql[by], (bc_param[]){BC_TEXT(tenant_id)}, 1, out);
}

int bc_row_nodes_count_expiring(bc_tx *tx, const char *tenant_id, int64_t before_ms, int64_t *n)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_INT(before_ms)};

	return bc_tx_query_int(tx,
	                       "SELECT COUNT(*) FROM nodes WHERE tenant_id = $1 "
	                       "AND cert_not_after <= $2",
	                       p, 2, n);
}

int bc_row_nodes_count_uncertified(bc_tx *tx, const char *tenant_id, int64_t *n)
{
	bc_param p[] = {BC_TEXT(tenant_id)};

	return bc_tx_query_int(tx,
	                       "SELECT COUNT(*) FROM nodes WHERE tenant_id = $1 "
	                       "AND cert_not_after IS NULL AND state <> 'retired'",
	                       p, 1, n);
}

int bc_row_nodes_get(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	return bc_tx_query(tx, NODE_SELECT "WHERE n.tenant_id = $1 AND n.id = $2", p, 2, out);
}

int bc_row_node_lock_state(bc_tx *tx, const char *tenant_id, const char *id, char state[16])
{
	char *s = NULL;
	int rc;

	state[0] = '\0';
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};
	rc = bc_tx_query_text(
	    tx, "SELECT state FROM nodes WHERE tenant_id = $1 AND id = $2 FOR UPDATE", p, 2, &s);
	if (rc == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0)
		return rc;
	snprintf(state, 16, "%s", s);
	free(s);
	return 1;
}

int bc_row_node_set_state(bc_tx *tx, const char *id, const char *state, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(state), BC_INT(now_ms), BC_TEXT(id)};

	return bc_tx_exec(tx, "UPDATE nodes SET state = $1, updated_at = $2 WHERE id = $3", p, 3,
	                  NULL);
}

int bc_row_node_enroll(bc_tx *tx, const char *id, const char *pool_id, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(pool_id), BC_INT(now_ms), BC_TEXT(id)};

	return bc_tx_exec(tx, "UPDATE nodes SET pool_id = $1, updated_at = $2 WHERE id = $3", p, 3,
	                  NULL);
}

int bc_row_node_set_role(bc_tx *tx, const char *id, const char *role, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(role), BC_INT(now_ms), BC_TEXT(id)};

	return bc_tx_exec(tx, "UPDATE nodes SET role = $1, updated_at = $2 WHERE id = $3", p, 3,
	                  NULL);
}

int bc_row_node_revoke_identity(bc_tx *tx, const char *id, int64_t now_ms)
{
	bc_param p[] = {BC_INT(now_ms), BC_TEXT(id)};

	return bc_tx_exec(tx,
	                  "UPDATE nodes SET generation = generation + 1, identity_revoked_at = $1, "
	                  "updated_at = $1 WHERE id = $2",
	                  p, 2, NULL);
}

/* The node's own rows go last: the others name it. */
static const char *const NODE_ROWS_DELETE[] = {
    "DELETE FROM node_certs WHERE node_id = $1", "DELETE FROM node_bindings WHERE node_id = $1",
    "DELETE FROM inventory WHERE node_id = $1",  "DELETE FROM node_macs WHERE node_id = $1",
    "DELETE FROM nodes WHERE id = $1",
};

int bc_row_node_delete(bc_tx *tx, const char *id)
{
	bc_param p[] = {BC_TEXT(id)};
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(NODE_ROWS_DELETE) / sizeof(NODE_ROWS_DELETE[0]);
	     i++)
		rc = bc_tx_exec(tx, NODE_ROWS_DELETE[i], p, 1, NULL);
	return rc;
}

#define NODE_COLS "id, tenant_id, pool_id, site_id, role, state, generation"

void bc_row_node_from(bc_rows *r, struct bc_node_row *row)
{
	bc_row_copy_col(row->id, sizeof(row->id), r, "id");
	bc_row_copy_col(row->tenant_id, sizeof(row->tenant_id), r, "tenant_id");
	bc_row_copy_col(row->pool_id, sizeof(row->pool_id), r, "pool_id");
	bc_row_copy_col(row->site_id, sizeof(row->site_id), r, "site_id");
	bc_row_copy_col(row->role, sizeof(row->role), r, "role");
	bc_row_copy_col(row->state, sizeof(row->state), r, "state");
	row->generation = bc_rows_int_named(r, "generation");
}

int bc_row_node_get(bc_tx *tx, enum bc_node_by by, const char *key, struct bc_node_row *row)
{
	const char *sql;
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	switch (by) {
	case BC_NODE_BY_ID: sql = "SELECT " NODE_COLS " FROM nodes WHERE id = $1"; break;
	case BC_NODE_BY_HARDWARE_KEY:
		sql = "SELECT " NODE_COLS " FROM nodes WHERE hardware_key = $1";
		break;
	default: return BC_ERR_INVALID;
	}
	if ((rc = bc_row_first(tx, sql, (bc_param[]){BC_TEXT(key)}, 1, &r)) == 1)
		bc_row_node_from(r, row);
	bc_rows_free(r);
	return rc;
}

int bc_row_node_get_claimed(bc_tx *tx, const char *tenant_id, const char *key,
                            struct bc_node_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(key)};
	if ((rc = bc_row_first(
	         tx, "SELECT " NODE_COLS " FROM nodes WHERE tenant_id = $1 AND claimed_key = $2", p,
	         2, &r)) == 1)
		bc_row_node_from(r, row);
	bc_rows_free(r);
	return rc;
}

int bc_row_node_lock(bc_tx *tx, const char *id)
{
	return bc_tx_lock(tx, "SELECT id FROM nodes WHERE id = $1 FOR UPDATE",
	                  (bc_param[]){BC_TEXT(id)}, 1);
}

/* The node's MACs as rows of node_macs (the --mac filter's index), in place of its
 * earlier ones; what is no MAC is left out, as it matches no filter. */
static int write_macs(bc_tx *tx, const char *id, const struct bc_claims *c, int insert)
{
	char mac[BC_MAC_LEN + 1];
	int rc = insert ? 0
	                : bc_tx_exec(tx, "DELETE FROM node_macs WHERE node_id = $1",
	                             (bc_param[]){BC_TEXT(id)}, 1, NULL);

	for (size_t i = 0; rc == 0 && i < c->n_macs; i++) {
		if (bc_mac_canon(c->macs[i], mac) != 0)
			continue;
		rc = bc_tx_exec(tx,
		                "INSERT INTO node_macs (tenant_id, mac, node_id) SELECT tenant_id, "
		                "$2, id FROM nodes WHERE id = $1 ON CONFLICT DO NOTHING",
		                (bc_param[]){BC_TEXT(id), BC_TEXT(mac)}, 2, NULL);
	}
	return rc;
}

/* Runs the insert (placement first: tenant, pool, site, role) or the reclaim with the
 * parameters both write: $1 is the id, then the claims, agent, attestor, node key and
 * time, then the proven and the claimed hardware key, then the allowed kinds. */
static int node_exec(bc_tx *tx, const struct bc_node_write *n, int insert, const char *sql)
{
	const struct bc_claims *c = n->claims;
	const char *key = bc_row_none_if_empty(n->hardware_key);
	const char *kinds = n->allowed_kinds && n->allowed_kinds[0] ? n->allowed_kinds : "[]";
	bc_param p[19];
	size_t k = 0;
	char *macs;
	int rc;

	if ((macs = bc_row_string_array(c->macs, c->n_macs)) == NULL)
		return BC_ERR_NOMEM;
	p[k++] = BC_TEXT(n->id);
	if (insert) {
		p[k++] = BC_TEXT(n->tenant_id);
		p[k++] = BC_TEXT(bc_row_none_if_empty(n->pool_id));
		p[k++] = BC_TEXT(bc_row_none_if_empty(n->site_id));
		p[k++] = BC_TEXT(n->role);
	}
	p[k++] = BC_TEXT(c->product_uuid);
	p[k++] = BC_TEXT(c->serial);
	p[k++] = BC_TEXT(macs);
	p[k++] = BC_TEXT(c->hostname);
	p[k++] = BC_TEXT(c->arch);
	p[k++] = BC_TEXT(n->agent_version);
	p[k++] = BC_TEXT(n->attestor);
	p[k++] = BC_TEXT(n->node_key_tpm ? "tpm" : "unattested");
	p[k++] = BC_INT(n->now_ms);
	p[k++] = BC_TEXT(n->hardware_key_claimed ? NULL : key);
	p[k++] = BC_TEXT(n->hardware_key_claimed ? key : NULL);
	p[k++] = BC_TEXT(kinds);
	p[k++] = BC_TEXT(n->cert_serial);
	p[k++] = n->cert_serial ? BC_INT(n->cert_not_after) : BC_NULL;
	rc = bc_tx_exec(tx, sql, p, k, NULL);
	free(macs);
	return rc != 0 ? rc : write_macs(tx, n->id, c, insert);
}

int bc_row_node_insert(bc_tx *tx, const struct bc_node_write *n)
{
	return node_exec(tx, n, 1,
	                 "INSERT INTO nodes (id, tenant_id, pool_id, site_id, role, state, "
	                 "generation, product_uuid, serial, macs, hostname, arch, agent_version, "
	                 "attestor, node_key, joined_at, updated_at, hardware_key, claimed_key, "
	                 "allowed_kinds, cert_serial, cert_not_after) VALUES ($1, $2, $3, $4, $5, "
	                 "'adopted', 1, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15, $16, "
	                 "$17, $18, $19)");
}

int bc_row_node_reclaim(bc_tx *tx, const struct bc_node_write *n, int64_t *generation)
{
	int rc;

	*generation = 0;
	/* revoked first, so that the row's current certificate is the one written here */
	if ((rc = bc_row_cert_revoke_all(tx, n->id, n->now_ms, NULL)) != 0)
		return rc;
	if ((rc = node_exec(tx, n, 0,
	                    "UPDATE nodes SET generation = generation + 1, product_uuid = $2, "
	                    "serial = $3, macs = $4, hostname = $5, arch = $6, agent_version = $7, "
	                    "attestor = $8, node_key = $9, updated_at = $10, "
	                    "hardware_key = COALESCE($11, hardware_key), "
	                    "claimed_key = COALESCE($12, claimed_key), allowed_kinds = $13, "
	                    "cert_serial = $14, cert_not_after = $15 WHERE id = $1")) != 0)
		return rc;
	return bc_tx_query_int(tx, "SELECT generation FROM nodes WHERE id = $1",
	                       (bc_param[]){BC_TEXT(n->id)}, 1, generation);
}
