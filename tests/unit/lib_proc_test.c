/* bc/proc.h: the child starts with a clean signal state, its stdin cannot kill us,
 * its status and stdout come back, and the time bound holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/proc.h"

#define ZEROS "0000000000000000"

static void test_signal_state_reset(void **state)
{
	sigset_t term, old;
	struct sigaction ign = {.sa_handler = SIG_IGN}, was;
	unsigned long long ignored;
	char out[256];
	size_t len;
	int status;

	(void)state;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	assert_int_equal(sigprocmask(SIG_BLOCK, &term, &old), 0);
	assert_int_equal(sigaction(SIGUSR1, &ign, &was), 0);
	assert_int_equal(sigaction(SIGPIPE, &ign, NULL), 0);
	assert_int_equal(bc_proc_run_sh("grep -E '^Sig(Blk|Ign)' /proc/self/status", NULL, 0, 5000,
	                                out, sizeof(out) - 1, &len, &status),
	                 0);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	assert_int_equal(sigaction(SIGUSR1, &was, NULL), 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(len, strlen(out));
	assert_int_equal(strncmp(out, "SigBlk:\t" ZEROS "\nSigIgn:\t", 25), 0);
	/* glibc keeps its own two signals (32, 33) out of reach: check ours */
	ignored = strtoull(out + 25, NULL, 16);
	assert_int_equal(ignored & (1ull << (SIGUSR1 - 1)), 0);
	assert_int_equal(ignored & (1ull << (SIGPIPE - 1)), 0);
}

static void test_stdin_and_status(void **state)
{
	char out[64];
	size_t len;
	int status;

	(void)state;
	assert_int_equal(bc_proc_run_sh("tr a-z A-Z; exit 3", "hello\n", 6, 5000, out,
	                                sizeof(out) - 1, &len, &status),
	                 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	assert_string_equal(out, "HELLO\n");

	/* stdout past outmax is read and dropped, so the command is not stuck */
	assert_int_equal(
	    bc_proc_run_sh("yes | head -c 100000", NULL, 0, 5000, out, 4, &len, &status), 0);
	assert_int_equal(len, 4);
	assert_string_equal(out, "y\ny\n");
	assert_int_equal(WEXITSTATUS(status), 0);

	assert_int_equal(bc_proc_run_sh("kill -9 $$", NULL, 0, 5000, NULL, 0, NULL, &status), 0);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_child_ignores_stdin(void **state)
{
	size_t big = 4u << 20, len;
	char *in = malloc(big), out[8];
	struct sigaction dfl = {.sa_handler = SIG_DFL}, was;
	int status;

	(void)state;
	assert_non_null(in);
	memset(in, 'x', big);
	/* SIGPIPE at its default: a write to the closed stdin would end this test */
	assert_int_equal(sigaction(SIGPIPE, &dfl, &was), 0);
	assert_int_equal(
	    bc_proc_run_sh("exit 7", in, big, 5000, out, sizeof(out) - 1, &len, &status), 0);
	assert_int_equal(WEXITSTATUS(status), 7);
	assert_int_equal(bc_proc_start_sh("exec 0<&-; sleep 0.1", in, big, 2000), 0);
	assert_int_equal(sigaction(SIGPIPE, &was, NULL), 0);
	free(in);
}

static void test_timeout(void **state)
{
	int64_t t0 = bc_now_ms();
	char out[8];
	size_t len;
	int status;

	(void)state;
	assert_int_equal(
	    bc_proc_run_sh("sleep 10", NULL, 0, 200, out, sizeof(out) - 1, &len, &status),
	    BC_ERR_EXPIRED);
	assert_true(bc_now_ms() - t0 < 5000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* a command that holds stdout open past the bound */
	assert_int_equal(bc_proc_run_sh("echo hi; exec sleep 10", NULL, 0, 200, out,
	                                sizeof(out) - 1, &len, &status),
	                 BC_ERR_EXPIRED);
}

static void test_start_does_not_wait(void **state)
{
	char dir[] = "/tmp/bc_proc_test.XXXXXX", cmd[512], path[64];
	int64_t t0;
	FILE *f;
	char got[64] = "";

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/in", dir);
	snprintf(cmd, sizeof(cmd), "sleep 0.3; cat > %s.tmp && mv %s.tmp %s", path, path, path);
	t0 = bc_now_ms();
	assert_int_equal(bc_proc_start_sh(cmd, "{\"reason\":\"x\"}", 14, 1000), 0);
	assert_true(bc_now_ms() - t0 < 250);
	for (int i = 0; i < 500 && access(path, F_OK) != 0; i++)
		usleep(10000);
	assert_non_null(f = fopen(path, "r"));
	assert_non_null(fgets(got, sizeof(got), f));
	fclose(f);
	assert_string_equal(got, "{\"reason\":\"x\"}");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_signal_state_reset),  cmocka_unit_test(test_stdin_and_status),
	    cmocka_unit_test(test_child_ignores_stdin), cmocka_unit_test(test_timeout),
	    cmocka_unit_test(test_start_does_not_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
