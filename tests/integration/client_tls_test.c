/* The client library's HTTP client (bc/httpc.h, as bc_client_post drives it) against a
 * real control plane serving TLS (a replica of an in-process control plane with the
 * [tls] of `better-compute init`, on this engine): token joins and renewals succeed;
 * a CA bundle without the server's CA is refused (BC_ERR_VERIFY); a server that closes
 * before or in the middle of its answer, with or without close_notify, is an error
 * (BC_ERR_UNAVAILABLE), never a hang or a short body taken as whole. bc-load sends its
 * requests through the same code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bc/crypto.h"
#include "bc/pki.h"
#include "bctest.h"

static struct bct_cp cp, tls; /* the control plane, and its replica serving TLS */
static char *cert_pem, *key_pem;
static int start_tls_replica(void)
{
	const char *hosts[] = {"127.0.0.1"};
	char crt[512], key[512], toml[1400], url[sizeof(tls.url)];
	int rc;

	if ((rc = bc_pki_server_tls_cert(bc_server_pki(cp.srv), hosts, 1, &cert_pem, &key_pem)) !=
	    0)
		return rc;
	snprintf(crt, sizeof(crt), "%s/tls.crt", cp.dir);
	snprintf(key, sizeof(key), "%s/tls.key", cp.dir);
	if (bct_write_file(crt, cert_pem) != 0 || bct_write_file(key, key_pem) != 0)
		return BC_ERR_IO;
	snprintf(toml, sizeof(toml), "[tls]\ncert = \"%s\"\nkey = \"%s\"\n", crt, key);
	if ((rc = bct_cp_replica_toml(&cp, &tls, toml)) != 0)
		return rc;
	snprintf(url, sizeof(url), "https://127.0.0.1:%u", bc_server_port(tls.srv));
	snprintf(tls.url, sizeof(tls.url), "%s", url);
	free(tls.pins.server_url);
	return (tls.pins.server_url = strdup(url)) != NULL ? 0 : BC_ERR_NOMEM;
}

static char *token(void)
{
	char pool[64];
	struct bct_token_opts o = {.pool = pool};

	if (bct_pool(&cp, "root", "bench-tls", "{}", pool) != 0)
		return NULL;
	return bct_token(&cp, &o, NULL);
}

static void test_joins_and_renews_over_tls(void **state)
{
	struct bc_join_answer ans = {0}, next = {0}, again = {0};
	EVP_PKEY *key = NULL, *next_key = NULL;
	char *tok = token();
	(void)state;

	assert_non_null(tok);
	assert_int_equal(bc_key_generate(&key), 0);
	assert_int_equal(bc_key_generate(&next_key), 0);
	assert_int_equal(bct_join(&tls, &(struct bct_join_opts){.token = tok, .key = key}, &ans),
	                 0);
	assert_int_equal(ans.state, BC_JOIN_JOINED);
	assert_int_equal(bct_renew(&tls, &ans, key, next_key, &next), 0);
	assert_int_equal(next.state, BC_JOIN_JOINED);
	/* the token is spent: a second join is refused, an answer all the same */
	assert_int_equal(bct_join(&tls, &(struct bct_join_opts){.token = tok}, &again),
	                 BC_ERR_DENIED);
	bc_join_answer_free(&again);
	bc_join_answer_free(&ans);
	bc_join_answer_free(&next);
	EVP_PKEY_free(key);
	EVP_PKEY_free(next_key);
	free(tok);
}

/* the pins' bundle without its first certificate (the TLS CA): the node CA only */
static void test_a_bundle_without_the_servers_ca_is_refused(void **state)
{
	struct bc_client_pins pins = tls.pins;
	struct bc_client_reply r = {0};
	char err[512] = "";
	const char *second = strstr(tls.pins.ca_bundle_pem + 1, "-----BEGIN CERTIFICATE-----");
	(void)state;

	assert_non_null(second);
	pins.ca_bundle_pem = (char *)second;
	assert_int_equal(bc_client_post(&pins, "/healthz", "", 0, &r, err, sizeof(err)),
	                 BC_ERR_VERIFY);
	assert_non_null(strstr(err, "not from the pinned CA bundle"));
	assert_null(r.body);
	/* the thread's TLS context follows the bundle: the right one works again */
	assert_int_equal(bc_client_post(&tls.pins, "/healthz", "", 0, &r, err, sizeof(err)), 0);
	assert_int_equal(r.status, 405); /* /healthz answers GET and HEAD only */
	free(r.body);
}

/* ---- a TLS server that cuts its answer ---- */

struct cutter {
	int lfd;
	const char *answer; /* what it sends before it closes */
	int close_notify;
};

static SSL_CTX *server_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	BIO *c = BIO_new_mem_buf(cert_pem, -1), *k = BIO_new_mem_buf(key_pem, -1);
	X509 *x = PEM_read_bio_X509(c, NULL, NULL, NULL);
	EVP_PKEY *pk = PEM_read_bio_PrivateKey(k, NULL, NULL, NULL);

	if (ctx == NULL || x == NULL || pk == NULL || SSL_CTX_use_certificate(ctx, x) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, pk) != 1) {
		SSL_CTX_free(ctx);
		ctx = NULL;
	}
	X509_free(x);
	EVP_PKEY_free(pk);
	BIO_free(c);
	BIO_free(k);
	return ctx;
}

/* Reads the request to the end of its head and body (its Content-Length), so that the
 * cut comes after the request was taken, then answers and closes. */
static void *cutter_main(void *arg)
{
	struct cutter *cu = arg;
	SSL_CTX *ctx = server_ctx();
	SSL *ssl = NULL;
	char buf[8192];
	size_t got = 0, n;
	int fd = accept(cu->lfd, NULL, NULL);

	if (ctx == NULL || fd < 0 || (ssl = SSL_new(ctx)) == NULL || SSL_set_fd(ssl, fd) != 1 ||
	    SSL_accept(ssl) != 1)
		goto out;
	for (;;) {
		char *end, *cl;
		if (SSL_read_ex(ssl, buf + got, sizeof(buf) - 1 - got, &n) != 1)
			goto out;
		got += n;
		buf[got] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) != NULL &&
		    (cl = strstr(buf, "Content-Length: ")) &&
		    got >= (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10))
			break;
	}
	(void)SSL_write_ex(ssl, cu->answer, strlen(cu->answer), &n);
	if (cu->close_notify)
		(void)SSL_shutdown(ssl);
out:
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int cut_answer(const char *answer, int close_notify, char *err, size_t errlen)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	struct cutter cu = {.answer = answer, .close_notify = close_notify};
	struct bc_client_pins pins = tls.pins;
	struct bc_client_reply r = {0};
	char url[64];
	pthread_t th;
	int rc;

	cu.lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(cu.lfd >= 0);
	assert_int_equal(bind(cu.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(cu.lfd, 4), 0);
	assert_int_equal(getsockname(cu.lfd, (struct sockaddr *)&a, &alen), 0);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u", ntohs(a.sin_port));
	pins.server_url = url;
	assert_int_equal(pthread_create(&th, NULL, cutter_main, &cu), 0);
	rc = bc_client_post(&pins, "/x", "request", 7, &r, err, errlen);
	pthread_join(th, NULL);
	close(cu.lfd);
	if (rc != 0)
		assert_null(r.body);
	else
		assert_memory_equal(r.body, "ok", r.len);
	free(r.body);
	return rc;
}

static void test_a_cut_answer_is_an_error(void **state)
{
	static const char partial[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial";
	char err[512];
	(void)state;

	for (int notify = 0; notify < 2; notify++) {
		assert_int_equal(cut_answer(partial, notify, err, sizeof(err)), BC_ERR_UNAVAILABLE);
		assert_non_null(
		    strstr(err, "the connection closed in the middle of the answer's body"));
		assert_int_equal(
		    cut_answer("HTTP/1.1 200 OK\r\nContent-Le", notify, err, sizeof(err)),
		    BC_ERR_UNAVAILABLE);
		assert_non_null(
		    strstr(err, "the connection closed before the answer's head ended"));
	}
	/* a whole answer from the same server is taken, so the cuts above are the cause */
	assert_int_equal(
	    cut_answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, err, sizeof(err)), 0);
}

/* a port nobody listens on (bound, then closed): refused at once, not retried */
static void test_a_closed_port_is_unavailable(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	struct bc_client_pins pins = tls.pins;
	struct bc_client_reply r = {0};
	char url[64], err[512] = "";
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	(void)state;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	close(fd);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u", ntohs(a.sin_port));
	pins.server_url = url;
	assert_int_equal(bc_client_post(&pins, "/x", "", 0, &r, err, sizeof(err)),
	                 BC_ERR_UNAVAILABLE);
	assert_non_null(strstr(err, "connection refused"));
	assert_null(r.body);
}

static void test_an_answer_the_reader_refuses(void **state)
{
	char err[512];
	(void)state;

	assert_int_equal(cut_answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n",
	                            0, err, sizeof(err)),
	                 BC_ERR_UNAVAILABLE);
	assert_non_null(strstr(err, "the answer has a Transfer-Encoding other than chunked"));
	assert_int_equal(
	    cut_answer("HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n", 0, err, sizeof(err)),
	    BC_ERR_LIMIT);
	assert_non_null(strstr(err, "the answer is larger than 1048576 bytes"));
	/* chunked framing is read */
	assert_int_equal(cut_answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	                            "1\r\no\r\n1\r\nk\r\n0\r\n\r\n",
	                            0, err, sizeof(err)),
	                 0);
}

/* The proxy of the environment, as libcurl honoured it for bcd: https to the control
 * plane through a CONNECT tunnel (tests/support/connect_proxy.py), plain http on
 * loopback never through it. */
static void test_https_goes_through_the_proxy(void **state)
{
	struct bc_client_reply r = {0};
	char *dir = bct_tmpdir(), script[512], path[600], env[64], err[512], want[128], buf[512];
	const char *hp = strstr(tls.url, "127.0.0.1");
	pid_t pid;
	FILE *f;
	int port = 0;
	size_t n;
	(void)state;

	assert_non_null(dir);
	snprintf(script, sizeof(script), "%s/tests/support/connect_proxy.py", BC_SOURCE_DIR);
	if ((pid = fork()) == 0) {
		execlp("python3", "python3", script, dir, (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	snprintf(path, sizeof(path), "%s/port", dir);
	for (int i = 0; i < 3000 && (f = fopen(path, "r")) == NULL; i++)
		usleep(10000);
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &port), 1);
	fclose(f);
	snprintf(env, sizeof(env), "http://127.0.0.1:%d", port);
	setenv("https_proxy", env, 1);
	setenv("http_proxy", env, 1);
	unsetenv("no_proxy");
	unsetenv("NO_PROXY");
	assert_int_equal(bc_client_post(&tls.pins, "/healthz", "", 0, &r, err, sizeof(err)), 0);
	assert_int_equal(r.status, 405);
	free(r.body);
	assert_int_equal(bc_client_post(&cp.pins, "/healthz", "", 0, &r, err, sizeof(err)), 0);
	assert_int_equal(r.status, 405);
	free(r.body);
	unsetenv("https_proxy");
	unsetenv("http_proxy");
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	snprintf(path, sizeof(path), "%s/requests", dir);
	assert_non_null(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	/* the one request it saw: the tunnel to the TLS replica */
	snprintf(want, sizeof(want), "CONNECT %s HTTP/1.1\n", hp);
	assert_string_equal(buf, want);
	bct_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_joins_and_renews_over_tls),
	    cmocka_unit_test(test_a_bundle_without_the_servers_ca_is_refused),
	    cmocka_unit_test(test_a_cut_answer_is_an_error),
	    cmocka_unit_test(test_an_answer_the_reader_refuses),
	    cmocka_unit_test(test_a_closed_port_is_unavailable),
	    cmocka_unit_test(test_https_goes_through_the_proxy),
	};
	int rc;

	if (bct_engine_skip())
		return BCT_SKIP;
	if (bct_cp_start(&cp, NULL) != 0)
		return 1;
	if (start_tls_replica() != 0) {
		fprintf(stderr, "cannot start the TLS replica\n");
		bct_cp_stop(&cp);
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	bct_cp_stop(&tls);
	bct_cp_stop(&cp);
	free(cert_pem);
	if (key_pem != NULL)
		bc_freezero(key_pem, strlen(key_pem));
	return rc;
}
