/* Pools: a name and a policy. The policy is an object replaced as a whole, of the keys
 * POLICY_FIELDS names: joinAttestors, which JoinService enforces at every join, and an
 * operator's note. Any other key is refused by name: a misspelt joinAttestors would
 * otherwise be kept and the pool admit every attestor. Each change is audited with
 * the pool's name and policy before and after. */
#include <stdlib.h>
#include <string.h>

#include "bc/json.h"
#include "bc/wire.h"
#include "rows/pools.h"
#include "server/admin_internal.h"

#define JOIN_ATTESTORS_MAX 16
/* the policy object is level 1; every object or array in it one more */
#define POLICY_DEPTH_MAX 8
#define BUILTIN_ATTESTOR BC_WIRE_ATTESTOR_JOIN_TOKEN

static const char *const POOL_FIELDS[] = {"name", "policy", NULL};
static const char *const POLICY_FIELDS[] = {"joinAttestors", "note", NULL};

static json_t *pool_json(bc_rows *r)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "id", bc_rows_text(r, 0), "tenantId",
	                 bc_rows_text(r, 1), "name", bc_rows_text(r, 2), "policy",
	                 admin_col_json(r, 3, "{}"), "createdAt", admin_time(bc_rows_int(r, 4)),
	                 "updatedAt", admin_time(bc_rows_int(r, 5)));
}

/* Without a callback, only the built-in attestor is known. */
static int attestor_known(const struct bc_admin_config *cfg, const char *id)
{
	if (cfg->attestor_known == NULL)
		return strcmp(id, BUILTIN_ATTESTOR) == 0;
	return cfg->attestor_known(cfg->attestor_ctx, id);
}

/* 1 when v nests objects and arrays more than left levels deep (the parser bounds
 * the recursion: 32 levels). */
static int deeper_than(const json_t *v, int left)
{
	const json_t *x;
	const char *k;
	size_t i;
	int deep = 0;

	if (!json_is_object(v) && !json_is_array(v))
		return 0;
	if (left == 0)
		return 1;
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			deep = deep || deeper_than(x, left - 1);
		}
		return deep;
	}
	json_object_foreach((json_t *)v, k, x)
	{
		deep = deep || deeper_than(x, left - 1);
	}
	return deep;
}

static int check_policy(struct admin_call *c, const json_t *policy)
{
	const json_t *list, *v;
	size_t i;
	int rc;

	if (!json_is_object(policy))
		return admin_fail(c, BC_ERR_INVALID, "pool.policy: expected an object");
	if (deeper_than(policy, POLICY_DEPTH_MAX))
		return admin_fail(c, BC_ERR_INVALID,
		                  "pool.policy: nested deeper than 8 levels of objects and arrays");
	if ((rc = admin_check_fields(c, policy, "pool.policy", POLICY_FIELDS)) != 0)
		return rc;
	if ((list = json_object_get(policy, "joinAttestors")) == NULL)
		return 0;
	if (!json_is_array(list) || json_array_size(list) < 1 ||
	    json_array_size(list) > JOIN_ATTESTORS_MAX)
		return admin_fail(
		    c, BC_ERR_INVALID,
		    "pool.policy.joinAttestors: expected an array of 1 to 16 attestor ids");
	json_array_foreach(list, i, v)
	{
		if (!json_is_string(v))
			return admin_fail(
			    c, BC_ERR_INVALID,
			    "pool.policy.joinAttestors[%zu]: expected an attestor id (a string)",
			    i);
		if (strlen(json_string_value(v)) != json_string_length(v) ||
		    !attestor_known(c->cfg, json_string_value(v)))
			return admin_fail(
			    c, BC_ERR_INVALID,
			    "pool.policy.joinAttestors[%zu]: not an attestor this server runs", i);
	}
	return 0;
}

/* The body's name and policy, both optional here; policy_text is malloc'd. */
static int read_pool_body(struct admin_call *c, int name_required, const char **name,
                          char **policy_text)
{
	const json_t *policy;
	int rc;

	*policy_text = NULL;
	if ((rc = admin_check_fields(c, c->body, "pool", POOL_FIELDS)) != 0 ||
	    (rc = admin_get_name(c, c->body, "name", "pool.name", name_required, name)) != 0)
		return rc;
	if ((policy = json_object_get(c->body, "policy")) == NULL)
		return 0;
	if ((rc = check_policy(c, policy)) != 0)
		return rc;
	return (*policy_text = bc_json_dump(policy)) == NULL ? BC_ERR_NOMEM : 0;
}

/* The pool's name and policy as an audit row records them: {"name","policy"}. */
static int pool_state(bc_tx *tx, struct admin_call *c, const char *id, json_t **out)
{
	json_t *pool = NULL;
	bc_rows *r;
	int rc;

	*out = NULL;
	if ((rc = bc_row_pools_query(tx, c->arg[0], id, &r)) == 0)
		rc = admin_rows_one(r, pool_json, &pool);
	if (rc != 0)
		return rc;
	*out = json_pack("{s:O, s:O}", "name", json_object_get(pool, "name"), "policy",
	                 json_object_get(pool, "policy"));
	json_decref(pool);
	return *out == NULL ? BC_ERR_NOMEM : 0;
}

static int answer_pool(bc_tx *tx, struct admin_call *c, const char *id, int status)
{
	json_t *pool = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_pools_query(tx, c->arg[0], id, &r)) == 0)
		rc = admin_rows_one(r, pool_json, &pool);
	if (rc == BC_ERR_NOT_FOUND)
		return admin_fail(c, rc, "pool not found");
	return rc != 0 ? rc : admin_answer(c, status, pool);
}

static int name_conflict(struct admin_call *c, int rc)
{
	if (rc == BC_ERR_CONFLICT)
		return admin_fail(c, rc,
		                  "pool.name: a pool with this name already exists in the tenant");
	return rc;
}

int admin_pools_list(bc_tx *tx, struct admin_call *c)
{
	json_t *arr = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_pools_query(tx, c->arg[0], NULL, &r)) != 0 ||
	    (rc = admin_rows_list(r, pool_json, &arr)) != 0)
		return rc;
	return admin_answer(c, 200, json_pack("{s:o}", "pools", arr));
}

int admin_pools_get(bc_tx *tx, struct admin_call *c)
{
	return answer_pool(tx, c, c->arg[1], 200);
}

int admin_pools_create(bc_tx *tx, struct admin_call *c)
{
	char id[ADMIN_ID_MAX];
	const char *name;
	char *policy = NULL;
	json_t *data = NULL, *after = NULL;
	int64_t now = bc_tx_now_ms(tx);
	int rc;

	if ((rc = read_pool_body(c, 1, &name, &policy)) != 0)
		goto out;
	if ((rc = bc_new_id("pool", id, sizeof(id))) != 0)
		goto out;
	rc = bc_row_pool_insert(tx, id, c->arg[0], name, policy ? policy : "{}", now);
	if ((rc = name_conflict(c, rc)) != 0)
		goto out;
	if ((rc = pool_state(tx, c, id, &after)) != 0)
		goto out;
	data = json_pack("{s:s, s:s, s:o}", "poolId", id, "name", name, "after", after);
	if (data == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = admin_record(tx, c, c->arg[0], "pool.created", id, data, 1)) != 0)
		goto out;
	rc = answer_pool(tx, c, id, 201);
out:
	json_decref(data);
	free(policy);
	return rc;
}

/* Applies the fields present; *changed lists them (a new array). */
static int update_pool(bc_tx *tx, struct admin_call *c, const char *name, const char *policy,
                       json_t *changed)
{
	int64_t now = bc_tx_now_ms(tx);
	int rc;

	if (name != NULL) {
		rc = bc_row_pool_set_name(tx, c->arg[1], name, now);
		if ((rc = name_conflict(c, rc)) != 0)
			return rc;
		if (json_array_append_new(changed, json_string("name")) != 0)
			return BC_ERR_NOMEM;
	}
	if (policy != NULL) {
		if ((rc = bc_row_pool_set_policy(tx, c->arg[1], policy, now)) != 0)
			return rc;
		if (json_array_append_new(changed, json_string("policy")) != 0)
			return BC_ERR_NOMEM;
	}
	return 0;
}

int admin_pools_update(bc_tx *tx, struct admin_call *c)
{
	const char *name;
	char *policy = NULL;
	json_t *changed = NULL, *data = NULL, *before = NULL, *after = NULL;
	int rc;

	if ((rc = read_pool_body(c, 0, &name, &policy)) != 0)
		goto out;
	if ((rc = bc_row_pool_lock(tx, c->arg[0], c->arg[1])) == 0)
		rc = admin_fail(c, BC_ERR_NOT_FOUND, "pool not found");
	if (rc < 0)
		goto out;
	if ((changed = json_array()) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = pool_state(tx, c, c->arg[1], &before)) != 0 ||
	    (rc = update_pool(tx, c, name, policy, changed)) != 0)
		goto out;
	if (json_array_size(changed) > 0) {
		if ((rc = pool_state(tx, c, c->arg[1], &after)) != 0)
			goto out;
		data = json_pack("{s:s, s:O, s:O, s:O}", "poolId", c->arg[1], "fields", changed,
		                 "before", before, "after", after);
		if (data == NULL) {
			rc = BC_ERR_NOMEM;
			goto out;
		}
		if ((rc = admin_record(tx, c, c->arg[0], "pool.updated", c->arg[1], data, 1)) != 0)
			goto out;
	}
	rc = answer_pool(tx, c, c->arg[1], 200);
out:
	json_decref(data);
	json_decref(changed);
	json_decref(before);
	json_decref(after);
	free(policy);
	return rc;
}
