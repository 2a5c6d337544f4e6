/* bc-load: a load generator for token joins, used by the end-to-end tests and by
 * `make bench`. It makes a pool and N join tokens directly in the store (the same
 * database the servers use), then C client threads join over a list of server URLs
 * (join i goes to URL i mod count and spends token i mod N) through the real client,
 * and it prints one line:
 *
 *   joins=J clients=C servers=S seconds=T joins_per_s=R admitted=A refused=D
 *   unavailable=U errors=E
 *
 *   bc-load --pins FILE --database URL --url URL [--url URL]... [--tokens N]
 *           [--uses K] [--joins J] [--clients C] [--retry-unavailable SECONDS]
 *
 * --joins defaults to N*K. Keys and CSRs are made before the clock starts and every
 * client starts at once (a barrier), so a race of C clients for one token is a race.
 * refused: permission_denied. unavailable: HTTP 503 answers (counted each time);
 * with --retry-unavailable the join is sent again (same CSR, same token) every 100 ms
 * until it gets another answer or the seconds run out. errors: anything else (a
 * connection refused, a bad answer). The figures are printed, never judged: exit 0
 * when the run happened, 1 when it could not be set up, 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/client.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/store.h"

#define MAX_URLS 16
#define MAX_CLIENTS 1024
#define MAX_JOINS 1000000
#define TOKEN_TTL_MS (3600LL * 1000)
#define RETRY_PAUSE_MS 100

struct opts {
	const char *pins_file, *database;
	const char *urls[MAX_URLS];
	size_t n_urls;
	long tokens, uses, joins, clients, retry_s;
};

struct job {
	EVP_PKEY *key;
	uint8_t *csr;
	size_t csr_len;
};

struct run {
	const struct opts *o;
	struct bc_client_pins pins;
	char **tokens;
	struct job *jobs;
	pthread_barrier_t start;
	pthread_mutex_t mu;
	long admitted, refused, unavailable, errors;
	char first_error[512];
	int setup_failed;
};

struct worker {
	struct run *r;
	long id;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
		if (asprintf(&m->tokens[i], "bct_%s_%s", id, secret) < 0) {
			m->tokens[i] = NULL;
			rc = BC_ERR_NOMEM;
		}
	}
	free(secret);
	if (rc != 0)
		return rc;
	bc_param p[] = {BC_TEXT(id), BC_TEXT(m->pool), BC_TEXT(hash), BC_INT(m->o->uses),
	                BC_INT(now + TOKEN_TTL_MS), BC_INT(now)};
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
	for (;;) {
		memset(&a, 0, sizeof(a));
		rc = bc_client_join(&pins, &p, &a, err, sizeof(err));
		bc_join_answer_free(&a);
		if (!is_503(rc, err))
			break;
		unavailable++;
		if (mono_ms() >= deadline) {
			break;
		}
		sleep_ms(RETRY_PAUSE_MS);
	}
	count(r, rc, err, unavailable);
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
		    bc_csr_make(j->key, "bc-load node", &j->csr, &j->csr_len) != 0)
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
	for (long i = w->id; i < o->joins; i += o->clients)
		join_one(r, i);
	return NULL;
}
