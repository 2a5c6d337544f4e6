/* Tenants, their API keys and their sites. */
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "rows/api_keys.h"
#include "rows/sites.h"
#include "rows/tenants.h"
#include "server/admin_internal.h"

static const char *const NAME_ONLY[] = {"name", NULL};
static const char *const API_KEY_FIELDS[] = {"name", "ttlSeconds", "role", NULL};

#define KEY_TTL_MIN_S 60
#define KEY_TTL_MAX_S (10LL * 365 * 24 * 3600)

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
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "id", bc_rows_text(r, 0),
	                 "tenantId", bc_rows_text(r, 1), "name", bc_rows_text(r, 2), "role",
	                 bc_rows_text(r, 7), "createdAt", admin_time(bc_rows_int(r, 3)),
	                 "expiresAt", admin_col_time(r, 4), "revokedAt", admin_col_time(r, 5),
	                 "lastUsedAt", admin_col_time(r, 6));
}

/* A list answer {"<key>": [...]} */
static int answer_list(struct admin_call *c, const char *key, json_t *arr)
{
	return admin_answer(c, 200, json_pack("{s:o}", key, arr));
}

int admin_tenants_list(bc_tx *tx, struct admin_call *c)
{
	json_t *arr = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_tenants_query(tx, admin_is_root(c) ? NULL : c->tenant_id, &r)) == 0)
		rc = admin_rows_list(r, tenant_json, &arr);
	return rc != 0 ? rc : answer_list(c, "tenants", arr);
}

int admin_tenants_create(bc_tx *tx, struct admin_call *c)
{
	char id[ADMIN_ID_MAX];
	const char *name;
	json_t *data = NULL, *t = NULL;
	bc_rows *r;
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
	rc = bc_row_tenant_insert(tx, id, name, bc_tx_now_ms(tx));
	if (rc == BC_ERR_CONFLICT)
		return admin_fail(c, rc, "tenant.name: a tenant with this name already exists");
	if (rc != 0)
		return rc;
	data = json_pack("{s:s, s:s}", "tenantId", id, "name", name);
	if ((rc = admin_record(tx, c, id, "tenant.created", id, data, 0)) != 0)
		goto out;
	if ((rc = bc_row_tenants_query(tx, id, &r)) != 0 ||
	    (rc = admin_rows_one(r, tenant_json, &t)) != 0)
		goto out;
	rc = admin_answer(c, 201, t);
out:
	json_decref(data);
	return rc;
}

/* apiKey.role: absent is ADMIN_ROLE_DEFAULT. No key makes a key of a role above its
 * own by construction: only admin, the greatest role, may call the route (admin.c). */
static int read_key_role(struct admin_call *c, enum admin_role *role)
{
	const char *name = NULL;
	int rc;

	*role = ADMIN_ROLE_DEFAULT;
	if ((rc = admin_get_text(c, c->body, "role", "apiKey.role", 0, 16, &name)) != 0)
		return rc;
	if (name != NULL && admin_role_parse(name, role) != 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "apiKey.role: expected admin, operator, viewer or metrics");
	return 0;
}

int admin_api_keys_create(bc_tx *tx, struct admin_call *c)
{
	char key_id[ADMIN_ID_MAX] = "";
	enum admin_role role;
	const char *name;
	char *key = NULL;
	json_t *data = NULL, *row = NULL;
	int64_t ttl_s = 0;
	bc_rows *r;
	int rc;

	if ((rc = admin_check_fields(c, c->body, "apiKey", API_KEY_FIELDS)) != 0 ||
	    (rc = admin_get_name(c, c->body, "name", "apiKey.name", 1, &name)) != 0 ||
	    (rc = admin_get_int(c, c->body, "ttlSeconds", "apiKey.ttlSeconds", KEY_TTL_MIN_S,
	                        KEY_TTL_MAX_S, 0, &ttl_s)) != 0 ||
	    (rc = read_key_role(c, &role)) != 0)
		return rc;
	if ((rc = bc_admin_create_api_key_role(tx, c->arg[0], name, admin_role_name(role), &key)) !=
	    0)
		return rc;
	/* "bck_" + the key id + "_" + secret */
	memcpy(key_id, key + 4, ADMIN_KEY_ID_LEN);
	key_id[ADMIN_KEY_ID_LEN] = '\0';
	if (ttl_s > 0 &&
	    (rc = bc_row_api_key_set_expiry(tx, key_id, bc_tx_now_ms(tx) + ttl_s * 1000)) != 0)
		goto out;
	if ((rc = bc_row_api_keys_query(tx, c->arg[0], key_id, &r)) != 0 ||
	    (rc = admin_rows_one(r, key_json, &row)) != 0)
		goto out;
	data = json_pack("{s:s, s:s, s:s, s:O}", "keyId", key_id, "name", name, "role",
	                 admin_role_name(role), "expiresAt", json_object_get(row, "expiresAt"));
	if ((rc = admin_record(tx, c, c->arg[0], "admin.key.created", key_id, data, 1)) != 0)
		goto out;
	rc = admin_answer(c, 201,
	                  json_pack("{s:s, s:s, s:s, s:s, s:O, s:s}", "id", key_id, "tenantId",
	                            c->arg[0], "name", name, "role", admin_role_name(role),
	                            "expiresAt", json_object_get(row, "expiresAt"), "key", key));
out:
	json_decref(data);
	json_decref(row);
	bc_freezero(key, strlen(key));
	return rc;
}

int admin_api_keys_list(bc_tx *tx, struct admin_call *c)
{
	json_t *arr = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_api_keys_query(tx, c->arg[0], NULL, &r)) != 0 ||
	    (rc = admin_rows_list(r, key_json, &arr)) != 0)
		return rc;
	return answer_list(c, "apiKeys", arr);
}

/* Revoking a revoked key answers it unchanged. The key revoked may be the caller's own:
 * its next request is refused. */
int admin_api_keys_revoke(bc_tx *tx, struct admin_call *c)
{
	int64_t changes = 0;
	json_t *data = NULL, *row = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_api_key_revoke(tx, c->arg[0], c->arg[1], bc_tx_now_ms(tx), &changes)) !=
	        0 ||
	    (rc = bc_row_api_keys_query(tx, c->arg[0], c->arg[1], &r)) != 0)
		return rc;
	if ((rc = admin_rows_one(r, key_json, &row)) != 0)
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
	bc_rows *r;
	int rc;

	if ((rc = bc_row_sites_query(tx, c->arg[0], NULL, &r)) != 0 ||
	    (rc = admin_rows_list(r, site_json, &arr)) != 0)
		return rc;
	return answer_list(c, "sites", arr);
}

int admin_sites_create(bc_tx *tx, struct admin_call *c)
{
	char id[ADMIN_ID_MAX];
	const char *name;
	json_t *data = NULL, *s = NULL;
	bc_rows *r;
	int rc;

	if ((rc = admin_check_fields(c, c->body, "site", NAME_ONLY)) != 0 ||
	    (rc = admin_get_name(c, c->body, "name", "site.name", 1, &name)) != 0)
		return rc;
	if ((rc = bc_new_id("site", id, sizeof(id))) != 0)
		return rc;
	rc = bc_row_site_insert(tx, id, c->arg[0], name, bc_tx_now_ms(tx));
	if (rc == BC_ERR_CONFLICT)
		return admin_fail(c, rc,
		                  "site.name: a site with this name already exists in the tenant");
	if (rc != 0)
		return rc;
	data = json_pack("{s:s, s:s}", "siteId", id, "name", name);
	if ((rc = admin_record(tx, c, c->arg[0], "site.created", id, data, 0)) != 0)
		goto out;
	if ((rc = bc_row_sites_query(tx, c->arg[0], id, &r)) != 0 ||
	    (rc = admin_rows_one(r, site_json, &s)) != 0)
		goto out;
	rc = admin_answer(c, 201, s);
out:
	json_decref(data);
	return rc;
}
