/* JoinService's policy, after an attestor's result and before any insert or reclaim:
 * which node the machine becomes, the pool's joinAttestors, the token's expect
 * binding and allowReclaim, the trusted hardware key and bindings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/canon.h"
#include "bc/json.h"
#include "bc/wire.h"
#include "join/internal.h"
#include "bc/reasons.h"
#include "rows/bindings.h"
#include "rows/nodes.h"
#include "rows/tokens.h"
#include "rows/pools.h"

/* Firmware placeholders: identical on every board of a model, so never a hardware key. */
static const char *const placeholder_uuids[] = {
    "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "03000200-0400-0500-0006-000700080009", "12345678-1234-5678-90ab-cddeefaabbcc",
    "4c4c4544-0000-0000-0000-000000000000",
};

/* Token joins trust the product UUID a machine reports as its hardware key, unless it
 * is a known placeholder: then the operator binds tokens with expect instead. */
static void derive_hwkey(const struct bc_claims *c, char out[BC_HWKEY_MAX])
{
	char u[BC_UUID_LEN + 1];

	out[0] = 0;
	if (bc_uuid_canon(c->product_uuid, u) != 0)
		return;
	for (size_t i = 0; i < sizeof(placeholder_uuids) / sizeof(*placeholder_uuids); i++)
		if (strcmp(u, placeholder_uuids[i]) == 0)
			return;
	snprintf(out, BC_HWKEY_MAX, "uuid:%s", u);
}

/* A refusal of policy: the reason, reported to the tenant it concerns. */
static void refuse_policy(struct bc_join_state *st, const char **reason, const char *why,
                          const char *tenant)
{
	*reason = why;
	if (tenant && tenant[0])
		snprintf(st->d.refusal_tenant, sizeof(st->d.refusal_tenant), "%s", tenant);
}

/* 1 when both are UUIDs (MACs) and name the same one, whatever the case of their
 * hex digits. */
static int same_uuid(const char *a, const char *b)
{
	char x[BC_UUID_LEN + 1], y[BC_UUID_LEN + 1];
	return bc_uuid_canon(a, x) == 0 && bc_uuid_canon(b, y) == 0 && strcmp(x, y) == 0;
}

static int same_mac(const char *a, const char *b)
{
	char x[BC_MAC_LEN + 1], y[BC_MAC_LEN + 1];
	return bc_mac_canon(a, x) == 0 && bc_mac_canon(b, y) == 0 && strcmp(x, y) == 0;
}

/* The token's expect binding: every field it sets must match the claims. */
static int check_expect(bc_tx *tx, struct bc_join_state *st, int *allow_reclaim,
                        const char **reason)
{
	const struct bc_claims *c = &st->in->claims;
	char *expect = NULL;
	json_t *e = NULL;
	const char *v;
	int rc, ok = 1;

	*allow_reclaim = 0;
	if ((rc = bc_row_token_expect(tx, st->d.out.result.token_id, &expect, allow_reclaim)) !=
	    1) {
		/* the attestor just locked this row: it is there */
		rc = rc < 0 ? rc : BC_ERR_INTERNAL;
		goto out;
	}
	rc = 0;
	if (bc_json_parse(expect, strlen(expect), 0, &e, NULL, 0) != 0 || !json_is_object(e)) {
		ok = 0;
		goto done;
	}
	if (bc_json_get_string(e, "productUuid", &v) == 0 && !same_uuid(v, c->product_uuid))
		ok = 0;
	if (bc_json_get_string(e, "serial", &v) == 0 && strcmp(v, c->serial) != 0)
		ok = 0;
	if (bc_json_get_string(e, "mac", &v) == 0) {
		int seen = 0;
		for (size_t i = 0; i < c->n_macs; i++)
			seen |= same_mac(v, c->macs[i]);
		ok &= seen;
	}
done:
	if (!ok)
		refuse_policy(st, reason, BC_R_EXPECT_MISMATCH, st->d.out.result.tenant_id);
out:
	json_decref(e);
	free(expect);
	return rc;
}

int bc_join_pool_admits(const char *policy_json, const char *attestor_id)
{
	json_t *policy = NULL, *list;
	int listed = 0;

	/* a policy the admin API validated cannot be unreadable: refuse, never admit */
	if (bc_json_parse(policy_json, strlen(policy_json), 0, &policy, NULL, 0) != 0)
		return 0;
	list = json_object_get(policy, "joinAttestors");
	if (list == NULL)
		listed = 1;
	for (size_t i = 0; json_is_array(list) && i < json_array_size(list); i++) {
		const char *id = json_string_value(json_array_get(list, i));
		listed |= id != NULL && strcmp(id, attestor_id) == 0;
	}
	json_decref(policy);
	return listed;
}

/* The pool's joinAttestors, when set, must list the attestor that admitted the machine. */
static int check_pool(bc_tx *tx, struct bc_join_state *st, const char *pool_id, const char **reason)
{
	const char *tenant = st->d.out.result.tenant_id;
	char pool_tenant[64], *pj = NULL;
	int rc;

	if ((rc = bc_row_pool_policy(tx, pool_id, pool_tenant, &pj)) < 0)
		goto out;
	if (rc == 0 || strcmp(pool_tenant, tenant) != 0) {
		refuse_policy(st, reason, BC_R_POOL_UNKNOWN, tenant);
		rc = 0;
		goto out;
	}
	rc = 0;
	if (!bc_join_pool_admits(pj, st->attestor->id))
		refuse_policy(st, reason, BC_R_POOL_ATTESTOR, tenant);
out:
	free(pj);
	return rc;
}

/* The node an attestor or a binding names: it exists, is not retired, and the
 * machine takes over its tenant, pool and site. */
static int target_named(bc_tx *tx, struct bc_join_state *st, const char *id, const char **reason)
{
	struct bc_attest_result *r = &st->d.out.result;
	struct bc_node_row n;
	int rc;

	if ((rc = bc_row_node_get(tx, BC_NODE_BY_ID, id, &n)) < 0)
		return rc;
	if (rc == 0) {
		refuse_policy(st, reason, BC_R_NODE_UNKNOWN, r->tenant_id);
		return 0;
	}
	if (strcmp(n.state, "retired") == 0) {
		refuse_policy(st, reason, BC_R_NODE_RETIRED, n.tenant_id);
		return 0;
	}
	snprintf(st->d.node_id, sizeof(st->d.node_id), "%s", n.id);
	snprintf(st->d.node_role, sizeof(st->d.node_role), "%s", n.role);
	snprintf(r->tenant_id, sizeof(r->tenant_id), "%s", n.tenant_id);
	snprintf(r->pool_id, sizeof(r->pool_id), "%s", n.pool_id);
	snprintf(r->site_id, sizeof(r->site_id), "%s", n.site_id);
	return 0;
}

static int bound_node(bc_tx *tx, const struct bc_attest_result *r, char out[BC_ID_MAX])
{
	struct bc_binding_row b;
	int rc;

	out[0] = 0;
	if (r->binding_kind[0] == 0)
		return 0;
	if ((rc = bc_row_binding_get(tx, r->binding_kind, r->binding_key, &b)) == 1)
		snprintf(out, BC_ID_MAX, "%s", b.node_id);
	return rc < 0 ? rc : 0;
}

/* 1. The node the attestor names, or the one its binding points to. */
static int named_node(bc_tx *tx, struct bc_join_state *st, const char **reason)
{
	const struct bc_attest_result *r = &st->d.out.result;
	char bound[BC_ID_MAX];
	int rc;

	if ((rc = bound_node(tx, r, bound)) != 0)
		return rc;
	if (r->node_id[0] && bound[0] && strcmp(bound, r->node_id) != 0) {
		refuse_policy(st, reason, BC_R_BOUND_ELSEWHERE, r->tenant_id);
		return 0;
	}
	const char *named = r->node_id[0] ? r->node_id : bound;
	if (named[0] == 0)
		return 0;
	if ((rc = target_named(tx, st, named, reason)) == 0 && *reason == NULL)
		st->d.reclaimed = 1;
	return rc;
}

/* The token's pool is the node's; or the token names none (discovery's) and the node is
 * a ramdisk an operator enrolled: booted again before its deploy, it stays enrolled (the
 * reclaim keeps its pool, whose policy then applies). */
static int same_pool(const struct bc_node_row *holder, const struct bc_attest_result *r)
{
	if (strcmp(holder->pool_id, r->pool_id) == 0)
		return 1;
	return r->pool_id[0] == 0 && strcmp(holder->role, "ramdisk") == 0 &&
	       strcmp(r->role, "ramdisk") == 0;
}

/* 3. The hardware key: another node holding it is this machine's old self. A key the
 * attestor proves is unique across the fleet; one taken from the claims only within the
 * tenant, so a machine of another tenant claiming the same UUID neither locks this one
 * out nor learns that it exists. allowReclaim takes back a node of the token's own pool
 * only. */
static int hardware_key(bc_tx *tx, struct bc_join_state *st, int allow_reclaim, const char **reason)
{
	const struct bc_attest_result *r = &st->d.out.result;
	struct bc_node_row holder;
	char *hwkey = st->d.hwkey;
	int rc;

	st->d.hwkey_claimed = r->hardware_key[0] == 0;
	if (!st->d.hwkey_claimed)
		snprintf(hwkey, BC_HWKEY_MAX, "%s", r->hardware_key);
	else
		derive_hwkey(&st->in->claims, hwkey);
	if (hwkey[0] == 0)
		return 0;
	rc = st->d.hwkey_claimed ? bc_row_node_get_claimed(tx, r->tenant_id, hwkey, &holder)
	                         : bc_row_node_get(tx, BC_NODE_BY_HARDWARE_KEY, hwkey, &holder);
	if (rc <= 0)
		return rc;
	if (strcmp(holder.id, st->d.node_id) == 0)
		return 0;
	/* a reclaim takes back the same machine in the same role: a token of another
	 * role would leave the certificate and the node row disagreeing */
	if (st->d.node_id[0] || !allow_reclaim || strcmp(holder.tenant_id, r->tenant_id) != 0 ||
	    !same_pool(&holder, r) || strcmp(holder.state, "retired") == 0 ||
	    strcmp(holder.role, r->role) != 0) {
		refuse_policy(st, reason, BC_R_RECLAIM, r->tenant_id);
		/* the operator finds the holder to delete it; another tenant's stays unnamed */
		if (strcmp(holder.tenant_id, r->tenant_id) == 0)
			snprintf(st->d.refusal_node, sizeof(st->d.refusal_node), "%s", holder.id);
		return 0;
	}
	if ((rc = target_named(tx, st, holder.id, reason)) == 0 && *reason == NULL)
		st->d.reclaimed = 1;
	return rc;
}

int bc_join_policy(bc_tx *tx, struct bc_join_state *st, const char **reason)
{
	const struct bc_attest_result *r = &st->d.out.result;
	int rc, allow_reclaim = 0;

	*reason = NULL;
	if (r->tenant_id[0] == 0 && r->node_id[0] == 0) {
		*reason = BC_R_ATTESTOR_NO_TENANT;
		return 0;
	}
	if ((rc = named_node(tx, st, reason)) != 0 || *reason)
		return rc;
	/* 2. the token's expect binding and reclaim flag, for every token-based attestor */
	if (r->token_id[0] && ((rc = check_expect(tx, st, &allow_reclaim, reason)) != 0 || *reason))
		return rc;
	if ((rc = hardware_key(tx, st, allow_reclaim, reason)) != 0 || *reason)
		return rc;
	/* 4. the pool, resolved last: a reclaim keeps the node's pool, and its policy
	 * applies to every way in */
	if (r->pool_id[0] && ((rc = check_pool(tx, st, r->pool_id, reason)) != 0 || *reason))
		return rc;
	/* 5. a ramdisk node leaves its role only as a node of the pool an operator enrolled
	 * it in (machines enroll, then deploy): a discovered machine is no node of a pool
	 * until then, and never a site node */
	if (st->d.reclaimed && strcmp(st->d.node_role, "ramdisk") == 0 &&
	    strcmp(r->role, "ramdisk") != 0) {
		if (r->pool_id[0] == 0 || strcmp(r->role, "node") != 0) {
			refuse_policy(st, reason, BC_R_NOT_ENROLLED, r->tenant_id);
			return 0;
		}
		st->d.role_change = 1;
	}
	/* a statement no verifier proves again would leave a certificate that cannot renew */
	if (r->node_key_uri[0] && bc_join_find_statement(st->svc, r->node_key_uri) == NULL) {
		refuse_policy(st, reason, BC_R_NODE_KEY_STATEMENT, r->tenant_id);
		return 0;
	}
	if (st->d.node_id[0] == 0)
		return bc_new_id("node", st->d.node_id, BC_ID_MAX);
	return 0;
}
