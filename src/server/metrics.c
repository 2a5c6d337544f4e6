/* Counters kept as the server serves, and the exposition text of a scrape. */
#include "server/metrics.h"

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "rows/join_requests.h"
#include "rows/leases.h"
#include "rows/nodes.h"

#define MAX_SERIES 256
#define LABEL_MAX  64
#define N_BUCKETS  13
#define N_OUTCOMES 4
#define OTHER      "(other)"

/* up to 10 s: past max_queue_wait_seconds' 3 s default, where requests are shed, so a
 * backlog shows in the buckets before the shedding starts */
static const double buckets[N_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                          0.25,  0.5,    1,     2.5,  5,     10};

/* A labelled counter: (attestor, reason) for refusals, (attestor, outcome) else. */
struct series {
	char a[LABEL_MAX];
	char b[LABEL_MAX];
	uint64_t n;
};

struct table {
	struct series s[MAX_SERIES];
	size_t n;
	uint64_t other;
};

struct histogram {
	char method[16];
	int status;
	uint64_t counts[N_BUCKETS]; /* cumulative when rendered, per bucket when kept */
	uint64_t count;
	double sum;
};

#define MAX_RPC_SERIES 32

/* The kinds of rows prune deletes, in the order of struct bc_prune_counts. */
static const char *const prune_kinds[] = {"attestation_uses", "join_tokens", "join_requests",
                                          "events",           "node_certs",  "audit"};
#define N_PRUNE_KINDS (sizeof(prune_kinds) / sizeof(prune_kinds[0]))

/* Renew's outcomes and bcd doctor's checks: fixed series. */
static const char *const renew_outcomes[] = {"renewed", "replayed", "refused"};
enum { RENEW_RENEWED, RENEW_REPLAYED, RENEW_REFUSED, N_RENEW_OUTCOMES };
static const char *const check_results[] = {"current", "refused"};

/* The nodes' states (the nodes table's state column) the fleet gauge names. */
static const char *const node_states[] = {"adopted", "cordoned", "retired"};
#define N_NODE_STATES 3

/* The fleet as its last query saw it (BC_METRICS_FLEET_MS). */
static const char *const windows[BC_ROW_FLEET_WINDOWS] = {"2h", "24h", "7d"};
static const int64_t window_ms[BC_ROW_FLEET_WINDOWS] = {2 * 3600 * 1000LL, 86400 * 1000LL,
                                                        7 * 86400 * 1000LL};

struct fleet {
	int64_t read_ms;                  /* 0: never read */
	int64_t nodes[N_NODE_STATES + 1]; /* the last: any other state */
	int64_t expiring[BC_ROW_FLEET_WINDOWS];
};

struct bc_metrics {
	pthread_mutex_t mu;
	struct table refusals;
	struct table outcomes;
	struct table renew_refusals; /* (reason, "") */
	uint64_t renew[N_RENEW_OUTCOMES];
	uint64_t checks[2]; /* current, refused */
	struct table admin; /* (method, code) */
	struct table site;  /* (method, code) */
	pthread_mutex_t fleet_mu;
	struct fleet fleet;
	struct histogram rpc[MAX_RPC_SERIES];
	size_t n_rpc;
	uint64_t rpc_other;
	uint64_t shed[3]; /* Join, Renew, any other method */
	uint64_t pruned[N_PRUNE_KINDS];
	uint64_t prune_runs[2]; /* failed, ok */
	int64_t started_ms;
};

int bc_metrics_new(struct bc_metrics **out)
{
	struct bc_metrics *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (m == NULL)
		return BC_ERR_NOMEM;
	if (pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return BC_ERR_INTERNAL;
	}
	if (pthread_mutex_init(&m->fleet_mu, NULL) != 0) {
		pthread_mutex_destroy(&m->mu);
		free(m);
		return BC_ERR_INTERNAL;
	}
	m->started_ms = bc_now_ms();
	*out = m;
	return 0;
}

void bc_metrics_free(struct bc_metrics *m)
{
	if (m == NULL)
		return;
	pthread_mutex_destroy(&m->mu);
	pthread_mutex_destroy(&m->fleet_mu);
	free(m);
}

/* Under mu: one more of (a, b), in a new series while there is room. */
static void bump(struct table *t, const char *a, const char *b)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->s[i].a, a) == 0 && strcmp(t->s[i].b, b) == 0) {
			t->s[i].n++;
			return;
		}
	}
	if (t->n == MAX_SERIES || strlen(a) >= LABEL_MAX || strlen(b) >= LABEL_MAX) {
		t->other++;
		return;
	}
	snprintf(t->s[t->n].a, LABEL_MAX, "%s", a);
	snprintf(t->s[t->n].b, LABEL_MAX, "%s", b);
	t->s[t->n++].n = 1;
}

void bc_metrics_refusal(struct bc_metrics *m, const char *attestor, const char *reason)
{
	pthread_mutex_lock(&m->mu);
	bump(&m->refusals, attestor ? attestor : "", reason ? reason : "");
	pthread_mutex_unlock(&m->mu);
}

void bc_metrics_renew_refusal(struct bc_metrics *m, const char *reason, int check)
{
	pthread_mutex_lock(&m->mu);
	if (check) {
		m->checks[1]++;
	} else {
		m->renew[RENEW_REFUSED]++;
		bump(&m->renew_refusals, reason ? reason : "", "");
	}
	pthread_mutex_unlock(&m->mu);
}

static const char *outcome_name(enum bc_join_outcome_type t)
{
	switch (t) {
	case BC_JOIN_OUTCOME_JOINED: return "joined";
	case BC_JOIN_OUTCOME_RECLAIMED: return "reclaimed";
	case BC_JOIN_OUTCOME_DEFERRED: return "deferred";
	default: return "other";
	}
}

void bc_metrics_outcome(struct bc_metrics *m, const struct bc_join_outcome *o)
{
	pthread_mutex_lock(&m->mu);
	switch (o->type) {
	case BC_JOIN_OUTCOME_RENEWED:
		m->renew[o->replayed ? RENEW_REPLAYED : RENEW_RENEWED]++;
		break;
	case BC_JOIN_OUTCOME_CHECKED: m->checks[0]++; break;
	default: bump(&m->outcomes, o->attestor ? o->attestor : "", outcome_name(o->type)); break;
	}
	pthread_mutex_unlock(&m->mu);
}

/* An HTTP status as a label: the three digits, or "other" (no sender makes series). */
static void code_label(int status, char out[8])
{
	if (status >= 100 && status <= 599)
		snprintf(out, 8, "%d", status);
	else
		snprintf(out, 8, "other");
}

static const char *const admin_methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};

void bc_metrics_admin(struct bc_metrics *m, const char *method, int status)
{
	const char *meth = "(other)";
	char code[8];

	for (size_t i = 0; i < sizeof(admin_methods) / sizeof(admin_methods[0]); i++)
		if (strcmp(method, admin_methods[i]) == 0)
			meth = admin_methods[i];
	code_label(status, code);
	pthread_mutex_lock(&m->mu);
	bump(&m->admin, meth, code);
	pthread_mutex_unlock(&m->mu);
}

void bc_metrics_site(struct bc_metrics *m, const char *method, int status)
{
	char code[8];

	code_label(status, code);
	pthread_mutex_lock(&m->mu);
	bump(&m->site, method, code);
	pthread_mutex_unlock(&m->mu);
}

static const char *const shed_methods[] = {"Join", "Renew", "(other)"};

void bc_metrics_shed(struct bc_metrics *m, const char *method)
{
	size_t i = 0;

	while (i < 2 && strcmp(method, shed_methods[i]) != 0)
		i++;
	pthread_mutex_lock(&m->mu);
	m->shed[i]++;
	pthread_mutex_unlock(&m->mu);
}

void bc_metrics_prune(struct bc_metrics *m, const struct bc_prune_counts *n, int ok)
{
	const int64_t v[N_PRUNE_KINDS] = {n->attestation_uses, n->join_tokens, n->join_requests,
	                                  n->events,           n->node_certs,  n->audit};

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < N_PRUNE_KINDS; i++)
		m->pruned[i] += v[i] > 0 ? (uint64_t)v[i] : 0;
	m->prune_runs[ok ? 1 : 0]++;
	pthread_mutex_unlock(&m->mu);
}

void bc_metrics_rpc(struct bc_metrics *m, const char *method, int status, double seconds)
{
	struct histogram *h = NULL;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n_rpc && h == NULL; i++)
		if (m->rpc[i].status == status && strcmp(m->rpc[i].method, method) == 0)
			h = &m->rpc[i];
	if (h == NULL && m->n_rpc < MAX_RPC_SERIES && strlen(method) < sizeof(h->method)) {
		h = &m->rpc[m->n_rpc++];
		snprintf(h->method, sizeof(h->method), "%s", method);
		h->status = status;
	}
	if (h == NULL) {
		m->rpc_other++;
	} else {
		for (size_t i = 0; i < N_BUCKETS; i++)
			if (seconds <= buckets[i]) {
				h->counts[i]++;
				break;
			}
		h->count++;
		h->sum += seconds;
	}
	pthread_mutex_unlock(&m->mu);
}

/* A label value as the exposition format quotes it. */
static int put_label(bc_buf *b, const char *v)
{
	int rc = 0;

	for (const char *p = v; *p && rc == 0; p++) {
		if (*p == '\\')
			rc = bc_buf_put(b, "\\\\", 2);
		else if (*p == '"')
			rc = bc_buf_put(b, "\\\"", 2);
		else if (*p == '\n')
			rc = bc_buf_put(b, "\\n", 2);
		else
			rc = bc_buf_put_u8(b, (uint8_t)*p);
	}
	return rc;
}

static int putf(bc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int putf(bc_buf *b, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return BC_ERR_LIMIT;
	return bc_buf_put(b, line, (size_t)n);
}

static int put_table(bc_buf *b, const struct table *t, const char *name, const char *help,
                     const char *la, const char *lb)
{
	int rc = putf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);

	for (size_t i = 0; rc == 0 && i < t->n; i++) {
		if ((rc = putf(b, "%s{%s=\"", name, la)) == 0 &&
		    (rc = put_label(b, t->s[i].a)) == 0 && (rc = putf(b, "\",%s=\"", lb)) == 0 &&
		    (rc = put_label(b, t->s[i].b)) == 0)
			rc = putf(b, "\"} %llu\n", (unsigned long long)t->s[i].n);
	}
	if (rc == 0 && t->other)
		rc = putf(b, "%s{%s=\"" OTHER "\",%s=\"" OTHER "\"} %llu\n", name, la, lb,
		          (unsigned long long)t->other);
	return rc;
}

/* A table of one label (the series' first), as put_table. */
static int put_table1(bc_buf *b, const struct table *t, const char *name, const char *help,
                      const char *la)
{
	int rc = putf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);

	for (size_t i = 0; rc == 0 && i < t->n; i++) {
		if ((rc = putf(b, "%s{%s=\"", name, la)) == 0 &&
		    (rc = put_label(b, t->s[i].a)) == 0)
			rc = putf(b, "\"} %llu\n", (unsigned long long)t->s[i].n);
	}
	if (rc == 0 && t->other)
		rc = putf(b, "%s{%s=\"" OTHER "\"} %llu\n", name, la, (unsigned long long)t->other);
	return rc;
}

/* Renew's outcomes, its refusals by reason and bcd doctor's checks, under mu. */
static int put_renew(bc_buf *b, const struct bc_metrics *m)
{
	int rc = putf(b, "# HELP bc_renew_outcomes_total Renewals: renewed, replayed (the "
	                 "certificate already issued, answered again) and refused\n"
	                 "# TYPE bc_renew_outcomes_total counter\n");

	for (size_t i = 0; rc == 0 && i < N_RENEW_OUTCOMES; i++)
		rc = putf(b, "bc_renew_outcomes_total{outcome=\"%s\"} %llu\n", renew_outcomes[i],
		          (unsigned long long)m->renew[i]);
	if (rc == 0)
		rc = put_table1(b, &m->renew_refusals, "bc_renew_refusals_total",
		                "Renewal refusals by reason (summarized ones counted each; bcd "
		                "doctor's checks apart)",
		                "reason");
	if (rc == 0)
		rc = putf(b, "# HELP bc_renew_checks_total bcd doctor's renewal checks (Renew's "
		             "checkOnly, which issues nothing) by result\n"
		             "# TYPE bc_renew_checks_total counter\n");
	for (size_t i = 0; rc == 0 && i < 2; i++)
		rc = putf(b, "bc_renew_checks_total{result=\"%s\"} %llu\n", check_results[i],
		          (unsigned long long)m->checks[i]);
	return rc;
}

static int put_histograms(bc_buf *b, const struct bc_metrics *m)
{
	const char *name = "bc_rpc_duration_seconds";
	int rc = putf(b,
	              "# HELP %s JoinService RPCs by method and HTTP status, from the request to "
	              "its answer\n# TYPE %s histogram\n",
	              name, name);

	for (size_t i = 0; rc == 0 && i < m->n_rpc; i++) {
		const struct histogram *h = &m->rpc[i];
		uint64_t cum = 0;
		for (size_t k = 0; rc == 0 && k < N_BUCKETS; k++) {
			cum += h->counts[k];
			rc = putf(b, "%s_bucket{method=\"%s\",code=\"%d\",le=\"%g\"} %llu\n", name,
			          h->method, h->status, buckets[k], (unsigned long long)cum);
		}
		if (rc == 0)
			rc = putf(b,
			          "%s_bucket{method=\"%s\",code=\"%d\",le=\"+Inf\"} %llu\n"
			          "%s_sum{method=\"%s\",code=\"%d\"} %.6f\n"
			          "%s_count{method=\"%s\",code=\"%d\"} %llu\n",
			          name, h->method, h->status, (unsigned long long)h->count, name,
			          h->method, h->status, h->sum, name, h->method, h->status,
			          (unsigned long long)h->count);
	}
	return rc;
}

/* process_*: what Prometheus' client libraries export, read from /proc. A value that
 * cannot be read is left out. */
static int put_process(bc_buf *b, int64_t started_ms)
{
	char stat[1024], *p;
	unsigned long long utime = 0, stime = 0;
	long long rss = 0;
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;
	int rc, fds = -1, have_stat = 0;
	FILE *f = fopen("/proc/self/stat", "r");
	DIR *d = opendir("/proc/self/fd");

	if (f != NULL) {
		/* the fields after the command's closing parenthesis: state is the 3rd,
		 * utime the 14th, stime the 15th, rss the 24th */
		if (fgets(stat, sizeof(stat), f) != NULL && (p = strrchr(stat, ')')) != NULL)
			have_stat = sscanf(p + 2,
			                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
			                   "%*d %*d %*d %*d %*d %*d %*u %*u %lld",
			                   &utime, &stime, &rss) == 3;
		fclose(f);
	}
	if (d != NULL) {
		fds = 0;
		for (struct dirent *e; (e = readdir(d)) != NULL;)
			fds += e->d_name[0] != '.';
		fds--; /* the directory's own descriptor, open while it is read */
		closedir(d);
	}
	rc = putf(b,
	          "# HELP process_start_time_seconds Start time of the process since the "
	          "epoch, in seconds\n# TYPE process_start_time_seconds gauge\n"
	          "process_start_time_seconds %lld\n",
	          (long long)(started_ms / 1000));
	if (rc == 0 && have_stat && tick > 0 && page > 0)
		rc = putf(b,
		          "# HELP process_cpu_seconds_total User and system CPU time spent, in "
		          "seconds\n# TYPE process_cpu_seconds_total counter\n"
		          "process_cpu_seconds_total %.2f\n"
		          "# HELP process_resident_memory_bytes Resident memory size, in bytes\n"
		          "# TYPE process_resident_memory_bytes gauge\n"
		          "process_resident_memory_bytes %lld\n",
		          (double)(utime + stime) / (double)tick, rss * (long long)page);
	if (rc == 0 && fds >= 0)
		rc = putf(b,
		          "# HELP process_open_fds Open file descriptors\n"
		          "# TYPE process_open_fds gauge\nprocess_open_fds %d\n",
		          fds);
	if (rc == 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		rc = putf(b,
		          "# HELP process_max_fds The most file descriptors the process may open\n"
		          "# TYPE process_max_fds gauge\nprocess_max_fds %llu\n",
		          (unsigned long long)rl.rlim_cur);
	return rc;
}

/* What the store says at the scrape. */
struct store_view {
	int want_fleet; /* the cached fleet is older than BC_METRICS_FLEET_MS */
	struct fleet fleet;
	int64_t pending;
	struct bc_lease_held *leases; /* site lease names and holders */
	size_t n_leases;
	int64_t now;
};

static int fleet_read(bc_tx *tx, struct store_view *v)
{
	int64_t until[BC_ROW_FLEET_WINDOWS];
	bc_rows *r = NULL;
	int rc;

	memset(&v->fleet, 0, sizeof(v->fleet));
	for (size_t i = 0; i < BC_ROW_FLEET_WINDOWS; i++)
		until[i] = v->now + window_ms[i];
	if ((rc = bc_row_nodes_fleet(tx, v->now, until, &r)) != 0)
		return rc;
	while ((rc = bc_rows_next(r)) == 1) {
		size_t i = 0;
		while (i < N_NODE_STATES && strcmp(bc_rows_text(r, 0), node_states[i]) != 0)
			i++;
		v->fleet.nodes[i] += bc_rows_int(r, 1);
		/* a retired node's certificate is nobody's to renew */
		for (size_t k = 0; i != 2 && k < BC_ROW_FLEET_WINDOWS; k++)
			v->fleet.expiring[k] += bc_rows_int(r, 2 + (int)k);
	}
	bc_rows_free(r);
	v->fleet.read_ms = v->now;
	return rc < 0 ? rc : 0;
}

static int store_tx(bc_tx *tx, void *arg)
{
	struct store_view *v = arg;
	int rc;

	v->now = bc_tx_now_ms(tx);
	/* a replayed transaction reads them again */
	bc_row_leases_free(v->leases, v->n_leases);
	v->leases = NULL;
	v->n_leases = 0;
	if ((rc = bc_row_join_requests_pending(tx, &v->pending)) != 0)
		return rc;
	if ((rc = bc_row_leases_held(tx, v->now, &v->leases, &v->n_leases)) != 0)
		return rc;
	return v->want_fleet ? fleet_read(tx, v) : 0;
}

static int put_fleet(bc_buf *b, const struct fleet *f)
{
	int rc = putf(b,
	              "# HELP bc_nodes Nodes of every tenant by state (read at most every "
	              "%d s)\n# TYPE bc_nodes gauge\n",
	              BC_METRICS_FLEET_MS / 1000);

	for (size_t i = 0; rc == 0 && i < N_NODE_STATES; i++)
		rc = putf(b, "bc_nodes{state=\"%s\"} %lld\n", node_states[i],
		          (long long)f->nodes[i]);
	if (rc == 0 && f->nodes[N_NODE_STATES])
		rc = putf(b, "bc_nodes{state=\"(other)\"} %lld\n",
		          (long long)f->nodes[N_NODE_STATES]);
	if (rc == 0)
		rc = putf(b, "# HELP bc_node_certificates_expiring Current node certificates of "
		             "nodes not retired that expire within the window and have not yet\n"
		             "# TYPE bc_node_certificates_expiring gauge\n");
	for (size_t k = 0; rc == 0 && k < BC_ROW_FLEET_WINDOWS; k++)
		rc = putf(b, "bc_node_certificates_expiring{within=\"%s\"} %lld\n", windows[k],
		          (long long)f->expiring[k]);
	return rc;
}

static int put_store(bc_buf *b, struct bc_metrics *m, const struct bc_metrics_extra *x)
{
	struct store_view v = {0};
	int up;

	/* one scrape at a time reads the fleet; the others meanwhile show the last read */
	pthread_mutex_lock(&m->fleet_mu);
	v.fleet = m->fleet;
	v.want_fleet =
	    m->fleet.read_ms == 0 || bc_now_ms() - m->fleet.read_ms >= BC_METRICS_FLEET_MS;
	up = x->store != NULL && bc_store_run(x->store, BC_TX_READ, store_tx, &v) == 0;
	if (up && v.want_fleet)
		m->fleet = v.fleet;
	pthread_mutex_unlock(&m->fleet_mu);
	int rc = putf(b,
	              "# HELP bc_store_up 1 when the store answered this scrape\n"
	              "# TYPE bc_store_up gauge\nbc_store_up %d\n",
	              up);

	if (rc == 0 && x->store != NULL)
		rc = putf(b,
		          "# HELP bc_store_transactions_total Transactions begun on the store\n"
		          "# TYPE bc_store_transactions_total counter\n"
		          "bc_store_transactions_total{mode=\"read\"} %llu\n"
		          "bc_store_transactions_total{mode=\"write\"} %llu\n"
		          "# HELP bc_store_statements_total SQL statements sent to the store, "
		          "besides each transaction's begin and commit\n"
		          "# TYPE bc_store_statements_total counter\n"
		          "bc_store_statements_total %llu\n"
		          "# HELP bc_store_transaction_seconds_total Time spent in store "
		          "transactions, from the begin to the commit or rollback\n"
		          "# TYPE bc_store_transaction_seconds_total counter\n"
		          "bc_store_transaction_seconds_total{mode=\"read\"} %.6f\n"
		          "bc_store_transaction_seconds_total{mode=\"write\"} %.6f\n",
		          (unsigned long long)bc_store_tx_begun(x->store, BC_TX_READ),
		          (unsigned long long)bc_store_tx_begun(x->store, BC_TX_WRITE),
		          (unsigned long long)bc_store_statements(x->store),
		          (double)bc_store_tx_us(x->store, BC_TX_READ) / 1e6,
		          (double)bc_store_tx_us(x->store, BC_TX_WRITE) / 1e6);
	if (rc == 0 && up)
		rc = putf(b,
		          "# HELP bc_join_requests_pending Join requests waiting for an operator\n"
		          "# TYPE bc_join_requests_pending gauge\nbc_join_requests_pending %lld\n"
		          "# HELP bc_site_lease_epoch The epoch of each site lease held now, by "
		          "lease and holder\n# TYPE bc_site_lease_epoch gauge\n",
		          (long long)v.pending);
	for (size_t i = 0; rc == 0 && up && i < v.n_leases; i++) {
		if ((rc = putf(b, "bc_site_lease_epoch{lease=\"")) == 0 &&
		    (rc = put_label(b, v.leases[i].name)) == 0 &&
		    (rc = putf(b, "\",holder=\"")) == 0 &&
		    (rc = put_label(b, v.leases[i].holder)) == 0)
			rc = putf(b, "\"} %lld\n", (long long)v.leases[i].epoch);
	}
	if (rc == 0 && up)
		rc = put_fleet(b, &v.fleet);
	bc_row_leases_free(v.leases, v.n_leases);
	return rc;
}

char *bc_metrics_render(struct bc_metrics *m, const struct bc_metrics_extra *x)
{
	bc_buf b;
	int rc;

	bc_buf_init(&b, 4u << 20);
	pthread_mutex_lock(&m->mu);
	rc = put_table(&b, &m->refusals, "bc_join_refusals_total",
	               "Join refusals by attestor and reason (summarized ones counted each)",
	               "attestor", "reason");
	if (rc == 0)
		rc = put_table(&b, &m->outcomes, "bc_join_outcomes_total",
		               "Joins admitted, reclaims and deferrals by attestor", "attestor",
		               "outcome");
	if (rc == 0)
		rc = put_renew(&b, m);
	if (rc == 0)
		rc = put_table(&b, &m->admin, "bc_admin_requests_total",
		               "Admin API requests (/v1/) by HTTP method and status", "method",
		               "code");
	if (rc == 0)
		rc = put_table(&b, &m->site, "bc_site_requests_total",
		               "SiteService and FetchSecret RPCs by method and HTTP status",
		               "method", "code");
	if (rc == 0)
		rc = put_histograms(&b, m);
	if (rc == 0)
		rc = putf(&b,
		          "# HELP bc_requests_shed_total JoinService requests answered unavailable "
		          "because they waited longer than max_queue_wait_seconds for a worker\n"
		          "# TYPE bc_requests_shed_total counter\n");
	for (size_t i = 0; rc == 0 && i < 3; i++)
		rc = putf(&b, "bc_requests_shed_total{method=\"%s\"} %llu\n", shed_methods[i],
		          (unsigned long long)m->shed[i]);
	if (rc == 0)
		rc = putf(&b,
		          "# HELP bc_prune_deleted_total Rows the server's own prune deleted, by "
		          "kind\n# TYPE bc_prune_deleted_total counter\n");
	for (size_t i = 0; rc == 0 && i < N_PRUNE_KINDS; i++)
		rc = putf(&b, "bc_prune_deleted_total{kind=\"%s\"} %llu\n", prune_kinds[i],
		          (unsigned long long)m->pruned[i]);
	if (rc == 0)
		rc = putf(&b,
		          "# HELP bc_prune_runs_total The server's own prunes, by result\n"
		          "# TYPE bc_prune_runs_total counter\n"
		          "bc_prune_runs_total{result=\"ok\"} %llu\n"
		          "bc_prune_runs_total{result=\"error\"} %llu\n",
		          (unsigned long long)m->prune_runs[1],
		          (unsigned long long)m->prune_runs[0]);
	pthread_mutex_unlock(&m->mu);
	if (rc == 0 && x->connections >= 0)
		rc = putf(&b,
		          "# HELP bc_http_connections Connections open now on the main listener\n"
		          "# TYPE bc_http_connections gauge\nbc_http_connections %lld\n",
		          (long long)x->connections);
	if (rc == 0)
		rc = put_process(&b, m->started_ms);
	if (rc == 0)
		rc = put_store(&b, m, x);
	if (rc == 0)
		rc = putf(&b,
		          "# HELP bc_on_refusal_dropped_total Refusals on_refusal never saw (its "
		          "queue was full)\n# TYPE bc_on_refusal_dropped_total counter\n"
		          "bc_on_refusal_dropped_total %llu\n"
		          "# HELP bc_build_info The server's build\n# TYPE bc_build_info gauge\n"
		          "bc_build_info{version=\"%s\"} 1\n"
		          "# HELP bc_start_time_seconds When the server started\n"
		          "# TYPE bc_start_time_seconds gauge\nbc_start_time_seconds %lld\n",
		          (unsigned long long)x->refusals_dropped, x->version,
		          (long long)(m->started_ms / 1000));
	if (rc == 0)
		rc =
		    putf(&b,
		         "# HELP bc_http_connections_evicted_total Connections closed to make room "
		         "for a new one from an address at max_connections_per_address (the one "
		         "still sending its request with the least progress)\n"
		         "# TYPE bc_http_connections_evicted_total counter\n"
		         "bc_http_connections_evicted_total %llu\n",
		         (unsigned long long)x->http_evicted);
	if (rc == 0 && x->tls_not_after_ms > 0)
		rc = putf(&b,
		          "# HELP bc_tls_certificate_expiry_timestamp_seconds When the TLS "
		          "certificate served now expires (renewed=\"auto\": the server renews it; "
		          "\"operator\": replace it yourself)\n"
		          "# TYPE bc_tls_certificate_expiry_timestamp_seconds gauge\n"
		          "bc_tls_certificate_expiry_timestamp_seconds{renewed=\"%s\"} %lld\n",
		          x->tls_ours ? "auto" : "operator",
		          (long long)(x->tls_not_after_ms / 1000));
	if (rc == 0 && x->node_ca_not_after_ms > 0)
		rc = putf(&b,
		          "# HELP bc_node_ca_expiry_timestamp_seconds When the node CA expires: "
		          "node certificates stop chaining then\n"
		          "# TYPE bc_node_ca_expiry_timestamp_seconds gauge\n"
		          "bc_node_ca_expiry_timestamp_seconds %lld\n",
		          (long long)(x->node_ca_not_after_ms / 1000));
	if (rc == 0)
		rc = bc_buf_put_u8(&b, 0);
	if (rc != 0) {
		bc_buf_free(&b);
		return NULL;
	}
	size_t n;
	return (char *)bc_buf_steal(&b, &n);
}
