/* The admin API's lists as keyset pages (docs/admin-api.md, "Lists and cursors"), on
 * each engine (BC_TEST_ENGINE): every list walked forward by nextCursor and back by
 * prevCursor reads each row once and in order, filters hold across pages, a cursor
 * of another list or out of shape is refused by name, and the current certificate
 * kept on a node's row follows issue and revocation. Rows are written directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "bc/clock.h"
#include "bc/store.h"
#include "bctest.h"
#include "rows/certs.h"
#include "server/admin.h"
#include "server/http.h"

#define N_NODES 60
#define N_ROWS  45
#define MAX_IDS 128
#define HOUR_MS (3600LL * 1000)

static struct bct_cp cp;
static struct bc_admin_config cfg;
static char auth[256];
static int64_t base_ms;

static int known(void *ctx, const char *id)
{
	(void)ctx;
	(void)id;
	return 1;
}

static const char *attestor_at(void *ctx, size_t i)
{
	static const char *const ids[] = {"join-token", "tpm"};

	(void)ctx;
	return i < 2 ? ids[i] : NULL;
}

static int make_key(bc_tx *tx, void *arg)
{
	char *k = NULL;
	int rc = bc_admin_create_api_key(tx, "root", "pages", &k);

	(void)arg;
	if (rc == 0)
		snprintf(auth, sizeof(auth), "Bearer %s", k);
	free(k);
	return rc;
}

static void exec3(const char *sql, const char *id, int64_t a, int64_t b)
{
	bc_param p[] = {BC_TEXT(id), BC_INT(a), BC_INT(b)};
	assert_int_equal(bct_exec(&cp, sql, p, 3), 0);
}

/* N_NODES nodes node_000.. (every third cordoned; the current certificate of node i
 * ends a day and i hours after base_ms), N_ROWS rows of every other list, two of
 * each history row per millisecond (the id breaks ties). */
static void fill(void)
{
	char id[32];

	for (int i = 0; i < N_NODES; i++) {
		snprintf(id, sizeof(id), "node_%03d", i);
		exec3(
		    "INSERT INTO nodes (id, tenant_id, role, state, attestor, joined_at, "
		    "updated_at, cert_serial, cert_not_after) VALUES ($1, 'root', 'node', "
		    "CASE WHEN $2 % 3 = 0 THEN 'cordoned' ELSE 'adopted' END, 'join-token', 1, 1, "
		    "'aa', $3)",
		    id, i, base_ms + 24 * HOUR_MS + i * HOUR_MS);
	}
	for (int i = 0; i < N_ROWS; i++) {
		snprintf(id, sizeof(id), "evt_%03d", i);
		exec3("INSERT INTO events (id, tenant_id, type, subject, created_at) VALUES ($1, "
		      "'root', CASE WHEN $2 % 2 = 0 THEN 'test.even' ELSE 'test.odd' END, "
		      "'node_001', $3)",
		      id, i, base_ms + i / 2);
		snprintf(id, sizeof(id), "aud_%03d", i);
		exec3("INSERT INTO audit (id, tenant_id, actor, action, created_at) VALUES ($1, "
		      "'root', 'test', CASE WHEN $2 % 2 = 0 THEN 'a.even' ELSE 'a.odd' END, $3)",
		      id, i, base_ms + i / 2);
		snprintf(id, sizeof(id), "tok_%03d", i);
		exec3(
		    "INSERT INTO join_tokens (id, tenant_id, role, secret_hash, uses_left, "
		    "uses_total, expires_at, created_at) VALUES ($1, 'root', 'node', '00', $2, $2, "
		    "$3, 1)",
		    id, 1, base_ms + HOUR_MS);
		snprintf(id, sizeof(id), "wf_%03d", i);
		exec3("INSERT INTO workflows (id, tenant_id, kind, state, created_at, updated_at) "
		      "VALUES ($1, 'root', 'commission', 'running', $2, $3)",
		      id, 1, 1);
		snprintf(id, sizeof(id), "jr_%03d", i);
		exec3(
		    "INSERT INTO join_requests (id, tenant_id, attestor, request_key, csr_sha256, "
		    "state, created_at, expires_at) VALUES ($1, 'root', 'tpm', $1, '00', "
		    "CASE WHEN $2 % 2 = 0 THEN 'pending' ELSE 'denied' END, 1, $3)",
		    id, i, base_ms + HOUR_MS);
	}
}

static int setup(void **state)
{
	(void)state;
	if (bct_cp_start(&cp, NULL) != 0)
		return -1;
	cfg = (struct bc_admin_config){.store = bct_store(&cp),
	                               .attestor_known = known,
	                               .attestor_at = attestor_at,
	                               .public_url = "http://127.0.0.1:1"};
	if (bc_store_run(cfg.store, BC_TX_WRITE, make_key, NULL) != 0)
		return -1;
	base_ms = bc_now_ms();
	fill();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bct_cp_stop(&cp);
	return 0;
}

/* GET url ("path?k=v&..."); the status, *out the answer. */
static int get(const char *url, json_t **out)
{
	char path[512], query[1024];
	const char *keys[12], *vals[12];
	size_t n = 0;
	const char *q = strchr(url, '?');
	struct bc_http_response resp = {0};

	snprintf(path, sizeof(path), "%.*s", q ? (int)(q - url) : (int)strlen(url), url);
	snprintf(query, sizeof(query), "%s", q ? q + 1 : "");
	for (char *save = NULL, *kv = strtok_r(query, "&", &save); kv && n < 12;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (eq)
			*eq = '\0';
		keys[n] = kv;
		vals[n++] = eq ? eq + 1 : "";
	}
	struct bc_http_request req = {.method = "GET",
	                              .content_type = "",
	                              .path = path,
	                              .authorization = auth,
	                              .peer = "127.0.0.1",
	                              .query_keys = keys,
	                              .query_vals = vals,
	                              .n_query = n};
	bc_admin_handle(&cfg, &req, &resp);
	assert_non_null(resp.body);
	*out = json_loadb((const char *)resp.body, resp.body_len, 0, NULL);
	free(resp.body);
	assert_non_null(*out);
	return resp.status;
}

static json_t *get_ok(const char *url)
{
	json_t *j;
	int st = get(url, &j);

	if (st != 200)
		fail_msg("GET %s: %d %s", url, st, json_dumps(j, 0));
	return j;
}

struct walk {
	char ids[MAX_IDS][32];
	size_t n;
	int pages;
};

/* The ids of page j (key: its list) appended to w (prepended when front). */
static void take(struct walk *w, const json_t *j, const char *key, int front, int64_t limit)
{
	const json_t *a = json_object_get(j, key);
	size_t m = json_array_size(a);

	assert_true(json_is_array(a));
	assert_true((int64_t)m <= limit);
	assert_true(w->n + m <= MAX_IDS);
	if (front)
		memmove(w->ids + m, w->ids, w->n * sizeof(w->ids[0]));
	for (size_t i = 0; i < m; i++)
		snprintf(w->ids[front ? i : w->n + i], sizeof(w->ids[0]), "%s",
		         json_string_value(json_object_get(json_array_get(a, i), "id")));
	w->n += m;
	w->pages++;
}

/* Walks list (base: its path and filters, "?..." included) forward by nextCursor, then
 * back from the last page by prevCursor: both read the same ids, in order. */
static void walk(const char *base, const char *key, int64_t limit, struct walk *fwd)
{
	struct walk back = {0};
	char url[1024];
	json_t *j, *last = NULL;
	const char *next;

	memset(fwd, 0, sizeof(*fwd));
	snprintf(url, sizeof(url), "%s&limit=%lld", base, (long long)limit);
	j = get_ok(url);
	assert_true(json_is_null(json_object_get(j, "prevCursor")));
	for (;;) {
		take(fwd, j, key, 0, limit);
		next = json_string_value(json_object_get(j, "nextCursor"));
		if (next == NULL) {
			last = j;
			break;
		}
		/* a page that names a next one is full */
		assert_int_equal(json_array_size(json_object_get(j, key)), limit);
		snprintf(url, sizeof(url), "%s&limit=%lld&cursor=%s", base, (long long)limit, next);
		json_decref(j);
		j = get_ok(url);
		assert_true(json_is_string(json_object_get(j, "prevCursor")));
	}
	take(&back, last, key, 1, limit);
	while (json_is_string(json_object_get(j, "prevCursor"))) {
		snprintf(url, sizeof(url), "%s&limit=%lld&cursor=%s", base, (long long)limit,
		         json_string_value(json_object_get(j, "prevCursor")));
		json_decref(j);
		j = get_ok(url);
		/* a page before always names the page it came from */
		assert_true(json_is_string(json_object_get(j, "nextCursor")));
		take(&back, j, key, 1, limit);
	}
	json_decref(j);
	assert_int_equal(back.n, fwd->n);
	for (size_t i = 0; i < fwd->n; i++)
		assert_string_equal(back.ids[i], fwd->ids[i]);
}

/* ids are in strictly increasing (or, desc, decreasing) order */
static void ordered(const struct walk *w, int desc)
{
	for (size_t i = 1; i < w->n; i++)
		assert_true(desc ? strcmp(w->ids[i - 1], w->ids[i]) > 0
		                 : strcmp(w->ids[i - 1], w->ids[i]) < 0);
}

static void test_nodes_pages(void **state)
{
	struct walk w;
	char url[256];

	(void)state;
	walk("/v1/tenants/root/nodes?", "nodes", 7, &w);
	assert_int_equal(w.n, N_NODES);
	assert_int_equal(w.pages, (N_NODES + 6) / 7);
	ordered(&w, 0);
	/* a filter holds across pages */
	walk("/v1/tenants/root/nodes?state=cordoned", "nodes", 4, &w);
	assert_int_equal(w.n, N_NODES / 3);
	for (size_t i = 0; i < w.n; i++)
		assert_int_equal(atoi(w.ids[i] + 5) % 3, 0);
	/* expiring: ordered by expiry, i.e. node i in order; within a day and 10 hours
	 * and a half of base_ms: nodes 0 to 10 (half an hour either side) */
	snprintf(url, sizeof(url), "/v1/tenants/root/nodes?expiringWithin=%lldm",
	         (long long)((24 * HOUR_MS + 10 * HOUR_MS + HOUR_MS / 2 - (bc_now_ms() - base_ms)) /
	                     60000));
	walk(url, "nodes", 3, &w);
	assert_int_equal(w.n, 11);
	ordered(&w, 0);
	/* the page after an id, the older form, is the id order's */
	{
		json_t *j = get_ok("/v1/tenants/root/nodes?after=node_057&limit=5");
		const json_t *a = json_object_get(j, "nodes");
		assert_int_equal(json_array_size(a), 2);
		assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "id")),
		                    "node_058");
		assert_true(json_is_null(json_object_get(j, "nextCursor")));
		json_decref(j);
	}
}

static void test_counts(void **state)
{
	json_t *j;

	(void)state;
	j = get_ok("/v1/tenants/root/node-counts");
	assert_int_equal(json_integer_value(json_object_get(j, "total")), N_NODES);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "byState"), "cordoned")),
	    N_NODES / 3);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "byState"), "adopted")),
	    N_NODES - N_NODES / 3);
	/* by role, attestor and pool (none), and certificates: node i's ends a day and i
	 * hours after base_ms, so one within a day, every one within 7 days */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "byRole"), "node")),
	                 N_NODES);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "byAttestor"), "join-token")),
	    N_NODES);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "byPool"), "none")),
	                 N_NODES);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "certificates"),
	                                                    "expiringWithin1d")),
	                 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "certificates"),
	                                                    "expiringWithin7d")),
	                 N_NODES);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "certificates"), "expired")), 0);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "certificates"), "none")), 0);
	json_decref(j);
}

/* GET /v1/server: what any key may know of the server */
static void test_server_facts(void **state)
{
	json_t *j, *a;

	(void)state;
	j = get_ok("/v1/server");
	assert_string_equal(json_string_value(json_object_get(j, "version")), BC_VERSION);
	assert_string_equal(json_string_value(json_object_get(j, "publicUrl")),
	                    "http://127.0.0.1:1");
	a = json_object_get(j, "attestors");
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_array_get(a, 1)), "tpm");
	json_decref(j);
}

static void test_history_pages(void **state)
{
	struct walk w;
	char url[256];

	(void)state;
	walk("/v1/tenants/root/events?", "events", 4, &w);
	assert_int_equal(w.n, N_ROWS);
	ordered(&w, 1); /* newest first; two a millisecond, the id breaks the tie */
	walk("/v1/tenants/root/events?type=test.odd", "events", 4, &w);
	assert_int_equal(w.n, N_ROWS / 2);
	walk("/v1/tenants/root/events?node=node_001", "events", 10, &w);
	assert_int_equal(w.n, N_ROWS);
	/* since and until: [base + 5, base + 10) holds rows 10 to 19 */
	snprintf(url, sizeof(url), "/v1/tenants/root/events?since=%lld&until=%lld",
	         (long long)(base_ms + 5), (long long)(base_ms + 10));
	walk(url, "events", 3, &w);
	assert_int_equal(w.n, 10);
	assert_string_equal(w.ids[0], "evt_019");
	assert_string_equal(w.ids[9], "evt_010");
	walk("/v1/tenants/root/audit?", "audit", 6, &w);
	assert_int_equal(w.n, N_ROWS);
	ordered(&w, 1);
	walk("/v1/tenants/root/audit?action=a.even", "audit", 6, &w);
	assert_int_equal(w.n, (N_ROWS + 1) / 2);
}

static void test_other_pages(void **state)
{
	struct walk w;

	(void)state;
	walk("/v1/tenants/root/tokens?", "tokens", 8, &w);
	assert_int_equal(w.n, N_ROWS);
	ordered(&w, 0);
	walk("/v1/tenants/root/workflows?", "workflows", 8, &w);
	assert_int_equal(w.n, N_ROWS);
	ordered(&w, 0);
	walk("/v1/tenants/root/join-requests?", "joinRequests", 8, &w);
	assert_int_equal(w.n, N_ROWS);
	walk("/v1/tenants/root/join-requests?state=pending", "joinRequests", 8, &w);
	assert_int_equal(w.n, (N_ROWS + 1) / 2);
	ordered(&w, 0);
}

static void expect_refused(const char *url, const char *prefix)
{
	json_t *j;
	const char *m;

	assert_int_equal(get(url, &j), 400);
	m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
	assert_non_null(m);
	if (strncmp(m, prefix, strlen(prefix)) != 0)
		fail_msg("%s: \"%s\", want \"%s...\"", url, m, prefix);
	json_decref(j);
}

static void test_cursor_refused(void **state)
{
	json_t *j;
	char url[512];

	(void)state;
	/* a nodes cursor on events, on the expiring order, on tokens: each refused */
	j = get_ok("/v1/tenants/root/nodes?limit=2");
	const char *next = json_string_value(json_object_get(j, "nextCursor"));
	assert_non_null(next);
	snprintf(url, sizeof(url), "/v1/tenants/root/events?cursor=%s", next);
	expect_refused(url, "cursor: not a cursor of this list");
	snprintf(url, sizeof(url), "/v1/tenants/root/nodes?expiringWithin=2h&cursor=%s", next);
	expect_refused(url, "cursor: not a cursor of this list");
	snprintf(url, sizeof(url), "/v1/tenants/root/tokens?cursor=%s", next);
	expect_refused(url, "cursor: not a cursor of this list");
	snprintf(url, sizeof(url), "/v1/tenants/root/nodes?after=node_001&cursor=%s", next);
	expect_refused(url, "after: give cursor or after, not both");
	json_decref(j);
	expect_refused("/v1/tenants/root/nodes?cursor=not-a-cursor",
	               "cursor: not a cursor of this list");
	expect_refused("/v1/tenants/root/audit?cursor=bm9kZXMubi41Lm5vZGVfMQ",
	               "cursor: not a cursor of this list");
	expect_refused("/v1/tenants/root/nodes?after=node_001&expiringWithin=2h",
	               "after: not with expiringWithin");
	expect_refused("/v1/tenants/root/events?until=soon", "until: expected a duration");
	expect_refused("/v1/tenants/root/workflows?limit=1001", "limit: expected");
}

struct certs {
	int revoke;
	int64_t not_after;
};

static int cert_fn(bc_tx *tx, void *arg)
{
	struct certs *a = arg;
	static const uint8_t der[] = {0x30, 0x03, 0x02, 0x01, 0x07};
	struct bc_cert_write c = {.serial = "0badcafe",
	                          .node_id = "node_059",
	                          .generation = 1,
	                          .der = der,
	                          .der_len = sizeof(der),
	                          .not_before = base_ms,
	                          .not_after = a->not_after,
	                          .role = "node"};

	if (a->revoke)
		return bc_row_cert_revoke_all(tx, "node_059", base_ms, NULL);
	return bc_row_cert_insert(tx, &c);
}

/* The current certificate on the node's row follows an issue and a revocation; the
 * expiring list reads it. */
static void test_current_cert_kept(void **state)
{
	struct certs a = {.not_after = base_ms + 2 * HOUR_MS};
	json_t *j;
	const json_t *n;

	(void)state;
	assert_int_equal(bc_store_run(cfg.store, BC_TX_WRITE, cert_fn, &a), 0);
	j = get_ok("/v1/tenants/root/nodes?expiringWithin=4h");
	n = json_array_get(json_object_get(j, "nodes"), 0);
	assert_int_equal(json_array_size(json_object_get(j, "nodes")), 1);
	assert_string_equal(json_string_value(json_object_get(n, "id")), "node_059");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(n, "certificate"), "serial")),
	    "0badcafe");
	json_decref(j);
	a.revoke = 1;
	assert_int_equal(bc_store_run(cfg.store, BC_TX_WRITE, cert_fn, &a), 0);
	j = get_ok("/v1/tenants/root/nodes?expiringWithin=4h");
	assert_int_equal(json_array_size(json_object_get(j, "nodes")), 0);
	json_decref(j);
	j = get_ok("/v1/tenants/root/nodes?after=node_058");
	n = json_array_get(json_object_get(j, "nodes"), 0);
	assert_true(json_is_null(json_object_get(n, "certificate")));
	json_decref(j);
	/* the node's page: its certificates, the revoked one among them, none current */
	j = get_ok("/v1/tenants/root/nodes/node_059/certificates");
	assert_true(json_is_null(json_object_get(j, "currentSerial")));
	assert_int_equal(json_array_size(json_object_get(j, "certificates")), 1);
	n = json_array_get(json_object_get(j, "certificates"), 0);
	assert_string_equal(json_string_value(json_object_get(n, "serial")), "0badcafe");
	assert_int_equal(json_integer_value(json_object_get(n, "generation")), 1);
	assert_non_null(json_string_value(json_object_get(n, "revokedAt")));
	assert_int_equal(json_array_size(json_object_get(j, "bindings")), 0);
	json_decref(j);
	/* a node without a certificate that is not retired is counted as such */
	j = get_ok("/v1/tenants/root/node-counts");
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "certificates"), "none")), 1);
	json_decref(j);
	assert_int_equal(get("/v1/tenants/root/nodes/node_nosuch/certificates", &j), 404);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nodes_pages),    cmocka_unit_test(test_counts),
	    cmocka_unit_test(test_history_pages),  cmocka_unit_test(test_other_pages),
	    cmocka_unit_test(test_cursor_refused), cmocka_unit_test(test_current_cert_kept),
	    cmocka_unit_test(test_server_facts),
	};

	if (bct_engine_skip())
		return 0;
	return cmocka_run_group_tests(tests, setup, teardown);
}
