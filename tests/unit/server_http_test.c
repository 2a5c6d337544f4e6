/* The HTTP front end: bodies and query arguments reach the handler, the body limit,
 * plain HTTP only on loopback, TLS with a pinned CA, and a stop that lets an
 * in-flight request finish. Every request goes to 127.0.0.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "bc/httpc.h"
#include "bc/clock.h"
#include "bc/pki.h"
#include "server/http.h"

/* What the test handler saw of the last request. */
struct seen {
	int calls;
	char method[16];
	char path[128];
	char content_type[64];
	char authorization[64];
	char peer[64];
	char body[2048];
	size_t body_len;
	char q_a[64];
	char q_b[64];
	int q_missing_is_null;
	int delay_ms;
	uint64_t queued_ms;
	atomic_int started; /* handler calls begun */
	atomic_int finished;
	atomic_int hold; /* 1: the handler waits until it is 0 */
};

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "(null)");
}

static void handler(void *ctx, const struct bc_http_request *req, struct bc_http_response *resp)
{
	struct seen *s = ctx;
	static const char answer[] = "{\"ok\":true}";

	atomic_fetch_add(&s->started, 1);
	while (atomic_load(&s->hold))
		usleep(1000);
	s->calls++;
	copy(s->method, sizeof(s->method), req->method);
	copy(s->path, sizeof(s->path), req->path);
	copy(s->content_type, sizeof(s->content_type), req->content_type);
	copy(s->authorization, sizeof(s->authorization), req->authorization);
	copy(s->peer, sizeof(s->peer), req->peer);
	s->body_len = req->body_len < sizeof(s->body) ? req->body_len : sizeof(s->body) - 1;
	if (s->body_len)
		memcpy(s->body, req->body, s->body_len);
	s->body[s->body_len] = '\0';
	copy(s->q_a, sizeof(s->q_a), bc_http_query(req, "a"));
	copy(s->q_b, sizeof(s->q_b), bc_http_query(req, "b"));
	s->q_missing_is_null = bc_http_query(req, "missing") == NULL;
	s->queued_ms = req->queued_ms;
	if (s->delay_ms)
		usleep((useconds_t)s->delay_ms * 1000);
	bc_http_set_body(resp, 201, "application/json", answer, sizeof(answer) - 1);
	atomic_store(&s->finished, 1);
}

/* ---- a small client: the project's own (bc/httpc.h), not the server's code ---- */

struct fetched {
	long status;
	char body[4096];
	size_t len;
	char *ctype;
};

struct request {
	const char *url;
	const char *method; /* NULL: GET, or POST when body is set */
	const char *body;
	size_t body_len;
	size_t stream_len; /* > 0: a chunked body of that many bytes */
	const char *const *headers;
	const char *cainfo; /* https: the pinned CA file; NULL: the system's */
};

/* stream_len bytes of 'x' as chunks of at most 16 KiB, then the last chunk */
static char *chunked_body(size_t n, size_t *len)
{
	char *p = malloc(n + n / 16384 * 16 + 64), *o = p;

	assert_non_null(p);
	while (n > 0) {
		size_t k = n < 16384 ? n : 16384;
		o += sprintf(o, "%zx\r\n", k);
		memset(o, 'x', k);
		o += k;
		o += sprintf(o, "\r\n");
		n -= k;
	}
	o += sprintf(o, "0\r\n\r\n");
	*len = (size_t)(o - p);
	return p;
}

static int fetch(const struct request *rq, struct fetched *out)
{
	const char *hdrs[8];
	struct bc_httpc_req q = {.url = rq->url,
	                         .method = rq->method,
	                         .body = rq->body,
	                         .len = rq->body_len,
	                         .ca_file = rq->cainfo,
	                         .timeout_ms = 20000,
	                         .max = 1 << 20};
	struct bc_httpc_resp r;
	char err[256], ct[128], *stream = NULL;
	size_t n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (rq->stream_len > 0) {
		hdrs[n++] = "Transfer-Encoding: chunked";
		q.body = stream = chunked_body(rq->stream_len, &q.len);
		q.no_length = 1;
	}
	if (q.method == NULL && q.body != NULL)
		q.method = "POST";
	for (size_t i = 0; rq->headers != NULL && rq->headers[i] != NULL && n < 8; i++)
		hdrs[n++] = rq->headers[i];
	q.headers = hdrs;
	q.n_headers = n;
	if ((rc = bc_httpc_run(&q, &r, err, sizeof(err))) == 0) {
		out->status = r.status;
		out->len = r.len < sizeof(out->body) - 1 ? r.len : sizeof(out->body) - 1;
		if (r.body != NULL)
			memcpy(out->body, r.body, out->len);
		out->body[out->len] = '\0';
		if (bc_httpc_header(&r, "Content-Type", ct, sizeof(ct)) == 0)
			out->ctype = strdup(ct);
	}
	bc_httpc_resp_free(&r);
	free(stream);
	return rc;
}

static void fetched_free(struct fetched *f)
{
	free(f->ctype);
	f->ctype = NULL;
}

static struct bc_http *start(const char *listen, size_t max_body, struct seen *s)
{
	struct bc_http_config cfg = {.listen = listen, .threads = 2, .max_body = max_body};
	struct bc_http *srv = NULL;
	char err[256];

	assert_int_equal(bc_http_start(&cfg, handler, s, &srv, err, sizeof(err)), 0);
	assert_non_null(srv);
	assert_true(bc_http_port(srv) > 0);
	return srv;
}

static void url_of(struct bc_http *srv, const char *scheme, const char *rest, char *out, size_t n)
{
	snprintf(out, n, "%s://127.0.0.1:%u%s", scheme, (unsigned)bc_http_port(srv), rest);
}

/* ---- tests ---- */

static void test_body_and_query_reach_handler(void **state)
{
	static const char *const hdrs[] = {"Content-Type: application/json",
	                                   "Authorization: Bearer abc", NULL};
	struct seen s = {0};
	struct bc_http *srv = start("127.0.0.1:0", 0, &s);
	struct fetched f;
	char url[128];

	url_of(srv, "http", "/v1/things/x?a=1&b=two%20words", url, sizeof(url));
	struct request rq = {.url = url, .body = "{\"k\":\"v\"}", .body_len = 9, .headers = hdrs};
	assert_int_equal(fetch(&rq, &f), 0);
	assert_int_equal(f.status, 201);
	assert_string_equal(f.body, "{\"ok\":true}");
	assert_non_null(f.ctype);
	assert_string_equal(f.ctype, "application/json");
	assert_int_equal(s.calls, 1);
	assert_string_equal(s.method, "POST");
	assert_string_equal(s.path, "/v1/things/x");
	assert_string_equal(s.body, "{\"k\":\"v\"}");
	assert_int_equal(s.body_len, 9);
	assert_string_equal(s.q_a, "1");
	assert_string_equal(s.q_b, "two words");
	assert_true(s.q_missing_is_null);
	assert_string_equal(s.content_type, "application/json");
	assert_string_equal(s.authorization, "Bearer abc");
	assert_string_equal(s.peer, "127.0.0.1");
	fetched_free(&f);

	/* a GET without headers: empty strings, no body */
	url_of(srv, "http", "/healthz", url, sizeof(url));
	struct request get = {.url = url};
	assert_int_equal(fetch(&get, &f), 0);
	assert_int_equal(f.status, 201);
	assert_string_equal(s.method, "GET");
	assert_string_equal(s.path, "/healthz");
	assert_int_equal(s.body_len, 0);
	assert_string_equal(s.authorization, "");
	assert_string_equal(s.content_type, "");
	assert_string_equal(s.q_a, "(null)");
	fetched_free(&f);
	bc_http_stop(srv);
}

static void test_body_limit(void **state)
{
	static const char *const expect100[] = {"Expect: 100-continue", NULL};
	static const char *const no_expect[] = {NULL};
	static const char too_large[] =
	    "{\"code\":\"resource_exhausted\",\"message\":\"request body too large\"}";
	struct seen s = {0};
	struct bc_http *srv = start("127.0.0.1:0", 1024, &s);
	char *big = malloc(4096);
	struct fetched f;
	char url[128];

	memset(big, 'a', 4096);
	url_of(srv, "http", "/upload", url, sizeof(url));

	/* exactly the limit is accepted */
	struct request at = {.url = url, .body = big, .body_len = 1024, .headers = no_expect};
	assert_int_equal(fetch(&at, &f), 0);
	assert_int_equal(f.status, 201);
	assert_int_equal(s.body_len, 1024);
	fetched_free(&f);

	/* a declared length over it is answered before the body is read */
	s.calls = 0;
	struct request declared = {.url = url, .body = big, .body_len = 4096, .headers = expect100};
	assert_int_equal(fetch(&declared, &f), 0);
	assert_int_equal(f.status, 413);
	assert_string_equal(f.body, too_large);
	assert_string_equal(f.ctype, "application/json");
	fetched_free(&f);

	/* one byte over, sent at once */
	struct request over = {.url = url, .body = big, .body_len = 1025, .headers = no_expect};
	assert_int_equal(fetch(&over, &f), 0);
	assert_int_equal(f.status, 413);
	fetched_free(&f);

	/* a chunked body has no declared length: read, dropped, then 413 */
	struct request chunked = {.url = url, .stream_len = 200 * 1024, .headers = no_expect};
	assert_int_equal(fetch(&chunked, &f), 0);
	assert_int_equal(f.status, 413);
	assert_string_equal(f.body, too_large);
	fetched_free(&f);
	assert_int_equal(s.calls, 0);

	/* the server still answers */
	struct request small = {.url = url, .body = "{}", .body_len = 2, .headers = no_expect};
	assert_int_equal(fetch(&small, &f), 0);
	assert_int_equal(f.status, 201);
	assert_int_equal(s.calls, 1);
	fetched_free(&f);
	free(big);
	bc_http_stop(srv);
}

static void expect_refused(const char *listen, const char *cert, const char *key, int want,
                           const char *msg)
{
	struct bc_http_config cfg = {.listen = listen, .tls_cert_pem = cert, .tls_key_pem = key};
	struct bc_http *srv = (struct bc_http *)1;
	char err[256], full[256];

	assert_int_equal(bc_http_start(&cfg, handler, NULL, &srv, err, sizeof(err)), want);
	assert_null(srv);
	if (msg != NULL) {
		snprintf(full, sizeof(full), "listen %s: %s", listen, msg);
		assert_string_equal(err, full);
	}
}

static void test_plain_http_only_on_loopback(void **state)
{
	static const char msg[] =
	    "plain HTTP is only allowed on a loopback address; set [tls] cert and key";
	struct seen s = {0};

	expect_refused("0.0.0.0:0", NULL, NULL, BC_ERR_CONFIG, msg);
	expect_refused("10.1.2.3:8080", NULL, NULL, BC_ERR_CONFIG, msg);
	expect_refused("[::]:8080", NULL, NULL, BC_ERR_CONFIG, msg);
	expect_refused("[2001:db8::1]:443", NULL, NULL, BC_ERR_CONFIG, msg);
	/* malformed listen addresses */
	expect_refused("127.0.0.1", NULL, NULL, BC_ERR_CONFIG, NULL);
	expect_refused("127.0.0.1:", NULL, NULL, BC_ERR_CONFIG, NULL);
	expect_refused("127.0.0.1:65536", NULL, NULL, BC_ERR_CONFIG, NULL);
	expect_refused("127.0.0.1:-1", NULL, NULL, BC_ERR_CONFIG, NULL);
	expect_refused("127.0.0.1:80x", NULL, NULL, BC_ERR_CONFIG, NULL);
	expect_refused("::1:8080", NULL, NULL, BC_ERR_CONFIG, NULL);
	expect_refused("[::1:8080", NULL, NULL, BC_ERR_CONFIG, NULL);
	expect_refused("example.com:80", NULL, NULL, BC_ERR_CONFIG, NULL);
	expect_refused(":8080", NULL, NULL, BC_ERR_CONFIG, NULL);
	/* a certificate without a key */
	expect_refused("127.0.0.1:0", "cert", NULL, BC_ERR_CONFIG, NULL);

	/* loopback forms start */
	bc_http_stop(start("localhost:0", 0, &s));
	bc_http_stop(start("127.1.2.3:0", 0, &s));
}

/* IPv6 loopback, where the machine has it. */
static void test_ipv6_loopback(void **state)
{
	struct bc_http_config cfg = {.listen = "[::1]:0"};
	struct bc_http *srv = NULL;
	struct seen s = {0};
	struct fetched f;
	char err[256], url[128];

	if (bc_http_start(&cfg, handler, &s, &srv, err, sizeof(err)) != 0) {
		assert_null(srv);
		skip();
	}
	snprintf(url, sizeof(url), "http://[::1]:%u/six?a=6", (unsigned)bc_http_port(srv));
	struct request rq = {.url = url};
	assert_int_equal(fetch(&rq, &f), 0);
	assert_int_equal(f.status, 201);
	assert_string_equal(s.peer, "::1");
	assert_string_equal(s.q_a, "6");
	fetched_free(&f);
	bc_http_stop(srv);
}

static void test_helpers(void **state)
{
	const char *keys[] = {"type", "limit", "type"};
	const char *vals[] = {"a", "10", "b"};
	struct bc_http_request req = {.query_keys = keys, .query_vals = vals, .n_query = 3};
	struct bc_http_response resp = {0};

	assert_string_equal(bc_http_query(&req, "type"), "a");
	assert_string_equal(bc_http_query(&req, "limit"), "10");
	assert_null(bc_http_query(&req, "nope"));
	bc_http_set_body(&resp, 200, "text/plain", "one", 3);
	bc_http_set_body(&resp, 404, "application/json", "{}", 2);
	assert_int_equal(resp.status, 404);
	assert_int_equal(resp.body_len, 2);
	assert_memory_equal(resp.body, "{}", 2);
	assert_string_equal(resp.content_type, "application/json");
	free(resp.body);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_tls_with_pinned_ca(void **state)
{
	static const char *const hosts[] = {"127.0.0.1", "localhost"};
	char dir[] = "/tmp/bc-http-tls-XXXXXX", ca_path[64], url[128], err[256];
	char *cert = NULL, *key = NULL, *ca = NULL;
	struct seen s = {0};
	struct bc_http *srv = NULL;
	struct fetched f;
	bc_pki *pki = NULL;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(bc_pki_generate("test.example", &pki), 0);
	assert_int_equal(bc_pki_server_tls_cert(pki, hosts, 2, &cert, &key), 0);
	assert_int_equal(bc_x509_to_pem(pki->tls_ca, &ca), 0);
	snprintf(ca_path, sizeof(ca_path), "%s/ca.pem", dir);
	write_file(ca_path, ca);

	struct bc_http_config cfg = {
	    .listen = "127.0.0.1:0", .tls_cert_pem = cert, .tls_key_pem = key};
	assert_int_equal(bc_http_start(&cfg, handler, &s, &srv, err, sizeof(err)), 0);
	url_of(srv, "https", "/secure?a=tls", url, sizeof(url));

	struct request pinned = {.url = url, .cainfo = ca_path};
	assert_int_equal(fetch(&pinned, &f), 0);
	assert_int_equal(f.status, 201);
	assert_string_equal(s.q_a, "tls");
	fetched_free(&f);

	/* without the pin, the certificate does not verify */
	struct request unpinned = {.url = url};
	assert_int_not_equal(fetch(&unpinned, &f), 0);
	fetched_free(&f);
	/* plain HTTP to a TLS port gets no answer from the handler */
	s.calls = 0;
	url_of(srv, "http", "/secure", url, sizeof(url));
	struct request plain = {.url = url};
	(void)fetch(&plain, &f);
	assert_int_equal(s.calls, 0);
	fetched_free(&f);
	bc_http_stop(srv);

	/* with TLS, a non-loopback address is allowed (bound, then stopped at once) */
	struct bc_http_config any = {
	    .listen = "0.0.0.0:0", .tls_cert_pem = cert, .tls_key_pem = key};
	assert_int_equal(bc_http_start(&any, handler, &s, &srv, err, sizeof(err)), 0);
	bc_http_stop(srv);

	unlink(ca_path);
	rmdir(dir);
	free(ca);
	free(cert);
	free(key);
	bc_pki_free(pki);
}

struct client {
	char url[128];
	struct fetched f;
	int rc;
};

static void *client_thread(void *arg)
{
	struct client *c = arg;
	struct request rq = {.url = c->url};

	c->rc = fetch(&rq, &c->f);
	return NULL;
}

static void test_stop_lets_inflight_finish(void **state)
{
	struct seen s = {0};
	struct bc_http *srv = start("127.0.0.1:0", 0, &s);
	struct client c;
	pthread_t t;

	memset(&c, 0, sizeof(c));
	s.delay_ms = 700;
	url_of(srv, "http", "/slow", c.url, sizeof(c.url));
	assert_int_equal(pthread_create(&t, NULL, client_thread, &c), 0);
	for (int i = 0; i < 500 && !atomic_load(&s.started); i++)
		usleep(10 * 1000);
	assert_true(atomic_load(&s.started));
	bc_http_stop(srv);
	assert_true(atomic_load(&s.finished));
	pthread_join(t, NULL);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.f.status, 201);
	assert_string_equal(c.f.body, "{\"ok\":true}");
	fetched_free(&c.f);
}

/* ---- raw sockets: what a client would never send ---- */

static int raw_connect(struct bc_http *srv)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(bc_http_port(srv))};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

static void raw_send(int fd, const char *p, size_t n)
{
	assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* The status of the answer read from fd, 0 when it was closed without one, -1 when
 * nothing came within the receive timeout. */
static int raw_status(int fd)
{
	char buf[1024];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
	int status = 0;

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : 0;
	if (n == 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return 0;
	return status;
}

static int raw_request(struct bc_http *srv, const char *req, size_t len)
{
	int fd = raw_connect(srv), status;

	raw_send(fd, req, len);
	status = raw_status(fd);
	close(fd);
	return status;
}

/* The TLS 1.3 suite a client offering `suites` (NULL: OpenSSL's default list, which
 * puts AES-256-GCM first) gets from srv, or "" when the handshake fails. */
static const char *tls_suite_with(struct bc_http *srv, const char *suites, char *out, size_t n)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;
	int fd = raw_connect(srv);

	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION), 1);
	if (suites != NULL)
		assert_int_equal(SSL_CTX_set_ciphersuites(ctx, suites), 1);
	/* the server's certificate is not checked here: only the suite is */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	assert_non_null(ssl = SSL_new(ctx));
	assert_int_equal(SSL_set_fd(ssl, fd), 1);
	snprintf(out, n, "%s", SSL_connect(ssl) == 1 ? SSL_get_cipher_name(ssl) : "");
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return out;
}

/* The server prefers TLS_AES_128_GCM_SHA256 (a key schedule on SHA-256) and still
 * serves a client that offers only another TLS 1.3 suite. */
static void test_tls13_suite_preference(void **state)
{
	static const char *const hosts[] = {"127.0.0.1"};
	char *cert = NULL, *key = NULL, err[256], got[64];
	struct seen s = {0};
	struct bc_http *srv = NULL;
	bc_pki *pki = NULL;

	(void)state;
	assert_int_equal(bc_pki_generate("test.example", &pki), 0);
	assert_int_equal(bc_pki_server_tls_cert(pki, hosts, 1, &cert, &key), 0);
	struct bc_http_config cfg = {
	    .listen = "127.0.0.1:0", .tls_cert_pem = cert, .tls_key_pem = key};
	assert_int_equal(bc_http_start(&cfg, handler, &s, &srv, err, sizeof(err)), 0);
	assert_string_equal(tls_suite_with(srv, NULL, got, sizeof(got)), "TLS_AES_128_GCM_SHA256");
	assert_string_equal(tls_suite_with(srv, "TLS_AES_256_GCM_SHA384", got, sizeof(got)),
	                    "TLS_AES_256_GCM_SHA384");
	assert_string_equal(tls_suite_with(srv, "TLS_CHACHA20_POLY1305_SHA256", got, sizeof(got)),
	                    "TLS_CHACHA20_POLY1305_SHA256");
	bc_http_stop(srv);
	free(cert);
	free(key);
	bc_pki_free(pki);
}

/* A body framed two ways is read one way by us and another by a proxy in front of us
 * (request smuggling): 400, and the handler never sees it. */
static void test_ambiguous_framing_is_400(void **state)
{
	static const char dup_cl[] = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
	                             "Content-Length: 3\r\n\r\nabc";
	static const char dup_cl_differ[] = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
	                                    "Content-Length: 8\r\n\r\nabcdefgh";
	static const char cl_chunked[] = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
	                                 "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
	static const char nul_line[] = "GET /x\0y HTTP/1.1\r\nHost: a\r\n\r\n";
	static const char fine[] = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc";
	struct seen s = {0};
	struct bc_http *srv = start("127.0.0.1:0", 1024, &s);
	(void)state;

	assert_int_equal(raw_request(srv, dup_cl, sizeof(dup_cl) - 1), 400);
	assert_int_equal(raw_request(srv, dup_cl_differ, sizeof(dup_cl_differ) - 1), 400);
	assert_int_equal(raw_request(srv, cl_chunked, sizeof(cl_chunked) - 1), 400);
	assert_int_equal(raw_request(srv, nul_line, sizeof(nul_line) - 1), 400);
	assert_int_equal(s.calls, 0);
	assert_int_equal(raw_request(srv, fine, sizeof(fine) - 1), 201);
	assert_int_equal(s.calls, 1);
	bc_http_stop(srv);
}

/* What the front end reads itself: a request without Host, headers past 32 KiB, a
 * transfer coding it does not speak, are answered before any handler; two requests
 * sent at once are both answered, in order; a 100-continue request is told to go on
 * before its body; a HEAD answer has no body. */
static void test_the_front_end_reads_strictly(void **state)
{
	static const char no_host[] = "GET /x HTTP/1.1\r\n\r\n";
	static const char gzip[] = "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n";
	static const char two[] =
	    "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n";
	static const char expect[] = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
	                             "Expect: 100-continue\r\n\r\n";
	static const char head[] = "HEAD /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
	struct seen s = {0};
	struct bc_http *srv = start("127.0.0.1:0", 1024, &s);
	char *big = malloc(40 * 1024), buf[4096];
	size_t got = 0;
	ssize_t n;
	int fd;
	(void)state;

	assert_int_equal(raw_request(srv, no_host, sizeof(no_host) - 1), 400);
	assert_int_equal(raw_request(srv, gzip, sizeof(gzip) - 1), 400);
	memset(big, 'h', 40 * 1024);
	memcpy(big, "GET /x HTTP/1.1\r\nHost: a\r\nX: ", 29);
	fd = raw_connect(srv);
	(void)send(fd, big, 40 * 1024, MSG_NOSIGNAL);
	assert_int_equal(raw_status(fd), 431);
	close(fd);
	free(big);
	assert_int_equal(s.calls, 0);

	/* pipelined: both answered on the one connection */
	fd = raw_connect(srv);
	raw_send(fd, two, sizeof(two) - 1);
	while (got < sizeof(buf) - 1 && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0) {
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "HTTP/1.1 201") != NULL &&
		    strstr(strstr(buf, "HTTP/1.1 201") + 1, "HTTP/1.1 201") != NULL)
			break;
	}
	close(fd);
	assert_int_equal(s.calls, 2);
	assert_string_equal(s.path, "/b");

	/* 100 Continue, then the body, then the answer */
	fd = raw_connect(srv);
	raw_send(fd, expect, sizeof(expect) - 1);
	assert_int_equal(raw_status(fd), 100);
	raw_send(fd, "abc", 3);
	assert_int_equal(raw_status(fd), 201);
	assert_string_equal(s.body, "abc");
	close(fd);

	/* HEAD: the headers only, then the close asked for */
	fd = raw_connect(srv);
	raw_send(fd, head, sizeof(head) - 1);
	got = 0;
	while (got < sizeof(buf) - 1 && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	assert_non_null(strstr(buf, "HTTP/1.1 201"));
	assert_non_null(strstr(buf, "Content-Length: 11\r\n"));
	assert_non_null(strstr(buf, "Connection: close\r\n"));
	assert_null(strstr(buf, "{\"ok\":true}"));
	bc_http_stop(srv);
}

static int authorize_yes(void *ctx, const char *method, const char *path, const char *authz)
{
	(void)ctx;
	(void)method;
	(void)path;
	return strcmp(authz, "Bearer yes") == 0;
}

/* max_body (4096) only for what the authorize hook vouches for; preauth_body (1024)
 * for the others, and a body budget (1500 bytes) all of them share. */
static struct bc_http *start_limited(struct seen *s, unsigned request_timeout_s)
{
	struct bc_http_config cfg = {.listen = "127.0.0.1:0",
	                             .threads = 2,
	                             .max_body = 4096,
	                             .preauth_body = 1024,
	                             .body_budget = 1500,
	                             .request_timeout_s = request_timeout_s,
	                             .authorize = authorize_yes};
	struct bc_http *srv = NULL;
	char err[256];

	assert_int_equal(bc_http_start(&cfg, handler, s, &srv, err, sizeof(err)), 0);
	return srv;
}

static void test_unauthenticated_body_is_capped_before_buffering(void **state)
{
	static const char *const no_expect[] = {NULL};
	static const char *const vouched[] = {"Authorization: Bearer yes", NULL};
	static const char *const other[] = {"Authorization: Bearer no", NULL};
	struct seen s = {0};
	struct bc_http *srv = start_limited(&s, 0);
	char big[2048], url[128];
	struct fetched f;
	(void)state;

	memset(big, 'b', sizeof(big));
	url_of(srv, "http", "/v1/x", url, sizeof(url));
	struct request anon = {.url = url, .body = big, .body_len = 2048, .headers = no_expect};
	assert_int_equal(fetch(&anon, &f), 0);
	assert_int_equal(f.status, 413);
	fetched_free(&f);
	struct request wrong = {.url = url, .body = big, .body_len = 2048, .headers = other};
	assert_int_equal(fetch(&wrong, &f), 0);
	assert_int_equal(f.status, 413);
	fetched_free(&f);
	/* chunked, undeclared: the same cap */
	struct request chunked = {.url = url, .stream_len = 2048, .headers = no_expect};
	assert_int_equal(fetch(&chunked, &f), 0);
	assert_int_equal(f.status, 413);
	fetched_free(&f);
	assert_int_equal(s.calls, 0);
	struct request ok = {.url = url, .body = big, .body_len = 2000, .headers = vouched};
	assert_int_equal(fetch(&ok, &f), 0);
	assert_int_equal(f.status, 201);
	assert_int_equal(s.body_len, 2000);
	fetched_free(&f);
	bc_http_stop(srv);
}

/* Two unauthenticated requests holding 1,000 body bytes each do not fit a budget of
 * 1,500: the second is dropped (closed unanswered); once the first is answered, its
 * bytes are free again. */
static void test_unauthenticated_bodies_share_a_budget(void **state)
{
	static const char head[] = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n";
	struct seen s = {0};
	struct bc_http *srv = start_limited(&s, 0);
	char body[1000];
	int a, b;
	(void)state;

	memset(body, 'c', sizeof(body));
	a = raw_connect(srv);
	raw_send(a, head, sizeof(head) - 1);
	raw_send(a, body, 900);
	usleep(200 * 1000);
	b = raw_connect(srv);
	raw_send(b, head, sizeof(head) - 1);
	raw_send(b, body, 900);
	assert_int_equal(raw_status(b), 0);
	close(b);
	raw_send(a, body, 100);
	assert_int_equal(raw_status(a), 201);
	close(a);
	assert_int_equal(raw_request(srv, head, sizeof(head) - 1), -1 /* waits for its body */);
	b = raw_connect(srv);
	raw_send(b, head, sizeof(head) - 1);
	raw_send(b, body, 1000);
	assert_int_equal(raw_status(b), 201);
	close(b);
	bc_http_stop(srv);
}

/* Headers that never end are closed at the request deadline (1 s here), however
 * active: the test clock moves past it instead of waiting. A request that arrived
 * whole is not. */
static void test_request_deadline_closes_a_trickling_connection(void **state)
{
	static const char partial[] = "GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: a";
	static const char whole[] = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
	struct seen s = {0};
	struct bc_http *srv = start_limited(&s, 1);
	int slow, kept, status = -1;
	(void)state;

	slow = raw_connect(srv);
	raw_send(slow, partial, sizeof(partial) - 1);
	kept = raw_connect(srv);
	raw_send(kept, whole, sizeof(whole) - 1);
	assert_int_equal(raw_status(kept), 201);
	/* a byte now and then resets an idle timeout, not this deadline */
	for (int i = 0; i < 3 && status == -1; i++) {
		raw_send(slow, "a", 1);
		bc_clock_set_offset_ms((int64_t)(i + 1) * 2000);
		struct timeval tv = {.tv_sec = 2};
		assert_int_equal(setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
		status = raw_status(slow);
	}
	bc_clock_set_offset_ms(0);
	assert_int_equal(status, 0);
	assert_int_equal(s.calls, 1);
	close(slow);
	close(kept);
	bc_http_stop(srv);
}

/* A connection's first request reports how long the connection waited, accepted, to be
 * read (the test clock moves 4 s between the accept and the request); a later request
 * on the same kept-alive connection reports 0, its idle time being the client's. */
static void test_first_request_reports_its_queue_wait(void **state)
{
	static const char req[] = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
	struct seen s = {0};
	struct bc_http *srv = start("127.0.0.1:0", 1024, &s);
	int fd;
	(void)state;

	fd = raw_connect(srv);
	usleep(200 * 1000); /* the accept, before the clock moves */
	bc_clock_set_offset_ms(4000);
	raw_send(fd, req, sizeof(req) - 1);
	assert_int_equal(raw_status(fd), 201);
	assert_true(s.queued_ms >= 4000);
	assert_true(s.queued_ms < 10000);
	bc_clock_set_offset_ms(8000);
	raw_send(fd, req, sizeof(req) - 1);
	assert_int_equal(raw_status(fd), 201);
	assert_int_equal(s.calls, 2);
	assert_int_equal(s.queued_ms, 0);
	bc_clock_set_offset_ms(0);
	close(fd);
	bc_http_stop(srv);
}

/* With more than three-quarters of max_connections (16) open, the deadline is a fifth
 * of request_timeout (10 s): 13 slow connections are closed 3 s on (the test clock),
 * where 3 are not. */
static void test_deadline_shortens_when_connections_run_short(void **state)
{
	static const char partial[] = "GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: a";
	struct bc_http_config cfg = {
	    .listen = "127.0.0.1:0", .threads = 2, .request_timeout_s = 10, .max_connections = 16};
	struct seen s = {0};
	struct bc_http *srv = NULL;
	char err[256];
	int fds[13], closed = 0;
	(void)state;

	assert_int_equal(bc_http_start(&cfg, handler, &s, &srv, err, sizeof(err)), 0);
	for (int n = 3; n <= 13; n += 10) {
		for (int i = 0; i < n; i++) {
			fds[i] = raw_connect(srv);
			raw_send(fds[i], partial, sizeof(partial) - 1);
		}
		usleep(200 * 1000);
		bc_clock_set_offset_ms(3000);
		usleep(2500 * 1000); /* the reaper runs every second */
		closed = 0;
		for (int i = 0; i < n; i++) {
			char b;
			closed += recv(fds[i], &b, 1, MSG_DONTWAIT) == 0;
			close(fds[i]);
		}
		bc_clock_set_offset_ms(0);
		assert_int_equal(closed, n == 3 ? 0 : 13);
		usleep(1200 * 1000); /* the reaper sees the closed ones go */
	}
	bc_http_stop(srv);
}

/* Clients that hang up mid-request each make the front end say so: one line is
 * logged, the rest counted into one summary (here, at stop). */
static void test_aborted_connections_log_is_summarized(void **state)
{
	static const char partial[] = "GET /x HTTP/1.1\r\nHost: a\r\nX-Half: ";
	char path[] = "/tmp/bc-http-log.XXXXXX", line[1024];
	struct seen s = {0};
	struct bc_http *srv = start("127.0.0.1:0", 1024, &s);
	int logfd = mkstemp(path), saved = dup(2), details = 0, summaries = 0;
	FILE *f;
	(void)state;

	assert_true(logfd >= 0);
	assert_true(saved >= 0);
	assert_int_equal(dup2(logfd, 2), 2);
	for (int i = 0; i < 20; i++) {
		int fd = raw_connect(srv);
		raw_send(fd, partial, sizeof(partial) - 1);
		usleep(20 * 1000);
		close(fd);
	}
	usleep(300 * 1000);
	bc_http_stop(srv);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	assert_non_null(f = fopen(path, "r"));
	while (fgets(line, sizeof(line), f)) {
		details += strstr(line, "msg=http ") != NULL;
		if (strstr(line, "msg=\"http connections closed in the last minute\"")) {
			summaries++;
			assert_non_null(strstr(line, "messages=20"));
		}
	}
	fclose(f);
	close(logfd);
	unlink(path);
	assert_int_equal(details, 1);
	assert_int_equal(summaries, 1);
}

/* 1 when the server closed fd (end of stream or reset), 0 when it is open, nothing to read. */
static int closed_by_server(int fd, int wait)
{
	char b;
	ssize_t n = recv(fd, &b, 1, wait ? 0 : MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return n <= 0;
}

static void wait_started(struct seen *s, int n)
{
	for (int i = 0; i < 5000 && atomic_load(&s->started) < n; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&s->started), n);
}

/* An address at its cap: a new connection closes the one of that address with the
 * least progress (fewest bytes of its request received, the oldest of equals); one that
 * sent its request whole is never closed for it, and when all have, the new one is. */
static void test_crowded_address_closes_the_least_progress(void **state)
{
	static const char req[] = "GET /busy HTTP/1.1\r\nHost: a\r\n\r\n";
	static const char part[] = "GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: 0123456789abcdefghij";
	struct bc_http_config cfg = {.listen = "127.0.0.1:0", .threads = 2, .per_address = 4};
	struct seen s = {0};
	struct bc_http *srv = NULL;
	char err[256];
	int busy, idle_old, idle_new, few, more, most, late;
	(void)state;

	assert_int_equal(bc_http_start(&cfg, handler, &s, &srv, err, sizeof(err)), 0);
	atomic_store(&s.hold, 1);
	busy = raw_connect(srv);
	raw_send(busy, req, sizeof(req) - 1);
	wait_started(&s, 1);
	idle_old = raw_connect(srv);
	idle_new = raw_connect(srv);
	few = raw_connect(srv);
	raw_send(few, part, 30);
	/* the address is full: each new connection closes one */
	more = raw_connect(srv);
	assert_true(closed_by_server(idle_old, 1)); /* nothing sent, and the oldest */
	assert_false(closed_by_server(idle_new, 0));
	raw_send(more, part, 40);
	most = raw_connect(srv);
	assert_true(closed_by_server(idle_new, 1));
	assert_false(closed_by_server(few, 0));
	raw_send(most, part, 50);
	late = raw_connect(srv);
	assert_true(closed_by_server(few, 1)); /* 30 bytes, fewer than 40 and 50 */
	assert_false(closed_by_server(more, 0));
	assert_false(closed_by_server(most, 0));
	assert_int_equal(bc_http_evicted(srv), 3);
	/* the request being served was never a candidate */
	atomic_store(&s.hold, 0);
	assert_int_equal(raw_status(busy), 201);
	close(busy);
	close(idle_old);
	close(idle_new);
	close(few);
	close(more);
	close(most);
	close(late);
	bc_http_stop(srv);
}

/* Every connection of the address has sent its request: the new one is closed, and
 * those are answered. */
static void test_crowded_address_of_served_requests_refuses(void **state)
{
	static const char req[] = "GET /busy HTTP/1.1\r\nHost: a\r\n\r\n";
	struct bc_http_config cfg = {.listen = "127.0.0.1:0", .threads = 2, .per_address = 2};
	struct seen s = {0};
	struct bc_http *srv = NULL;
	char err[256];
	int a, b, c;
	(void)state;

	assert_int_equal(bc_http_start(&cfg, handler, &s, &srv, err, sizeof(err)), 0);
	atomic_store(&s.hold, 1);
	a = raw_connect(srv);
	raw_send(a, req, sizeof(req) - 1);
	b = raw_connect(srv);
	raw_send(b, req, sizeof(req) - 1);
	wait_started(&s, 2);
	c = raw_connect(srv);
	assert_true(closed_by_server(c, 1));
	assert_int_equal(bc_http_evicted(srv), 0);
	atomic_store(&s.hold, 0);
	assert_int_equal(raw_status(a), 201);
	assert_int_equal(raw_status(b), 201);
	close(a);
	close(b);
	close(c);
	bc_http_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_body_and_query_reach_handler),
	    cmocka_unit_test(test_body_limit),
	    cmocka_unit_test(test_plain_http_only_on_loopback),
	    cmocka_unit_test(test_ipv6_loopback),
	    cmocka_unit_test(test_helpers),
	    cmocka_unit_test(test_tls_with_pinned_ca),
	    cmocka_unit_test(test_tls13_suite_preference),
	    cmocka_unit_test(test_stop_lets_inflight_finish),
	    cmocka_unit_test(test_ambiguous_framing_is_400),
	    cmocka_unit_test(test_the_front_end_reads_strictly),
	    cmocka_unit_test(test_unauthenticated_body_is_capped_before_buffering),
	    cmocka_unit_test(test_unauthenticated_bodies_share_a_budget),
	    cmocka_unit_test(test_request_deadline_closes_a_trickling_connection),
	    cmocka_unit_test(test_first_request_reports_its_queue_wait),
	    cmocka_unit_test(test_aborted_connections_log_is_summarized),
	    cmocka_unit_test(test_deadline_shortens_when_connections_run_short),
	    cmocka_unit_test(test_crowded_address_closes_the_least_progress),
	    cmocka_unit_test(test_crowded_address_of_served_requests_refuses),
	};
	int rc;

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	return rc;
}
