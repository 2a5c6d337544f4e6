/* DELETE of pools, sites and tenants (docs/admin-api.md, "Deleting pools, sites and
 * tenants") over loopback HTTP, on each engine: each kind of reference refused by name
 * with CONFLICT and what to do, then removed through the API until the delete
 * succeeds, its audit row written and the dead rows that named it gone; and names
 * shaped as ids refused at create (docs/admin-api.md, "Names"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bct_http.h"
#include "bctest.h"
#include "server/admin.h"

struct body {
	char buf[65536];
	size_t n;
};

/* method path with key and body (NULL: none): the status, the answer in *out. */
static long call(struct bct_cp *cp, const char *key, const char *method, const char *path,
                 const char *body, struct body *out)
{
	char *text = NULL;
	long status = bct_http(cp, method, path, key, body, &text);

	assert_true(status > 0);
	memset(out, 0, sizeof(*out));
	if (text != NULL) {
		out->n = strlen(text) < sizeof(out->buf) - 1 ? strlen(text) : sizeof(out->buf) - 1;
		memcpy(out->buf, text, out->n);
		free(text);
	}
	return status;
}

static int key_tx(bc_tx *tx, void *arg)
{
	char **k = arg;

	return bc_admin_create_api_key(tx, k[0], "test", &k[1]);
}

/* A new admin key of tenant (malloc'd). */
static char *make_key(struct bct_cp *cp, const char *tenant)
{
	char *k[2] = {(char *)tenant, NULL};

	assert_int_equal(bc_store_run(bct_store(cp), BC_TX_WRITE, key_tx, k), 0);
	assert_non_null(k[1]);
	return k[1];
}

/* The string member key of the JSON answer in b (malloc'd). */
static char *member(const struct body *b, const char *key)
{
	json_t *j = json_loads(b->buf, 0, NULL);
	char *s;

	assert_non_null(j);
	assert_non_null(json_string_value(json_object_get(j, key)));
	s = strdup(json_string_value(json_object_get(j, key)));
	json_decref(j);
	return s;
}

/* Makes kind (pools, sites, tenants) named name in tenant: its id (malloc'd). */
static char *create(struct bct_cp *cp, const char *key, const char *tenant, const char *kind,
                    const char *name)
{
	static struct body b;
	char path[128], body[128];

	if (strcmp(kind, "tenants") == 0)
		snprintf(path, sizeof(path), "/v1/tenants");
	else
		snprintf(path, sizeof(path), "/v1/tenants/%s/%s", tenant, kind);
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", name);
	assert_int_equal(call(cp, key, "POST", path, body, &b), 201);
	return member(&b, "id");
}

static void node_row(struct bct_cp *cp, const char *id, const char *tenant, const char *pool,
                     const char *site)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant), BC_TEXT(pool), BC_TEXT(site),
	                BC_INT(bc_now_ms())};

	assert_int_equal(
	    bct_exec(cp,
	             "INSERT INTO nodes (id, tenant_id, pool_id, site_id, role, state, "
	             "attestor, joined_at, updated_at) VALUES ($1, $2, $3, $4, "
	             "'node', 'adopted', 'join-token', $5, $5)",
	             p, 5),
	    0);
}

static void request_row(struct bct_cp *cp, const char *id, const char *tenant, const char *pool,
                        const char *site)
{
	int64_t now = bc_now_ms();
	bc_param p[] = {BC_TEXT(id),   BC_TEXT(tenant), BC_TEXT(pool),
	                BC_TEXT(site), BC_INT(now),     BC_INT(now + 3600000)};

	assert_int_equal(bct_exec(cp,
	                          "INSERT INTO join_requests (id, tenant_id, pool_id, site_id, "
	                          "attestor, request_key, csr_sha256, state, created_at, "
	                          "expires_at) VALUES ($1, $2, $3, $4, 'discovery', $1, 'aa', "
	                          "'pending', $5, $6)",
	                          p, 6),
	                 0);
}

static void workflow_row(struct bct_cp *cp, const char *id, const char *tenant, const char *kind,
                         const char *data)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant), BC_TEXT(kind), BC_TEXT(data),
	                BC_INT(bc_now_ms())};

	assert_int_equal(bct_exec(cp,
	                          "INSERT INTO workflows (id, tenant_id, kind, state, data, "
	                          "created_at, updated_at) VALUES ($1, $2, $3, 'running', $4, $5, "
	                          "$5)",
	                          p, 5),
	                 0);
}

/* DELETE path: 409 whose message holds each of want (NULL-terminated) and none of
 * gone (NULL-terminated, may be NULL). */
static void refused(struct bct_cp *cp, const char *key, const char *path, const char *const *want,
                    const char *const *gone)
{
	static struct body b;

	assert_int_equal(call(cp, key, "DELETE", path, NULL, &b), 409);
	assert_non_null(strstr(b.buf, "\"CONFLICT\""));
	for (size_t i = 0; want[i] != NULL; i++)
		if (strstr(b.buf, want[i]) == NULL)
			fail_msg("no \"%s\" in %s", want[i], b.buf);
	for (size_t i = 0; gone != NULL && gone[i] != NULL; i++)
		if (strstr(b.buf, gone[i]) != NULL)
			fail_msg("\"%s\" still in %s", gone[i], b.buf);
}

static void ok(struct bct_cp *cp, const char *key, const char *method, const char *path)
{
	static struct body b;
	long st = call(cp, key, method, path, NULL, &b);

	if (st != 200)
		fail_msg("%s %s: %ld %s", method, path, st, b.buf);
}

static int64_t rows_naming(struct bct_cp *cp, const char *sql, const char *id)
{
	bc_param p[] = {BC_TEXT(id)};

	return bct_count(cp, sql, p, 1);
}

static void test_pool_delete(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *key = make_key(cp, "root"), *pool = create(cp, key, "root", "pools", "batch");
	char path[192], tok[64], dead[64];

	node_row(cp, "node_p1", "root", pool, NULL);
	node_row(cp, "node_p2", "root", pool, NULL);
	free(bct_token(cp, &(struct bct_token_opts){.pool = pool, .uses = 5}, tok));
	/* a dead token does not hold the pool, and goes with it */
	free(bct_token(cp, &(struct bct_token_opts){.pool = pool, .ttl_ms = -1000}, dead));
	request_row(cp, "jr_p1", "root", pool, NULL);
	snprintf(path, sizeof(path), "/v1/tenants/root/pools/%s", pool);

	char whole[256];
	snprintf(whole, sizeof(whole),
	         "pool %s has 2 nodes, 1 live token and 1 open join request; retire and delete "
	         "the nodes",
	         pool);
	refused(cp, key, path,
	        (const char *const[]){whole, "revoke the tokens",
	                              "deny or delete the join requests first", NULL},
	        NULL);
	/* removed one kind at a time, through the API, and the message follows */
	ok(cp, key, "POST", "/v1/tenants/root/nodes/node_p1/retire");
	ok(cp, key, "DELETE", "/v1/tenants/root/nodes/node_p1");
	refused(cp, key, path, (const char *const[]){"has 1 node, 1 live token", NULL}, NULL);
	ok(cp, key, "POST", "/v1/tenants/root/nodes/node_p2/retire");
	/* a retired node still names its pool */
	refused(cp, key, path, (const char *const[]){"has 1 node, ", NULL}, NULL);
	ok(cp, key, "DELETE", "/v1/tenants/root/nodes/node_p2");
	refused(cp, key, path,
	        (const char *const[]){"has 1 live token and 1 open join request", NULL},
	        (const char *const[]){"node", NULL});
	snprintf(whole, sizeof(whole), "/v1/tenants/root/tokens/%s/revoke", tok);
	ok(cp, key, "POST", whole);
	refused(cp, key, path,
	        (const char *const[]){"has 1 open join request; deny or delete the join "
	                              "requests first",
	                              NULL},
	        (const char *const[]){"token", NULL});
	ok(cp, key, "POST", "/v1/tenants/root/join-requests/jr_p1/deny");

	assert_int_equal(call(cp, key, "DELETE", path, NULL, &b), 200);
	assert_non_null(strstr(b.buf, pool));
	assert_int_equal(call(cp, key, "GET", path, NULL, &b), 404);
	assert_int_equal(call(cp, key, "DELETE", path, NULL, &b), 404);
	assert_int_equal(
	    rows_naming(cp, "SELECT COUNT(*) FROM join_tokens WHERE pool_id = $1", pool), 0);
	assert_int_equal(rows_naming(cp,
	                             "SELECT COUNT(*) FROM audit WHERE action = 'pool.deleted' AND "
	                             "subject = $1 AND data LIKE '%\"name\":\"batch\"%'",
	                             pool),
	                 1);
	assert_int_equal(bct_events(cp, "pool.deleted", NULL, pool), 1);
	free(pool);
	free(key);
}

static void test_site_delete(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *key = make_key(cp, "root"), *site = create(cp, key, "root", "sites", "rack1");
	char path[192], data[192], tok[64], lease[96];

	node_row(cp, "node_s1", "root", NULL, site);
	free(bct_token(cp, &(struct bct_token_opts){.site = site, .role = "site"}, tok));
	request_row(cp, "jr_s1", "root", NULL, site);
	snprintf(data, sizeof(data), "{\"bootEntry\":{\"siteId\":\"%s\"}}", site);
	workflow_row(cp, "wf_s1", "root", "commission", data);
	/* another site's commission does not hold this one */
	workflow_row(cp, "wf_s2", "root", "commission", "{\"bootEntry\":{\"siteId\":\"site_x\"}}");
	snprintf(lease, sizeof(lease), "site::boot/%s", site);
	bc_param lp[] = {BC_TEXT(lease)};
	assert_int_equal(
	    bct_exec(cp,
	             "INSERT INTO leases (name, holder, epoch, expires_at) VALUES ($1, "
	             "'node_s1', 1, 0)",
	             lp, 1),
	    0);
	snprintf(path, sizeof(path), "/v1/tenants/root/sites/%s", site);
	refused(cp, key, path,
	        (const char *const[]){"has 1 node, 1 live token, 1 open join request and 1 "
	                              "running commission workflow;",
	                              "cancel or complete the workflows first", NULL},
	        NULL);
	ok(cp, key, "POST", "/v1/tenants/root/workflows/wf_s1/cancel");
	ok(cp, key, "DELETE", "/v1/tenants/root/join-requests/jr_s1");
	snprintf(data, sizeof(data), "/v1/tenants/root/tokens/%s/revoke", tok);
	ok(cp, key, "POST", data);
	refused(cp, key, path,
	        (const char *const[]){"has 1 node; retire and delete the nodes first", NULL}, NULL);
	ok(cp, key, "POST", "/v1/tenants/root/nodes/node_s1/cordon");
	ok(cp, key, "DELETE", "/v1/tenants/root/nodes/node_s1");

	assert_int_equal(call(cp, key, "DELETE", path, NULL, &b), 200);
	assert_int_equal(call(cp, key, "GET", path, NULL, &b), 404);
	assert_int_equal(rows_naming(cp, "SELECT COUNT(*) FROM leases WHERE name = $1", lease), 0);
	assert_int_equal(
	    rows_naming(cp, "SELECT COUNT(*) FROM join_tokens WHERE site_id = $1", site), 0);
	assert_int_equal(rows_naming(cp,
	                             "SELECT COUNT(*) FROM audit WHERE action = 'site.deleted' AND "
	                             "subject = $1",
	                             site),
	                 1);
	free(site);
	free(key);
}

static void test_tenant_delete(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *key = make_key(cp, "root"), *t = create(cp, key, NULL, "tenants", "acme");
	char path[192], sub[192];
	char *pool = create(cp, key, t, "pools", "p"), *site = create(cp, key, t, "sites", "s");
	char *tkey = make_key(cp, t), tok[64];

	node_row(cp, "node_t1", t, NULL, NULL);
	free(bct_token(cp, &(struct bct_token_opts){.tenant = t, .pool = pool}, tok));
	request_row(cp, "jr_t1", t, NULL, NULL);
	workflow_row(cp, "wf_t1", t, "deploy", "{}");
	snprintf(path, sizeof(path), "/v1/tenants/%s", t);

	/* only a root key deletes tenants, and never its own tenant */
	assert_int_equal(call(cp, tkey, "DELETE", path, NULL, &b), 403);
	assert_non_null(strstr(b.buf, "only a key of the root tenant may delete tenants"));
	assert_int_equal(call(cp, key, "DELETE", "/v1/tenants/root", NULL, &b), 409);
	assert_non_null(strstr(b.buf, "the root tenant cannot be deleted"));
	assert_int_equal(call(cp, key, "DELETE", "/v1/tenants/tnt_none", NULL, &b), 404);

	refused(cp, key, path,
	        (const char *const[]){"has 1 node, 1 live token, 1 open join request, 1 running "
	                              "workflow, 1 pool, 1 site and 1 live API key;",
	                              "delete the pools, delete the sites and revoke the API keys "
	                              "first",
	                              NULL},
	        NULL);
	snprintf(sub, sizeof(sub), "/v1/tenants/%s/nodes/node_t1/retire", t);
	ok(cp, key, "POST", sub);
	snprintf(sub, sizeof(sub), "/v1/tenants/%s/nodes/node_t1", t);
	ok(cp, key, "DELETE", sub);
	snprintf(sub, sizeof(sub), "/v1/tenants/%s/tokens/%s/revoke", t, tok);
	ok(cp, key, "POST", sub);
	snprintf(sub, sizeof(sub), "/v1/tenants/%s/join-requests/jr_t1/deny", t);
	ok(cp, key, "POST", sub);
	snprintf(sub, sizeof(sub), "/v1/tenants/%s/workflows/wf_t1/cancel", t);
	ok(cp, key, "POST", sub);
	refused(cp, key, path,
	        (const char *const[]){"has 1 pool, 1 site and 1 live API key;", NULL},
	        (const char *const[]){"node", "token", "join request", "workflow", NULL});
	snprintf(sub, sizeof(sub), "/v1/tenants/%s/pools/%s", t, pool);
	ok(cp, key, "DELETE", sub);
	snprintf(sub, sizeof(sub), "/v1/tenants/%s/sites/%s", t, site);
	ok(cp, key, "DELETE", sub);
	/* the tenant's own admin key is refused once revoked: its last live key */
	char kid[31];
	memcpy(kid, tkey + 4, 30);
	kid[30] = 0;
	snprintf(sub, sizeof(sub), "/v1/tenants/%s/api-keys/%s/revoke", t, kid);
	ok(cp, key, "POST", sub);

	assert_int_equal(call(cp, key, "DELETE", path, NULL, &b), 200);
	assert_int_equal(call(cp, key, "GET", "/v1/tenants", NULL, &b), 200);
	assert_null(strstr(b.buf, t));
	assert_int_equal(rows_naming(cp, "SELECT COUNT(*) FROM api_keys WHERE tenant_id = $1", t),
	                 0);
	assert_int_equal(rows_naming(cp, "SELECT COUNT(*) FROM workflows WHERE tenant_id = $1", t),
	                 0);
	/* the audit row is the root tenant's: the deleted tenant's can no longer be read */
	assert_int_equal(
	    rows_naming(cp,
	                "SELECT COUNT(*) FROM audit WHERE tenant_id = 'root' AND action "
	                "= 'tenant.deleted' AND subject = $1 AND data LIKE "
	                "'%\"name\":\"acme\"%'",
	                t),
	    1);
	/* a name freed by the delete can be taken again */
	free(create(cp, key, NULL, "tenants", "acme"));
	free(pool);
	free(site);
	free(tkey);
	free(t);
	free(key);
}

/* Names that begin as the kind's ids do are refused at create and rename: commands
 * take such an argument for an id and would never find the object by its name. */
static void test_names_shaped_as_ids(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *key = make_key(cp, "root"), path[192];
	static const struct {
		const char *path, *body, *field, *prefix;
	} cases[] = {
	    {"/v1/tenants/root/pools", "{\"name\":\"pool_x\"}", "pool.name", "pool_"},
	    {"/v1/tenants/root/sites", "{\"name\":\"site_x\"}", "site.name", "site_"},
	    {"/v1/tenants", "{\"name\":\"tnt_x\"}", "tenant.name", "tnt_"},
	    {"/v1/tenants/root/api-keys", "{\"name\":\"key_x\"}", "apiKey.name", "key_"},
	};
	char want[160];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(call(cp, key, "POST", cases[i].path, cases[i].body, &b), 400);
		assert_non_null(strstr(b.buf, "\"INVALID_INPUT\""));
		/* the message is a JSON string: its quotes escaped */
		snprintf(want, sizeof(want), "%s: \\\"%.*s_x\\\" begins with %s as ids do",
		         cases[i].field, (int)strlen(cases[i].prefix) - 1, cases[i].prefix,
		         cases[i].prefix);
		if (strstr(b.buf, want) == NULL)
			fail_msg("no \"%s\" in %s", want, b.buf);
	}
	/* a name that only contains the prefix, or another kind's, is fine */
	char *p = create(cp, key, "root", "pools", "my_pool_x");
	free(create(cp, key, "root", "pools", "site_pool"));
	snprintf(path, sizeof(path), "/v1/tenants/root/pools/%s", p);
	assert_int_equal(call(cp, key, "PATCH", path, "{\"name\":\"pool_y\"}", &b), 400);
	assert_non_null(strstr(b.buf, "pool.name: \\\"pool_y\\\" begins with pool_"));
	free(p);
	free(key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_pool_delete, bct_cp_setup, bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_site_delete, bct_cp_setup, bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_tenant_delete, bct_cp_setup, bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_names_shaped_as_ids, bct_cp_setup,
	                                    bct_cp_teardown),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
