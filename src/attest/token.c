#include "attest/token.h"

#include <stdio.h>
#include <string.h>

#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/reasons.h"
#include "bc/wire.h"

#define ULID_LEN 26

static int is_b32(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
}

int bc_token_parse(const char *token, char id[BC_ID_MAX], const char **secret)
{
	size_t n;

	id[0] = 0;
	*secret = NULL;
	if (token == NULL || strncmp(token, BC_WIRE_TOKEN_PREFIX "tok_", 8) != 0)
		return BC_ERR_INVALID;
	for (n = 0; n < ULID_LEN; n++)
		if (!is_b32(token[8 + n]))
			return BC_ERR_INVALID;
	if (token[8 + ULID_LEN] != '_')
		return BC_ERR_INVALID;
	*secret = token + 8 + ULID_LEN + 1;
	n = strlen(*secret);
	if (n < 16 || n > 128)
		return BC_ERR_INVALID;
	memcpy(id, token + 4, 4 + ULID_LEN);
	id[4 + ULID_LEN] = 0;
	return 0;
}

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static int load(bc_tx *tx, const char *id, struct bc_token_row *row, char hash[65], int *revoked,
                int *found)
{
	bc_rows *rows = NULL;
	int rc;

	*found = 0;
	bc_param p[] = {BC_TEXT(id)};
	if ((rc = bc_tx_query(
	         tx,
	         "SELECT id, tenant_id, pool_id, site_id, role, secret_hash, uses_left, "
	         "expires_at, revoked_at, workflow_id, node_id FROM join_tokens "
	         "WHERE id = $1 FOR UPDATE",
	         p, 1, &rows)) != 0)
		return rc;
	if ((rc = bc_rows_next(rows)) == 1) {
		*found = 1;
		copy(row->id, sizeof(row->id), bc_rows_text(rows, 0));
		copy(row->tenant_id, sizeof(row->tenant_id), bc_rows_text(rows, 1));
		copy(row->pool_id, sizeof(row->pool_id), bc_rows_text(rows, 2));
		copy(row->site_id, sizeof(row->site_id), bc_rows_text(rows, 3));
		copy(row->role, sizeof(row->role), bc_rows_text(rows, 4));
		copy(hash, 65, bc_rows_text(rows, 5));
		row->uses_left = bc_rows_int(rows, 6);
		row->expires_at = bc_rows_int(rows, 7);
		*revoked = !bc_rows_is_null(rows, 8);
		copy(row->workflow_id, sizeof(row->workflow_id), bc_rows_text(rows, 9));
		copy(row->node_id, sizeof(row->node_id), bc_rows_text(rows, 10));
		rc = 0;
	}
	bc_rows_free(rows);
	return rc < 0 ? rc : 0;
}

int bc_token_check(bc_tx *tx, const char *token, int64_t now_ms, struct bc_token_row *row,
                   struct bc_attest_outcome *out, const char **reason)
{
	char id[BC_ID_MAX], stored[65] = "", presented[65];
	const char *secret;
	uint8_t d[32];
	int rc, revoked = 0, found = 0;

	*reason = NULL;
	memset(row, 0, sizeof(*row));
	if (token == NULL) {
		*reason = BC_R_TOKEN_MISSING;
		return 0;
	}
	if (bc_token_parse(token, id, &secret) != 0) {
		*reason = BC_R_TOKEN_MALFORMED;
		return 0;
	}
	if ((rc = load(tx, id, row, stored, &revoked, &found)) != 0)
		return rc;
	if (!found) {
		*reason = BC_R_TOKEN_UNKNOWN;
		return 0;
	}
	copy(out->token_id, sizeof(out->token_id), row->id);
	copy(out->tenant_id, sizeof(out->tenant_id), row->tenant_id);
	if ((rc = bc_sha256(secret, strlen(secret), d)) != 0)
		return rc;
	bc_hex_encode_to(d, 32, presented);
	/* the secret first: without it, nothing about the token's state is learned */
	if (strlen(stored) != 64 || !bc_ct_equal(presented, stored, 64)) {
		*reason = BC_R_TOKEN_SECRET;
		return 0;
	}
	if (revoked)
		*reason = BC_R_TOKEN_REVOKED;
	else if (row->expires_at <= now_ms)
		*reason = BC_R_TOKEN_EXPIRED;
	else if (row->uses_left <= 0)
		*reason = BC_R_TOKEN_USED_UP;
	return 0;
}

int bc_token_consume(bc_tx *tx, const char *id, int64_t now_ms)
{
	int64_t changes = 0;
	int rc;

	bc_param p[] = {BC_TEXT(id), BC_INT(now_ms)};
	if ((rc = bc_tx_exec(tx,
	                     "UPDATE join_tokens SET uses_left = uses_left - 1, last_used_at = $2 "
	                     "WHERE id = $1 AND uses_left > 0",
	                     p, 2, &changes)) != 0)
		return rc;
	/* the row is locked: a use that vanished between check and spend is a bug */
	return changes == 1 ? 0 : BC_ERR_INTERNAL;
}
