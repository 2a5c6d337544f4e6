/* node_bindings: a key an attestor binds (a TPM's EK) admits one node, ever, even when
 * two joins of that key race. On PostgreSQL (READ COMMITTED) a join that saw no
 * binding can find one committed by the time it inserts its own; it must be refused
 * (join:bound-elsewhere), never admitted as a second node without a binding. On
 * SQLite the joins run one after the other, and the second reclaims the bound node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/clock.h"
#include "bctest.h"
#include "join/join.h"

#define BIND_KIND "lab-key"
#define BIND_KEY  "k1"

static const char *const bind_roles[] = {"node"};

/* Admits every machine into the root tenant, bound to BIND_KEY. */
static int bind_verify(struct bc_attestor *self, bc_tx *tx, const struct bc_join_input *in,
                       struct bc_attest_outcome *out)
{
	(void)self;
	(void)tx;
	(void)in;
	out->kind = BC_OUTCOME_RESULT;
	snprintf(out->result.tenant_id, BC_ID_MAX, "%s", "root");
	snprintf(out->result.binding_kind, sizeof(out->result.binding_kind), "%s", BIND_KIND);
	snprintf(out->result.binding_key, sizeof(out->result.binding_key), "%s", BIND_KEY);
	return 0;
}

static const struct bc_attestor bind_attestor = {
    .abi = BC_ATTESTOR_ABI,
    .id = "bind",
    .roles = bind_roles,
    .n_roles = 1,
    .verify = bind_verify,
};

struct racer {
	struct bct_cp *cp;
	int rc;
	char node_id[64];
};

static void *race_join(void *arg)
{
	struct racer *r = arg;
	struct bct_join_opts jo = {.attestor = "bind"};
	struct bc_join_answer ans;

	r->rc = bct_join(r->cp, &jo, &ans);
	if (r->rc == 0) {
		snprintf(r->node_id, sizeof(r->node_id), "%s", ans.node_id);
		bc_join_answer_free(&ans);
	}
	return NULL;
}

/* Until another backend of this database waits on a lock (the racer's insert). */
static int wait_for_lock_waiter(struct bct_cp *cp)
{
	struct timespec ms10 = {0, 10 * 1000 * 1000};

	for (int i = 0; i < 1000; i++) {
		if (bct_count(cp,
		              "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = "
		              "current_database() AND wait_event_type = 'Lock'",
		              NULL, 0) > 0)
			return 0;
		nanosleep(&ms10, NULL);
	}
	return -1;
}

static void test_racing_join_of_a_bound_key_is_refused(void **state)
{
	struct bct_cp cp;
	struct bc_join_answer ans;
	struct racer r;
	pthread_t th;
	bc_tx *tx = NULL;
	char pool[64];
	(void)state;

	assert_int_equal(bct_cp_start(&cp, NULL), 0);
	assert_int_equal(bc_join_register(bc_server_join(cp.srv), &bind_attestor), 0);
	/* the machine that holds the key first: a node of its own */
	assert_int_equal(bct_pool(&cp, "root", "p", NULL, pool), 0);
	struct bct_token_opts to = {.pool = pool};
	char *t = bct_token(&cp, &to, NULL);
	struct bct_join_opts tj = {.token = t};
	assert_int_equal(bct_join(&cp, &tj, &ans), 0);
	size_t before = bct_refusal_count(&cp);

	/* that node's binding, not yet committed while the racing join runs */
	assert_int_equal(bc_tx_begin(bct_store(&cp), BC_TX_WRITE, &tx), 0);
	bc_param p[] = {BC_TEXT(BIND_KIND), BC_TEXT(BIND_KEY), BC_TEXT(ans.node_id),
	                BC_INT(bc_now_ms())};
	assert_int_equal(bc_tx_exec(tx,
	                            "INSERT INTO node_bindings (kind, key, node_id, created_at) "
	                            "VALUES ($1, $2, $3, $4)",
	                            p, 4, NULL),
	                 0);
	r.cp = &cp;
	r.rc = 1;
	assert_int_equal(pthread_create(&th, NULL, race_join, &r), 0);
	/* SQLite lets one writer in at a time: the racer waits for this commit and then
	 * sees the binding. PostgreSQL lets it run until its insert waits on this row. */
	if (bc_store_engine(bct_store(&cp)) == BC_STORE_POSTGRES)
		assert_int_equal(wait_for_lock_waiter(&cp), 0);
	assert_int_equal(bc_tx_commit(tx), 0);
	pthread_join(th, NULL);

	/* never a second node: the racer reclaims the bound node (it saw the binding), or
	 * is refused (it found the binding only when inserting its own) */
	if (r.rc == 0) {
		assert_string_equal(r.node_id, ans.node_id);
	} else {
		assert_int_equal(r.rc, BC_ERR_DENIED);
		assert_int_equal(bct_refusal_count(&cp), before + 1);
		assert_string_equal(bct_last_reason(&cp), "join:bound-elsewhere");
	}
	assert_int_equal(bct_count(&cp, "SELECT COUNT(*) FROM nodes", NULL, 0), 1);
	bc_param q[] = {BC_TEXT(BIND_KIND), BC_TEXT(BIND_KEY), BC_TEXT(ans.node_id)};
	assert_int_equal(
	    bct_count(&cp,
	              "SELECT COUNT(*) FROM node_bindings WHERE kind = $1 AND key = $2 "
	              "AND node_id = $3",
	              q, 3),
	    1);

	/* the key's own node still joins through it, as itself */
	struct bct_join_opts bj = {.attestor = "bind"};
	struct bc_join_answer again;
	assert_int_equal(bct_join(&cp, &bj, &again), 0);
	assert_string_equal(again.node_id, ans.node_id);
	bc_join_answer_free(&again);
	bc_join_answer_free(&ans);
	free(t);
	bct_cp_stop(&cp);
}

int main(void)
{
	if (bct_engine_skip())
		return BCT_SKIP;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_racing_join_of_a_bound_key_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
