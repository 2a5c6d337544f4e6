/* Step 1 candidate measured through our own front end (src/server/http*.c): the same
 * "ok" answer as h2o_ok.c and mhdtls.c. usage: bc_ok PORT CERT|- KEY */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http.h"

static char *slurp(const char *p)
{
	static char b[2][16384];
	static int i;
	FILE *f = fopen(p, "r");
	size_t n;

	if (f == NULL)
		exit(1);
	n = fread(b[i], 1, sizeof(b[i]) - 1, f);
	b[i][n] = 0;
	fclose(f);
	return b[i++];
}

static void ok(void *ctx, const struct bc_http_request *req, struct bc_http_response *resp)
{
	(void)ctx;
	(void)req;
	bc_http_set_body(resp, 200, "text/plain", "ok", 2);
}

int main(int argc, char **argv)
{
	struct bc_http_config cfg = {0};
	struct bc_http *s = NULL;
	char listen[64], err[256];
	sigset_t set;
	int sig;

	if (argc < 4)
		return 2;
	snprintf(listen, sizeof(listen), "127.0.0.1:%s", argv[1]);
	cfg.listen = listen;
	cfg.threads = 8;
	if (strcmp(argv[2], "-") != 0) {
		cfg.tls_cert_pem = slurp(argv[2]);
		cfg.tls_key_pem = slurp(argv[3]);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (bc_http_start(&cfg, ok, NULL, &s, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	sigwait(&set, &sig);
	bc_http_stop(s);
	return 0;
}
