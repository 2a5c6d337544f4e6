/* Tenants, their API keys and their sites. */
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "server/admin_internal.h"

static const char *const NAME_ONLY[] = {"name", NULL};
static const char *const API_KEY_FIELDS[] = {"name", "ttlSeconds", NULL};

#define KEY_TTL_MIN_S 60
#define KEY_TTL_MAX_S (10LL * 365 * 24 * 3600)

#define TENANT_SELECT "SELECT id, name, created_at FROM tenants "
#define SITE_SELECT   "SELECT id, tenant_id, name, created_at FROM sites "
#define KEY_SELECT                                                                                 \
	"SELECT id, tenant_id, name, created_at, expires_at, revoked_at, last_used_at FROM "       \
	"api_keys "
#define KEY_ONE KEY_SELECT "WHERE tenant_id = $1 AND id = $2"

static json_t *tenant_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:o}", "id", bc_rows_text(r, 0), "name", bc_rows_text(r, 1),
	                 "createdAt", admin_time(bc_rows_int(r, 2)));
}

static json_t *site_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:s, s:o}", "id", bc_rows_text(r, 0), "tenantId",
	                 bc_rows_text(r, 1), "name", bc_rows_text(r, 2), "createdAt",
	                 admin_time(bc_rows_int(r, 3)));
}

/* A key as listed: never its secret or hash. */
static json_t *key_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "id", bc_rows_text(r, 0),
	                 "tenantId", bc_rows_text(r, 1), "name", bc_rows_text(r, 2), "createdAt",
	                 admin_time(bc_rows_int(r, 3)), "expiresAt", admin_col_time(r, 4),
	                 "revokedAt", admin_col_time(r, 5), "lastUsedAt", admin_col_time(r, 6));
}

/* A list answer {"<key>": [...]} */
static int answer_list(struct admin_call *c, const char *key, json_t *arr)
{
	return admin_answer(c, 200, json_pack("{s:o}", key, arr));
}

int admin_tenants_list(bc_tx *tx, struct admin_call *c)
{
	json_t *arr = NULL;
	int rc;

	bc_param p[] = {BC_TEXT(c->tenant_id)};
	if (admin_is_root(c))
		rc = admin_query_list(tx, TENANT_SELECT "ORDER BY created_at, id", NULL, 0,
		                      tenant_json, &arr);
	else
		rc = admin_query_list(tx, TENANT_SELECT "WHERE id = $1", p, 1, tenant_json, &arr);
	return rc != 0 ? rc : answer_list(c, "tenants", arr);
}

int admin_tenants_create(bc_tx *tx, struct admin_call *c)
{
	char id[ADMIN_ID_MAX];
	const char *name;
	json_t *data = NULL, *t = NULL;
	int rc;

	if (!admin_is_root(c)) {
		c->err_status = 403;
		return admin_fail(c, BC_ERR_DENIED,
		                  "only a key of the root tenant may create tenants");
	}
	if ((rc = admin_check_fields(c, c->body, "tenant", NAME_ONLY)) != 0 ||
	    (rc = admin_get_name(c, c->body, "name", "tenant.name", 1, &name)) != 0)
		return rc;
	if ((rc = bc_new_id("tnt", id, sizeof(id))) != 0)
		return rc;
	bc_param p[] = {BC_TEXT(id), BC_TEXT(name), BC_INT(bc_tx_now_ms(tx))};
	rc = bc_tx_exec(tx, "INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)", p, 3,
	                NULL);
	if (rc == BC_ERR_CONFLICT)
		return admin_fail(c, rc, "tenant.name: a tenant with this name already exists");
	if (rc != 0)
		return rc;
	data = json_pack("{s:s, s:s}", "tenantId", id, "name", name);
	if ((rc = admin_record(tx, c, id, "tenant.created", id, data, 0)) != 0)
		goto out;
	if ((rc = admin_query_one(tx, TENANT_SELECT "WHERE id = $1", p, 1, tenant_json, &t)) != 0)
		goto out;
	rc = admin_answer(c, 201, t);
out:
	json_decref(data);
	return rc;
}

int admin_api_keys_create(bc_tx *tx, struct admin_call *c)
{
	char key_id[ADMIN_ID_MAX] = "";
	const char *name;
	char *key = NULL;
	json_t *data = NULL, *row = NULL;
	int64_t ttl_s = 0;
	int rc;

	if ((rc = admin_check_fields(c, c->body, "apiKey", API_KEY_FIELDS)) != 0 ||
	    (rc = admin_get_name(c, c->body, "name", "apiKey.name", 1, &name)) != 0 ||
	    (rc = admin_get_int(c, c->body, "ttlSeconds", "apiKey.ttlSeconds", KEY_TTL_MIN_S,
	                        KEY_TTL_MAX_S, 0, &ttl_s)) != 0)
		return rc;
	if ((rc = bc_admin_create_api_key(tx, c->arg[0], name, &key)) != 0)
		return rc;
	/* "bck_" + the key id + "_" + secret */
	memcpy(key_id, key + 4, ADMIN_KEY_ID_LEN);
	key_id[ADMIN_KEY_ID_LEN] = '\0';
	bc_param e[] = {BC_INT(bc_tx_now_ms(tx) + ttl_s * 1000), BC_TEXT(key_id)};
	if (ttl_s > 0 && (rc = bc_tx_exec(tx, "UPDATE api_keys SET expires_at = $1 WHERE id = $2",
	                                  e, 2, NULL)) != 0)
		goto out;
	bc_param p[] = {BC_TEXT(c->arg[0]), BC_TEXT(key_id)};
	if ((rc = admin_query_one(tx, KEY_ONE, p, 2, key_json, &row)) != 0)
		goto out;
	data = json_pack("{s:s, s:s, s:O}", "keyId", key_id, "name", name, "expiresAt",
	                 json_object_get(row, "expiresAt"));
	if ((rc = admin_record(tx, c, c->arg[0], "admin.key.created", key_id, data, 1)) != 0)
		goto out;
	rc = admin_answer(c, 201,
	                  json_pack("{s:s, s:s, s:s, s:O, s:s}", "id", key_id, "tenantId",
	                            c->arg[0], "name", name, "expiresAt",
	                            json_object_get(row, "expiresAt"), "key", key));
out:
	json_decref(data);
	json_decref(row);
	bc_freezero(key, strlen(key));
	return rc;
}

int admin_api_keys_list(bc_tx *tx, struct admin_call *c)
{
	json_t *arr = NULL;
	int rc;

	bc_param p[] = {BC_TEXT(c->arg[0])};
	if ((rc = admin_query_list(tx, KEY_SELECT "WHERE tenant_id = $1 ORDER BY created_at, id", p,
	                           1, key_json, &arr)) != 0)
		return rc;
	return answer_list(c, "apiKeys", arr);
}

/* Revoking a revoked key answers it unchanged. The key revoked may be the caller's own:
 * its next request is refused. */
int admin_api_keys_revoke(bc_tx *tx, struct admin_call *c)
{
	int64_t changes = 0;
	json_t *data = NULL, *row = NULL;
	int rc;

	bc_param p[] = {BC_INT(bc_tx_now_ms(tx)), BC_TEXT(c->arg[0]), BC_TEXT(c->arg[1])};
	bc_param q[] = {BC_TEXT(c->arg[0]), BC_TEXT(c->arg[1])};
	if ((rc = bc_tx_exec(tx,
	                     "UPDATE api_keys SET revoked_at = $1 WHERE tenant_id = $2 AND id = $3 "
	                     "AND revoked_at IS NULL",
	                     p, 3, &changes)) != 0)
		return rc;
	if ((rc = admin_query_one(tx, KEY_ONE, q, 2, key_json, &row)) != 0)
		return rc == BC_ERR_NOT_FOUND ? admin_fail(c, rc, "api key not found") : rc;
	if (changes > 0) {
		data = json_pack("{s:s}", "keyId", c->arg[1]);
		if ((rc = admin_record(tx, c, c->arg[0], "admin.key.revoked", c->arg[1], data,
		                       1)) != 0)
			goto out;
	}
	rc = admin_answer(c, 200, row);
	row = NULL;
out:
	json_decref(data);
	json_decref(row);
	return rc;
}

int admin_sites_list(bc_tx *tx, struct admin_call *c)
{
	json_t *arr = NULL;
	int rc;

	bc_param p[] = {BC_TEXT(c->arg[0])};
	if ((rc = admin_query_list(tx, SITE_SELECT "WHERE tenant_id = $1 ORDER BY created_at, id",
	                           p, 1, site_json, &arr)) != 0)
		return rc;
	return answer_list(c, "sites", arr);
}

int admin_sites_create(bc_tx *tx, struct admin_call *c)
{
	char id[ADMIN_ID_MAX];
	const char *name;
	json_t *data = NULL, *s = NULL;
	int rc;

	if ((rc = admin_check_fields(c, c->body, "site", NAME_ONLY)) != 0 ||
	    (rc = admin_get_name(c, c->body, "name", "site.name", 1, &name)) != 0)
		return rc;
	if ((rc = bc_new_id("site", id, sizeof(id))) != 0)
		return rc;
	bc_param p[] = {BC_TEXT(id), BC_TEXT(c->arg[0]), BC_TEXT(name), BC_INT(bc_tx_now_ms(tx))};
	rc = bc_tx_exec(
	    tx, "INSERT INTO sites (id, tenant_id, name, created_at) VALUES ($1, $2, $3, $4)", p, 4,
	    NULL);
	if (rc == BC_ERR_CONFLICT)
		return admin_fail(c, rc,
		                  "site.name: a site with this name already exists in the tenant");
	if (rc != 0)
		return rc;
	data = json_pack("{s:s, s:s}", "siteId", id, "name", name);
	if ((rc = admin_record(tx, c, c->arg[0], "site.created", id, data, 0)) != 0)
		goto out;
	if ((rc = admin_query_one(tx, SITE_SELECT "WHERE id = $1", p, 1, site_json, &s)) != 0)
		goto out;
	rc = admin_answer(c, 201, s);
out:
	json_decref(data);
	return rc;
}
