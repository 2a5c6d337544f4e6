/* bcd site's connections (site_conns.h): accept with a total and a per-address cap,
 * read a request head under absolute deadlines, write the answer without blocking.
 * The deadlines are on the monotonic clock: a step of the wall clock (or a test's
 * clock offset) neither extends nor cuts a connection. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/site_conns.h"
#include "bc/buf.h"

#define ANSWER_HEAD                                                                                \
	"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"                    \
	"Connection: close\r\n\r\n"
/* how long accepting waits after the process ran out of descriptors or memory */
#define ACCEPT_PAUSE_MS 100
#define BUSY_ANSWER                                                                                \
	"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 49\r\n"   \
	"Connection: close\r\n\r\nbcd site: too many connections from this address\n"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One line on stderr, at most one a second of each kind: a flood of connections must
 * not become a flood of log lines. A line says how many of its kind were held back. */
static void say(struct site_conns *s, enum site_say kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(struct site_conns *s, enum site_say kind, const char *fmt, ...)
{
	int64_t now = mono_ms();
	va_list ap;

	if (s->said_ms[kind] != 0 && now - s->said_ms[kind] < 1000) {
		s->unsaid[kind]++;
		return;
	}
	fprintf(stderr, BCD_NAME " site: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (s->unsaid[kind])
		fprintf(stderr, " (and %u more like it)", s->unsaid[kind]);
	fputc('\n', stderr);
	s->said_ms[kind] = now;
	s->unsaid[kind] = 0;
}

static void conn_close(struct site_conns *s, struct site_conn *c)
{
	char sink[512];

	/* read what the client sent past its head, so close() ends with a FIN, not a
	 * reset that could discard the answer still on its way */
	(void)shutdown(c->fd, SHUT_WR);
	for (int i = 0; i < 8 && recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	close(c->fd);
	if (c->out)
		bc_freezero(c->out, c->out_len + 1);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	s->n_open--;
}

int site_conns_init(struct site_conns *s, int listen_fd, const struct site_limits *lim)
{
	memset(s, 0, sizeof(*s));
	s->lim = *lim;
	s->listen_fd = listen_fd;
	s->c = calloc((size_t)lim->max_conns, sizeof(*s->c));
	s->pfd = calloc((size_t)lim->max_conns + 1, sizeof(*s->pfd));
	s->pfd_conn = calloc((size_t)lim->max_conns + 1, sizeof(*s->pfd_conn));
	if (s->c == NULL || s->pfd == NULL || s->pfd_conn == NULL) {
		free(s->c);
		free(s->pfd);
		free(s->pfd_conn);
		memset(s, 0, sizeof(*s));
		return BC_ERR_NOMEM;
	}
	for (int i = 0; i < lim->max_conns; i++)
		s->c[i].fd = -1;
	return 0;
}

void site_conns_free(struct site_conns *s)
{
	for (int i = 0; s->c && i < s->lim.max_conns; i++)
		if (s->c[i].state != SITE_CONN_FREE)
			conn_close(s, &s->c[i]);
	free(s->c);
	free(s->pfd);
	free(s->pfd_conn);
	memset(s, 0, sizeof(*s));
}

static int from_peer(const struct sockaddr_storage *peer, char ip[static INET6_ADDRSTRLEN])
{
	const void *a = peer->ss_family == AF_INET
	                    ? (const void *)&((const struct sockaddr_in *)peer)->sin_addr
	                    : (const void *)&((const struct sockaddr_in6 *)peer)->sin6_addr;

	if (peer->ss_family != AF_INET && peer->ss_family != AF_INET6)
		return -1;
	return inet_ntop(peer->ss_family, a, ip, INET6_ADDRSTRLEN) ? 0 : -1;
}

static int open_from(const struct site_conns *s, const char *ip)
{
	int n = 0;

	for (int i = 0; i < s->lim.max_conns; i++)
		if (s->c[i].state != SITE_CONN_FREE && strcmp(s->c[i].peer_ip, ip) == 0)
			n++;
	return n;
}

static struct site_conn *free_slot(struct site_conns *s)
{
	for (int i = 0; i < s->lim.max_conns; i++)
		if (s->c[i].state == SITE_CONN_FREE)
			return &s->c[i];
	return NULL;
}

/* One accepted connection into a slot, or turned away at its address's cap. */
static void admit(struct site_conns *s, int fd, const struct sockaddr_storage *peer)
{
	char ip[INET6_ADDRSTRLEN];
	struct site_conn *c;
	int64_t now = mono_ms();

	if (from_peer(peer, ip) != 0 || (c = free_slot(s)) == NULL) {
		close(fd);
		return;
	}
	if (open_from(s, ip) >= s->lim.max_per_client) {
		/* best effort, never waited for: the socket buffer takes it or it is lost */
		(void)send(fd, BUSY_ANSWER, sizeof(BUSY_ANSWER) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		say(s, SITE_SAY_CAP,
		    "%s has %d connections open (max_connections_per_client): refused one more", ip,
		    s->lim.max_per_client);
		return;
	}
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->state = SITE_CONN_READING;
	memcpy(c->peer_ip, ip, sizeof(ip));
	c->head_by = now + s->lim.head_ms;
	c->done_by = now + s->lim.request_ms;
	s->n_open++;
}

static void accept_all(struct site_conns *s)
{
	while (s->n_open < s->lim.max_conns) {
		struct sockaddr_storage peer;
		socklen_t pl = sizeof(peer);
		int fd = accept4(s->listen_fd, (struct sockaddr *)&peer, &pl,
		                 SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* the connection stays in the backlog and the socket stays
				 * readable: look again later, not in a spin */
				s->accept_after = mono_ms() + ACCEPT_PAUSE_MS;
				say(s, SITE_SAY_OTHER,
				    "accept: %s: raise the open files limit or lower "
				    "max_connections",
				    strerror(errno));
			}
			return;
		}
		admit(s, fd, &peer);
	}
}

/* The bytes that came; a head refused is answered at once, a whole one is READY. */
static void read_some(struct site_conns *s, struct site_conn *c)
{
	ssize_t r;
	int rc;

	while (c->in_len < sizeof(c->in)) {
		r = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			conn_close(s, c); /* gone before its request was whole: nothing spent */
			return;
		}
		c->in_len += (size_t)r;
		rc = bcd_site_request_parse(c->in, c->in_len, &c->q);
		if (rc == BC_ERR_TRUNCATED)
			continue;
		if (rc == 0) {
			c->state = SITE_CONN_READY;
			c->seq = ++s->seq;
		} else if (rc == BC_ERR_NOT_FOUND) {
			site_conn_answer(s, c, 404,
			                 "expected GET /boot.ipxe?mac=...&uuid=...&ip=...\n", 0);
		} else {
			site_conn_answer(s, c, 400, "expected GET /boot.ipxe?mac=...\n", 0);
		}
		return;
	}
}

static void write_some(struct site_conns *s, struct site_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			site_conn_drop(s, c, SITE_SAY_GONE,
			               c->secret ? "gone while its answer was written: its token "
			                           "was minted and expires unused"
			                         : "gone while its answer was written");
			return;
		}
		c->out_off += (size_t)w;
	}
	conn_close(s, c);
}

/* Cuts every connection past its deadline; the next deadline (or INT64_MAX). */
static int64_t cut_late(struct site_conns *s, int64_t now)
{
	int64_t next = INT64_MAX;

	for (int i = 0; i < s->lim.max_conns; i++) {
		struct site_conn *c = &s->c[i];
		int64_t by = c->state == SITE_CONN_READING && c->head_by < c->done_by ? c->head_by
		                                                                      : c->done_by;
		if (c->state == SITE_CONN_FREE)
			continue;
		if (now < by) {
			next = by < next ? by : next;
			continue;
		}
		site_conn_drop(s, c, SITE_SAY_CUT,
		               c->state == SITE_CONN_READING ? "cut: no whole request head in time"
		               : c->state == SITE_CONN_READY
		                   ? "cut: not answered in time (nothing minted for it)"
		                   : "cut: its answer was not read in time");
	}
	return next;
}

static int fill_pollfds(struct site_conns *s)
{
	int n = 0;

	if (s->n_open < s->lim.max_conns && mono_ms() >= s->accept_after) {
		s->pfd_conn[n] = -1;
		s->pfd[n++] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
	}
	for (int i = 0; i < s->lim.max_conns; i++) {
		const struct site_conn *c = &s->c[i];
		short ev = c->state == SITE_CONN_READING   ? POLLIN
		           : c->state == SITE_CONN_WRITING ? POLLOUT
		                                           : 0;
		/* a READY connection is not polled: its liveness is asked when it is served */
		if (ev == 0)
			continue;
		s->pfd_conn[n] = i;
		s->pfd[n++] = (struct pollfd){.fd = c->fd, .events = ev};
	}
	return n;
}

void site_conns_poll(struct site_conns *s, int wait_ms)
{
	int64_t now = mono_ms(), next = cut_late(s, now);
	int n, ready;

	if (s->accept_after > now && s->accept_after < next)
		next = s->accept_after;
	if (next != INT64_MAX && next - now < wait_ms)
		wait_ms = (int)(next - now);
	n = fill_pollfds(s);
	if ((ready = poll(s->pfd, (nfds_t)n, wait_ms < 0 ? 0 : wait_ms)) <= 0)
		return;
	for (int i = 0; i < n; i++) {
		struct site_conn *c;
		if (s->pfd[i].revents == 0)
			continue;
		if (s->pfd_conn[i] < 0) {
			accept_all(s);
			continue;
		}
		/* a slot freed and taken again in this pass is not this pollfd's */
		c = &s->c[s->pfd_conn[i]];
		if (c->fd != s->pfd[i].fd)
			continue;
		if (c->state == SITE_CONN_READING)
			read_some(s, c);
		else if (c->state == SITE_CONN_WRITING)
			write_some(s, c);
	}
	cut_late(s, mono_ms());
}

struct site_conn *site_conns_next_ready(struct site_conns *s)
{
	struct site_conn *best = NULL;

	for (int i = 0; i < s->lim.max_conns; i++)
		if (s->c[i].state == SITE_CONN_READY && (best == NULL || s->c[i].seq < best->seq))
			best = &s->c[i];
	return best;
}

int site_conn_alive(const struct site_conn *c)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};

	/* POLLRDHUP: the client's FIN, even behind bytes it sent and we did not read */
	if (poll(&p, 1, 0) < 0)
		return 1;
	return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0;
}

void site_conn_answer(struct site_conns *s, struct site_conn *c, int status, const char *body,
                      int secret)
{
	const char *what = status == 200 ? "OK" : status == 404 ? "Not Found" : "Bad Request";
	size_t blen = strlen(body);
	int64_t grace = mono_ms() + SITE_WRITE_GRACE_MS;
	int n;

	n = snprintf(NULL, 0, ANSWER_HEAD, status, what, blen);
	if (n < 0 || (c->out = malloc((size_t)n + blen + 1)) == NULL) {
		site_conn_drop(s, c, SITE_SAY_OTHER, "out of memory for its answer");
		return;
	}
	snprintf(c->out, (size_t)n + 1, ANSWER_HEAD, status, what, blen);
	memcpy(c->out + n, body, blen + 1);
	c->out_len = (size_t)n + blen;
	c->out_off = 0;
	c->secret = secret;
	c->state = SITE_CONN_WRITING;
	if (c->done_by < grace)
		c->done_by = grace;
}

void site_conn_drop(struct site_conns *s, struct site_conn *c, enum site_say kind, const char *why)
{
	say(s, kind, "%s: %s", c->peer_ip, why);
	conn_close(s, c);
}
