/* `make bench-scale` (scripts/bench-scale.sh): a store filled directly with N nodes of
 * one tenant, two certificates each (an old one and the current one), three events
 * and one audit row a node, then the latency of each list's page (first, and after a
 * cursor in the middle), nodes get, the node counts, the /metrics text and a prune with
 * nothing to delete, and the store's size. Figures are printed, never asserted.
 *
 *   bc-scale URL N [RUNS]   URL: a SQLite path or postgres://...; an empty store */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/clock.h"
#include "bc/store.h"
#include "rows/history.h"
#include "rows/nodes.h"
#include "rows/query.h"
#include "rows/tokens.h"
#include "server/metrics.h"

static bc_store *st;
static int64_t n_nodes;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int exec_fn(bc_tx *tx, void *arg)
{
	return bc_tx_exec(tx, arg, NULL, 0, NULL);
}

static void must(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "bc-scale: %s: %s (%s)\n", what, bc_err_str(rc), bc_store_errmsg());
		exit(1);
	}
}

/* INSERT ... SELECT over i in 1..n, in chunks of 100,000 (one transaction each). */
static void fill(const char *insert_select, int64_t n)
{
	char sql[2048];

	for (int64_t lo = 1; lo <= n; lo += 100000) {
		int64_t hi = lo + 99999 < n ? lo + 99999 : n;
		snprintf(sql, sizeof(sql),
		         /* BIGINT: at 1,000,000 nodes the ids and times overflow an INTEGER */
		         "WITH RECURSIVE s(i) AS (SELECT CAST(%lld AS BIGINT) UNION ALL SELECT i + "
		         "1 FROM s WHERE i < %lld) %s",
		         (long long)lo, (long long)hi, insert_select);
		must(bc_store_run(st, BC_TX_WRITE, exec_fn, sql), "fill");
	}
}

struct op {
	const char *name;
	int (*fn)(bc_tx *tx);
};

static int rows_read; /* by the last operation: shown beside its time */

static int drain(bc_rows *r, int rc)
{
	int n = 0;

	if (rc != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1)
		n++;
	bc_rows_free(r);
	rows_read = n;
	return rc < 0 ? rc : 0;
}

static struct bc_cursor mid_node, mid_event, mid_audit;

static int nodes_first(bc_tx *tx)
{
	struct bc_row_node_filter f = {0};
	struct bc_row_page pg = {.limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_nodes_list(tx, "root", &f, &pg, &r));
}

static int nodes_middle(bc_tx *tx)
{
	struct bc_row_node_filter f = {0};
	struct bc_row_page pg = {.cursor = &mid_node, .limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_nodes_list(tx, "root", &f, &pg, &r));
}

static int nodes_cordoned(bc_tx *tx)
{
	struct bc_row_node_filter f = {.state = "cordoned"};
	struct bc_row_page pg = {.limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_nodes_list(tx, "root", &f, &pg, &r));
}

static int nodes_expiring(bc_tx *tx)
{
	struct bc_row_node_filter f = {.expiring_before = bc_now_ms() + 7 * 86400000LL};
	struct bc_row_page pg = {.limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_nodes_list(tx, "root", &f, &pg, &r));
}

static int nodes_get(bc_tx *tx)
{
	bc_rows *r = NULL;
	return drain(r, bc_row_nodes_get(tx, "root", mid_node.id, &r));
}

static int nodes_count(bc_tx *tx)
{
	bc_rows *r = NULL;
	return drain(r, bc_row_nodes_count(tx, "root", &r));
}

static int events_first(bc_tx *tx)
{
	struct bc_row_history_filter f = {0};
	struct bc_row_page pg = {.limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_events_list(tx, "root", &f, &pg, &r));
}

static int events_middle(bc_tx *tx)
{
	struct bc_row_history_filter f = {0};
	struct bc_row_page pg = {.cursor = &mid_event, .limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_events_list(tx, "root", &f, &pg, &r));
}

static int events_node(bc_tx *tx)
{
	struct bc_row_history_filter f = {.subject = mid_node.id};
	struct bc_row_page pg = {.limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_events_list(tx, "root", &f, &pg, &r));
}

static int audit_middle(bc_tx *tx)
{
	struct bc_row_history_filter f = {0};
	struct bc_row_page pg = {.cursor = &mid_audit, .limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_audit_list(tx, "root", &f, &pg, &r));
}

static int tokens_first(bc_tx *tx)
{
	struct bc_row_page pg = {.limit = 100};
	bc_rows *r = NULL;
	return drain(r, bc_row_tokens_list(tx, "root", &pg, &r));
}

static int metrics_text(bc_tx *tx)
{
	static struct bc_metrics *m;
	struct bc_metrics_extra x = {.store = bc_tx_store(tx), .version = "bench"};
	char *t;

	if (m == NULL && bc_metrics_new(&m) != 0)
		return BC_ERR_NOMEM;
	t = bc_metrics_render(m, &x);
	rows_read = 0;
	free(t);
	return t ? 0 : BC_ERR_NOMEM;
}

static const struct op ops[] = {
    {"nodes page 1", nodes_first},    {"nodes page mid", nodes_middle},
    {"nodes state=", nodes_cordoned}, {"nodes expiring", nodes_expiring},
    {"nodes get", nodes_get},         {"node-counts", nodes_count},
    {"events page 1", events_first},  {"events page mid", events_middle},
    {"events node=", events_node},    {"audit page mid", audit_middle},
    {"tokens page 1", tokens_first},  {"/metrics", metrics_text},
};

struct run_arg {
	const struct op *op;
};

static int run_fn(bc_tx *tx, void *arg)
{
	return ((struct run_arg *)arg)->op->fn(tx);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_ms(const struct op *op, int runs)
{
	double t[64];
	struct run_arg a = {op};

	if (runs > 64)
		runs = 64;
	for (int i = 0; i < runs; i++) {
		double s = now_s();
		/* a transaction of the store, as the admin API runs a list */
		must(bc_store_run(st, BC_TX_READ, run_fn, &a), op->name);
		t[i] = (now_s() - s) * 1000;
	}
	qsort(t, (size_t)runs, sizeof(t[0]), cmp);
	return t[runs / 2];
}

static int size_fn(bc_tx *tx, void *arg)
{
	int pg = bc_store_engine(bc_tx_store(tx)) == BC_STORE_POSTGRES;
	return bc_tx_query_int(tx,
	                       pg ? "SELECT pg_database_size(current_database())"
	                          : "SELECT page_count * page_size FROM pragma_page_count(), "
	                            "pragma_page_size()",
	                       NULL, 0, arg);
}

int main(int argc, char **argv)
{
	char err[512];
	int runs = argc > 3 ? atoi(argv[3]) : 21;
	int64_t now = bc_now_ms(), size = 0;
	struct bc_prune_opts po = {.event_retention_ms = 90 * 86400000LL,
	                           .audit_retention_ms = 400 * 86400000LL};
	struct bc_prune_counts pc;
	char sql[1024];
	double s;

	if (argc < 3 || (n_nodes = atoll(argv[2])) < 2) {
		fprintf(stderr, "usage: bc-scale URL N [RUNS]\n");
		return 2;
	}
	must(bc_store_open(argv[1], &st, err, sizeof(err)), err);
	s = now_s();
	snprintf(sql, sizeof(sql),
	         "INSERT INTO tenants (id, name, created_at) VALUES ('root', 'root', %lld)",
	         (long long)now);
	must(bc_store_run(st, BC_TX_WRITE, exec_fn, sql), "tenant");
	/* ids in time order like ULIDs: a fixed-width number */
	snprintf(sql, sizeof(sql),
	         "INSERT INTO nodes (id, tenant_id, role, state, attestor, hostname, joined_at, "
	         "updated_at, cert_serial, cert_not_after) SELECT 'node_' || (10000000 + i), "
	         "'root', 'node', CASE WHEN i %% 50 = 0 THEN 'cordoned' ELSE 'adopted' END, "
	         "'join-token', 'h' || i, %lld, %lld, 'b' || i, %lld + (i %% 1440) * 60000 FROM s",
	         (long long)now, (long long)now, (long long)now);
	fill(sql, n_nodes);
	snprintf(sql, sizeof(sql),
	         "INSERT INTO node_certs (serial, node_id, generation, der, der_sha256, "
	         "not_before, not_after, created_at) SELECT CASE WHEN i %% 2 = 0 THEN 'a' ELSE "
	         "'b' END || (i / 2), 'node_' || (10000000 + i / 2), 1, decode('00', 'hex'), 'd' "
	         "|| i, %lld, "
	         "%lld, %lld FROM s WHERE i / 2 >= 1 AND i / 2 <= %lld",
	         (long long)now, (long long)now + 86400000, (long long)now, (long long)n_nodes);
	fill(sql, 2 * n_nodes + 1);
	snprintf(sql, sizeof(sql),
	         "INSERT INTO events (id, tenant_id, type, subject, created_at) SELECT 'evt_' || "
	         "(10000000 + i), 'root', 'node.renewed', 'node_' || (10000000 + i %% %lld + 1), "
	         "%lld - (3 * %lld - i) * 1000 FROM s",
	         (long long)n_nodes, (long long)now, (long long)n_nodes);
	fill(sql, 3 * n_nodes);
	snprintf(sql, sizeof(sql),
	         "INSERT INTO audit (id, tenant_id, actor, action, subject, created_at) SELECT "
	         "'aud_' || (10000000 + i), 'root', 'node', 'node.renewed', 'node_' || (10000000 + "
	         "i), %lld - (%lld - i) * 1000 FROM s",
	         (long long)now, (long long)n_nodes);
	fill(sql, n_nodes);
	must(bc_store_run(st, BC_TX_WRITE, exec_fn, "ANALYZE"), "analyze");
	fprintf(stderr, "bc-scale: %lld nodes filled in %.1f s\n", (long long)n_nodes, now_s() - s);

	snprintf(mid_node.id, sizeof(mid_node.id), "node_%lld",
	         (long long)(10000000 + n_nodes / 2));
	snprintf(mid_event.id, sizeof(mid_event.id), "evt_%lld",
	         (long long)(10000000 + 3 * n_nodes / 2));
	mid_event.at = now - (3 * n_nodes - 3 * n_nodes / 2) * 1000;
	snprintf(mid_audit.id, sizeof(mid_audit.id), "aud_%lld",
	         (long long)(10000000 + n_nodes / 2));
	mid_audit.at = now - (n_nodes - n_nodes / 2) * 1000;

	must(bc_store_run(st, BC_TX_READ, size_fn, &size), "size");
	printf("N=%lld engine=%s store=%.1f MB\n", (long long)n_nodes,
	       bc_store_engine(st) == BC_STORE_POSTGRES ? "postgresql" : "sqlite",
	       (double)size / 1e6);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		double ms = median_ms(&ops[i], runs);
		printf("  %-16s %8.3f ms  %4d rows\n", ops[i].name, ms, rows_read);
	}
	s = now_s();
	must(bc_store_prune(st, &po, &pc), "prune");
	printf("  %-16s %8.3f ms (nothing to delete)\n", "prune", (now_s() - s) * 1000);
	bc_store_close(st);
	return 0;
}
