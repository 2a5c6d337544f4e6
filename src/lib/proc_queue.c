/* bc_proc_queue: a ring of waiting inputs and a fixed set of worker threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/log.h"
#include "bc/proc.h"

struct queued {
	void *p;
	size_t len;
};

struct bc_proc_queue {
	char *cmd;
	int timeout_ms;
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct queued *ring;
	unsigned depth, head, n;
	int stop;
	pthread_t *threads;
	unsigned n_threads;
};

/* Under lock: the oldest input, or 0 when none. */
static int pop(struct bc_proc_queue *q, struct queued *out)
{
	if (q->n == 0)
		return 0;
	*out = q->ring[q->head];
	q->head = (q->head + 1) % q->depth;
	q->n--;
	return 1;
}

static void *worker(void *arg)
{
	struct bc_proc_queue *q = arg;
	struct queued item = {0};
	int status, rc;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->stop && q->n == 0)
			pthread_cond_wait(&q->more, &q->lock);
		if (q->stop)
			break;
		(void)pop(q, &item);
		pthread_mutex_unlock(&q->lock);
		rc =
		    bc_proc_run_sh(q->cmd, item.p, item.len, q->timeout_ms, NULL, 0, NULL, &status);
		if (rc != 0)
			bc_log(BC_LOG_ERROR, "command did not run to its end", "command", q->cmd,
			       "error", bc_err_str(rc), NULL);
		free(item.p);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int bc_proc_queue_new(const char *cmd, unsigned workers, unsigned depth, int timeout_ms,
                      struct bc_proc_queue **out)
{
	struct bc_proc_queue *q;

	*out = NULL;
	if (cmd == NULL || workers == 0 || depth == 0)
		return BC_ERR_INVALID;
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return BC_ERR_NOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->more, NULL);
	q->timeout_ms = timeout_ms;
	q->depth = depth;
	if ((q->cmd = strdup(cmd)) == NULL || (q->ring = calloc(depth, sizeof(*q->ring))) == NULL ||
	    (q->threads = calloc(workers, sizeof(*q->threads))) == NULL) {
		bc_proc_queue_free(q);
		return BC_ERR_NOMEM;
	}
	for (; q->n_threads < workers; q->n_threads++)
		if (pthread_create(&q->threads[q->n_threads], NULL, worker, q) != 0) {
			bc_proc_queue_free(q);
			return BC_ERR_NOMEM;
		}
	*out = q;
	return 0;
}

int bc_proc_queue_push(struct bc_proc_queue *q, const void *in, size_t inlen)
{
	struct queued item = {.p = malloc(inlen ? inlen : 1), .len = inlen};
	int rc = 0;

	if (item.p == NULL)
		return BC_ERR_NOMEM;
	if (inlen)
		memcpy(item.p, in, inlen);
	pthread_mutex_lock(&q->lock);
	if (q->n == q->depth || q->stop) {
		rc = BC_ERR_LIMIT;
	} else {
		q->ring[(q->head + q->n) % q->depth] = item;
		q->n++;
		item.p = NULL;
		pthread_cond_signal(&q->more);
	}
	pthread_mutex_unlock(&q->lock);
	free(item.p);
	return rc;
}

void bc_proc_queue_free(struct bc_proc_queue *q)
{
	struct queued item;

	if (q == NULL)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = 1;
	pthread_cond_broadcast(&q->more);
	pthread_mutex_unlock(&q->lock);
	for (unsigned i = 0; i < q->n_threads; i++)
		pthread_join(q->threads[i], NULL);
	while (q->ring && pop(q, &item))
		free(item.p);
	free(q->threads);
	free(q->ring);
	free(q->cmd);
	pthread_cond_destroy(&q->more);
	pthread_mutex_destroy(&q->lock);
	free(q);
}
