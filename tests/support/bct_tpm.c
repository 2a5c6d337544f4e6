#include "bct_tpm.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bctest.h"

static int have(const char *prog)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static int port_free(unsigned port)
{
	struct sockaddr_in a;
	int s = socket(AF_INET, SOCK_STREAM, 0), ok;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

/* An ephemeral port whose successor (swtpm's control channel) is free too. */
static unsigned free_port_pair(void)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_in a;
		socklen_t al = sizeof(a);
		int s = socket(AF_INET, SOCK_STREAM, 0);
		unsigned p = 0;
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    getsockname(s, (struct sockaddr *)&a, &al) == 0)
			p = ntohs(a.sin_port);
		if (s >= 0)
			close(s);
		if (p && p < 65535 && port_free(p) && port_free(p + 1))
			return p;
	}
	return 0;
}

static int run(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int bct_tpm_start(struct bct_tpm *t)
{
	char *d, cmd[4096], tcti[128];
	FILE *f;

	memset(t, 0, sizeof(*t));
	if (!have("swtpm") || !have("swtpm_setup") || !have("swtpm_localca") ||
	    !have("tpm2_createak") || !have("tpm2_send")) {
		printf("skipped: swtpm, swtpm-tools or tpm2-tools not installed\n");
		return 77;
	}
	if ((d = bct_tmpdir()) == NULL)
		return -1;
	snprintf(t->dir, sizeof(t->dir), "%s", d);
	free(d);
	snprintf(t->root_pem, sizeof(t->root_pem), "%s/ca/swtpm-localca-rootca-cert.pem", t->dir);
	snprintf(cmd, sizeof(cmd), "%s/swtpm_setup.conf", t->dir);
	if ((f = fopen(cmd, "w")) == NULL)
		return -1;
	fprintf(f,
	        "create_certs_tool = /usr/bin/swtpm_localca\n"
	        "create_certs_tool_config = %s/swtpm-localca.conf\n"
	        "create_certs_tool_options = %s/swtpm-localca.options\n",
	        t->dir, t->dir);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/swtpm-localca.conf", t->dir);
	if ((f = fopen(cmd, "w")) == NULL)
		return -1;
	fprintf(f,
	        "statedir = %s/ca\nsigningkey = %s/ca/signkey.pem\n"
	        "issuercert = %s/ca/issuercert.pem\ncertserial = %s/ca/certserial\n",
	        t->dir, t->dir, t->dir, t->dir);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/swtpm-localca.options", t->dir);
	if ((f = fopen(cmd, "w")) == NULL)
		return -1;
	fprintf(f, "--platform-manufacturer Test\n--platform-version 2.1\n--platform-model Test\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd),
	         "cd %s && mkdir -p ca state && swtpm_setup --tpm2 --tpmstate %s/state "
	         "--create-ek-cert --create-platform-cert --config %s/swtpm_setup.conf "
	         "--overwrite >setup.log 2>&1",
	         t->dir, t->dir, t->dir);
	if (run(cmd) != 0) {
		fprintf(stderr, "bct_tpm: swtpm_setup failed (%s/setup.log)\n", t->dir);
		return -1;
	}
	for (int attempt = 0; attempt < 5; attempt++) {
		if ((t->port = free_port_pair()) == 0)
			return -1;
		snprintf(cmd, sizeof(cmd),
		         "swtpm socket --tpm2 --tpmstate dir=%s/state --server type=tcp,port=%u "
		         "--ctrl type=tcp,port=%u --flags not-need-init,startup-clear --daemon "
		         "--pid file=%s/swtpm.pid >%s/swtpm.log 2>&1",
		         t->dir, t->port, t->port + 1, t->dir, t->dir);
		if (run(cmd) == 0)
			break;
		t->port = 0;
	}
	if (t->port == 0)
		return -1;
	snprintf(tcti, sizeof(tcti), "swtpm:host=127.0.0.1,port=%u", t->port);
	setenv("TPM2TOOLS_TCTI", tcti, 1);
	return bct_tpm_sh(t, "tpm2_getcap properties-fixed >/dev/null") == 0 ? 0 : -1;
}

void bct_tpm_stop(struct bct_tpm *t)
{
	char path[300];
	size_t n = 0;
	uint8_t *pid;

	if (t->dir[0] == 0)
		return;
	snprintf(path, sizeof(path), "swtpm.pid");
	if ((pid = bct_tpm_read(t, path, &n)) != NULL) {
		pid_t p = (pid_t)atoi((char *)pid);
		/* swtpm writes its state as it stops: wait for it, or the directory stays */
		if (p > 1 && kill(p, SIGTERM) == 0)
			for (int i = 0; i < 200 && kill(p, 0) == 0; i++)
				usleep(10000);
		free(pid);
	}
	bct_rmrf(t->dir);
	t->dir[0] = 0;
}

int bct_tpm_sh(struct bct_tpm *t, const char *fmt, ...)
{
	char body[4096], cmd[5000];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd),
	         "cd %s && { %s ; } >>log 2>&1; r=$?; tpm2_flushcontext -t >/dev/null 2>&1; "
	         "tpm2_flushcontext -s >/dev/null 2>&1; exit $r",
	         t->dir, body);
	return run(cmd);
}

uint8_t *bct_tpm_read(struct bct_tpm *t, const char *name, size_t *len)
{
	char path[600];
	uint8_t *p = NULL;
	long n;
	FILE *f;

	*len = 0;
	snprintf(path, sizeof(path), "%s/%s", t->dir, name);
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (p = malloc((size_t)n + 1)) != NULL) {
		if (fread(p, 1, (size_t)n, f) != (size_t)n) {
			free(p);
			p = NULL;
		} else {
			p[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return p;
}

int bct_tpm_write(struct bct_tpm *t, const char *name, const void *p, size_t len)
{
	char path[600];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", t->dir, name);
	if ((f = fopen(path, "wb")) == NULL)
		return -1;
	ok = fwrite(p, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

char *bct_hex(const uint8_t *p, size_t len)
{
	char *s = malloc(2 * len + 1);
	for (size_t i = 0; s && i < len; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	if (s)
		s[2 * len] = 0;
	return s;
}
