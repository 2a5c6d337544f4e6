/* join_tokens: as the admin API shows them, and as JoinService and FetchSecret read
 * and write them. See rows/query.h. Getters return 1 with the row filled, 0 when
 * there is none (the row zeroed), or a negative BC_ERR_*. */
#ifndef BC_ROWS_TOKENS_H
#define BC_ROWS_TOKENS_H

#include <stdint.h>

#include "bc/attestor.h"
#include "rows/query.h"

/* A page of tenant_id's tokens in id order (rows/query.h), columns as
 * bc_row_tokens_query's. */
void bc_row_tokens_list_sql(const char *tenant_id, const struct bc_row_page *pg,
                            struct bc_row_where *w);
BC_WUR int bc_row_tokens_list(bc_tx *tx, const char *tenant_id, const struct bc_row_page *pg,
                              bc_rows **out);

/* The tokens of tenant_id, oldest first (id NULL), or its token id. Columns: id,
 * tenant_id, pool_id, site_id, role, uses_left, uses_total, expires_at, revoked_at,
 * expect, allow_reclaim, description, created_at, last_used_at, the pool's name, the
 * site's name (never the hash). */
BC_WUR int bc_row_tokens_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

/* Revokes tenant_id's token id at now_ms unless revoked already; *changes (may be
 * NULL) 1 when it was revoked now, 0 otherwise. */
BC_WUR int bc_row_token_revoke(bc_tx *tx, const char *tenant_id, const char *id, int64_t now_ms,
                               int64_t *changes);

/* ---- what JoinService reads and writes of a token ---- */

struct bc_token_row {
	char id[BC_ID_MAX];
	char tenant_id[BC_ID_MAX];
	char pool_id[BC_ID_MAX];
	char site_id[BC_ID_MAX];
	char role[16];
	char workflow_id[BC_ID_MAX];
	char node_id[BC_ID_MAX];
	char secret_hash[65]; /* hex sha256 of the secret, as stored: compare in constant time */
	int64_t uses_left;
	int64_t expires_at;
	int revoked; /* revoked_at is set */
};

/* The token id, its row locked until the transaction ends (SELECT ... FOR UPDATE on
 * PostgreSQL; SQLite's write transaction holds the lock already). */
BC_WUR int bc_row_token_lock(bc_tx *tx, const char *id, struct bc_token_row *row);

/* The token's expect binding (a JSON object as text, malloc'd: the caller frees it)
 * and its allowReclaim flag. */
BC_WUR int bc_row_token_expect(bc_tx *tx, const char *id, char **expect, int *allow_reclaim);

/* Spends one use at now_ms. The caller holds the row's lock (bc_row_token_lock) and
 * saw a use left: BC_ERR_INTERNAL when none was, since that is a bug. */
BC_WUR int bc_row_token_consume(bc_tx *tx, const char *id, int64_t now_ms);

/* A token to write. Borrowed for the call. pool_id, site_id, workflow_id, node_id and
 * description: NULL or "" for none; expect: a JSON object as text (NULL: "{}"). */
struct bc_token_write {
	const char *id;
	const char *tenant_id;
	const char *pool_id;
	const char *site_id;
	const char *role;
	const char *secret_hash; /* hex sha256 of the secret */
	int64_t uses;
	int64_t expires_at;
	const char *expect;
	int allow_reclaim;
	const char *workflow_id; /* the workflow whose step minted it */
	const char *node_id;     /* the node it was minted for */
	const char *description;
	int64_t now_ms;
};

/* Inserts the token with uses_left = uses_total = t->uses. */
BC_WUR int bc_row_token_insert(bc_tx *tx, const struct bc_token_write *t);

/* How many discovery tokens of site_id minted for workflow_id ("" for those of no
 * workflow) are live at now_ms (a use left, not revoked, unexpired): *n. */
BC_WUR int bc_row_tokens_discovery_live(bc_tx *tx, const char *site_id, int64_t now_ms,
                                        const char *workflow_id, int64_t *n);

#endif
