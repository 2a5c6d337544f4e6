/* Tenants, their API keys and their sites. */
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "server/admin_internal.h"

static const char *const NAME_ONLY[] = {"name", NULL};

#define TENANT_SELECT "SELECT id, name, created_at FROM tenants "
#define SITE_SELECT   "SELECT id, tenant_id, name, created_at FROM sites "

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
	json_t *data = NULL;
	int rc;

	if ((rc = admin_check_fields(c, c->body, "apiKey", NAME_ONLY)) != 0 ||
	    (rc = admin_get_name(c, c->body, "name", "apiKey.name", 1, &name)) != 0)
		return rc;
	if ((rc = bc_admin_create_api_key(tx, c->arg[0], name, &key)) != 0)
		return rc;
	/* "bck_" + the key id + "_" + secret */
	memcpy(key_id, key + 4, ADMIN_KEY_ID_LEN);
	key_id[ADMIN_KEY_ID_LEN] = '\0';
	data = json_pack("{s:s, s:s}", "keyId", key_id, "name", name);
	if ((rc = admin_record(tx, c, c->arg[0], "api-key.created", key_id, data, 0)) != 0)
		goto out;
	rc = admin_answer(c, 201,
	                  json_pack("{s:s, s:s, s:s, s:s}", "id", key_id, "tenantId", c->arg[0],
	                            "name", name, "key", key));
out:
	json_decref(data);
	bc_freezero(key, strlen(key));
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
