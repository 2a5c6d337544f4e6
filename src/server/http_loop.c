/* The event loop: accepts, runs TLS handshakes, reads requests and writes answers, all
 * waiting on the socket (epoll, level-triggered): a handshake or a request that trickles
 * costs a wake-up per arrival and nothing between, whatever the client's round trip.
 * A request read whole goes to a worker (http_worker.c); the loop never runs the
 * handler. The deadlines are checked here, once a second (HTTP_REAP_MS). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "bc/log.h"
#include "server/http_internal.h"

#define HTTP_REAP_MS    1000
#define HTTP_SUMMARY_MS 60000
/* The request deadline when connections run short, at the least. */
#define HTTP_MIN_DEADLINE_MS 1000
/* A connection that sends nothing at all, and an answer the client does not read. */
#define HTTP_IDLE_MS 30000
/* How long a closing connection's last bytes are read before it is closed. */
#define HTTP_LINGER_MS 2000
/* A streamed (chunked) body over its cap is read and dropped so that the 413 reaches
 * the client; past this many dropped bytes the connection is closed. */
#define HTTP_MAX_DISCARD (1024u * 1024)
/* Accepts per wake-up, so that a flood of connections leaves room for the others. */
#define HTTP_ACCEPT_BURST 64
/* After EMFILE: the listen socket rests this long (a level-triggered socket with a
 * connection we cannot take would wake the loop without end). */
#define HTTP_ACCEPT_PAUSE_MS 100

static const char JSON_TYPE[] = "application/json";
static const char BODY_TOO_LARGE[] =
    "{\"code\":\"resource_exhausted\",\"message\":\"request body too large\"}";
static const char STOPPING[] = "{\"code\":\"unavailable\",\"message\":\"server is stopping\"}";
static const char CONTINUE[] = "HTTP/1.1 100 Continue\r\n\r\n";

static void conn_read(struct http_conn *c);
static void conn_write(struct http_conn *c);

/* ---- counted lines ---- */

/* A connection that ended in an error: the first of each minute is logged, the others
 * counted into the summary. */
static void note(struct bc_http *s, const char *what, const char *peer)
{
	if (s->counts.lines++ != 0)
		return;
	snprintf(s->first_line, sizeof(s->first_line), "%s (client %s)", what, peer);
	bc_log(BC_LOG_WARN, "http", "detail", s->first_line, NULL);
}

static void log_summary(struct bc_http *s, uint64_t now)
{
	char reaped[24], budget[24], lines[24];
	struct http_counts c = s->counts;

	s->window_start_ms = now;
	memset(&s->counts, 0, sizeof(s->counts));
	if (c.reaped == 0 && c.over_budget == 0 && c.lines <= 1)
		return;
	snprintf(reaped, sizeof(reaped), "%lu", c.reaped);
	snprintf(budget, sizeof(budget), "%lu", c.over_budget);
	snprintf(lines, sizeof(lines), "%lu", c.lines);
	bc_log(BC_LOG_WARN, "http connections closed in the last minute", "deadline", reaped,
	       "bodyBudget", budget, "messages", lines, "firstMessage", s->first_line, NULL);
}

/* ---- per-address counts ---- */

static void addr_key(const struct sockaddr_storage *sa, uint8_t key[17])
{
	memset(key, 0, 17);
	key[0] = (uint8_t)sa->ss_family;
	if (sa->ss_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->ss_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static unsigned addr_bucket(const uint8_t key[17])
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (int i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	return h % HTTP_ADDR_BUCKETS;
}

/* The entry of this address, made at count 0 when new; NULL without memory. */
static struct http_addr *addr_get(struct bc_http *s, const struct sockaddr_storage *sa)
{
	uint8_t key[17];
	struct http_addr *a;
	unsigned b;

	addr_key(sa, key);
	b = addr_bucket(key);
	for (a = s->addrs[b]; a != NULL; a = a->next)
		if (memcmp(a->key, key, 17) == 0)
			return a;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	memcpy(a->key, key, 17);
	a->next = s->addrs[b];
	s->addrs[b] = a;
	return a;
}

static void addr_put(struct bc_http *s, struct http_addr *a)
{
	struct http_addr **pp;

	if (a == NULL || --a->count > 0)
		return;
	for (pp = &s->addrs[addr_bucket(a->key)]; *pp != NULL; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			free(a);
			return;
		}
}

/* Bytes received on the connection: read by us (TLS: by OpenSSL, handshake included) and
 * waiting in the socket. */
static uint64_t conn_rx_read(struct http_conn *c)
{
	return c->ssl != NULL ? (uint64_t)BIO_number_read(SSL_get_rbio(c->ssl)) : c->rx;
}

static uint64_t conn_rx(struct http_conn *c)
{
	uint64_t n = conn_rx_read(c);
	int waiting = 0;

	if (ioctl(c->fd, FIONREAD, &waiting) == 0 && waiting > 0)
		n += (uint64_t)waiting;
	return n;
}

/* Still sending its request: a handshake, a request (or the wait for one) not read
 * whole, or a body after 100 Continue. Busy, answered and closing ones are served. */
static int conn_evictable(const struct http_conn *c)
{
	return c->st == CS_HANDSHAKE || c->st == CS_READ || (c->st == CS_WRITE && c->interim);
}

struct http_conn *http_evict_choice(struct http_addr *a)
{
	struct http_conn *best = NULL, *c;
	uint64_t best_rx = 0;

	/* newest first: "<=" leaves the oldest of equals */
	for (c = a->conns; c != NULL; c = c->anext) {
		uint64_t rx;

		if (!conn_evictable(c))
			continue;
		rx = conn_rx(c) - c->rx_base;
		if (best == NULL || rx <= best_rx) {
			best = c;
			best_rx = rx;
		}
	}
	return best;
}

static void addr_link(struct http_addr *a, struct http_conn *c)
{
	c->addr = a;
	c->aprev = NULL;
	c->anext = a->conns;
	if (a->conns != NULL)
		a->conns->aprev = c;
	a->conns = c;
}

static void addr_unlink(struct http_conn *c)
{
	struct http_addr *a = c->addr;

	if (a == NULL)
		return;
	if (c->aprev != NULL)
		c->aprev->anext = c->anext;
	else
		a->conns = c->anext;
	if (c->anext != NULL)
		c->anext->aprev = c->aprev;
	c->aprev = c->anext = NULL;
}

/* ---- the connection's life ---- */

/* events 0: out of the epoll set (a busy connection must not wake the loop). */
static void conn_want(struct http_conn *c, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = c};
	int op = c->events == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;

	if (c->events == events)
		return;
	if (epoll_ctl(c->srv->epfd, op, c->fd, &ev) == 0)
		c->events = events;
}

static void body_release(struct http_conn *c)
{
	if (c->reserved)
		atomic_fetch_sub(&c->srv->body_bytes, c->reserved);
	c->reserved = 0;
	bc_buf_free(&c->body);
}

/* Forgets the request read or answered: the next one starts from nothing. */
static void request_reset(struct http_conn *c)
{
	http_head_free(&c->head);
	body_release(c);
	c->have_head = 0;
	c->body_left = 0;
	memset(&c->chunk, 0, sizeof(c->chunk));
	c->discarded = 0;
	c->too_large = 0;
	c->authorized = 0;
	bc_freezero(c->out, c->out_len);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	c->interim = 0;
}

void http_conn_free(struct http_conn *c)
{
	request_reset(c);
	SSL_free(c->ssl);
	if (c->fd >= 0)
		close(c->fd);
	if (c->in != NULL)
		bc_freezero(c->in, HTTP_HEAD_MAX);
	free(c);
}

/* Out of the loop's lists and counts; its memory and descriptor are still there. */
static void conn_unlink(struct http_conn *c)
{
	struct bc_http *s = c->srv;

	if (c->counted)
		http_inflight_add(s, -1);
	/* out of the epoll set before the close: a child forked meanwhile (a hook) may
	 * hold a copy of the descriptor until it execs, and epoll keeps reporting a socket
	 * whose description is still open, with this freed connection as its data */
	conn_want(c, 0);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	addr_unlink(c);
	addr_put(s, c->addr);
	atomic_fetch_sub(&s->n_conns, 1);
}

static void conn_close(struct http_conn *c)
{
	conn_unlink(c);
	http_conn_free(c);
}

/* Closes c, another connection than the one whose event runs: the batch epoll_wait
 * returned may still hold an event naming c, so it is freed after the batch
 * (free_closed), and an event for it meanwhile does nothing (CS_CLOSED). */
static void conn_close_other(struct http_conn *c)
{
	struct bc_http *s = c->srv;

	conn_unlink(c);
	c->st = CS_CLOSED;
	c->qnext = s->closed;
	s->closed = c;
}

static void free_closed(struct bc_http *s)
{
	struct http_conn *c;

	while ((c = s->closed) != NULL) {
		s->closed = c->qnext;
		http_conn_free(c);
	}
}

/* ---- reading and writing the socket ---- */

/* > 0 bytes, 0 the end, -1 an error, -2 wait for the socket (*want: which way) */
static ssize_t io_read(struct http_conn *c, void *p, size_t n, uint32_t *want)
{
	ssize_t r;
	int e;

	*want = EPOLLIN;
	if (c->ssl == NULL) {
		r = recv(c->fd, p, n, 0);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -2 : -1;
		c->rx += (uint64_t)r;
		return r;
	}
	if ((r = SSL_read(c->ssl, p, (int)n)) > 0)
		return r;
	e = SSL_get_error(c->ssl, (int)r);
	ERR_clear_error();
	switch (e) {
	case SSL_ERROR_WANT_READ: return -2;
	case SSL_ERROR_WANT_WRITE: *want = EPOLLOUT; return -2;
	case SSL_ERROR_ZERO_RETURN: return 0;
	default: return -1;
	}
}

static ssize_t io_write(struct http_conn *c, const void *p, size_t n, uint32_t *want)
{
	ssize_t r;
	int e;

	*want = EPOLLOUT;
	if (c->ssl == NULL) {
		r = send(c->fd, p, n, MSG_NOSIGNAL);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -2 : -1;
		return r;
	}
	if ((r = SSL_write(c->ssl, p, (int)n)) > 0)
		return r;
	e = SSL_get_error(c->ssl, (int)r);
	ERR_clear_error();
	switch (e) {
	case SSL_ERROR_WANT_WRITE: return -2;
	case SSL_ERROR_WANT_READ: *want = EPOLLIN; return -2;
	default: return -1;
	}
}

/* ---- answers made by the loop itself ---- */

/* Starts writing bytes (taken; NULL: out of memory, the connection is closed). */
static void conn_send(struct http_conn *c, uint8_t *bytes, size_t len, int close_after)
{
	if (bytes == NULL) {
		conn_close(c);
		return;
	}
	c->out = bytes;
	c->out_len = len;
	c->out_off = 0;
	c->close_after = close_after;
	c->st = CS_WRITE;
	c->since_ms = http_mono_ms();
	conn_write(c);
}

static void answer_static(struct http_conn *c, int status, const char *json)
{
	uint8_t *out = NULL;
	size_t len = 0;

	http_answer_bytes(status, JSON_TYPE, (const uint8_t *)json, strlen(json), 1, 0,
	                  c->have_head && strcmp(c->head.method, "HEAD") == 0, &out, &len);
	conn_send(c, out, len, 1);
}

/* ---- a request, from its head to the worker ---- */

/* The most body this request may buffer: max_body once the authorize hook vouched
 * for it (asked only when the request may be larger than preauth_body), else
 * preauth_body. */
static size_t body_cap(struct bc_http *s, struct http_conn *c)
{
	const struct http_head *h = &c->head;

	if (s->preauth_body == 0 || s->max_body <= s->preauth_body)
		return s->max_body;
	if (!h->chunked && (!h->has_length || h->content_length <= s->preauth_body))
		return s->preauth_body;
	if (s->authorize && s->authorize(s->ctx, h->method, h->path, h->authorization) == 1) {
		c->authorized = 1;
		return s->max_body;
	}
	return s->preauth_body;
}

/* 0: read the body; else the request was answered (or the connection closed). */
static int begin_request(struct http_conn *c)
{
	struct bc_http *s = c->srv;
	size_t cap;

	if (atomic_load(&s->stopping)) {
		answer_static(c, 503, STOPPING);
		return -1;
	}
	cap = body_cap(s, c);
	if (c->head.has_length && c->head.content_length > cap) {
		answer_static(c, 413, BODY_TOO_LARGE);
		return -1;
	}
	bc_buf_init(&c->body, cap);
	c->body_left = c->head.has_length ? c->head.content_length : 0;
	/* the client waits for this before it sends the body */
	if (c->head.expect_continue && c->in_len == 0 && (c->body_left > 0 || c->head.chunked)) {
		uint8_t *b = malloc(sizeof(CONTINUE) - 1);

		if (b != NULL)
			memcpy(b, CONTINUE, sizeof(CONTINUE) - 1);
		c->interim = 1;
		conn_send(c, b, sizeof(CONTINUE) - 1, 0);
		return -1;
	}
	return 0;
}

/* Unauthenticated bodies share body_budget bytes: past it a request is dropped
 * (its connection closed) rather than buffered. */
static int body_reserve(struct http_conn *c, size_t n)
{
	struct bc_http *s = c->srv;
	size_t before;

	if (c->authorized || s->body_budget == 0)
		return 0;
	before = atomic_fetch_add(&s->body_bytes, n);
	if (before + n > s->body_budget) {
		atomic_fetch_sub(&s->body_bytes, n);
		return BC_ERR_LIMIT;
	}
	c->reserved += n;
	return 0;
}

/* Body bytes: kept, or past the cap counted and dropped. -1: the connection closed. */
static int take_body(struct http_conn *c, const char *p, size_t n)
{
	if (n == 0)
		return 0;
	if (!c->too_large && n <= c->body.max - c->body.len && body_reserve(c, n) != 0) {
		c->srv->counts.over_budget++;
		conn_close(c);
		return -1;
	}
	if (!c->too_large && bc_buf_put(&c->body, p, n) == 0)
		return 0;
	if (!c->too_large) {
		c->too_large = 1;
		body_release(c);
	}
	c->discarded += n;
	if (c->discarded > HTTP_MAX_DISCARD) {
		conn_close(c);
		return -1;
	}
	return 0;
}

static void consume(struct http_conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
}

/* The body bytes read so far: 1 when the body is whole, 0 when more is needed, -1 when
 * the connection was answered or closed. */
static int read_body(struct http_conn *c)
{
	size_t n = c->in_len, rest = 0;
	int r = 1;

	if (c->head.chunked) {
		if ((r = http_chunked_decode(&c->chunk, c->in, &n, &rest)) < 0) {
			answer_static(c, 400, HTTP_BAD_CHUNK);
			return -1;
		}
		if (take_body(c, c->in, n) != 0)
			return -1;
		/* what followed the body is the next request (pipelined) */
		memmove(c->in, c->in + n, rest);
		c->in_len = rest;
		return r;
	}
	if (n > c->body_left)
		n = (size_t)c->body_left;
	if (take_body(c, c->in, n) != 0)
		return -1;
	consume(c, n);
	c->body_left -= n;
	return c->body_left == 0;
}

static void dispatch(struct http_conn *c)
{
	struct bc_http *s = c->srv;

	if (c->too_large) {
		answer_static(c, 413, BODY_TOO_LARGE);
		return;
	}
	c->st = CS_BUSY;
	conn_want(c, 0);
	c->counted = 1;
	http_inflight_add(s, 1);
	http_queue_push(s, c);
}

/* What was read: 1 to read on, 0 when the connection moved on (a worker has it, an
 * answer is being written, or it was closed). */
static int process(struct http_conn *c)
{
	int status, r;
	const char *why;

	if (!c->have_head) {
		r = bc_http_parse_head(c->in, c->in_len, &c->head, &status, &why);
		if (r == 0)
			return 1;
		if (r < 0) {
			answer_static(c, status, why);
			return 0;
		}
		consume(c, (size_t)r);
		c->have_head = 1;
		if (begin_request(c) != 0)
			return 0;
	}
	if ((r = read_body(c)) < 0)
		return 0;
	if (r == 0)
		return 1;
	dispatch(c);
	return 0;
}

static void conn_read(struct http_conn *c)
{
	uint32_t want;
	ssize_t n;

	if (c->in == NULL && (c->in = malloc(HTTP_HEAD_MAX)) == NULL) {
		conn_close(c);
		return;
	}
	/* bytes already read (pipelined, or a body's start) come first */
	if (c->in_len > 0 && !process(c))
		return;
	for (;;) {
		/* process() leaves a full buffer only with a head over the limit (answered);
		 * never read 0 bytes, which would look like the end of the stream */
		if (c->in_len == HTTP_HEAD_MAX) {
			answer_static(c, 431, HTTP_HEAD_TOO_LARGE);
			return;
		}
		n = io_read(c, c->in + c->in_len, HTTP_HEAD_MAX - c->in_len, &want);
		if (n == -2) {
			conn_want(c, want);
			return;
		}
		if (n <= 0) {
			if (c->in_len > 0 || c->have_head)
				note(c->srv, "the client closed its connection mid-request",
				     c->peer);
			conn_close(c);
			return;
		}
		c->last_read_ms = http_mono_ms();
		c->in_len += (size_t)n;
		if (!process(c))
			return;
	}
}

/* ---- after an answer ---- */

static void linger_read(struct http_conn *c)
{
	char junk[4096];

	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(c->fd, junk, sizeof(junk), 0);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			break;
	}
	conn_close(c);
}

/* The answer was written: the next request, or a close that lets the client read the
 * answer (its unread bytes would turn our close into a reset). */
static void answered(struct http_conn *c)
{
	uint64_t now = http_mono_ms();

	if (c->counted) {
		c->counted = 0;
		http_inflight_add(c->srv, -1);
	}
	request_reset(c);
	c->since_ms = now;
	c->fresh = 0;
	/* the next request's progress counts from here (pipelined bytes read already
	 * are read on at once, below) */
	c->rx_base = conn_rx_read(c) - c->in_len;
	if (c->close_after) {
		if (c->ssl != NULL)
			(void)SSL_shutdown(c->ssl);
		ERR_clear_error();
		(void)shutdown(c->fd, SHUT_WR);
		c->st = CS_LINGER;
		conn_want(c, EPOLLIN);
		linger_read(c);
		return;
	}
	c->st = CS_READ;
	conn_read(c);
}

static void conn_write(struct http_conn *c)
{
	uint32_t want;
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = io_write(c, c->out + c->out_off, c->out_len - c->out_off, &want);
		if (n == -2) {
			conn_want(c, want);
			return;
		}
		if (n < 0) {
			note(c->srv, "the client went away before its answer was written", c->peer);
			conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	if (c->interim) {
		bc_freezero(c->out, c->out_len);
		c->out = NULL;
		c->out_len = c->out_off = 0;
		c->interim = 0;
		c->st = CS_READ;
		conn_read(c);
		return;
	}
	answered(c);
}

static void handshake(struct http_conn *c)
{
	int r = SSL_accept(c->ssl), e;

	if (r == 1) {
		c->st = CS_READ;
		conn_read(c);
		return;
	}
	e = SSL_get_error(c->ssl, r);
	ERR_clear_error();
	switch (e) {
	case SSL_ERROR_WANT_READ: conn_want(c, EPOLLIN); break;
	case SSL_ERROR_WANT_WRITE: conn_want(c, EPOLLOUT); break;
	default:
		note(c->srv, "TLS handshake failed", c->peer);
		conn_close(c);
		break;
	}
}

static void conn_event(struct http_conn *c)
{
	switch (c->st) {
	case CS_HANDSHAKE: handshake(c); break;
	case CS_READ: conn_read(c); break;
	case CS_WRITE: conn_write(c); break;
	case CS_LINGER: linger_read(c); break;
	case CS_BUSY: /* out of the epoll set: never here */ break;
	case CS_CLOSED: /* closed for another in this batch: freed after it */ break;
	default: break;
	}
}

/* ---- accepting ---- */

static void peer_name(const struct sockaddr_storage *sa, char *out, size_t n)
{
	snprintf(out, n, "%s", "");
	if (sa->ss_family == AF_INET)
		(void)inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out,
		                (socklen_t)n);
	else if (sa->ss_family == AF_INET6)
		(void)inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
		                (socklen_t)n);
}

/* An address at its cap: its connection with the least progress makes room for the new
 * one (http_evict_choice), so that a client trickling many connections from a shared
 * address cannot lock out the others there. 0: room made; -1: every one is served. */
static int make_room(struct bc_http *s, struct http_addr *a)
{
	struct http_conn *victim;

	while (a->count > s->per_address) {
		if ((victim = http_evict_choice(a)) == NULL)
			return -1;
		atomic_fetch_add(&s->evicted, 1);
		conn_close_other(victim);
	}
	return 0;
}

/* A new connection, within the caps; closed at once otherwise. */
static void conn_new(struct bc_http *s, int fd, const struct sockaddr_storage *sa)
{
	struct http_addr *a = NULL;
	struct http_conn *c = NULL;
	int one = 1;

	if (atomic_load(&s->stopping) || (a = addr_get(s, sa)) == NULL) {
		close(fd);
		return;
	}
	a->count++; /* this one's place, held while others are closed to make room */
	if ((a->count > s->per_address && make_room(s, a) != 0) ||
	    atomic_load(&s->n_conns) >= s->max_connections || (c = calloc(1, sizeof(*c))) == NULL ||
	    (s->tls != NULL && (c->ssl = http_tls_new(s)) == NULL)) {
		free(c);
		addr_put(s, a);
		close(fd);
		return;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->srv = s;
	c->fd = fd;
	addr_link(a, c);
	c->accepted_ms = c->since_ms = c->last_read_ms = http_mono_ms();
	c->fresh = 1;
	peer_name(sa, c->peer, sizeof(c->peer));
	c->st = CS_READ;
	if (c->ssl != NULL) {
		SSL_set_fd(c->ssl, fd);
		c->st = CS_HANDSHAKE;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	atomic_fetch_add(&s->n_conns, 1);
	conn_want(c, EPOLLIN);
	/* what the client sent already is read now: a whole request goes to a worker (and
	 * can no longer be chosen to make room) before the next connection is taken */
	conn_event(c);
}

static void listen_want(struct bc_http *s, int on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

	if (s->listen_fd < 0 || s->listening == on)
		return;
	if (epoll_ctl(s->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, s->listen_fd, &ev) == 0)
		s->listening = on;
}

static void accept_some(struct bc_http *s)
{
	for (int i = 0; i < HTTP_ACCEPT_BURST; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &len,
		                 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			conn_new(s, fd, &sa);
			continue;
		}
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			note(s, "accept: out of descriptors or memory", "-");
			listen_want(s, 0);
			s->paused_until_ms = http_mono_ms() + HTTP_ACCEPT_PAUSE_MS;
		}
		return;
	}
}

/* ---- the loop ---- */

/* Under the deadline: the request not whole request_timeout after the connection
 * opened or its previous answer, however steadily its bytes came. */
static void reap(struct bc_http *s, uint64_t now)
{
	uint64_t deadline = s->request_timeout_ms;
	struct http_conn *c, *next;

	/* with the table three-quarters full, slow requests make room sooner */
	if (atomic_load(&s->n_conns) > s->max_connections / 4 * 3)
		deadline =
		    deadline / 5 > HTTP_MIN_DEADLINE_MS ? deadline / 5 : HTTP_MIN_DEADLINE_MS;
	for (c = s->conns; c != NULL; c = next) {
		uint64_t limit = deadline;

		next = c->next;
		/* now < since_ms: the test clock was set back; the connection counts as new */
		if (c->st == CS_BUSY || now < c->since_ms)
			continue;
		if (c->st == CS_WRITE && !c->interim)
			limit = HTTP_IDLE_MS;
		else if (c->st == CS_LINGER)
			limit = HTTP_LINGER_MS;
		if (now - c->since_ms >= limit || (c->st == CS_READ && now >= c->last_read_ms &&
		                                   now - c->last_read_ms >= HTTP_IDLE_MS)) {
			if (c->st != CS_LINGER && c->st != CS_WRITE)
				s->counts.reaped++;
			conn_close(c);
		}
	}
}

/* The answers the workers made, to write; and the stop. */
static void on_wake(struct bc_http *s)
{
	struct http_conn *c, *next;
	uint64_t v;

	if (read(s->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&s->dlock);
	c = s->done_head;
	s->done_head = NULL;
	pthread_mutex_unlock(&s->dlock);
	for (; c != NULL; c = next) {
		next = c->qnext;
		c->qnext = NULL;
		if (c->out == NULL) { /* the worker had no memory for the answer */
			c->st = CS_WRITE;
			conn_close(c);
			continue;
		}
		c->st = CS_WRITE;
		c->since_ms = http_mono_ms();
		conn_write(c);
	}
	if (atomic_load(&s->stopping) && s->listen_fd >= 0) {
		listen_want(s, 0);
		close(s->listen_fd);
		s->listen_fd = -1;
	}
}

static void tick(struct bc_http *s, uint64_t *next_reap)
{
	uint64_t now = http_mono_ms();

	if (s->paused_until_ms != 0 && now >= s->paused_until_ms) {
		s->paused_until_ms = 0;
		listen_want(s, 1);
	}
	if (now < *next_reap && *next_reap - now <= HTTP_REAP_MS)
		return;
	*next_reap = now + HTTP_REAP_MS;
	reap(s, now);
	if (now < s->window_start_ms || now - s->window_start_ms >= HTTP_SUMMARY_MS)
		log_summary(s, now);
}

/* Closes every connection no worker holds (those are freed by bc_http_stop). */
static void close_all(struct bc_http *s)
{
	struct http_conn *c, *next;

	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (c->st != CS_BUSY)
			conn_close(c);
	}
}

void *http_loop_main(void *arg)
{
	struct bc_http *s = arg;
	struct epoll_event ev[64];
	uint64_t next_reap = http_mono_ms() + HTTP_REAP_MS;

	while (!atomic_load(&s->loop_stop)) {
		int timeout = s->paused_until_ms ? HTTP_ACCEPT_PAUSE_MS : HTTP_REAP_MS;
		int n = epoll_wait(s->epfd, ev, 64, timeout);

		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == NULL)
				accept_some(s);
			else if (ev[i].data.ptr == &s->wake_fd)
				on_wake(s);
			else
				conn_event(ev[i].data.ptr);
		}
		free_closed(s);
		tick(s, &next_reap);
	}
	on_wake(s);
	free_closed(s);
	close_all(s);
	log_summary(s, http_mono_ms());
	return NULL;
}
