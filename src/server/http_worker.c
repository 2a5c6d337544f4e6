/* The workers: each takes a request read whole from the queue, runs the handler (which
 * may block on the store for as long as a transaction takes), makes the answer's bytes
 * and hands the connection back to the loop to write them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bc/log.h"
#include "server/http_internal.h"

static const char JSON_TYPE[] = "application/json";
static const char TOO_MANY_ARGS[] =
    "{\"code\":\"invalid_argument\",\"message\":\"too many query arguments\"}";

void http_queue_push(struct bc_http *s, struct http_conn *c)
{
	pthread_mutex_lock(&s->qlock);
	c->qnext = NULL;
	if (s->q_tail)
		s->q_tail->qnext = c;
	else
		s->q_head = c;
	s->q_tail = c;
	pthread_mutex_unlock(&s->qlock);
	/* signalled after the unlock: a worker woken while the lock is still held would
	 * only block on it again (two switches for one hand-off when the server has one
	 * CPU) */
	pthread_cond_signal(&s->qcond);
}

static struct http_conn *queue_pop(struct bc_http *s)
{
	struct http_conn *c;

	pthread_mutex_lock(&s->qlock);
	while (s->q_head == NULL && !s->workers_stop)
		pthread_cond_wait(&s->qcond, &s->qlock);
	if ((c = s->q_head) != NULL) {
		s->q_head = c->qnext;
		if (s->q_head == NULL)
			s->q_tail = NULL;
		c->qnext = NULL;
	}
	pthread_mutex_unlock(&s->qlock);
	return c;
}

/* The loop is woken only when the done list was empty: otherwise a wake-up is pending
 * and it takes the whole list then (one system call, not one per answer, under load). */
static void hand_back(struct bc_http *s, struct http_conn *c)
{
	uint64_t one = 1;
	int was_empty;

	pthread_mutex_lock(&s->dlock);
	was_empty = s->done_head == NULL;
	c->qnext = s->done_head;
	s->done_head = c;
	pthread_mutex_unlock(&s->dlock);
	if (was_empty && write(s->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is full: the loop has a wake-up pending anyway */
	}
}

/* access_log: one line per answered request, from its last byte read to its answer */
static void access_line(struct bc_http *s, const struct http_conn *c, int status, uint64_t t0)
{
	char st[8], ms[24];

	if (!s->access_log)
		return;
	snprintf(st, sizeof(st), "%d", status);
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)(http_mono_ms() - t0));
	bc_log(BC_LOG_INFO, "request", "client", c->peer, "method", c->head.method, "path",
	       c->head.path, "status", st, "duration_ms", ms, NULL);
}

static void run_handler(struct bc_http *s, struct http_conn *c, struct bc_http_response *resp)
{
	const char *keys[HTTP_MAX_QUERY], *vals[HTTP_MAX_QUERY];
	struct bc_http_request req = {0};
	uint64_t now = http_mono_ms();

	if (http_parse_query(c->head.query, keys, vals, HTTP_MAX_QUERY, &req.n_query) != 0) {
		bc_http_set_body(resp, 400, JSON_TYPE, TOO_MANY_ARGS, sizeof(TOO_MANY_ARGS) - 1);
		return;
	}
	/* a connection's first request: how long since it was accepted (the server's own
	 * queue); later ones on a kept-alive connection 0, their idle time the client's */
	req.queued_ms = c->fresh && now > c->accepted_ms ? now - c->accepted_ms : 0;
	req.method = c->head.method;
	req.path = c->head.path;
	req.content_type = c->head.content_type;
	req.authorization = c->head.authorization;
	req.body = c->body.p;
	req.body_len = c->body.len;
	req.peer = c->peer;
	req.query_keys = keys;
	req.query_vals = vals;
	/* every line the handler logs (a refusal's) names the client */
	bc_log_set_client(c->peer);
	s->handler(s->ctx, &req, resp);
	bc_log_set_client(NULL);
	if (resp->status < 100 || resp->status > 599) {
		bc_freezero(resp->body, resp->body_len);
		resp->body = NULL;
		resp->body_len = 0;
		resp->status = 500;
	}
}

static void serve_one(struct bc_http *s, struct http_conn *c)
{
	struct bc_http_response resp = {0};
	uint64_t t0 = http_mono_ms();

	run_handler(s, c, &resp);
	access_line(s, c, resp.status, t0);
	c->close_after = !c->head.keep_alive;
	http_answer_bytes(resp.status, resp.content_type, resp.body, resp.body_len, c->close_after,
	                  resp.retry_after_s, strcmp(c->head.method, "HEAD") == 0, &c->out,
	                  &c->out_len);
	c->out_off = 0;
	bc_freezero(resp.body, resp.body_len);
	hand_back(s, c);
}

void *http_worker_main(void *arg)
{
	struct bc_http *s = arg;
	struct http_conn *c;

	while ((c = queue_pop(s)) != NULL)
		serve_one(s, c);
	return NULL;
}
