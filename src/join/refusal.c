#include "join/refusal.h"

#include <stdio.h>

#include "bc/clock.h"
#include "bc/json.h"
#include "bc/log.h"
#include "join/events.h"
#include "rows/nodes.h"

static const char *const event_type[] = {
    [BC_REFUSAL_JOIN] = "security.join.refused",
    [BC_REFUSAL_RENEW] = "security.renew.refused",
    [BC_REFUSAL_SITE] = "security.site.refused",
};

static const char *const log_msg[] = {
    [BC_REFUSAL_JOIN] = "join refused",
    [BC_REFUSAL_RENEW] = "renew refused",
    [BC_REFUSAL_SITE] = "site request refused",
};

/* One refusal as published: a summary (summarized) stands for count refusals. */
struct report {
	const struct bc_refusal_note *n;
	const char *reason; /* as published: "(other)" past the summary's table */
	const char *node_id, *token_id, *site_id;
	char tenant_id[BC_ID_MAX];
	uint64_t count;
	int summarized;
};

static const char *opt(const char *s)
{
	return s != NULL && s[0] ? s : NULL;
}

static int set_summary(json_t *data, const struct report *r)
{
	if (r->n->check_only && json_object_set_new(data, "checkOnly", json_true()) != 0)
		return BC_ERR_NOMEM;
	if (r->summarized &&
	    (json_object_set_new(data, "count", json_integer((json_int_t)r->count)) != 0 ||
	     json_object_set_new(data, "summarized", json_true()) != 0))
		return BC_ERR_NOMEM;
	return 0;
}

static int event_tx(bc_tx *tx, void *arg)
{
	const struct report *r = arg;
	/* Join's event names its attestor; the others' are implied by their type */
	const char *attestor = r->n->kind == BC_REFUSAL_JOIN ? r->n->attestor : NULL;
	json_t *data =
	    json_pack("{s:s?, s:s, s:s?, s:s?, s:s?}", "attestor", attestor, "reason", r->reason,
	              "tokenId", r->token_id, "nodeId", r->node_id, "siteId", r->site_id);
	int rc;

	if (data == NULL)
		return BC_ERR_NOMEM;
	if ((rc = set_summary(data, r)) == 0)
		rc = bc_event_publish(tx, r->tenant_id, event_type[r->n->kind], r->node_id, data);
	json_decref(data);
	return rc;
}

/* The owner of the node a backed refusal names, when its caller did not learn it. */
static int owner_tx(bc_tx *tx, void *arg)
{
	struct report *r = arg;
	struct bc_node_row n;
	int rc = bc_row_node_get(tx, BC_NODE_BY_ID, r->node_id, &n);

	if (rc == 1)
		snprintf(r->tenant_id, sizeof(r->tenant_id), "%s", n.tenant_id);
	return rc < 0 ? rc : 0;
}

/* Whom the event goes to: the caller's tenant, else the named node's owner, else root. */
static void resolve_tenant(struct bc_join_service *s, struct report *r)
{
	snprintf(r->tenant_id, sizeof(r->tenant_id), "%s",
	         opt(r->n->tenant_id) && !r->summarized ? r->n->tenant_id : "");
	if (r->tenant_id[0] == 0 && r->node_id != NULL &&
	    bc_store_run(s->cfg.store, BC_TX_READ, owner_tx, r) != 0)
		r->tenant_id[0] = 0;
	if (r->tenant_id[0] == 0)
		snprintf(r->tenant_id, sizeof(r->tenant_id), "root");
}

static void log_report(const struct report *r)
{
	char count[24];

	snprintf(count, sizeof(count), "%llu", (unsigned long long)r->count);
	bc_log(BC_LOG_WARN, log_msg[r->n->kind], "attestor", r->n->attestor, "reason", r->reason,
	       "tokenId", r->token_id, "nodeId", r->node_id, "siteId", r->site_id, "tenantId",
	       r->tenant_id, "count", count, NULL);
}

void bc_refusal_publish(struct bc_join_service *s, const struct bc_refusal_note *n)
{
	struct report r = {.n = n, .reason = n->reason, .count = 1};

	/* unbacked: anyone could have sent it, so it names nothing and is counted */
	if ((r.summarized = !n->backed) != 0) {
		r.count = bc_refusal_summary_count(&s->refusals[n->kind], &r.reason, bc_now_ms());
	} else {
		r.node_id = opt(n->node_id);
		r.token_id = opt(n->token_id);
		r.site_id = opt(n->site_id);
	}
	resolve_tenant(s, &r);
	if (r.count) {
		if (bc_store_run(s->cfg.store, BC_TX_WRITE, event_tx, &r) != 0)
			bc_log(BC_LOG_ERROR, "refusal event not recorded", "reason", r.reason,
			       "error", bc_store_errmsg(), NULL);
		log_report(&r);
	}
	if (s->cfg.on_refusal) {
		struct bc_refusal o = {
		    .attestor = n->attestor,
		    .reason = n->reason,
		    .token_id = r.token_id,
		    .node_id = r.node_id,
		    .tenant_id = r.tenant_id,
		    .count = r.count,
		    .summarized = r.summarized,
		    .check_only = n->check_only,
		};
		s->cfg.on_refusal(s->cfg.on_refusal_ctx, &o);
	}
}
