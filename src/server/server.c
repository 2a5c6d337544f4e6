/* The control plane: routes HTTP requests to JoinService, the admin API and /healthz. */
#include "server/server.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/files.h"
#include "bc/json.h"
#include "bc/log.h"
#include "bc/wire.h"
#include "attest/attest.h"
#include "bc/proc.h"
#include "rows/query.h"
#include "server/admin.h"
#include "server/admin_limit.h"
#include "server/connect.h"
#include "server/console.h"
#include "server/metrics.h"
#include "server/http.h"
#include "server/node_cas.h"
#include "server/server_tls.h"

#define BUNDLE_MAX (1 << 20)
/* an on_refusal command is killed past this (its process group too) */
#define HOOK_TIMEOUT_MS 30000
/* how often a full on_refusal queue is said in the log, at most */
#define HOOK_DROP_LOG_MS 60000

struct bc_server {
	bc_store *store;
	bc_pki *pki;
	struct bc_join_service *join;
	struct bc_http *http;
	struct bc_http *metrics_http; /* metrics_listen: GET /metrics only, no key */
	struct bc_admin_config admin;
	struct bc_proc_queue *on_refusal;
	pthread_mutex_t drop_lock;
	uint64_t dropped;       /* refusals on_refusal never saw: its queue was full */
	uint64_t dropped_total; /* the same, since the start (bc_server_refusals_dropped) */
	int64_t drop_logged_ms;
	bc_refusal_fn hook;
	void *hook_ctx;
	char *public_url;
	struct bc_metrics *metrics;
	unsigned max_queue_wait_ms;         /* 0: never shed */
	struct bc_tls_watch *tls_watch;     /* NULL: plain HTTP */
	struct bc_node_cas_watch *node_cas; /* the node CA set, read from the store */
	/* the prune run every prune_interval_s (0: none), until stop is set */
	struct bc_prune_opts prune;
	unsigned prune_interval_s;
	pthread_t pruner;
	int pruner_started, pruner_stop;
	pthread_mutex_t prune_lock;
	pthread_cond_t prune_cond;
};

static const char not_found[] = "{\"code\":\"not_found\",\"message\":\"no such path\"}";
static const char metrics_method[] =
    "{\"code\":\"method_not_allowed\",\"message\":\"/metrics answers GET\"}";
static const char metrics_denied[] =
    "{\"code\":\"unauthenticated\",\"message\":\"/metrics needs a root API key: "
    "Authorization: Bearer bck_...\"}";
static const char healthz_method[] =
    "{\"code\":\"method_not_allowed\",\"message\":\"/healthz answers GET and HEAD\"}";
static const char bundle_method[] =
    "{\"code\":\"method_not_allowed\",\"message\":\"/bundle answers GET and HEAD\"}";

static void text(struct bc_http_response *resp, int status, const char *ct, const char *body)
{
	bc_http_set_body(resp, status, ct, body, strlen(body));
}

static int healthz_tx(bc_tx *tx, void *arg)
{
	(void)arg;
	return bc_row_ping(tx);
}

struct metrics_auth {
	const char *authorization;
	int authenticated; /* a good key, root's or not */
};

static int metrics_auth_tx(bc_tx *tx, void *arg)
{
	struct metrics_auth *a = arg;

	return bc_admin_authorize_metrics(tx, a->authorization, &a->authenticated);
}

static void render_metrics(struct bc_server *s, struct bc_http_response *resp)
{
	struct bc_metrics_extra x = {.store = s->store,
	                             .refusals_dropped = bc_server_refusals_dropped(s),
	                             .version = BC_VERSION,
	                             .connections =
	                                 s->http ? (int64_t)bc_http_connections(s->http) : -1};
	char *body;

	if (s->tls_watch != NULL)
		bc_tls_watch_expiry(s->tls_watch, &x.tls_not_after_ms, &x.tls_ours);
	if (s->http != NULL)
		x.http_evicted = bc_http_evicted(s->http);
	/* the CA issuing now: a rotation moves it without a restart */
	if (bc_pki_node_ca_not_after(s->pki, &x.node_ca_not_after_ms) != 0)
		x.node_ca_not_after_ms = 0;
	if ((body = bc_metrics_render(s->metrics, &x)) == NULL) {
		text(resp, 500, "application/json",
		     "{\"code\":\"internal\",\"message\":\"out of memory\"}");
		return;
	}
	bc_http_set_body(resp, 200, "text/plain; version=0.0.4; charset=utf-8", body, strlen(body));
	free(body);
}

/* GET /metrics: for a root tenant's API key of any role (bc_admin_authorize_metrics; Authorization:
 * Bearer bck_..., as Prometheus' authorization.credentials_file sends it). The refusal reasons in
 * it are what the machine is never told, so an unauthenticated scrape would undo that. A key that
 * fails counts against the address as on /v1/ (the same limiter and log line). */
static void serve_metrics(struct bc_server *s, const struct bc_http_request *req,
                          struct bc_http_response *resp)
{
	struct metrics_auth a = {.authorization = req->authorization};

	if (strcmp(req->method, "GET") != 0) {
		text(resp, 405, "application/json", metrics_method);
		return;
	}
	if (bc_admin_limit_blocked(&s->admin, req, resp))
		return;
	if (bc_store_run(s->store, BC_TX_READ, metrics_auth_tx, &a) != 0) {
		if (!a.authenticated)
			bc_admin_limit_failed(&s->admin, req);
		text(resp, 401, "application/json", metrics_denied);
		return;
	}
	render_metrics(s, resp);
}

/* The metrics_listen listener: GET /metrics without a key, nothing else. Whoever can
 * reach it reads the refusal reasons, so it is bound to loopback or a scrape network
 * (docs/server.md). */
static void handle_metrics_only(void *ctx, const struct bc_http_request *req,
                                struct bc_http_response *resp)
{
	struct bc_server *s = ctx;

	if (strcmp(req->path, "/metrics") != 0)
		text(resp, 404, "application/json", not_found);
	else if (strcmp(req->method, "GET") != 0)
		text(resp, 405, "application/json", metrics_method);
	else
		render_metrics(s, resp);
}

/* The SiteService and FetchSecret paths served, as their metrics' method label; any
 * other path of SiteService "(other)"; NULL for JoinService's Join and Renew. */
static const char *site_method(const char *path)
{
	static const char *const paths[] = {BC_WIRE_PATH_FETCH_SECRET, BC_WIRE_PATH_ACQUIRE_LEASE,
	                                    BC_WIRE_PATH_RENEW_LEASE, BC_WIRE_PATH_RELEASE_LEASE,
	                                    BC_WIRE_PATH_LIST_BOOT};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (strcmp(path, paths[i]) == 0)
			return strrchr(paths[i], '/') + 1;
	if (strncmp(path, BC_WIRE_SITE_SERVICE, strlen(BC_WIRE_SITE_SERVICE)) == 0)
		return "(other)";
	return NULL;
}

/* A JoinService RPC, timed for the metrics; SiteService's and FetchSecret counted. */
static void serve_rpc(struct bc_server *s, const struct bc_http_request *req,
                      struct bc_http_response *resp)
{
	struct timespec a, b;
	const char *method = strrchr(req->path, '/') + 1;

	const char *site = site_method(req->path);

	/* only the methods served are series: any other path costs no new one */
	if (strcmp(method, "Join") != 0 && strcmp(method, "Renew") != 0)
		method = "(other)";
	/* A request that waited this long for a worker has a backlog in front of it: it is
	 * answered before any crypto or store work, and its agent comes back later, rather
	 * than the backlog growing past what the agents wait for. */
	if (s->max_queue_wait_ms > 0 && req->queued_ms > s->max_queue_wait_ms) {
		bc_connect_shed(req->queued_ms, resp);
		bc_metrics_shed(s->metrics, method);
		return;
	}
	if (site != NULL) {
		bc_connect_serve(s->join, req, resp);
		bc_metrics_site(s->metrics, site, resp->status);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	bc_connect_serve(s->join, req, resp);
	clock_gettime(CLOCK_MONOTONIC, &b);
	bc_metrics_rpc(s->metrics, method, resp->status,
	               (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
}

/* The node CAs of the set the store holds now (the watch keeps it within
 * BC_NODE_CAS_REFRESH_MS): made per request, a few certificates' worth. */
static void bundle_of(struct bc_server *s, int spiffe, struct bc_http_response *resp)
{
	char *out = NULL;

	if (bc_pki_trust_bundle(s->pki, spiffe, &out) != 0) {
		text(resp, 500, "application/json",
		     "{\"code\":\"internal\",\"message\":\"cannot make the trust bundle\"}");
		return;
	}
	text(resp, 200, spiffe ? "application/json" : "application/x-pem-file", out);
	free(out);
}

/* GET /bundle and /bundle/spiffe: the node CAs for relying parties, public, no key. */
static void serve_bundle(struct bc_server *s, const struct bc_http_request *req,
                         struct bc_http_response *resp)
{
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
		text(resp, 405, "application/json", bundle_method);
	else
		bundle_of(s, strcmp(req->path, BC_WIRE_PATH_BUNDLE) != 0, resp);
}

static const char *attestor_at(void *ctx, size_t i)
{
	return bc_join_attestor_id(ctx, i);
}

static void handle(void *ctx, const struct bc_http_request *req, struct bc_http_response *resp)
{
	struct bc_server *s = ctx;

	if (strcmp(req->path, "/healthz") == 0) {
		if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
			text(resp, 405, "application/json", healthz_method);
		else if (bc_store_run(s->store, BC_TX_READ, healthz_tx, NULL) == 0)
			text(resp, 200, "application/json",
			     "{\"status\":\"ok\",\"version\":\"" BC_VERSION "\"}");
		else
			text(resp, 503, "application/json", "{\"status\":\"store unavailable\"}");
		return;
	}
	if (strcmp(req->path, BC_WIRE_PATH_BUNDLE) == 0 ||
	    strcmp(req->path, BC_WIRE_PATH_BUNDLE_SPIFFE) == 0) {
		serve_bundle(s, req, resp);
		return;
	}
	if (strncmp(req->path, "/v1/", 4) == 0) {
		bc_admin_handle(&s->admin, req, resp);
		bc_metrics_admin(s->metrics, req->method, resp->status);
		return;
	}
	if (bc_console_owns(req->path)) {
		bc_console_serve(req, resp);
		return;
	}
	if (bc_connect_owns(req->path)) {
		serve_rpc(s, req, resp);
		return;
	}
	if (strcmp(req->path, "/metrics") == 0) {
		serve_metrics(s, req, resp);
		return;
	}
	text(resp, 404, "application/json", not_found);
}

/* Under drop_lock: one line for the refusals dropped since the last one, at most
 * once per HOOK_DROP_LOG_MS. */
static void log_dropped(struct bc_server *s, int64_t now)
{
	char n[24];

	if (s->dropped == 0 || now - s->drop_logged_ms < HOOK_DROP_LOG_MS)
		return;
	snprintf(n, sizeof(n), "%llu", (unsigned long long)s->dropped);
	bc_log(BC_LOG_WARN,
	       "on_refusal queue full: refusals not passed to the command (they are in the "
	       "events); raise on_refusal_processes or on_refusal_queue, or make the command "
	       "faster",
	       "dropped", n, NULL);
	s->dropped = 0;
	s->drop_logged_ms = now;
}

/* on_refusal: the command gets the refusal as JSON on stdin, from a bounded queue
 * served by on_refusal_processes commands at once, so a slow hook never delays the
 * machine's answer and a flood never starts more processes. What does not fit is
 * counted and said in the log. */
static void run_hook_command(struct bc_server *s, const char *json)
{
	int rc = bc_proc_queue_push(s->on_refusal, json, strlen(json));

	if (rc == 0)
		return;
	pthread_mutex_lock(&s->drop_lock);
	s->dropped++;
	s->dropped_total++;
	log_dropped(s, bc_now_ms());
	pthread_mutex_unlock(&s->drop_lock);
}

static void on_outcome(void *ctx, const struct bc_join_outcome *o)
{
	struct bc_server *s = ctx;

	bc_metrics_outcome(s->metrics, o);
}

/* The attestor label of a refusal's series: one this server runs, or renew and site
 * (JoinService's own), else "(unknown)": a request names any attestor id it likes,
 * and each would take a series a real reason needs. */
static const char *metrics_attestor(const struct bc_server *s, const char *id)
{
	if (id != NULL && (strcmp(id, "renew") == 0 || strcmp(id, "site") == 0 ||
	                   bc_join_attestor_known(s->join, id)))
		return id;
	return "(unknown)";
}

static void on_refusal(void *ctx, const struct bc_refusal *r)
{
	struct bc_server *s = ctx;
	json_t *j;
	char *js;

	/* every refusal once, a summarized one too (count 0 or its summary's) */
	if (r->attestor != NULL && strcmp(r->attestor, "renew") == 0)
		bc_metrics_renew_refusal(s->metrics, r->reason, r->check_only);
	else
		bc_metrics_refusal(s->metrics, metrics_attestor(s, r->attestor), r->reason);
	if (s->hook)
		s->hook(s->hook_ctx, r);
	/* a refusal counted into a later summary is not passed on by itself */
	if (s->on_refusal == NULL || r->count == 0)
		return;
	j = json_pack("{s:s, s:s, s:s?, s:s?, s:s?}", "attestor", r->attestor, "reason", r->reason,
	              "tokenId", r->token_id, "nodeId", r->node_id, "tenantId", r->tenant_id);
	if (j && r->summarized &&
	    (json_object_set_new(j, "count", json_integer((json_int_t)r->count)) != 0 ||
	     json_object_set_new(j, "summarized", json_true()) != 0)) {
		json_decref(j);
		return;
	}
	if (j && (js = bc_json_dump(j)) != NULL) {
		run_hook_command(s, js);
		free(js);
	}
	json_decref(j);
}

uint64_t bc_server_refusals_dropped(struct bc_server *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->drop_lock);
	n = s->dropped_total;
	pthread_mutex_unlock(&s->drop_lock);
	return n;
}

static int authenticate_tx(bc_tx *tx, void *arg)
{
	char tenant[64], key[64];

	return bc_admin_authenticate(tx, arg, tenant, key);
}

/* A body over max_unauthenticated_body is buffered for an admin API key only. */
static int may_send_large_body(void *ctx, const char *method, const char *path,
                               const char *authorization)
{
	struct bc_server *s = ctx;

	(void)method;
	if (strncmp(path, "/v1/", 4) != 0 || authorization[0] == 0)
		return 0;
	return bc_store_run(s->store, BC_TX_READ, authenticate_tx, (void *)authorization) == 0;
}

int bc_server_pki_load(const struct bc_server_config *cfg, bc_pki **out, char *err, size_t errlen)
{
	uint8_t secret[32];
	char *text_ = NULL;
	size_t len = 0;
	int rc;

	if (bc_file_check_mode(cfg->pki_bundle, BC_MODE_SECRET, err, errlen) != 0)
		return BC_ERR_CONFIG;
	if ((rc = bc_server_secret_load(cfg->secret_file, secret, err, errlen)) != 0)
		return rc;
	if ((rc = bc_file_read(cfg->pki_bundle, BUNDLE_MAX, BC_FILE_TEXT | BC_FILE_FOLLOW, &text_,
	                       &len)) != 0) {
		snprintf(err, errlen,
		         "%s: cannot read the PKI bundle (%s); `better-compute pki init "
		         "--config %s` writes it",
		         cfg->pki_bundle,
		         rc == BC_ERR_LIMIT || rc == BC_ERR_NOMEM ? bc_err_str(rc)
		                                                  : strerror(errno),
		         cfg->path);
		OPENSSL_cleanse(secret, sizeof(secret));
		return BC_ERR_CONFIG;
	}
	rc = bc_pki_open(text_, len, secret, out);
	OPENSSL_cleanse(secret, sizeof(secret));
	bc_freezero(text_, len + 1);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", cfg->pki_bundle,
		         rc == BC_ERR_VERIFY ? "does not open with this server secret (wrong "
		                               "secret_file, or the bundle was altered)"
		                             : "not a PKI bundle");
		return BC_ERR_CONFIG;
	}
	return 0;
}

/* The node CA set from the store (seeded with the bundle's CA the first time), then
 * a thread that keeps it current: every replica issues and verifies with the same. */
static int start_node_cas(struct bc_server *s, const struct bc_server_config *cfg, char *err,
                          size_t errlen)
{
	uint8_t secret[32];
	int64_t known = 0;
	int rc;

	if ((rc = bc_server_secret_load(cfg->secret_file, secret, err, errlen)) != 0)
		return rc;
	if ((rc = bc_node_cas_refresh(s->store, s->pki, secret, &known)) != 0)
		snprintf(err, errlen, "cannot read the node CAs from the store (%s)%s",
		         bc_err_str(rc),
		         rc == BC_ERR_VERIFY ? ": a sealed key does not open with this "
		                               "secret_file (another server's store?)"
		                             : "");
	else if ((rc = bc_node_cas_watch_start(s->store, s->pki, secret, known, &s->node_cas)) != 0)
		snprintf(err, errlen, "node CAs: cannot start the thread that reads them");
	OPENSSL_cleanse(secret, sizeof(secret));
	return rc;
}

static int start_join(struct bc_server *s, const struct bc_server_config *cfg, char *err,
                      size_t errlen)
{
	struct bc_join_config jc = {.store = s->store,
	                            .pki = s->pki,
	                            .on_refusal = on_refusal,
	                            .on_refusal_ctx = s,
	                            .on_outcome = on_outcome,
	                            .on_outcome_ctx = s};
	int rc;

	/* the built-ins register as plugins do: join-token first, so that a plugin of
	 * that id replaces it, then the optional ones server.toml enables */
	if ((rc = bc_join_service_new(&jc, &s->join)) != 0 ||
	    (rc = bc_attest_register_defaults(s->join)) != 0) {
		snprintf(err, errlen, "JoinService: %s", bc_err_str(rc));
		return rc;
	}
	for (size_t i = 0; i < cfg->n_plugins; i++)
		if ((rc = bc_join_load_plugin(s->join, cfg->plugins[i], err, errlen)) != 0)
			return rc;
	if ((rc = bc_attest_enable(s->join, cfg->toml, err, errlen)) != 0)
		return rc;
	return bc_join_configure(s->join, cfg->toml, err, errlen);
}

static int start_http(struct bc_server *s, const struct bc_server_config *cfg, char *err,
                      size_t errlen)
{
	char *cert = NULL, *key = NULL;
	size_t len;
	int rc;

	if (cfg->tls_cert) {
		if (bc_file_read(cfg->tls_cert, BUNDLE_MAX, BC_FILE_TEXT | BC_FILE_FOLLOW, &cert,
		                 &len) != 0 ||
		    bc_file_read(cfg->tls_key, BUNDLE_MAX, BC_FILE_TEXT | BC_FILE_FOLLOW, &key,
		                 &len) != 0) {
			snprintf(err, errlen, "[tls]: cannot read %s or %s", cfg->tls_cert,
			         cfg->tls_key);
			free(cert);
			return BC_ERR_CONFIG;
		}
	}
	struct bc_http_config hc = {
	    .listen = cfg->listen,
	    .tls_cert_pem = cert,
	    .tls_key_pem = key,
	    .threads = cfg->threads,
	    .max_body = cfg->max_body,
	    .preauth_body = cfg->max_unauth_body,
	    .body_budget = cfg->unauth_body_budget,
	    .request_timeout_s = cfg->request_timeout_s,
	    .max_connections = cfg->max_connections,
	    .per_address = cfg->max_connections_per_address,
	    .authorize = may_send_large_body,
	    .access_log = cfg->access_log,
	};
	rc = bc_http_start(&hc, handle, s, &s->http, err, errlen);
	if (key)
		bc_freezero(key, strlen(key));
	if (rc == 0 && cert != NULL &&
	    (rc = bc_tls_watch_start(s->pki, s->http, cert, &s->tls_watch)) != 0)
		snprintf(err, errlen, "[tls] %s: %s", cfg->tls_cert, bc_err_str(rc));
	free(cert);
	if (rc != 0 || cfg->metrics_listen == NULL)
		return rc;
	/* a scraper needs little: two workers, small requests, few connections */
	struct bc_http_config mc = {
	    .listen = cfg->metrics_listen,
	    .threads = 2,
	    .max_body = 1024,
	    .request_timeout_s = cfg->request_timeout_s,
	    .max_connections = 64,
	    .per_address = 16,
	    .access_log = cfg->access_log,
	    .plain_anywhere = 1,
	};
	char merr[256];
	if ((rc = bc_http_start(&mc, handle_metrics_only, s, &s->metrics_http, merr,
	                        sizeof(merr))) != 0)
		snprintf(err, errlen, "metrics_listen: %s", merr);
	return rc;
}

/* ---- retention inside the server ---- */

/* One prune, its counts into the metrics and, when it deleted anything or failed,
 * one log line. */
static void prune_once(struct bc_server *s)
{
	struct bc_prune_counts n;
	char total[24];
	int rc = bc_store_prune(s->store, &s->prune, &n);
	int64_t sum = n.attestation_uses + n.join_tokens + n.join_requests + n.events +
	              n.node_certs + n.audit;

	bc_metrics_prune(s->metrics, &n, rc == 0);
	snprintf(total, sizeof(total), "%lld", (long long)sum);
	if (rc != 0)
		bc_log(BC_LOG_WARN, "prune stopped; it runs again at the next interval", "error",
		       bc_err_str(rc), "deleted", total, NULL);
	else if (sum > 0)
		bc_log(BC_LOG_INFO, "pruned", "deleted", total, NULL);
}

/* Prunes every prune_interval_s, the first time one interval after the start, until
 * bc_server_stop() sets pruner_stop. Every replica prunes: batches of one and of
 * another delete different rows or none. */
static void *pruner_main(void *arg)
{
	struct bc_server *s = arg;
	struct timespec at;

	pthread_mutex_lock(&s->prune_lock);
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_sec += s->prune_interval_s;
		while (!s->pruner_stop &&
		       pthread_cond_timedwait(&s->prune_cond, &s->prune_lock, &at) == 0)
			;
		if (s->pruner_stop)
			break;
		pthread_mutex_unlock(&s->prune_lock);
		prune_once(s);
		pthread_mutex_lock(&s->prune_lock);
	}
	pthread_mutex_unlock(&s->prune_lock);
	return NULL;
}

static int start_pruner(struct bc_server *s, const struct bc_server_config *cfg)
{
	const int64_t day_ms = 86400LL * 1000;

	s->prune = (struct bc_prune_opts){.event_retention_ms = cfg->event_retention_days * day_ms,
	                                  .audit_retention_ms = cfg->audit_retention_days * day_ms};
	s->prune_interval_s = cfg->prune_interval_s;
	if (s->prune_interval_s == 0)
		return 0;
	if (pthread_create(&s->pruner, NULL, pruner_main, s) != 0)
		return BC_ERR_INTERNAL;
	s->pruner_started = 1;
	return 0;
}

static void stop_pruner(struct bc_server *s)
{
	if (!s->pruner_started)
		return;
	pthread_mutex_lock(&s->prune_lock);
	s->pruner_stop = 1;
	pthread_cond_signal(&s->prune_cond);
	pthread_mutex_unlock(&s->prune_lock);
	pthread_join(s->pruner, NULL);
	s->pruner_started = 0;
}

void bc_server_prune_now(struct bc_server *s)
{
	prune_once(s);
}

int bc_server_start(const struct bc_server_config *cfg, bc_refusal_fn hook, void *hook_ctx,
                    struct bc_server **out, char *err, size_t errlen)
{
	struct bc_server *s;
	int rc;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return BC_ERR_NOMEM;
	pthread_mutex_init(&s->drop_lock, NULL);
	pthread_mutex_init(&s->prune_lock, NULL);
	pthread_cond_init(&s->prune_cond, NULL);
	s->hook = hook;
	s->hook_ctx = hook_ctx;
	s->max_queue_wait_ms = cfg->max_queue_wait_ms;
	if ((s->public_url = strdup(cfg->public_url)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto fail;
	}
	if (cfg->on_refusal &&
	    (rc = bc_proc_queue_new(cfg->on_refusal, cfg->on_refusal_processes,
	                            cfg->on_refusal_queue, HOOK_TIMEOUT_MS, &s->on_refusal)) != 0) {
		snprintf(err, errlen, "on_refusal: cannot start its queue (%s)", bc_err_str(rc));
		goto fail;
	}
	if ((rc = bc_metrics_new(&s->metrics)) != 0) {
		snprintf(err, errlen, "metrics: %s", bc_err_str(rc));
		goto fail;
	}
	if ((rc = bc_server_pki_load(cfg, &s->pki, err, errlen)) != 0)
		goto fail;
	if ((rc = bc_store_open(cfg->database, &s->store, err, errlen)) != 0)
		goto fail;
	if ((rc = start_node_cas(s, cfg, err, errlen)) != 0)
		goto fail;
	if ((rc = start_join(s, cfg, err, errlen)) != 0)
		goto fail;
	s->admin.store = s->store;
	s->admin.pki = s->pki;
	s->admin.public_url = s->public_url;
	s->admin.attestor_known = bc_join_attestor_known_cb;
	s->admin.attestor_at = attestor_at;
	s->admin.attestor_ctx = s->join;
	if ((s->admin.limiter = bc_admin_limiter_new(0, 0, 0)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto fail;
	}
	if ((rc = start_http(s, cfg, err, errlen)) != 0)
		goto fail;
	if ((rc = start_pruner(s, cfg)) != 0) {
		snprintf(err, errlen, "prune: cannot start its thread");
		goto fail;
	}
	*out = s;
	return 0;
fail:
	bc_server_stop(s);
	return rc;
}

uint16_t bc_server_port(const struct bc_server *s)
{
	return bc_http_port(s->http);
}

void bc_server_attestors(const struct bc_server *s, char *out, size_t outlen)
{
	size_t used = 0;
	const char *id;

	out[0] = 0;
	for (size_t i = 0; (id = bc_join_attestor_id(s->join, i)) != NULL; i++) {
		int n = snprintf(out + used, outlen - used, "%s%s", used ? "," : "", id);
		if (n < 0 || (size_t)n >= outlen - used)
			break;
		used += (size_t)n;
	}
}

uint16_t bc_server_metrics_port(const struct bc_server *s)
{
	return s->metrics_http ? bc_http_port(s->metrics_http) : 0;
}

struct bc_join_service *bc_server_join(struct bc_server *s)
{
	return s->join;
}

bc_store *bc_server_store(struct bc_server *s)
{
	return s->store;
}

int bc_server_tls_check(struct bc_server *s)
{
	return s->tls_watch != NULL ? bc_tls_watch_check(s->tls_watch) : 0;
}

const bc_pki *bc_server_pki(const struct bc_server *s)
{
	return s->pki;
}

void bc_server_stop(struct bc_server *s)
{
	if (s == NULL)
		return;
	stop_pruner(s);
	if (s->metrics_http)
		bc_http_stop(s->metrics_http);
	bc_tls_watch_stop(s->tls_watch);
	if (s->http)
		bc_http_stop(s->http);
	/* the commands still running finish; those waiting are dropped */
	bc_proc_queue_free(s->on_refusal);
	bc_join_service_free(s->join);
	bc_node_cas_watch_stop(s->node_cas);
	bc_metrics_free(s->metrics);
	bc_admin_limiter_free(s->admin.limiter);
	bc_store_close(s->store);
	bc_pki_free(s->pki);
	pthread_mutex_destroy(&s->drop_lock);
	pthread_mutex_destroy(&s->prune_lock);
	pthread_cond_destroy(&s->prune_cond);
	free(s->public_url);
	free(s);
}
