/* bc-load: a load generator for token joins, used by the end-to-end tests and by
 * `make bench`. It makes a pool and N join tokens directly in the store (the same
 * database the servers use), then C client threads join over a list of server URLs
 * (join i goes to URL i mod count and spends token i mod N) through the real client,
 * and it prints one line:
 *
 *   joins=J clients=C servers=S seconds=T joins_per_s=R admitted=A refused=D
 *   unavailable=U errors=E join_p50_ms=.. join_p99_ms=.. [server_cpu_ms_per_join=..]
 *   load_cpu_ms_per_join=..
 *   [renews=N renew_seconds=T renews_per_s=R renewed=A renew_refused=D renew_errors=E
 *    renew_p50_ms=.. renew_p99_ms=.. [server_cpu_ms_per_renew=..] load_cpu_ms_per_renew=..]
 *   crypto_ms_per_join=.. crypto_ms_per_renew=.. tls_handshake_crypto_ms=..
 *   [floor_server_cpu_ms_per_request=.. floor_cpu_ms_per_commit=..]
 *
 *   bc-load --pins FILE --database URL --url URL [--url URL]... [--tokens N]
 *           [--uses K] [--joins J] [--clients C] [--retry-unavailable SECONDS]
 *           [--renew] [--server-pid PID]... [--metrics-key FILE] [--rate R] [--floor]
 *
 * The joins and renewals go through the client library (bc_client_join,
 * bc_client_renew) over the project's one HTTP client (bc/httpc.h: one SSL_CTX a thread
 * for the pinned CA, a fresh connection and a full TLS handshake an operation), as bcd
 * sends them, so that the load generator costs what an agent's handshake costs and
 * leaves the CPU to the servers.
 *
 * --rate: the operations of each phase are offered at that many a second (operation i
 * starts i / rate seconds into it, or when a client is free, whichever is later),
 * rather than as fast as answers come back: the latency at a given load.
 * --metrics-key: a root API key (in FILE) to read every server's /metrics around each
 * phase: the SQL statements sent to the store per operation (statements_per_join,
 * statements_per_renew; bc_store_statements_total, besides each transaction's begin and
 * commit) and the requests shed (shed_joins, shed_renews; bc_requests_shed_total).
 *
 * --renew: after the joins, every admitted node renews once (its next key made before
 * the clock starts), timed apart. --server-pid: the servers' processes (on this
 * machine), whose CPU time (user + system, from /proc) is read around each phase and
 * printed per operation, and whose peak resident set (VmHWM) is printed at the end
 * (server_peak_rss_kb). load_cpu_ms_per_*: this process's own CPU per operation (every
 * thread), the share of the machine the clients take from the servers beside them. crypto_ms_per_*:
 * the signature and key-agreement work an operation cannot avoid on the server, as bare OpenSSL
 * operations timed in this process on this machine: a join is one ECDH (the sealed token), one
 * ECDSA verify (the CSR) and two ECDSA signs (the certificate, the answer); a renewal three
 * verifies (the CSR, the leaf under the CA, the proof) and two signs.
 * tls_handshake_crypto_ms: what a full TLS 1.3 handshake adds on the server, timed the
 * same way: one X25519 key share made and agreed (the group OpenSSL and curl put first)
 * and one ECDSA P-256 sign (the CertificateVerify; the server's certificate is P-256).
 *
 * --floor: last, what any operation costs here besides its own work, in the same run:
 * floor_server_cpu_ms_per_request, the servers' CPU per HTTP request on a fresh
 * connection to a path no route serves (404: accept, parse, answer, close; for an https
 * URL a full TLS handshake first, under the pinned CA; at least 2000 of them, from the
 * clients at once); floor_cpu_ms_per_commit (SQLite only), this
 * process's CPU per durable one-row commit to a new database beside --database (WAL,
 * synchronous=FULL, as the server's store): the write and fsync of a commit on this
 * disk, before group commit shares it among the writers.
 *
 * --joins defaults to N*K. Keys and CSRs are made before the clock starts and every
 * client starts at once (a barrier), so a race of C clients for one token is a race.
 * refused: permission_denied. unavailable: HTTP 503 answers (counted each time);
 * with --retry-unavailable the join (and the renewal: renew_unavailable) is sent again
 * (the same CSR, token and keys) after the answer's Retry-After, drawn from [1, 5/4) of
 * it as bcd does, or after 100 ms without one, until it gets another answer or the
 * seconds run out. errors: anything else (a
 * connection refused, a bad answer). The figures are printed, never judged: exit 0
 * when the run happened, 1 when it could not be set up, 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bc/buf.h"
#include "bc/client.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/store.h"
#include "bc/wire.h"
#include "bc/httpc.h"

#define MAX_URLS       16
#define MAX_CLIENTS    8192
#define MAX_JOINS      1000000
#define TOKEN_TTL_MS   (3600LL * 1000)
#define RETRY_PAUSE_MS 100

struct opts {
	const char *pins_file, *database;
	const char *urls[MAX_URLS];
	size_t n_urls;
	long tokens, uses, joins, clients, retry_s;
	long rate; /* operations offered per second; 0: as fast as they are answered */
	int renew;
	int floor; /* --floor */
	long pids[MAX_URLS];
	size_t n_pids;
	char *metrics_key; /* NULL: /metrics is not read */
};

struct job {
	EVP_PKEY *key, *next_key;
	uint8_t *csr;
	size_t csr_len;
	struct bc_join_answer ans; /* kept for the renewal */
	int joined;
	int64_t join_us, renew_us; /* -1: not measured (an error) */
};

struct run {
	const struct opts *o;
	struct bc_client_pins pins;
	char **tokens;
	struct job *jobs;
	pthread_barrier_t start;
	pthread_mutex_t mu;
	long admitted, refused, unavailable, errors;
	long renewed, renew_refused, renew_errors, renew_unavailable;
	char first_error[512];
	int setup_failed;
	_Atomic int64_t phase_t0_us; /* when the phase running started (--rate) */
};

struct worker {
	struct run *r;
	long id;
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t mono_ms(void)
{
	return mono_us() / 1000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- tokens, made in the store ---- */

struct make_ctx {
	const struct opts *o;
	char **tokens;
	char pool[64];
};

static int make_token(bc_tx *tx, struct make_ctx *m, long i, int64_t now)
{
	char id[64], hash[65], *secret;
	uint8_t raw[32], d[32];
	int rc;

	if ((rc = bc_new_id("tok", id, sizeof(id))) != 0 || (rc = bc_random(raw, 32)) != 0)
		return rc;
	if ((secret = bc_b64url_encode(raw, 32)) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = bc_sha256(secret, strlen(secret), d)) == 0) {
		bc_hex_encode_to(d, 32, hash);
		if (asprintf(&m->tokens[i], BC_WIRE_TOKEN_PREFIX "%s_%s", id, secret) < 0) {
			m->tokens[i] = NULL;
			rc = BC_ERR_NOMEM;
		}
	}
	free(secret);
	if (rc != 0)
		return rc;
	bc_param p[] = {BC_TEXT(id),        BC_TEXT(m->pool),           BC_TEXT(hash),
	                BC_INT(m->o->uses), BC_INT(now + TOKEN_TTL_MS), BC_INT(now)};
	return bc_tx_exec(tx,
	                  "INSERT INTO join_tokens (id, tenant_id, pool_id, role, secret_hash, "
	                  "uses_left, uses_total, expires_at, description, created_at) VALUES "
	                  "($1, 'root', $2, 'node', $3, $4, $4, $5, 'bc-load', $6)",
	                  p, 6, NULL);
}

static int make_tokens_tx(bc_tx *tx, void *arg)
{
	struct make_ctx *m = arg;
	int64_t now = bc_tx_now_ms(tx);
	char name[96];
	int rc;

	/* a replayed transaction starts again */
	for (long i = 0; i < m->o->tokens; i++) {
		free(m->tokens[i]);
		m->tokens[i] = NULL;
	}
	if ((rc = bc_new_id("pool", m->pool, sizeof(m->pool))) != 0)
		return rc;
	snprintf(name, sizeof(name), "bc-load-%s", m->pool + 5);
	if ((rc = bc_tx_exec(tx,
	                     "INSERT INTO pools (id, tenant_id, name, policy, created_at, "
	                     "updated_at) VALUES ($1, 'root', $2, '{}', $3, $3)",
	                     (bc_param[]){BC_TEXT(m->pool), BC_TEXT(name), BC_INT(now)}, 3,
	                     NULL)) != 0)
		return rc;
	for (long i = 0; i < m->o->tokens; i++)
		if ((rc = make_token(tx, m, i, now)) != 0)
			return rc;
	return 0;
}

static int make_tokens(const struct opts *o, char **tokens)
{
	struct make_ctx m = {.o = o, .tokens = tokens};
	bc_store *s = NULL;
	char err[512] = "";
	int rc;

	if ((rc = bc_store_open(o->database, &s, err, sizeof(err))) != 0) {
		fprintf(stderr, "bc-load: cannot open the database: %s\n", err);
		return rc;
	}
	if ((rc = bc_store_run(s, BC_TX_WRITE, make_tokens_tx, &m)) != 0)
		fprintf(stderr, "bc-load: cannot make the tokens: %s (%s)\n", bc_err_str(rc),
		        bc_store_errmsg());
	bc_store_close(s);
	return rc;
}

/* ---- the clients ---- */

static void count(struct run *r, int rc, const char *err, int unavailable)
{
	pthread_mutex_lock(&r->mu);
	r->unavailable += unavailable;
	if (rc == 0)
		r->admitted++;
	else if (rc == BC_ERR_DENIED)
		r->refused++;
	else {
		r->errors++;
		if (r->first_error[0] == '\0')
			snprintf(r->first_error, sizeof(r->first_error), "%s", err);
	}
	pthread_mutex_unlock(&r->mu);
}

static int is_503(int rc, const char *err)
{
	return rc == BC_ERR_UNAVAILABLE && strstr(err, "HTTP 503") != NULL;
}

/* The pause before sending a 503'd request again: the answer's Retry-After, as bcd
 * takes it, else RETRY_PAUSE_MS. */
static long retry_pause_ms(void)
{
	int64_t w = bc_client_retry_after_wait_ms();

	return w > 0 ? (long)w : RETRY_PAUSE_MS;
}

static void join_one(struct run *r, long i)
{
	const struct opts *o = r->o;
	struct bc_client_pins pins = r->pins;
	struct bc_join_answer a;
	struct bc_join_params p = {0};
	struct bc_client_claims claims = {0};
	char err[512] = "", host[32];
	int64_t deadline = mono_ms() + o->retry_s * 1000;
	int unavailable = 0, rc;

	/* a shallow copy with another URL: nothing in it is freed here */
	pins.server_url = (char *)o->urls[i % (long)o->n_urls];
	snprintf(host, sizeof(host), "load-%ld", i);
	claims.hostname = host;
	p.token = r->tokens[i % o->tokens];
	p.claims = &claims;
	p.key = r->jobs[i].key;
	p.csr = r->jobs[i].csr;
	p.csr_len = r->jobs[i].csr_len;
	p.agent_version = "bc-load/1";
	int64_t t0 = mono_us();
	for (;;) {
		memset(&a, 0, sizeof(a));
		rc = bc_client_join(&pins, &p, &a, err, sizeof(err));
		if (rc == 0 && o->renew && a.state == BC_JOIN_JOINED) {
			r->jobs[i].ans = a;
			r->jobs[i].joined = 1;
		} else {
			bc_join_answer_free(&a);
		}
		if (!is_503(rc, err))
			break;
		unavailable++;
		if (mono_ms() >= deadline) {
			break;
		}
		sleep_ms(retry_pause_ms());
	}
	r->jobs[i].join_us = rc == 0 ? mono_us() - t0 : -1;
	count(r, rc, err, unavailable);
}

static void renew_one(struct run *r, long i)
{
	struct job *j = &r->jobs[i];
	struct bc_client_pins pins = r->pins;
	struct bc_join_answer a;
	struct bc_signer cur;
	struct bc_renew_params p = {.chain = (const uint8_t *const *)j->ans.chain,
	                            .chain_lens = j->ans.chain_lens,
	                            .n_chain = j->ans.n_chain,
	                            .signer = &cur};
	uint8_t *csr = NULL;
	size_t csr_len = 0;
	char err[512] = "";
	int64_t t0, deadline = mono_ms() + r->o->retry_s * 1000;
	int unavailable = 0, rc;

	j->renew_us = -1;
	if (!j->joined)
		return;
	pins.server_url = (char *)r->o->urls[i % (long)r->o->n_urls];
	t0 = mono_us();
	for (;;) {
		memset(&a, 0, sizeof(a));
		/* a CSR for the next key each try, as a renewing agent makes it */
		if ((rc = bc_signer_init(&cur, j->key, NULL, NULL)) != 0 ||
		    (rc = bc_csr_make(j->next_key, BC_WIRE_CSR_CN, &csr, &csr_len)) != 0) {
			snprintf(err, sizeof(err), "cannot make the CSR (%s)", bc_err_str(rc));
			break;
		}
		p.csr = csr;
		p.csr_len = csr_len;
		rc = bc_client_renew(&pins, &p, &a, err, sizeof(err));
		free(csr);
		csr = NULL;
		bc_join_answer_free(&a);
		if (!is_503(rc, err))
			break;
		unavailable++;
		if (mono_ms() >= deadline)
			break;
		sleep_ms(retry_pause_ms());
	}
	if (rc == 0)
		j->renew_us = mono_us() - t0;
	pthread_mutex_lock(&r->mu);
	r->renew_unavailable += unavailable;
	if (rc == 0)
		r->renewed++;
	else if (rc == BC_ERR_DENIED)
		r->renew_refused++;
	else {
		r->renew_errors++;
		if (r->first_error[0] == '\0')
			snprintf(r->first_error, sizeof(r->first_error), "renew: %s", err);
	}
	pthread_mutex_unlock(&r->mu);
}

/* With --rate, operation i of a phase starts no sooner than i / rate seconds into it:
 * the load is offered at that rate, not as fast as answers come back. */
static void pace(struct run *r, long i)
{
	int64_t at, now;

	if (r->o->rate <= 0)
		return;
	at = atomic_load(&r->phase_t0_us) + (int64_t)((double)i * 1e6 / (double)r->o->rate);
	if ((now = mono_us()) < at)
		sleep_ms((long)((at - now + 999) / 1000));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	const struct opts *o = r->o;
	int failed = 0;

	for (long i = w->id; i < o->joins; i += o->clients) {
		struct job *j = &r->jobs[i];
		if (bc_key_generate(&j->key) != 0 ||
		    bc_csr_make(j->key, BC_WIRE_CSR_CN, &j->csr, &j->csr_len) != 0 ||
		    (o->renew && bc_key_generate(&j->next_key) != 0))
			failed = 1;
	}
	if (failed) {
		pthread_mutex_lock(&r->mu);
		r->setup_failed = 1;
		pthread_mutex_unlock(&r->mu);
	}
	pthread_barrier_wait(&r->start);
	/* the main thread checks setup_failed between the two barriers */
	pthread_barrier_wait(&r->start);
	if (r->setup_failed)
		return NULL;
	for (long i = w->id; i < o->joins; i += o->clients) {
		pace(r, i);
		join_one(r, i);
	}
	if (!o->renew)
		return NULL;
	/* the renewals start together too, timed apart from the joins */
	pthread_barrier_wait(&r->start);
	pthread_barrier_wait(&r->start);
	for (long i = w->id; i < o->joins; i += o->clients) {
		pace(r, i);
		renew_one(r, i);
	}
	return NULL;
}

/* ---- the run ---- */

static int read_pins(const char *path, struct bc_client_pins *pins)
{
	char buf[256 * 1024], err[256];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "bc-load: %s: %s\n", path, strerror(errno));
		return BC_ERR_IO;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (n == sizeof(buf)) {
		fprintf(stderr, "bc-load: %s: larger than %zu bytes\n", path, sizeof(buf));
		return BC_ERR_LIMIT;
	}
	if (bc_client_pins_from_json(buf, n, pins, err, sizeof(err)) != 0) {
		fprintf(stderr, "bc-load: %s: %s\n", path, err);
		return BC_ERR_INVALID;
	}
	return 0;
}

/* The servers' CPU time so far, in ms (user + system); -1 when one cannot be read. */
static double servers_cpu_ms(const struct opts *o)
{
	double total = 0, tick = (double)sysconf(_SC_CLK_TCK);

	for (size_t i = 0; i < o->n_pids; i++) {
		char path[64], buf[1024], *p;
		unsigned long ut, st;
		FILE *f;
		size_t n;
		snprintf(path, sizeof(path), "/proc/%ld/stat", o->pids[i]);
		if ((f = fopen(path, "r")) == NULL)
			return -1;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		/* the command name may hold spaces: fields count from its closing ')' */
		if ((p = strrchr(buf, ')')) == NULL ||
		    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
		           &st) != 2)
			return -1;
		total += (double)(ut + st) * 1000.0 / tick;
	}
	return total;
}

/* The servers' peak resident set (VmHWM), the largest of them, in kB; -1 unknown. */
static long servers_peak_rss_kb(const struct opts *o)
{
	long peak = -1;

	for (size_t i = 0; i < o->n_pids; i++) {
		char path[64], line[256];
		long kb;
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%ld/status", o->pids[i]);
		if ((f = fopen(path, "r")) == NULL)
			return -1;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "VmHWM: %ld kB", &kb) == 1 && kb > peak)
				peak = kb;
		fclose(f);
	}
	return peak;
}

/* What every server's /metrics says, summed; -1 when one could not be read. */
struct scraped {
	double statements, shed_join, shed_renew;
};

/* The sample of the series named exactly (name and labels) in text, -1 when absent. */
static double sample(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *l = text; l != NULL && *l != '\0'; l = strchr(l, '\n'), l = l ? l + 1 : l)
		if (strncmp(l, series, n) == 0 && l[n] == ' ')
			return strtod(l + n + 1, NULL);
	return -1;
}

/* ca_pem: the pinned CA for https URLs (NULL: none). */
static void scrape_all(const struct opts *o, const char *ca_pem, struct scraped *out)
{
	char auth[256];
	const char *hdrs[] = {auth};

	*out = (struct scraped){0, 0, 0};
	if (o->metrics_key == NULL) {
		*out = (struct scraped){-1, -1, -1};
		return;
	}
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o->metrics_key);
	for (size_t i = 0; i < o->n_urls; i++) {
		char url[512], err[256];
		struct bc_httpc_req q = {.url = url,
		                         .headers = hdrs,
		                         .n_headers = 1,
		                         .ca_pem = ca_pem,
		                         .timeout_ms = 30000,
		                         .max = 1 << 20};
		struct bc_httpc_resp b;
		snprintf(url, sizeof(url), "%s/metrics", o->urls[i]);
		int ok = bc_httpc_run(&q, &b, err, sizeof(err)) == 0 && b.status == 200;
		double st = ok ? sample(b.body, "bc_store_statements_total") : -1;
		double sj = ok ? sample(b.body, "bc_requests_shed_total{method=\"Join\"}") : -1;
		double sr = ok ? sample(b.body, "bc_requests_shed_total{method=\"Renew\"}") : -1;
		out->statements = st < 0 || out->statements < 0 ? -1 : out->statements + st;
		out->shed_join = sj < 0 || out->shed_join < 0 ? -1 : out->shed_join + sj;
		out->shed_renew = sr < 0 || out->shed_renew < 0 ? -1 : out->shed_renew + sr;
		bc_httpc_resp_free(&b);
	}
}

struct phase {
	double seconds;
	double cpu_ms;  /* the servers', -1 unknown */
	double load_ms; /* this process's, every thread */
	struct scraped before, after;
};

/* This process's CPU time, all threads: the load generator's own share of the machine,
 * which competes with the servers when both run on it. */
static double process_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Between the two waits on the barrier the clients stand ready; the clock and the
 * servers' CPU are read around the phase that follows. */
static void phase_start(struct run *r, struct phase *ph, int64_t *t0, double *cpu0)
{
	pthread_barrier_wait(&r->start);
	scrape_all(r->o, r->pins.ca_bundle_pem, &ph->before);
	*cpu0 = servers_cpu_ms(r->o);
	ph->load_ms = process_cpu_ms();
	*t0 = mono_us();
	atomic_store(&r->phase_t0_us, *t0);
	pthread_barrier_wait(&r->start);
}

/* the difference of one scraped figure over a phase, -1 unknown */
static double delta(double a, double b)
{
	return a < 0 || b < 0 ? -1 : b - a;
}

static void phase_end(struct run *r, int64_t t0, double cpu0, struct phase *ph)
{
	double cpu1 = servers_cpu_ms(r->o);

	ph->seconds = (double)(mono_us() - t0) / 1e6;
	ph->cpu_ms = cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : -1;
	ph->load_ms = process_cpu_ms() - ph->load_ms;
	scrape_all(r->o, r->pins.ca_bundle_pem, &ph->after);
}

static int run_clients(struct run *r, struct phase *join, struct phase *renew)
{
	const struct opts *o = r->o;
	pthread_t th[MAX_CLIENTS];
	struct worker w[MAX_CLIENTS];
	int64_t t0;
	double cpu0;
	int rc = 0;

	pthread_attr_t attr;

	if (pthread_barrier_init(&r->start, NULL, (unsigned)o->clients + 1) != 0)
		return BC_ERR_INTERNAL;
	/* a herd of thousands of clients: a small stack each */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512 * 1024);
	for (long i = 0; i < o->clients; i++) {
		w[i] = (struct worker){.r = r, .id = i};
		if (pthread_create(&th[i], &attr, worker_main, &w[i]) != 0) {
			/* the barrier counts every client: without them all, nobody starts */
			fprintf(stderr, "bc-load: cannot start client thread %ld\n", i);
			abort();
		}
	}
	pthread_attr_destroy(&attr);
	phase_start(r, join, &t0, &cpu0); /* keys and CSRs made: go */
	/* a client whose setup failed has returned: there is no renewal phase */
	if (o->renew && !r->setup_failed) {
		/* the joins are over when every client stands at the next barrier */
		pthread_barrier_wait(&r->start);
		phase_end(r, t0, cpu0, join);
		scrape_all(o, r->pins.ca_bundle_pem, &renew->before);
		cpu0 = servers_cpu_ms(o);
		t0 = mono_us();
		atomic_store(&r->phase_t0_us, t0);
		pthread_barrier_wait(&r->start);
	}
	for (long i = 0; i < o->clients; i++)
		pthread_join(th[i], NULL);
	phase_end(r, t0, cpu0, o->renew ? renew : join);
	if (r->setup_failed) {
		fprintf(stderr, "bc-load: cannot make the node keys and CSRs\n");
		rc = BC_ERR_CRYPTO;
	}
	pthread_barrier_destroy(&r->start);
	return rc;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The p-th percentile (0..100) of the measured latencies, in ms; 0 when none. */
static double percentile(const struct run *r, int renew, double pct)
{
	int64_t *v = malloc(sizeof(*v) * (size_t)r->o->joins);
	size_t n = 0;
	double out = 0;

	if (v == NULL)
		return 0;
	for (long i = 0; i < r->o->joins; i++) {
		int64_t us = renew ? r->jobs[i].renew_us : r->jobs[i].join_us;
		if (us >= 0)
			v[n++] = us;
	}
	if (n > 0) {
		qsort(v, n, sizeof(*v), cmp_i64);
		size_t k = (size_t)(pct / 100.0 * (double)(n - 1) + 0.5);
		out = (double)v[k] / 1000.0;
	}
	free(v);
	return out;
}

/* ---- the crypto an operation cannot avoid, timed here ---- */

#define CRYPTO_ROUNDS 500

/* This thread's CPU time: what the servers' figure is too, so that neither counts
 * the time the machine gave to something else. */
static int64_t cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double ms_per(int64_t t0, int rounds)
{
	return (double)(cpu_us() - t0) / 1000.0 / rounds;
}

/* The bare operations through OpenSSL, each context made once: the floor that a
 * server's CPU per operation is compared with (as `openssl speed` would measure). */
static int crypto_cost(double *sign_ms, double *verify_ms, double *ecdh_ms)
{
	uint8_t digest[32] = {1}, sig[80], secret[32];
	size_t siglen = sizeof(sig), n;
	EVP_PKEY *k = NULL, *peer = NULL;
	EVP_PKEY_CTX *sc = NULL, *vc = NULL, *dc = NULL;
	int64_t t0;
	int ok;

	ok = bc_key_generate(&k) == 0 && bc_key_generate(&peer) == 0 &&
	     (sc = EVP_PKEY_CTX_new(k, NULL)) != NULL && EVP_PKEY_sign_init(sc) == 1 &&
	     (vc = EVP_PKEY_CTX_new(k, NULL)) != NULL && EVP_PKEY_verify_init(vc) == 1 &&
	     (dc = EVP_PKEY_CTX_new(k, NULL)) != NULL && EVP_PKEY_derive_init(dc) == 1 &&
	     EVP_PKEY_derive_set_peer_ex(dc, peer, 0) == 1 &&
	     EVP_PKEY_sign(sc, sig, &siglen, digest, sizeof(digest)) == 1;
	t0 = cpu_us();
	for (int i = 0; ok && i < CRYPTO_ROUNDS; i++) {
		uint8_t other[80];
		n = sizeof(other);
		ok = EVP_PKEY_sign(sc, other, &n, digest, sizeof(digest)) == 1;
	}
	*sign_ms = ms_per(t0, CRYPTO_ROUNDS);
	t0 = cpu_us();
	for (int i = 0; ok && i < CRYPTO_ROUNDS; i++)
		ok = EVP_PKEY_verify(vc, sig, siglen, digest, sizeof(digest)) == 1;
	*verify_ms = ms_per(t0, CRYPTO_ROUNDS);
	t0 = cpu_us();
	for (int i = 0; ok && i < CRYPTO_ROUNDS; i++) {
		n = sizeof(secret);
		ok = EVP_PKEY_derive(dc, secret, &n) == 1;
	}
	*ecdh_ms = ms_per(t0, CRYPTO_ROUNDS);
	OPENSSL_cleanse(secret, sizeof(secret));
	EVP_PKEY_CTX_free(sc);
	EVP_PKEY_CTX_free(vc);
	EVP_PKEY_CTX_free(dc);
	EVP_PKEY_free(k);
	EVP_PKEY_free(peer);
	return ok ? 0 : BC_ERR_CRYPTO;
}

/* One X25519 key made and agreed with a peer's, as a TLS 1.3 server does per
 * handshake (a new context each time, as OpenSSL's handshake makes them). */
static int handshake_cost(double sign_ms, double *out)
{
	EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, NULL);
	EVP_PKEY *peer = NULL;
	uint8_t secret[32];
	int64_t t0;
	int ok;

	ok = kc != NULL && EVP_PKEY_keygen_init(kc) == 1 && EVP_PKEY_keygen(kc, &peer) == 1;
	t0 = cpu_us();
	for (int i = 0; ok && i < CRYPTO_ROUNDS; i++) {
		EVP_PKEY *k = NULL;
		EVP_PKEY_CTX *dc = NULL;
		size_t n = sizeof(secret);

		ok = EVP_PKEY_keygen(kc, &k) == 1 && (dc = EVP_PKEY_CTX_new(k, NULL)) != NULL &&
		     EVP_PKEY_derive_init(dc) == 1 && EVP_PKEY_derive_set_peer(dc, peer) == 1 &&
		     EVP_PKEY_derive(dc, secret, &n) == 1;
		EVP_PKEY_CTX_free(dc);
		EVP_PKEY_free(k);
	}
	*out = ms_per(t0, CRYPTO_ROUNDS) + sign_ms;
	OPENSSL_cleanse(secret, sizeof(secret));
	EVP_PKEY_free(peer);
	EVP_PKEY_CTX_free(kc);
	return ok ? 0 : BC_ERR_CRYPTO;
}

/* ---- the floor: what any request and any durable write cost here ---- */

#define FLOOR_COMMITS 300

struct floor_worker {
	const struct opts *o;
	const char *ca_pem; /* the pinned CA, for https URLs */
	long n;
	long failed;
};

/* n requests to a path no route serves, each on a fresh connection as an agent's is:
 * the server's accept (over https, a full TLS handshake), HTTP parsing, answer and
 * close, with nothing else done. */
static void *floor_main(void *arg)
{
	struct floor_worker *w = arg;
	char url[512], err[256];

	for (long i = 0; i < w->n; i++) {
		struct bc_httpc_req q = {
		    .url = url, .ca_pem = w->ca_pem, .timeout_ms = 30000, .max = 1 << 16};
		struct bc_httpc_resp r;
		snprintf(url, sizeof(url), "%s/bench-floor", w->o->urls[(size_t)i % w->o->n_urls]);
		if (bc_httpc_run(&q, &r, err, sizeof(err)) != 0)
			r.status = 0;
		else
			err[0] = '\0';
		if (r.status != 404 && w->failed++ == 0)
			fprintf(stderr, "bc-load: --floor: %s: %s, HTTP %d\n", url, err, r.status);
		bc_httpc_resp_free(&r);
	}
	return NULL;
}

/* The servers' CPU per request answered, over n requests from the clients at once;
 * -1 unknown. A request that got no 404 (said on stderr) is left out of the count. */
static double http_floor(const struct opts *o, const char *ca_pem, long n)
{
	struct floor_worker w[64];
	pthread_t th[64];
	long k = o->clients < 64 ? o->clients : 64, failed = 0;
	double cpu0 = servers_cpu_ms(o), cpu1;

	for (long i = 0; i < k; i++) {
		w[i] = (struct floor_worker){.o = o, .ca_pem = ca_pem, .n = n / k + (i < n % k)};
		if (pthread_create(&th[i], NULL, floor_main, &w[i]) != 0)
			return -1;
	}
	for (long i = 0; i < k; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].failed;
	}
	cpu1 = servers_cpu_ms(o);
	if (failed > 0)
		fprintf(stderr, "bc-load: --floor: %ld of %ld requests got no 404\n", failed, n);
	if (failed * 2 > n || cpu0 < 0 || cpu1 < 0)
		return -1;
	return (cpu1 - cpu0) / (double)(n - failed);
}

/* This thread's CPU (user and system) per durable one-row commit to a SQLite database
 * in WAL mode with synchronous=FULL, as the server's store is, in a new file beside
 * path (so on the same file system): the write and the fsync any committed operation
 * pays on this disk, before group commit shares it. -1 unknown. */
static double commit_floor(const char *path)
{
	char file[4096];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t t0;
	int ok;

	if (snprintf(file, sizeof(file), "%s.floor", path) >= (int)sizeof(file))
		return -1;
	(void)unlink(file);
	ok = sqlite3_open(file, &db) == SQLITE_OK &&
	     sqlite3_exec(db,
	                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
	                  "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
	                  NULL, NULL, NULL) == SQLITE_OK &&
	     sqlite3_prepare_v2(db, "INSERT INTO t (v) VALUES ('a node and its certificate')", -1,
	                        &st, NULL) == SQLITE_OK;
	t0 = cpu_us();
	for (int i = 0; ok && i < FLOOR_COMMITS; i++) {
		ok = sqlite3_step(st) == SQLITE_DONE;
		sqlite3_reset(st);
	}
	double ms = ms_per(t0, FLOOR_COMMITS);
	sqlite3_finalize(st);
	sqlite3_close(db);
	(void)unlink(file);
	snprintf(file, sizeof(file), "%s.floor-wal", path);
	(void)unlink(file);
	snprintf(file, sizeof(file), "%s.floor-shm", path);
	(void)unlink(file);
	return ok ? ms : -1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bc-load --pins FILE --database URL --url URL [--url URL]...\n"
	           "               [--tokens N] [--uses K] [--joins J] [--clients C]\n"
	           "               [--retry-unavailable SECONDS] [--renew] [--server-pid PID]...\n"
	           "               [--metrics-key FILE] [--rate R] [--floor]\n");
}

static int num(const char *name, const char *v, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || *out < lo || *out > hi) {
		fprintf(stderr, "bc-load: --%s: expected a whole number from %ld to %ld\n", name,
		        lo, hi);
		return -1;
	}
	return 0;
}

/* the first line of path, the API key (kept for the run) */
static int read_key(const char *path, char **out)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (f == NULL || fgets(line, sizeof(line), f) == NULL) {
		fprintf(stderr, "bc-load: --metrics-key %s: %s\n", path,
		        f == NULL ? strerror(errno) : "empty");
		if (f != NULL)
			fclose(f);
		return -1;
	}
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	free(*out);
	return (*out = strdup(line)) != NULL ? 0 : -1;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {{"pins", required_argument, NULL, 'p'},
	                                   {"database", required_argument, NULL, 'd'},
	                                   {"url", required_argument, NULL, 'u'},
	                                   {"tokens", required_argument, NULL, 't'},
	                                   {"uses", required_argument, NULL, 'k'},
	                                   {"joins", required_argument, NULL, 'j'},
	                                   {"clients", required_argument, NULL, 'c'},
	                                   {"retry-unavailable", required_argument, NULL, 'r'},
	                                   {"renew", no_argument, NULL, 'R'},
	                                   {"server-pid", required_argument, NULL, 'P'},
	                                   {"metrics-key", required_argument, NULL, 'M'},
	                                   {"rate", required_argument, NULL, 'T'},
	                                   {"floor", no_argument, NULL, 'F'},
	                                   {NULL, 0, NULL, 0}};
	int c, rc = 0;

	*o = (struct opts){.tokens = 1, .uses = 1, .joins = -1, .clients = 8};
	while (rc == 0 && (c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o->pins_file = optarg; break;
		case 'd': o->database = optarg; break;
		case 'u':
			if (o->n_urls == MAX_URLS) {
				fprintf(stderr, "bc-load: at most %d --url\n", MAX_URLS);
				return -1;
			}
			o->urls[o->n_urls++] = optarg;
			break;
		case 't': rc = num("tokens", optarg, 1, MAX_JOINS, &o->tokens); break;
		case 'k': rc = num("uses", optarg, 1, 10000, &o->uses); break;
		case 'j': rc = num("joins", optarg, 1, MAX_JOINS, &o->joins); break;
		case 'c': rc = num("clients", optarg, 1, MAX_CLIENTS, &o->clients); break;
		case 'r': rc = num("retry-unavailable", optarg, 0, 3600, &o->retry_s); break;
		case 'R': o->renew = 1; break;
		case 'F': o->floor = 1; break;
		case 'P':
			if (o->n_pids == MAX_URLS) {
				fprintf(stderr, "bc-load: at most %d --server-pid\n", MAX_URLS);
				return -1;
			}
			rc = num("server-pid", optarg, 1, 1L << 30, &o->pids[o->n_pids++]);
			break;
		case 'T': rc = num("rate", optarg, 1, 1000000, &o->rate); break;
		case 'M': rc = read_key(optarg, &o->metrics_key); break;
		default: return -1;
		}
	}
	if (rc != 0)
		return rc;
	if (optind != argc || o->pins_file == NULL || o->database == NULL || o->n_urls == 0) {
		fprintf(stderr, "bc-load: --pins, --database and --url are required\n");
		return -1;
	}
	if (o->joins < 0)
		o->joins = o->tokens * o->uses;
	if (o->joins > MAX_JOINS)
		o->joins = MAX_JOINS;
	if (o->clients > o->joins)
		o->clients = o->joins;
	return 0;
}

static void run_free(struct run *r)
{
	for (long i = 0; r->tokens != NULL && i < r->o->tokens; i++)
		if (r->tokens[i] != NULL)
			bc_freezero(r->tokens[i], strlen(r->tokens[i]));
	free(r->tokens);
	for (long i = 0; r->jobs != NULL && i < r->o->joins; i++) {
		EVP_PKEY_free(r->jobs[i].key);
		EVP_PKEY_free(r->jobs[i].next_key);
		bc_join_answer_free(&r->jobs[i].ans);
		free(r->jobs[i].csr);
	}
	free(r->jobs);
	bc_client_pins_free(&r->pins);
	pthread_mutex_destroy(&r->mu);
}

/* statements_per_OP and shed_OPs of a phase of n operations, when /metrics was read */
static void print_scraped(const char *op, const struct phase *ph, long n)
{
	double st = delta(ph->before.statements, ph->after.statements);
	double shed = !strcmp(op, "join") ? delta(ph->before.shed_join, ph->after.shed_join)
	                                  : delta(ph->before.shed_renew, ph->after.shed_renew);

	if (st >= 0 && n > 0)
		printf(" statements_per_%s=%.1f", op, st / (double)n);
	if (shed >= 0)
		printf(" shed_%ss=%.0f", op, shed);
}

static void print_run(const struct run *r, const struct phase *join, const struct phase *renew)
{
	const struct opts *o = r->o;
	double sign = 0, verify = 0, ecdh = 0;

	printf("joins=%ld clients=%ld servers=%zu seconds=%.3f joins_per_s=%.1f admitted=%ld "
	       "refused=%ld unavailable=%ld errors=%ld join_p50_ms=%.2f join_p99_ms=%.2f",
	       o->joins, o->clients, o->n_urls, join->seconds,
	       join->seconds > 0 ? (double)o->joins / join->seconds : 0.0, r->admitted, r->refused,
	       r->unavailable, r->errors, percentile(r, 0, 50), percentile(r, 0, 99));
	if (join->cpu_ms >= 0 && o->joins > 0)
		printf(" server_cpu_ms_per_join=%.3f", join->cpu_ms / (double)o->joins);
	if (o->joins > 0)
		printf(" load_cpu_ms_per_join=%.3f", join->load_ms / (double)o->joins);
	print_scraped("join", join, o->joins);
	if (o->renew) {
		printf(" renews=%ld renew_seconds=%.3f renews_per_s=%.1f renewed=%ld "
		       "renew_refused=%ld "
		       "renew_errors=%ld renew_p50_ms=%.2f renew_p99_ms=%.2f",
		       r->admitted, renew->seconds,
		       renew->seconds > 0 ? (double)r->admitted / renew->seconds : 0.0, r->renewed,
		       r->renew_refused, r->renew_errors, percentile(r, 1, 50),
		       percentile(r, 1, 99));
		if (renew->cpu_ms >= 0 && r->admitted > 0)
			printf(" server_cpu_ms_per_renew=%.3f",
			       renew->cpu_ms / (double)r->admitted);
		if (r->admitted > 0)
			printf(" load_cpu_ms_per_renew=%.3f", renew->load_ms / (double)r->admitted);
		printf(" renew_unavailable=%ld", r->renew_unavailable);
		print_scraped("renew", renew, r->admitted);
	}
	if (servers_peak_rss_kb(o) >= 0)
		printf(" server_peak_rss_kb=%ld", servers_peak_rss_kb(o));
	if (crypto_cost(&sign, &verify, &ecdh) == 0) {
		double hs;

		printf(" crypto_ms_per_join=%.3f crypto_ms_per_renew=%.3f",
		       ecdh + verify + 2 * sign, 3 * verify + 2 * sign);
		if (handshake_cost(sign, &hs) == 0)
			printf(" tls_handshake_crypto_ms=%.3f", hs);
	}
	if (o->floor) {
		double http = o->n_pids > 0 ? http_floor(o, r->pins.ca_bundle_pem,
		                                         o->joins < 2000 ? 2000 : o->joins)
		                            : -1;
		double commit =
		    strncmp(o->database, "postgres", 8) != 0 ? commit_floor(o->database) : -1;
		if (http >= 0)
			printf(" floor_server_cpu_ms_per_request=%.3f", http);
		if (commit >= 0)
			printf(" floor_cpu_ms_per_commit=%.3f", commit);
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	struct opts o;
	struct run r;
	struct phase join = {.cpu_ms = -1}, renew = {.cpu_ms = -1};
	int rc;

	if (parse(argc, argv, &o) != 0) {
		usage(stderr);
		return 2;
	}
	memset(&r, 0, sizeof(r));
	r.o = &o;
	pthread_mutex_init(&r.mu, NULL);
	r.tokens = calloc((size_t)o.tokens, sizeof(char *));
	r.jobs = calloc((size_t)o.joins, sizeof(struct job));
	if (r.tokens == NULL || r.jobs == NULL) {
		fprintf(stderr, "bc-load: out of memory\n");
		rc = BC_ERR_NOMEM;
	} else if ((rc = read_pins(o.pins_file, &r.pins)) == 0 &&
	           (rc = make_tokens(&o, r.tokens)) == 0) {
		rc = run_clients(&r, &join, &renew);
	}
	if (rc == 0) {
		print_run(&r, &join, &renew);
		if (r.first_error[0] != '\0')
			fprintf(stderr, "bc-load: first error: %s\n", r.first_error);
	}
	run_free(&r);
	if (o.metrics_key != NULL)
		bc_freezero(o.metrics_key, strlen(o.metrics_key));
	return rc == 0 ? 0 : 1;
}
