/* Commands an operator configures (on_refusal, pcr_policy_command), run as
 * /bin/sh -c CMD with bytes on stdin.
 *
 * The command starts as any program would, whatever the caller's signal state:
 * posix_spawn with an empty signal mask and every signal at its default action (the
 * server blocks SIGTERM and SIGINT for sigwait() and ignores SIGPIPE; both would
 * otherwise survive exec). Its stdin is a socket fed with send(MSG_NOSIGNAL), so a
 * command that exits without reading cannot kill the caller with SIGPIPE. Every
 * descriptor made here is close-on-exec; the child gets only its stdin (and stdout
 * when captured) besides what the caller left inheritable. stderr is the caller's. */
#ifndef BC_PROC_H
#define BC_PROC_H

#include <stddef.h>

#include "bc/err.h"

/* Runs cmd with in[inlen] on stdin and waits for it, timeout_ms at most in all
 * (feeding stdin, reading stdout, waiting for the exit); past it the command is
 * killed (SIGKILL) and reaped, and the answer is BC_ERR_EXPIRED.
 * out NULL: stdout is the caller's. Otherwise up to outmax bytes of stdout land in
 * out[outmax + 1], NUL-terminated, *outlen their count; more is read and dropped.
 * *status is the waitpid() status (WIFEXITED, WEXITSTATUS...). A command that does
 * not read all of its stdin is not an error. BC_ERR_IO: could not start it. */
BC_WUR int bc_proc_run_sh(const char *cmd, const void *in, size_t inlen, int timeout_ms, char *out,
                          size_t outmax, size_t *outlen, int *status);

/* Starts cmd with in[inlen] on stdin (fed within timeout_ms, then closed) and
 * returns without waiting for it: a detached thread reaps it, so a slow command
 * never delays the caller. stdout is the caller's. BC_ERR_IO: could not start it. */
BC_WUR int bc_proc_start_sh(const char *cmd, const void *in, size_t inlen, int timeout_ms);

/* A bounded dispatcher of one command: at most `workers` copies run at once (each
 * waited for, killed past timeout_ms like bc_proc_run_sh), and at most `depth`
 * inputs wait for one. */
struct bc_proc_queue;
BC_WUR int bc_proc_queue_new(const char *cmd, unsigned workers, unsigned depth, int timeout_ms,
                             struct bc_proc_queue **out);
/* Queues a copy of in[inlen] and returns at once. BC_ERR_LIMIT: the queue is full
 * and the input dropped (the caller counts it). */
BC_WUR int bc_proc_queue_push(struct bc_proc_queue *q, const void *in, size_t inlen);
/* Drops what still waits, waits for the running commands, frees. */
void bc_proc_queue_free(struct bc_proc_queue *q);

#endif
