/* Join tokens as every token-based attestor reads them: bct_<token id>_<secret>,
 * the row locked, the secret compared in constant time, then revocation, expiry at
 * database time and uses left. */
#ifndef BC_ATTEST_TOKEN_H
#define BC_ATTEST_TOKEN_H

#include <stdint.h>

#include "bc/attestor.h"
#include "bc/store.h"

struct bc_token_row {
	char id[BC_ID_MAX];
	char tenant_id[BC_ID_MAX];
	char pool_id[BC_ID_MAX];
	char site_id[BC_ID_MAX];
	char role[16];
	char workflow_id[BC_ID_MAX];
	char node_id[BC_ID_MAX];
	int64_t uses_left;
	int64_t expires_at;
};

/* Splits "bct_tok_<26>_<secret>"; 0 or BC_ERR_INVALID. id receives "tok_<26>". */
BC_WUR int bc_token_parse(const char *token, char id[BC_ID_MAX], const char **secret);

/* Locks and checks the token. On a refusal returns 0 with *reason set (and the
 * outcome's tenant_id/token_id filled when the token is known); < 0 on a database
 * error. Does not consume a use. */
BC_WUR int bc_token_check(bc_tx *tx, const char *token, int64_t now_ms, struct bc_token_row *row,
                          struct bc_attest_outcome *out, const char **reason);

/* Spends one use (the row is already locked by bc_token_check). */
BC_WUR int bc_token_consume(bc_tx *tx, const char *id, int64_t now_ms);

#endif
