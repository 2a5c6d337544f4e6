#include "attest/token.h"

#include <stdio.h>
#include <string.h>

#include "bc/reasons.h"
#include "bc/secret.h"

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

int bc_token_check(bc_tx *tx, const char *token, int64_t now_ms, struct bc_token_row *row,
                   struct bc_attest_outcome *out, const char **reason)
{
	char id[BC_ID_MAX];
	const char *secret;
	int rc;

	*reason = NULL;
	memset(row, 0, sizeof(*row));
	if (token == NULL) {
		*reason = BC_R_TOKEN_MISSING;
		return 0;
	}
	if (bc_secret_parse_token(token, id, &secret) != 0) {
		*reason = BC_R_TOKEN_MALFORMED;
		return 0;
	}
	if ((rc = bc_row_token_lock(tx, id, row)) < 0)
		return rc;
	if (rc == 0) {
		*reason = BC_R_TOKEN_UNKNOWN;
		return 0;
	}
	/* the secret first: without it, nothing about the token's state is learned, and
	 * the refusal names no token (an id is printed in lists, events and iPXE scripts:
	 * it is no credential, so the refusal is summarized, join/refusal.h) */
	if ((rc = bc_secret_matches(secret, row->secret_hash)) < 0)
		return rc;
	if (rc == 0) {
		*reason = BC_R_TOKEN_SECRET;
		return 0;
	}
	copy(out->token_id, sizeof(out->token_id), row->id);
	copy(out->tenant_id, sizeof(out->tenant_id), row->tenant_id);
	if (row->revoked)
		*reason = BC_R_TOKEN_REVOKED;
	else if (row->expires_at <= now_ms)
		*reason = BC_R_TOKEN_EXPIRED;
	else if (row->uses_left <= 0)
		*reason = BC_R_TOKEN_USED_UP;
	return 0;
}

void bc_token_admit(const struct bc_token_row *t, const char *role, struct bc_attest_outcome *out)
{
	struct bc_attest_result *r = &out->result;

	out->kind = BC_OUTCOME_RESULT;
	copy(r->tenant_id, sizeof(r->tenant_id), t->tenant_id);
	copy(r->pool_id, sizeof(r->pool_id), t->pool_id);
	copy(r->site_id, sizeof(r->site_id), t->site_id);
	copy(r->token_id, sizeof(r->token_id), t->id);
	copy(r->role, sizeof(r->role), role);
}
