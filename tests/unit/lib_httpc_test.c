/* bc/httpc.h: the URL parser and no_proxy (negative cases too), the answer reader over
 * bytes in memory (every refusal), and whole requests against a real TLS server on
 * loopback (a thread of this test on OpenSSL, certificates made by the openssl
 * command): a good CA from a file and from memory, a wrong CA, a wrong host name, a
 * silent server (the deadline), chunked and oversize answers, a malformed status line,
 * a refused connection, and the proxy of the environment (tests/support/connect_proxy.py:
 * CONNECT for https, the absolute form for http, no_proxy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bc/httpc.h"

static char dir[] = "/tmp/bc-httpc.XXXXXX";
static char ca_file[128], other_file[128], *ca_pem;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = calloc(1, 65536);
	size_t n;

	assert_non_null(f);
	n = fread(s, 1, 65535, f);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* ---- URLs and no_proxy ---- */

static void test_url(void **state)
{
	struct bc_httpc_url u;
	const char *why;

	(void)state;
	assert_int_equal(bc_httpc_url_parse("https://example.com/a/b?c", &u, &why), 0);
	assert_true(u.tls);
	assert_string_equal(u.host, "example.com");
	assert_int_equal(u.port, 443);
	assert_string_equal(u.path, "/a/b?c");
	assert_int_equal(bc_httpc_url_parse("http://10.0.0.1:8080", &u, &why), 0);
	assert_false(u.tls);
	assert_int_equal(u.port, 8080);
	assert_true(u.port_given);
	assert_string_equal(u.path, "");
	assert_int_equal(bc_httpc_url_parse("HTTPS://[::1]:8443/x", &u, &why), 0);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 8443);
	assert_int_equal(bc_httpc_url_parse("http://[fe80::1]/", &u, &why), 0);
	assert_int_equal(u.port, 80);
	assert_false(u.port_given);
	static const char *const bad[] = {
	    "ftp://h/",      "h:80/",         "http://",         "http:///x",         "http://:80/",
	    "http://h:/",    "http://h:0/",   "http://h:65536/", "http://h:8a/",      "http://u@h/",
	    "http://u:p@h/", "http://[::1/",  "http://[]/",      "http://[1.2.3.4]/", "http://h /",
	    "http://h/a b",  "http://h/\r\n", "http://h:80:80/", "http://[::1]x/",    NULL};
	for (size_t i = 0; bad[i] != NULL; i++) {
		why = NULL;
		assert_int_equal(bc_httpc_url_parse(bad[i], &u, &why), BC_ERR_INVALID);
		assert_non_null(why);
	}
	assert_int_equal(bc_httpc_url_parse(NULL, &u, &why), BC_ERR_INVALID);
}

static void test_no_proxy(void **state)
{
	(void)state;
	assert_false(bc_httpc_no_proxy(NULL, "a.example.com"));
	assert_false(bc_httpc_no_proxy("", "a.example.com"));
	assert_true(bc_httpc_no_proxy("*", "a.example.com"));
	assert_true(bc_httpc_no_proxy("example.com", "a.example.com"));
	assert_true(bc_httpc_no_proxy("example.com", "EXAMPLE.com"));
	assert_true(bc_httpc_no_proxy(" other , .example.com ", "a.example.com"));
	assert_true(bc_httpc_no_proxy("10.0.0.1,127.0.0.1", "127.0.0.1"));
	assert_false(bc_httpc_no_proxy("example.com", "badexample.com"));
	assert_false(bc_httpc_no_proxy("a.example.com", "example.com"));
	assert_false(bc_httpc_no_proxy(",,", "example.com"));
	assert_false(bc_httpc_no_proxy("127.0.0.1", "127.0.0.10"));
}

static void test_escape(void **state)
{
	char *e;

	(void)state;
	e = bc_httpc_escape("aZ09-._~ /?&=%\xc3\xa9");
	assert_string_equal(e, "aZ09-._~%20%2F%3F%26%3D%25%C3%A9");
	free(e);
	e = bc_httpc_escape("");
	assert_string_equal(e, "");
	free(e);
}

static void test_date(void **state)
{
	time_t t;

	(void)state;
	assert_int_equal(bc_httpc_date("Sun, 06 Nov 1994 08:49:37 GMT", &t), 0);
	assert_int_equal(t, 784111777);
	assert_int_equal(bc_httpc_date("Sun, 06 Nov 1994 08:49:37 GMT x", &t), BC_ERR_INVALID);
	assert_int_equal(bc_httpc_date("Sunday, 06-Nov-94 08:49:37 GMT", &t), BC_ERR_INVALID);
	assert_int_equal(bc_httpc_date("", &t), BC_ERR_INVALID);
}

/* ---- the reader over memory ---- */

struct mem {
	const char *p;
	size_t n, step; /* at most step bytes a read: the answer in pieces */
	int fail;       /* -1 at the end instead of 0 */
};

static ssize_t mem_read(void *arg, char *p, size_t n)
{
	struct mem *m = arg;
	size_t k = n < m->n ? n : m->n;

	if (k > m->step)
		k = m->step;
	if (k == 0)
		return m->fail ? -1 : 0;
	memcpy(p, m->p, k);
	m->p += k;
	m->n -= k;
	return (ssize_t)k;
}

static int parse(const char *s, size_t max, int no_body, struct bc_httpc_resp *r, const char **why)
{
	int rc = 0;

	/* every answer read whole, then a byte at a time: the same outcome */
	for (size_t step = 65536; step >= 1; step = step == 65536 ? 1 : 0) {
		struct mem m = {s, strlen(s), step, 0};
		struct bc_httpc_src src = {mem_read, &m};
		int r2;
		bc_httpc_resp_free(r);
		r2 = bc_httpc_read_reply(&src, max, no_body, r, why);
		if (step != 65536)
			assert_int_equal(r2, rc);
		rc = r2;
	}
	return rc;
}

static void test_reader_good(void **state)
{
	struct bc_httpc_resp r = {0};
	const char *why;
	char v[64];

	(void)state;
	assert_int_equal(
	    parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: x \r\n\r\nhello", 5, 0, &r, &why),
	    0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 5);
	assert_string_equal(r.body, "hello");
	assert_int_equal(bc_httpc_header(&r, "date", v, sizeof(v)), 0);
	assert_string_equal(v, "x");
	assert_int_equal(bc_httpc_header(&r, "Retry-After", v, sizeof(v)), BC_ERR_NOT_FOUND);
	assert_int_equal(bc_httpc_header(&r, "Date", v, 1), BC_ERR_LIMIT);
	/* chunked, with an extension and a trailer */
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	                       "3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\nT: 1\r\n\r\n",
	                       13, 0, &r, &why),
	                 0);
	assert_int_equal(r.len, 13);
	assert_string_equal(r.body, "abc0123456789");
	/* no framing: up to the end of the stream */
	assert_int_equal(parse("HTTP/1.0 404 Not Found\r\n\r\nnope", 100, 0, &r, &why), 0);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.body, "nope");
	/* an interim answer skipped */
	assert_int_equal(parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
	                       "Content-Length: 0\r\n\r\n",
	                       10, 0, &r, &why),
	                 0);
	assert_int_equal(r.status, 201);
	assert_int_equal(r.len, 0);
	assert_non_null(r.body);
	/* HEAD: a length but no body */
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 10, 1, &r, &why),
	                 0);
	assert_null(r.body);
	bc_httpc_resp_free(&r);
}

static void test_reader_refusals(void **state)
{
	static const struct {
		const char *in;
		size_t max;
		int rc;
		const char *why;
	} cases[] = {
	    {"HTTP/1.1 2x0 OK\r\n\r\n", 10, BC_ERR_INVALID, "a malformed status line or header"},
	    {"HTTP/1.1 200 OK\r\nbad header\r\n\r\n", 10, BC_ERR_INVALID,
	     "a malformed status line or header"},
	    {"SSH-2.0-OpenSSH\r\n\r\n", 10, BC_ERR_INVALID, "a malformed status line or header"},
	    {"HTTP/1.1 099 X\r\n\r\n", 10, BC_ERR_INVALID, "a malformed status line or header"},
	    {"HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", 10, BC_ERR_INVALID, "a folded header line"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 10, BC_ERR_INVALID,
	     "a Transfer-Encoding other than chunked"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", 10,
	     BC_ERR_INVALID, "both a Content-Length and chunked framing"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", 10,
	     BC_ERR_INVALID, "a malformed or repeated Content-Length"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 10, BC_ERR_INVALID,
	     "a malformed or repeated Content-Length"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 10, BC_ERR_LIMIT,
	     "a body larger than the client's bound"},
	    {"HTTP/1.1 200 OK\r\n\r\n01234567890", 10, BC_ERR_LIMIT,
	     "a body larger than the client's bound"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n5\r\n01234\r\n",
	     10, BC_ERR_LIMIT, "a body larger than the client's bound"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", 10,
	     BC_ERR_INVALID, "a malformed chunk size"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nz\r\n", 10, BC_ERR_INVALID,
	     "a malformed chunk size"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 10,
	     BC_ERR_INVALID, "a chunk longer than its size"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n", 10, BC_ERR_INVALID,
	     "a malformed chunk"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", 10, BC_ERR_UNAVAILABLE,
	     "the connection closed in the middle of the answer's body"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", 10,
	     BC_ERR_UNAVAILABLE, "the connection closed in the middle of the answer's body"},
	    {"HTTP/1.1 200 OK\r\nContent-", 10, BC_ERR_UNAVAILABLE,
	     "the connection closed before the answer's head ended"},
	};
	struct bc_httpc_resp r = {0};
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(cases[i].in, cases[i].max, 0, &r, &why), cases[i].rc);
		assert_string_equal(why, cases[i].why);
		assert_null(r.body);
	}
	bc_httpc_resp_free(&r);
}

static void test_reader_long_head(void **state)
{
	char *big = malloc(BC_HTTPC_HEAD_MAX + 64);
	struct bc_httpc_resp r = {0};
	struct mem m;
	struct bc_httpc_src src = {mem_read, &m};
	const char *why;

	(void)state;
	strcpy(big, "HTTP/1.1 200 OK\r\nX: ");
	memset(big + strlen(big), 'a', BC_HTTPC_HEAD_MAX);
	big[BC_HTTPC_HEAD_MAX + 20] = '\0';
	m = (struct mem){big, strlen(big), 4096, 0};
	assert_int_equal(bc_httpc_read_reply(&src, 10, 0, &r, &why), BC_ERR_LIMIT);
	assert_string_equal(why, "an answer head longer than the client's bound");
	/* a source failing: an error, not an end */
	m = (struct mem){"HTTP/1.1 200 OK\r\n\r\nab", 21, 4096, 1};
	assert_int_equal(bc_httpc_read_reply(&src, 10, 0, &r, &why), BC_ERR_UNAVAILABLE);
	assert_string_equal(why, "the connection failed while reading the answer");
	assert_null(r.body);
	bc_httpc_resp_free(&r);
	free(big);
}

/* ---- a real server on loopback ---- */

struct srv {
	int lfd, port, tls, silent;
	SSL_CTX *ctx;
	const char *answer;
	char seen[4096];
	pthread_t th;
};

static void *serve(void *arg)
{
	struct srv *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	SSL *ssl = NULL;
	size_t got = 0;
	char buf[1024];

	if (fd < 0)
		return NULL;
	if (s->tls) {
		ssl = SSL_new(s->ctx);
		SSL_set_fd(ssl, fd);
		if (SSL_accept(ssl) != 1)
			goto out;
	}
	/* the request's head (the bodies sent here are in the same write) */
	while (got < sizeof(s->seen) - 1 && strstr(s->seen, "\r\n\r\n") == NULL) {
		int n = ssl ? SSL_read(ssl, s->seen + got, (int)(sizeof(s->seen) - 1 - got))
		            : (int)recv(fd, s->seen + got, sizeof(s->seen) - 1 - got, 0);
		if (n <= 0)
			goto out;
		got += (size_t)n;
		s->seen[got] = '\0';
	}
	if (s->silent) { /* until the client gives up */
		while ((ssl ? SSL_read(ssl, buf, sizeof(buf))
		            : (int)recv(fd, buf, sizeof(buf), 0)) > 0)
			;
		goto out;
	}
	if (ssl)
		SSL_write(ssl, s->answer, (int)strlen(s->answer));
	else
		(void)send(fd, s->answer, strlen(s->answer), MSG_NOSIGNAL);
out:
	ERR_clear_error();
	SSL_free(ssl);
	close(fd);
	return NULL;
}

static void srv_start(struct srv *s, int tls, const char *answer)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	char crt[160], key[160];

	memset(s, 0, sizeof(*s));
	s->tls = tls;
	s->answer = answer;
	if (tls) {
		snprintf(crt, sizeof(crt), "%s/srv.crt", dir);
		snprintf(key, sizeof(key), "%s/srv.key", dir);
		assert_non_null(s->ctx = SSL_CTX_new(TLS_server_method()));
		assert_int_equal(SSL_CTX_use_certificate_chain_file(s->ctx, crt), 1);
		assert_int_equal(SSL_CTX_use_PrivateKey_file(s->ctx, key, SSL_FILETYPE_PEM), 1);
	}
	assert_true((s->lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, serve, s), 0);
}

static void srv_stop(struct srv *s)
{
	shutdown(s->lfd, SHUT_RDWR); /* a thread still in accept returns */
	pthread_join(s->th, NULL);
	close(s->lfd);
	SSL_CTX_free(s->ctx);
}

#define OK_ANSWER "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nRetry-After: 7\r\n\r\nok"

static int get(const char *host, const struct srv *s, struct bc_httpc_req *q,
               struct bc_httpc_resp *r, char *err)
{
	static char url[128];

	snprintf(url, sizeof(url), "%s://%s:%d/p?q=1", s->tls ? "https" : "http", host, s->port);
	q->url = url;
	if (q->max == 0)
		q->max = 1024;
	return bc_httpc_run(q, r, err, 256);
}

static void test_tls_good(void **state)
{
	const char *hdrs[] = {"X-Test: 1"};
	struct bc_httpc_req q = {.ca_file = ca_file,
	                         .method = "POST",
	                         .headers = hdrs,
	                         .n_headers = 1,
	                         .body = "abc",
	                         .len = 3};
	struct bc_httpc_resp r;
	struct srv s;
	char err[256], v[16];

	(void)state;
	srv_start(&s, 1, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), 0);
	srv_stop(&s);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok");
	assert_int_equal(bc_httpc_header(&r, "Retry-After", v, sizeof(v)), 0);
	assert_string_equal(v, "7");
	assert_non_null(strstr(s.seen, "POST /p?q=1 HTTP/1.1\r\n"));
	assert_non_null(strstr(s.seen, "\r\nX-Test: 1\r\n"));
	assert_non_null(strstr(s.seen, "\r\nContent-Length: 3\r\n"));
	assert_non_null(strstr(s.seen, "\r\nConnection: close\r\n"));
	assert_non_null(strstr(s.seen, "\r\n\r\nabc"));
	bc_httpc_resp_free(&r);
	/* the CA from memory, chunked */
	q = (struct bc_httpc_req){.ca_pem = ca_pem};
	srv_start(
	    &s, 1,
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n1\r\n!\r\n0\r\n\r\n");
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), 0);
	srv_stop(&s);
	assert_string_equal(r.body, "ok!");
	assert_non_null(strstr(s.seen, "GET /p?q=1 HTTP/1.1\r\nHost: 127.0.0.1:"));
	bc_httpc_resp_free(&r);
}

static void test_tls_refusals(void **state)
{
	struct bc_httpc_req q = {.ca_file = other_file};
	struct bc_httpc_resp r;
	struct srv s;
	char err[256];

	(void)state;
	srv_start(&s, 1, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_VERIFY);
	srv_stop(&s);
	assert_string_equal(err, "TLS: certificate verify failed: unable to get local issuer "
	                         "certificate");
	/* the right CA, a name the certificate does not carry */
	q.ca_file = ca_file;
	srv_start(&s, 1, OK_ANSWER);
	assert_int_equal(get("localhost", &s, &q, &r, err), BC_ERR_VERIFY);
	srv_stop(&s);
	assert_string_equal(err, "TLS: certificate verify failed: hostname mismatch");
	/* a CA file without a certificate */
	q.ca_file = "/dev/null";
	srv_start(&s, 1, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_CONFIG);
	srv_stop(&s);
	assert_string_equal(err, "TLS: no CA certificate could be read from /dev/null");
	q = (struct bc_httpc_req){.ca_pem = "not PEM"};
	srv_start(&s, 1, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_CONFIG);
	srv_stop(&s);
	assert_string_equal(err, "TLS: no CA certificate could be read from the CA bundle given");
}

static void test_answers(void **state)
{
	struct bc_httpc_req q = {.ca_file = ca_file, .max = 4};
	struct bc_httpc_resp r;
	struct srv s;
	char err[256];

	(void)state;
	srv_start(&s, 1, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n12345");
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_LIMIT);
	srv_stop(&s);
	assert_string_equal(err, "answer larger than 4 bytes");
	assert_null(r.body);
	srv_start(&s, 0,
	          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n0\r\n\r\n");
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_LIMIT);
	srv_stop(&s);
	assert_string_equal(err, "answer larger than 4 bytes");
	srv_start(&s, 1, "HTTP/1.1 OK\r\n\r\n");
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_INVALID);
	srv_stop(&s);
	assert_string_equal(err, "the answer has a malformed status line or header");
}

static void test_deadline_and_refused(void **state)
{
	struct bc_httpc_req q = {.ca_file = ca_file, .timeout_ms = 2000};
	struct bc_httpc_resp r;
	struct srv s;
	char err[256], want[128];
	int port;

	(void)state;
	/* a server that takes the request and never answers: the deadline ends it */
	srv_start(&s, 1, NULL);
	s.silent = 1;
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_UNAVAILABLE);
	srv_stop(&s);
	assert_string_equal(err, "timed out waiting for the answer");
	/* nothing listens */
	srv_start(&s, 0, NULL);
	port = s.port;
	srv_stop(&s);
	s.port = port;
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_UNAVAILABLE);
	snprintf(want, sizeof(want), "connect to 127.0.0.1:%d: connection refused", port);
	assert_string_equal(err, want);
	q.url = "gopher://x/";
	assert_int_equal(bc_httpc_run(&q, &r, err, sizeof(err)), BC_ERR_INVALID);
	assert_string_equal(err, "not an http:// or https:// URL");
}

static void test_ipv6(void **state)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	socklen_t al = sizeof(a);
	struct bc_httpc_req q = {.max = 100};
	struct bc_httpc_resp r;
	struct srv s;
	char err[256], url[64];

	(void)state;
	memset(&s, 0, sizeof(s));
	s.answer = OK_ANSWER;
	if ((s.lfd = socket(AF_INET6, SOCK_STREAM, 0)) < 0 ||
	    bind(s.lfd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(s.lfd);
		skip(); /* no IPv6 loopback on this machine */
	}
	assert_int_equal(listen(s.lfd, 4), 0);
	assert_int_equal(getsockname(s.lfd, (struct sockaddr *)&a, &al), 0);
	assert_int_equal(pthread_create(&s.th, NULL, serve, &s), 0);
	snprintf(url, sizeof(url), "http://[::1]:%d/six", ntohs(a.sin6_port));
	q.url = url;
	assert_int_equal(bc_httpc_run(&q, &r, err, sizeof(err)), 0);
	srv_stop(&s);
	assert_string_equal(r.body, "ok");
	assert_non_null(strstr(s.seen, "GET /six HTTP/1.1\r\nHost: [::1]:"));
	bc_httpc_resp_free(&r);
}

/* ---- the proxy of the environment ---- */

static pid_t proxy_pid;
static int proxy_port;

static void proxy_start(void)
{
	char script[512], path[256], *port;

	snprintf(script, sizeof(script), "%s/tests/support/connect_proxy.py", BC_SOURCE_DIR);
	snprintf(path, sizeof(path), "%s/port", dir);
	if ((proxy_pid = fork()) == 0) {
		execlp("python3", "python3", script, dir, (char *)NULL);
		_exit(127);
	}
	assert_true(proxy_pid > 0);
	for (int i = 0; i < 3000 && access(path, F_OK) != 0; i++)
		usleep(10000);
	port = slurp(path);
	proxy_port = atoi(port);
	free(port);
	assert_true(proxy_port > 0);
}

static void proxy_stop(void)
{
	kill(proxy_pid, SIGTERM);
	waitpid(proxy_pid, NULL, 0);
}

static void test_proxy(void **state)
{
	struct bc_httpc_req q = {.ca_file = ca_file, .use_proxy = 1};
	struct bc_httpc_resp r;
	struct srv s;
	char err[256], env[64], reqs[160], want[128], *seen;

	(void)state;
	proxy_start();
	snprintf(reqs, sizeof(reqs), "%s/requests", dir);
	snprintf(env, sizeof(env), "http://127.0.0.1:%d", proxy_port);
	setenv("https_proxy", env, 1);
	setenv("http_proxy", env + 7, 1); /* host:port, without a scheme */
	/* https: a CONNECT tunnel, TLS to the server through it */
	srv_start(&s, 1, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), 0);
	srv_stop(&s);
	assert_string_equal(r.body, "ok");
	bc_httpc_resp_free(&r);
	seen = slurp(reqs);
	snprintf(want, sizeof(want), "CONNECT 127.0.0.1:%d HTTP/1.1\n", s.port);
	assert_string_equal(seen, want);
	free(seen);
	/* http: the request in absolute form */
	srv_start(&s, 0, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), 0);
	srv_stop(&s);
	assert_string_equal(r.body, "ok");
	bc_httpc_resp_free(&r);
	seen = slurp(reqs);
	snprintf(want, sizeof(want), "GET http://127.0.0.1:%d/p?q=1 HTTP/1.1\n", s.port);
	assert_non_null(strstr(seen, want));
	free(seen);
	/* the proxy refusing the tunnel */
	q.url = "https://192.0.2.1:443/";
	assert_int_equal(bc_httpc_run(&q, &r, err, sizeof(err)), BC_ERR_UNAVAILABLE);
	snprintf(want, sizeof(want),
	         "the proxy 127.0.0.1:%d refused CONNECT 192.0.2.1:443: status 403", proxy_port);
	assert_string_equal(err, want);
	/* no_proxy, and a caller that does not ask: straight to the server */
	unlink(reqs);
	setenv("no_proxy", "example.com,127.0.0.1", 1);
	srv_start(&s, 1, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), 0);
	srv_stop(&s);
	bc_httpc_resp_free(&r);
	unsetenv("no_proxy");
	q.use_proxy = 0;
	srv_start(&s, 0, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), 0);
	srv_stop(&s);
	bc_httpc_resp_free(&r);
	assert_int_equal(access(reqs, F_OK), -1);
	/* a proxy variable that is not a proxy URL */
	q.use_proxy = 1;
	setenv("https_proxy", "socks5://127.0.0.1:1", 1);
	srv_start(&s, 1, OK_ANSWER);
	assert_int_equal(get("127.0.0.1", &s, &q, &r, err), BC_ERR_CONFIG);
	srv_stop(&s);
	assert_non_null(strstr(err, "the proxy socks5://127.0.0.1:1 of the environment"));
	unsetenv("https_proxy");
	unsetenv("http_proxy");
	proxy_stop();
}

/* ---- certificates, made once ---- */

static int setup(void **state)
{
	char cmd[2048];

	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(cmd, sizeof(cmd),
	         "cd %s && exec >log 2>&1 && "
	         "printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:srv.test\\n' > ext && "
	         "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	         "-keyout ca.key -out ca.crt -subj /CN=httpc-test-ca -days 2 && "
	         "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	         "-keyout other.key -out other.crt -subj /CN=httpc-other-ca -days 2 && "
	         "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	         "-keyout srv.key -out srv.csr -subj /CN=srv && "
	         "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
	         "-out srv.crt -days 2 -extfile ext",
	         dir);
	if (system(cmd) != 0)
		return -1;
	snprintf(ca_file, sizeof(ca_file), "%s/ca.crt", dir);
	snprintf(other_file, sizeof(other_file), "%s/other.crt", dir);
	ca_pem = slurp(ca_file);
	signal(SIGPIPE, SIG_IGN);
	unsetenv("https_proxy");
	unsetenv("HTTPS_PROXY");
	unsetenv("http_proxy");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	free(ca_pem);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_url),
	    cmocka_unit_test(test_no_proxy),
	    cmocka_unit_test(test_escape),
	    cmocka_unit_test(test_date),
	    cmocka_unit_test(test_reader_good),
	    cmocka_unit_test(test_reader_refusals),
	    cmocka_unit_test(test_reader_long_head),
	    cmocka_unit_test(test_tls_good),
	    cmocka_unit_test(test_tls_refusals),
	    cmocka_unit_test(test_answers),
	    cmocka_unit_test(test_deadline_and_refused),
	    cmocka_unit_test(test_ipv6),
	    cmocka_unit_test(test_proxy),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
