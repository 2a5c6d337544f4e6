/* libFuzzer: arbitrary request bodies through bc_admin_handle() to the routes that
 * take the most structured JSON: POST tokens (expect, bounds), PATCH and POST pools
 * (the policy and joinAttestors), machines commission (MAC, UUID) and deploy (a node
 * with inventory: site_fuzz and node_fuzz are seeded). The first byte picks the
 * route; the rest is the body. Routes 5 to 7 are the list routes with query arguments
 * (nodes, events, audit): the rest is "key=value" pairs split at '&', NUL-terminated.
 * The store is one SQLite file under /tmp, created at the first input.
 *
 * Every answer must be JSON with a status the API documents; a 500 is a finding. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bc/log.h"
#include "bc/store.h"
#include "server/admin.h"

static struct bc_admin_config cfg;
static char auth[192];
static char pool_path[160];
static char dir[] = "/tmp/bc-fuzz-admin-XXXXXX";

/* libFuzzer ends with exit(): the database goes with the process */
static void remove_store(void)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
	char path[96];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(path, sizeof(path), "%s/bc.db%s", dir, suffixes[i]);
		unlink(path);
	}
	rmdir(dir);
}

static int known(void *ctx, const char *id)
{
	return strcmp(id, "join-token") == 0 || strcmp(id, "tpm") == 0;
}

static int seed(bc_tx *tx, void *arg)
{
	char **key = arg;
	int rc;

	bc_param p[] = {BC_INT(1)};
	if ((rc = bc_tx_exec(
	         tx, "INSERT INTO tenants (id, name, created_at) VALUES ('root', 'root', $1)", p, 1,
	         NULL)) != 0)
		return rc;
	if ((rc = bc_tx_exec(tx,
	                     "INSERT INTO sites (id, tenant_id, name, created_at) VALUES "
	                     "('site_fuzz', 'root', 'fuzz', 1)",
	                     NULL, 0, NULL)) != 0 ||
	    (rc = bc_tx_exec(tx,
	                     "INSERT INTO nodes (id, tenant_id, role, state, attestor, joined_at, "
	                     "updated_at) VALUES ('node_fuzz', 'root', 'node', 'adopted', "
	                     "'join-token', 1, 1)",
	                     NULL, 0, NULL)) != 0 ||
	    (rc = bc_tx_exec(tx,
	                     "INSERT INTO inventory (node_id, taken_at, data) VALUES ('node_fuzz', "
	                     "1, '{\"productUuid\":\"6b1d0c3e-aaaa-4000-8000-000000000001\"}')",
	                     NULL, 0, NULL)) != 0)
		return rc;
	return bc_admin_create_api_key(tx, "root", "fuzz", key);
}

#define MAX_QUERY 8

/* GET path with the query arguments of text ("a=1&b=2"). */
static void handle_query(const char *path, const uint8_t *data, size_t len,
                         struct bc_http_response *resp)
{
	const char *keys[MAX_QUERY], *vals[MAX_QUERY];
	char *text = strndup((const char *)data, len), *p = text, *amp;
	size_t n = 0;

	if (text == NULL)
		abort();
	while (p != NULL && n < MAX_QUERY) {
		char *eq;

		if ((amp = strchr(p, '&')) != NULL)
			*amp = '\0';
		eq = strchr(p, '=');
		if (eq != NULL)
			*eq = '\0';
		keys[n] = p;
		vals[n++] = eq ? eq + 1 : "";
		p = amp ? amp + 1 : NULL;
	}
	struct bc_http_request req = {
	    .method = "GET",
	    .path = path,
	    .authorization = auth,
	    .peer = "127.0.0.1",
	    .query_keys = keys,
	    .query_vals = vals,
	    .n_query = n,
	};
	memset(resp, 0, sizeof(*resp));
	bc_admin_handle(&cfg, &req, resp);
	free(text);
}

static void handle(const char *method, const char *path, const uint8_t *body, size_t len,
                   struct bc_http_response *resp)
{
	struct bc_http_request req = {
	    .method = method,
	    .path = path,
	    .content_type = "application/json",
	    .authorization = auth,
	    .body = body,
	    .body_len = len,
	    .peer = "127.0.0.1",
	};

	memset(resp, 0, sizeof(*resp));
	bc_admin_handle(&cfg, &req, resp);
}

static void init(void)
{
	char db[96], err[256];
	struct bc_http_response resp;
	bc_store *store = NULL;
	char *key = NULL;
	json_t *j;

	bc_log_set_level(BC_LOG_ERROR);
	if (mkdtemp(dir) == NULL)
		abort();
	atexit(remove_store);
	snprintf(db, sizeof(db), "%s/bc.db", dir);
	if (bc_store_open(db, &store, err, sizeof(err)) != 0 ||
	    bc_store_run(store, BC_TX_WRITE, seed, &key) != 0)
		abort();
	snprintf(auth, sizeof(auth), "Bearer %s", key);
	free(key);
	cfg.store = store;
	cfg.public_url = "https://127.0.0.1:8443";
	cfg.attestor_known = known;
	handle("POST", "/v1/tenants/root/pools", (const uint8_t *)"{\"name\":\"fuzz\"}", 15, &resp);
	if (resp.status != 201 ||
	    (j = json_loadb((char *)resp.body, resp.body_len, 0, NULL)) == NULL)
		abort();
	snprintf(pool_path, sizeof(pool_path), "/v1/tenants/root/pools/%s",
	         json_string_value(json_object_get(j, "id")));
	json_decref(j);
	free(resp.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct bc_http_response resp;
	json_t *j;

	if (!ready) {
		init();
		ready = 1;
	}
	if (size == 0)
		return 0;
	switch (data[0] % 8) {
	case 0: handle("POST", "/v1/tenants/root/tokens", data + 1, size - 1, &resp); break;
	case 1: handle("PATCH", pool_path, data + 1, size - 1, &resp); break;
	case 2:
		handle("POST", "/v1/tenants/root/machines/commission", data + 1, size - 1, &resp);
		break;
	case 3:
		handle("POST", "/v1/tenants/root/machines/deploy", data + 1, size - 1, &resp);
		break;
	case 5: handle_query("/v1/tenants/root/nodes", data + 1, size - 1, &resp); break;
	case 6: handle_query("/v1/tenants/root/events", data + 1, size - 1, &resp); break;
	case 7: handle_query("/v1/tenants/root/audit", data + 1, size - 1, &resp); break;
	default: handle("POST", "/v1/tenants/root/pools", data + 1, size - 1, &resp); break;
	}
	if (resp.status != 200 && resp.status != 201 && resp.status != 400 && resp.status != 409)
		abort();
	j = json_loadb((const char *)resp.body, resp.body_len, 0, NULL);
	if (j == NULL)
		abort();
	json_decref(j);
	free(resp.body);
	return 0;
}
