/* api_keys (api_keys.h). */
#include "rows/api_keys.h"

#include <stdio.h>
#include <string.h>

#define KEY_SELECT                                                                                 \
	"SELECT id, tenant_id, name, created_at, expires_at, revoked_at, last_used_at, role "      \
	"FROM api_keys "

int bc_row_api_key_auth(bc_tx *tx, const char *id, struct bc_api_key_auth *k)
{
	bc_rows *rows = NULL;
	int rc;

	memset(k, 0, sizeof(*k));
	bc_param p[] = {BC_TEXT(id)};
	if ((rc =
	         bc_tx_query(tx,
	                     "SELECT tenant_id, secret_hash, revoked_at, expires_at, last_used_at, "
	                     "role FROM api_keys WHERE id = $1",
	                     p, 1, &rows)) != 0)
		return rc;
	if ((rc = bc_rows_next(rows)) == 1) {
		snprintf(k->tenant_id, sizeof(k->tenant_id), "%s",
		         bc_rows_text_named(rows, "tenant_id"));
		snprintf(k->secret_hash, sizeof(k->secret_hash), "%s",
		         bc_rows_text_named(rows, "secret_hash"));
		k->revoked = !bc_rows_null_named(rows, "revoked_at");
		k->expires = !bc_rows_null_named(rows, "expires_at");
		k->expires_at = bc_rows_int_named(rows, "expires_at");
		k->last_used_at = bc_rows_int_named(rows, "last_used_at");
		snprintf(k->role, sizeof(k->role), "%s", bc_rows_text_named(rows, "role"));
	}
	bc_rows_free(rows);
	return rc;
}

int bc_row_api_key_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *secret_hash,
                          const char *name, const char *role, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id),   BC_TEXT(tenant_id), BC_TEXT(secret_hash),
	                BC_TEXT(name), BC_TEXT(role),      BC_INT(now_ms)};

	return bc_tx_exec(
	    tx,
	    "INSERT INTO api_keys (id, tenant_id, secret_hash, name, role, created_at) "
	    "VALUES ($1, $2, $3, $4, $5, $6)",
	    p, 6, NULL);
}

int bc_row_api_key_set_expiry(bc_tx *tx, const char *id, int64_t expires_at)
{
	bc_param p[] = {BC_INT(expires_at), BC_TEXT(id)};

	return bc_tx_exec(tx, "UPDATE api_keys SET expires_at = $1 WHERE id = $2", p, 2, NULL);
}

int bc_row_api_key_revoke(bc_tx *tx, const char *tenant_id, const char *id, int64_t now_ms,
                          int64_t *changes)
{
	bc_param p[] = {BC_INT(now_ms), BC_TEXT(tenant_id), BC_TEXT(id)};

	return bc_tx_exec(tx,
	                  "UPDATE api_keys SET revoked_at = $1 WHERE tenant_id = $2 AND id = $3 "
	                  "AND revoked_at IS NULL",
	                  p, 3, changes);
}

int bc_row_api_key_touch(bc_tx *tx, const char *id, int64_t now_ms, int64_t older_than)
{
	bc_param p[] = {BC_INT(now_ms), BC_TEXT(id), BC_INT(older_than)};

	return bc_tx_exec(tx,
	                  "UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND "
	                  "(last_used_at IS NULL OR last_used_at <= $3)",
	                  p, 3, NULL);
}

int bc_row_api_keys_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out)
{
	bc_param p[] = {BC_TEXT(tenant_id), BC_TEXT(id)};

	*out = NULL;
	if (id == NULL)
		return bc_tx_query(tx, KEY_SELECT "WHERE tenant_id = $1 ORDER BY created_at, id", p,
		                   1, out);
	return bc_tx_query(tx, KEY_SELECT "WHERE tenant_id = $1 AND id = $2", p, 2, out);
}
