/* Deploy workflow data and the provisioned attestor's target resolver (provision.h). */
#include "provision/provision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/json.h"
#include "bc/reasons.h"
#include "rows/inventory.h"

int bc_workflow_deploy_data(const char *token_id, int template_given, int64_t now_ms, char **data)
{
	json_t *o;

	*data = NULL;
	o = json_pack("{s:s, s:[{s:s, s:s, s:s, s:I}, {s:s, s:s}]}", "userData",
	              template_given ? "template" : "default", "steps", "name", BC_STEP_RENDER,
	              "state", BC_WF_SUCCEEDED, "tokenId", token_id, "at", (json_int_t)now_ms,
	              "name", BC_STEP_JOIN, "state", BC_WF_RUNNING);
	if (o == NULL)
		return BC_ERR_NOMEM;
	*data = bc_json_dump(o);
	json_decref(o);
	return *data ? 0 : BC_ERR_NOMEM;
}

/* ---- the target resolver ---- */

/* The token id the workflow's userdata.render step records, or NULL. */
static const char *render_token(json_t *data)
{
	json_t *steps = json_object_get(data, "steps"), *s;
	size_t i;
	const char *v;

	json_array_foreach(steps, i, s)
	{
		if (bc_json_get_string(s, "name", &v) == 0 && strcmp(v, BC_STEP_RENDER) == 0 &&
		    bc_json_get_string(s, "tokenId", &v) == 0)
			return v;
	}
	return NULL;
}

static int minted_by(const struct bc_workflow_row *w, const char *token_id)
{
	json_t *data = NULL;
	const char *tok;
	int ok;

	if (bc_json_parse(w->data, strlen(w->data), 0, &data, NULL, 0) != 0)
		return 0;
	tok = render_token(data);
	ok = tok != NULL && strcmp(tok, token_id) == 0;
	json_decref(data);
	return ok;
}

int bc_provision_resolve_target(bc_tx *tx, const struct bc_token_row *t,
                                struct bc_provision_target *target, const char **reason)
{
	struct bc_workflow_row w;
	int rc;

	memset(target, 0, sizeof(*target));
	*reason = NULL;
	if (t->workflow_id[0] == 0)
		return 0;
	if ((rc = bc_row_workflow_lock(tx, t->tenant_id, t->workflow_id, &w)) < 0)
		return rc;
	/* the running deploy whose userdata.render step minted this very token */
	if (rc == 0 || strcmp(w.kind, BC_WF_DEPLOY) != 0 || strcmp(w.state, BC_WF_RUNNING) != 0 ||
	    w.node_id[0] == 0 || !minted_by(&w, t->id)) {
		*reason = BC_R_WORKFLOW_NOT_RUNNING;
		bc_row_workflow_clear(&w);
		return 0;
	}
	snprintf(target->workflow_id, sizeof(target->workflow_id), "%s", w.id);
	snprintf(target->node_id, sizeof(target->node_id), "%s", w.node_id);
	bc_row_workflow_clear(&w);
	if ((rc = bc_row_inventory_newest_uuid(tx, target->node_id, target->product_uuid)) < 0)
		return rc;
	return 1;
}

/* data with its join step marked succeeded at now_ms (malloc'd text). */
static int join_step_done(const char *text, int64_t now_ms, char **out)
{
	json_t *data = NULL, *steps, *s;
	const char *v;
	size_t i;
	int rc = BC_ERR_NOMEM;

	*out = NULL;
	if (bc_json_parse(text, strlen(text), 0, &data, NULL, 0) != 0)
		return BC_ERR_INTERNAL;
	steps = json_object_get(data, "steps");
	json_array_foreach(steps, i, s)
	{
		if (bc_json_get_string(s, "name", &v) != 0 || strcmp(v, BC_STEP_JOIN) != 0)
			continue;
		if (json_object_set_new(s, "state", json_string(BC_WF_SUCCEEDED)) != 0 ||
		    json_object_set_new(s, "at", json_integer(now_ms)) != 0)
			goto out;
	}
	rc = (*out = bc_json_dump(data)) ? 0 : BC_ERR_NOMEM;
out:
	json_decref(data);
	return rc;
}

int bc_provision_target_joined(bc_tx *tx, const struct bc_provision_target *target, int64_t now_ms)
{
	struct bc_workflow_row w;
	char *data = NULL;
	int rc;

	if ((rc = bc_row_workflow_lock(tx, NULL, target->workflow_id, &w)) != 1)
		return rc < 0 ? rc : BC_ERR_INTERNAL; /* the resolver just locked it */
	if ((rc = join_step_done(w.data, now_ms, &data)) == 0)
		rc = bc_row_workflow_set(tx, w.id, BC_WF_SUCCEEDED, data, now_ms);
	free(data);
	bc_row_workflow_clear(&w);
	return rc;
}
