#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/log.h"
#include "bc/net.h"

#define HTTP_DEFAULT_THREADS      4
#define HTTP_DEFAULT_MAX_BODY     (64u * 1024)
#define HTTP_CONNECTION_TIMEOUT_S 30
/* Headers and MHD's read buffer live in this per-connection pool; the body is
 * copied out of it into our own bounded buffer. */
#define HTTP_CONNECTION_MEMORY (32u * 1024)
#define HTTP_MAX_QUERY         32
/* Descriptors kept for everything but connections: the store, logs, hooks. */
#define HTTP_FD_RESERVE 128
/* The reaper's period, and the period of the summarized log lines. */
#define HTTP_REAP_MS    1000
#define HTTP_SUMMARY_MS 60000
/* The request deadline when connections run short, at the least. */
#define HTTP_MIN_DEADLINE_MS 1000
/* A streamed (chunked) body over max_body is read and dropped so that the 413
 * reaches the client; past this many dropped bytes the connection is closed. */
#define HTTP_MAX_DISCARD (1024u * 1024)
/* How long bc_http_stop() waits for in-flight requests. */
#define HTTP_DRAIN_MS       30000
#define HTTP_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

static const char JSON_TYPE[] = "application/json";
static const char BODY_TOO_LARGE[] =
    "{\"code\":\"resource_exhausted\",\"message\":\"request body too large\"}";
static const char TOO_MANY_ARGS[] =
    "{\"code\":\"invalid_argument\",\"message\":\"too many query arguments\"}";
static const char STOPPING[] = "{\"code\":\"unavailable\",\"message\":\"server is stopping\"}";
static const char BAD_REQUEST_LINE[] =
    "{\"code\":\"invalid_argument\",\"message\":\"malformed request line\"}";
static const char BAD_FRAMING[] =
    "{\"code\":\"invalid_argument\",\"message\":\"ambiguous request framing (repeated "
    "Content-Length, or Content-Length with Transfer-Encoding)\"}";

/* One per TCP connection (MHD's socket_context), linked in bc_http.conns while open:
 * the reaper closes one whose request has not fully arrived request_timeout_seconds after
 * the connection opened or its previous request was answered. */
struct http_conn {
	struct http_conn *prev, *next;
	MHD_socket fd;
	uint64_t since_ms; /* monotonic */
	int busy;          /* a request was read whole and is being answered */
	int fresh;         /* no request answered yet: since_ms is when it was accepted */
};

/* Counts of what is logged once per HTTP_SUMMARY_MS instead of once each. */
struct http_counts {
	unsigned long reaped;      /* closed by the request deadline */
	unsigned long over_budget; /* closed: the unauthenticated body budget was spent */
	unsigned long mhd_lines;   /* libmicrohttpd's messages (aborted connections...) */
};
struct bc_http {
	struct MHD_Daemon *d;
	bc_http_handler handler;
	void *ctx;
	int access_log;
	size_t max_body;
	uint16_t port;
	struct sockaddr_storage addr;
	char *cert_pem; /* MHD reads these while starting; kept until stop */
	char *key_pem;
	atomic_int stopping;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned inflight;
	/* limits (bc_http_config) */
	size_t preauth_body;
	size_t body_budget;
	uint64_t request_timeout_ms;
	unsigned max_connections;
	unsigned per_address;
	bc_http_authorize authorize;
	atomic_size_t body_bytes; /* buffered in every request's body now */
	/* the open connections and the reaper, under conns_lock */
	pthread_mutex_t conns_lock;
	pthread_cond_t reaper_wake;
	struct http_conn *conns;
	unsigned n_conns;
	int reaper_running;
	int reaper_stop;
	pthread_t reaper;
	struct http_counts counts;
	char first_mhd_line[256]; /* the first of the window's libmicrohttpd messages */
	uint64_t window_start_ms;
};

/* One per request: MHD's con_cls. Freed by on_completed(). */
struct http_req {
	struct bc_http *srv;
	bc_buf body;
	size_t reserved; /* of srv->body_bytes */
	size_t discarded;
	int too_large;
	int authorized;      /* the authorize hook vouched for it: max_body, no budget */
	int answered;        /* a response was queued before the body was read */
	int begun;           /* begin_request() ran (counted in inflight) */
	const char *uri_end; /* the request target's end as the request line had it */
	size_t n_query;
	int query_overflow;
	const char *query_keys[HTTP_MAX_QUERY];
	const char *query_vals[HTTP_MAX_QUERY];
	char peer[INET6_ADDRSTRLEN];
};

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

/* ---- responses ---- */

struct owned_body {
	uint8_t *p;
	size_t len;
};

/* Bodies may carry secrets shown once (a new token): wipe them when MHD is done. */
static void free_owned_body(void *cls)
{
	struct owned_body *b = cls;

	bc_freezero(b->p, b->len);
	free(b);
}

/* Queues status with body; takes ownership of body (malloc'd, may be NULL). */
static enum MHD_Result queue_owned(struct MHD_Connection *conn, int status, const char *ctype,
                                   uint8_t *body, size_t len, int close_after,
                                   unsigned retry_after_s)
{
	struct MHD_Response *r;
	struct owned_body *ob;
	enum MHD_Result ret;

	if ((ob = malloc(sizeof(*ob))) == NULL) {
		bc_freezero(body, len);
		return MHD_NO;
	}
	ob->p = body;
	ob->len = len;
	r = MHD_create_response_from_buffer_with_free_callback_cls(len, body, free_owned_body, ob);
	if (r == NULL) {
		free_owned_body(ob);
		return MHD_NO;
	}
	if (ctype != NULL && *ctype != '\0')
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	(void)MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	/* every answer, the web console's pages included: scripts and styles from this
	 * origin only (no inline script), no frames, no forms sent anywhere, no referrer */
	(void)MHD_add_response_header(r, "Content-Security-Policy", BC_HTTP_CSP);
	(void)MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	if (close_after)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (retry_after_s > 0) {
		char ra[16];
		snprintf(ra, sizeof(ra), "%u", retry_after_s);
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	ret = MHD_queue_response(conn, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result queue_static(struct MHD_Connection *conn, int status, const char *json,
                                    int close_after)
{
	size_t len = strlen(json);
	uint8_t *copy = malloc(len);

	if (copy == NULL)
		return MHD_NO;
	memcpy(copy, json, len);
	return queue_owned(conn, status, JSON_TYPE, copy, len, close_after, 0);
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

/* ---- the request cycle ---- */

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
	struct http_req *r = cls;

	if (r->n_query == HTTP_MAX_QUERY) {
		r->query_overflow = 1;
		return MHD_NO;
	}
	r->query_keys[r->n_query] = key;
	r->query_vals[r->n_query] = value ? value : "";
	r->n_query++;
	return MHD_YES;
}

static void peer_of(struct MHD_Connection *conn, char *out, size_t outlen)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr *sa;

	snprintf(out, outlen, "%s", "");
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || (sa = ci->client_addr) == NULL)
		return;
	switch (sa->sa_family) {
	case AF_INET:
		(void)inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out,
		                (socklen_t)outlen);
		break;
	case AF_INET6:
		(void)inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
		                (socklen_t)outlen);
		break;
	default: break;
	}
}

/* A declared length over the limit is answered before the body is read. */
static int declared_too_large(struct MHD_Connection *conn, size_t max)
{
	const char *cl =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long v;
	char *end;

	if (cl == NULL || *cl < '0' || *cl > '9')
		return 0;
	errno = 0;
	v = strtoull(cl, &end, 10);
	return errno == ERANGE || v > max;
}

static void inflight_add(struct bc_http *s, int delta)
{
	pthread_mutex_lock(&s->lock);
	if (delta > 0)
		s->inflight++;
	else if (s->inflight > 0 && --s->inflight == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

/* Monotonic milliseconds, moved by the test clock's offset like bc_now_ms(). */
static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u +
	       (uint64_t)bc_clock_offset_ms();
}

static struct http_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* busy: the request arrived whole (the deadline stops); idle again: it was answered
 * (the deadline restarts for the next request on this connection). Returns, when the
 * request becomes busy on a connection that has had none answered, how long ago the
 * connection was accepted: the time it waited for a worker. A later request on a
 * kept-alive connection reports 0, since its idle time is the client's, not a queue. */
static uint64_t conn_mark(struct bc_http *s, struct MHD_Connection *conn, int busy)
{
	struct http_conn *c = conn_of(conn);
	uint64_t now = mono_ms(), waited = 0;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&s->conns_lock);
	if (busy && c->fresh && now > c->since_ms)
		waited = now - c->since_ms;
	if (!busy)
		c->fresh = 0;
	c->busy = busy;
	c->since_ms = now;
	pthread_mutex_unlock(&s->conns_lock);
	return waited;
}

struct framing {
	unsigned content_length;
	unsigned transfer_encoding;
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
	struct framing *f = cls;

	(void)kind;
	(void)value;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
		f->content_length++;
	else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
		f->transfer_encoding++;
	return MHD_YES;
}

/* A body framed two ways is read one way here and another by a proxy in front:
 * refused (RFC 9112 section 6.3). */
static int framing_ambiguous(struct MHD_Connection *conn, struct framing *f)
{
	memset(f, 0, sizeof(*f));
	(void)MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, f);
	return f->content_length > 1 || (f->content_length && f->transfer_encoding);
}

/* The most body this request may buffer: max_body once the authorize hook vouched
 * for it (asked only when the request may be larger than preauth_body), else
 * preauth_body. */
static size_t body_cap(struct bc_http *s, struct http_req *r, struct MHD_Connection *conn,
                       const char *url, const char *method, const struct framing *f)
{
	const char *authz;

	if (s->preauth_body == 0 || s->max_body <= s->preauth_body)
		return s->max_body;
	if (!f->transfer_encoding && !declared_too_large(conn, s->preauth_body))
		return s->preauth_body;
	authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (s->authorize && s->authorize(s->ctx, method, url, authz ? authz : "") == 1) {
		r->authorized = 1;
		return s->max_body;
	}
	return s->preauth_body;
}

/* MHD_OPTION_URI_LOG_CALLBACK: the request, made as soon as its request line is
 * read. The target is a C string here; libmicrohttpd 0.9.x ends it in place with a
 * NUL where the space before the version was, so the version follows it at once
 * unless the target held a NUL byte of its own (checked in begin_request). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http_req *r = calloc(1, sizeof(*r));

	(void)conn;
	if (r == NULL)
		return NULL;
	r->srv = cls;
	r->uri_end = uri + strlen(uri);
	return r;
}

static enum MHD_Result begin_request(struct bc_http *s, struct MHD_Connection *conn,
                                     const char *url, const char *method, const char *version,
                                     struct http_req *r)
{
	struct framing f;
	size_t cap;

	r->begun = 1;
	inflight_add(s, 1);
	r->answered = 1;
	if (atomic_load(&s->stopping))
		return queue_static(conn, 503, STOPPING, 1);
	if (r->uri_end + 1 != version)
		return queue_static(conn, 400, BAD_REQUEST_LINE, 1);
	if (framing_ambiguous(conn, &f))
		return queue_static(conn, 400, BAD_FRAMING, 1);
	cap = body_cap(s, r, conn, url, method, &f);
	if (declared_too_large(conn, cap))
		return queue_static(conn, 413, BODY_TOO_LARGE, 1);
	bc_buf_init(&r->body, cap);
	r->answered = 0;
	return MHD_YES;
}

static void body_release(struct http_req *r)
{
	if (r->reserved)
		atomic_fetch_sub(&r->srv->body_bytes, r->reserved);
	r->reserved = 0;
	bc_buf_free(&r->body);
}

/* Unauthenticated bodies share body_budget bytes: past it a request is dropped
 * (its connection closed) rather than buffered. */
static int body_reserve(struct http_req *r, size_t n)
{
	struct bc_http *s = r->srv;
	size_t before;

	if (r->authorized || s->body_budget == 0)
		return 0;
	before = atomic_fetch_add(&s->body_bytes, n);
	if (before + n > s->body_budget) {
		atomic_fetch_sub(&s->body_bytes, n);
		return BC_ERR_LIMIT;
	}
	r->reserved += n;
	return 0;
}

static enum MHD_Result take_upload(struct http_req *r, const char *data, size_t *size)
{
	size_t n = *size;

	*size = 0;
	if (!r->too_large && n <= r->body.max - r->body.len && body_reserve(r, n) != 0) {
		pthread_mutex_lock(&r->srv->conns_lock);
		r->srv->counts.over_budget++;
		pthread_mutex_unlock(&r->srv->conns_lock);
		return MHD_NO;
	}
	if (!r->too_large && bc_buf_put(&r->body, data, n) == 0)
		return MHD_YES;
	if (!r->too_large) {
		r->too_large = 1;
		body_release(r);
	}
	r->discarded += n;
	return r->discarded > HTTP_MAX_DISCARD ? MHD_NO : MHD_YES;
}

/* access_log: one line per answered request, from its last byte read to its answer */
static void access_line(const struct http_req *r, const char *method, const char *path, int status,
                        uint64_t t0)
{
	char st[8], ms[24];

	if (!r->srv->access_log)
		return;
	snprintf(st, sizeof(st), "%d", status);
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)(mono_ms() - t0));
	bc_log(BC_LOG_INFO, "request", "client", r->peer, "method", method, "path", path, "status",
	       st, "duration_ms", ms, NULL);
}

static enum MHD_Result finish_request(struct http_req *r, struct MHD_Connection *conn,
                                      const char *url, const char *method)
{
	struct bc_http_response resp = {0};
	struct bc_http_request req = {0};
	uint64_t t0 = mono_ms();
	const char *v;

	/* whatever follows, this request is answered once */
	r->answered = 1;
	req.queued_ms = conn_mark(r->srv, conn, 1);
	peer_of(conn, r->peer, sizeof(r->peer));
	if (r->too_large) {
		access_line(r, method, url, 413, t0);
		return queue_static(conn, 413, BODY_TOO_LARGE, 1);
	}
	(void)MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, r);
	if (r->query_overflow) {
		access_line(r, method, url, 400, t0);
		return queue_static(conn, 400, TOO_MANY_ARGS, 0);
	}
	req.method = method;
	req.path = url;
	v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	req.content_type = v ? v : "";
	v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	req.authorization = v ? v : "";
	req.body = r->body.p;
	req.body_len = r->body.len;
	req.peer = r->peer;
	req.query_keys = r->query_keys;
	req.query_vals = r->query_vals;
	req.n_query = r->n_query;
	/* every line the handler logs (a refusal's) names the client */
	bc_log_set_client(r->peer);
	r->srv->handler(r->srv->ctx, &req, &resp);
	bc_log_set_client(NULL);
	if (resp.status < 100 || resp.status > 599) {
		bc_freezero(resp.body, resp.body_len);
		resp.body = NULL;
		resp.body_len = 0;
		resp.status = 500;
	}
	access_line(r, method, url, resp.status, t0);
	return queue_owned(conn, resp.status, resp.content_type, resp.body, resp.body_len, 0,
	                   resp.retry_after_s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	struct bc_http *s = cls;
	struct http_req *r = *con_cls;

	if (r == NULL)
		return MHD_NO; /* on_uri() had no memory */
	if (!r->begun)
		return begin_request(s, conn, url, method, version, r);
	if (r->answered) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size != 0)
		return take_upload(r, upload_data, upload_data_size);
	return finish_request(r, conn, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *con_cls;

	(void)toe;
	if (r == NULL)
		return;
	*con_cls = NULL;
	(void)conn_mark(r->srv, conn, 0);
	body_release(r);
	if (r->begun)
		inflight_add(r->srv, -1);
	free(r);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct bc_http *s = cls;
	struct http_conn *c = *socket_context;
	const union MHD_ConnectionInfo *ci;

	switch (code) {
	case MHD_CONNECTION_NOTIFY_STARTED:
		/* without memory for it, the connection has the idle timeout only */
		if ((c = calloc(1, sizeof(*c))) == NULL)
			return;
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		c->fd = ci ? ci->connect_fd : MHD_INVALID_SOCKET;
		c->since_ms = mono_ms();
		c->fresh = 1;
		pthread_mutex_lock(&s->conns_lock);
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->n_conns++;
		pthread_mutex_unlock(&s->conns_lock);
		*socket_context = c;
		break;
	case MHD_CONNECTION_NOTIFY_CLOSED:
		/* MHD calls this before it closes the socket: under conns_lock the reaper
		 * never shuts down a descriptor that was reused */
		if (c == NULL)
			return;
		pthread_mutex_lock(&s->conns_lock);
		if (c->prev)
			c->prev->next = c->next;
		else
			s->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		s->n_conns--;
		pthread_mutex_unlock(&s->conns_lock);
		free(c);
		*socket_context = NULL;
		break;
	default: break;
	}
}

/* libmicrohttpd writes a line per aborted connection: the first of each minute is
 * logged, the others counted into the reaper's summary. */
__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct bc_http *s = cls;
	char buf[512];
	size_t n;
	int first;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	pthread_mutex_lock(&s->conns_lock);
	first = s->counts.mhd_lines++ == 0;
	if (first)
		snprintf(s->first_mhd_line, sizeof(s->first_mhd_line), "%s", buf);
	pthread_mutex_unlock(&s->conns_lock);
	if (first)
		bc_log(BC_LOG_WARN, "http", "detail", buf, NULL);
}

/* ---- the request deadline ---- */

/* Under conns_lock: shuts down every connection whose request is overdue. MHD sees
 * the end of the stream and closes it (and calls on_connection). */
static void reap_overdue(struct bc_http *s, uint64_t now)
{
	uint64_t deadline = s->request_timeout_ms;

	/* with the table three-quarters full, slow requests make room sooner */
	if (s->n_conns > s->max_connections / 4 * 3)
		deadline =
		    deadline / 5 > HTTP_MIN_DEADLINE_MS ? deadline / 5 : HTTP_MIN_DEADLINE_MS;
	for (struct http_conn *c = s->conns; c != NULL; c = c->next) {
		/* now < since_ms: the test clock was set back; the connection counts as new */
		if (c->busy || c->fd == MHD_INVALID_SOCKET || now < c->since_ms ||
		    now - c->since_ms < deadline)
			continue;
		(void)shutdown(c->fd, SHUT_RDWR);
		c->fd = MHD_INVALID_SOCKET;
		s->counts.reaped++;
	}
}

/* Under conns_lock: one line for the window's counts, then a new window. */
static void log_summary(struct bc_http *s, uint64_t now)
{
	char reaped[24], budget[24], lines[24];
	struct http_counts c = s->counts;

	s->window_start_ms = now;
	memset(&s->counts, 0, sizeof(s->counts));
	if (c.reaped == 0 && c.over_budget == 0 && c.mhd_lines <= 1)
		return;
	snprintf(reaped, sizeof(reaped), "%lu", c.reaped);
	snprintf(budget, sizeof(budget), "%lu", c.over_budget);
	snprintf(lines, sizeof(lines), "%lu", c.mhd_lines);
	bc_log(BC_LOG_WARN, "http connections closed in the last minute", "deadline", reaped,
	       "bodyBudget", budget, "messages", lines, "firstMessage", s->first_mhd_line, NULL);
}

static void *reaper_main(void *arg)
{
	struct bc_http *s = arg;
	struct timespec until;
	uint64_t now;

	pthread_mutex_lock(&s->conns_lock);
	while (!s->reaper_stop) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += HTTP_REAP_MS / 1000;
		(void)pthread_cond_timedwait(&s->reaper_wake, &s->conns_lock, &until);
		now = mono_ms();
		reap_overdue(s, now);
		if (now < s->window_start_ms || now - s->window_start_ms >= HTTP_SUMMARY_MS)
			log_summary(s, now);
	}
	log_summary(s, mono_ms());
	pthread_mutex_unlock(&s->conns_lock);
	return NULL;
}

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

/* ---- start and stop ---- */

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
	if (cfg->tls_cert_pem != NULL && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		snprintf(err, errlen, "listen %s: this libmicrohttpd has no TLS support", listen);
		return BC_ERR_UNSUPPORTED;
	}
	return 0;
}

static struct MHD_Daemon *start_daemon(struct bc_http *s, unsigned threads)
{
	unsigned flags =
	    MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
	struct MHD_OptionItem tls[] = {
	    {MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert_pem},
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, s->key_pem},
	    {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)HTTP_TLS_PRIORITIES},
	    {MHD_OPTION_END, 0, NULL},
	};
	struct MHD_OptionItem limits[] = {
	    {MHD_OPTION_CONNECTION_LIMIT, s->max_connections, NULL},
	    {MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->per_address, NULL},
	    {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s},
	    {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, s},
	    {MHD_OPTION_END, 0, NULL},
	};

	if (s->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (s->cert_pem == NULL)
		tls[0].option = MHD_OPTION_END;
	else
		flags |= MHD_USE_TLS;
	/* the logger first, so that MHD reports problems with the other options through it */
	return MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&s->addr, MHD_OPTION_THREAD_POOL_SIZE, threads,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONNECTION_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY,
	    MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	    MHD_OPTION_ARRAY, limits, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
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

static void http_free(struct bc_http *s)
{
	if (s == NULL)
		return;
	if (s->key_pem != NULL)
		bc_freezero(s->key_pem, strlen(s->key_pem));
	free(s->cert_pem);
	pthread_cond_destroy(&s->reaper_wake);
	pthread_mutex_destroy(&s->conns_lock);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int bc_http_start(const struct bc_http_config *cfg, bc_http_handler h, void *ctx,
                  struct bc_http **out, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *di;
	struct bc_http *s;
	int rc;

	*out = NULL;
	snprintf(err, errlen, "%s", "");
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return BC_ERR_NOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	pthread_mutex_init(&s->conns_lock, NULL);
	pthread_cond_init(&s->reaper_wake, NULL);
	s->handler = h;
	s->ctx = ctx;
	limits_of(cfg, s);
	if ((rc = check_config(cfg, s, err, errlen)) != 0)
		goto out;
	if (cfg->tls_cert_pem != NULL && ((s->cert_pem = strdup(cfg->tls_cert_pem)) == NULL ||
	                                  (s->key_pem = strdup(cfg->tls_key_pem)) == NULL)) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	s->d = start_daemon(s, cfg->threads ? cfg->threads : HTTP_DEFAULT_THREADS);
	if (s->d == NULL) {
		snprintf(err, errlen,
		         "listen %s: cannot start the HTTP server (address in use, or a bad TLS "
		         "certificate or key)",
		         cfg->listen);
		rc = BC_ERR_IO;
		goto out;
	}
	di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : 0;
	s->window_start_ms = mono_ms();
	if (pthread_create(&s->reaper, NULL, reaper_main, s) != 0) {
		snprintf(err, errlen, "listen %s: cannot start the request deadline thread",
		         cfg->listen);
		MHD_stop_daemon(s->d);
		rc = BC_ERR_NOMEM;
		goto out;
	}
	s->reaper_running = 1;
	*out = s;
	s = NULL;
out:
	http_free(s);
	return rc;
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
	MHD_socket fd;

	if (s == NULL)
		return;
	atomic_store(&s->stopping, 1);
	fd = MHD_quiesce_daemon(s->d);
	drain(s);
	if (s->reaper_running) {
		pthread_mutex_lock(&s->conns_lock);
		s->reaper_stop = 1;
		pthread_cond_signal(&s->reaper_wake);
		pthread_mutex_unlock(&s->conns_lock);
		pthread_join(s->reaper, NULL);
	}
	MHD_stop_daemon(s->d);
	/* MHD's threads may use the listen socket until they are stopped. */
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	http_free(s);
}
