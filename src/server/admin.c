/* The admin API: routing, authentication, tenant scoping and answers. The handlers
 * of each kind of object are in admin_tenants.c, admin_pools.c, admin_tokens.c and
 * admin_nodes.c; shared checks and row conversions in admin_util.c. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/log.h"
#include "bc/secret.h"
#include "rows/api_keys.h"
#include "rows/tenants.h"
#include "server/admin_internal.h"
#include "server/admin_limit.h"

#define ACCESS_DENIED_MSG "a valid API key is required"
#define LAST_USED_MS      60000 /* last_used_at is written at most this often per key */

enum { R_BODY = 1, R_TENANT = 2 };

struct admin_route {
	const char *method;
	const char *pattern; /* "{x}" captures one path segment into arg[] */
	enum bc_tx_mode mode;
	unsigned flags; /* R_BODY: takes a JSON object; R_TENANT: arg[0] is a tenant */
	/* the least role a key needs to call the route: the one rule of who may do what,
	 * checked by run_call before anything else of the request is looked at */
	enum admin_role min_role;
	admin_fn fn;
	const char *const *query; /* allowed query parameters, NULL-terminated; NULL: none */
};

static const char *const EVENTS_QUERY[] = {"type", "limit",  "since", "until",
                                           "node", "cursor", NULL};
static const char *const AUDIT_QUERY[] = {"action", "limit",  "since", "until",
                                          "node",   "cursor", NULL};
static const char *const NODES_QUERY[] = {
    "pool",   "site", "role",  "state",  "attestor", "hostname",       "productUuid",
    "serial", "mac",  "after", "cursor", "limit",    "expiringWithin", NULL};
static const char *const PAGE_QUERY[] = {"cursor", "limit", NULL};
static const char *const JOIN_REQUESTS_QUERY[] = {"state", "cursor", "limit", NULL};

static const struct admin_route ROUTES[] = {
    {"GET", "/v1/whoami", BC_TX_READ, 0, ADMIN_ROLE_VIEWER, admin_whoami, NULL},
    {"GET", "/v1/daemon-config", BC_TX_READ, 0, ADMIN_ROLE_VIEWER, admin_daemon_config, NULL},
    {"GET", "/v1/server", BC_TX_READ, 0, ADMIN_ROLE_VIEWER, admin_server_facts, NULL},
    {"GET", "/v1/tenants", BC_TX_READ, 0, ADMIN_ROLE_VIEWER, admin_tenants_list, NULL},
    {"POST", "/v1/tenants", BC_TX_WRITE, R_BODY, ADMIN_ROLE_ADMIN, admin_tenants_create, NULL},
    {"DELETE", "/v1/tenants/{t}", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_ADMIN, admin_tenants_delete,
     NULL},
    {"GET", "/v1/tenants/{t}/api-keys", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER,
     admin_api_keys_list, NULL},
    {"POST", "/v1/tenants/{t}/api-keys/{id}/revoke", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_ADMIN,
     admin_api_keys_revoke, NULL},
    {"POST", "/v1/tenants/{t}/api-keys", BC_TX_WRITE, R_BODY | R_TENANT, ADMIN_ROLE_ADMIN,
     admin_api_keys_create, NULL},
    {"GET", "/v1/tenants/{t}/pools", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER, admin_pools_list,
     NULL},
    {"POST", "/v1/tenants/{t}/pools", BC_TX_WRITE, R_BODY | R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_pools_create, NULL},
    {"GET", "/v1/tenants/{t}/pools/{p}", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER, admin_pools_get,
     NULL},
    {"PATCH", "/v1/tenants/{t}/pools/{p}", BC_TX_WRITE, R_BODY | R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_pools_update, NULL},
    {"DELETE", "/v1/tenants/{t}/pools/{p}", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_pools_delete, NULL},
    {"GET", "/v1/tenants/{t}/sites", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER, admin_sites_list,
     NULL},
    {"POST", "/v1/tenants/{t}/sites", BC_TX_WRITE, R_BODY | R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_sites_create, NULL},
    {"GET", "/v1/tenants/{t}/sites/{id}", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_VIEWER, admin_sites_get,
     NULL},
    {"DELETE", "/v1/tenants/{t}/sites/{id}", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_sites_delete, NULL},
    {"POST", "/v1/tenants/{t}/sites/{id}/release-lease", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_sites_release_lease, NULL},
    {"GET", "/v1/tenants/{t}/tokens", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER, admin_tokens_list,
     PAGE_QUERY},
    {"POST", "/v1/tenants/{t}/tokens", BC_TX_WRITE, R_BODY | R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_tokens_create, NULL},
    {"POST", "/v1/tenants/{t}/tokens/{id}/revoke", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_tokens_revoke, NULL},
    {"GET", "/v1/tenants/{t}/nodes", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER, admin_nodes_list,
     NODES_QUERY},
    {"GET", "/v1/tenants/{t}/node-counts", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER,
     admin_nodes_counts, NULL},
    {"GET", "/v1/tenants/{t}/nodes/{n}", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER, admin_nodes_get,
     NULL},
    {"DELETE", "/v1/tenants/{t}/nodes/{n}", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_nodes_delete, NULL},
    {"POST", "/v1/tenants/{t}/nodes/{n}/cordon", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_nodes_cordon, NULL},
    {"POST", "/v1/tenants/{t}/nodes/{n}/uncordon", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_nodes_uncordon, NULL},
    {"POST", "/v1/tenants/{t}/nodes/{n}/revoke-identity", BC_TX_WRITE, R_TENANT,
     ADMIN_ROLE_OPERATOR, admin_nodes_revoke_identity, NULL},
    {"POST", "/v1/tenants/{t}/nodes/{n}/retire", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_nodes_retire, NULL},
    {"GET", "/v1/tenants/{t}/nodes/{n}/certificates", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER,
     admin_nodes_certificates, NULL},
    {"GET", "/v1/tenants/{t}/nodes/{n}/inventory", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER,
     admin_nodes_inventory, NULL},
    {"GET", "/v1/tenants/{t}/workflows", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER,
     admin_workflows_list, PAGE_QUERY},
    {"GET", "/v1/tenants/{t}/workflows/{w}", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER,
     admin_workflows_get, NULL},
    {"POST", "/v1/tenants/{t}/workflows/{w}/cancel", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_workflows_cancel, NULL},
    {"POST", "/v1/tenants/{t}/workflows/{w}/complete", BC_TX_WRITE, R_BODY | R_TENANT,
     ADMIN_ROLE_OPERATOR, admin_workflows_complete, NULL},
    {"POST", "/v1/tenants/{t}/machines/commission", BC_TX_WRITE, R_BODY | R_TENANT,
     ADMIN_ROLE_OPERATOR, admin_machines_commission, NULL},
    {"POST", "/v1/tenants/{t}/machines/deploy", BC_TX_WRITE, R_BODY | R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_machines_deploy, NULL},
    {"POST", "/v1/tenants/{t}/machines/enroll", BC_TX_WRITE, R_BODY | R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_machines_enroll, NULL},
    {"GET", "/v1/tenants/{t}/events", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER, admin_events_list,
     EVENTS_QUERY},
    {"GET", "/v1/tenants/{t}/audit", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER, admin_audit_list,
     AUDIT_QUERY},
    {"GET", "/v1/tenants/{t}/join-requests", BC_TX_READ, R_TENANT, ADMIN_ROLE_VIEWER,
     admin_join_requests_list, JOIN_REQUESTS_QUERY},
    {"POST", "/v1/tenants/{t}/join-requests/{id}/approve", BC_TX_WRITE, R_TENANT,
     ADMIN_ROLE_OPERATOR, admin_join_requests_approve, NULL},
    {"POST", "/v1/tenants/{t}/join-requests/{id}/deny", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_join_requests_deny, NULL},
    {"DELETE", "/v1/tenants/{t}/join-requests/{id}", BC_TX_WRITE, R_TENANT, ADMIN_ROLE_OPERATOR,
     admin_join_requests_delete, NULL},
};

/* /metrics (server.c) is for a root tenant's key of this role or above: the fleet's
 * refusal reasons are in it, across every tenant. */
#define METRICS_MIN_ROLE ADMIN_ROLE_METRICS

static const char *const ROLE_NAMES[] = {
    [ADMIN_ROLE_METRICS] = "metrics",
    [ADMIN_ROLE_VIEWER] = "viewer",
    [ADMIN_ROLE_OPERATOR] = "operator",
    [ADMIN_ROLE_ADMIN] = "admin",
};
#define N_ROLES (sizeof(ROLE_NAMES) / sizeof(ROLE_NAMES[0]))

const char *admin_role_name(enum admin_role role)
{
	return (size_t)role < N_ROLES ? ROLE_NAMES[role] : "none";
}

int admin_role_parse(const char *name, enum admin_role *out)
{
	for (size_t i = 0; name != NULL && i < N_ROLES; i++)
		if (strcmp(name, ROLE_NAMES[i]) == 0) {
			*out = (enum admin_role)i;
			return 0;
		}
	return BC_ERR_INVALID;
}

#ifdef BC_TESTING
int bc_admin_route_at(size_t i, const char **method, const char **pattern, const char **min_role)
{
	if (i >= sizeof(ROUTES) / sizeof(ROUTES[0]))
		return BC_ERR_NOT_FOUND;
	*method = ROUTES[i].method;
	*pattern = ROUTES[i].pattern;
	*min_role = admin_role_name(ROUTES[i].min_role);
	return 0;
}
#endif

/* ---- routing ---- */

static int id_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
}

/* A captured segment is an id: 1 to 63 of [a-z0-9_-]. Anything else matches no route. */
static int capture(const char *seg, size_t len, char *out)
{
	if (len == 0 || len >= ADMIN_ID_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!id_char(seg[i]))
			return 0;
	memcpy(out, seg, len);
	out[len] = '\0';
	return 1;
}

/* 1 when path matches pattern segment by segment; captures go to arg[]. */
static int match(const char *pattern, const char *path, char arg[][ADMIN_ID_MAX])
{
	size_t n = 0;

	while (*pattern == '/' && *path == '/') {
		const char *pe = strchrnul(pattern + 1, '/');
		const char *qe = strchrnul(path + 1, '/');
		size_t plen = (size_t)(pe - pattern - 1), qlen = (size_t)(qe - path - 1);

		if (pattern[1] == '{') {
			if (n == ADMIN_MAX_ARGS || !capture(path + 1, qlen, arg[n++]))
				return 0;
		} else if (plen != qlen || memcmp(pattern + 1, path + 1, plen) != 0) {
			return 0;
		}
		pattern = pe;
		path = qe;
	}
	return *pattern == '\0' && *path == '\0';
}

/* The route for the request; *known is 1 when the path exists with another method. */
static const struct admin_route *find_route(struct admin_call *c, int *known)
{
	const char *method = c->req->method ? c->req->method : "";
	const char *path = c->req->path ? c->req->path : "";

	*known = 0;
	for (size_t i = 0; i < sizeof(ROUTES) / sizeof(ROUTES[0]); i++) {
		if (!match(ROUTES[i].pattern, path, c->arg))
			continue;
		if (strcmp(ROUTES[i].method, method) == 0)
			return &ROUTES[i];
		*known = 1;
	}
	memset(c->arg, 0, sizeof(c->arg));
	return NULL;
}

/* ---- authentication ---- */

/* "Bearer bck_key_<26>_<43>": the key id and a pointer to the secret. */
static int parse_api_key(const char *authz, char key_id[ADMIN_ID_MAX], const char **secret)
{
	key_id[0] = '\0';
	*secret = NULL;
	if (strncasecmp(authz, "Bearer ", 7) != 0)
		return BC_ERR_INVALID;
	return bc_secret_parse_api_key(authz + 7, key_id, secret);
}

/* The key's row: usable when neither revoked nor expired at database time and of a
 * known role (*role); *last_used its last_used_at (0 when never). */
static int load_key(bc_tx *tx, const char *id, char tenant[ADMIN_ID_MAX], char hash[65],
                    int *usable, int64_t *last_used, enum admin_role *role)
{
	struct bc_api_key_auth k;
	int rc;

	*usable = 0;
	*last_used = 0;
	if ((rc = bc_row_api_key_auth(tx, id, &k)) == 1) {
		snprintf(tenant, ADMIN_ID_MAX, "%s", k.tenant_id);
		snprintf(hash, 65, "%s", k.secret_hash);
		*usable = !k.revoked && (!k.expires || k.expires_at > bc_tx_now_ms(tx)) &&
		          strlen(tenant) < ADMIN_ID_MAX - 1 && admin_role_parse(k.role, role) == 0;
		*last_used = k.last_used_at;
	}
	OPENSSL_cleanse(&k, sizeof(k));
	return rc < 0 ? rc : 0;
}

static int authenticate(bc_tx *tx, const char *authorization, char tenant_id[64], char key_id[64],
                        int64_t *last_used, enum admin_role *role)
{
	char id[ADMIN_ID_MAX], tenant[ADMIN_ID_MAX] = "";
	/* compared against when the key is unknown, so that both paths do the same work */
	char stored[65] = "0000000000000000000000000000000000000000000000000000000000000000";
	const char *secret;
	int rc, usable = 0, equal;

	tenant_id[0] = '\0';
	key_id[0] = '\0';
	if (authorization == NULL || parse_api_key(authorization, id, &secret) != 0)
		return BC_ERR_DENIED;
	*role = ADMIN_ROLE_METRICS;
	if ((rc = load_key(tx, id, tenant, stored, &usable, last_used, role)) != 0)
		return rc;
	if ((rc = equal = bc_secret_matches(secret, stored)) < 0)
		goto out;
	rc = 0;
	if (!equal || !usable) {
		rc = BC_ERR_DENIED;
		goto out;
	}
	memcpy(tenant_id, tenant, strlen(tenant) + 1);
	memcpy(key_id, id, strlen(id) + 1);
out:
	OPENSSL_cleanse(stored, sizeof(stored));
	return rc;
}

int bc_admin_authenticate(bc_tx *tx, const char *authorization, char tenant_id[64], char key_id[64])
{
	enum admin_role role;
	int64_t last_used;

	return authenticate(tx, authorization, tenant_id, key_id, &last_used, &role);
}

int bc_admin_authorize_metrics(bc_tx *tx, const char *authorization, int *authenticated)
{
	char tenant[ADMIN_ID_MAX], key[ADMIN_ID_MAX];
	enum admin_role role;
	int64_t last_used;
	int rc = authenticate(tx, authorization, tenant, key, &last_used, &role);

	*authenticated = rc == 0;
	if (rc != 0)
		return rc;
	return strcmp(tenant, ADMIN_ROOT_TENANT) == 0 && role >= METRICS_MIN_ROLE ? 0
	                                                                          : BC_ERR_DENIED;
}

int bc_admin_create_api_key(bc_tx *tx, const char *tenant_id, const char *name, char **key_out)
{
	return bc_admin_create_api_key_role(tx, tenant_id, name, ROLE_NAMES[ADMIN_ROLE_DEFAULT],
	                                    key_out);
}

int bc_admin_create_api_key_role(bc_tx *tx, const char *tenant_id, const char *name,
                                 const char *role, char **key_out)
{
	char id[ADMIN_ID_MAX], hash[65];
	char *whole = NULL;
	enum admin_role r;
	int rc;

	*key_out = NULL;
	if (tenant_id == NULL || name == NULL || admin_role_parse(role, &r) != 0)
		return BC_ERR_INVALID;
	if ((rc = bc_new_id("key", id, sizeof(id))) != 0)
		return rc;
	if ((rc = bc_secret_mint(BC_SECRET_API_KEY_PREFIX, id, &whole, hash)) != 0)
		return rc;
	if ((rc = bc_row_api_key_insert(tx, id, tenant_id, hash, name, role, bc_tx_now_ms(tx))) !=
	    0)
		goto out;
	*key_out = whole;
	whole = NULL;
out:
	if (whole != NULL)
		bc_freezero(whole, strlen(whole));
	return rc;
}

/* ---- the call, inside its transaction ---- */

static int check_query(struct admin_call *c, const char *const *allowed)
{
	const struct bc_http_request *req = c->req;

	for (size_t i = 0; i < req->n_query; i++) {
		const char *key = req->query_keys[i];
		int ok = 0;

		for (size_t j = 0; allowed != NULL && allowed[j] != NULL; j++)
			ok |= strcmp(allowed[j], key) == 0;
		for (size_t j = 0; j < i; j++)
			ok &= strcmp(req->query_keys[j], key) != 0;
		if (!ok)
			return admin_fail(c, BC_ERR_INVALID,
			                  "query.%s: unknown or repeated parameter",
			                  admin_safe(key));
	}
	return 0;
}

/* Routes without a body accept none or an empty object. */
static int parse_body(struct admin_call *c, int wants)
{
	char err[160] = "";

	if (c->req->body_len == 0)
		return wants ? admin_fail(c, BC_ERR_INVALID, "body: expected a JSON object") : 0;
	if (bc_json_parse(c->req->body, c->req->body_len, ADMIN_MAX_BODY, &c->body, err,
	                  sizeof(err)) != 0)
		return admin_fail(c, BC_ERR_INVALID,
		                  "body: not a valid JSON object of at most 64 KiB (%s)", err);
	if (!json_is_object(c->body))
		return admin_fail(c, BC_ERR_INVALID, "body: expected a JSON object");
	if (!wants && json_object_size(c->body) != 0)
		return admin_fail(c, BC_ERR_INVALID, "body: this request takes no fields");
	return 0;
}

/* Another tenant's path answers NOT_FOUND whether or not it exists. */
static int scope_tenant(bc_tx *tx, struct admin_call *c)
{
	int rc;

	if (!admin_is_root(c))
		return strcmp(c->arg[0], c->tenant_id) == 0
		           ? 0
		           : admin_fail(c, BC_ERR_NOT_FOUND, "tenant not found");
	if ((rc = bc_row_tenant_exists(tx, c->arg[0])) < 0)
		return rc;
	return rc == 0 ? admin_fail(c, BC_ERR_NOT_FOUND, "tenant not found") : 0;
}

struct admin_run {
	struct admin_call *c;
	const struct admin_route *route;
	int known;
	int authenticated; /* the key was good (whatever the handler then said) */
	int64_t last_used; /* the key's last_used_at */
	int64_t now_ms;
};

static void reset_call(struct admin_call *c)
{
	json_decref(c->answer);
	json_decref(c->body);
	c->answer = NULL;
	c->body = NULL;
	c->status = 0;
	c->err_status = 0;
	c->msg[0] = '\0';
	c->tenant_id[0] = '\0';
	c->key_id[0] = '\0';
	c->role = ADMIN_ROLE_METRICS;
}

static int run_call(bc_tx *tx, void *arg)
{
	struct admin_run *run = arg;
	struct admin_call *c = run->c;
	int rc;

	reset_call(c);
	run->authenticated = 0;
	if ((rc = authenticate(tx, c->req->authorization, c->tenant_id, c->key_id, &run->last_used,
	                       &c->role)) != 0)
		return rc;
	run->authenticated = 1;
	run->now_ms = bc_tx_now_ms(tx);
	snprintf(c->actor, sizeof(c->actor), "api:%s", c->key_id);
	if (run->route == NULL && run->known) {
		c->err_status = 405;
		return admin_fail(c, BC_ERR_INVALID, "method not allowed");
	}
	if (run->route == NULL)
		return admin_fail(c, BC_ERR_NOT_FOUND, "no such route");
	if (c->role < run->route->min_role) {
		c->err_status = 403;
		return admin_fail(
		    c, BC_ERR_DENIED, "this API key's role is %s: %s %s needs role %s or above%s",
		    admin_role_name(c->role), run->route->method, run->route->pattern,
		    admin_role_name(run->route->min_role),
		    c->role == ADMIN_ROLE_METRICS ? " (a metrics key may only GET /metrics)" : "");
	}
	if ((rc = check_query(c, run->route->query)) != 0)
		return rc;
	if ((rc = parse_body(c, run->route->flags & R_BODY)) != 0)
		return rc;
	if ((run->route->flags & R_TENANT) && (rc = scope_tenant(tx, c)) != 0)
		return rc;
	return run->route->fn(tx, c);
}

/* ---- answers ---- */

struct admin_error {
	int rc;
	int status;
	const char *code;
	const char *message; /* used when the handler said nothing */
};

static const struct admin_error ERRORS[] = {
    {BC_ERR_INVALID, 400, "INVALID_INPUT", "invalid input"},
    {BC_ERR_DENIED, 401, "ACCESS_DENIED", ACCESS_DENIED_MSG},
    {BC_ERR_NOT_FOUND, 404, "NOT_FOUND", "not found"},
    {BC_ERR_CONFLICT, 409, "CONFLICT", "conflict"},
    {BC_ERR_BUSY, 503, "UNAVAILABLE", "the database is busy; retry"},
    {BC_ERR_RETRY, 503, "UNAVAILABLE", "the database is busy; retry"},
    {BC_ERR_UNAVAILABLE, 503, "UNAVAILABLE", "the database is unavailable"},
};
static const struct admin_error INTERNAL = {BC_ERR_INTERNAL, 500, "INTERNAL", "internal error"};
static const char INTERNAL_BODY[] =
    "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"internal error\"}}";

static const struct admin_error *error_of(int rc)
{
	for (size_t i = 0; i < sizeof(ERRORS) / sizeof(ERRORS[0]); i++)
		if (ERRORS[i].rc == rc)
			return &ERRORS[i];
	return &INTERNAL;
}

/* {"error":{"code","message"}} with status; a 500 when out of memory. */
static void answer_json_error(struct bc_http_response *resp, int status, const char *code,
                              const char *msg)
{
	json_t *o = json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg);
	char *s = o ? bc_json_dump(o) : NULL;

	json_decref(o);
	if (s == NULL) {
		bc_http_set_body(resp, 500, "application/json", INTERNAL_BODY,
		                 strlen(INTERNAL_BODY));
		return;
	}
	resp->status = status;
	resp->content_type = "application/json";
	resp->body = (uint8_t *)s;
	resp->body_len = strlen(s);
}

static void answer_error(struct admin_call *c, int rc, struct bc_http_response *resp)
{
	const struct admin_error *e = error_of(rc);
	/* one message for every authentication failure: nothing to tell them apart */
	const char *msg = e->message;

	if (c->msg[0] && (rc != BC_ERR_DENIED || c->err_status == 403))
		msg = c->msg;
	/* BC_ERR_UNAVAILABLE's cause is said by the store, once a minute */
	if (e == &INTERNAL || (e->status == 503 && rc != BC_ERR_UNAVAILABLE))
		bc_log(BC_LOG_ERROR, "admin api failed", "method", c->req->method, "path",
		       c->req->path, "error", bc_err_str(rc), "detail", bc_store_errmsg(), NULL);
	answer_json_error(resp, c->err_status ? c->err_status : e->status, e->code, msg);
}

/* Authentication alone, in a read transaction: a write route is only begun for a key
 * that is good, so that unauthenticated requests take no write lock. */
static int authenticate_tx(bc_tx *tx, void *arg)
{
	struct admin_run *run = arg;
	struct admin_call *c = run->c;
	int rc;

	run->authenticated = 0;
	if ((rc = authenticate(tx, c->req->authorization, c->tenant_id, c->key_id, &run->last_used,
	                       &c->role)) == 0)
		run->authenticated = 1;
	run->now_ms = bc_tx_now_ms(tx);
	return rc;
}

static int touch_tx(bc_tx *tx, void *arg)
{
	const struct admin_run *run = arg;
	int64_t now = bc_tx_now_ms(tx);

	return bc_row_api_key_touch(tx, run->c->key_id, now, now - LAST_USED_MS);
}

/* A failed authentication: counted against the client's address, and logged with it
 * once per address and minute, and when the address reaches the limit. */
void bc_admin_limit_failed(const struct bc_admin_config *cfg, const struct bc_http_request *req)
{
	const char *peer = req->peer ? req->peer : "";
	int said = cfg->limiter ? bc_admin_limiter_fail(cfg->limiter, peer, bc_now_ms())
	                        : BC_ADMIN_LIMIT_FIRST;

	if (said == BC_ADMIN_LIMIT_REACHED)
		bc_log(BC_LOG_WARN, "admin authentication limited: too many failures", "peer", peer,
		       NULL);
	else if (said == BC_ADMIN_LIMIT_FIRST)
		bc_log(BC_LOG_WARN, "admin authentication failed", "peer", peer, "method",
		       req->method, "path", req->path, NULL);
}

int bc_admin_limit_blocked(const struct bc_admin_config *cfg, const struct bc_http_request *req,
                           struct bc_http_response *resp)
{
	char msg[160];
	int64_t wait_s = bc_admin_limiter_blocked(cfg->limiter, req->peer, bc_now_ms());

	if (wait_s <= 0)
		return 0;
	snprintf(msg, sizeof(msg),
	         "too many failed authentications from this address; retry in %lld s",
	         (long long)wait_s);
	answer_json_error(resp, 429, "RESOURCE_EXHAUSTED", msg);
	resp->retry_after_s = (unsigned)wait_s;
	return 1;
}

void bc_admin_handle(const struct bc_admin_config *cfg, const struct bc_http_request *req,
                     struct bc_http_response *resp)
{
	struct admin_call c;
	struct admin_run run = {&c, NULL, 0, 0, 0, 0};
	enum bc_tx_mode mode;
	char *s = NULL;
	int rc;

	memset(&c, 0, sizeof(c));
	c.cfg = cfg;
	c.req = req;
	if (bc_admin_limit_blocked(cfg, req, resp))
		return;
	run.route = find_route(&c, &run.known);
	mode = run.route ? run.route->mode : BC_TX_READ;
	rc = 0;
	if (mode == BC_TX_WRITE)
		rc = bc_store_run(cfg->store, BC_TX_READ, authenticate_tx, &run);
	if (rc == 0)
		rc = bc_store_run(cfg->store, mode, run_call, &run);
	if (rc == BC_ERR_DENIED && !run.authenticated)
		bc_admin_limit_failed(cfg, req);
	/* at most once a minute per key, and never for a key that failed */
	if (run.authenticated && run.last_used <= run.now_ms - LAST_USED_MS &&
	    bc_store_run(cfg->store, BC_TX_WRITE, touch_tx, &run) != 0)
		bc_log(BC_LOG_WARN, "api key last use not recorded", "keyId", c.key_id, "detail",
		       bc_store_errmsg(), NULL);
	if (rc == 0 && (s = bc_json_dump(c.answer)) == NULL)
		rc = BC_ERR_NOMEM;
	if (rc == 0) {
		resp->status = c.status;
		resp->content_type = "application/json";
		resp->body = (uint8_t *)s;
		resp->body_len = strlen(s);
	} else {
		answer_error(&c, rc, resp);
	}
	json_decref(c.answer);
	json_decref(c.body);
}

/* ---- whoami and the agent's pins ---- */

/* The caller's tenant, key and role, and "allows": every route its role may call as
 * "METHOD /v1/pattern", read from the route table, so that a console hides the rest. */
int admin_whoami(bc_tx *tx, struct admin_call *c)
{
	json_t *allows = json_array();
	char route[160];

	for (size_t i = 0; allows != NULL && i < sizeof(ROUTES) / sizeof(ROUTES[0]); i++) {
		if (c->role < ROUTES[i].min_role)
			continue;
		snprintf(route, sizeof(route), "%s %s", ROUTES[i].method, ROUTES[i].pattern);
		if (json_array_append_new(allows, json_string(route)) != 0) {
			json_decref(allows);
			allows = NULL;
		}
	}
	if (allows == NULL)
		return BC_ERR_NOMEM;
	return admin_answer(c, 200,
	                    json_pack("{s:s, s:s, s:s, s:o}", "tenantId", c->tenant_id, "keyId",
	                              c->key_id, "role", admin_role_name(c->role), "allows",
	                              allows));
}

/* What any key may know of the server it talks to: its version, trust domain, public
 * URL and the attestors it runs (a console's server facts). Read-only; no secret. */
int admin_server_facts(bc_tx *tx, struct admin_call *c)
{
	json_t *attestors = json_array();
	const char *id;

	(void)tx;
	if (attestors == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; c->cfg->attestor_at != NULL &&
	                   (id = c->cfg->attestor_at(c->cfg->attestor_ctx, i)) != NULL;
	     i++)
		if (json_array_append_new(attestors, json_string(id)) != 0) {
			json_decref(attestors);
			return BC_ERR_NOMEM;
		}
	return admin_answer(c, 200,
	                    json_pack("{s:s, s:s?, s:s?, s:o}", "version", BC_VERSION,
	                              "trustDomain", c->cfg->pki ? c->cfg->pki->trust_domain : NULL,
	                              "publicUrl", c->cfg->public_url, "attestors", attestors));
}

/* The TLS CA (when the bundle has one) then the node CA, as one PEM text. */
static int ca_bundle(const bc_pki *pki, char **out)
{
	char *tls = NULL, *node = NULL;
	int rc;

	*out = NULL;
	if (pki->tls_ca != NULL && (rc = bc_x509_to_pem(pki->tls_ca, &tls)) != 0)
		goto out;
	if ((rc = bc_x509_to_pem(pki->node_ca, &node)) != 0)
		goto out;
	if (asprintf(out, "%s%s", tls ? tls : "", node) < 0) {
		*out = NULL;
		rc = BC_ERR_NOMEM;
	}
out:
	free(tls);
	free(node);
	return rc;
}

static int daemon_config_object(const bc_pki *pki, const char *public_url, json_t **out)
{
	char *sign = NULL, *enc = NULL, *bundle = NULL, kid[65], enc_kid[65];
	EVP_PKEY *sign_key = NULL, *enc_key = NULL;
	int rc;

	*out = NULL;
	if (pki == NULL)
		return BC_ERR_INTERNAL;
	/* the current pair (rotated in the store): tokens are sealed to this key */
	if ((rc = bc_pki_join_current(pki, BC_JOIN_KEY_SIGNING, &sign_key, kid)) != 0 ||
	    (rc = bc_pki_join_current(pki, BC_JOIN_KEY_ENCRYPTION, &enc_key, enc_kid)) != 0 ||
	    (rc = bc_pubkey_to_pem(sign_key, &sign)) != 0 ||
	    (rc = bc_pubkey_to_pem(enc_key, &enc)) != 0 || (rc = ca_bundle(pki, &bundle)) != 0)
		goto out;
	*out = json_pack("{s:s?, s:s, s:s, s:s, s:s, s:s}", "server", public_url,
	                 "joinSigningKeyId", kid, "joinSigningKey", sign, "joinEncryptionKey", enc,
	                 "caBundle", bundle, "trustDomain", pki->trust_domain);
	if (*out == NULL)
		rc = BC_ERR_NOMEM;
out:
	EVP_PKEY_free(sign_key);
	EVP_PKEY_free(enc_key);
	free(sign);
	free(enc);
	free(bundle);
	return rc;
}

char *bc_admin_daemon_config_json(const bc_pki *pki, const char *public_url)
{
	json_t *o = NULL;
	char *s;

	if (daemon_config_object(pki, public_url, &o) != 0)
		return NULL;
	s = bc_json_dump(o);
	json_decref(o);
	return s;
}

int admin_daemon_config(bc_tx *tx, struct admin_call *c)
{
	json_t *o = NULL;
	int rc;

	if ((rc = daemon_config_object(c->cfg->pki, c->cfg->public_url, &o)) != 0)
		return rc;
	return admin_answer(c, 200, o);
}
