/* join requests: machines an attestor (tpm enrollment, discovery) holds for an operator's
 * decision. approve lets the waiting machine finish its join at its next round;
 * deny makes it stop. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

static const struct cli_col jr_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"ATTESTOR", "attestor", CLI_STR, 1, 0},
    {"STATE", "state", CLI_STR, 1, 0},
    {"POOL/SITE", NULL, CLI_TARGET, 1, 0},
    {"KEY", "requestKey", CLI_STR, 1, 16},
    {"MAC", "claims.mac", CLI_STR, 1, 0},
    {"PRODUCT UUID", "claims.productUuid", CLI_STR, 1, 0},
    {"SERIAL", "claims.serial", CLI_STR, 1, 24},
    /* what an approval admits: the request is bound to this CSR and these claims */
    {"CSR SHA-256", "csrSha256", CLI_STR, 1, 0},
    {"CREATED", "createdAt", CLI_TIME, 1, 0},
    {"EXPIRES", "expiresAt", CLI_TIME, 1, 0},
    {"DECIDED BY", "decidedBy", CLI_STR, 0, 0},
    {"DECIDED", "decidedAt", CLI_TIME, 0, 0},
    {"CLAIMS", "claims", CLI_JSON, 0, 0},
    {"DETAIL", "detail", CLI_JSON, 0, 0},
};
#define N_JR_COLS (sizeof(jr_cols) / sizeof(jr_cols[0]))

int cli_cmd_join_requests_list(struct cli *c)
{
	/* the state is escaped: it goes into the URL as typed */
	const char *kv[] = {"state", cli_opt(c, "state")};
	struct cli_resp r;
	char *full = NULL;
	int rc;

	if ((rc = cli_list_path(c, &full, "join-requests", kv, 1)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", full, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, "joinRequests", jr_cols, N_JR_COLS);
		cli_resp_free(&r);
	}
	free(full);
	return rc;
}

static int decide(struct cli *c, const char *verb)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "join-requests", c->args[0], verb, NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, "POST", path, NULL, &r)) == 0) {
		rc = cli_show_object(c, &r, NULL, jr_cols, N_JR_COLS);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

int cli_cmd_join_requests_approve(struct cli *c)
{
	return decide(c, "approve");
}

int cli_cmd_join_requests_deny(struct cli *c)
{
	return decide(c, "deny");
}

int cli_cmd_join_requests_delete(struct cli *c)
{
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, "join-requests", c->args[0], NULL)) != 0)
		return rc;
	return cli_delete(c, path, "join request", c->args[0]);
}
