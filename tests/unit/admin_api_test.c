/* The admin API (docs/admin-api.md) driven through bc_admin_handle() against a
 * temporary SQLite store: every route, the validation rules, authentication,
 * tenant scoping, tokens shown once, node operations and their events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/store.h"
#include "bc/wire.h"
#include "server/admin.h"
#include "server/admin_limit.h"

#define PUBLIC_URL "https://cp.test.example:8443"

static struct {
	char dir[64];
	char db[96];
	bc_store *store;
	bc_pki *pki;
	struct bc_admin_config cfg;
	char root_auth[192];
	const char *peer; /* the client's address; NULL: 127.0.0.1 */
} F;

static int attestor_known(void *ctx, const char *id)
{
	return strcmp(id, "join-token") == 0 || strcmp(id, "tpm") == 0 ||
	       strcmp(id, "x509pop") == 0;
}

/* ---- the store ---- */

struct sqlx {
	const char *sql;
	const bc_param *p;
	size_t n;
	int64_t i;
	char *text;
	const char *tenant;
	char *key;
};

static int exec_fn(bc_tx *tx, void *arg)
{
	struct sqlx *x = arg;
	return bc_tx_exec(tx, x->sql, x->p, x->n, NULL);
}

static int int_fn(bc_tx *tx, void *arg)
{
	struct sqlx *x = arg;
	return bc_tx_query_int(tx, x->sql, x->p, x->n, &x->i);
}

static int text_fn(bc_tx *tx, void *arg)
{
	struct sqlx *x = arg;
	return bc_tx_query_text(tx, x->sql, x->p, x->n, &x->text);
}

static void sql(const char *s, const bc_param *p, size_t n)
{
	struct sqlx x = {s, p, n, 0, NULL, NULL, NULL};
	assert_int_equal(bc_store_run(F.store, BC_TX_WRITE, exec_fn, &x), 0);
}

static int64_t sql_int(const char *s, const bc_param *p, size_t n)
{
	struct sqlx x = {s, p, n, 0, NULL, NULL, NULL};
	assert_int_equal(bc_store_run(F.store, BC_TX_READ, int_fn, &x), 0);
	return x.i;
}

static char *sql_text(const char *s, const bc_param *p, size_t n)
{
	struct sqlx x = {s, p, n, 0, NULL, NULL, NULL};
	assert_int_equal(bc_store_run(F.store, BC_TX_READ, text_fn, &x), 0);
	return x.text;
}

static int key_fn(bc_tx *tx, void *arg)
{
	struct sqlx *x = arg;
	return bc_admin_create_api_key(tx, x->tenant, "test key", &x->key);
}

static int setup(void **state)
{
	memset(&F.dir, 0, sizeof(F.dir));
	snprintf(F.dir, sizeof(F.dir), "/tmp/bc-admin-XXXXXX");
	assert_non_null(mkdtemp(F.dir));
	snprintf(F.db, sizeof(F.db), "%s/bc.db", F.dir);
	char err[256];
	assert_int_equal(bc_store_open(F.db, &F.store, err, sizeof(err)), 0);
	bc_param p[] = {BC_INT(1000)};
	sql("INSERT INTO tenants (id, name, created_at) VALUES ('root', 'root', $1)", p, 1);
	struct sqlx x = {.tenant = "root"};
	assert_int_equal(bc_store_run(F.store, BC_TX_WRITE, key_fn, &x), 0);
	assert_non_null(x.key);
	snprintf(F.root_auth, sizeof(F.root_auth), "Bearer %s", x.key);
	free(x.key);
	F.cfg.store = F.store;
	F.cfg.pki = F.pki;
	F.cfg.public_url = PUBLIC_URL;
	F.cfg.attestor_known = attestor_known;
	return 0;
}

static int teardown(void **state)
{
	char path[160];
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};

	bc_store_close(F.store);
	F.store = NULL;
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s%s", F.db, suffixes[i]);
		unlink(path);
	}
	rmdir(F.dir);
	bc_admin_limiter_free(F.cfg.limiter);
	F.cfg.limiter = NULL;
	F.peer = NULL;
	bc_clock_set_offset_ms(0);
	return 0;
}

static int group_setup(void **state)
{
	return bc_pki_generate("test.example", &F.pki);
}

static int group_teardown(void **state)
{
	bc_pki_free(F.pki);
	return 0;
}

/* ---- calls ---- */

/* Calls method url (with an optional ?k=v&k=v query) and returns the status; *out is
 * the answer's JSON (the caller decrefs). */
/* The Retry-After of the last answer call() got (0: none). */
static unsigned last_retry_after;

static int call(const char *auth, const char *method, const char *url, const char *body,
                json_t **out)
{
	char path[512], query[512];
	const char *keys[8], *vals[8];
	size_t n = 0;
	char *q = strchr(url, '?');
	struct bc_http_response resp = {0};
	json_error_t je;

	snprintf(path, sizeof(path), "%.*s", q ? (int)(q - url) : (int)strlen(url), url);
	snprintf(query, sizeof(query), "%s", q ? q + 1 : "");
	for (char *save = NULL, *kv = strtok_r(query, "&", &save); kv && n < 8;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (eq)
			*eq = '\0';
		keys[n] = kv;
		vals[n++] = eq ? eq + 1 : "";
	}
	struct bc_http_request req = {
	    .method = method,
	    .path = path,
	    .content_type = "application/json",
	    .authorization = auth ? auth : "",
	    .body = (const uint8_t *)body,
	    .body_len = body ? strlen(body) : 0,
	    .peer = F.peer ? F.peer : "127.0.0.1",
	    .query_keys = keys,
	    .query_vals = vals,
	    .n_query = n,
	};
	bc_admin_handle(&F.cfg, &req, &resp);
	last_retry_after = resp.retry_after_s;
	assert_non_null(resp.body);
	assert_string_equal(resp.content_type, "application/json");
	*out = json_loadb((const char *)resp.body, resp.body_len, JSON_REJECT_DUPLICATES, &je);
	if (*out == NULL)
		fail_msg("answer is not JSON: %.*s", (int)resp.body_len, (const char *)resp.body);
	free(resp.body);
	return resp.status;
}

static const char *str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		fail_msg("%s: not a string", key);
	return json_string_value(v);
}

/* Asserts an error answer: status, code and a message starting with prefix. */
static void expect_error(const char *auth, const char *method, const char *url, const char *body,
                         int status, const char *code, const char *prefix)
{
	json_t *j;
	int got = call(auth, method, url, body, &j);
	const json_t *e = json_object_get(j, "error");

	if (got != status)
		fail_msg("%s %s %s: status %d, want %d: %s", method, url, body ? body : "", got,
		         status, json_dumps(j, 0));
	assert_non_null(e);
	assert_int_equal(json_object_size(j), 1);
	assert_int_equal(json_object_size(e), 2);
	assert_string_equal(str(e, "code"), code);
	if (prefix != NULL && strncmp(str(e, "message"), prefix, strlen(prefix)) != 0)
		fail_msg("%s %s %s: message \"%s\", want it to start with \"%s\"", method, url,
		         body ? body : "", str(e, "message"), prefix);
	json_decref(j);
}

static void expect_invalid(const char *auth, const char *method, const char *url, const char *body,
                           const char *field)
{
	expect_error(auth, method, url, body, 400, "INVALID_INPUT", field);
}

/* A call that must succeed with status; returns the answer. */
static json_t *ok(const char *auth, const char *method, const char *url, const char *body,
                  int status)
{
	json_t *j;
	int got = call(auth, method, url, body, &j);

	if (got != status)
		fail_msg("%s %s: status %d, want %d: %s", method, url, got, status,
		         json_dumps(j, 0));
	return j;
}

static void create_pool(const char *auth, const char *tenant, const char *name, char id[64])
{
	char url[128], body[256];

	snprintf(url, sizeof(url), "/v1/tenants/%s/pools", tenant);
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", name);
	json_t *j = ok(auth, "POST", url, body, 201);
	snprintf(id, 64, "%s", str(j, "id"));
	json_decref(j);
}

/* A second tenant and a key of it. */
static void create_tenant(const char *name, char id[64], char auth[192])
{
	char url[128], body[128];

	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", name);
	json_t *t = ok(F.root_auth, "POST", "/v1/tenants", body, 201);
	snprintf(id, 64, "%s", str(t, "id"));
	json_decref(t);
	snprintf(url, sizeof(url), "/v1/tenants/%s/api-keys", id);
	json_t *k = ok(F.root_auth, "POST", url, "{\"name\":\"ops\"}", 201);
	snprintf(auth, 192, "Bearer %s", str(k, "key"));
	json_decref(k);
}

static size_t count_events(const char *tenant, const char *type)
{
	bc_param p[] = {BC_TEXT(tenant), BC_TEXT(type)};
	return (size_t)sql_int("SELECT COUNT(*) FROM events WHERE tenant_id = $1 AND type = $2", p,
	                       2);
}

static size_t count_audit(const char *tenant, const char *action)
{
	bc_param p[] = {BC_TEXT(tenant), BC_TEXT(action)};
	return (size_t)sql_int("SELECT COUNT(*) FROM audit WHERE tenant_id = $1 AND action = $2 "
	                       "AND actor LIKE 'api:key_%'",
	                       p, 2);
}

/* ---- authentication and routing ---- */

static void test_authentication(void **state)
{
	static const char msg[] = "a valid API key is required";
	char wrong[192], unknown[192];
	size_t n = strlen(F.root_auth);

	json_t *j = ok(F.root_auth, "GET", "/v1/whoami", NULL, 200);
	assert_string_equal(str(j, "tenantId"), "root");
	assert_int_equal(strncmp(str(j, "keyId"), "key_", 4), 0);
	assert_int_equal(strlen(str(j, "keyId")), 30);
	assert_memory_equal(str(j, "keyId"), F.root_auth + 11, 30);
	json_decref(j);

	/* the wrong secret: its last character changed */
	snprintf(wrong, sizeof(wrong), "%s", F.root_auth);
	wrong[n - 1] = wrong[n - 1] == 'A' ? 'B' : 'A';
	/* an unknown key id with the right secret */
	snprintf(unknown, sizeof(unknown), "%s", F.root_auth);
	unknown[15] = unknown[15] == 'z' ? 'y' : 'z';

	const char *bad[] = {
	    NULL,
	    "",
	    "Bearer",
	    "Bearer ",
	    "Basic cm9vdDpyb290",
	    "Bearer bck_",
	    "Bearer bct_key_00000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "Bearer bck_key_0000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "Bearer bck_key_00000000000000000000000000_AAAA",
	    "Bearer bck_key_00000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+",
	    wrong,
	    unknown};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expect_error(bad[i], "GET", "/v1/whoami", NULL, 401, "ACCESS_DENIED", msg);
		expect_error(bad[i], "GET", "/v1/tenants/root/pools", NULL, 401, "ACCESS_DENIED",
		             msg);
		/* nothing about routes or bodies is told before the key is checked */
		expect_error(bad[i], "GET", "/v1/nope", NULL, 401, "ACCESS_DENIED", msg);
		expect_error(bad[i], "POST", "/v1/tenants", "not json", 401, "ACCESS_DENIED", msg);
	}

	/* a revoked key */
	sql("UPDATE api_keys SET revoked_at = 5", NULL, 0);
	expect_error(F.root_auth, "GET", "/v1/whoami", NULL, 401, "ACCESS_DENIED", msg);
}

static void test_routing(void **state)
{
	expect_error(F.root_auth, "GET", "/v1/nope", NULL, 404, "NOT_FOUND", NULL);
	expect_error(F.root_auth, "GET", "/v1/tenants/root/pools/", NULL, 404, "NOT_FOUND", NULL);
	expect_error(F.root_auth, "GET", "/v1/tenants/ROOT/pools", NULL, 404, "NOT_FOUND", NULL);
	expect_error(F.root_auth, "GET", "/v1/tenants/root/pools/a/b", NULL, 404, "NOT_FOUND",
	             NULL);
	expect_error(F.root_auth, "GET", "/v2/whoami", NULL, 404, "NOT_FOUND", NULL);
	expect_error(F.root_auth, "GET", "/v1/tenants/nope/pools", NULL, 404, "NOT_FOUND",
	             "tenant not found");
	json_t *j;
	assert_int_equal(call(F.root_auth, "DELETE", "/v1/tenants", NULL, &j), 405);
	json_decref(j);
	assert_int_equal(call(F.root_auth, "PUT", "/v1/tenants/root/pools", "{}", &j), 405);
	json_decref(j);
	assert_int_equal(call(F.root_auth, "GET", "/v1/tenants/root/nodes/node_x/cordon", NULL, &j),
	                 405);
	json_decref(j);
	/* query parameters only where the route takes them */
	expect_invalid(F.root_auth, "GET", "/v1/whoami?x=1", NULL, "query.x");
	expect_invalid(F.root_auth, "GET", "/v1/tenants/root/events?limit=1&limit=2", NULL,
	               "query.limit");
	/* routes without a body take none, or an empty object */
	j = ok(F.root_auth, "GET", "/v1/whoami", "{}", 200);
	json_decref(j);
	expect_invalid(F.root_auth, "GET", "/v1/whoami", "{\"a\":1}", "body");
	expect_invalid(F.root_auth, "GET", "/v1/whoami", "[]", "body");
}

/* ---- tenants, keys and sites ---- */

static void test_tenants(void **state)
{
	char acme[64], acme_auth[192];

	json_t *j = ok(F.root_auth, "GET", "/v1/tenants", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(j, "tenants")), 1);
	json_t *t = json_array_get(json_object_get(j, "tenants"), 0);
	assert_string_equal(str(t, "id"), "root");
	assert_string_equal(str(t, "name"), "root");
	assert_string_equal(str(t, "createdAt"), "1970-01-01T00:00:01.000Z");
	json_decref(j);

	create_tenant("acme", acme, acme_auth);
	assert_int_equal(strncmp(acme, "tnt_", 4), 0);
	assert_int_equal(count_audit(acme, "tenant.created"), 1);
	assert_int_equal(count_audit(acme, "admin.key.created"), 1);
	expect_error(F.root_auth, "POST", "/v1/tenants", "{\"name\":\"acme\"}", 409, "CONFLICT",
	             "tenant.name");

	/* the root key lists both; acme's key only its own */
	j = ok(F.root_auth, "GET", "/v1/tenants", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(j, "tenants")), 2);
	json_decref(j);
	j = ok(acme_auth, "GET", "/v1/tenants", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(j, "tenants")), 1);
	assert_string_equal(str(json_array_get(json_object_get(j, "tenants"), 0), "id"), acme);
	json_decref(j);
	j = ok(acme_auth, "GET", "/v1/whoami", NULL, 200);
	assert_string_equal(str(j, "tenantId"), acme);
	json_decref(j);

	/* only root creates tenants */
	expect_error(acme_auth, "POST", "/v1/tenants", "{\"name\":\"other\"}", 403, "ACCESS_DENIED",
	             "only a key of the root tenant");

	/* validation */
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{}", "tenant.name: required");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{\"name\":\"\"}", "tenant.name");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{\"name\":7}", "tenant.name");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{\"name\":\"a\\nb\"}", "tenant.name");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{\"name\":\"x\",\"id\":\"root\"}",
	               "tenant.id: unknown field");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "", "body");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{\"name\":", "body");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "[\"name\"]", "body");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{\"name\":\"a\",\"name\":\"b\"}",
	               "body");
	/* invalid UTF-8: the parser's message quotes it, the answer stays JSON */
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{\"o\\\xd8\x9e\x92\xa3:}", "body");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", "{\"name\":\"\xff\xfe\"}", "body");
	char big[300];
	memset(big, 0, sizeof(big));
	strcpy(big, "{\"name\":\"");
	memset(big + 9, 'n', 129);
	strcat(big, "\"}");
	expect_invalid(F.root_auth, "POST", "/v1/tenants", big, "tenant.name");
}

static void test_api_keys(void **state)
{
	char acme[64], acme_auth[192], url[128];

	create_tenant("acme", acme, acme_auth);
	/* a tenant's key makes more keys for its tenant, not for another */
	snprintf(url, sizeof(url), "/v1/tenants/%s/api-keys", acme);
	json_t *k = ok(acme_auth, "POST", url, "{\"name\":\"ci\"}", 201);
	assert_string_equal(str(k, "tenantId"), acme);
	assert_string_equal(str(k, "name"), "ci");
	assert_int_equal(strncmp(str(k, "key"), "bck_", 4), 0);
	assert_memory_equal(str(k, "key") + 4, str(k, "id"), 30);
	char auth[192];
	snprintf(auth, sizeof(auth), "Bearer %s", str(k, "key"));
	json_t *w = ok(auth, "GET", "/v1/whoami", NULL, 200);
	assert_string_equal(str(w, "tenantId"), acme);
	assert_string_equal(str(w, "keyId"), str(k, "id"));
	json_decref(w);
	/* the store keeps sha256 of the secret, not the key */
	bc_param p[] = {BC_TEXT(str(k, "id"))};
	char *hash = sql_text("SELECT secret_hash FROM api_keys WHERE id = $1", p, 1);
	const char *secret = str(k, "key") + 35;
	uint8_t d[32];
	char hex[65];
	assert_int_equal(bc_sha256(secret, strlen(secret), d), 0);
	bc_hex_encode_to(d, 32, hex);
	assert_string_equal(hash, hex);
	free(hash);
	json_decref(k);

	expect_error(acme_auth, "POST", "/v1/tenants/root/api-keys", "{\"name\":\"x\"}", 404,
	             "NOT_FOUND", "tenant not found");
	expect_invalid(acme_auth, "POST", url, "{\"name\":\"x\",\"tenantId\":\"root\"}",
	               "apiKey.tenantId: unknown field");
	expect_invalid(acme_auth, "POST", url, "{}", "apiKey.name");
}

static void test_sites(void **state)
{
	json_t *s = ok(F.root_auth, "POST", "/v1/tenants/root/sites", "{\"name\":\"fra1\"}", 201);
	assert_int_equal(strncmp(str(s, "id"), "site_", 5), 0);
	assert_string_equal(str(s, "tenantId"), "root");
	assert_string_equal(str(s, "name"), "fra1");
	assert_non_null(json_object_get(s, "createdAt"));
	json_t *l = ok(F.root_auth, "GET", "/v1/tenants/root/sites", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "sites")), 1);
	assert_true(json_equal(json_array_get(json_object_get(l, "sites"), 0), s));
	json_decref(l);
	json_decref(s);
	assert_int_equal(count_audit("root", "site.created"), 1);
	expect_error(F.root_auth, "POST", "/v1/tenants/root/sites", "{\"name\":\"fra1\"}", 409,
	             "CONFLICT", "site.name");
	expect_invalid(F.root_auth, "POST", "/v1/tenants/root/sites", "{\"name\":null}",
	               "site.name");
	expect_invalid(F.root_auth, "POST", "/v1/tenants/root/sites", "{\"name\":\"a\",\"x\":1}",
	               "site.x: unknown field");
}

/* ---- pools ---- */

static void test_pools(void **state)
{
	char url[160];

	json_t *p =
	    ok(F.root_auth, "POST", "/v1/tenants/root/pools",
	       "{\"name\":\"gpu\",\"policy\":{\"joinAttestors\":[\"tpm\"],\"note\":\"x\"}}", 201);
	const char *id = str(p, "id");
	assert_int_equal(strncmp(id, "pool_", 5), 0);
	assert_string_equal(str(p, "tenantId"), "root");
	assert_string_equal(str(p, "name"), "gpu");
	assert_string_equal(json_string_value(json_array_get(
	                        json_object_get(json_object_get(p, "policy"), "joinAttestors"), 0)),
	                    "tpm");
	assert_string_equal(str(json_object_get(p, "policy"), "note"), "x");
	assert_string_equal(str(p, "createdAt"), str(p, "updatedAt"));
	assert_int_equal(strlen(str(p, "createdAt")), 24);

	snprintf(url, sizeof(url), "/v1/tenants/root/pools/%s", id);
	json_t *g = ok(F.root_auth, "GET", url, NULL, 200);
	assert_true(json_equal(g, p));
	json_decref(g);

	/* a pool without a policy has {} */
	json_t *q = ok(F.root_auth, "POST", "/v1/tenants/root/pools", "{\"name\":\"cpu\"}", 201);
	assert_int_equal(json_object_size(json_object_get(q, "policy")), 0);
	json_decref(q);
	json_t *l = ok(F.root_auth, "GET", "/v1/tenants/root/pools", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "pools")), 2);
	json_decref(l);

	/* PATCH: the policy is replaced as a whole */
	json_t *u = ok(F.root_auth, "PATCH", url,
	               "{\"policy\":{\"joinAttestors\":[\"join-token\",\"x509pop\"]}}", 200);
	assert_string_equal(str(u, "name"), "gpu");
	assert_null(json_object_get(json_object_get(u, "policy"), "note"));
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(u, "policy"), "joinAttestors")), 2);
	json_decref(u);
	u = ok(F.root_auth, "PATCH", url, "{\"name\":\"gpu2\"}", 200);
	assert_string_equal(str(u, "name"), "gpu2");
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(u, "policy"), "joinAttestors")), 2);
	json_decref(u);
	expect_error(F.root_auth, "PATCH", url, "{\"name\":\"cpu\"}", 409, "CONFLICT", "pool.name");
	expect_error(F.root_auth, "POST", "/v1/tenants/root/pools", "{\"name\":\"cpu\"}", 409,
	             "CONFLICT", "pool.name");
	expect_error(F.root_auth, "PATCH", "/v1/tenants/root/pools/pool_nope", "{\"name\":\"z\"}",
	             404, "NOT_FOUND", "pool not found");
	expect_error(F.root_auth, "GET", "/v1/tenants/root/pools/pool_nope", NULL, 404, "NOT_FOUND",
	             "pool not found");

	assert_int_equal(count_events("root", "pool.created"), 2);
	assert_int_equal(count_events("root", "pool.updated"), 2);
	assert_int_equal(count_audit("root", "pool.created"), 2);
	assert_int_equal(count_audit("root", "pool.updated"), 2);
	/* the audit rows carry the pool before and after: the policy change (the update that
	 * did not rename the pool to gpu2; both updates may share a millisecond, so their
	 * order by time and random id is not theirs), then the name's */
	{
		const char *sql = "SELECT data FROM audit WHERE subject = $1 AND action = $2 "
		                  "AND data NOT LIKE '%gpu2%'";
		char *text = sql_text(sql, (bc_param[]){BC_TEXT(id), BC_TEXT("pool.updated")}, 2);
		json_t *d = json_loads(text, 0, NULL);
		json_t *before, *after;
		assert_non_null(d);
		before = json_object_get(d, "before");
		after = json_object_get(d, "after");
		assert_string_equal(str(before, "name"), "gpu");
		assert_string_equal(str(json_object_get(before, "policy"), "note"), "x");
		assert_int_equal(json_array_size(json_object_get(json_object_get(before, "policy"),
		                                                 "joinAttestors")),
		                 1);
		assert_null(json_object_get(json_object_get(after, "policy"), "note"));
		assert_int_equal(json_array_size(json_object_get(json_object_get(after, "policy"),
		                                                 "joinAttestors")),
		                 2);
		json_decref(d);
		free(text);
		text = sql_text("SELECT data FROM audit WHERE subject = $1 AND action = $2",
		                (bc_param[]){BC_TEXT(id), BC_TEXT("pool.created")}, 2);
		d = json_loads(text, 0, NULL);
		assert_non_null(d);
		assert_string_equal(
		    str(json_object_get(json_object_get(d, "after"), "policy"), "note"), "x");
		json_decref(d);
		free(text);
	}
	json_decref(p);
}

/* {"name":name,"policy":{"a":{"a":...leaf...}}} with levels objects around leaf. */
static void nested_pool(char *body, size_t n, const char *name, int levels, const char *leaf)
{
	size_t at = (size_t)snprintf(body, n, "{\"name\":\"%s\",\"policy\":", name);

	/* the policy's own key is one it takes (an operator's note); what is in it any */
	for (int i = 0; i < levels; i++)
		at += (size_t)snprintf(body + at, n - at, i == 0 ? "{\"note\":" : "{\"a\":");
	at += (size_t)snprintf(body + at, n - at, "%s", leaf);
	for (int i = 0; i <= levels; i++)
		at += (size_t)snprintf(body + at, n - at, "}");
}

/* A policy is stored and read back by every join of the pool: 8 levels at most. */
static void test_pool_policy_deeper_than_8_levels_is_invalid_input(void **state)
{
	static const char *const pools = "/v1/tenants/root/pools";
	char body[512];
	(void)state;

	/* the policy and 7 objects in it: 8 levels */
	nested_pool(body, sizeof(body), "deep8", 8, "1");
	json_decref(ok(F.root_auth, "POST", pools, body, 201));
	/* 9: objects and arrays alike */
	nested_pool(body, sizeof(body), "deep9", 8, "[1]");
	expect_invalid(F.root_auth, "POST", pools, body,
	               "pool.policy: nested deeper than 8 levels");
	nested_pool(body, sizeof(body), "deep9", 9, "1");
	expect_invalid(F.root_auth, "POST", pools, body,
	               "pool.policy: nested deeper than 8 levels");
}

static void test_pool_validation(void **state)
{
	static const char *const pools = "/v1/tenants/root/pools";
	static const char ja[] =
	    "pool.policy.joinAttestors: expected an array of 1 to 16 attestor ids";
	char id[64], url[160], body[1024];

	create_pool(F.root_auth, "root", "base", id);
	snprintf(url, sizeof(url), "/v1/tenants/root/pools/%s", id);

	const char *bad_policies[][2] = {
	    {"[]", "pool.policy: expected an object"},
	    {"\"tpm\"", "pool.policy: expected an object"},
	    {"null", "pool.policy: expected an object"},
	    {"{\"joinAttestors\":\"tpm\"}", ja},
	    {"{\"joinAttestors\":{}}", ja},
	    {"{\"joinAttestors\":null}", ja},
	    {"{\"joinAttestors\":[]}", ja},
	    {"{\"joinAttestors\":[\"tpm\",\"gcp\"]}",
	     "pool.policy.joinAttestors[1]: not an attestor this server runs"},
	    {"{\"joinAttestors\":[\"TPM\"]}",
	     "pool.policy.joinAttestors[0]: not an attestor this server runs"},
	    {"{\"joinAttestors\":[\"tpm\",7]}",
	     "pool.policy.joinAttestors[1]: expected an attestor id"},
	    {"{\"joinAttestors\":[[\"tpm\"]]}",
	     "pool.policy.joinAttestors[0]: expected an attestor id"},
	    /* a misspelt key would leave the pool admitting every attestor */
	    {"{\"joinAtestors\":[\"tpm\"]}", "pool.policy.joinAtestors: unknown field"},
	    {"{\"joinAttestors\":[\"tpm\"],\"JoinAttestors\":[\"tpm\"]}",
	     "pool.policy.JoinAttestors: unknown field"},
	};
	for (size_t i = 0; i < sizeof(bad_policies) / sizeof(bad_policies[0]); i++) {
		snprintf(body, sizeof(body), "{\"name\":\"p%zu\",\"policy\":%s}", i,
		         bad_policies[i][0]);
		expect_invalid(F.root_auth, "POST", pools, body, bad_policies[i][1]);
		snprintf(body, sizeof(body), "{\"policy\":%s}", bad_policies[i][0]);
		expect_invalid(F.root_auth, "PATCH", url, body, bad_policies[i][1]);
	}
	/* 16 entries pass, 17 do not */
	strcpy(body, "{\"policy\":{\"joinAttestors\":[\"tpm\"");
	for (int i = 1; i < 16; i++)
		strcat(body, ",\"tpm\"");
	strcat(body, "]}}");
	json_decref(ok(F.root_auth, "PATCH", url, body, 200));
	strcpy(body, "{\"policy\":{\"joinAttestors\":[\"tpm\"");
	for (int i = 1; i < 17; i++)
		strcat(body, ",\"tpm\"");
	strcat(body, "]}}");
	expect_invalid(F.root_auth, "PATCH", url, body, ja);

	expect_invalid(F.root_auth, "POST", pools, "{}", "pool.name: required");
	expect_invalid(F.root_auth, "POST", pools, "{\"name\":false}", "pool.name");
	expect_invalid(F.root_auth, "POST", pools, "{\"name\":\"a\",\"tenantId\":\"x\"}",
	               "pool.tenantId: unknown field");
	expect_invalid(F.root_auth, "PATCH", url, "{\"id\":\"pool_x\"}", "pool.id: unknown field");
	expect_invalid(F.root_auth, "PATCH", url, "{\"name\":\"\"}", "pool.name");
	expect_invalid(F.root_auth, "PATCH", url, "", "body");

	/* a nesting too deep for the parser, and a body over 64 KiB */
	char *deep = calloc(1, 200);
	strcpy(deep, "{\"policy\":");
	for (int i = 0; i < 40; i++)
		strcat(deep, "[");
	for (int i = 0; i < 40; i++)
		strcat(deep, "]");
	strcat(deep, "}");
	expect_invalid(F.root_auth, "PATCH", url, deep, "body");
	free(deep);
	char *huge = malloc(70 * 1024);
	strcpy(huge, "{\"policy\":{\"x\":\"");
	memset(huge + strlen(huge), 'a', 66 * 1024);
	strcpy(huge + 16 + 66 * 1024, "\"}}");
	expect_invalid(F.root_auth, "PATCH", url, huge, "body");
	free(huge);

	/* nothing changed: one event, from the one valid PATCH */
	assert_int_equal(count_events("root", "pool.updated"), 1);
}

/* ---- tenant scoping ---- */

static void test_scoping(void **state)
{
	char acme[64], acme_auth[192], root_pool[64], acme_pool[64], url[192];

	create_tenant("acme", acme, acme_auth);
	create_pool(F.root_auth, "root", "root-pool", root_pool);
	create_pool(acme_auth, acme, "acme-pool", acme_pool);

	/* another tenant's path is NOT_FOUND, whatever follows */
	snprintf(url, sizeof(url), "/v1/tenants/root/pools/%s", root_pool);
	expect_error(acme_auth, "GET", url, NULL, 404, "NOT_FOUND", "tenant not found");
	expect_error(acme_auth, "GET", "/v1/tenants/root/pools", NULL, 404, "NOT_FOUND", NULL);
	expect_error(acme_auth, "GET", "/v1/tenants/root/nodes", NULL, 404, "NOT_FOUND", NULL);
	expect_error(acme_auth, "GET", "/v1/tenants/root/events", NULL, 404, "NOT_FOUND", NULL);
	expect_error(acme_auth, "POST", "/v1/tenants/root/pools", "{\"name\":\"x\"}", 404,
	             "NOT_FOUND", NULL);
	expect_error(acme_auth, "PATCH", url, "{\"name\":\"stolen\"}", 404, "NOT_FOUND", NULL);
	/* a tenant that does not exist answers the same */
	expect_error(acme_auth, "GET", "/v1/tenants/tnt_nope/pools", NULL, 404, "NOT_FOUND",
	             "tenant not found");

	/* root's pool under acme's path is not acme's */
	snprintf(url, sizeof(url), "/v1/tenants/%s/pools/%s", acme, root_pool);
	expect_error(acme_auth, "GET", url, NULL, 404, "NOT_FOUND", "pool not found");
	expect_error(F.root_auth, "GET", url, NULL, 404, "NOT_FOUND", "pool not found");

	/* each lists its own */
	snprintf(url, sizeof(url), "/v1/tenants/%s/pools", acme);
	json_t *l = ok(acme_auth, "GET", url, NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "pools")), 1);
	assert_string_equal(str(json_array_get(json_object_get(l, "pools"), 0), "id"), acme_pool);
	json_decref(l);
	/* the root key administers acme too */
	l = ok(F.root_auth, "GET", url, NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "pools")), 1);
	json_decref(l);
	l = ok(F.root_auth, "GET", "/v1/tenants/root/pools", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "pools")), 1);
	assert_string_equal(str(json_array_get(json_object_get(l, "pools"), 0), "id"), root_pool);
	json_decref(l);

	/* a token of acme cannot name root's pool */
	snprintf(url, sizeof(url), "/v1/tenants/%s/tokens", acme);
	char body[192];
	snprintf(body, sizeof(body), "{\"role\":\"node\",\"poolId\":\"%s\"}", root_pool);
	expect_invalid(acme_auth, "POST", url, body, "token.poolId: no such pool in this tenant");
}

/* ---- tokens ---- */

static void test_tokens(void **state)
{
	char pool[64], url[192], body[512];

	create_pool(F.root_auth, "root", "p", pool);
	json_t *site = ok(F.root_auth, "POST", "/v1/tenants/root/sites", "{\"name\":\"s\"}", 201);

	snprintf(body, sizeof(body),
	         "{\"role\":\"node\",\"poolId\":\"%s\",\"uses\":3,\"ttlSeconds\":600,"
	         "\"expect\":{\"mac\":\"AA-BB-CC-DD-EE-0F\",\"productUuid\":"
	         "\"0123ABCD-4567-89AB-cdef-0123456789ab\"},\"allowReclaim\":true,"
	         "\"description\":\"rack 4\"}",
	         pool);
	json_t *c = ok(F.root_auth, "POST", "/v1/tenants/root/tokens", body, 201);
	assert_int_equal(json_object_size(c), 2);
	json_t *t = json_object_get(c, "token");
	const char *secret = str(c, "secret");
	const char *id = str(t, "id");
	char prefix[64];
	snprintf(prefix, sizeof(prefix), BC_WIRE_TOKEN_PREFIX "%s_", id);
	assert_int_equal(strncmp(secret, prefix, strlen(prefix)), 0);
	assert_int_equal(strlen(secret + strlen(prefix)), 43);
	assert_string_equal(str(t, "tenantId"), "root");
	assert_string_equal(str(t, "poolId"), pool);
	assert_true(json_is_null(json_object_get(t, "siteId")));
	assert_string_equal(str(t, "role"), "node");
	assert_int_equal(json_integer_value(json_object_get(t, "usesLeft")), 3);
	assert_int_equal(json_integer_value(json_object_get(t, "usesTotal")), 3);
	assert_true(json_is_null(json_object_get(t, "revokedAt")));
	assert_true(json_is_null(json_object_get(t, "lastUsedAt")));
	assert_true(json_is_true(json_object_get(t, "allowReclaim")));
	assert_string_equal(str(t, "description"), "rack 4");
	json_t *e = json_object_get(t, "expect");
	assert_string_equal(str(e, "mac"), "aa:bb:cc:dd:ee:0f");
	assert_string_equal(str(e, "productUuid"), "0123abcd-4567-89ab-cdef-0123456789ab");
	assert_true(json_is_null(json_object_get(e, "serial")));
	assert_null(json_object_get(t, "secret"));

	/* expiry: 600 s after creation, in database time */
	bc_param pid[] = {BC_TEXT(id)};
	assert_int_equal(
	    sql_int("SELECT expires_at - created_at FROM join_tokens WHERE id = $1", pid, 1),
	    600000);
	/* the store keeps sha256 of the secret part only */
	char *hash = sql_text("SELECT secret_hash FROM join_tokens WHERE id = $1", pid, 1);
	const char *sec = secret + strlen(prefix);
	uint8_t d[32];
	char hex[65];
	assert_int_equal(bc_sha256(sec, strlen(sec), d), 0);
	bc_hex_encode_to(d, 32, hex);
	assert_string_equal(hash, hex);
	free(hash);

	/* shown once: the list carries no secret */
	json_t *l = ok(F.root_auth, "GET", "/v1/tenants/root/tokens", NULL, 200);
	char *dump = json_dumps(l, 0);
	assert_null(strstr(dump, sec));
	assert_null(strstr(dump, "secret"));
	free(dump);
	assert_int_equal(json_array_size(json_object_get(l, "tokens")), 1);
	assert_true(json_equal(json_array_get(json_object_get(l, "tokens"), 0), t));
	json_decref(l);

	/* a site token; defaults: one use, an hour */
	snprintf(body, sizeof(body), "{\"role\":\"site\",\"siteId\":\"%s\"}", str(site, "id"));
	json_t *s = ok(F.root_auth, "POST", "/v1/tenants/root/tokens", body, 201);
	json_t *st = json_object_get(s, "token");
	assert_int_equal(json_integer_value(json_object_get(st, "usesLeft")), 1);
	assert_true(json_is_false(json_object_get(st, "allowReclaim")));
	assert_true(json_is_null(json_object_get(st, "description")));
	assert_true(json_is_null(json_object_get(json_object_get(st, "expect"), "mac")));
	bc_param sid[] = {BC_TEXT(str(st, "id"))};
	assert_int_equal(
	    sql_int("SELECT expires_at - created_at FROM join_tokens WHERE id = $1", sid, 1),
	    3600000);
	json_decref(s);
	assert_int_equal(count_events("root", "token.created"), 2);
	assert_int_equal(count_audit("root", "token.created"), 2);

	/* revoke, twice: the second answers the same and records nothing */
	snprintf(url, sizeof(url), "/v1/tenants/root/tokens/%s/revoke", id);
	json_t *r = ok(F.root_auth, "POST", url, NULL, 200);
	assert_true(json_is_string(json_object_get(r, "revokedAt")));
	json_t *r2 = ok(F.root_auth, "POST", url, "{}", 200);
	assert_true(json_equal(r, r2));
	json_decref(r2);
	json_decref(r);
	assert_int_equal(count_events("root", "token.revoked"), 1);
	assert_int_equal(count_audit("root", "token.revoked"), 1);
	expect_error(F.root_auth, "POST", "/v1/tenants/root/tokens/tok_nope/revoke", NULL, 404,
	             "NOT_FOUND", "token not found");
	expect_invalid(F.root_auth, "POST", url, "{\"reason\":\"x\"}", "body");
	json_decref(c);
	json_decref(site);
}

/* tmpl with its one '@' replaced by pool */
static void fill(char *out, size_t n, const char *tmpl, const char *pool)
{
	const char *at = strchr(tmpl, '@');

	if (at == NULL)
		snprintf(out, n, "%s", tmpl);
	else
		snprintf(out, n, "%.*s%s%s", (int)(at - tmpl), tmpl, pool, at + 1);
}

static void test_token_validation(void **state)
{
	static const char *const url = "/v1/tenants/root/tokens";
	char pool[64], body[768];

	create_pool(F.root_auth, "root", "p", pool);
	const char *cases[][2] = {
	    {"{}", "token.role: required"},
	    {"{\"role\":\"ramdisk\"}", "token.role"},
	    {"{\"role\":\"provisioned\"}", "token.poolId"},
	    {"{\"role\":1}", "token.role"},
	    {"{\"role\":\"node\"}", "token.poolId: a node token needs a pool"},
	    {"{\"role\":\"site\"}", "token.siteId: a site token needs a site"},
	    {"{\"role\":\"node\",\"poolId\":\"pool_nope\"}", "token.poolId: no such pool"},
	    {"{\"role\":\"site\",\"siteId\":\"site_nope\"}", "token.siteId: no such site"},
	    {"{\"role\":\"node\",\"poolId\":5}", "token.poolId"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"uses\":0}", "token.uses"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"uses\":10001}", "token.uses"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"uses\":\"1\"}", "token.uses"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"uses\":1.5}", "token.uses"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"ttlSeconds\":59}", "token.ttlSeconds"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"ttlSeconds\":31536001}", "token.ttlSeconds"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"allowReclaim\":1}", "token.allowReclaim"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"description\":7}", "token.description"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"secret\":\"x\"}",
	     "token.secret: unknown field"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":[]}",
	     "token.expect: expected an object"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"ip\":\"1.2.3.4\"}}",
	     "token.expect.ip: unknown field"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"mac\":\"aa-bb:cc-dd-ee-ff\"}}",
	     "token.expect.mac"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"mac\":\"aabb.ccdd.eeff\"}}",
	     "token.expect.mac"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"mac\":\"aa:bb:cc:dd:ee\"}}",
	     "token.expect.mac"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"mac\":\"aa:bb:cc:dd:ee:fg\"}}",
	     "token.expect.mac"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"mac\":\"aa:bb:cc:dd:ee:ff:\"}}",
	     "token.expect.mac"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"productUuid\":"
	     "\"0123ABCD-4567-89ab-cdef-0123456789a\"}}",
	     "token.expect.productUuid"},
	    {"{\"role\":\"provisioned\",\"poolId\":\"@\"}", "token.expect.productUuid"},
	    {"{\"role\":\"provisioned\",\"poolId\":\"@\",\"uses\":2,\"expect\":{\"productUuid\":"
	     "\"0123abcd-4567-89ab-cdef-0123456789ab\"}}",
	     "token.uses"},
	    {"{\"role\":\"discovery\",\"poolId\":\"@\"}", "token.role"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"productUuid\":"
	     "\"0123abcd45678-9ab-cdef-0123456789ab\"}}",
	     "token.expect.productUuid"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"productUuid\":"
	     "\"{0123abcd-4567-89ab-cdef-0123456789ab}\"}}",
	     "token.expect.productUuid"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"serial\":\"\"}}",
	     "token.expect.serial"},
	    {"{\"role\":\"node\",\"poolId\":\"@\",\"expect\":{\"serial\":3}}",
	     "token.expect.serial"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fill(body, sizeof(body), cases[i][0], pool);
		expect_invalid(F.root_auth, "POST", url, body, cases[i][1]);
	}
	/* the bounds themselves pass */
	snprintf(body, sizeof(body),
	         "{\"role\":\"node\",\"poolId\":\"%s\",\"uses\":10000,\"ttlSeconds\":31536000,"
	         "\"expect\":{\"serial\":\"SN-1\"}}",
	         pool);
	json_decref(ok(F.root_auth, "POST", url, body, 201));
	snprintf(body, sizeof(body), "{\"role\":\"node\",\"poolId\":\"%s\",\"ttlSeconds\":60}",
	         pool);
	json_decref(ok(F.root_auth, "POST", url, body, 201));
	bc_param none[] = {BC_TEXT("root")};
	assert_int_equal(sql_int("SELECT COUNT(*) FROM join_tokens WHERE tenant_id = $1", none, 1),
	                 2);
}

/* ---- nodes ---- */

#define NODE_A "node_aaaaaaaaaaaaaaaaaaaaaaaaaa"
#define NODE_B "node_bbbbbbbbbbbbbbbbbbbbbbbbbb"

static void insert_node(const char *id, const char *tenant, const char *pool, const char *hwkey)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant), BC_TEXT(pool), BC_TEXT(hwkey)};
	sql("INSERT INTO nodes (id, tenant_id, pool_id, role, state, generation, hardware_key, "
	    "product_uuid, serial, macs, hostname, arch, agent_version, attestor, node_key, "
	    "joined_at, updated_at) VALUES ($1, $2, $3, 'node', 'adopted', 1, $4, "
	    "'0123abcd-4567-89ab-cdef-0123456789ab', 'SN1', '[\"aa:bb:cc:dd:ee:ff\"]', 'host-1', "
	    "'amd64', '0.1.0', 'join-token', 'unattested', 2000, 2000)",
	    p, 4);
}

/* The node's current certificate onto its row, as the rows layer keeps it when it
 * issues or revokes one (rows/certs.c): for rows this test writes directly. */
static void keep_current(const char *node)
{
	bc_param p[] = {BC_TEXT(node)};
	sql("UPDATE nodes SET (cert_serial, cert_not_after) = (SELECT c.serial, c.not_after FROM "
	    "node_certs c WHERE c.node_id = $1 AND c.revoked_at IS NULL ORDER BY c.created_at "
	    "DESC, c.serial DESC LIMIT 1) WHERE id = $1",
	    p, 1);
}

static void insert_cert(const char *serial, const char *node, int64_t created, int64_t not_after)
{
	bc_param p[] = {BC_TEXT(serial), BC_TEXT(node), BC_INT(not_after), BC_INT(created)};
	sql("INSERT INTO node_certs (serial, node_id, generation, der, der_sha256, not_before, "
	    "not_after, created_at) VALUES ($1, $2, 1, decode('00', 'hex'), $1, $4, $3, $4)",
	    p, 4);
	keep_current(node);
}

static json_t *node_op(const char *node, const char *op, int status)
{
	char url[192];

	snprintf(url, sizeof(url), "/v1/tenants/root/nodes/%s/%s", node, op);
	return ok(F.root_auth, "POST", url, NULL, status);
}

/* ---- workflows and inventory ---- */

static void insert_inventory(const char *node, int64_t at, const char *uuid)
{
	char data[256];

	snprintf(data, sizeof(data),
	         "{\"macs\":[\"aa:bb:cc:dd:ee:ff\"],\"productUuid\":\"%s\",\"serial\":\"SN1\","
	         "\"hostname\":\"host-1\",\"arch\":\"amd64\"}",
	         uuid);
	bc_param p[] = {BC_TEXT(node), BC_INT(at), BC_TEXT(data)};
	sql("INSERT INTO inventory (node_id, taken_at, data) VALUES ($1, $2, $3)", p, 3);
}

static void test_workflows(void **state)
{
	char pool[64], url[192], body[256];

	create_pool(F.root_auth, "root", "metal", pool);
	insert_node(NODE_A, "root", pool, "uuid:0123abcd-4567-89ab-cdef-0123456789ab");
	/* no inventory yet: the deploy cannot bind its token */
	snprintf(body, sizeof(body), "{\"nodeId\":\"%s\"}", NODE_A);
	expect_error(F.root_auth, "POST", "/v1/tenants/root/machines/deploy", body, 409, "CONFLICT",
	             "node " NODE_A " has no product UUID");
	insert_inventory(NODE_A, 3000, "");
	insert_inventory(NODE_A, 4000, "0123abcd-4567-89ab-cdef-0123456789ab");

	/* nodes get shows the newest record, nodes inventory all of them, oldest first */
	json_t *n = ok(F.root_auth, "GET", "/v1/tenants/root/nodes/" NODE_A, NULL, 200);
	json_t *inv = json_object_get(json_object_get(n, "inventory"), "claims");
	assert_string_equal(str(inv, "productUuid"), "0123abcd-4567-89ab-cdef-0123456789ab");
	json_decref(n);
	json_t *h =
	    ok(F.root_auth, "GET", "/v1/tenants/root/nodes/" NODE_A "/inventory", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(h, "inventory")), 2);
	assert_string_equal(
	    str(json_object_get(json_array_get(json_object_get(h, "inventory"), 1), "claims"),
	        "productUuid"),
	    "0123abcd-4567-89ab-cdef-0123456789ab");
	json_decref(h);
	expect_error(F.root_auth, "GET", "/v1/tenants/root/nodes/" NODE_B "/inventory", NULL, 404,
	             "NOT_FOUND", "node not found");

	/* the deploy: a running workflow, its userdata.render step's single-use token */
	json_t *d = ok(F.root_auth, "POST", "/v1/tenants/root/machines/deploy", body, 201);
	json_t *wf = json_object_get(d, "workflow");
	char wf_id[64], tok_id[64];
	snprintf(wf_id, sizeof(wf_id), "%s", str(wf, "id"));
	snprintf(tok_id, sizeof(tok_id), "%s", str(d, "tokenId"));
	assert_string_equal(str(wf, "kind"), "deploy");
	assert_string_equal(str(wf, "state"), "running");
	assert_string_equal(str(wf, "nodeId"), NODE_A);
	assert_int_equal(strncmp(str(d, "token"), BC_WIRE_TOKEN_PREFIX, 4), 0);
	json_t *step = json_array_get(json_object_get(json_object_get(wf, "data"), "steps"), 0);
	assert_string_equal(str(step, "name"), "userdata.render");
	assert_string_equal(str(step, "tokenId"), tok_id);
	json_decref(d);
	bc_param tp[] = {BC_TEXT(tok_id)};
	assert_int_equal(sql_int("SELECT COUNT(*) FROM join_tokens WHERE id = $1 AND role = "
	                         "'provisioned' AND uses_left = 1 AND node_id = '" NODE_A
	                         "' AND workflow_id IS NOT NULL",
	                         tp, 1),
	                 1);
	/* the token's secret is in that answer only */
	json_t *list = ok(F.root_auth, "GET", "/v1/tenants/root/workflows", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(list, "workflows")), 1);
	char *dump = json_dumps(list, 0);
	assert_null(strstr(dump, BC_WIRE_TOKEN_PREFIX));
	free(dump);
	json_decref(list);
	/* one running deploy per node */
	expect_error(F.root_auth, "POST", "/v1/tenants/root/machines/deploy", body, 409, "CONFLICT",
	             "node " NODE_A " already has a running deploy");

	/* cancel, and a cancelled workflow does not end again */
	snprintf(url, sizeof(url), "/v1/tenants/root/workflows/%s/cancel", wf_id);
	json_t *c = ok(F.root_auth, "POST", url, NULL, 200);
	assert_string_equal(str(c, "state"), "cancelled");
	json_decref(c);
	expect_error(F.root_auth, "POST", url, NULL, 409, "CONFLICT", "workflow is cancelled");
	snprintf(url, sizeof(url), "/v1/tenants/root/workflows/%s/complete", wf_id);
	expect_error(F.root_auth, "POST", url, "{}", 409, "CONFLICT", "workflow is cancelled");
	expect_error(F.root_auth, "GET", "/v1/tenants/root/workflows/wf_nope", NULL, 404,
	             "NOT_FOUND", "workflow not found");
	expect_invalid(F.root_auth, "POST", "/v1/tenants/root/machines/deploy",
	               "{\"nodeId\":\"" NODE_B "\"}", "workflow.nodeId");
	expect_invalid(F.root_auth, "POST", "/v1/tenants/root/machines/deploy", "{}",
	               "workflow.nodeId");
	/* a site node is not re-keyed by a provisioned join (it admits role node) */
	sql("UPDATE nodes SET role = 'site' WHERE id = '" NODE_A "'", NULL, 0);
	expect_error(F.root_auth, "POST", "/v1/tenants/root/machines/deploy", body, 409, "CONFLICT",
	             "node " NODE_A " is of role site");
}

static void test_commission(void **state)
{
	char body[256], url[192];

	json_t *site = ok(F.root_auth, "POST", "/v1/tenants/root/sites", "{\"name\":\"dc1\"}", 201);
	const char *sid = str(site, "id");
	/* any case, ':' or '-': stored canonical */
	snprintf(body, sizeof(body),
	         "{\"siteId\":\"%s\",\"mac\":\"AA-BB-CC-DD-EE-0F\",\"productUuid\":"
	         "\"0123ABCD-4567-89AB-CDEF-0123456789AB\",\"ttlSeconds\":600}",
	         sid);
	json_t *w = ok(F.root_auth, "POST", "/v1/tenants/root/machines/commission", body, 201);
	json_t *be = json_object_get(json_object_get(w, "data"), "bootEntry");
	assert_string_equal(str(w, "kind"), "commission");
	assert_string_equal(str(w, "state"), "running");
	assert_string_equal(str(be, "mac"), "aa:bb:cc:dd:ee:0f");
	assert_string_equal(str(be, "productUuid"), "0123abcd-4567-89ab-cdef-0123456789ab");
	assert_string_equal(str(be, "siteId"), sid);
	assert_true(json_is_integer(json_object_get(be, "notAfter")));
	snprintf(url, sizeof(url), "/v1/tenants/root/workflows/%s/complete", str(w, "id"));
	json_t *done = ok(F.root_auth, "POST", url, "{\"state\":\"failed\"}", 200);
	assert_string_equal(str(done, "state"), "failed");
	json_decref(done);
	json_decref(w);

	static const char *const bad[][2] = {
	    {"{\"siteId\":\"@\",\"mac\":\"aa:bb:cc:dd:ee\"}", "workflow.mac"},
	    {"{\"siteId\":\"@\",\"mac\":\"aa-bb:cc:dd:ee:ff\"}", "workflow.mac"},
	    {"{\"siteId\":\"@\"}", "workflow.mac"},
	    {"{\"siteId\":\"@\",\"mac\":\"aa:bb:cc:dd:ee:ff\",\"productUuid\":\"nope\"}",
	     "workflow.productUuid"},
	    {"{\"siteId\":\"@\",\"mac\":\"aa:bb:cc:dd:ee:ff\",\"nodeId\":\"" NODE_B "\"}",
	     "workflow.nodeId"},
	    {"{\"siteId\":\"@\",\"mac\":\"aa:bb:cc:dd:ee:ff\",\"ttlSeconds\":1}",
	     "workflow.ttlSeconds"},
	    {"{\"siteId\":\"site_nope\",\"mac\":\"aa:bb:cc:dd:ee:ff\"}", "workflow.siteId"},
	    {"{\"siteId\":\"@\",\"mac\":\"aa:bb:cc:dd:ee:ff\",\"ip\":\"1\"}", "workflow.ip"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fill(body, sizeof(body), bad[i][0], sid);
		expect_invalid(F.root_auth, "POST", "/v1/tenants/root/machines/commission", body,
		               bad[i][1]);
	}
	json_decref(site);
}

static void test_nodes_read(void **state)
{
	char pool[64];

	create_pool(F.root_auth, "root", "p", pool);
	insert_node(NODE_A, "root", pool, "hw-a");
	insert_node(NODE_B, "root", NULL, NULL);
	insert_cert("01", NODE_A, 3000, 90000000);
	insert_cert("02", NODE_A, 4000, 86404000);
	insert_cert("03", NODE_A, 5000, 86405000);
	sql("UPDATE node_certs SET revoked_at = 6000 WHERE serial = '03'", NULL, 0);
	keep_current(NODE_A);

	json_t *n = ok(F.root_auth, "GET", "/v1/tenants/root/nodes/" NODE_A, NULL, 200);
	assert_string_equal(str(n, "id"), NODE_A);
	assert_string_equal(str(n, "tenantId"), "root");
	assert_string_equal(str(n, "poolId"), pool);
	assert_true(json_is_null(json_object_get(n, "siteId")));
	assert_string_equal(str(n, "role"), "node");
	assert_string_equal(str(n, "state"), "adopted");
	assert_int_equal(json_integer_value(json_object_get(n, "generation")), 1);
	assert_string_equal(str(n, "productUuid"), "0123abcd-4567-89ab-cdef-0123456789ab");
	assert_string_equal(str(n, "serial"), "SN1");
	assert_string_equal(json_string_value(json_array_get(json_object_get(n, "macs"), 0)),
	                    "aa:bb:cc:dd:ee:ff");
	assert_string_equal(str(n, "hostname"), "host-1");
	assert_string_equal(str(n, "arch"), "amd64");
	assert_string_equal(str(n, "agentVersion"), "0.1.0");
	assert_string_equal(str(n, "attestor"), "join-token");
	assert_string_equal(str(n, "nodeKey"), "unattested");
	/* a node no attestor gave kinds to: [] */
	assert_true(json_is_array(json_object_get(n, "allowedKinds")));
	assert_int_equal(json_array_size(json_object_get(n, "allowedKinds")), 0);
	assert_string_equal(str(n, "joinedAt"), "1970-01-01T00:00:02.000Z");
	assert_true(json_is_null(json_object_get(n, "identityRevokedAt")));
	/* the newest unrevoked certificate */
	json_t *cert = json_object_get(n, "certificate");
	assert_string_equal(str(cert, "serial"), "02");
	assert_string_equal(str(cert, "notAfter"), "1970-01-02T00:00:04.000Z");
	json_decref(n);

	json_t *l = ok(F.root_auth, "GET", "/v1/tenants/root/nodes", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "nodes")), 2);
	json_t *b = json_array_get(json_object_get(l, "nodes"), 1);
	assert_string_equal(str(b, "id"), NODE_B);
	assert_true(json_is_null(json_object_get(b, "certificate")));
	assert_true(json_is_null(json_object_get(b, "poolId")));
	json_decref(l);
	expect_error(F.root_auth, "GET", "/v1/tenants/root/nodes/node_nope", NULL, 404, "NOT_FOUND",
	             "node not found");

	/* the kinds its attestor recorded */
	sql("UPDATE nodes SET allowed_kinds = '[\"disk.wipe\",\"diag.*\"]' WHERE id = '" NODE_A "'",
	    NULL, 0);
	n = ok(F.root_auth, "GET", "/v1/tenants/root/nodes/" NODE_A, NULL, 200);
	json_t *kinds = json_object_get(n, "allowedKinds");
	assert_int_equal(json_array_size(kinds), 2);
	assert_string_equal(json_string_value(json_array_get(kinds, 0)), "disk.wipe");
	assert_string_equal(json_string_value(json_array_get(kinds, 1)), "diag.*");
	json_decref(n);
}

static void insert_join_request(const char *id, const char *tenant, const char *key)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant), BC_TEXT(key)};
	sql("INSERT INTO join_requests (id, tenant_id, attestor, request_key, csr_sha256, claims, "
	    "state, created_at, expires_at) VALUES ($1, $2, 'discovery', $3, 'aa', "
	    "'{\"mac\":\"52:54:00:00:00:01\"}', 'pending', 1000, 999999999999)",
	    p, 3);
}

static void test_join_requests_delete(void **state)
{
	char acme[64], acme_auth[192], url[192];

	create_tenant("acme", acme, acme_auth);
	insert_join_request("jr_root1", "root", "k1");
	insert_join_request("jr_root2", "root", "k2");
	insert_join_request("jr_acme1", acme, "k3");

	/* another tenant's request is not found under this tenant's path */
	snprintf(url, sizeof(url), "/v1/tenants/%s/join-requests/jr_root1", acme);
	expect_error(acme_auth, "DELETE", url, NULL, 404, "NOT_FOUND", "join request not found");
	expect_error(F.root_auth, "DELETE", url, NULL, 404, "NOT_FOUND", "join request not found");
	/* nor acme's under root's, by root's own key */
	expect_error(F.root_auth, "DELETE", "/v1/tenants/root/join-requests/jr_acme1", NULL, 404,
	             "NOT_FOUND", "join request not found");
	expect_error(F.root_auth, "DELETE", "/v1/tenants/root/join-requests/jr_nope", NULL, 404,
	             "NOT_FOUND", "join request not found");
	assert_int_equal(sql_int("SELECT COUNT(*) FROM join_requests", NULL, 0), 3);

	json_t *d = ok(F.root_auth, "DELETE", "/v1/tenants/root/join-requests/jr_root1", NULL, 200);
	assert_string_equal(str(d, "deleted"), "jr_root1");
	json_decref(d);
	/* gone from the list; the others stay */
	json_t *l = ok(F.root_auth, "GET", "/v1/tenants/root/join-requests", NULL, 200);
	json_t *arr = json_object_get(l, "joinRequests");
	assert_int_equal(json_array_size(arr), 1);
	assert_string_equal(str(json_array_get(arr, 0), "id"), "jr_root2");
	/* what an approval admits: the claims and the CSR hash the request is bound to */
	assert_string_equal(str(json_object_get(json_array_get(arr, 0), "claims"), "mac"),
	                    "52:54:00:00:00:01");
	assert_string_equal(str(json_array_get(arr, 0), "csrSha256"), "aa");
	json_decref(l);
	snprintf(url, sizeof(url), "/v1/tenants/%s/join-requests", acme);
	l = ok(acme_auth, "GET", url, NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "joinRequests")), 1);
	json_decref(l);
	/* a second delete finds nothing */
	expect_error(F.root_auth, "DELETE", "/v1/tenants/root/join-requests/jr_root1", NULL, 404,
	             "NOT_FOUND", "join request not found");

	/* its event and audit row */
	assert_int_equal(sql_int("SELECT COUNT(*) FROM events WHERE type = 'join-request.deleted' "
	                         "AND subject = 'jr_root1' AND tenant_id = 'root'",
	                         NULL, 0),
	                 1);
	assert_int_equal(sql_int("SELECT COUNT(*) FROM audit WHERE action = 'join-request.deleted' "
	                         "AND subject = 'jr_root1'",
	                         NULL, 0),
	                 1);
	char *data =
	    sql_text("SELECT data FROM events WHERE type = 'join-request.deleted'", NULL, 0);
	assert_non_null(strstr(data, "\"state\":\"pending\""));
	assert_non_null(strstr(data, "\"attestor\":\"discovery\""));
	free(data);
}

static void test_node_operations(void **state)
{
	insert_node(NODE_A, "root", NULL, "hw-a");
	insert_cert("01", NODE_A, 3000, 90000000);
	insert_cert("02", NODE_A, 4000, 90000000);
	bc_param pn[] = {BC_TEXT(NODE_A)};
	sql("INSERT INTO node_bindings (kind, key, node_id, created_at) VALUES ('tpm-ek', 'ek1', "
	    "$1, 1)",
	    pn, 1);

	/* delete needs a cordoned or retired node */
	expect_error(F.root_auth, "DELETE", "/v1/tenants/root/nodes/" NODE_A, NULL, 409, "CONFLICT",
	             "node is adopted");

	json_t *n = node_op(NODE_A, "cordon", 200);
	assert_string_equal(str(n, "state"), "cordoned");
	json_decref(n);
	json_decref(node_op(NODE_A, "cordon", 200)); /* already: no second event */
	assert_int_equal(count_events("root", "node.cordoned"), 1);
	n = node_op(NODE_A, "uncordon", 200);
	assert_string_equal(str(n, "state"), "adopted");
	json_decref(n);
	assert_int_equal(count_events("root", "node.uncordoned"), 1);

	/* revoke-identity: every certificate revoked, generation raised */
	n = node_op(NODE_A, "revoke-identity", 200);
	assert_int_equal(json_integer_value(json_object_get(n, "generation")), 2);
	assert_true(json_is_string(json_object_get(n, "identityRevokedAt")));
	assert_true(json_is_null(json_object_get(n, "certificate")));
	assert_string_equal(str(n, "state"), "adopted");
	json_decref(n);
	assert_int_equal(sql_int("SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                         "revoked_at IS NULL",
	                         pn, 1),
	                 0);
	assert_int_equal(count_events("root", "node.identity-revoked"), 1);

	/* retire: state retired, a new certificate revoked too */
	insert_cert("03", NODE_A, 7000, 90000000);
	n = node_op(NODE_A, "retire", 200);
	assert_string_equal(str(n, "state"), "retired");
	assert_true(json_is_null(json_object_get(n, "certificate")));
	json_decref(n);
	assert_int_equal(
	    sql_int("SELECT COUNT(*) FROM node_certs WHERE revoked_at IS NULL", NULL, 0), 0);
	assert_int_equal(count_events("root", "node.retired"), 1);
	expect_error(F.root_auth, "POST", "/v1/tenants/root/nodes/" NODE_A "/cordon", NULL, 409,
	             "CONFLICT", "node is retired");
	expect_error(F.root_auth, "POST", "/v1/tenants/root/nodes/" NODE_A "/uncordon", NULL, 409,
	             "CONFLICT", "node is retired");

	/* delete: the rows go, the hardware key and binding are free again */
	json_t *d = ok(F.root_auth, "DELETE", "/v1/tenants/root/nodes/" NODE_A, NULL, 200);
	assert_string_equal(str(d, "deleted"), NODE_A);
	json_decref(d);
	assert_int_equal(sql_int("SELECT COUNT(*) FROM nodes", NULL, 0), 0);
	assert_int_equal(sql_int("SELECT COUNT(*) FROM node_certs", NULL, 0), 0);
	assert_int_equal(sql_int("SELECT COUNT(*) FROM node_bindings", NULL, 0), 0);
	insert_node(NODE_B, "root", NULL, "hw-a");
	assert_int_equal(count_events("root", "node.deleted"), 1);
	expect_error(F.root_auth, "GET", "/v1/tenants/root/nodes/" NODE_A, NULL, 404, "NOT_FOUND",
	             NULL);
	expect_error(F.root_auth, "POST", "/v1/tenants/root/nodes/" NODE_A "/cordon", NULL, 404,
	             "NOT_FOUND", "node not found");

	/* every change has an audit row by this key */
	const char *actions[] = {"node.cordoned", "node.uncordoned", "node.identity-revoked",
	                         "node.retired", "node.deleted"};
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(count_audit("root", actions[i]), 1);
	bc_param pd[] = {BC_TEXT("node.deleted")};
	char *data = sql_text("SELECT data FROM events WHERE type = $1", pd, 1);
	assert_non_null(strstr(data, "\"nodeId\":\"" NODE_A "\""));
	free(data);

	/* a cordoned node can be deleted too; another tenant's key cannot see it */
	char acme[64], acme_auth[192], url[192];
	create_tenant("acme", acme, acme_auth);
	json_decref(node_op(NODE_B, "cordon", 200));
	snprintf(url, sizeof(url), "/v1/tenants/%s/nodes/%s", acme, NODE_B);
	expect_error(acme_auth, "DELETE", url, NULL, 404, "NOT_FOUND", "node not found");
	expect_error(acme_auth, "DELETE", "/v1/tenants/root/nodes/" NODE_B, NULL, 404, "NOT_FOUND",
	             "tenant not found");
	json_decref(ok(F.root_auth, "DELETE", "/v1/tenants/root/nodes/" NODE_B, NULL, 200));
}

/* ---- events ---- */

static void insert_event(const char *id, const char *type, int64_t at)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(type), BC_INT(at)};
	sql("INSERT INTO events (id, tenant_id, type, subject, data, created_at) "
	    "VALUES ($1, 'root', $2, 'node_x', '{\"n\":1}', $3)",
	    p, 3);
}

static void test_events(void **state)
{
	char id[64], url[192];

	/* older events, written out of order; the API's own is the newest */
	insert_event("evt_b", "node.joined", 20000);
	insert_event("evt_a", "node.joined", 10000);
	insert_event("evt_c", "node.renewed", 30000);
	create_pool(F.root_auth, "root", "p4", id);
	json_decref(ok(F.root_auth, "PATCH", "/v1/tenants/root/pools/x", "{}", 404));

	json_t *l = ok(F.root_auth, "GET", "/v1/tenants/root/events", NULL, 200);
	json_t *ev = json_object_get(l, "events");
	assert_int_equal(json_array_size(ev), 4);
	json_t *first = json_array_get(ev, 0);
	assert_string_equal(str(first, "type"), "pool.created");
	assert_string_equal(str(first, "tenantId"), "root");
	assert_string_equal(str(first, "subject"), id);
	assert_string_equal(str(json_object_get(first, "data"), "poolId"), id);
	assert_string_equal(str(json_object_get(first, "data"), "name"), "p4");
	assert_int_equal(strncmp(str(first, "id"), "evt_", 4), 0);
	assert_string_equal(str(json_array_get(ev, 1), "id"), "evt_c");
	assert_string_equal(str(json_array_get(ev, 1), "createdAt"), "1970-01-01T00:00:30.000Z");
	assert_string_equal(str(json_array_get(ev, 2), "id"), "evt_b");
	assert_string_equal(str(json_array_get(ev, 3), "id"), "evt_a");
	assert_int_equal(json_integer_value(
	                     json_object_get(json_object_get(json_array_get(ev, 3), "data"), "n")),
	                 1);
	json_decref(l);

	l = ok(F.root_auth, "GET", "/v1/tenants/root/events?limit=2", NULL, 200);
	ev = json_object_get(l, "events");
	assert_int_equal(json_array_size(ev), 2);
	assert_string_equal(str(json_array_get(ev, 0), "type"), "pool.created");
	assert_string_equal(str(json_array_get(ev, 1), "id"), "evt_c");
	json_decref(l);
	l = ok(F.root_auth, "GET", "/v1/tenants/root/events?type=node.joined&limit=1", NULL, 200);
	ev = json_object_get(l, "events");
	assert_int_equal(json_array_size(ev), 1);
	assert_string_equal(str(json_array_get(ev, 0), "id"), "evt_b");
	json_decref(l);
	snprintf(url, sizeof(url), "/v1/tenants/root/pools/%s", id);
	json_decref(ok(F.root_auth, "PATCH", url, "{\"name\":\"renamed\"}", 200));
	l = ok(F.root_auth, "GET", "/v1/tenants/root/events?type=pool.updated", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "events")), 1);
	json_decref(l);
	l = ok(F.root_auth, "GET", "/v1/tenants/root/events?type=node.retired&limit=1000", NULL,
	       200);
	assert_int_equal(json_array_size(json_object_get(l, "events")), 0);
	json_decref(l);

	const char *bad[] = {"limit=0", "limit=1001", "limit=abc",
	                     "limit=",  "limit=-1",   "limit=10000000000000000000",
	                     "type="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(url, sizeof(url), "/v1/tenants/root/events?%s", bad[i]);
		expect_invalid(F.root_auth, "GET", url, NULL, bad[i][0] == 'l' ? "limit" : "type");
	}
	expect_invalid(F.root_auth, "GET", "/v1/tenants/root/events?frob=1", NULL, "query.frob");

	/* since: milliseconds since the epoch, or a duration back from now; node: the subject */
	l = ok(F.root_auth, "GET", "/v1/tenants/root/events?since=20000&node=node_x", NULL, 200);
	ev = json_object_get(l, "events");
	assert_int_equal(json_array_size(ev), 2);
	assert_string_equal(str(json_array_get(ev, 0), "id"), "evt_c");
	assert_string_equal(str(json_array_get(ev, 1), "id"), "evt_b");
	json_decref(l);
	l = ok(F.root_auth, "GET", "/v1/tenants/root/events?since=1h", NULL, 200);
	ev = json_object_get(l, "events");
	for (size_t i = 0; i < json_array_size(ev); i++)
		assert_string_not_equal(str(json_array_get(ev, i), "subject"), "node_x");
	assert_true(json_array_size(ev) >= 2);
	json_decref(l);
	l = ok(F.root_auth, "GET", "/v1/tenants/root/events?node=node_y", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(l, "events")), 0);
	json_decref(l);
	const char *bad_since[] = {"since=", "since=yesterday", "since=-1h", "node="};
	for (size_t i = 0; i < sizeof(bad_since) / sizeof(bad_since[0]); i++) {
		snprintf(url, sizeof(url), "/v1/tenants/root/events?%s", bad_since[i]);
		expect_invalid(F.root_auth, "GET", url, NULL,
		               bad_since[i][0] == 's' ? "since" : "node");
	}

	/* the audit trail: the same filters, with the actor */
	l = ok(F.root_auth, "GET", "/v1/tenants/root/audit?action=pool.updated&since=1h", NULL,
	       200);
	ev = json_object_get(l, "audit");
	assert_int_equal(json_array_size(ev), 1);
	assert_string_equal(str(json_array_get(ev, 0), "subject"), id);
	assert_int_equal(strncmp(str(json_array_get(ev, 0), "actor"), "api:key_", 8), 0);
	json_decref(l);
	expect_invalid(F.root_auth, "GET", "/v1/tenants/root/audit?limit=0", NULL, "limit");
	expect_invalid(F.root_auth, "GET", "/v1/tenants/root/audit?type=x", NULL, "query.type");

	/* the nodes list's filters and page, each refused by name when out of shape */
	const char *bad_nodes[][2] = {
	    {"limit=0", "limit"},
	    {"limit=501", "limit"},
	    {"state=", "state"},
	    {"pool=", "pool"},
	    {"after=", "after"},
	    {"expiringWithin=soon", "expiringWithin"},
	    {"expiringWithin=400d", "expiringWithin"},
	    {"hostname=", "hostname"},
	    {"colour=red", "query.colour"},
	    {"cursor=", "cursor"},
	    {"cursor=bm9kZXMubi41Lm5vZGVfMQ%3D%3D", "cursor"},
	    {"cursor=ZXZlbnRzLm4uNS5ldnRfMQ", "cursor"}, /* an events cursor */
	    {"after=node_1&cursor=bm9kZXMubi4wLm5vZGVfMQ", "after"},
	    {"after=node_1&expiringWithin=2h", "after"},
	};
	for (size_t i = 0; i < sizeof(bad_nodes) / sizeof(bad_nodes[0]); i++) {
		snprintf(url, sizeof(url), "/v1/tenants/root/nodes?%s", bad_nodes[i][0]);
		expect_invalid(F.root_auth, "GET", url, NULL, bad_nodes[i][1]);
	}
	l = ok(F.root_auth, "GET",
	       "/v1/tenants/root/nodes?state=adopted&limit=500&expiringWithin=2h", NULL, 200);
	assert_true(json_is_array(json_object_get(l, "nodes")));
	assert_true(json_is_null(json_object_get(l, "nextCursor")));
	json_decref(l);

	/* another tenant's events are its own */
	char acme[64], acme_auth[192];
	create_tenant("acme", acme, acme_auth);
	snprintf(url, sizeof(url), "/v1/tenants/%s/events", acme);
	l = ok(acme_auth, "GET", url, NULL, 200);
	/* only the creation of its own key */
	assert_int_equal(json_array_size(json_object_get(l, "events")), 1);
	assert_string_equal(str(json_array_get(json_object_get(l, "events"), 0), "type"),
	                    "admin.key.created");
	json_decref(l);
}

/* ---- the agent's pins ---- */

static void test_daemon_config(void **state)
{
	json_t *j = ok(F.root_auth, "GET", "/v1/daemon-config", NULL, 200);
	char *tls = NULL, *node = NULL;

	assert_int_equal(json_object_size(j), 6);
	assert_string_equal(str(j, "server"), PUBLIC_URL);
	assert_string_equal(str(j, "joinSigningKeyId"), F.pki->join_signing_kid);
	assert_string_equal(str(j, "trustDomain"), "test.example");
	assert_non_null(strstr(str(j, "joinSigningKey"), "BEGIN PUBLIC KEY"));
	assert_non_null(strstr(str(j, "joinEncryptionKey"), "BEGIN PUBLIC KEY"));
	assert_string_not_equal(str(j, "joinSigningKey"), str(j, "joinEncryptionKey"));
	assert_int_equal(bc_x509_to_pem(F.pki->tls_ca, &tls), 0);
	assert_int_equal(bc_x509_to_pem(F.pki->node_ca, &node), 0);
	assert_non_null(strstr(str(j, "caBundle"), tls));
	assert_non_null(strstr(str(j, "caBundle"), node));
	char *s = bc_admin_daemon_config_json(F.pki, PUBLIC_URL);
	json_t *again = json_loads(s, 0, NULL);
	assert_true(json_equal(j, again));
	json_decref(again);
	free(s);
	free(tls);
	free(node);
	json_decref(j);
	assert_null(bc_admin_daemon_config_json(NULL, PUBLIC_URL));
}

/* ---- the API key lifecycle ---- */

/* A new key of acme with that body; its id and "Bearer <key>". */
static void acme_key(const char *acme, const char *body, char id[64], char auth[192])
{
	char url[128];

	snprintf(url, sizeof(url), "/v1/tenants/%s/api-keys", acme);
	json_t *k = ok(F.root_auth, "POST", url, body, 201);
	snprintf(id, 64, "%s", str(k, "id"));
	snprintf(auth, 192, "Bearer %s", str(k, "key"));
	json_decref(k);
}

/* A leaked key, once revoked, opens nothing; the revocation is an event of the tenant. */
static void test_revoked_api_key_is_refused(void **state)
{
	char acme[64], acme_auth[192], id[64], auth[192], url[192];

	create_tenant("acme", acme, acme_auth);
	acme_key(acme, "{\"name\":\"leaked\"}", id, auth);
	json_decref(ok(auth, "GET", "/v1/whoami", NULL, 200));
	/* another tenant's key cannot revoke it, nor see it */
	char other[64], other_auth[192];
	create_tenant("other", other, other_auth);
	snprintf(url, sizeof(url), "/v1/tenants/%s/api-keys/%s/revoke", acme, id);
	expect_error(other_auth, "POST", url, NULL, 404, "NOT_FOUND", "tenant not found");
	snprintf(url, sizeof(url), "/v1/tenants/%s/api-keys/%s/revoke", other, id);
	expect_error(other_auth, "POST", url, NULL, 404, "NOT_FOUND", "api key not found");

	snprintf(url, sizeof(url), "/v1/tenants/%s/api-keys/%s/revoke", acme, id);
	json_t *r = ok(acme_auth, "POST", url, NULL, 200);
	assert_string_equal(str(r, "id"), id);
	assert_true(json_is_string(json_object_get(r, "revokedAt")));
	json_decref(r);
	/* again: unchanged, one event */
	json_decref(ok(acme_auth, "POST", url, NULL, 200));
	assert_int_equal(count_events(acme, "admin.key.revoked"), 1);
	assert_int_equal(count_events(acme, "admin.key.created"), 2);
	expect_error(auth, "GET", "/v1/whoami", NULL, 401, "ACCESS_DENIED",
	             "a valid API key is required");
	expect_error(auth, "POST", url, NULL, 401, "ACCESS_DENIED", "a valid API key is required");

	/* the list shows every key of the tenant, without secrets */
	snprintf(url, sizeof(url), "/v1/tenants/%s/api-keys", acme);
	json_t *l = ok(acme_auth, "GET", url, NULL, 200);
	json_t *keys = json_object_get(l, "apiKeys");
	assert_int_equal(json_array_size(keys), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *k = json_array_get(keys, i);
		assert_null(json_object_get(k, "key"));
		assert_null(json_object_get(k, "secretHash"));
		assert_int_equal(strcmp(str(k, "id"), id) == 0,
		                 json_is_string(json_object_get(k, "revokedAt")));
	}
	json_decref(l);
}

/* A key made with a lifetime stops at its end, at database time. */
static void test_expired_api_key_is_refused(void **state)
{
	char acme[64], acme_auth[192], id[64], auth[192], url[128];

	create_tenant("acme", acme, acme_auth);
	snprintf(url, sizeof(url), "/v1/tenants/%s/api-keys", acme);
	expect_invalid(F.root_auth, "POST", url, "{\"name\":\"x\",\"ttlSeconds\":10}",
	               "apiKey.ttlSeconds");
	expect_invalid(F.root_auth, "POST", url, "{\"name\":\"x\",\"ttlSeconds\":\"1h\"}",
	               "apiKey.ttlSeconds");
	acme_key(acme, "{\"name\":\"ci\",\"ttlSeconds\":3600}", id, auth);
	json_decref(ok(auth, "GET", "/v1/whoami", NULL, 200));
	json_t *l = ok(acme_auth, "GET", url, NULL, 200);
	json_t *keys = json_object_get(l, "apiKeys");
	assert_int_equal(json_array_size(keys), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *k = json_array_get(keys, i);
		/* only the key made with a lifetime has an end */
		assert_int_equal(strcmp(str(k, "id"), id) == 0,
		                 json_is_string(json_object_get(k, "expiresAt")));
	}
	json_decref(l);
	bc_clock_set_offset_ms(3599 * 1000);
	json_decref(ok(auth, "GET", "/v1/whoami", NULL, 200));
	bc_clock_set_offset_ms(3600 * 1000 + 1);
	expect_error(auth, "GET", "/v1/whoami", NULL, 401, "ACCESS_DENIED",
	             "a valid API key is required");
	/* a key without a lifetime goes on */
	json_decref(ok(acme_auth, "GET", "/v1/whoami", NULL, 200));
}

/* Guessing keys from one address: ten failures a minute, then 429 for that address only
 * (even with a good key), and the table of addresses stays the size it was made. */
static void test_failed_admin_auth_is_limited_per_address(void **state)
{
	static const char bad[] =
	    "Bearer bck_key_00000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	(void)state;

	F.cfg.limiter = bc_admin_limiter_new(0, 0, 0);
	assert_non_null(F.cfg.limiter);
	F.peer = "127.0.0.9";
	for (int i = 0; i < 10; i++)
		expect_error(bad, "GET", "/v1/whoami", NULL, 401, "ACCESS_DENIED", NULL);
	expect_error(bad, "GET", "/v1/whoami", NULL, 429, "RESOURCE_EXHAUSTED",
	             "too many failed authentications from this address; retry in 60 s");
	/* and says when in a header too, as clients read it */
	assert_int_equal(last_retry_after, 60);
	expect_error(F.root_auth, "GET", "/v1/whoami", NULL, 429, "RESOURCE_EXHAUSTED", NULL);
	/* another address is not affected */
	F.peer = "::1";
	json_decref(ok(F.root_auth, "GET", "/v1/whoami", NULL, 200));
	/* a minute later the address may try again */
	bc_clock_set_offset_ms(61000);
	F.peer = "127.0.0.9";
	json_decref(ok(F.root_auth, "GET", "/v1/whoami", NULL, 200));

	/* many addresses: bounded */
	struct bc_admin_limiter *small = bc_admin_limiter_new(64, 0, 0);
	char addr[64];
	for (int i = 0; i < 20000; i++) {
		snprintf(addr, sizeof(addr), "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255,
		         i & 255);
		for (int k = 0; k < 3; k++)
			(void)bc_admin_limiter_fail(small, addr, bc_now_ms());
	}
	assert_true(bc_admin_limiter_used(small) <= 64);
	/* an address at its limit is refused until its window ends */
	/* said twice: the first failure and the one that reaches the limit */
	for (int k = 0; k < 10; k++)
		assert_int_equal(bc_admin_limiter_fail(small, "192.0.2.1", bc_now_ms()),
		                 k == 0   ? BC_ADMIN_LIMIT_FIRST
		                 : k == 9 ? BC_ADMIN_LIMIT_REACHED
		                          : 0);
	assert_int_equal(bc_admin_limiter_blocked(small, "192.0.2.1", bc_now_ms()), 60);
	assert_int_equal(bc_admin_limiter_blocked(small, "192.0.2.1", bc_now_ms() + 60000), 0);
	assert_int_equal(bc_admin_limiter_blocked(small, "192.0.2.2", bc_now_ms()), 0);
	/* an IPv6 client counts by its /64: another address of it is refused too */
	for (int k = 0; k < 10; k++) {
		snprintf(addr, sizeof(addr), "2001:db8:1:2::%x", k + 1);
		(void)bc_admin_limiter_fail(small, addr, bc_now_ms());
	}
	assert_int_equal(bc_admin_limiter_blocked(small, "2001:db8:1:2:ffff::1", bc_now_ms()), 60);
	assert_int_equal(bc_admin_limiter_blocked(small, "2001:db8:1:3::1", bc_now_ms()), 0);
	bc_admin_limiter_free(small);
}

/* A flood of unauthenticated writes cannot hold the database's write lock. */
static void test_unauthenticated_write_takes_no_write_lock(void **state)
{
	static const char bad[] =
	    "Bearer bck_key_00000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	char wrong[192];
	size_t n = strlen(F.root_auth);
	(void)state;

	snprintf(wrong, sizeof(wrong), "%s", F.root_auth);
	wrong[n - 1] = wrong[n - 1] == 'A' ? 'B' : 'A';
	/* the key is used now: its last use is written, then not again within a minute */
	json_decref(ok(F.root_auth, "GET", "/v1/whoami", NULL, 200));
	uint64_t before = bc_store_tx_begun(F.store, BC_TX_WRITE);
	expect_error(bad, "POST", "/v1/tenants", "{\"name\":\"x\"}", 401, "ACCESS_DENIED", NULL);
	expect_error(wrong, "POST", "/v1/tenants", "{\"name\":\"x\"}", 401, "ACCESS_DENIED", NULL);
	expect_error(NULL, "DELETE", "/v1/tenants/root/nodes/node_x", NULL, 401, "ACCESS_DENIED",
	             NULL);
	expect_error(wrong, "POST", "/v1/tenants/root/tokens", "{}", 401, "ACCESS_DENIED", NULL);
	assert_int_equal(bc_store_tx_begun(F.store, BC_TX_WRITE), before);
	/* a good key's write is one write transaction */
	json_decref(ok(F.root_auth, "POST", "/v1/tenants", "{\"name\":\"x\"}", 201));
	assert_int_equal(bc_store_tx_begun(F.store, BC_TX_WRITE), before + 1);
}

/* The last use of a key is listed, and written at most once a minute. */
static void test_api_key_last_use_is_written_once_a_minute(void **state)
{
	(void)state;

	int64_t t0 = sql_int("SELECT COUNT(*) FROM api_keys WHERE last_used_at IS NULL", NULL, 0);
	assert_int_equal(t0, 1);
	json_decref(ok(F.root_auth, "GET", "/v1/whoami", NULL, 200));
	int64_t first = sql_int("SELECT last_used_at FROM api_keys", NULL, 0);
	assert_true(first > 0);
	uint64_t before = bc_store_tx_begun(F.store, BC_TX_WRITE);
	for (int i = 0; i < 5; i++)
		json_decref(ok(F.root_auth, "GET", "/v1/whoami", NULL, 200));
	assert_int_equal(bc_store_tx_begun(F.store, BC_TX_WRITE), before);
	bc_clock_set_offset_ms(61000);
	json_decref(ok(F.root_auth, "GET", "/v1/whoami", NULL, 200));
	assert_true(sql_int("SELECT last_used_at FROM api_keys", NULL, 0) >= first + 61000);
	json_t *l = ok(F.root_auth, "GET", "/v1/tenants/root/api-keys", NULL, 200);
	assert_true(json_is_string(
	    json_object_get(json_array_get(json_object_get(l, "apiKeys"), 0), "lastUsedAt")));
	json_decref(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_authentication, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_routing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_api_keys, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sites, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pools, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_validation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_policy_deeper_than_8_levels_is_invalid_input,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_scoping, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tokens, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_token_validation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nodes_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_join_requests_delete, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_workflows, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_commission, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_node_operations, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_events, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_daemon_config, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_revoked_api_key_is_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_expired_api_key_is_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_admin_auth_is_limited_per_address, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_unauthenticated_write_takes_no_write_lock, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_api_key_last_use_is_written_once_a_minute, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
