/* The workflows table and the provisioned attestor's target resolver (provision.h). */
#include "provision/provision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/json.h"
#include "bc/reasons.h"

static void copy_col(char *dst, size_t n, bc_rows *r, const char *name)
{
	snprintf(dst, n, "%s", bc_rows_text_named(r, name));
}

void bc_workflow_row_clear(struct bc_workflow_row *row)
{
	free(row->data);
	memset(row, 0, sizeof(*row));
}

int bc_workflow_insert(bc_tx *tx, const char *id, const char *tenant_id, const char *node_id,
                       const char *kind, const char *data, int64_t now_ms)
{
	bc_param p[] = {
	    BC_TEXT(id),   BC_TEXT(tenant_id), BC_TEXT(node_id && node_id[0] ? node_id : NULL),
	    BC_TEXT(kind), BC_TEXT(data),      BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "INSERT INTO workflows (id, tenant_id, node_id, kind, state, data, "
	                  "created_at, updated_at) VALUES ($1, $2, $3, $4, 'running', $5, $6, $6)",
	                  p, 6, NULL);
}

int bc_workflow_lock(bc_tx *tx, const char *tenant_id, const char *id, struct bc_workflow_row *row)
{
	bc_rows *r = NULL;
	int rc;

	memset(row, 0, sizeof(*row));
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant_id)};
	if ((rc = bc_tx_query(tx,
	                      BC_WORKFLOW_SELECT "WHERE id = $1 AND ($2 IS NULL OR tenant_id = $2) "
	                                         "FOR UPDATE",
	                      p, 2, &r)) != 0)
		return rc;
	if ((rc = bc_rows_next(r)) == 1) {
		copy_col(row->id, sizeof(row->id), r, "id");
		copy_col(row->tenant_id, sizeof(row->tenant_id), r, "tenant_id");
		copy_col(row->node_id, sizeof(row->node_id), r, "node_id");
		copy_col(row->kind, sizeof(row->kind), r, "kind");
		copy_col(row->state, sizeof(row->state), r, "state");
		row->created_at = bc_rows_int_named(r, "created_at");
		row->updated_at = bc_rows_int_named(r, "updated_at");
		if ((row->data = strdup(bc_rows_text_named(r, "data"))) == NULL)
			rc = BC_ERR_NOMEM;
	}
	bc_rows_free(r);
	return rc;
}

int bc_workflow_running_for(bc_tx *tx, const char *node_id, const char *kind, char id[BC_ID_MAX])
{
	char *s = NULL;
	int rc;

	id[0] = 0;
	bc_param p[] = {BC_TEXT(node_id), BC_TEXT(kind)};
	rc = bc_tx_query_text(tx,
	                      "SELECT id FROM workflows WHERE node_id = $1 AND kind = $2 AND "
	                      "state = 'running' ORDER BY created_at DESC, id DESC LIMIT 1",
	                      p, 2, &s);
	if (rc == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0)
		return rc;
	snprintf(id, BC_ID_MAX, "%s", s);
	free(s);
	return 1;
}

int bc_workflow_set(bc_tx *tx, const char *id, const char *state, const char *data, int64_t now_ms)
{
	bc_param p[] = {BC_TEXT(id), BC_TEXT(state), BC_TEXT(data), BC_INT(now_ms)};

	return bc_tx_exec(tx,
	                  "UPDATE workflows SET state = $2, data = COALESCE($3, data), "
	                  "updated_at = $4 WHERE id = $1",
	                  p, 4, NULL);
}

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
	if ((rc = bc_workflow_lock(tx, t->tenant_id, t->workflow_id, &w)) < 0)
		return rc;
	/* the running deploy whose userdata.render step minted this very token */
	if (rc == 0 || strcmp(w.kind, BC_WF_DEPLOY) != 0 || strcmp(w.state, BC_WF_RUNNING) != 0 ||
	    w.node_id[0] == 0 || !minted_by(&w, t->id)) {
		*reason = BC_R_WORKFLOW_NOT_RUNNING;
		bc_workflow_row_clear(&w);
		return 0;
	}
	snprintf(target->workflow_id, sizeof(target->workflow_id), "%s", w.id);
	snprintf(target->node_id, sizeof(target->node_id), "%s", w.node_id);
	bc_workflow_row_clear(&w);
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

	if ((rc = bc_workflow_lock(tx, NULL, target->workflow_id, &w)) != 1)
		return rc < 0 ? rc : BC_ERR_INTERNAL; /* the resolver just locked it */
	if ((rc = join_step_done(w.data, now_ms, &data)) == 0)
		rc = bc_workflow_set(tx, w.id, BC_WF_SUCCEEDED, data, now_ms);
	free(data);
	bc_workflow_row_clear(&w);
	return rc;
}
