/* The HTTP front end: the server's start and stop, its TLS (OpenSSL), and the bytes of
 * an answer. The connections are the event loop's (http_loop.c), the handler the
 * workers' (http_worker.c); http_internal.h says who owns what. */
#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/log.h"
#include "bc/net.h"
#include "server/http_internal.h"

#define HTTP_DEFAULT_THREADS  4
#define HTTP_DEFAULT_MAX_BODY (64u * 1024)
/* Descriptors kept for everything but connections: the store, logs, hooks. */
#define HTTP_FD_RESERVE 128
/* How long bc_http_stop() waits for in-flight requests. */
#define HTTP_DRAIN_MS 30000
#define HTTP_BACKLOG  1024

uint64_t http_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u +
	       (uint64_t)bc_clock_offset_ms();
}

void http_inflight_add(struct bc_http *s, int delta)
{
	pthread_mutex_lock(&s->lock);
	if (delta > 0)
		s->inflight++;
	else if (s->inflight > 0 && --s->inflight == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

/* ---- listen addresses ---- */

/* Numeric addresses only ("localhost" is 127.0.0.1): a listen address never
 * depends on name resolution. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	char host[INET6_ADDRSTRLEN + 1];
	uint16_t port;
	int rc;

	memset(ss, 0, sizeof(*ss));
	if ((rc = bc_net_split_hostport(listen, host, sizeof(host), &port)) != 0)
		return rc;
	if (strcasecmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		return 0;
	}
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		return 0;
	}
	return BC_ERR_INVALID;
}

/* ---- answers ---- */

static const char *reason_of(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Status";
	}
}

void http_answer_bytes(int status, const char *ctype, const uint8_t *body, size_t len,
                       int close_after, unsigned retry_after_s, int head_only, uint8_t **out,
                       size_t *out_len)
{
	char head[1024], date[64], ctline[160] = "", ra[40] = "";
	struct tm tm;
	time_t now = time(NULL);
	int n;

	*out = NULL;
	*out_len = 0;
	(void)strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
	if (ctype != NULL && *ctype != '\0')
		snprintf(ctline, sizeof(ctline), "Content-Type: %s\r\n", ctype);
	if (retry_after_s > 0)
		snprintf(ra, sizeof(ra), "Retry-After: %u\r\n", retry_after_s);
	/* every answer, the web console's pages included: scripts and styles from this
	 * origin only (no inline script), no frames, no forms sent anywhere, no referrer */
	n = snprintf(head, sizeof(head),
	             "HTTP/1.1 %d %s\r\n%sCache-Control: no-store\r\n"
	             "X-Content-Type-Options: nosniff\r\nContent-Security-Policy: " BC_HTTP_CSP
	             "\r\nReferrer-Policy: no-referrer\r\n%s%sContent-Length: %zu\r\n"
	             "Date: %s\r\n\r\n",
	             status, reason_of(status), ctline, close_after ? "Connection: close\r\n" : "",
	             ra, len, date);
	if (n < 0 || (size_t)n >= sizeof(head))
		return;
	if (head_only)
		len = 0;
	if ((*out = malloc((size_t)n + len)) == NULL)
		return;
	memcpy(*out, head, (size_t)n);
	if (len)
		memcpy(*out + n, body, len);
	*out_len = (size_t)n + len;
}

void bc_http_set_body(struct bc_http_response *resp, int status, const char *content_type,
                      const void *body, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	bc_freezero(resp->body, resp->body_len);
	resp->body = NULL;
	resp->body_len = 0;
	resp->content_type = content_type;
	if (copy == NULL) {
		resp->status = 500;
		return;
	}
	if (len)
		memcpy(copy, body, len);
	resp->status = status;
	resp->body = copy;
	resp->body_len = len;
}

const char *bc_http_query(const struct bc_http_request *req, const char *key)
{
	for (size_t i = 0; i < req->n_query; i++)
		if (strcmp(req->query_keys[i], key) == 0)
			return req->query_vals[i];
	return NULL;
}

/* ---- TLS ---- */

/* The certificate (then its chain) and the key, PEM in memory. */
static int tls_load(SSL_CTX *ctx, const char *cert_pem, const char *key_pem)
{
	BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
	X509 *x = NULL, *extra;
	EVP_PKEY *k = NULL;
	int rc = BC_ERR_CRYPTO;

	if (cb == NULL || kb == NULL || (x = PEM_read_bio_X509(cb, NULL, NULL, NULL)) == NULL ||
	    SSL_CTX_use_certificate(ctx, x) != 1)
		goto out;
	while ((extra = PEM_read_bio_X509(cb, NULL, NULL, NULL)) != NULL)
		if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
			X509_free(extra);
			goto out;
		}
	if ((k = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL)) == NULL ||
	    SSL_CTX_use_PrivateKey(ctx, k) != 1 || SSL_CTX_check_private_key(ctx) != 1)
		goto out;
	rc = 0;
out:
	ERR_clear_error();
	EVP_PKEY_free(k);
	X509_free(x);
	BIO_free(cb);
	BIO_free(kb);
	return rc;
}

/* TLS 1.2 and 1.3, no renegotiation; buffers released between reads, so that an idle
 * connection holds little. No session tickets and no session cache: an agent makes a
 * new client for each call (it would never resume), and a ticket costs an encryption
 * per handshake and a cache entry a lock. */
#define TLS13_SUITES "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

static int tls_ctx_new(const char *cert_pem, const char *key_pem, SSL_CTX **out)
{
	SSL_CTX *ctx;

	*out = NULL;
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
		return BC_ERR_CRYPTO;
	(void)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	(void)SSL_CTX_set_num_tickets(ctx, 0);
	(void)SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* TLS 1.3: AES-128-GCM with SHA-256 first (OpenSSL's own order puts AES-256-GCM with
	 * SHA-384 first). The key schedule and the transcript then run on SHA-256, which
	 * this hardware computes with its SHA instructions and SHA-384 without: 3.5% fewer
	 * instructions in a server's handshake, by callgrind (docs/performance.md). The
	 * others stay, for a client that offers only them. */
	if (SSL_CTX_set_ciphersuites(ctx, TLS13_SUITES) != 1) {
		SSL_CTX_free(ctx);
		return BC_ERR_CRYPTO;
	}
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
	                          SSL_MODE_RELEASE_BUFFERS);
	if (tls_load(ctx, cert_pem, key_pem) != 0) {
		SSL_CTX_free(ctx);
		return BC_ERR_CRYPTO;
	}
	*out = ctx;
	return 0;
}

static int tls_start(struct bc_http *s, const struct bc_http_config *cfg)
{
	return tls_ctx_new(cfg->tls_cert_pem, cfg->tls_key_pem, &s->tls);
}

/* The new context is made whole first, then takes the old one's place under tls_lock,
 * which conn_new holds around SSL_new: a connection gets one context or the other,
 * never one half changed. SSL_new holds a reference, so the connections on the old
 * context keep it until they close. */
int bc_http_set_tls(struct bc_http *s, const char *cert_pem, const char *key_pem)
{
	SSL_CTX *ctx = NULL, *old;
	int rc;

	if (s == NULL || cert_pem == NULL || key_pem == NULL)
		return BC_ERR_INVALID;
	pthread_mutex_lock(&s->tls_lock);
	old = s->tls;
	pthread_mutex_unlock(&s->tls_lock);
	if (old == NULL)
		return BC_ERR_INVALID;
	if ((rc = tls_ctx_new(cert_pem, key_pem, &ctx)) != 0)
		return rc;
	pthread_mutex_lock(&s->tls_lock);
	old = s->tls;
	s->tls = ctx;
	pthread_mutex_unlock(&s->tls_lock);
	SSL_CTX_free(old);
	return 0;
}

SSL *http_tls_new(struct bc_http *s)
{
	SSL *ssl;

	pthread_mutex_lock(&s->tls_lock);
	ssl = SSL_new(s->tls);
	pthread_mutex_unlock(&s->tls_lock);
	return ssl;
}

/* ---- start and stop ---- */

/* The descriptors this process may open: the soft limit raised to the hard one when
 * max_connections needs it. Returns how many connections fit. */
static unsigned fit_fd_limit(unsigned want)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)want + HTTP_FD_RESERVE;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return want;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		rl.rlim_cur =
		    rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return want;
	return rl.rlim_cur > 2 * HTTP_FD_RESERVE ? (unsigned)(rl.rlim_cur - HTTP_FD_RESERVE)
	                                         : (unsigned)(rl.rlim_cur / 2);
}

static int check_config(const struct bc_http_config *cfg, struct bc_http *s, char *err,
                        size_t errlen)
{
	const char *listen = cfg->listen ? cfg->listen : "";

	if (parse_listen(listen, &s->addr) != 0) {
		snprintf(err, errlen,
		         "listen %s: expected host:port or [v6]:port with a numeric address",
		         listen);
		return BC_ERR_CONFIG;
	}
	if ((cfg->tls_cert_pem == NULL) != (cfg->tls_key_pem == NULL)) {
		snprintf(err, errlen, "listen %s: TLS needs both a certificate and a key", listen);
		return BC_ERR_CONFIG;
	}
	if (cfg->tls_cert_pem == NULL && !cfg->plain_anywhere &&
	    !bc_net_addr_is_loopback((const struct sockaddr *)&s->addr)) {
		snprintf(err, errlen,
		         "listen %s: plain HTTP is only allowed on a loopback address; set [tls] "
		         "cert and key",
		         listen);
		return BC_ERR_CONFIG;
	}
	return 0;
}

static void limits_of(const struct bc_http_config *cfg, struct bc_http *s)
{
	unsigned want = cfg->max_connections ? cfg->max_connections : BC_HTTP_DEFAULT_CONNECTIONS;

	s->max_body = cfg->max_body ? cfg->max_body : HTTP_DEFAULT_MAX_BODY;
	s->access_log = cfg->access_log;
	s->preauth_body = cfg->preauth_body;
	s->body_budget = cfg->body_budget;
	s->authorize = cfg->authorize;
	s->request_timeout_ms =
	    (uint64_t)(cfg->request_timeout_s ? cfg->request_timeout_s
	                                      : BC_HTTP_DEFAULT_REQUEST_TIMEOUT_S) *
	    1000u;
	s->per_address = cfg->per_address ? cfg->per_address : BC_HTTP_DEFAULT_PER_ADDRESS;
	s->max_connections = fit_fd_limit(want);
	if (s->max_connections < want) {
		char have[16], asked[16];

		snprintf(have, sizeof(have), "%u", s->max_connections);
		snprintf(asked, sizeof(asked), "%u", want);
		bc_log(BC_LOG_WARN,
		       "max_connections lowered to what the open-file limit allows; raise "
		       "LimitNOFILE (ulimit -n)",
		       "max_connections", asked, "allowed", have, NULL);
	}
}

/* The listen socket (IPv6: v6 only), the epoll set and the wake-up descriptor. */
static int open_sockets(struct bc_http *s)
{
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
	struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &s->wake_fd};
	struct sockaddr_storage bound;
	socklen_t len = sizeof(bound);
	int one = 1, fam = s->addr.ss_family;

	s->listen_fd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 ||
	    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    (fam == AF_INET6 &&
	     setsockopt(s->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
	    bind(s->listen_fd, (struct sockaddr *)&s->addr,
	         fam == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) != 0 ||
	    listen(s->listen_fd, HTTP_BACKLOG) != 0 ||
	    getsockname(s->listen_fd, (struct sockaddr *)&bound, &len) != 0)
		return BC_ERR_IO;
	s->port = ntohs(fam == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
	                                : ((struct sockaddr_in *)&bound)->sin_port);
	if ((s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &lev) != 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake_fd, &wev) != 0)
		return BC_ERR_IO;
	s->listening = 1;
	return 0;
}

static void wake(struct bc_http *s)
{
	uint64_t one = 1;

	if (write(s->wake_fd, &one, sizeof(one)) < 0) {
		/* full: a wake-up is pending anyway */
	}
}

/* Stops the threads that started (workers after the loop, so that none is left with a
 * connection the loop would free) and frees everything. */
static void http_free(struct bc_http *s)
{
	if (s == NULL)
		return;
	if (s->loop_running) {
		atomic_store(&s->loop_stop, 1);
		wake(s);
		pthread_join(s->loop, NULL);
	}
	pthread_mutex_lock(&s->qlock);
	s->workers_stop = 1;
	pthread_cond_broadcast(&s->qcond);
	pthread_mutex_unlock(&s->qlock);
	for (unsigned i = 0; i < s->n_workers; i++)
		pthread_join(s->workers[i], NULL);
	free(s->workers);
	/* what a worker still held when the drain gave up: answered or queued, unwritten */
	for (struct http_conn *c = s->conns, *next; c != NULL; c = next) {
		next = c->next;
		http_conn_free(c);
	}
	for (unsigned b = 0; b < HTTP_ADDR_BUCKETS; b++)
		for (struct http_addr *a = s->addrs[b], *next; a != NULL; a = next) {
			next = a->next;
			free(a);
		}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	SSL_CTX_free(s->tls);
	pthread_cond_destroy(&s->qcond);
	pthread_mutex_destroy(&s->qlock);
	pthread_mutex_destroy(&s->dlock);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->tls_lock);
	free(s);
}

static struct bc_http *http_new(bc_http_handler h, void *ctx)
{
	struct bc_http *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->listen_fd = s->epfd = s->wake_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	pthread_mutex_init(&s->qlock, NULL);
	pthread_cond_init(&s->qcond, NULL);
	pthread_mutex_init(&s->dlock, NULL);
	pthread_mutex_init(&s->tls_lock, NULL);
	s->handler = h;
	s->ctx = ctx;
	return s;
}

static int start_threads(struct bc_http *s, unsigned threads)
{
	if ((s->workers = calloc(threads, sizeof(*s->workers))) == NULL)
		return BC_ERR_NOMEM;
	for (; s->n_workers < threads; s->n_workers++)
		if (pthread_create(&s->workers[s->n_workers], NULL, http_worker_main, s) != 0)
			return BC_ERR_NOMEM;
	s->window_start_ms = http_mono_ms();
	if (pthread_create(&s->loop, NULL, http_loop_main, s) != 0)
		return BC_ERR_NOMEM;
	s->loop_running = 1;
	return 0;
}

int bc_http_start(const struct bc_http_config *cfg, bc_http_handler h, void *ctx,
                  struct bc_http **out, char *err, size_t errlen)
{
	struct bc_http *s;
	int rc;

	*out = NULL;
	snprintf(err, errlen, "%s", "");
	if ((s = http_new(h, ctx)) == NULL)
		return BC_ERR_NOMEM;
	limits_of(cfg, s);
	if ((rc = check_config(cfg, s, err, errlen)) != 0)
		goto out;
	if ((cfg->tls_cert_pem != NULL && tls_start(s, cfg) != 0) || open_sockets(s) != 0) {
		snprintf(err, errlen,
		         "listen %s: cannot start the HTTP server (address in use, or a bad TLS "
		         "certificate or key)",
		         cfg->listen);
		rc = BC_ERR_IO;
		goto out;
	}
	if ((rc = start_threads(s, cfg->threads ? cfg->threads : HTTP_DEFAULT_THREADS)) != 0) {
		snprintf(err, errlen, "listen %s: cannot start the HTTP server's threads",
		         cfg->listen);
		goto out;
	}
	*out = s;
	s = NULL;
out:
	http_free(s);
	return rc;
}

uint64_t bc_http_evicted(struct bc_http *s)
{
	return atomic_load(&s->evicted);
}

unsigned bc_http_connections(struct bc_http *s)
{
	return atomic_load(&s->n_conns);
}

uint16_t bc_http_port(const struct bc_http *s)
{
	return s ? s->port : 0;
}

/* Waits until no request is in flight, or HTTP_DRAIN_MS passed. */
static void drain(struct bc_http *s)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += HTTP_DRAIN_MS / 1000;
	pthread_mutex_lock(&s->lock);
	while (s->inflight > 0)
		if (pthread_cond_timedwait(&s->idle, &s->lock, &until) != 0)
			break;
	pthread_mutex_unlock(&s->lock);
}

void bc_http_stop(struct bc_http *s)
{
	if (s == NULL)
		return;
	/* new requests are answered 503 and the listen socket closes; those in flight
	 * are answered */
	atomic_store(&s->stopping, 1);
	wake(s);
	drain(s);
	http_free(s);
}
