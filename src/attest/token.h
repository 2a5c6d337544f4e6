/* Join tokens as every token-based attestor reads them: bct_<token id>_<secret>
 * (parsed by bc/secret.h), the row locked, the secret compared in constant time, then
 * revocation, expiry at database time and uses left. The row and its queries (the lock, spending a
 * use) are rows/tokens.h's. */
#ifndef BC_ATTEST_TOKEN_H
#define BC_ATTEST_TOKEN_H

#include <stdint.h>

#include "bc/attestor.h"
#include "bc/store.h"
#include "rows/tokens.h"

/* Locks and checks the token. On a refusal returns 0 with *reason set (and the
 * outcome's tenant_id/token_id filled once the token's secret matched: only then
 * does the refusal name it); < 0 on a database
 * error. Does not consume a use: bc_row_token_consume() does. */
BC_WUR int bc_token_check(bc_tx *tx, const char *token, int64_t now_ms, struct bc_token_row *row,
                          struct bc_attest_outcome *out, const char **reason);

/* Fills out with the result a token admits: its tenant, pool, site and id, and role. */
void bc_token_admit(const struct bc_token_row *t, const char *role, struct bc_attest_outcome *out);

#endif
