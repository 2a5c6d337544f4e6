/* The one publisher of a refusal of Join, Renew, SiteService and FetchSecret: the
 * security.<kind>.refused event, the log line, on_refusal (and through it the
 * metrics) all come from bc_refusal_publish().
 *
 * A refusal that a credential backs (a token whose secret matched; a certificate that
 * chains to the node CA and whose key proved the request, join/holder.h) is the named
 * node's or token's own: one event per refusal, in its tenant. Every other refusal
 * could come from anyone (an id is printed in lists, events and iPXE scripts, and a
 * node certificate is no secret), so it names nothing and is summarized per kind and
 * reason (join/refusal_summary.h): one event per reason per minute with its count.
 * on_refusal runs for every refusal, counted ones too (count 0), so metrics count
 * all; the event and the log line only when there is something to publish.
 *
 * Runs after the refused transaction rolled back, in a write transaction of its own;
 * a store failure is logged and the refusal still reaches on_refusal. */
#ifndef BC_JOIN_REFUSAL_H
#define BC_JOIN_REFUSAL_H

#include "join/internal.h"

enum bc_refusal_kind {
	BC_REFUSAL_JOIN = 0, /* security.join.refused */
	BC_REFUSAL_RENEW,    /* security.renew.refused */
	BC_REFUSAL_SITE,     /* security.site.refused: SiteService and FetchSecret */
};

/* One refusal. Strings are borrowed for the call; NULL or "" for none. */
struct bc_refusal_note {
	enum bc_refusal_kind kind;
	const char *attestor;  /* on_refusal's ("renew" and "site" for theirs); Join's event too */
	const char *reason;    /* static: bc/reasons.h or a plugin's */
	int backed;            /* a credential backs the request (above) */
	const char *tenant_id; /* whom a backed refusal is reported to; none: the node's owner,
	                          else root */
	const char *token_id;
	const char *node_id;
	const char *site_id;
	int check_only; /* Renew's bcd doctor check (the event says so) */
};

void bc_refusal_publish(struct bc_join_service *s, const struct bc_refusal_note *n);

#endif
