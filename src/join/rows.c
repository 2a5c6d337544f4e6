/* Each table's queries, once (rows.h). */
#include "join/rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/canon.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"

static void copy_col(char *dst, size_t n, bc_rows *r, const char *name)
{
	snprintf(dst, n, "%s", bc_rows_text_named(r, name));
}

/* The first row of a query: 1 with *out holding it (the caller frees it), 0 none. */
static int first_row(bc_tx *tx, const char *sql, const bc_param *p, size_t n, bc_rows **out)
{
	int rc;

	*out = NULL;
	if ((rc = bc_tx_query(tx, sql, p, n, out)) != 0)
		return rc;
	if ((rc = bc_rows_next(*out)) != 1) {
		bc_rows_free(*out);
		*out = NULL;
	}
	return rc;
}

/* A JSON array of n strings, as text (malloc'd); NULL when out of memory. */
static char *string_array(const char *const *s, size_t n)
{
	json_t *arr = json_array();
	char *js;

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_string(s[i]));
	js = bc_json_dump(arr);
	json_decref(arr);
	return js;
}

static const char *none_if_empty(const char *s)
{
	return s != NULL && s[0] ? s : NULL;
}

/* ---- nodes ---- */

#define NODE_COLS "id, tenant_id, pool_id, site_id, role, state, generation"

static void node_from(bc_rows *r, struct bc_node_row *row)
{
	copy_col(row->id, sizeof(row->id), r, "id");
	copy_col(row->tenant_id, sizeof(row->tenant_id), r, "tenant_id");
	copy_col(row->pool_id, sizeof(row->pool_id), r, "pool_id");
	copy_col(row->site_id, sizeof(row->site_id), r, "site_id");
	copy_col(row->role, sizeof(row->role), r, "role");
	copy_col(row->state, sizeof(row->state), r, "state");
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
	if ((rc = first_row(tx, sql, (bc_param[]){BC_TEXT(key)}, 1, &r)) == 1)
		node_from(r, row);
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
	if ((rc = first_row(
	         tx, "SELECT " NODE_COLS " FROM nodes WHERE tenant_id = $1 AND claimed_key = $2", p,
	         2, &r)) == 1)
		node_from(r, row);
	bc_rows_free(r);
	return rc;
}

int bc_row_node_lock(bc_tx *tx, const char *id)
{
	return bc_tx_lock(tx, "SELECT id FROM nodes WHERE id = $1 FOR UPDATE",
	                  (bc_param[]){BC_TEXT(id)}, 1);
}

/* Runs the insert (placement first: tenant, pool, site, role) or the reclaim with the
 * parameters both write: $1 is the id, then the claims, agent, attestor, node key and
 * time, then the proven and the claimed hardware key, then the allowed kinds. */
static int node_exec(bc_tx *tx, const struct bc_node_write *n, int insert, const char *sql)
{
	const struct bc_claims *c = n->claims;
	const char *key = none_if_empty(n->hardware_key);
	const char *kinds = n->allowed_kinds && n->allowed_kinds[0] ? n->allowed_kinds : "[]";
	bc_param p[17];
	size_t k = 0;
	char *macs;
	int rc;

	if ((macs = string_array(c->macs, c->n_macs)) == NULL)
		return BC_ERR_NOMEM;
	p[k++] = BC_TEXT(n->id);
	if (insert) {
		p[k++] = BC_TEXT(n->tenant_id);
		p[k++] = BC_TEXT(none_if_empty(n->pool_id));
		p[k++] = BC_TEXT(none_if_empty(n->site_id));
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
	rc = bc_tx_exec(tx, sql, p, k, NULL);
	free(macs);
	return rc;
}

int bc_row_node_insert(bc_tx *tx, const struct bc_node_write *n)
{
	return node_exec(tx, n, 1,
	                 "INSERT INTO nodes (id, tenant_id, pool_id, site_id, role, state, "
	                 "generation, product_uuid, serial, macs, hostname, arch, agent_version, "
	                 "attestor, node_key, joined_at, updated_at, hardware_key, claimed_key, "
	                 "allowed_kinds) VALUES ($1, $2, $3, $4, $5, 'adopted', 1, $6, $7, $8, "
	                 "$9, $10, $11, $12, $13, $14, $14, $15, $16, $17)");
}

int bc_row_node_reclaim(bc_tx *tx, const struct bc_node_write *n, int64_t *generation)
{
	int rc;

	*generation = 0;
	if ((rc = node_exec(tx, n, 0,
	                    "UPDATE nodes SET generation = generation + 1, product_uuid = $2, "
	                    "serial = $3, macs = $4, hostname = $5, arch = $6, agent_version = $7, "
	                    "attestor = $8, node_key = $9, updated_at = $10, "
	                    "hardware_key = COALESCE($11, hardware_key), "
	                    "claimed_key = COALESCE($12, claimed_key), allowed_kinds = $13 "
	                    "WHERE id = $1")) != 0)
		return rc;
	if ((rc = bc_row_cert_revoke_all(tx, n->id, n->now_ms, NULL)) != 0)
		return rc;
	return bc_tx_query_int(tx, "SELECT generation FROM nodes WHERE id = $1",
	                       (bc_param[]){BC_TEXT(n->id)}, 1, generation);
}

/* ---- node_certs ---- */

int bc_row_cert_insert(bc_tx *tx, const struct bc_cert_write *c)
{
	char sha[65], csr[65], point[131], *hex = NULL, *stmts = NULL;
	uint8_t d[32];
	int rc;

	if ((rc = bc_sha256(c->der, c->der_len, d)) != 0)
		return rc;
	bc_hex_encode_to(d, sizeof(d), sha);
	if (c->csr_sha256)
		bc_hex_encode_to(c->csr_sha256, 32, csr);
	if (c->point)
		bc_hex_encode_to(c->point, 65, point);
	hex = bc_hex_encode(c->der, c->der_len);
	stmts = string_array(c->statements, c->n_statements);
	if (hex == NULL || stmts == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	bc_param p[] = {BC_TEXT(c->serial),
	                BC_TEXT(c->node_id),
	                BC_INT(c->generation),
	                BC_TEXT(hex),
	                BC_TEXT(sha),
	                BC_INT(c->not_before),
	                BC_INT(c->not_after),
	                BC_TEXT(stmts),
	                BC_TEXT(c->predecessor),
	                BC_TEXT(c->csr_sha256 ? csr : NULL),
	                BC_TEXT(c->point ? point : NULL),
	                BC_TEXT(c->role)};
	rc = bc_tx_exec(tx,
	                "INSERT INTO node_certs (serial, node_id, generation, der_hex, "
	                "der_sha256, not_before, not_after, statements, created_at, predecessor, "
	                "csr_sha256, key_point, role) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $6, "
	                "$9, $10, $11, $12)",
	                p, sizeof(p) / sizeof(p[0]), NULL);
out:
	free(hex);
	free(stmts);
	return rc;
}

#define CERT_SELECT                                                                                \
	"SELECT c.der_hex AS der_hex, c.serial AS serial, "                                        \
	"c.generation AS cert_generation, c.not_after AS not_after, "                              \
	"c.revoked_at AS revoked_at, c.used_at AS used_at, "                                       \
	"c.superseded_at AS superseded_at, c.key_point AS key_point, c.role AS cert_role, "        \
	"c.statements AS statements, n.id AS id, n.tenant_id AS tenant_id, "                       \
	"n.pool_id AS pool_id, n.site_id AS site_id, n.role AS role, "                             \
	"n.state AS state, n.generation AS generation FROM node_certs c "                          \
	"JOIN nodes n ON n.id = c.node_id WHERE c.der_sha256 = $1"

/* The key and role the row was issued with, when it holds them. */
static void cert_key_from(bc_rows *r, struct bc_cert_row *row)
{
	const char *point = bc_rows_text_named(r, "key_point");
	const char *role = bc_rows_text_named(r, "cert_role");
	const char *stmts = bc_rows_text_named(r, "statements");
	uint8_t *p = NULL;
	size_t n = 0;

	if (point == NULL || role == NULL || role[0] == 0 || strlen(role) >= sizeof(row->role) ||
	    stmts == NULL || strlen(stmts) >= sizeof(row->statements) ||
	    bc_hex_decode(point, strlen(point), &p, &n) != 0 || n != 65) {
		free(p);
		return;
	}
	memcpy(row->point, p, 65);
	free(p);
	snprintf(row->role, sizeof(row->role), "%s", role);
	snprintf(row->statements, sizeof(row->statements), "%s", stmts);
	row->has_key = 1;
}

int bc_row_cert_find(bc_tx *tx, const char *node_id, const uint8_t *der, size_t len,
                     struct bc_cert_row *row)
{
	char sha[65], *hex = NULL;
	uint8_t d[32];
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	if ((rc = bc_sha256(der, len, d)) != 0)
		return rc;
	bc_hex_encode_to(d, sizeof(d), sha);
	/* found by the hash, then held to the same bytes */
	bc_param p[] = {BC_TEXT(sha), BC_TEXT(node_id)};
	if ((rc = node_id ? first_row(tx, CERT_SELECT " AND c.node_id = $2", p, 2, &r)
	                  : first_row(tx, CERT_SELECT, p, 1, &r)) != 1)
		return rc;
	if ((hex = bc_hex_encode(der, len)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if (strcmp(hex, bc_rows_text_named(r, "der_hex")) != 0) {
		rc = 0;
		goto out;
	}
	copy_col(row->serial, sizeof(row->serial), r, "serial");
	row->generation = bc_rows_int_named(r, "cert_generation");
	row->not_after = bc_rows_int_named(r, "not_after");
	row->revoked = !bc_rows_null_named(r, "revoked_at");
	row->revoked_at = bc_rows_int_named(r, "revoked_at");
	row->used = !bc_rows_null_named(r, "used_at");
	row->superseded = !bc_rows_null_named(r, "superseded_at");
	cert_key_from(r, row);
	node_from(r, &row->node);
out:
	free(hex);
	bc_rows_free(r);
	return rc;
}

int bc_row_cert_use(bc_tx *tx, const char *node_id, const char *serial, int64_t now_ms)
{
	bc_param p[] = {BC_INT(now_ms), BC_TEXT(node_id), BC_TEXT(serial)};
	int64_t first = 0;
	int rc;

	if ((rc =
	         bc_tx_exec(tx,
	                    "UPDATE node_certs SET used_at = $1 WHERE node_id = $2 AND serial = $3 "
	                    "AND used_at IS NULL",
	                    p, 3, &first)) != 0 ||
	    first == 0)
		return rc;
	return bc_tx_exec(tx,
	                  "UPDATE node_certs SET superseded_at = $1 WHERE node_id = $2 AND "
	                  "serial <> $3 AND superseded_at IS NULL",
	                  p, 3, NULL);
}

int bc_row_cert_successors(bc_tx *tx, const char *serial, int64_t *n)
{
	return bc_tx_query_int(tx, "SELECT COUNT(*) FROM node_certs WHERE predecessor = $1",
	                       (bc_param[]){BC_TEXT(serial)}, 1, n);
}

int bc_row_cert_supersede_successors(bc_tx *tx, const char *serial, int64_t now_ms)
{
	bc_param p[] = {BC_INT(now_ms), BC_TEXT(serial)};

	return bc_tx_exec(tx,
	                  "UPDATE node_certs SET superseded_at = $1 WHERE predecessor = $2 AND "
	                  "superseded_at IS NULL",
	                  p, 2, NULL);
}

int bc_row_cert_issued_for(bc_tx *tx, const char *predecessor, const uint8_t csr_sha256[32],
                           uint8_t **der, size_t *len, int *superseded, int64_t *successors)
{
	char csr[65];
	bc_rows *r = NULL;
	int rc, found = 0;

	*der = NULL;
	*len = 0;
	*superseded = 0;
	*successors = 0;
	bc_hex_encode_to(csr_sha256, 32, csr);
	/* every successor at once (a lineage holds at most two: a second is refused as
	 * superseded), rather than the one for this CSR and then their count */
	if ((rc = bc_tx_query(tx,
	                      "SELECT csr_sha256, der_hex, superseded_at FROM node_certs "
	                      "WHERE predecessor = $1",
	                      (bc_param[]){BC_TEXT(predecessor)}, 1, &r)) != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1) {
		const char *c = bc_rows_text_named(r, "csr_sha256");
		(*successors)++;
		if (found || c == NULL || strcmp(c, csr) != 0)
			continue;
		const char *hex = bc_rows_text_named(r, "der_hex");
		*superseded = !bc_rows_null_named(r, "superseded_at");
		if (bc_hex_decode(hex, strlen(hex), der, len) != 0) {
			rc = BC_ERR_INTERNAL;
			break;
		}
		found = 1;
	}
	bc_rows_free(r);
	if (rc < 0) {
		free(*der);
		*der = NULL;
		*len = 0;
		return rc;
	}
	return found;
}

int bc_row_cert_revoke_all(bc_tx *tx, const char *node_id, int64_t now_ms, int64_t *revoked)
{
	bc_param p[] = {BC_INT(now_ms), BC_TEXT(node_id)};

	return bc_tx_exec(tx,
	                  "UPDATE node_certs SET revoked_at = $1 WHERE node_id = $2 "
	                  "AND revoked_at IS NULL",
	                  p, 2, revoked);
}

/* ---- node_bindings ---- */

int bc_row_binding_get(bc_tx *tx, const char *kind, const char *key, struct bc_binding_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	bc_param p[] = {BC_TEXT(kind), BC_TEXT(key)};
	if ((rc = first_row(tx,
	                    "SELECT kind, key, node_id, created_at FROM node_bindings "
	                    "WHERE kind = $1 AND key = $2",
	                    p, 2, &r)) != 1)
		return rc;
	copy_col(row->kind, sizeof(row->kind), r, "kind");
	copy_col(row->key, sizeof(row->key), r, "key");
	copy_col(row->node_id, sizeof(row->node_id), r, "node_id");
	row->created_at = bc_rows_int_named(r, "created_at");
	bc_rows_free(r);
	return 1;
}

int bc_row_binding_insert(bc_tx *tx, const char *kind, const char *key, const char *node_id,
                          int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(kind), BC_TEXT(key), BC_TEXT(node_id), BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "INSERT INTO node_bindings (kind, key, node_id, created_at) VALUES "
	                  "($1, $2, $3, $4)",
	                  p, 4, NULL);
}

/* ---- join_tokens ---- */

int bc_row_token_lock(bc_tx *tx, const char *id, struct bc_token_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	if ((rc = first_row(tx,
	                    "SELECT id, tenant_id, pool_id, site_id, role, secret_hash, uses_left, "
	                    "expires_at, revoked_at, workflow_id, node_id FROM join_tokens "
	                    "WHERE id = $1 FOR UPDATE",
	                    (bc_param[]){BC_TEXT(id)}, 1, &r)) != 1)
		return rc;
	copy_col(row->id, sizeof(row->id), r, "id");
	copy_col(row->tenant_id, sizeof(row->tenant_id), r, "tenant_id");
	copy_col(row->pool_id, sizeof(row->pool_id), r, "pool_id");
	copy_col(row->site_id, sizeof(row->site_id), r, "site_id");
	copy_col(row->role, sizeof(row->role), r, "role");
	copy_col(row->secret_hash, sizeof(row->secret_hash), r, "secret_hash");
	row->uses_left = bc_rows_int_named(r, "uses_left");
	row->expires_at = bc_rows_int_named(r, "expires_at");
	row->revoked = !bc_rows_null_named(r, "revoked_at");
	copy_col(row->workflow_id, sizeof(row->workflow_id), r, "workflow_id");
	copy_col(row->node_id, sizeof(row->node_id), r, "node_id");
	bc_rows_free(r);
	return 1;
}

int bc_row_token_expect(bc_tx *tx, const char *id, char **expect, int *allow_reclaim)
{
	bc_rows *r = NULL;
	int rc;

	*expect = NULL;
	*allow_reclaim = 0;
	if ((rc = first_row(tx, "SELECT expect, allow_reclaim FROM join_tokens WHERE id = $1",
	                    (bc_param[]){BC_TEXT(id)}, 1, &r)) != 1)
		return rc;
	*allow_reclaim = bc_rows_int_named(r, "allow_reclaim") != 0;
	if ((*expect = strdup(bc_rows_text_named(r, "expect"))) == NULL)
		rc = BC_ERR_NOMEM;
	bc_rows_free(r);
	return rc;
}

int bc_row_token_consume(bc_tx *tx, const char *id, int64_t now_ms)
{
	int64_t changes = 0;
	int rc;

	bc_param p[] = {BC_TEXT(id), BC_INT(now_ms)};
	if ((rc = bc_tx_exec(tx,
	                     "UPDATE join_tokens SET uses_left = uses_left - 1, last_used_at = $2 "
	                     "WHERE id = $1 AND uses_left > 0",
	                     p, 2, &changes)) != 0)
		return rc;
	/* the row is locked: a use that vanished between check and spend is a bug */
	return changes == 1 ? 0 : BC_ERR_INTERNAL;
}

int bc_row_token_insert(bc_tx *tx, const struct bc_token_write *t)
{
	bc_param p[] = {BC_TEXT(t->id),
	                BC_TEXT(t->tenant_id),
	                BC_TEXT(none_if_empty(t->pool_id)),
	                BC_TEXT(none_if_empty(t->site_id)),
	                BC_TEXT(t->role),
	                BC_TEXT(t->secret_hash),
	                BC_INT(t->uses),
	                BC_INT(t->expires_at),
	                BC_TEXT(t->expect ? t->expect : "{}"),
	                BC_INT(t->allow_reclaim),
	                BC_TEXT(none_if_empty(t->workflow_id)),
	                BC_TEXT(none_if_empty(t->node_id)),
	                BC_TEXT(none_if_empty(t->description)),
	                BC_INT(t->now_ms)};

	return bc_tx_exec(
	    tx,
	    "INSERT INTO join_tokens (id, tenant_id, pool_id, site_id, role, secret_hash, "
	    "uses_left, uses_total, expires_at, expect, allow_reclaim, workflow_id, node_id, "
	    "description, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, "
	    "$12, $13, $14)",
	    p, sizeof(p) / sizeof(p[0]), NULL);
}

/* ---- inventory ---- */

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
	if ((rc = first_row(tx,
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

/* ---- workflows ---- */

void bc_row_workflow_clear(struct bc_workflow_row *row)
{
	free(row->data);
	memset(row, 0, sizeof(*row));
}

int bc_row_workflow_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *node_id,
                           const char *kind, const char *data, int64_t now_ms)
{
	bc_param p[] = {
	    BC_TEXT(id),   BC_TEXT(tenant_id), BC_TEXT(node_id && node_id[0] ? node_id : NULL),
	    BC_TEXT(kind), BC_TEXT(data),      BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "INSERT INTO workflows (id, tenant_id, node_id, kind, state, data, "
	                  "created_at, updated_at) VALUES ($1, $2, $3, $4, 'running', $5, $6, $6)",
	                  p, 6, NULL);
}

int bc_row_workflow_lock(bc_tx *tx, const char *tenant_id, const char *id,
                         struct bc_workflow_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant_id)};
	if ((rc = first_row(tx,
	                    BC_ROW_WORKFLOW_SELECT
	                    "WHERE id = $1 AND ($2 IS NULL OR tenant_id = $2) "
	                    "FOR UPDATE",
	                    p, 2, &r)) != 1)
		return rc;
	copy_col(row->id, sizeof(row->id), r, "id");
	copy_col(row->tenant_id, sizeof(row->tenant_id), r, "tenant_id");
	copy_col(row->node_id, sizeof(row->node_id), r, "node_id");
	copy_col(row->kind, sizeof(row->kind), r, "kind");
	copy_col(row->state, sizeof(row->state), r, "state");
	row->created_at = bc_rows_int_named(r, "created_at");
	row->updated_at = bc_rows_int_named(r, "updated_at");
	if ((row->data = strdup(bc_rows_text_named(r, "data"))) == NULL)
		rc = BC_ERR_NOMEM;
	bc_rows_free(r);
	return rc;
}

int bc_row_workflow_running_for(bc_tx *tx, const char *node_id, const char *kind,
                                char id[BC_ID_MAX])
{
	char *s = NULL;
	int rc;

	id[0] = 0;
	bc_param p[] = {BC_TEXT(node_id), BC_TEXT(kind)};
	rc = bc_tx_query_text(tx,
	                      "SELECT id FROM workflows WHERE node_id = $1 AND kind = $2 AND "
	                      "state = 'running' ORDER BY created_at DESC, id DESC LIMIT 1",
	                      p, 2, &s);
	if (rc == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0)
		return rc;
	snprintf(id, BC_ID_MAX, "%s", s);
	free(s);
	return 1;
}

int bc_row_workflow_set(bc_tx *tx, const char *id, const char *state, const char *data,
                        int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(state), BC_TEXT(data), BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "UPDATE workflows SET state = $2, data = COALESCE($3, data), "
	                  "updated_at = $4 WHERE id = $1",
	                  p, 4, NULL);
}

/* ---- attestation_uses ---- */

int bc_row_use_insert(bc_tx *tx, const char *attestor, const char *subject_hex, int64_t expires_at,
                      int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(attestor), BC_TEXT(subject_hex),
	                expires_at < 0 ? BC_NULL : BC_INT(expires_at), BC_INT(now_ms)};

	return bc_tx_exec(
	    tx,
	    "INSERT INTO attestation_uses (attestor, subject, expires_at, created_at) "
	    "VALUES ($1, $2, $3, $4)",
	    p, 4, NULL);
}

/* ---- leases ---- */

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
	if ((rc = first_row(
	         tx, "SELECT holder, epoch, expires_at FROM leases WHERE name = $1 FOR UPDATE",
	         (bc_param[]){BC_TEXT(name)}, 1, &r)) != 1)
		return rc == 0 ? BC_ERR_INTERNAL : rc; /* inserted a moment ago */
	copy_col(row->holder, sizeof(row->holder), r, "holder");
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

int bc_row_cert_each(bc_tx *tx, const char *node_id,
                     int (*fn)(void *ctx, const uint8_t *der, size_t len), void *ctx)
{
	bc_rows *r = NULL;
	int rc, stop = 0;

	bc_param p[] = {BC_TEXT(node_id)};
	if ((rc = bc_tx_query(tx,
	                      "SELECT der_hex FROM node_certs WHERE node_id = $1 "
	                      "ORDER BY not_after DESC",
	                      p, 1, &r)) != 0)
		return rc;
	while (stop == 0 && (rc = bc_rows_next(r)) == 1) {
		const char *hex = bc_rows_text(r, 0);
		uint8_t *der = NULL;
		size_t len = 0;
		if (bc_hex_decode(hex, strlen(hex), &der, &len) != 0)
			continue;
		stop = fn(ctx, der, len);
		free(der);
	}
	bc_rows_free(r);
	return rc < 0 ? rc : stop;
}
