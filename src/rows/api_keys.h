/* api_keys: the admin API's credentials. The secret is never stored, only its hex
 * SHA-256 (bc/secret.h mints and parses keys). See rows/query.h. */
#ifndef BC_ROWS_API_KEYS_H
#define BC_ROWS_API_KEYS_H

#include "rows/query.h"

/* What authentication reads of a key. */
struct bc_api_key_auth {
	char tenant_id[64]; /* as stored: the caller checks its length */
	char secret_hash[65];
	int revoked; /* revoked_at is set */
	int expires; /* expires_at is set */
	int64_t expires_at;
	int64_t last_used_at; /* 0 when never */
	char role[16];        /* admin, operator, viewer or metrics (as stored) */
};

/* Key id: 1 with *k filled, 0 when there is none (*k zeroed). */
BC_WUR int bc_row_api_key_auth(bc_tx *tx, const char *id, struct bc_api_key_auth *k);

/* A new key of tenant_id with role (admin, operator, viewer, metrics), never
 * expiring. */
BC_WUR int bc_row_api_key_insert(bc_tx *tx, const char *id, const char *tenant_id,
                                 const char *secret_hash, const char *name, const char *role,
                                 int64_t now_ms);

/* Key id expires at expires_at. */
BC_WUR int bc_row_api_key_set_expiry(bc_tx *tx, const char *id, int64_t expires_at);

/* Revokes tenant_id's key id at now_ms unless revoked already; *changes (may be NULL)
 * 1 when it was revoked now, 0 otherwise. */
BC_WUR int bc_row_api_key_revoke(bc_tx *tx, const char *tenant_id, const char *id, int64_t now_ms,
                                 int64_t *changes);

/* Sets key id's last_used_at to now_ms when it was never used or last at or before
 * older_than: the write at most once per period, whoever races. */
BC_WUR int bc_row_api_key_touch(bc_tx *tx, const char *id, int64_t now_ms, int64_t older_than);

/* The keys of tenant_id, oldest first (id NULL), or its key id. Columns: id,
 * tenant_id, name, created_at, expires_at, revoked_at, last_used_at, role (never the
 * hash). */
BC_WUR int bc_row_api_keys_query(bc_tx *tx, const char *tenant_id, const char *id, bc_rows **out);

#endif
