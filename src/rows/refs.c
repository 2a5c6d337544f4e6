/* References to a pool, a site or a tenant (refs.h). */
#include "rows/refs.h"

#include <stdio.h>
#include <string.h>

#include "rows/leases.h"

/* One count: sql takes the owner's id as $1 and, when it names it, now_ms as $2
 * (PostgreSQL refuses a parameter a statement does not name). */
static int count(bc_tx *tx, const char *sql, const char *id, int64_t now_ms, int64_t *out)
{
	bc_param p[] = {BC_TEXT(id), BC_INT(now_ms)};

	return bc_tx_query_int(tx, sql, p, strstr(sql, "$2") != NULL ? 2 : 1, out);
}

/* The statements of one owner: its column in nodes, join_tokens and join_requests. */
struct owner_sql {
	const char *nodes, *tokens, *join_requests;
};

#define LIVE_TOKEN   "revoked_at IS NULL AND uses_left > 0 AND expires_at > $2"
#define OPEN_REQUEST "state IN ('pending', 'approved') AND expires_at > $2"

static const struct owner_sql OWNERS[] = {
    [BC_ROW_OWNER_POOL] =
        {
            "SELECT COUNT(*) FROM nodes WHERE pool_id = $1",
            "SELECT COUNT(*) FROM join_tokens WHERE pool_id = $1 AND " LIVE_TOKEN,
            "SELECT COUNT(*) FROM join_requests WHERE pool_id = $1 AND " OPEN_REQUEST,
        },
    [BC_ROW_OWNER_SITE] =
        {
            "SELECT COUNT(*) FROM nodes WHERE site_id = $1",
            "SELECT COUNT(*) FROM join_tokens WHERE site_id = $1 AND " LIVE_TOKEN,
            "SELECT COUNT(*) FROM join_requests WHERE site_id = $1 AND " OPEN_REQUEST,
        },
    [BC_ROW_OWNER_TENANT] =
        {
            "SELECT COUNT(*) FROM nodes WHERE tenant_id = $1",
            "SELECT COUNT(*) FROM join_tokens WHERE tenant_id = $1 AND " LIVE_TOKEN,
            "SELECT COUNT(*) FROM join_requests WHERE tenant_id = $1 AND " OPEN_REQUEST,
        },
};

static int count_tenant(bc_tx *tx, const char *id, int64_t now_ms, struct bc_row_refs *out)
{
	int rc;

	if ((rc = count(tx, "SELECT COUNT(*) FROM pools WHERE tenant_id = $1", id, now_ms,
	                &out->pools)) != 0 ||
	    (rc = count(tx, "SELECT COUNT(*) FROM sites WHERE tenant_id = $1", id, now_ms,
	                &out->sites)) != 0 ||
	    (rc = count(tx,
	                "SELECT COUNT(*) FROM api_keys WHERE tenant_id = $1 AND revoked_at IS "
	                "NULL AND (expires_at IS NULL OR expires_at > $2)",
	                id, now_ms, &out->api_keys)) != 0)
		return rc;
	return count(tx,
	             "SELECT COUNT(*) FROM workflows WHERE tenant_id = $1 AND state = 'running'",
	             id, now_ms, &out->workflows);
}

int bc_row_refs_count(bc_tx *tx, enum bc_row_owner owner, const char *id, int64_t now_ms,
                      struct bc_row_refs *out)
{
	const struct owner_sql *o;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((size_t)owner >= sizeof(OWNERS) / sizeof(OWNERS[0]))
		return BC_ERR_INVALID;
	o = &OWNERS[owner];
	if ((rc = count(tx, o->nodes, id, now_ms, &out->nodes)) != 0 ||
	    (rc = count(tx, o->tokens, id, now_ms, &out->tokens)) != 0 ||
	    (rc = count(tx, o->join_requests, id, now_ms, &out->join_requests)) != 0)
		return rc;
	return owner == BC_ROW_OWNER_TENANT ? count_tenant(tx, id, now_ms, out) : 0;
}

/* Statements run in order, each with the owner's id as $1. */
static int run_all(bc_tx *tx, const char *const *sql, size_t n, const char *id)
{
	bc_param p[] = {BC_TEXT(id)};
	int rc;

	for (size_t i = 0; i < n; i++)
		if ((rc = bc_tx_exec(tx, sql[i], p, 1, NULL)) != 0)
			return rc;
	return 0;
}

static const char *const DELETE_POOL[] = {
    "DELETE FROM join_tokens WHERE pool_id = $1",
    "DELETE FROM pools WHERE id = $1",
};
static const char *const DELETE_SITE[] = {
    "DELETE FROM join_tokens WHERE site_id = $1",
    "DELETE FROM sites WHERE id = $1",
};
static const char *const DELETE_TENANT[] = {
    "DELETE FROM join_tokens WHERE tenant_id = $1",
    "DELETE FROM join_requests WHERE tenant_id = $1",
    "DELETE FROM workflows WHERE tenant_id = $1",
    "DELETE FROM api_keys WHERE tenant_id = $1",
    "DELETE FROM tenants WHERE id = $1",
};

int bc_row_owner_delete(bc_tx *tx, enum bc_row_owner owner, const char *id)
{
	char lease[96];
	bc_param p[] = {BC_TEXT(lease)};
	int rc;

	switch (owner) {
	case BC_ROW_OWNER_POOL:
		return run_all(tx, DELETE_POOL, sizeof(DELETE_POOL) / sizeof(DELETE_POOL[0]), id);
	case BC_ROW_OWNER_SITE:
		snprintf(lease, sizeof(lease), BC_ROW_SITE_LEASE_FMT, id);
		if ((rc = bc_tx_exec(tx, "DELETE FROM leases WHERE name = $1", p, 1, NULL)) != 0)
			return rc;
		return run_all(tx, DELETE_SITE, sizeof(DELETE_SITE) / sizeof(DELETE_SITE[0]), id);
	case BC_ROW_OWNER_TENANT:
		return run_all(tx, DELETE_TENANT, sizeof(DELETE_TENANT) / sizeof(DELETE_TENANT[0]),
		               id);
	default: return BC_ERR_INVALID;
	}
}
