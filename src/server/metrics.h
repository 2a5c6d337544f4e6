/* Prometheus metrics of one server (text exposition format 0.0.4), for GET /metrics.
 *
 * The server counts as it serves: every refusal by attestor and reason (from the
 * refusal hook, each refusal once, summarized ones too), every admitted join, reclaim,
 * deferral and renewal (JoinService's outcome hook), and the latency of each
 * JoinService RPC by method and answer. At a scrape it adds what it reads then: the
 * store's transactions, the pending join requests, the sites' boot lease holders, the
 * refusals on_refusal never saw, and the build. Thread-safe; the table of refusal
 * series is bounded (what does not fit is counted under reason "(other)"), so no
 * sender can grow it. */
#ifndef BC_SERVER_METRICS_H
#define BC_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "bc/store.h"
#include "join/join.h"

struct bc_metrics;

BC_WUR int bc_metrics_new(struct bc_metrics **out);
void bc_metrics_free(struct bc_metrics *m);

/* A refusal of Join, SiteService or FetchSecret; attestor and reason are copied when a
 * new series starts. */
void bc_metrics_refusal(struct bc_metrics *m, const char *attestor, const char *reason);
/* A refusal of Renew: check 1 for bcd doctor's check (Renew's checkOnly), counted apart
 * from the renewals. */
void bc_metrics_renew_refusal(struct bc_metrics *m, const char *reason, int check);
/* An admitted join, a reclaim, a deferral; a renewal; a check that found the
 * certificate current. */
void bc_metrics_outcome(struct bc_metrics *m, const struct bc_join_outcome *o);

/* One admin API request (/v1/...): its HTTP method and the status it was answered. */
void bc_metrics_admin(struct bc_metrics *m, const char *method, int status);
/* One SiteService or FetchSecret RPC: method the path's last part (the caller maps
 * paths it does not serve to "(other)"), and the HTTP status it was answered. */
void bc_metrics_site(struct bc_metrics *m, const char *method, int status);

/* One JoinService RPC: method "Join" or "Renew", the HTTP status it was answered. */
void bc_metrics_rpc(struct bc_metrics *m, const char *method, int status, double seconds);

/* A JoinService request shed unread (it waited past max_queue_wait_ms): method
 * "Join", "Renew" or anything else. */
void bc_metrics_shed(struct bc_metrics *m, const char *method);

/* One prune the server ran by itself (prune_interval_seconds): the rows it deleted by
 * kind, and whether it ran to the end (ok 0: an error stopped it; what it counted
 * was deleted all the same). */
void bc_metrics_prune(struct bc_metrics *m, const struct bc_prune_counts *n, int ok);

/* What a scrape reads besides the counters. */
struct bc_metrics_extra {
	bc_store *store;
	uint64_t refusals_dropped; /* on_refusal's queue was full */
	const char *version;
	int64_t tls_not_after_ms;     /* the TLS certificate served now; 0: plain HTTP */
	int tls_ours;                 /* 1: the server renews it, 0: the operator's */
	uint64_t http_evicted;        /* connections closed to make room at a crowded address */
	int64_t node_ca_not_after_ms; /* the issuing node CA; 0: unknown */
	int64_t connections;          /* open on the main listener now; < 0: unknown */
};

/* The exposition text (malloc'd, the caller frees), or NULL when out of memory. A
 * store that cannot be read leaves out the series it would give and sets
 * bc_store_up 0. The fleet gauges (nodes by state, certificates expiring) come from
 * one query of an index, kept BC_METRICS_FLEET_MS between scrapes, so a scrape costs
 * the same whatever the fleet's size and however often it comes. */
#define BC_METRICS_FLEET_MS 10000
char *bc_metrics_render(struct bc_metrics *m, const struct bc_metrics_extra *x);

#endif
