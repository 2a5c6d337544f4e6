/* Scoped API keys (docs/admin-api.md, "Roles") against a control plane over loopback
 * HTTP: every route of the admin API's own table called with a root key of each role
 * (admin, operator, viewer, metrics), allowed or refused 403 as the documented rule
 * says, so that a route added to the table is reached here without a line of this
 * file; whoami's role and allowed routes; GET /metrics by role; roles at key
 * creation; keys made before roles are admin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bct_http.h"
#include "bctest.h"
#include "server/admin.h"

static const char *const ROLES[] = {"metrics", "viewer", "operator", "admin"};
#define N_ROLES 4

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

struct key_req {
	const char *tenant, *role;
	char *key;
};

static int key_tx(bc_tx *tx, void *arg)
{
	struct key_req *k = arg;

	return bc_admin_create_api_key_role(tx, k->tenant, k->role, k->role, &k->key);
}

/* A new key of tenant with role (malloc'd). */
static char *make_key(struct bct_cp *cp, const char *tenant, const char *role)
{
	struct key_req k = {tenant, role, NULL};

	assert_int_equal(bc_store_run(bct_store(cp), BC_TX_WRITE, key_tx, &k), 0);
	assert_non_null(k.key);
	return k.key;
}

static int role_rank(const char *role)
{
	for (int i = 0; i < N_ROLES; i++)
		if (strcmp(ROLES[i], role) == 0)
			return i;
	fail_msg("unknown role %s", role);
	return -1;
}

/* The rule as docs/admin-api.md states it, apart from the table that implements it:
 * a GET is for viewers; writing API keys or tenants is for admins; any other write
 * is for operators. */
static const char *documented_role(const char *method, const char *pattern)
{
	if (strcmp(method, "GET") == 0)
		return "viewer";
	if (strstr(pattern, "/api-keys") != NULL || strcmp(pattern, "/v1/tenants") == 0 ||
	    strcmp(pattern, "/v1/tenants/{t}") == 0)
		return "admin";
	return "operator";
}

/* pattern with {t} as the root tenant and every other capture an id of nothing, so
 * that an allowed call changes nothing (404, 400 or 409 at most). */
static void fill(const char *pattern, char *out, size_t len)
{
	size_t o = 0;
	int first = 1;

	for (const char *p = pattern; *p != '\0' && o + 16 < len;) {
		if (*p == '{') {
			o += (size_t)snprintf(out + o, len - o, "%s",
			                      first ? "root" : "nothing_here");
			first = 0;
			p = strchr(p, '}') + 1;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
}

static void test_every_route_with_every_role(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *keys[N_ROLES], path[256], want[128];
	const char *method, *pattern, *min_role;
	size_t i, refused = 0, allowed = 0;

	for (int r = 0; r < N_ROLES; r++)
		keys[r] = make_key(cp, "root", ROLES[r]);
	for (i = 0; bc_admin_route_at(i, &method, &pattern, &min_role) == 0; i++) {
		assert_string_equal(min_role, documented_role(method, pattern));
		fill(pattern, path, sizeof(path));
		for (int r = 0; r < N_ROLES; r++) {
			int body = strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0;
			long st = call(cp, keys[r], method, path, body ? "{}" : NULL, &b);

			if (role_rank(ROLES[r]) >= role_rank(min_role)) {
				if (st == 403 || st == 401)
					fail_msg("%s %s as %s: %ld %s", method, path, ROLES[r], st,
					         b.buf);
				allowed++;
				continue;
			}
			if (st != 403)
				fail_msg("%s %s as %s: %ld, not 403: %s", method, path, ROLES[r],
				         st, b.buf);
			assert_non_null(strstr(b.buf, "\"ACCESS_DENIED\""));
			snprintf(want, sizeof(want), "%s %s needs role %s or above", method,
			         pattern, min_role);
			if (strstr(b.buf, want) == NULL)
				fail_msg("%s as %s: no \"%s\" in %s", path, ROLES[r], want, b.buf);
			if (strcmp(ROLES[r], "metrics") == 0)
				assert_non_null(strstr(b.buf, "may only GET /metrics"));
			refused++;
		}
	}
	/* the table has routes of each kind, and each role was both let in and kept out */
	assert_true(i >= 40);
	assert_true(allowed > 0 && refused > 0);
	for (int r = 0; r < N_ROLES; r++)
		free(keys[r]);
}

static void test_whoami_names_the_role_and_its_routes(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *viewer = make_key(cp, "root", "viewer"), *admin = make_key(cp, "root", "admin");
	const char *m, *p, *r;
	size_t routes = 0;
	json_t *j;

	size_t all_gets = 0;

	while (bc_admin_route_at(routes, &m, &p, &r) == 0) {
		all_gets += strcmp(m, "GET") == 0;
		routes++;
	}
	assert_int_equal(call(cp, viewer, "GET", "/v1/whoami", NULL, &b), 200);
	assert_non_null(j = json_loads(b.buf, 0, NULL));
	assert_string_equal(json_string_value(json_object_get(j, "role")), "viewer");
	assert_string_equal(json_string_value(json_object_get(j, "tenantId")), "root");
	json_t *allows = json_object_get(j, "allows"), *v;
	size_t k, gets = 0, others = 0;
	json_array_foreach(allows, k, v)
	{
		if (strncmp(json_string_value(v), "GET ", 4) == 0)
			gets++;
		else
			others++;
	}
	assert_int_equal(gets, all_gets);
	assert_int_equal(others, 0);
	json_decref(j);

	assert_int_equal(call(cp, admin, "GET", "/v1/whoami", NULL, &b), 200);
	assert_non_null(j = json_loads(b.buf, 0, NULL));
	assert_string_equal(json_string_value(json_object_get(j, "role")), "admin");
	assert_int_equal(json_array_size(json_object_get(j, "allows")), routes);
	json_decref(j);
	free(viewer);
	free(admin);
}

/* /metrics: a root key of any role (a viewer reads every tenant's events already);
 * another tenant's metrics key is 401 there as before; a metrics key is refused
 * everywhere under /v1/. */
static void test_metrics_by_role(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *keys[N_ROLES], *acme;

	assert_int_equal(bct_tenant(cp, "acme"), 0);
	acme = make_key(cp, "acme", "metrics");
	for (int r = 0; r < N_ROLES; r++) {
		keys[r] = make_key(cp, "root", ROLES[r]);
		assert_int_equal(call(cp, keys[r], "GET", "/metrics", NULL, &b), 200);
		assert_non_null(strstr(b.buf, "bc_join_refusals_total"));
	}
	assert_int_equal(call(cp, acme, "GET", "/metrics", NULL, &b), 401);
	assert_int_equal(call(cp, keys[0], "GET", "/v1/whoami", NULL, &b), 403);
	assert_non_null(strstr(b.buf, "this API key's role is metrics"));
	assert_int_equal(call(cp, acme, "GET", "/v1/tenants/acme/nodes", NULL, &b), 403);
	for (int r = 0; r < N_ROLES; r++)
		free(keys[r]);
	free(acme);
}

static void test_roles_at_key_creation(void **state)
{
	struct bct_cp *cp = *state;
	static struct body b;
	char *admin = make_key(cp, "root", "admin"), *made;
	json_t *j;

	/* a role given is the key's; the new key can read and not write */
	assert_int_equal(call(cp, admin, "POST", "/v1/tenants/root/api-keys",
	                      "{\"name\":\"dash\",\"role\":\"viewer\"}", &b),
	                 201);
	assert_non_null(j = json_loads(b.buf, 0, NULL));
	assert_string_equal(json_string_value(json_object_get(j, "role")), "viewer");
	assert_non_null(made = strdup(json_string_value(json_object_get(j, "key"))));
	json_decref(j);
	assert_int_equal(call(cp, made, "GET", "/v1/tenants/root/pools", NULL, &b), 200);
	assert_int_equal(call(cp, made, "POST", "/v1/tenants/root/pools", "{\"name\":\"p\"}", &b),
	                 403);
	assert_non_null(strstr(b.buf, "needs role operator or above"));
	free(made);
	/* none given: admin (docs/admin-api.md says why) */
	assert_int_equal(
	    call(cp, admin, "POST", "/v1/tenants/root/api-keys", "{\"name\":\"ci\"}", &b), 201);
	assert_non_null(strstr(b.buf, "\"role\":\"admin\""));
	/* the list shows each key's role */
	assert_int_equal(call(cp, admin, "GET", "/v1/tenants/root/api-keys", NULL, &b), 200);
	assert_non_null(strstr(b.buf, "\"role\":\"viewer\""));
	/* a role that is none of the four, or not a string */
	assert_int_equal(call(cp, admin, "POST", "/v1/tenants/root/api-keys",
	                      "{\"name\":\"x\",\"role\":\"root\"}", &b),
	                 400);
	assert_non_null(strstr(b.buf, "apiKey.role: expected admin, operator, viewer or metrics"));
	assert_int_equal(
	    call(cp, admin, "POST", "/v1/tenants/root/api-keys", "{\"name\":\"x\",\"role\":3}", &b),
	    400);
	assert_non_null(strstr(b.buf, "apiKey.role"));
	/* an operator may not make keys at all: no key makes one above its own role */
	char *op = make_key(cp, "root", "operator");
	assert_int_equal(call(cp, op, "POST", "/v1/tenants/root/api-keys",
	                      "{\"name\":\"x\",\"role\":\"operator\"}", &b),
	                 403);
	assert_non_null(strstr(b.buf, "needs role admin or above"));
	/* the audit row of a creation names the role */
	assert_int_equal(bct_count(cp,
	                           "SELECT COUNT(*) FROM audit WHERE action = 'admin.key.created' "
	                           "AND data LIKE '%\"role\":\"viewer\"%'",
	                           NULL, 0),
	                 1);
	free(op);
	free(admin);
}

/* A key stored before roles (a row without the column's value) is an admin. */
static void test_keys_without_a_role_are_admin(void **state)
{
	struct bct_cp *cp = *state;
	bc_param p[] = {BC_INT(1000)};

	assert_int_equal(bct_exec(cp,
	                          "INSERT INTO api_keys (id, tenant_id, secret_hash, name, "
	                          "created_at) VALUES ('key_old', 'root', 'x', 'old', $1)",
	                          p, 1),
	                 0);
	char *role = bct_text(cp, "SELECT role FROM api_keys WHERE id = 'key_old'", NULL, 0);
	assert_non_null(role);
	assert_string_equal(role, "admin");
	free(role);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_every_route_with_every_role, bct_cp_setup,
	                                    bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_whoami_names_the_role_and_its_routes, bct_cp_setup,
	                                    bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_by_role, bct_cp_setup, bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_roles_at_key_creation, bct_cp_setup,
	                                    bct_cp_teardown),
	    cmocka_unit_test_setup_teardown(test_keys_without_a_role_are_admin, bct_cp_setup,
	                                    bct_cp_teardown),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
