/* Join tokens: "bct_" + token id + "_" + base64url(32 random bytes). The store keeps
 * the hex sha256 of the secret part; the whole token is answered once, at creation. */
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/canon.h"
#include "bc/json.h"
#include "bc/wire.h"
#include "bc/secret.h"
#include "rows/pools.h"
#include "rows/sites.h"
#include "rows/tokens.h"
#include "server/admin_internal.h"

#define USES_MAX        10000
#define TTL_MIN_S       60
#define TTL_MAX_S       31536000
#define TTL_DEFAULT_S   3600
#define DESCRIPTION_MAX 256
#define SERIAL_MAX      128

static const char *const TOKEN_FIELDS[] = {"role",         "poolId",      "siteId",
                                           "uses",         "ttlSeconds",  "expect",
                                           "allowReclaim", "description", NULL};
static const char *const EXPECT_FIELDS[] = {"productUuid", "mac", "serial", NULL};

struct token_input {
	const char *role;
	const char *pool_id;
	const char *site_id;
	int64_t uses;
	int64_t ttl_s;
	const json_t *expect;
	int allow_reclaim;
	const char *description;
};

static json_t *expect_json(bc_rows *r, int col)
{
	json_t *e = admin_col_json(r, col, "{}");
	json_t *out;

	out = json_pack("{s:O?, s:O?, s:O?}", "productUuid", json_object_get(e, "productUuid"),
	                "mac", json_object_get(e, "mac"), "serial", json_object_get(e, "serial"));
	json_decref(e);
	return out;
}

static json_t *token_json(bc_rows *r)
{
	return json_pack(
	    "{s:s, s:s, s:o, s:o, s:s, s:I, s:I, s:o, s:o, s:o, s:b, s:o, s:o, s:o, s:o, s:o}",
	    "id", bc_rows_text(r, 0), "tenantId", bc_rows_text(r, 1), "poolId",
	    admin_col_text(r, 2), "siteId", admin_col_text(r, 3), "role", bc_rows_text(r, 4),
	    "usesLeft", (json_int_t)bc_rows_int(r, 5), "usesTotal", (json_int_t)bc_rows_int(r, 6),
	    "expiresAt", admin_time(bc_rows_int(r, 7)), "revokedAt", admin_col_time(r, 8), "expect",
	    expect_json(r, 9), "allowReclaim", bc_rows_int(r, 10) != 0, "description",
	    admin_col_text(r, 11), "createdAt", admin_time(bc_rows_int(r, 12)), "lastUsedAt",
	    admin_col_time(r, 13), "poolName", admin_col_text(r, 14), "siteName",
	    admin_col_text(r, 15));
}

/* ---- expect ---- */

/* A UUID or MAC in any case (a MAC with ':' or '-') is stored in its canonical form
 * (bc/canon.h): what the store keeps is what the join compares. The body is changed
 * in place, so a replayed handler sees the same. */
static int canon_field(struct admin_call *c, json_t *e, const char *key, const char *field,
                       int (*canon)(const char *, char *), const char *shape)
{
	char out[BC_UUID_LEN + 1];
	const char *v;
	int rc;

	if ((rc = admin_get_text(c, e, key, field, 0, BC_UUID_LEN, &v)) != 0 || v == NULL)
		return rc;
	if (canon(v, out) != 0)
		return admin_fail(c, BC_ERR_INVALID, "%s: expected %s", field, shape);
	return json_object_set_new(e, key, json_string(out)) != 0 ? BC_ERR_NOMEM : 0;
}

static int uuid_canon(const char *in, char *out)
{
	return bc_uuid_canon(in, out);
}

static int mac_canon(const char *in, char *out)
{
	return bc_mac_canon(in, out);
}

static int check_expect(struct admin_call *c, const json_t *e)
{
	const char *v;
	int rc;

	if (!json_is_object(e))
		return admin_fail(c, BC_ERR_INVALID, "token.expect: expected an object");
	if ((rc = admin_check_fields(c, e, "token.expect", EXPECT_FIELDS)) != 0)
		return rc;
	if ((rc = canon_field(c, (json_t *)e, "productUuid", "token.expect.productUuid", uuid_canon,
	                      "a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)")) != 0 ||
	    (rc = canon_field(c, (json_t *)e, "mac", "token.expect.mac", mac_canon,
	                      "a MAC address (six hex octets joined by ':' or '-')")) != 0)
		return rc;
	return admin_get_text(c, e, "serial", "token.expect.serial", 0, SERIAL_MAX, &v);
}

/* A provider bootstrap's token: one machine (its product UUID), one use, one pool. */
static int check_provisioned(struct admin_call *c, const struct token_input *in)
{
	if (in->pool_id == NULL)
		return admin_fail(c, BC_ERR_INVALID,
		                  "token.poolId: a provisioned token needs a pool");
	if (in->uses != 1)
		return admin_fail(c, BC_ERR_INVALID,
		                  "token.uses: a provisioned token is single-use (1)");
	if (in->expect == NULL || json_object_get(in->expect, "productUuid") == NULL)
		return admin_fail(
		    c, BC_ERR_INVALID,
		    "token.expect.productUuid: a provisioned token is bound to the "
		    "machine's product UUID (a deploy mints its own: machines deploy)");
	return 0;
}

/* ---- creation ---- */

static int read_token_body(struct admin_call *c, struct token_input *in)
{
	const json_t *b = c->body;
	int rc;

	memset(in, 0, sizeof(*in));
	if ((rc = admin_check_fields(c, b, "token", TOKEN_FIELDS)) != 0 ||
	    (rc = admin_get_text(c, b, "role", "token.role", 1, 16, &in->role)) != 0)
		return rc;
	if (strcmp(in->role, "node") != 0 && strcmp(in->role, "site") != 0 &&
	    strcmp(in->role, "provisioned") != 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "token.role: expected \"node\", \"site\" or \"provisioned\"");
	if ((rc = admin_get_text(c, b, "poolId", "token.poolId", 0, ADMIN_ID_MAX - 1,
	                         &in->pool_id)) != 0 ||
	    (rc = admin_get_text(c, b, "siteId", "token.siteId", 0, ADMIN_ID_MAX - 1,
	                         &in->site_id)) != 0 ||
	    (rc = admin_get_int(c, b, "uses", "token.uses", 1, USES_MAX, 1, &in->uses)) != 0 ||
	    (rc = admin_get_int(c, b, "ttlSeconds", "token.ttlSeconds", TTL_MIN_S, TTL_MAX_S,
	                        TTL_DEFAULT_S, &in->ttl_s)) != 0 ||
	    (rc = admin_get_bool(c, b, "allowReclaim", "token.allowReclaim", 0,
	                         &in->allow_reclaim)) != 0 ||
	    (rc = admin_get_text(c, b, "description", "token.description", 0, DESCRIPTION_MAX,
	                         &in->description)) != 0)
		return rc;
	if (strcmp(in->role, "node") == 0 && in->pool_id == NULL)
		return admin_fail(c, BC_ERR_INVALID, "token.poolId: a node token needs a pool");
	if (strcmp(in->role, "site") == 0 && in->site_id == NULL)
		return admin_fail(c, BC_ERR_INVALID, "token.siteId: a site token needs a site");
	if ((in->expect = json_object_get(b, "expect")) != NULL &&
	    (rc = check_expect(c, in->expect)) != 0)
		return rc;
	return strcmp(in->role, "provisioned") == 0 ? check_provisioned(c, in) : 0;
}

/* The pool and site named must be the tenant's. */
static int check_refs(bc_tx *tx, struct admin_call *c, const struct token_input *in)
{
	int rc;

	if (in->pool_id != NULL) {
		if ((rc = bc_row_pool_in_tenant(tx, c->arg[0], in->pool_id)) == 0)
			return admin_fail(c, BC_ERR_INVALID,
			                  "token.poolId: no such pool in this tenant");
		if (rc < 0)
			return rc;
	}
	if (in->site_id != NULL) {
		if ((rc = bc_row_site_in_tenant(tx, c->arg[0], in->site_id)) == 0)
			return admin_fail(c, BC_ERR_INVALID,
			                  "token.siteId: no such site in this tenant");
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int insert_token(bc_tx *tx, struct admin_call *c, const struct token_input *in,
                        const char *id, const char *hash)
{
	int64_t now = bc_tx_now_ms(tx);
	char *expect = NULL;
	int rc;

	if ((expect = in->expect ? bc_json_dump(in->expect) : strdup("{}")) == NULL)
		return BC_ERR_NOMEM;
	struct bc_token_write t = {
	    .id = id,
	    .tenant_id = c->arg[0],
	    .pool_id = in->pool_id,
	    .site_id = in->site_id,
	    .role = in->role,
	    .secret_hash = hash,
	    .uses = in->uses,
	    .expires_at = now + in->ttl_s * 1000,
	    .expect = expect,
	    .allow_reclaim = in->allow_reclaim,
	    .description = in->description,
	    .now_ms = now,
	};
	rc = bc_row_token_insert(tx, &t);
	free(expect);
	return rc;
}

int admin_tokens_create(bc_tx *tx, struct admin_call *c)
{
	struct token_input in;
	char id[ADMIN_ID_MAX], hash[65];
	char *secret = NULL;
	json_t *data = NULL, *token = NULL;
	bc_rows *r;
	int rc;

	if ((rc = read_token_body(c, &in)) != 0 || (rc = check_refs(tx, c, &in)) != 0)
		return rc;
	if ((rc = bc_new_id("tok", id, sizeof(id))) != 0 ||
	    (rc = bc_secret_mint(BC_WIRE_TOKEN_PREFIX, id, &secret, hash)) != 0)
		return rc;
	if ((rc = insert_token(tx, c, &in, id, hash)) != 0)
		goto out;
	data = json_pack("{s:s, s:s, s:s?, s:s?, s:I}", "tokenId", id, "role", in.role, "poolId",
	                 in.pool_id, "siteId", in.site_id, "uses", (json_int_t)in.uses);
	if ((rc = admin_record(tx, c, c->arg[0], "token.created", id, data, 1)) != 0)
		goto out;
	if ((rc = bc_row_tokens_query(tx, c->arg[0], id, &r)) != 0 ||
	    (rc = admin_rows_one(r, token_json, &token)) != 0)
		goto out;
	rc = admin_answer(c, 201, json_pack("{s:o, s:s}", "token", token, "secret", secret));
out:
	json_decref(data);
	bc_freezero(secret, strlen(secret));
	return rc;
}

/* ---- listing and revocation ---- */

int admin_tokens_list(bc_tx *tx, struct admin_call *c)
{
	struct admin_page pg;
	bc_rows *r;
	int rc;

	if ((rc = admin_query_page(c, &pg, "tokens", -1, 0, ADMIN_LIST_LIMIT_DEFAULT,
	                           ADMIN_LIST_LIMIT_MAX)) != 0 ||
	    (rc = bc_row_tokens_list(tx, c->arg[0], &pg.rows, &r)) != 0)
		return rc;
	return admin_page_answer(c, &pg, r, token_json, "tokens");
}

/* Revoking a revoked token answers it unchanged. */
int admin_tokens_revoke(bc_tx *tx, struct admin_call *c)
{
	int64_t changes = 0;
	json_t *data = NULL, *token = NULL;
	bc_rows *r;
	int rc;

	if ((rc = bc_row_token_revoke(tx, c->arg[0], c->arg[1], bc_tx_now_ms(tx), &changes)) != 0 ||
	    (rc = bc_row_tokens_query(tx, c->arg[0], c->arg[1], &r)) != 0)
		return rc;
	if ((rc = admin_rows_one(r, token_json, &token)) != 0)
		return rc == BC_ERR_NOT_FOUND ? admin_fail(c, rc, "token not found") : rc;
	if (changes > 0) {
		data = json_pack("{s:s}", "tokenId", c->arg[1]);
		if ((rc = admin_record(tx, c, c->arg[0], "token.revoked", c->arg[1], data, 1)) != 0)
			goto out;
	}
	rc = admin_answer(c, 200, token);
	token = NULL;
out:
	json_decref(data);
	json_decref(token);
	return rc;
}
