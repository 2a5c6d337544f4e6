/* bcd site: a site node's boot server. It takes the site's site::boot lease and renews
 * it at a third of its TTL; while it holds it, it answers iPXE's
 *   GET /boot.ipxe?mac=..&uuid=..&ip=..
 * on [site] listen with a script that boots [site] kernel and initrd, with one freshly
 * signed DiscoveryAssertion (site, this node, the epoch, MAC, IP from the query or the
 * connection, product UUID from the query or the boot entry, workflow, issued_at in
 * server time, not_after at most 15 minutes and never past the entry's or the token's)
 * and the machine's discovery token on the kernel command line (bc.token,
 * bc.assertion). A renewal that finds the lease lost stops the vouching at once; it is
 * taken again when it is free. A MAC without a boot entry (unless unknown_machines =
 * "true"), or any request while the lease is not held, gets a script that says why.
 *
 * Connections are read and written by a poll() loop (site_conns.c) under a total
 * and a per-address cap and absolute deadlines, so a slow or flooding client holds a
 * slot, never the server; whole requests are answered here, one at a time, with the
 * lease renewed between them. A token is minted only for a client still connected
 * once its request is whole, right before its answer (serve_boot). SIGTERM and SIGINT
 * release the lease and end it with status 0. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/nodekey.h"
#include "agent/site_conns.h"
#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/net.h"
#include "bc/pki.h"
#include "bc/wire.h"

#define SCRIPT_MAX 8192
/* [site]'s limits when unset: a few iPXE clients per address (a NAT, a rack behind one
 * relay), a head within 5 s (iPXE sends it in one write), all within 15 s */
#define DEFAULT_MAX_CONNS      64
#define DEFAULT_MAX_PER_CLIENT 4
#define DEFAULT_HEAD_MS        5000
#define DEFAULT_REQUEST_MS     15000
/* where clients wait while every slot is in use */
#define LISTEN_BACKLOG 128

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct boot_server {
	struct bcd_config cfg;
	struct bc_client_pins pins;
	struct bcd_identity id;
	struct bc_signer signer; /* the node key, wherever it is */
	struct bc_site_caller caller;
	uint32_t ttl_s;
	uint64_t epoch;  /* the held epoch; 0 when not held */
	int64_t skew_ms; /* server time - our time, from the last lease answer */
	int64_t next_ms; /* when to renew (or try to acquire) */
	int listen_fd;
	struct site_conns conns;
};

static void say_lease(const struct boot_server *b, const char *what)
{
	fprintf(stderr, BCD_NAME " site: %s (site %s, epoch %llu)\n", what, b->cfg.site_id,
	        (unsigned long long)b->epoch);
}

/* Acquire or renew; a renewal that is refused, or answers not held, stops vouching. */
static void lease_step(struct boot_server *b)
{
	struct bc_lease_answer a;
	char err[512];
	int rc, was = b->epoch != 0;

	rc = bc_client_lease(&b->pins, &b->caller, was ? BC_LEASE_RENEW : BC_LEASE_ACQUIRE,
	                     b->epoch, b->ttl_s, &a, err, sizeof(err));
	b->next_ms = bc_now_ms() + (int64_t)b->ttl_s * 1000 / 3;
	if (rc != 0) {
		fprintf(stderr, BCD_NAME " site: lease: %s\n", err);
		/* an unreachable server cannot tell us we hold it: stop vouching */
		if (was) {
			b->epoch = 0;
			say_lease(b, "lease lost: not vouching");
		}
		return;
	}
	b->skew_ms = a.issued_at_ms - bc_now_ms();
	if (a.held) {
		if (!was) {
			b->epoch = a.epoch;
			say_lease(b, "lease held: vouching");
		}
		return;
	}
	if (was) {
		b->epoch = 0;
		say_lease(b, "lease lost: not vouching");
		b->next_ms = bc_now_ms(); /* try to take it again */
		if (a.holder[0])
			b->next_ms += (int64_t)b->ttl_s * 1000 / 3;
	}
}

/* An iPXE script that says why nothing boots (and stops there). */
static void refuse_script(struct boot_server *b, struct site_conn *c, const char *why)
{
	char s[512];
	snprintf(s, sizeof(s), "#!ipxe\necho bcd site: %s\nexit 1\n", why);
	site_conn_answer(&b->conns, c, 200, s, 0);
}

static const struct bc_boot_entry *find_entry(const struct bc_boot_entry *es, size_t n,
                                              const char *mac)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(es[i].mac, mac) == 0)
			return &es[i];
	return NULL;
}

/* The script for a machine: its token fetched, its assertion signed. */
static int render(struct boot_server *b, const struct bcd_boot_query *q, const char *peer_ip,
                  const struct bc_boot_entry *e, char *out, size_t outlen, char *err, size_t errlen)
{
	char *token = NULL, *b64 = NULL;
	uint8_t *att = NULL;
	size_t att_len = 0;
	int64_t tok_end = 0, now = bc_now_ms() + b->skew_ms, not_after;
	int rc, n;

	if ((rc = bc_client_fetch_secret(&b->pins, &b->caller, e ? e->workflow_id : "", q->mac,
	                                 &token, &tok_end, err, errlen)) != 0)
		return rc;
	not_after = now + BC_WIRE_DISCOVERY_MAX_AGE_MS;
	if (e && e->not_after_ms < not_after)
		not_after = e->not_after_ms;
	if (tok_end < not_after)
		not_after = tok_end;
	struct bc_discovery_fields f = {
	    .site_id = b->cfg.site_id,
	    .signer_node_id = b->id.node_id,
	    .lease_epoch = b->epoch,
	    .mac = q->mac,
	    .ip = q->ip[0] ? q->ip : peer_ip,
	    .product_uuid = q->uuid[0] ? q->uuid : (e ? e->product_uuid : ""),
	    .workflow_id = e ? e->workflow_id : "",
	    .issued_at_ms = now,
	    .not_after_ms = not_after,
	};
	if ((rc = bc_client_sign_assertion(&f, &b->signer, &att, &att_len)) != 0) {
		snprintf(err, errlen, "cannot sign the assertion (%s)", bc_err_str(rc));
		goto out;
	}
	if ((b64 = bc_b64url_encode(att, att_len)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	n = snprintf(out, outlen,
	             "#!ipxe\nkernel %s %s%s" BC_WIRE_CMDLINE_TOKEN "=%s " BC_WIRE_CMDLINE_ASSERTION
	             "=%s\ninitrd %s\nboot\n",
	             b->cfg.site_kernel, b->cfg.site_cmdline ? b->cfg.site_cmdline : "",
	             b->cfg.site_cmdline && b->cfg.site_cmdline[0] ? " " : "", token, b64,
	             b->cfg.site_initrd);
	if (n < 0 || (size_t)n >= outlen) {
		snprintf(err, errlen, "the script is longer than %zu bytes", outlen);
		rc = BC_ERR_LIMIT;
	}
out:
	if (token)
		bc_freezero(token, strlen(token));
	free(b64);
	free(att);
	return rc;
}

/* The script for c's MAC, or one that says why there is none. The token is minted in
 * render, so the client is looked for right before it: one gone while the boot entries
 * were fetched costs nothing. */
static void serve_boot(struct boot_server *b, struct site_conn *c)
{
	struct bc_boot_entry *es = NULL;
	const struct bc_boot_entry *e;
	char err[512], *script = NULL;
	size_t n = 0;
	int64_t at;

	if (b->epoch == 0) {
		refuse_script(b, c, "this boot server does not hold the site's boot lease");
		return;
	}
	if (bc_client_boot_entries(&b->pins, &b->caller, b->epoch, &es, &n, &at, err,
	                           sizeof(err)) != 0) {
		fprintf(stderr, BCD_NAME " site: boot entries: %s\n", err);
		refuse_script(b, c, "the control plane gave no boot entries (lease lost?)");
		lease_step(b);
		return;
	}
	e = find_entry(es, n, c->q.mac);
	if (e == NULL && !(b->cfg.site_unknown && strcmp(b->cfg.site_unknown, "true") == 0)) {
		refuse_script(b, c, "no boot entry for this MAC");
		goto out;
	}
	if (!site_conn_alive(c)) {
		site_conn_drop(&b->conns, c, SITE_SAY_GONE,
		               "gone before its answer: no token minted");
		goto out;
	}
	if ((script = malloc(SCRIPT_MAX)) == NULL) {
		site_conn_drop(&b->conns, c, SITE_SAY_OTHER, "out of memory");
		goto out;
	}
	if (render(b, &c->q, c->peer_ip, e, script, SCRIPT_MAX, err, sizeof(err)) == 0) {
		fprintf(stderr, BCD_NAME " site: served %s (%s)\n", c->q.mac,
		        e ? e->workflow_id : "no workflow");
		site_conn_answer(&b->conns, c, 200, script, 1);
	} else {
		fprintf(stderr, BCD_NAME " site: %s: %s\n", c->q.mac, err);
		refuse_script(b, c, "the control plane refused a token for this MAC");
	}
	OPENSSL_cleanse(script, SCRIPT_MAX);
out:
	free(script);
	free(es);
}

/* The oldest whole request, when its client is still there. */
static void serve_next(struct boot_server *b, struct site_conn *c)
{
	if (!site_conn_alive(c)) {
		site_conn_drop(&b->conns, c, SITE_SAY_GONE,
		               "gone before its answer: no token minted");
		return;
	}
	serve_boot(b, c);
}

static int listen_on(struct boot_server *b, struct bcd_msg *m)
{
	char host[256];
	uint16_t port;
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1;

	memset(&ss, 0, sizeof(ss));
	if (bc_net_split_hostport(b->cfg.site_listen, host, sizeof(host), &port) != 0) {
		bcd_say(m, "%s: site.listen must be host:port, e.g. 127.0.0.1:8081", b->cfg.path);
		return BC_ERR_CONFIG;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		sl = sizeof(*s4);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		sl = sizeof(*s6);
	} else {
		bcd_say(m, "%s: site.listen: %s is not an IP address", b->cfg.path, host);
		return BC_ERR_CONFIG;
	}
	if ((b->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) <
	        0 ||
	    setsockopt(b->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(b->listen_fd, (struct sockaddr *)&ss, sl) != 0 ||
	    listen(b->listen_fd, LISTEN_BACKLOG) != 0) {
		bcd_say(m, "site.listen %s: %s; pick a free address", b->cfg.site_listen,
		        strerror(errno));
		return BC_ERR_IO;
	}
	return 0;
}

/* [site]'s limits, the defaults where unset; each key's own bounds are the config
 * reader's, how they relate is checked here. */
static int limits(const struct bcd_config *cfg, struct site_limits *lim, struct bcd_msg *m)
{
	lim->max_conns = cfg->site_max_conns ? cfg->site_max_conns : DEFAULT_MAX_CONNS;
	lim->max_per_client =
	    cfg->site_max_per_client ? cfg->site_max_per_client : DEFAULT_MAX_PER_CLIENT;
	lim->head_ms = cfg->site_head_ms ? cfg->site_head_ms : DEFAULT_HEAD_MS;
	lim->request_ms = cfg->site_request_ms ? cfg->site_request_ms : DEFAULT_REQUEST_MS;
	if (lim->max_per_client > lim->max_conns) {
		bcd_say(m,
		        "%s: site.max_connections_per_client (%d) is more than max_connections "
		        "(%d); lower it",
		        cfg->path, lim->max_per_client, lim->max_conns);
		return BC_ERR_CONFIG;
	}
	if (lim->head_ms > lim->request_ms) {
		bcd_say(m,
		        "%s: site.header_timeout_seconds (%lld) is more than "
		        "request_timeout_seconds (%lld); lower it",
		        cfg->path, (long long)(lim->head_ms / 1000),
		        (long long)(lim->request_ms / 1000));
		return BC_ERR_CONFIG;
	}
	return 0;
}

static int start(struct boot_server *b, const struct bcd_opts *o, struct bcd_msg *m)
{
	struct site_limits lim;
	char *end = NULL;
	long ttl = 30;
	int rc;

	if ((rc = bcd_config_load(o->config, &b->cfg, m)) != 0)
		return rc;
	if (!b->cfg.has_site) {
		bcd_say(m, "%s: no [site] table: bcd site needs id, listen, kernel and initrd",
		        b->cfg.path);
		return BC_ERR_CONFIG;
	}
	if (b->cfg.site_lease_ttl &&
	    ((ttl = strtol(b->cfg.site_lease_ttl, &end, 10)) < 3 || ttl > 300 || *end)) {
		bcd_say(m, "%s: site.lease_ttl_seconds: expected \"3\" to \"300\"", b->cfg.path);
		return BC_ERR_CONFIG;
	}
	b->ttl_s = (uint32_t)ttl;
	if ((rc = bcd_identity_load(&b->cfg, &b->id, m)) != 0) {
		if (rc == BC_ERR_NOT_FOUND)
			bcd_say(m,
			        "no identity in %s: join first: bcd join --role site --token-file "
			        "FILE",
			        b->cfg.data_dir);
		return rc;
	}
	if (strcmp(b->id.role, BC_ROLE_SITE) != 0) {
		bcd_say(m,
		        "this machine joined as a %s: bcd site runs on a site node (bcd join "
		        "--reset --yes --role site --token-file FILE)",
		        b->id.role);
		return BC_ERR_CONFIG;
	}
	if ((rc = bcd_pins_from_config(&b->cfg, &b->pins, m)) != 0)
		return rc;
	if ((rc = bcd_nodekey_signer(&b->id.nk, &b->signer)) != 0) {
		bcd_say(m, "the node key cannot sign (%s)", bc_err_str(rc));
		return rc;
	}
	b->caller = (struct bc_site_caller){.chain = (const uint8_t *const *)b->id.chain,
	                                    .chain_lens = b->id.chain_lens,
	                                    .n_chain = b->id.n_chain,
	                                    .signer = &b->signer,
	                                    .site_id = b->cfg.site_id};
	if ((rc = limits(&b->cfg, &lim, m)) != 0 || (rc = listen_on(b, m)) != 0)
		return rc;
	return site_conns_init(&b->conns, b->listen_fd, &lim);
}

int bcd_cmd_site(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	struct boot_server b;
	struct sigaction sa;
	int rc;

	(void)exit_status;
	memset(&b, 0, sizeof(b));
	b.listen_fd = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((rc = start(&b, o, m)) != 0)
		goto out;
	fprintf(stderr, BCD_NAME " site: serving iPXE on http://%s/boot.ipxe\n", b.cfg.site_listen);
	while (!stop) {
		struct site_conn *c;
		int64_t wait = b.next_ms - bc_now_ms();
		/* the lease first: however many requests wait, a renewal is never late
		 * by more than one answer */
		if (wait <= 0) {
			lease_step(&b);
			continue;
		}
		if ((c = site_conns_next_ready(&b.conns)) != NULL) {
			serve_next(&b, c);
			site_conns_poll(&b.conns, 0);
			continue;
		}
		site_conns_poll(&b.conns, (int)(wait > 500 ? 500 : wait));
	}
	if (b.epoch != 0) {
		struct bc_lease_answer a;
		char err[256];
		if (bc_client_lease(&b.pins, &b.caller, BC_LEASE_RELEASE, b.epoch, 0, &a, err,
		                    sizeof(err)) == 0)
			say_lease(&b, "lease released");
	}
out:
	site_conns_free(&b.conns);
	if (b.listen_fd >= 0)
		close(b.listen_fd);
	if (b.id.key)
		bcd_identity_free(&b.id);
	if (b.pins.server_url)
		bc_client_pins_free(&b.pins);
	bcd_config_free(&b.cfg);
	return rc;
}
