/* bench_tls_post: one POST on a fresh connection, as tls_client.h says. The path of a
 * request: the URL split (scheme, host, port, path), a TCP connection with deadlines on
 * every wait, the TLS handshake under this thread's SSL_CTX (the pinned CA only, the
 * host checked as a name or an IP address), the head and body in one write, then the
 * answer: its head to a bounded buffer, its body to exactly Content-Length bytes. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bc/err.h"
#include "bc/wire.h"
#include "tls_client.h"

#define MAX_HOST 256

/* snprintf into err, which is always NUL-terminated */
__attribute__((format(printf, 3, 4))) static void errf(char *err, size_t errlen, const char *fmt,
                                                       ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

struct target {
	int tls;
	char host[MAX_HOST];
	char port[8];
	const char *path;
};

struct conn {
	int fd;
	SSL *ssl; /* NULL: plain HTTP */
	const char *url;
	char *err;
	size_t errlen;
};

/* ---- this thread's SSL_CTX ---- */

struct thread_tls {
	SSL_CTX *ctx;
	char *ca_pem; /* the bundle ctx trusts */
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

/* Every certificate of pem into the context's store: the pinned CAs and no other. */
static int load_cas(SSL_CTX *ctx, const char *pem)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;
	int n = 0;

	if (b == NULL)
		return -1;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		n += X509_STORE_add_cert(st, x) == 1;
		X509_free(x);
	}
	ERR_clear_error(); /* the end of the PEM reads as an error */
	BIO_free(b);
	return n > 0 ? 0 : -1;
}

static SSL_CTX *ctx_new(const char *pem)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    load_cas(ctx, pem) != 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* a full handshake each time: no session is kept to resume */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	return ctx;
}

/* The calling thread's context for pem, made when it has none or one for another
 * bundle; NULL when it cannot be made. */
static SSL_CTX *thread_ctx(const char *pem)
{
	struct thread_tls *t;

	if (pthread_once(&tls_once, tls_key_make) != 0)
		return NULL;
	if ((t = pthread_getspecific(tls_key)) == NULL) {
		if ((t = calloc(1, sizeof(*t))) == NULL || pthread_setspecific(tls_key, t) != 0) {
			free(t);
			return NULL;
		}
	}
	if (t->ctx != NULL && strcmp(t->ca_pem, pem) == 0)
		return t->ctx;
	SSL_CTX_free(t->ctx);
	free(t->ca_pem);
	t->ca_pem = strdup(pem);
	t->ctx = t->ca_pem != NULL ? ctx_new(pem) : NULL;
	return t->ctx;
}

/* ---- the connection ---- */

/* scheme://host[:port]/path, host a name, an IPv4 address or [an IPv6 address] */
static int split_url(const char *url, struct target *t)
{
	const char *a, *p, *host, *rest;
	size_t n;

	if (strncmp(url, "https://", 8) == 0)
		t->tls = 1, a = url + 8;
	else if (strncmp(url, "http://", 7) == 0)
		t->tls = 0, a = url + 7;
	else
		return -1;
	if ((p = strchr(a, '/')) == NULL)
		return -1;
	t->path = p;
	if (*a == '[') {
		host = a + 1;
		if ((rest = memchr(host, ']', (size_t)(p - host))) == NULL)
			return -1;
		n = (size_t)(rest++ - host);
	} else {
		host = a;
		if ((rest = memchr(a, ':', (size_t)(p - a))) == NULL)
			rest = p;
		n = (size_t)(rest - host);
	}
	if (n == 0 || n >= sizeof(t->host) || (rest != p && *rest != ':'))
		return -1;
	memcpy(t->host, host, n);
	t->host[n] = '\0';
	if (rest == p) {
		snprintf(t->port, sizeof(t->port), "%s", t->tls ? "443" : "80");
		return 0;
	}
	n = (size_t)(p - rest - 1);
	if (n == 0 || n >= sizeof(t->port))
		return -1;
	memcpy(t->port, rest + 1, n);
	t->port[n] = '\0';
	return 0;
}

static int dial(struct conn *c, const struct target *t)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
	struct timeval tv = {.tv_sec = BENCH_IO_TIMEOUT_S};
	int one = 1, e;

	if ((e = getaddrinfo(t->host, t->port, &hints, &ai)) != 0) {
		errf(c->err, c->errlen, "POST %s: cannot resolve %s: %s", c->url, t->host,
		     gai_strerror(e));
		return BC_ERR_UNAVAILABLE;
	}
	c->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* SO_SNDTIMEO bounds connect() too (Linux) */
	e = c->fd < 0 || setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
	    connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0;
	int saved = errno;
	freeaddrinfo(ai);
	if (!e)
		return 0;
	errno = saved;
	if (errno == ECONNREFUSED)
		errf(c->err, c->errlen, "POST %s: connection refused", c->url);
	else
		errf(c->err, c->errlen, "POST %s: cannot connect: %s", c->url, strerror(errno));
	return BC_ERR_UNAVAILABLE;
}

/* The host the certificate must name: an IP address as one, else a DNS name (and SNI). */
static int expect_host(SSL *ssl, const char *host)
{
	X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);

	if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) == 1)
		return 0;
	ERR_clear_error();
	return SSL_set1_host(ssl, host) == 1 && SSL_set_tlsext_host_name(ssl, host) == 1 ? 0 : -1;
}

/* the first OpenSSL error queued, or what the socket said */
static const char *ssl_why(char *buf, size_t n)
{
	unsigned long e = ERR_get_error();

	if (e != 0)
		ERR_error_string_n(e, buf, n);
	else
		snprintf(buf, n, "%s", errno != 0 ? strerror(errno) : "the connection was closed");
	ERR_clear_error();
	return buf;
}

static int handshake(struct conn *c, const struct target *t, const char *ca_pem)
{
	SSL_CTX *ctx = thread_ctx(ca_pem);
	char why[256];
	long v;

	if (ctx == NULL) {
		errf(c->err, c->errlen, "POST %s: the pinned CA bundle holds no certificate",
		     c->url);
		return BC_ERR_CONFIG;
	}
	if ((c->ssl = SSL_new(ctx)) == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
	    expect_host(c->ssl, t->host) != 0) {
		errf(c->err, c->errlen, "POST %s: cannot set up TLS", c->url);
		return BC_ERR_INTERNAL;
	}
	errno = 0;
	if (SSL_connect(c->ssl) == 1)
		return 0;
	if ((v = SSL_get_verify_result(c->ssl)) != X509_V_OK) {
		errf(c->err, c->errlen,
		     "POST %s: the server's TLS certificate is not from the pinned CA "
		     "bundle: %s",
		     c->url, X509_verify_cert_error_string(v));
		ERR_clear_error();
		return BC_ERR_VERIFY;
	}
	errf(c->err, c->errlen, "POST %s: TLS handshake failed: %s", c->url,
	     ssl_why(why, sizeof(why)));
	return BC_ERR_UNAVAILABLE;
}

static int conn_write(struct conn *c, const char *p, size_t n)
{
	char why[256];

	while (n > 0) {
		size_t w = 0;
		ssize_t s;
		errno = 0;
		if (c->ssl != NULL && SSL_write_ex(c->ssl, p, n, &w) != 1)
			goto fail;
		if (c->ssl == NULL) {
			if ((s = send(c->fd, p, n, MSG_NOSIGNAL)) <= 0)
				goto fail;
			w = (size_t)s;
		}
		p += w;
		n -= w;
	}
	return 0;
fail:
	errf(c->err, c->errlen, "POST %s: cannot send the request: %s", c->url,
	     c->ssl != NULL ? ssl_why(why, sizeof(why)) : strerror(errno));
	return BC_ERR_UNAVAILABLE;
}

/* Up to n bytes: how many (> 0), 0 at the end of the stream, -1 on an error or a
 * deadline passed (err set). A TLS stream cut without close_notify ends it too: the
 * caller knows from Content-Length whether the answer was whole. */
static ssize_t conn_read(struct conn *c, char *p, size_t n)
{
	char why[256];
	size_t r = 0;
	ssize_t s;
	int e;

	errno = 0;
	if (c->ssl == NULL) {
		if ((s = recv(c->fd, p, n, 0)) >= 0)
			return s;
	} else if (SSL_read_ex(c->ssl, p, n, &r) == 1) {
		return (ssize_t)r;
	} else if ((e = SSL_get_error(c->ssl, 0)) == SSL_ERROR_ZERO_RETURN ||
	           (e == SSL_ERROR_SSL &&
	            ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
		ERR_clear_error();
		return 0;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		errf(c->err, c->errlen, "POST %s: timed out after %d s waiting for the answer",
		     c->url, BENCH_IO_TIMEOUT_S);
	else
		errf(c->err, c->errlen, "POST %s: cannot read the answer: %s", c->url,
		     c->ssl != NULL ? ssl_why(why, sizeof(why)) : strerror(errno));
	return -1;
}

/* ---- the exchange ---- */

static int send_request(struct conn *c, const struct target *t, const void *body, size_t len)
{
	size_t cap = strlen(t->path) + strlen(t->host) + 256 + len;
	char *req = malloc(cap);
	int n, rc;

	if (req == NULL)
		return BC_ERR_NOMEM;
	n = snprintf(req, cap,
	             "POST %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nContent-Type: " BC_WIRE_CONTENT_TYPE
	             "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
	             t->path, strchr(t->host, ':') ? "[" : "", t->host,
	             strchr(t->host, ':') ? "]" : "", t->port, len);
	if (n < 0 || (size_t)n + len > cap) {
		free(req);
		return BC_ERR_INTERNAL;
	}
	if (len > 0)
		memcpy(req + n, body, len);
	rc = conn_write(c, req, (size_t)n + len);
	free(req);
	return rc;
}

/* The head, read into head[BENCH_REPLY_HEAD_MAX] until complete: *got bytes in head,
 * of which h->head_len are the head's. */
static int read_head(struct conn *c, char *head, size_t *got, struct bench_reply_head *h)
{
	const char *why;
	ssize_t n;
	int r;

	*got = 0;
	for (;;) {
		if ((n = conn_read(c, head + *got, BENCH_REPLY_HEAD_MAX - *got)) < 0)
			return BC_ERR_UNAVAILABLE;
		if (n == 0) {
			errf(c->err, c->errlen,
			     "POST %s: the server closed the connection before the answer's "
			     "head ended (%zu bytes)",
			     c->url, *got);
			return BC_ERR_UNAVAILABLE;
		}
		*got += (size_t)n;
		if ((r = bench_reply_head(head, *got, h, &why)) != 0)
			break;
	}
	if (r == 1)
		return 0;
	errf(c->err, c->errlen, "POST %s: the answer has %s", c->url, why);
	return r;
}

static int read_answer(struct conn *c, struct bc_client_reply *out)
{
	struct bench_reply_head h;
	char *head = malloc(BENCH_REPLY_HEAD_MAX);
	size_t got, have;
	ssize_t n;
	int rc;

	if (head == NULL)
		return BC_ERR_NOMEM;
	if ((rc = read_head(c, head, &got, &h)) != 0)
		goto out;
	have = got - h.head_len;
	if (have > h.content_length) {
		errf(c->err, c->errlen, "POST %s: bytes after the answer's body", c->url);
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((out->body = malloc(h.content_length + 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	memcpy(out->body, head + h.head_len, have);
	while (have < h.content_length) {
		if ((n = conn_read(c, (char *)out->body + have, h.content_length - have)) < 0) {
			rc = BC_ERR_UNAVAILABLE;
			goto out;
		}
		if (n == 0) {
			errf(c->err, c->errlen,
			     "POST %s: the server closed the connection after %zu of the "
			     "answer's %llu bytes",
			     c->url, have, (unsigned long long)h.content_length);
			rc = BC_ERR_UNAVAILABLE;
			goto out;
		}
		have += (size_t)n;
	}
	out->status = h.status;
	out->len = have;
	out->retry_after_s = h.retry_after_s;
	rc = 0;
out:
	if (rc != 0) {
		free(out->body);
		out->body = NULL;
	}
	free(head);
	return rc;
}

int bench_tls_post(void *arg, const struct bc_client_post_req *req, struct bc_client_reply *out,
                   char *err, size_t errlen)
{
	struct conn c = {.fd = -1, .url = req->url, .err = err, .errlen = errlen};
	struct target t;
	int rc;

	(void)arg;
	if (split_url(req->url, &t) != 0) {
		errf(err, errlen, "POST %s: not a URL this client can send to", req->url);
		return BC_ERR_INVALID;
	}
	if (t.tls && req->pins->ca_bundle_pem == NULL) {
		errf(err, errlen, "POST %s: no pinned CA bundle to verify the server with",
		     req->url);
		return BC_ERR_CONFIG;
	}
	if ((rc = dial(&c, &t)) != 0 ||
	    (t.tls && (rc = handshake(&c, &t, req->pins->ca_bundle_pem)) != 0) ||
	    (rc = send_request(&c, &t, req->body, req->len)) != 0 ||
	    (rc = read_answer(&c, out)) != 0)
		goto out;
out:
	/* no close_notify: the server closes after its answer ("Connection: close") */
	SSL_free(c.ssl);
	if (c.fd >= 0)
		close(c.fd);
	return rc;
}
