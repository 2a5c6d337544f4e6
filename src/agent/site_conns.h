/* bcd site's connections: a poll() loop over the listening socket and a bounded table
 * of clients, none of which can hold the boot server. It owns the sockets and every
 * byte read or written; what a whole request is answered with is the caller's
 * (site.c), one request at a time between two calls of site_conns_poll.
 *
 * The limits, all from [site] (defaults in site.c):
 * - at most max_conns connections open; while all are in use the listening socket is
 *   not accepted from, so a new client waits in the kernel's backlog for a slot (every
 *   slot frees within request_ms) instead of being turned away;
 * - at most max_per_client from one address: one more is answered 503 and closed;
 * - a request head whole within head_ms of its accept, and the answer written within
 *   request_ms of it: both absolute, however the bytes trickle in or out. An answer
 *   queued after request_ms (the control plane was slow) gets WRITE_GRACE_MS to be
 *   written, so a token minted for a client still there is not thrown away unsent.
 * A client that closes or resets its connection before its answer is dropped; the
 * caller asks site_conn_alive right before spending anything on it (a token).
 *
 * Nothing here blocks: the sockets are non-blocking and each wait is one poll(). */
#ifndef BCD_SITE_CONNS_H
#define BCD_SITE_CONNS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"

#define SITE_WRITE_GRACE_MS 2000

struct site_limits {
	int max_conns;      /* 1 to 1024 */
	int max_per_client; /* 1 to max_conns */
	int64_t head_ms;    /* > 0 */
	int64_t request_ms; /* >= head_ms */
};

enum site_conn_state {
	SITE_CONN_FREE = 0,
	SITE_CONN_READING, /* the head is coming */
	SITE_CONN_READY,   /* a whole request waits for the caller's answer */
	SITE_CONN_WRITING, /* the answer is going out; closed when sent */
};

struct site_conn {
	enum site_conn_state state;
	int fd;
	char peer_ip[INET6_ADDRSTRLEN]; /* the address, the per-client cap's key */
	int64_t head_by, done_by;       /* monotonic ms */
	uint64_t seq;                   /* the order requests became whole in */
	struct bcd_boot_query q;        /* READY: the request */
	char in[BCD_REQUEST_MAX];
	size_t in_len;
	char *out; /* the answer, wiped when freed: it may carry a token */
	size_t out_len, out_off;
	int secret; /* the answer carries a token minted for it */
};

/* What a log line is about: each kind is throttled on its own. */
enum site_say { SITE_SAY_CAP, SITE_SAY_CUT, SITE_SAY_GONE, SITE_SAY_OTHER, SITE_SAY_KINDS };

struct site_conns {
	struct site_limits lim;
	int listen_fd; /* borrowed: the caller closes it */
	struct site_conn *c;
	struct pollfd *pfd;
	int *pfd_conn; /* pfd[i]'s slot in c, -1 for the listening socket */
	int n_open;
	uint64_t seq;
	int64_t accept_after;            /* monotonic ms: no accept before (out of descriptors) */
	int64_t said_ms[SITE_SAY_KINDS]; /* when the last line of a kind went out */
	unsigned unsaid[SITE_SAY_KINDS]; /* lines of that kind held back since */
};

/* A table for lim's connections on listen_fd (made non-blocking here). 0 or BC_ERR_NOMEM. */
BC_WUR int site_conns_init(struct site_conns *s, int listen_fd, const struct site_limits *lim);
/* Closes every connection, wiping unsent answers. */
void site_conns_free(struct site_conns *s);
/* Waits at most wait_ms (less when a deadline comes first; 0: not at all) for the
 * sockets, then accepts, reads, writes and cuts what is past its deadline. */
void site_conns_poll(struct site_conns *s, int wait_ms);
/* The connection whose request became whole first and is not answered yet, or NULL. */
struct site_conn *site_conns_next_ready(struct site_conns *s);
/* 1 while c's client has neither closed nor reset its side; 0 when it has. */
int site_conn_alive(const struct site_conn *c);
/* Makes status and body c's answer (secret: body holds a token minted for c), to be
 * written by site_conns_poll; c is closed once it is sent or its deadline passes (or
 * at once, out of memory). */
void site_conn_answer(struct site_conns *s, struct site_conn *c, int status, const char *body,
                      int secret);
/* Closes c unanswered, saying why on stderr (throttled by kind). */
void site_conn_drop(struct site_conns *s, struct site_conn *c, enum site_say kind, const char *why);

#endif
