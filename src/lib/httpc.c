/* bc_httpc_run, as bc/httpc.h says. The path of a request: the URL split, the proxy
 * chosen from the environment (when asked), a TCP connection to the server or the proxy
 * (non-blocking, every wait a poll under the deadline), the CONNECT tunnel, the TLS
 * handshake, the request in one write, then the answer through bc_httpc_read_reply. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bc/httpc.h"

#define DEFAULT_CONNECT_MS 10000
#define DEFAULT_TOTAL_MS   60000
#define PROXY_DEFAULT_PORT 1080 /* as libcurl: a proxy URL without a port */

struct conn {
	int fd;
	SSL *ssl;         /* NULL: plain */
	int64_t deadline; /* monotonic ms: the whole request */
	int timeout_ms;
	char *err;
	size_t errlen;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- URLs ---- */

static int host_part(const char *a, const char *end, struct bc_httpc_url *u, const char **rest)
{
	const char *host = a, *e;
	size_t n;

	if (*a == '[') {
		host = a + 1;
		if ((e = memchr(host, ']', (size_t)(end - host))) == NULL)
			return -1;
		n = (size_t)(e - host);
		*rest = e + 1;
		if (n == 0 || memchr(host, ':', n) == NULL)
			return -1;
	} else {
		if ((e = memchr(a, ':', (size_t)(end - a))) == NULL)
			e = end;
		n = (size_t)(e - host);
		*rest = e;
	}
	if (n == 0 || n >= sizeof(u->host))
		return -1;
	memcpy(u->host, host, n);
	u->host[n] = '\0';
	return 0;
}

static int port_part(const char *p, const char *end, uint16_t *port)
{
	unsigned v = 0;

	if (p == end)
		return -1;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9' || (v = v * 10 + (unsigned)(*p - '0')) > 65535)
			return -1;
	}
	if (v == 0)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int bc_httpc_url_parse(const char *url, struct bc_httpc_url *u, const char **why)
{
	const char *a, *end, *rest;

	memset(u, 0, sizeof(*u));
	*why = "not an http:// or https:// URL";
	if (url == NULL)
		return BC_ERR_INVALID;
	if (strncasecmp(url, "https://", 8) == 0)
		u->tls = 1, a = url + 8;
	else if (strncasecmp(url, "http://", 7) == 0)
		a = url + 7;
	else
		return BC_ERR_INVALID;
	for (const char *p = url; *p != '\0'; p++) {
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			*why = "a space or control character in the URL";
			return BC_ERR_INVALID;
		}
	}
	end = a + strcspn(a, "/?#");
	u->path = end;
	if (memchr(a, '@', (size_t)(end - a)) != NULL) {
		*why = "user information in the URL";
		return BC_ERR_INVALID;
	}
	if (host_part(a, end, u, &rest) != 0) {
		*why = "a URL with an empty, long or malformed host";
		return BC_ERR_INVALID;
	}
	u->port = u->tls ? 443 : 80;
	u->port_given = rest != end;
	if (rest != end && (*rest != ':' || port_part(rest + 1, end, &u->port) != 0)) {
		*why = "a URL with a malformed port";
		return BC_ERR_INVALID;
	}
	return 0;
}

/* ---- proxies ---- */

static int no_proxy_entry(const char *e, size_t n, const char *host)
{
	size_t h = strlen(host);

	while (n > 0 && (*e == ' ' || *e == '\t'))
		e++, n--;
	while (n > 0 && (e[n - 1] == ' ' || e[n - 1] == '\t'))
		n--;
	if (n > 0 && *e == '.')
		e++, n--;
	if (n == 0)
		return 0;
	if (n == 1 && *e == '*')
		return 1;
	if (h == n)
		return strncasecmp(host, e, n) == 0;
	return h > n && host[h - n - 1] == '.' && strncasecmp(host + h - n, e, n) == 0;
}

int bc_httpc_no_proxy(const char *no_proxy, const char *host)
{
	const char *p = no_proxy;

	while (p != NULL && *p != '\0') {
		size_t n = strcspn(p, ",");
		if (no_proxy_entry(p, n, host))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

static const char *env_first(const char *const *names)
{
	const char *v;

	for (; *names != NULL; names++) {
		if ((v = getenv(*names)) != NULL && *v != '\0')
			return v;
	}
	return NULL;
}

/* The proxy for u from the environment: 1 and *px, 0 for none, or BC_ERR_CONFIG. As
 * libcurl reads them: http_proxy only in lower case (a CGI program's HTTP_PROXY is a
 * request header), a proxy URL with or without http://, port 1080 when it has none. */
static int proxy_for(const struct bc_httpc_url *u, struct bc_httpc_url *px, char *err,
                     size_t errlen)
{
	static const char *const https_names[] = {"https_proxy", "HTTPS_PROXY", "all_proxy",
	                                          "ALL_PROXY", NULL};
	static const char *const http_names[] = {"http_proxy", "all_proxy", "ALL_PROXY", NULL};
	static const char *const no_names[] = {"no_proxy", "NO_PROXY", NULL};
	const char *v = env_first(u->tls ? https_names : http_names), *why;
	char buf[BC_HTTPC_HOST_MAX + 32];

	if (v == NULL || bc_httpc_no_proxy(env_first(no_names), u->host))
		return 0;
	snprintf(buf, sizeof(buf), "%s%s", strstr(v, "://") ? "" : "http://", v);
	if (strncasecmp(buf, "http://", 7) != 0 || bc_httpc_url_parse(buf, px, &why) != 0 ||
	    (*px->path != '\0' && strcmp(px->path, "/") != 0)) {
		bc_errf(err, errlen,
		        "the proxy %s of the environment is not an http://host:port URL (user "
		        "information is not supported)",
		        v);
		return BC_ERR_CONFIG;
	}
	if (!px->port_given)
		px->port = PROXY_DEFAULT_PORT;
	return 1;
}

/* ---- the connection ---- */

/* Waits until fd is ready for events, within the deadline. */
static int wait_fd(struct conn *c, short events, int64_t deadline, const char *doing)
{
	struct pollfd p = {.fd = c->fd, .events = events};
	int64_t left;
	int r;

	for (;;) {
		if ((left = deadline - mono_ms()) <= 0) {
			bc_errf(c->err, c->errlen, "timed out %s", doing);
			return BC_ERR_UNAVAILABLE;
		}
		if ((r = poll(&p, 1, left > 1000000 ? 1000000 : (int)left)) > 0)
			return 0;
		if (r < 0 && errno != EINTR) {
			bc_errf(c->err, c->errlen, "poll: %s", strerror(errno));
			return BC_ERR_UNAVAILABLE;
		}
	}
}

static const char *lower_strerror(int e, char *buf, size_t n)
{
	snprintf(buf, n, "%s", strerror(e));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

static int try_addr(struct conn *c, const struct addrinfo *ai, int64_t cdeadline, const char *where)
{
	int one = 1, e = 0;
	socklen_t el = sizeof(e);
	char why[128];
	char doing[BC_HTTPC_HOST_MAX + 48];

	c->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		bc_errf(c->err, c->errlen, "connect to %s: %s", where, strerror(errno));
		return BC_ERR_UNAVAILABLE;
	}
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		if (errno != EINPROGRESS) {
			e = errno;
		} else {
			snprintf(doing, sizeof(doing), "connecting to %s", where);
			if (wait_fd(c, POLLOUT, cdeadline, doing) != 0)
				return BC_ERR_UNAVAILABLE;
			if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
				e = errno;
		}
	}
	if (e == 0)
		return 0;
	bc_errf(c->err, c->errlen, "connect to %s: %s", where, lower_strerror(e, why, sizeof(why)));
	return BC_ERR_UNAVAILABLE;
}

static int dial(struct conn *c, const struct bc_httpc_url *to, int connect_ms)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai, *a;
	int64_t cdeadline = mono_ms() + connect_ms;
	char port[8], where[BC_HTTPC_HOST_MAX + 16];
	int e, rc = BC_ERR_UNAVAILABLE;

	if (cdeadline > c->deadline)
		cdeadline = c->deadline;
	snprintf(port, sizeof(port), "%u", to->port);
	snprintf(where, sizeof(where), "%s%s%s:%u", strchr(to->host, ':') ? "[" : "", to->host,
	         strchr(to->host, ':') ? "]" : "", to->port);
	if ((e = getaddrinfo(to->host, port, &hints, &ai)) != 0) {
		bc_errf(c->err, c->errlen, "cannot resolve %s: %s", to->host, gai_strerror(e));
		return BC_ERR_UNAVAILABLE;
	}
	for (a = ai; a != NULL; a = a->ai_next) {
		if ((rc = try_addr(c, a, cdeadline, where)) == 0)
			break;
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
	}
	freeaddrinfo(ai);
	return rc;
}

/* ---- TLS ---- */

/* Every certificate of pem into the store; how many. */
static int load_pem(X509_STORE *st, const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;
	int n = 0;

	if (b == NULL)
		return 0;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		n += X509_STORE_add_cert(st, x) == 1;
		X509_free(x);
	}
	ERR_clear_error(); /* the end of the PEM reads as an error */
	BIO_free(b);
	return n;
}

static SSL_CTX *ctx_new(const char *ca_file, const char *ca_pem)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	int ok;

	if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto fail;
	if (ca_pem != NULL)
		ok = load_pem(SSL_CTX_get_cert_store(ctx), ca_pem) > 0;
	else if (ca_file != NULL)
		ok = SSL_CTX_load_verify_locations(ctx, ca_file, NULL) == 1;
	else
		ok = SSL_CTX_set_default_verify_paths(ctx) == 1;
	if (!ok)
		goto fail;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* a full handshake each time: no session is kept to resume */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	return ctx;
fail:
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return NULL;
}

/* A thread's context for the last CA bundle in memory it used: a client posting again
 * and again (bcd, bc-load) loads its pinned CA once. */
struct thread_tls {
	SSL_CTX *ctx;
	char *ca_pem;
};

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void thread_tls_free(void *p)
{
	struct thread_tls *t = p;

	SSL_CTX_free(t->ctx);
	free(t->ca_pem);
	free(t);
}

static void tls_key_make(void)
{
	(void)pthread_key_create(&tls_key, thread_tls_free);
}

/* The context for req, with a reference the caller frees. */
static SSL_CTX *ctx_for(const struct bc_httpc_req *req)
{
	struct thread_tls *t;

	if (req->ca_pem == NULL || pthread_once(&tls_once, tls_key_make) != 0)
		return ctx_new(req->ca_file, req->ca_pem);
	if ((t = pthread_getspecific(tls_key)) == NULL) {
		if ((t = calloc(1, sizeof(*t))) == NULL || pthread_setspecific(tls_key, t) != 0) {
			free(t);
			return NULL;
		}
	}
	if (t->ctx == NULL || strcmp(t->ca_pem, req->ca_pem) != 0) {
		SSL_CTX_free(t->ctx);
		free(t->ca_pem);
		t->ca_pem = strdup(req->ca_pem);
		t->ctx = t->ca_pem != NULL ? ctx_new(NULL, t->ca_pem) : NULL;
	}
	if (t->ctx != NULL)
		SSL_CTX_up_ref(t->ctx);
	return t->ctx;
}

/* the first OpenSSL error queued, or what the socket said */
static const char *ssl_why(char *buf, size_t n, int sys_errno)
{
	unsigned long e = ERR_get_error();

	if (e != 0)
		ERR_error_string_n(e, buf, n);
	else
		snprintf(buf, n, "%s",
		         sys_errno != 0 ? strerror(sys_errno) : "the connection was closed");
	ERR_clear_error();
	return buf;
}

/* One SSL call's outcome: 0 to call again after waiting, else a status (err set). */
static int ssl_wait(struct conn *c, int r, const char *doing)
{
	char why[256];
	int e = SSL_get_error(c->ssl, r), saved = errno;

	if (e == SSL_ERROR_WANT_READ)
		return wait_fd(c, POLLIN, c->deadline, doing);
	if (e == SSL_ERROR_WANT_WRITE)
		return wait_fd(c, POLLOUT, c->deadline, doing);
	bc_errf(c->err, c->errlen, "TLS: %s: %s", doing,
	        ssl_why(why, sizeof(why), e == SSL_ERROR_SYSCALL ? saved : 0));
	return BC_ERR_UNAVAILABLE;
}

static int expect_host(SSL *ssl, const char *host)
{
	X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);

	if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) == 1)
		return 0;
	ERR_clear_error();
	return SSL_set1_host(ssl, host) == 1 && SSL_set_tlsext_host_name(ssl, host) == 1 ? 0 : -1;
}

static int handshake(struct conn *c, const struct bc_httpc_req *req, const char *host)
{
	SSL_CTX *ctx = ctx_for(req);
	long v;
	int r, rc;

	if (ctx == NULL) {
		bc_errf(c->err, c->errlen, "TLS: no CA certificate could be read from %s",
		        req->ca_pem != NULL ? "the CA bundle given"
		        : req->ca_file      ? req->ca_file
		                            : "the system store");
		return BC_ERR_CONFIG;
	}
	c->ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 || expect_host(c->ssl, host) != 0) {
		bc_errf(c->err, c->errlen, "TLS: cannot set up a connection");
		return BC_ERR_INTERNAL;
	}
	if (req->verify_time != 0)
		X509_VERIFY_PARAM_set_time(SSL_get0_param(c->ssl), req->verify_time);
	while ((r = SSL_connect(c->ssl)) != 1) {
		if ((v = SSL_get_verify_result(c->ssl)) != X509_V_OK) {
			bc_errf(c->err, c->errlen, "TLS: certificate verify failed: %s",
			        X509_verify_cert_error_string(v));
			ERR_clear_error();
			return BC_ERR_VERIFY;
		}
		if ((rc = ssl_wait(c, r, "handshake")) != 0)
			return rc;
	}
	return 0;
}

/* ---- bytes ---- */

static int conn_write(struct conn *c, const char *p, size_t n)
{
	char why[128];
	ssize_t s;
	size_t w;
	int r, rc;

	while (n > 0) {
		if (c->ssl != NULL) {
			if ((r = SSL_write_ex(c->ssl, p, n, &w)) != 1) {
				if ((rc = ssl_wait(c, r, "sending the request")) != 0)
					return rc;
				continue;
			}
		} else if ((s = send(c->fd, p, n, MSG_NOSIGNAL)) < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				bc_errf(c->err, c->errlen, "cannot send the request: %s",
				        lower_strerror(errno, why, sizeof(why)));
				return BC_ERR_UNAVAILABLE;
			}
			if ((rc = wait_fd(c, POLLOUT, c->deadline, "sending the request")) != 0)
				return rc;
			continue;
		} else {
			w = (size_t)s;
		}
		p += w;
		n -= w;
	}
	return 0;
}

/* A TLS stream cut without close_notify ends it too: the reader knows from the framing
 * whether the answer was whole. */
static ssize_t conn_read(void *arg, char *p, size_t n)
{
	struct conn *c = arg;
	size_t got;
	ssize_t s;
	int r, e;

	for (;;) {
		if (c->ssl != NULL) {
			if ((r = SSL_read_ex(c->ssl, p, n, &got)) == 1)
				return (ssize_t)got;
			e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_ZERO_RETURN ||
			    (e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) ==
			                               SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
				ERR_clear_error();
				return 0;
			}
			if (ssl_wait(c, r, "waiting for the answer") != 0)
				return -1;
			continue;
		}
		if ((s = recv(c->fd, p, n, 0)) >= 0)
			return s;
		if ((errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
		    wait_fd(c, POLLIN, c->deadline, "waiting for the answer") != 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				bc_errf(c->err, c->errlen, "cannot read the answer: %s",
				        strerror(errno));
			return -1;
		}
	}
}

/* ---- the exchange ---- */

static int hostport(const struct bc_httpc_url *u, int always_port, char *out, size_t n)
{
	int v6 = strchr(u->host, ':') != NULL, def = u->port == (u->tls ? 443 : 80);
	int k;

	if (def && !always_port)
		k = snprintf(out, n, "%s%s%s", v6 ? "[" : "", u->host, v6 ? "]" : "");
	else
		k = snprintf(out, n, "%s%s%s:%u", v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
	return k > 0 && (size_t)k < n ? 0 : -1;
}

static int send_request(struct conn *c, const struct bc_httpc_req *req,
                        const struct bc_httpc_url *u, int absolute)
{
	char host[BC_HTTPC_HOST_MAX + 16], clen[48] = "";
	const char *m = req->method != NULL ? req->method : "GET";
	/* the request line and Host (the host twice at most), the framing lines, the body */
	size_t cap = strlen(m) + strlen(req->url) + 2 * sizeof(host) + 160 + req->len, off;
	char *buf;
	int n, rc;

	for (size_t i = 0; i < req->n_headers; i++)
		cap += strlen(req->headers[i]) + 2;
	if (hostport(u, 0, host, sizeof(host)) != 0 || (buf = malloc(cap)) == NULL)
		return BC_ERR_NOMEM;
	if (req->body != NULL && !req->no_length)
		snprintf(clen, sizeof(clen), "Content-Length: %zu\r\n", req->len);
	n = snprintf(buf, cap, "%s %s%s%s HTTP/1.1\r\nHost: %s\r\n", m,
	             absolute ? (u->tls ? "https://" : "http://") : "", absolute ? host : "",
	             *u->path == '/' ? u->path : "/", host);
	off = (size_t)n;
	for (size_t i = 0; i < req->n_headers; i++)
		off += (size_t)snprintf(buf + off, cap - off, "%s\r\n", req->headers[i]);
	off += (size_t)snprintf(buf + off, cap - off, "%sConnection: close\r\n\r\n", clen);
	if (req->body != NULL && req->len > 0)
		memcpy(buf + off, req->body, req->len);
	rc = conn_write(c, buf, off + (req->body != NULL ? req->len : 0));
	/* the headers may hold a credential (the CLI's API key) */
	OPENSSL_cleanse(buf, cap);
	free(buf);
	return rc;
}

/* CONNECT host:port through the proxy c is connected to: 0 once it answers 2xx. */
static int tunnel(struct conn *c, const struct bc_httpc_url *u, const struct bc_httpc_url *px)
{
	struct bc_httpc_src src = {conn_read, c};
	struct bc_httpc_resp r;
	char hp[BC_HTTPC_HOST_MAX + 16], line[BC_HTTPC_HOST_MAX * 2 + 64];
	const char *why;
	int n, rc;

	if (hostport(u, 1, hp, sizeof(hp)) != 0)
		return BC_ERR_INVALID;
	n = snprintf(line, sizeof(line), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hp, hp);
	if ((rc = conn_write(c, line, (size_t)n)) != 0)
		return rc;
	c->err[0] = '\0';
	rc = bc_httpc_read_reply(&src, 0, 1, &r, &why);
	if (rc == 0 && (r.status < 200 || r.status > 299)) {
		bc_errf(c->err, c->errlen, "the proxy %s:%u refused CONNECT %s: status %d",
		        px->host, px->port, hp, r.status);
		rc = BC_ERR_UNAVAILABLE;
	} else if (rc != 0 && c->err[0] == '\0') {
		bc_errf(c->err, c->errlen, "the proxy %s:%u: %s", px->host, px->port, why);
	}
	bc_httpc_resp_free(&r);
	return rc;
}

static int exchange(struct conn *c, const struct bc_httpc_req *req, struct bc_httpc_resp *resp)
{
	struct bc_httpc_src src = {conn_read, c};
	struct bc_httpc_url u, px;
	const char *why;
	int rc, proxied = 0;

	if ((rc = bc_httpc_url_parse(req->url, &u, &why)) != 0) {
		bc_errf(c->err, c->errlen, "%s", why);
		return rc;
	}
	if (req->use_proxy && (proxied = proxy_for(&u, &px, c->err, c->errlen)) < 0)
		return proxied;
	if ((rc = dial(c, proxied ? &px : &u,
	               req->connect_timeout_ms > 0 ? req->connect_timeout_ms
	                                           : DEFAULT_CONNECT_MS)) != 0 ||
	    (proxied && u.tls && (rc = tunnel(c, &u, &px)) != 0) ||
	    (u.tls && (rc = handshake(c, req, u.host)) != 0) ||
	    (rc = send_request(c, req, &u, proxied && !u.tls)) != 0)
		return rc;
	c->err[0] = '\0';
	rc = bc_httpc_read_reply(&src, req->max,
	                         req->method != NULL && !strcmp(req->method, "HEAD"), resp, &why);
	if (rc == BC_ERR_LIMIT && resp->head != NULL)
		bc_errf(c->err, c->errlen, "answer larger than %zu bytes", req->max);
	else if (rc != 0 && c->err[0] == '\0')
		bc_errf(c->err, c->errlen, "the answer has %s", why);
	return rc;
}

int bc_httpc_run(const struct bc_httpc_req *req, struct bc_httpc_resp *resp, char *err,
                 size_t errlen)
{
	char scratch[8];
	int timeout = req->timeout_ms > 0 ? req->timeout_ms : DEFAULT_TOTAL_MS;
	struct conn c = {.fd = -1,
	                 .deadline = mono_ms() + timeout,
	                 .timeout_ms = timeout,
	                 .err = err != NULL && errlen > 0 ? err : scratch,
	                 .errlen = err != NULL && errlen > 0 ? errlen : sizeof(scratch)};
	int rc;

	sigset_t pipe, old;

	memset(resp, 0, sizeof(*resp));
	c.err[0] = '\0';
	/* OpenSSL writes with write(): a server gone would raise SIGPIPE in a program that
	 * has not ignored it. Blocked in this thread for the request, and one raised
	 * meanwhile taken before it is unblocked. */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	rc = exchange(&c, req, resp);
	/* no close_notify: the server closes after its answer ("Connection: close") */
	SSL_free(c.ssl);
	if (c.fd >= 0)
		close(c.fd);
	if (!sigismember(&old, SIGPIPE)) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe, NULL, &zero) > 0)
			;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (rc != 0)
		bc_httpc_resp_free(resp);
	return rc;
}

int bc_httpc_header(const struct bc_httpc_resp *resp, const char *name, char *out, size_t outlen)
{
	size_t n = strlen(name);
	const char *p, *e, *v;

	if (resp->head == NULL || (p = strchr(resp->head, '\n')) == NULL)
		return BC_ERR_NOT_FOUND;
	/* the status line skipped, then one header a line ("\r\n" or "\n" ended) */
	for (p++; (e = strchr(p, '\n')) != NULL; p = e + 1) {
		if (strncasecmp(p, name, n) != 0 || p[n] != ':')
			continue;
		for (v = p + n + 1; v < e && (*v == ' ' || *v == '\t'); v++)
			;
		while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if ((size_t)(e - v) >= outlen)
			return BC_ERR_LIMIT;
		memcpy(out, v, (size_t)(e - v));
		out[e - v] = '\0';
		return 0;
	}
	return BC_ERR_NOT_FOUND;
}

char *bc_httpc_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (out == NULL)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

int bc_httpc_date(const char *s, time_t *t)
{
	struct tm tm;
	const char *e;

	memset(&tm, 0, sizeof(tm));
	if ((e = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm)) == NULL || *e != '\0')
		return BC_ERR_INVALID;
	*t = timegm(&tm);
	return *t == (time_t)-1 ? BC_ERR_INVALID : 0;
}
