/* The swtpm the agent's unit tests run against (scripts/swtpm.sh: a manufacturer CA
 * of the test's own, EK certificate in NV), and a watcher child that stops it when the
 * test process ends however it ends (an abort under a sanitizer included).
 *
 * Included by one test program each (static state): after agent_swtpm_start(), dir is
 * the swtpm's directory, tcti its TCTI string and root_pem the manufacturer root.
 * agent_swtpm_run() runs the cmocka group between start and stop and returns the
 * program's exit status (77 when swtpm or tpm2-tools are missing). */
#ifndef AGENT_SWTPM_H
#define AGENT_SWTPM_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];
static char tcti[128];
static char root_pem[512];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *agent_swtpm_src(void)
{
	return getenv("BC_SOURCE_DIR") ? getenv("BC_SOURCE_DIR") : BC_SOURCE_DIR;
}

/* 0, 77 (skip: a message says what is missing) or 1. */
static int agent_swtpm_start(const char *test)
{
	char cmd[1024], line[1024];
	unsigned port = 0;
	FILE *p;
	int st;

	if (sh("command -v tpm2_createek >/dev/null && command -v tpm2_makecredential "
	       ">/dev/null") != 0) {
		fprintf(stderr, "%s: tpm2-tools missing: skipped\n", test);
		return 77;
	}
	snprintf(dir, sizeof(dir), "%s/bc-%s.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
	         test);
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(cmd, sizeof(cmd), "sh %s/scripts/swtpm.sh start %s/tpm", agent_swtpm_src(), dir);
	if ((p = popen(cmd, "r")) == NULL)
		return 1;
	line[0] = '\0';
	if (fgets(line, sizeof(line), p) == NULL)
		line[0] = '\0';
	st = pclose(p);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
		fprintf(stderr, "%s: swtpm missing: skipped\n", test);
		sh("rm -rf %s", dir);
		return 77;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    sscanf(line, "%u %511s", &port, root_pem) != 2)
		return 1;
	snprintf(tcti, sizeof(tcti), "swtpm:host=127.0.0.1,port=%u", port);
	setenv("TPM2TOOLS_TCTI", tcti, 1);
	/* tpm2-tss logs ERROR lines on normal paths (a missing NV index) */
	setenv("TSS2_LOG", "all+none", 1);
	return 0;
}

static void agent_swtpm_stop(void)
{
	sh("sh %s/scripts/swtpm.sh stop %s/tpm >/dev/null 2>&1; rm -rf %s", agent_swtpm_src(), dir,
	   dir);
}

static int agent_swtpm_run(const char *test, const struct CMUnitTest *tests, size_t n)
{
	int fds[2], rc;
	pid_t watcher;
	char c;

	if ((rc = agent_swtpm_start(test)) != 0)
		return rc;
	if (pipe2(fds, O_CLOEXEC) != 0 || (watcher = fork()) < 0) {
		agent_swtpm_stop();
		return 1;
	}
	if (watcher == 0) {
		/* the write end closes when the test process ends, however it ends */
		close(fds[1]);
		while (read(fds[0], &c, 1) > 0)
			;
		agent_swtpm_stop();
		_exit(0);
	}
	close(fds[0]);
	rc = _cmocka_run_group_tests(test, tests, n, NULL, NULL);
	close(fds[1]);
	waitpid(watcher, NULL, 0);
	return rc;
}

#endif
