/* machines enroll, end to end in-process: a discovered (ramdisk) node enrolled in a
 * pool through the admin API over loopback HTTP, deployed, and re-keyed in place by the
 * deploy's provisioned join through the real client (the same node id, its generation
 * raised, role node in that pool, its ramdisk certificates revoked, its inventory and
 * history kept, the workflow succeeded). Every refusal of enroll and deploy by its
 * message, the pool's joinAttestors at enroll and at the join, and join:not-enrolled. */
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
#include "bc/pki.h"
#include "bct_http.h"
#include "bctest.h"
#include "provision/provision.h"
#include "rows/certs.h"
#include "rows/inventory.h"
#include "rows/nodes.h"
#include "server/admin.h"

#define UUID_A "6b1f3c52-0a4e-4d7b-9c1e-2f3a4b5c6d7e"
#define UUID_B "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"
#define UUID_C "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
#define UUID_D "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f60"
#define UUID_E "3e4f5a6b-7c8d-4e9f-8a1b-2c3d4e5f6071"
#define KINDS  "[\"inventory.refresh\",\"deploy.*\"]"

static struct bct_cp cp;
static char web[64], tpm_only[64], site[64];
static char *api_key;

/* ---- the admin API over loopback ---- */

/* POST path with the JSON in; the status, the answer in *out (parsed; NULL if none). */
static long post(const char *path, const char *json, json_t **out)
{
	char *text = NULL;
	long status = bct_http(&cp, "POST", path, api_key, json, &text);

	assert_true(status > 0);
	*out = text != NULL ? json_loads(text, 0, NULL) : NULL;
	free(text);
	return status;
}

static long enroll(const char *node, const char *pool, json_t **out)
{
	char json[256];

	snprintf(json, sizeof(json), "{\"nodeId\":\"%s\",\"poolId\":\"%s\"}", node, pool);
	return post("/v1/tenants/root/machines/enroll", json, out);
}

/* A refusal: status, code and a message holding want. */
static void refused_api(long status, json_t *ans, long want_status, const char *code,
                        const char *want)
{
	json_t *e = json_object_get(ans, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));

	if (status != want_status || msg == NULL)
		fail_msg("status %ld (want %ld), message %s", status, want_status,
		         msg ? msg : "(none)");
	assert_string_equal(json_string_value(json_object_get(e, "code")), code);
	if (strstr(msg, want) == NULL)
		fail_msg("message \"%s\" does not hold \"%s\"", msg, want);
	json_decref(ans);
}

static void enroll_refused(const char *node, const char *pool, long status, const char *code,
                           const char *want)
{
	json_t *ans = NULL;
	long got = enroll(node, pool, &ans);
	refused_api(got, ans, status, code, want);
}

static void deploy_refused(const char *node, const char *want)
{
	char json[128];
	json_t *ans = NULL;

	snprintf(json, sizeof(json), "{\"nodeId\":\"%s\"}", node);
	long got = post("/v1/tenants/root/machines/deploy", json, &ans);
	refused_api(got, ans, 409, "CONFLICT", want);
}

/* A deploy through the API: the token (malloc'd) and the workflow id. */
static char *deploy(const char *node, char wf[64])
{
	char json[128], *token;
	json_t *ans = NULL;

	snprintf(json, sizeof(json), "{\"nodeId\":\"%s\"}", node);
	assert_int_equal(post("/v1/tenants/root/machines/deploy", json, &ans), 201);
	snprintf(wf, 64, "%s",
	         json_string_value(json_object_get(json_object_get(ans, "workflow"), "id")));
	token = strdup(json_string_value(json_object_get(ans, "token")));
	json_decref(ans);
	return token;
}

/* ---- a discovered machine, as the discovery attestor leaves it ---- */

struct ramdisk {
	const char *id, *uuid, *mac, *state;
};

/* A ramdisk node of the site, of generation 1, with its first inventory record and a
 * current ramdisk certificate (the rows a discovery join writes). */
static int ramdisk_tx(bc_tx *tx, void *arg)
{
	const struct ramdisk *m = arg;
	const char *macs[] = {m->mac};
	struct bc_claims cl = {.macs = macs,
	                       .n_macs = 1,
	                       .product_uuid = m->uuid,
	                       .serial = "SN-1",
	                       .hostname = "",
	                       .arch = "x86_64"};
	char key[96], serial[40];
	uint8_t der[16] = {0x30}, point[65] = {4};
	int64_t now = bc_now_ms();
	int rc;

	snprintf(key, sizeof(key), "uuid:%s", m->uuid);
	struct bc_node_write n = {.id = m->id,
	                          .tenant_id = "root",
	                          .pool_id = "",
	                          .site_id = site,
	                          .role = "ramdisk",
	                          .hardware_key = key,
	                          .hardware_key_claimed = 1,
	                          .claims = &cl,
	                          .agent_version = "test",
	                          .attestor = "discovery",
	                          .allowed_kinds = KINDS,
	                          .now_ms = now};
	memcpy(der + 1, m->id + strlen(m->id) - 15, 15);
	snprintf(serial, sizeof(serial), "ab%s", m->id + 5);
	struct bc_cert_write c = {.serial = serial,
	                          .node_id = m->id,
	                          .generation = 1,
	                          .der = der,
	                          .der_len = sizeof(der),
	                          .not_before = now,
	                          .not_after = now + 7200 * 1000,
	                          .point = point,
	                          .role = "ramdisk"};
	if ((rc = bc_row_node_insert(tx, &n)) != 0 ||
	    (rc = bc_row_inventory_insert(tx, m->id, &cl, now, 0)) != 0 ||
	    (rc = bc_row_cert_insert(tx, &c)) != 0)
		return rc;
	if (m->state)
		rc = bc_row_node_set_state(tx, m->id, m->state, now);
	return rc;
}

static void ramdisk(const char *id, const char *uuid, const char *mac, const char *state)
{
	struct ramdisk m = {id, uuid, mac, state};
	assert_int_equal(bc_store_run(bct_store(&cp), BC_TX_WRITE, ramdisk_tx, &m), 0);
}

static int key_tx(bc_tx *tx, void *arg)
{
	return bc_admin_create_api_key(tx, "root", "test", (char **)arg);
}

static int setup(void **state)
{
	(void)state;
	if (bct_cp_start(&cp, "[attestors.provisioned]\n") != 0 ||
	    bct_pool(&cp, "root", "web", "{\"joinAttestors\":[\"provisioned\",\"x509pop\"]}",
	             web) != 0 ||
	    bct_pool(&cp, "root", "tpm-only", "{\"joinAttestors\":[\"tpm\"]}", tpm_only) != 0 ||
	    bct_site(&cp, "root", "dc1", site) != 0)
		return -1;
	return bc_store_run(bct_store(&cp), BC_TX_WRITE, key_tx, &api_key);
}

static int teardown(void **state)
{
	(void)state;
	free(api_key);
	bct_cp_stop(&cp);
	return 0;
}

static int64_t count1(const char *sql, const char *a)
{
	bc_param p[] = {BC_TEXT(a)};
	return bct_count(&cp, sql, p, 1);
}

static int prov_join(const char *token, const char *uuid, struct bc_join_answer *ans)
{
	struct bct_join_opts jo = {.attestor = "provisioned",
	                           .token = token,
	                           .product_uuid = uuid,
	                           .mac = "52:54:00:00:00:01"};
	return bct_join(&cp, &jo, ans);
}

/* ---- the walk ---- */

static void test_enroll_deploy_rekeys_in_place(void **state)
{
	static const char *id = "node_00000000000000000000000e01";
	struct bc_join_answer ans;
	struct bc_node_identity nid;
	json_t *node = NULL;
	char wf[64];
	(void)state;

	ramdisk(id, UUID_A, "52:54:00:00:00:01", NULL);
	/* the answer is the node, now of the pool, still the ramdisk it was */
	assert_int_equal(enroll(id, web, &node), 200);
	assert_string_equal(json_string_value(json_object_get(node, "id")), id);
	assert_string_equal(json_string_value(json_object_get(node, "poolId")), web);
	assert_string_equal(json_string_value(json_object_get(node, "role")), "ramdisk");
	assert_int_equal(json_array_size(json_object_get(node, "allowedKinds")), 2);
	json_decref(node);
	assert_int_equal(bct_events(&cp, "node.enrolled", NULL, id), 1);

	char *token = deploy(id, wf);
	assert_int_equal(prov_join(token, UUID_A, &ans), 0);
	free(token);
	/* the same node, re-keyed as a node of the pool */
	assert_string_equal(ans.node_id, id);
	assert_int_equal(
	    bc_pki_node_identity(ans.chain[0], ans.chain_lens[0], "bc.test", &nid, NULL), 0);
	assert_string_equal(nid.role, "node");
	bc_node_identity_clear(&nid);
	bc_join_answer_free(&ans);
	bc_param p[] = {BC_TEXT(id), BC_TEXT(web)};
	assert_int_equal(bct_count(&cp,
	                           "SELECT COUNT(*) FROM nodes WHERE id = $1 AND pool_id = $2 AND "
	                           "role = 'node' AND generation = 2 AND attestor = 'provisioned' "
	                           "AND allowed_kinds = '[]'",
	                           p, 2),
	                 1);
	/* its ramdisk certificate revoked; its inventory and history kept */
	assert_int_equal(count1("SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                        "generation = 1 AND revoked_at IS NULL",
	                        id),
	                 0);
	assert_int_equal(count1("SELECT COUNT(*) FROM node_certs WHERE node_id = $1 AND "
	                        "generation = 2 AND role = 'node'",
	                        id),
	                 1);
	assert_int_equal(count1("SELECT COUNT(*) FROM inventory WHERE node_id = $1", id), 2);
	assert_int_equal(bct_events(&cp, "node.enrolled", NULL, id), 1);
	assert_int_equal(bct_events(&cp, "node.reclaimed", NULL, id), 1);
	/* the installed node has no ramdisk kinds: the event says so */
	char *ev = bct_event_newest(&cp, "node.reclaimed", NULL, id);
	assert_non_null(ev);
	if (strstr(ev, "\"allowedKinds\":[]") == NULL && strstr(ev, "\"allowedKinds\": []") == NULL)
		fail_msg("node.reclaimed without allowedKinds []: %s", ev);
	free(ev);
	assert_int_equal(count1("SELECT COUNT(*) FROM workflows WHERE id = $1 AND "
	                        "state = 'succeeded'",
	                        wf),
	                 1);
	/* once a node, it is no ramdisk to enroll */
	enroll_refused(id, web, 409, "CONFLICT", "is of role node, not a discovered ramdisk");
}

/* ---- refusals, each by its message ---- */

static void test_enroll_refusals(void **state)
{
	static const char *a = "node_00000000000000000000000e02";
	static const char *retired = "node_00000000000000000000000e03";
	json_t *node = NULL;
	(void)state;

	ramdisk(a, UUID_B, "52:54:00:00:00:02", NULL);
	ramdisk(retired, UUID_C, "52:54:00:00:00:03", "retired");
	/* a deploy needs the enrollment first */
	deploy_refused(a, "is a discovered ramdisk in no pool: enroll it first");
	enroll_refused("node_00000000000000000000000zzz", web, 404, "NOT_FOUND", "node not found");
	enroll_refused(a, "pool_00000000000000000000000zzz", 400, "INVALID_INPUT",
	               "enroll.poolId: no such pool in this tenant");
	enroll_refused(retired, web, 409, "CONFLICT", "is retired: delete it");
	/* the pool's joinAttestors would refuse the deploy's join: refused now */
	enroll_refused(a, tpm_only, 409, "CONFLICT", "does not admit provisioned joins");
	/* nothing above changed the node */
	assert_int_equal(count1("SELECT COUNT(*) FROM nodes WHERE id = $1 AND pool_id IS NULL", a),
	                 1);
	assert_int_equal(enroll(a, web, &node), 200);
	json_decref(node);
	enroll_refused(a, web, 409, "CONFLICT", "is already enrolled in pool");
	assert_int_equal(bct_events(&cp, "node.enrolled", NULL, a), 1);
}

/* The pool's policy holds at the provisioned join too: changed after the enrollment, it
 * refuses the join (the token stays usable). */
static void test_pool_policy_at_the_join(void **state)
{
	static const char *id = "node_00000000000000000000000e04";
	struct bc_join_answer ans;
	json_t *node = NULL;
	char pool[64], wf[64];
	(void)state;

	assert_int_equal(bct_pool(&cp, "root", "later-tpm", "{}", pool), 0);
	ramdisk(id, UUID_D, "52:54:00:00:00:04", NULL);
	assert_int_equal(enroll(id, pool, &node), 200);
	json_decref(node);
	char *token = deploy(id, wf);
	bc_param p[] = {BC_TEXT(pool)};
	assert_int_equal(
	    bct_exec(&cp, "UPDATE pools SET policy = '{\"joinAttestors\":[\"tpm\"]}' WHERE id = $1",
	             p, 1),
	    0);
	assert_int_equal(prov_join(token, UUID_D, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "join:pool-attestor");
	assert_int_equal(count1("SELECT COUNT(*) FROM nodes WHERE id = $1 AND role = 'ramdisk' "
	                        "AND generation = 1",
	                        id),
	                 1);
	free(token);
}

/* A deploy of a ramdisk in no pool (made behind the API's back, as a deploy left from
 * before its node was reset would be) does not turn it into a node. */
static void test_not_enrolled_is_refused_at_the_join(void **state)
{
	static const char *id = "node_00000000000000000000000e05";
	struct bc_join_answer ans;
	char wf[64], tok_id[64], *data = NULL;
	(void)state;

	ramdisk(id, UUID_E, "52:54:00:00:00:05", NULL);
	struct bct_token_opts to = {.role = "provisioned", .uses = 1, .expect = "{}"};
	char *token = bct_token(&cp, &to, tok_id);
	assert_non_null(token);
	assert_int_equal(bc_new_id("wf", wf, 64), 0);
	assert_int_equal(bc_workflow_deploy_data(tok_id, 0, 1, &data), 0);
	bc_param w[] = {BC_TEXT(wf), BC_TEXT(id), BC_TEXT(data)};
	assert_int_equal(bct_exec(&cp,
	                          "INSERT INTO workflows (id, tenant_id, node_id, kind, state, "
	                          "data, created_at, updated_at) VALUES ($1, 'root', $2, "
	                          "'deploy', 'running', $3, 1, 1)",
	                          w, 3),
	                 0);
	bc_param t[] = {BC_TEXT(wf), BC_TEXT(id), BC_TEXT(tok_id)};
	assert_int_equal(bct_exec(&cp,
	                          "UPDATE join_tokens SET workflow_id = $1, node_id = $2 "
	                          "WHERE id = $3",
	                          t, 3),
	                 0);
	free(data);
	assert_int_equal(prov_join(token, UUID_E, &ans), BC_ERR_DENIED);
	assert_string_equal(bct_last_reason(&cp), "join:not-enrolled");
	assert_int_equal(count1("SELECT COUNT(*) FROM nodes WHERE id = $1 AND role = 'ramdisk' "
	                        "AND generation = 1",
	                        id),
	                 1);
	free(token);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_enroll_deploy_rekeys_in_place),
	    cmocka_unit_test(test_enroll_refusals),
	    cmocka_unit_test(test_pool_policy_at_the_join),
	    cmocka_unit_test(test_not_enrolled_is_refused_at_the_join),
	};
	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, setup, teardown);
}
