/* A deploy's start: its workflow and the userdata.render step (provision.h). */
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/secret.h"
#include "bc/wire.h"
#include "provision/provision.h"

/* Mints the single-use provisioned token for node n and workflow wf. */
static int render_token(bc_tx *tx, const struct bc_node_row *n, const char *wf, int64_t ttl_s,
                        int64_t now_ms, char tok[BC_ID_MAX], char **token)
{
	char hash[BC_SECRET_HASH_HEX];
	int rc;

	if ((rc = bc_new_id("tok", tok, BC_ID_MAX)) != 0 ||
	    (rc = bc_secret_mint(BC_WIRE_TOKEN_PREFIX, tok, token, hash)) != 0)
		return rc;
	struct bc_token_write t = {
	    .id = tok,
	    .tenant_id = n->tenant_id,
	    .pool_id = n->pool_id,
	    .site_id = n->site_id,
	    .role = "provisioned",
	    .secret_hash = hash,
	    .uses = 1,
	    .expires_at = now_ms + ttl_s * 1000,
	    .workflow_id = wf,
	    .node_id = n->id,
	    .description = "deploy userdata.render",
	    .now_ms = now_ms,
	};
	return bc_row_token_insert(tx, &t);
}

int bc_provision_deploy(bc_tx *tx, const char *tenant_id, const struct bc_node_row *n,
                        int template_given, int64_t ttl_s, int64_t now_ms, char wf[BC_ID_MAX],
                        char tok[BC_ID_MAX], char **token)
{
	char *data = NULL;
	int rc;

	*token = NULL;
	tok[0] = '\0';
	if ((rc = bc_new_id("wf", wf, BC_ID_MAX)) != 0)
		return rc;
	/* the workflow first: the token names it */
	if ((rc = bc_row_workflow_insert(tx, wf, tenant_id, n->id, BC_WF_DEPLOY, "{}", now_ms)) !=
	        0 ||
	    (rc = render_token(tx, n, wf, ttl_s, now_ms, tok, token)) != 0 ||
	    (rc = bc_workflow_deploy_data(tok, template_given, now_ms, &data)) != 0 ||
	    (rc = bc_row_workflow_set(tx, wf, BC_WF_RUNNING, data, now_ms)) != 0)
		goto out;
out:
	free(data);
	if (rc != 0 && *token != NULL) {
		bc_freezero(*token, strlen(*token));
		*token = NULL;
	}
	return rc;
}
