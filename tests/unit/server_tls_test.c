/* src/server/server_tls.c and bc_http_set_tls: the server's TLS certificate renewed
 * two thirds into its life and served from the next connection on, without a restart,
 * while a connection opened before keeps working; an operator's certificate never
 * replaced. A real front end on loopback, an OpenSSL client, the test clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/pki.h"
#include "pki/pki_internal.h"
#include "server/http.h"
#include "server/server_tls.h"

#define DAY_MS (24LL * 3600 * 1000)

struct fixture {
	bc_pki *pki, *other;
	char *cert, *key;
};

static void answer(void *ctx, const struct bc_http_request *req, struct bc_http_response *resp)
{
	(void)ctx;
	(void)req;
	bc_http_set_body(resp, 200, "text/plain", "ok", 2);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *hosts[] = {"127.0.0.1", "localhost"};

	bc_clock_set_offset_ms(0);
	if (f == NULL || bc_pki_generate("example.org", &f->pki) != 0 ||
	    bc_pki_generate("example.org", &f->other) != 0 ||
	    bc_pki_server_tls_cert(f->pki, hosts, 2, &f->cert, &f->key) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	bc_clock_set_offset_ms(0);
	bc_pki_free(f->pki);
	bc_pki_free(f->other);
	free(f->cert);
	free(f->key);
	free(f);
	return 0;
}

static struct bc_http *start(const char *cert, const char *key)
{
	struct bc_http_config hc = {
	    .listen = "127.0.0.1:0", .tls_cert_pem = cert, .tls_key_pem = key, .threads = 1};
	struct bc_http *h = NULL;
	char err[256];

	assert_int_equal(bc_http_start(&hc, answer, NULL, &h, err, sizeof(err)), 0);
	return h;
}

/* A TLS connection to the front end, verifying nothing (the test reads what it serves). */
struct conn {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
};

static void conn_open(struct conn *c, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((c->fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_non_null(c->ctx = SSL_CTX_new(TLS_client_method()));
	assert_non_null(c->ssl = SSL_new(c->ctx));
	SSL_set_fd(c->ssl, c->fd);
	assert_int_equal(SSL_connect(c->ssl), 1);
}

/* One request on the connection; 1 when it was answered 200. */
static int conn_get(struct conn *c)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	char buf[1024];
	int n;

	if (SSL_write(c->ssl, req, (int)sizeof(req) - 1) != (int)sizeof(req) - 1)
		return 0;
	if ((n = SSL_read(c->ssl, buf, sizeof(buf) - 1)) <= 0)
		return 0;
	buf[n] = '\0';
	return strncmp(buf, "HTTP/1.1 200", 12) == 0;
}

static void conn_close(struct conn *c)
{
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	close(c->fd);
}

/* The serial the front end serves now, as hex. */
static char *served_serial(uint16_t port)
{
	struct conn c;
	X509 *x;
	BIGNUM *bn;
	char *hex;

	conn_open(&c, port);
	assert_non_null(x = SSL_get1_peer_certificate(c.ssl));
	assert_non_null(bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL));
	hex = BN_bn2hex(bn);
	BN_free(bn);
	X509_free(x);
	conn_close(&c);
	return hex;
}

static void test_renewed_at_two_thirds_without_restart(void **state)
{
	struct fixture *f = *state;
	struct bc_http *h = start(f->cert, f->key);
	struct bc_tls_watch *w = NULL;
	uint16_t port = bc_http_port(h);
	char *s0, *s1;
	int64_t na0, na1;
	int ours;

	assert_int_equal(bc_tls_watch_start(f->pki, h, f->cert, &w), 0);
	bc_tls_watch_expiry(w, &na0, &ours);
	assert_int_equal(ours, 1);
	s0 = served_serial(port);
	/* 200 days on: not yet two thirds of a year and a day */
	bc_clock_set_offset_ms(200 * DAY_MS);
	assert_int_equal(bc_tls_watch_check(w), 0);
	s1 = served_serial(port);
	assert_string_equal(s0, s1);
	OPENSSL_free(s1);
	/* 300 days on: renewed, served from the next connection */
	bc_clock_set_offset_ms(300 * DAY_MS);
	assert_int_equal(bc_tls_watch_check(w), 1);
	s1 = served_serial(port);
	assert_string_not_equal(s0, s1);
	bc_tls_watch_expiry(w, &na1, &ours);
	assert_int_equal(ours, 1);
	assert_true(na1 - na0 > 250 * DAY_MS);
	/* once renewed, not again until the new one is due */
	assert_int_equal(bc_tls_watch_check(w), 0);
	OPENSSL_free(s0);
	OPENSSL_free(s1);
	bc_tls_watch_stop(w);
	bc_http_stop(h);
}

static void test_operator_certificate_never_replaced(void **state)
{
	struct fixture *f = *state;
	struct bc_http *h = start(f->cert, f->key);
	struct bc_tls_watch *w = NULL;
	uint16_t port = bc_http_port(h);
	char *s0, *s1;
	int64_t na;
	int ours;

	/* the certificate another CA issued, as the operator's would be */
	assert_int_equal(bc_tls_watch_start(f->other, h, f->cert, &w), 0);
	bc_tls_watch_expiry(w, &na, &ours);
	assert_int_equal(ours, 0);
	s0 = served_serial(port);
	bc_clock_set_offset_ms(400 * DAY_MS);
	assert_int_equal(bc_tls_watch_check(w), 0);
	s1 = served_serial(port);
	assert_string_equal(s0, s1);
	OPENSSL_free(s0);
	OPENSSL_free(s1);
	bc_tls_watch_stop(w);
	bc_http_stop(h);
}

static void test_set_tls_refusals(void **state)
{
	struct fixture *f = *state;
	struct bc_http *h = start(f->cert, f->key), *plain;
	struct bc_http_config pc = {.listen = "127.0.0.1:0", .threads = 1};
	const char *hosts[] = {"127.0.0.1"};
	char *c2 = NULL, *k2 = NULL, *s0, *s1, err[256];
	uint16_t port = bc_http_port(h);
	struct conn before;

	s0 = served_serial(port);
	/* a key that is not the certificate's: refused, the old one still served */
	assert_int_equal(bc_pki_server_tls_cert(f->pki, hosts, 1, &c2, &k2), 0);
	assert_int_equal(bc_http_set_tls(h, f->cert, k2), BC_ERR_CRYPTO);
	assert_int_equal(bc_http_set_tls(h, "not pem", f->key), BC_ERR_CRYPTO);
	assert_int_equal(bc_http_set_tls(h, NULL, f->key), BC_ERR_INVALID);
	s1 = served_serial(port);
	assert_string_equal(s0, s1);
	OPENSSL_free(s1);
	/* a connection opened before the swap keeps its certificate and is answered */
	conn_open(&before, port);
	assert_true(conn_get(&before));
	assert_int_equal(bc_http_set_tls(h, c2, k2), 0);
	s1 = served_serial(port);
	assert_string_not_equal(s0, s1);
	assert_true(conn_get(&before));
	conn_close(&before);
	/* plain HTTP has no certificate to replace */
	assert_int_equal(bc_http_start(&pc, answer, NULL, &plain, err, sizeof(err)), 0);
	assert_int_equal(bc_http_set_tls(plain, c2, k2), BC_ERR_INVALID);
	bc_http_stop(plain);
	/* a watch needs a certificate */
	struct bc_tls_watch *w = NULL;
	assert_int_equal(bc_tls_watch_start(f->pki, h, "no certificate", &w), BC_ERR_INVALID);
	assert_null(w);
	OPENSSL_free(s0);
	OPENSSL_free(s1);
	free(c2);
	free(k2);
	bc_http_stop(h);
}

static void test_read_names_and_times(void **state)
{
	struct fixture *f = *state;
	struct bc_server_tls info;

	assert_int_equal(bc_pki_server_tls_read(f->pki, f->cert, &info), 0);
	assert_int_equal(info.ours, 1);
	assert_int_equal(info.n_hosts, 2);
	assert_string_equal(info.hosts[0], "127.0.0.1");
	assert_string_equal(info.hosts[1], "localhost");
	assert_int_equal(bc_server_tls_renew_at(&info),
	                 info.not_before_ms + (info.not_after_ms - info.not_before_ms) / 3 * 2);
	bc_server_tls_clear(&info);
	assert_int_equal(info.n_hosts, 0);
	assert_int_equal(bc_pki_server_tls_read(f->other, f->cert, &info), 0);
	assert_int_equal(info.ours, 0);
	assert_int_equal(info.n_hosts, 0);
	assert_int_equal(bc_pki_server_tls_read(f->pki, "junk", &info), BC_ERR_INVALID);
	assert_int_equal(bc_pki_server_tls_read(NULL, f->cert, &info), BC_ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_renewed_at_two_thirds_without_restart),
	    cmocka_unit_test(test_operator_certificate_never_replaced),
	    cmocka_unit_test(test_set_tls_refusals),
	    cmocka_unit_test(test_read_names_and_times),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
