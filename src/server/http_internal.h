/* Inside the HTTP front end: the server (http.c: start, stop, TLS, responses), its
 * event loop (http_loop.c: accept, TLS handshakes, reading requests, writing answers,
 * deadlines) and its workers (http_worker.c: the handler).
 *
 * Threads: one event loop owns every connection and its OpenSSL object, except while
 * the connection is CS_BUSY: then one worker owns it, runs the handler (which may block
 * on the store) and hands it back, answer made, through the done list and wake_fd. So a
 * connection is touched by one thread at a time and no TLS object is shared. */
#ifndef BC_SERVER_HTTP_INTERNAL_H
#define BC_SERVER_HTTP_INTERNAL_H

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bc/buf.h"
#include "server/http.h"
#include "server/http_parse.h"

#define HTTP_MAX_QUERY    32
#define HTTP_ADDR_BUCKETS 256

enum http_conn_state {
	CS_HANDSHAKE, /* TLS handshake: waits for the socket */
	CS_READ,      /* reading a request (or waiting for one) */
	CS_BUSY,      /* a worker has it */
	CS_WRITE,     /* writing an answer (or a 100 Continue) */
	CS_LINGER,    /* answered and closing: the client's last bytes are read and dropped */
	CS_CLOSED,    /* closed to make room for another: freed once the loop's batch of
	                 events (which may still name it) is done */
};

/* Connections from one client address (the per_address cap). Loop thread only. */
struct http_addr {
	struct http_addr *next;
	uint8_t key[17]; /* family, then the address */
	unsigned count;
	struct http_conn *conns; /* this address's connections, newest first */
};

struct http_conn {
	struct http_conn *prev, *next; /* the loop's list */
	struct http_conn *qnext;       /* the worker queue, then the done list */
	struct bc_http *srv;
	struct http_addr *addr;
	struct http_conn *aprev, *anext; /* the address's list */
	int fd;
	SSL *ssl; /* NULL: plain HTTP */
	enum http_conn_state st;
	uint32_t events; /* the epoll interest now; 0: not registered */
	uint64_t accepted_ms, since_ms, last_read_ms;
	int fresh; /* no request answered yet */
	char peer[INET6_ADDRSTRLEN];
	uint64_t rx, rx_base; /* bytes received (TLS: as sent, encrypted); rx at the request's
	                       * start (the connection's, or the previous answer's end) */
	char *in;             /* read and not consumed: at most HTTP_HEAD_MAX bytes */
	size_t in_len;
	/* the request being read */
	int have_head;
	struct http_head head;
	uint64_t body_left; /* Content-Length bytes still to come */
	struct http_chunked chunk;
	bc_buf body;
	size_t reserved; /* of srv->body_bytes */
	size_t discarded;
	int too_large;
	int authorized;
	int counted; /* in srv->inflight: handed to a worker, answer not yet written */
	/* the answer being written (malloc'd, wiped when freed) */
	uint8_t *out;
	size_t out_len, out_off;
	int close_after;
	int interim; /* out is a 100 Continue: reading goes on after it */
};

struct http_counts {
	unsigned long reaped;      /* closed by the request deadline */
	unsigned long over_budget; /* closed: the unauthenticated body budget was spent */
	unsigned long lines;       /* connections that ended in an error (aborted, bad TLS) */
};

struct bc_http {
	bc_http_handler handler;
	void *ctx;
	int access_log;
	size_t max_body, preauth_body, body_budget;
	uint64_t request_timeout_ms;
	unsigned max_connections, per_address;
	bc_http_authorize authorize;
	uint16_t port;
	struct sockaddr_storage addr;
	SSL_CTX *tls; /* NULL: plain HTTP; replaced under tls_lock (bc_http_set_tls) */
	pthread_mutex_t tls_lock;
	int listen_fd, epfd, wake_fd;
	atomic_int stopping;  /* answer 503, stop accepting */
	atomic_int loop_stop; /* the loop returns */
	atomic_size_t body_bytes;
	atomic_uint n_conns;
	pthread_t loop;
	int loop_running;
	pthread_t *workers;
	unsigned n_workers;
	/* requests for the workers */
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	struct http_conn *q_head, *q_tail;
	int workers_stop;
	/* answered by a worker, for the loop to write */
	pthread_mutex_t dlock;
	struct http_conn *done_head;
	/* requests handed to a worker whose answer is not written yet */
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned inflight;
	/* the loop thread's own */
	struct http_conn *conns;
	struct http_conn *closed; /* CS_CLOSED, on qnext: freed after the event batch */
	struct http_addr *addrs[HTTP_ADDR_BUCKETS];
	int listening;        /* the listen socket is in the epoll set */
	atomic_ulong evicted; /* connections closed to make room at a crowded address */
	uint64_t paused_until_ms;
	struct http_counts counts;
	char first_line[256];
	uint64_t window_start_ms;
};

/* Monotonic milliseconds, moved by the test clock's offset like bc_now_ms(). */
uint64_t http_mono_ms(void);
void http_inflight_add(struct bc_http *s, int delta);

/* http.c: one answer's bytes (status line, the headers of every answer, body; none
 * for a HEAD request), malloc'd into *out; NULL when out of memory. */
void http_answer_bytes(int status, const char *ctype, const uint8_t *body, size_t len,
                       int close_after, unsigned retry_after_s, int head_only, uint8_t **out,
                       size_t *out_len);

/* http_loop.c */
void *http_loop_main(void *arg);
/* An SSL for a new connection on the context in use (bc_http_set_tls), or NULL. */
SSL *http_tls_new(struct bc_http *s);
void http_conn_free(struct http_conn *c);
/* The connection of this address to close for a new one when the address is at its cap:
 * of those still sending a request (TLS handshake, or a request head or body not yet
 * whole), the one with the fewest bytes received for its request, the oldest of equals;
 * NULL when every one has sent its request (being served, answered or closing). */
struct http_conn *http_evict_choice(struct http_addr *a);
/* http_worker.c */
void *http_worker_main(void *arg);
void http_queue_push(struct bc_http *s, struct http_conn *c);

#endif
