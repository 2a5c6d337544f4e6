/* Server CPU per fresh connection + request: N requests from C threads, each on a new
 * connection (TLS: a full handshake, no resumption; one SSL_CTX per thread), server CPU
 * from /proc/PID/stat around the run. usage: tls_cpu HOST PORT N C PID tls|plain [PATH] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in addr;
static int n_per, tls;
static const char *path = "/";
static int failures;

static long ticks(int pid)
{
	char p[64], b[1024];
	long ut, st;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	if ((f = fopen(p, "r")) == NULL || fgets(b, sizeof(b), f) == NULL)
		exit(1);
	fclose(f);
	/* fields 14, 15 after the ")" */
	sscanf(strrchr(b, ')') + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut,
	       &st);
	return ut + st;
}

static int one(SSL_CTX *ctx)
{
	char req[256], buf[4096];
	int fd = socket(AF_INET, SOCK_STREAM, 0), n, got = 0, on = 1;
	SSL *s = NULL;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
		goto fail;
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	if (tls) {
		s = SSL_new(ctx);
		SSL_set_fd(s, fd);
		if (SSL_connect(s) != 1 || SSL_write(s, req, (int)strlen(req)) <= 0)
			goto fail;
		while ((n = SSL_read(s, buf, sizeof(buf))) > 0)
			got += n;
	} else {
		if (write(fd, req, strlen(req)) < 0)
			goto fail;
		while ((n = (int)read(fd, buf, sizeof(buf))) > 0)
			got += n;
	}
	SSL_free(s);
	close(fd);
	return got > 12 ? 0 : -1;
fail:
	SSL_free(s);
	close(fd);
	return -1;
}

static void *worker(void *arg)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	(void)arg;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	for (int i = 0; i < n_per; i++)
		if (one(ctx) != 0)
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	SSL_CTX_free(ctx);
	return NULL;
}

int main(int argc, char **argv)
{
	int n, c, pid;
	long t0, t1;
	struct timespec w0, w1;
	pthread_t th[256];

	if (argc < 7)
		return 2;
	addr.sin_family = AF_INET;
	inet_pton(AF_INET, argv[1], &addr.sin_addr);
	addr.sin_port = htons((unsigned short)atoi(argv[2]));
	n = atoi(argv[3]);
	c = atoi(argv[4]);
	pid = atoi(argv[5]);
	tls = strcmp(argv[6], "tls") == 0;
	if (argc > 7)
		path = argv[7];
	n_per = n / c;
	t0 = ticks(pid);
	clock_gettime(CLOCK_MONOTONIC, &w0);
	for (int i = 0; i < c; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < c; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	t1 = ticks(pid);
	printf("ops=%d failures=%d server_cpu_ms_per_op=%.3f wall_s=%.2f\n", n_per * c, failures,
	       (double)(t1 - t0) * 1000.0 / sysconf(_SC_CLK_TCK) / (n_per * c),
	       (w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) / 1e9);
	return failures != 0;
}
