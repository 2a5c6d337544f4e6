/* node_certs (certs.h). */
#include "rows/certs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "rows/internal.h"

/* The node's current certificate (the newest unrevoked one) copied onto its row, for
 * the nodes list and its expiringWithin filter (rows/nodes.h), found again after a
 * revocation, in the same transaction. */
static int node_current_refresh(bc_tx *tx, const char *node_id)
{
	return bc_tx_exec(tx,
	                  "UPDATE nodes SET (cert_serial, cert_not_after) = (SELECT c.serial, "
	                  "c.not_after FROM node_certs c WHERE c.node_id = $1 AND c.revoked_at IS "
	                  "NULL ORDER BY c.created_at DESC, c.serial DESC LIMIT 1) WHERE id = $1",
	                  (bc_param[]){BC_TEXT(node_id)}, 1, NULL);
}

int bc_row_cert_insert(bc_tx *tx, const struct bc_cert_write *c)
{
	char sha[65], csr[65], point[131], *stmts = NULL;
	uint8_t d[32];
	int rc;

	if ((rc = bc_sha256(c->der, c->der_len, d)) != 0)
		return rc;
	bc_hex_encode_to(d, sizeof(d), sha);
	if (c->csr_sha256)
		bc_hex_encode_to(c->csr_sha256, 32, csr);
	if (c->point)
		bc_hex_encode_to(c->point, 65, point);
	if ((stmts = bc_row_string_array(c->statements, c->n_statements)) == NULL)
		return BC_ERR_NOMEM;
	bc_param p[] = {BC_TEXT(c->serial),
	                BC_TEXT(c->node_id),
	                BC_INT(c->generation),
	                BC_BLOB(c->der, c->der_len),
	                BC_TEXT(sha),
	                BC_INT(c->not_before),
	                BC_INT(c->not_after),
	                BC_TEXT(stmts),
	                BC_TEXT(c->predecessor),
	                BC_TEXT(c->csr_sha256 ? csr : NULL),
	                BC_TEXT(c->point ? point : NULL),
	                BC_TEXT(c->role)};
	rc = bc_tx_exec(tx,
	                "INSERT INTO node_certs (serial, node_id, generation, der, "
	                "der_sha256, not_before, not_after, statements, created_at, predecessor, "
	                "csr_sha256, key_point, role) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $6, "
	                "$9, $10, $11, $12)",
	                p, sizeof(p) / sizeof(p[0]), NULL);
	/* the certificate issued now is the node's newest: no need to look for it */
	if (rc == 0 && !c->node_row_set)
		rc = bc_tx_exec(
		    tx, "UPDATE nodes SET cert_serial = $2, cert_not_after = $3 WHERE id = $1",
		    (bc_param[]){BC_TEXT(c->node_id), BC_TEXT(c->serial), BC_INT(c->not_after)}, 3,
		    NULL);
	free(stmts);
	return rc;
}

#define CERT_SELECT                                                                                \
	"SELECT c.der AS der, c.serial AS serial, "                                                \
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
	char sha[65];
	const uint8_t *stored;
	size_t stored_len = 0;
	uint8_t d[32];
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	if ((rc = bc_sha256(der, len, d)) != 0)
		return rc;
	bc_hex_encode_to(d, sizeof(d), sha);
	/* found by the hash, then held to the same bytes */
	bc_param p[] = {BC_TEXT(sha), BC_TEXT(node_id)};
	if ((rc = node_id ? bc_row_first(tx, CERT_SELECT " AND c.node_id = $2", p, 2, &r)
	                  : bc_row_first(tx, CERT_SELECT, p, 1, &r)) != 1)
		return rc;
	stored = bc_rows_blob_named(r, "der", &stored_len);
	if (stored == NULL || stored_len != len || memcmp(stored, der, len) != 0) {
		rc = 0;
		goto out;
	}
	bc_row_copy_col(row->serial, sizeof(row->serial), r, "serial");
	row->generation = bc_rows_int_named(r, "cert_generation");
	row->not_after = bc_rows_int_named(r, "not_after");
	row->revoked = !bc_rows_null_named(r, "revoked_at");
	row->revoked_at = bc_rows_int_named(r, "revoked_at");
	row->used = !bc_rows_null_named(r, "used_at");
	row->superseded = !bc_rows_null_named(r, "superseded_at");
	cert_key_from(r, row);
	bc_row_node_from(r, &row->node);
out:
	bc_rows_free(r);
	return rc;
}

int bc_row_cert_lock_node(bc_tx *tx, const char *node_id, const uint8_t *der, size_t len)
{
	char sha[65];
	uint8_t d[32];
	int rc;

	if ((rc = bc_sha256(der, len, d)) != 0)
		return rc;
	bc_hex_encode_to(d, sizeof(d), sha);
	bc_param p[] = {BC_TEXT(node_id), BC_TEXT(sha)};
	return bc_tx_lock(tx,
	                  "SELECT id FROM nodes WHERE id = $1 AND EXISTS (SELECT 1 FROM node_certs "
	                  "WHERE node_id = $1 AND der_sha256 = $2) FOR UPDATE",
	                  p, 2);
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
	                      "SELECT csr_sha256, der, superseded_at FROM node_certs "
	                      "WHERE predecessor = $1",
	                      (bc_param[]){BC_TEXT(predecessor)}, 1, &r)) != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1) {
		const char *c = bc_rows_text_named(r, "csr_sha256");
		(*successors)++;
		if (found || c == NULL || strcmp(c, csr) != 0)
			continue;
		size_t n = 0;
		const uint8_t *b = bc_rows_blob_named(r, "der", &n);
		*superseded = !bc_rows_null_named(r, "superseded_at");
		if (b == NULL || (*der = malloc(n ? n : 1)) == NULL) {
			rc = b == NULL ? BC_ERR_INTERNAL : BC_ERR_NOMEM;
			break;
		}
		memcpy(*der, b, n);
		*len = n;
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

	int rc;

	if ((rc = bc_tx_exec(tx,
	                     "UPDATE node_certs SET revoked_at = $1 WHERE node_id = $2 "
	                     "AND revoked_at IS NULL",
	                     p, 2, revoked)) != 0)
		return rc;
	return node_current_refresh(tx, node_id);
}

int bc_row_cert_each(bc_tx *tx, const char *node_id,
                     int (*fn)(void *ctx, const uint8_t *der, size_t len), void *ctx)
{
	bc_rows *r = NULL;
	int rc, stop = 0;

	bc_param p[] = {BC_TEXT(node_id)};
	if ((rc = bc_tx_query(tx,
	                      "SELECT der FROM node_certs WHERE node_id = $1 "
	                      "ORDER BY not_after DESC",
	                      p, 1, &r)) != 0)
		return rc;
	while (stop == 0 && (rc = bc_rows_next(r)) == 1) {
		size_t len = 0;
		const uint8_t *der = bc_rows_blob(r, 0, &len);
		if (der != NULL)
			stop = fn(ctx, der, len);
	}
	bc_rows_free(r);
	return rc < 0 ? rc : stop;
}

int bc_row_certs_of_node(bc_tx *tx, const char *node_id, int64_t limit, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(node_id), BC_INT(limit)};

	return bc_tx_query(tx,
	                   "SELECT serial, generation, not_before, not_after, revoked_at, used_at, "
	                   "superseded_at, predecessor, role FROM node_certs WHERE node_id = $1 "
	                   "ORDER BY not_after DESC, serial DESC LIMIT $2",
	                   p, 2, out);
}
