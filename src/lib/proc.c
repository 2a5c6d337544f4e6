/* /bin/sh -c commands with their input on stdin: one spawn for every caller. */
#include "bc/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bc/clock.h"

extern char **environ;

struct child {
	pid_t pid;
	int in;  /* our end of its stdin, -1 once closed */
	int out; /* our end of its stdout, or -1 */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* own_group: the child leads a new process group, so that a timeout kills what the
 * command started too, not only the shell. */
static int spawn_attr(posix_spawnattr_t *a, int own_group)
{
	short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
	sigset_t none, all;

	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	if (posix_spawnattr_init(a) != 0)
		return BC_ERR_NOMEM;
	if (own_group)
		flags |= POSIX_SPAWN_SETPGROUP;
	if (posix_spawnattr_setflags(a, flags) != 0 || posix_spawnattr_setpgroup(a, 0) != 0 ||
	    posix_spawnattr_setsigmask(a, &none) != 0 ||
	    posix_spawnattr_setsigdefault(a, &all) != 0) {
		posix_spawnattr_destroy(a);
		return BC_ERR_INTERNAL;
	}
	return 0;
}

/* c->pid running cmd, stdin from c->in, stdout into c->out when capture (the
 * waited-for case: in a process group of its own). */
static int spawn_sh(const char *cmd, int capture, struct child *c)
{
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	int in[2] = {-1, -1}, out[2] = {-1, -1}, rc;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;

	c->pid = -1;
	c->in = c->out = -1;
	if (cmd == NULL)
		return BC_ERR_INVALID;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 ||
	    (capture && pipe2(out, O_CLOEXEC) != 0)) {
		rc = BC_ERR_IO;
		goto out;
	}
	if ((rc = spawn_attr(&attr, capture)) != 0)
		goto out;
	if (posix_spawn_file_actions_init(&fa) != 0) {
		posix_spawnattr_destroy(&attr);
		rc = BC_ERR_NOMEM;
		goto out;
	}
	/* dup2 clears close-on-exec on 0 and 1 only */
	rc = posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	if (rc == 0 && capture)
		rc = posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	if (rc == 0)
		rc = posix_spawn(&c->pid, "/bin/sh", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		c->pid = -1;
		errno = rc;
		rc = BC_ERR_IO;
		goto out;
	}
	c->in = in[1];
	c->out = out[0];
	in[1] = out[0] = -1;
out:
	for (int i = 0; i < 2; i++) {
		close_fd(&in[i]);
		close_fd(&out[i]);
	}
	return rc;
}

static int left_ms(int64_t deadline)
{
	int64_t left = deadline - bc_now_ms();

	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Feeds stdin and drains stdout together (a command may answer before it reads all
 * of its input) until stdout ends, or stdin is done when stdout is not captured. */
static int exchange(struct child *c, const char *in, size_t inlen, int64_t deadline, char *out,
                    size_t outmax, size_t *outlen)
{
	char drop[512];
	size_t off = 0;
	ssize_t n;

	if (inlen == 0)
		close_fd(&c->in);
	while (c->in >= 0 || c->out >= 0) {
		struct pollfd p[2] = {{c->in, POLLOUT, 0}, {c->out, POLLIN, 0}};
		int r, ms = left_ms(deadline);
		if (ms == 0)
			return BC_ERR_EXPIRED;
		if ((r = poll(p, 2, ms)) < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return BC_ERR_IO;
		if (c->in >= 0 && p[0].revents != 0) {
			n = send(c->in, in + off, inlen - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0)
				off += (size_t)n;
			/* the command need not read all of its input */
			if (off == inlen || (n < 0 && errno != EINTR && errno != EAGAIN))
				close_fd(&c->in);
		}
		if (c->out >= 0 && p[1].revents != 0) {
			if (*outlen < outmax)
				n = read(c->out, out + *outlen, outmax - *outlen);
			else
				n = read(c->out, drop, sizeof(drop));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				close_fd(&c->out);
			else if (*outlen < outmax)
				*outlen += (size_t)n;
		}
	}
	return 0;
}

/* Reaps pid by the deadline, or kills it (and its group) then reaps it. */
static int reap(pid_t pid, int own_group, int64_t deadline, int *status)
{
	pid_t r;

	for (;;) {
		if ((r = waitpid(pid, status, WNOHANG)) == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return BC_ERR_IO;
		if (left_ms(deadline) == 0)
			break;
		poll(NULL, 0, 5);
	}
	kill(own_group ? -pid : pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return BC_ERR_EXPIRED;
}

int bc_proc_run_sh(const char *cmd, const void *in, size_t inlen, int timeout_ms, char *out,
                   size_t outmax, size_t *outlen, int *status)
{
	int64_t deadline = bc_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	size_t dummy = 0;
	struct child c;
	int rc, r;

	*status = 0;
	if (outlen == NULL)
		outlen = &dummy;
	*outlen = 0;
	if (out != NULL)
		out[0] = '\0';
	if ((rc = spawn_sh(cmd, out != NULL, &c)) != 0)
		return rc;
	rc = exchange(&c, in, inlen, deadline, out, outmax, outlen);
	close_fd(&c.in);
	close_fd(&c.out);
	if (rc != 0)
		deadline = 0; /* kill it now */
	r = reap(c.pid, out != NULL, deadline, status);
	if (rc == 0)
		rc = r;
	if (out != NULL)
		out[*outlen] = '\0';
	return rc;
}

static void *reaper(void *arg)
{
	pid_t pid = (pid_t)(intptr_t)arg;

	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return NULL;
}

int bc_proc_start_sh(const char *cmd, const void *in, size_t inlen, int timeout_ms)
{
	int64_t deadline = bc_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	size_t none = 0;
	pthread_attr_t a;
	pthread_t t;
	struct child c;
	int rc;

	if ((rc = spawn_sh(cmd, 0, &c)) != 0)
		return rc;
	/* a command too slow to take its input still gets what was sent, then EOF */
	(void)exchange(&c, in, inlen, deadline, NULL, 0, &none);
	close_fd(&c.in);
	if (pthread_attr_init(&a) == 0) {
		if (pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
		    pthread_create(&t, &a, reaper, (void *)(intptr_t)c.pid) == 0)
			c.pid = -1;
		pthread_attr_destroy(&a);
	}
	/* no thread: wait here rather than leave a zombie */
	if (c.pid > 0)
		(void)reaper((void *)(intptr_t)c.pid);
	return 0;
}
