/* pki_keys and pki_state (pki_keys.h). */
#include "rows/pki_keys.h"

#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "rows/internal.h"

#define SEQUENCE_NAME "spiffe_sequence"

void bc_row_pki_keys_free(struct bc_pki_key_row *rows, size_t n)
{
	for (size_t i = 0; rows != NULL && i < n; i++) {
		free(rows[i].cert_pem);
		if (rows[i].key_sealed != NULL)
			bc_freezero(rows[i].key_sealed, strlen(rows[i].key_sealed));
	}
	free(rows);
}

static int append(void *list, size_t *n, bc_rows *r)
{
	struct bc_pki_key_row **rows = list, *g = realloc(*rows, (*n + 1) * sizeof(**rows)), *k;

	if (g == NULL)
		return BC_ERR_NOMEM;
	*rows = g;
	k = &g[(*n)++];
	memset(k, 0, sizeof(*k));
	k->id = bc_rows_int_named(r, "id");
	bc_row_copy_col(k->kind, sizeof(k->kind), r, "kind");
	bc_row_copy_col(k->state, sizeof(k->state), r, "state");
	bc_row_copy_col(k->public_sha256, sizeof(k->public_sha256), r, "public_sha256");
	k->created_at = bc_rows_int_named(r, "created_at");
	k->activated_at = bc_rows_int_named(r, "activated_at");
	k->retired_at = bc_rows_int_named(r, "retired_at");
	k->forced = bc_rows_int_named(r, "forced") != 0;
	k->cert_pem = strdup(bc_rows_text_named(r, "cert_pem"));
	k->key_sealed = strdup(bc_rows_text_named(r, "key_sealed"));
	return k->cert_pem && k->key_sealed ? 0 : BC_ERR_NOMEM;
}

static void clear(void *list, size_t *n)
{
	struct bc_pki_key_row **rows = list;

	bc_row_pki_keys_free(*rows, *n);
	*rows = NULL;
	*n = 0;
}

int bc_row_pki_keys_list(bc_tx *tx, const char *kind, int64_t retired_since,
                         struct bc_pki_key_row **out, size_t *n)
{
	*out = NULL;
	bc_param p[] = {BC_TEXT(kind), BC_INT(retired_since)};
	return bc_row_collect(tx,
	                      "SELECT id, kind, state, cert_pem, public_sha256, key_sealed, "
	                      "created_at, activated_at, retired_at, forced FROM pki_keys "
	                      "WHERE kind = $1 AND (retired_at IS NULL OR retired_at >= $2) "
	                      "ORDER BY id",
	                      p, 2, out, n, append, clear);
}

int bc_row_pki_key_insert(bc_tx *tx, struct bc_pki_key_row *row)
{
	int64_t changed = 0, id = 0;
	int rc;

	if ((rc = bc_tx_query_int(tx, "SELECT COALESCE(MAX(id), 0) + 1 FROM pki_keys", NULL, 0,
	                          &id)) != 0)
		return rc;
	bc_param p[] = {BC_INT(id),
	                BC_TEXT(row->kind),
	                BC_TEXT(row->state),
	                BC_TEXT(row->cert_pem),
	                BC_TEXT(row->public_sha256),
	                BC_TEXT(row->key_sealed),
	                BC_INT(row->created_at),
	                row->activated_at ? BC_INT(row->activated_at) : BC_NULL};
	if ((rc = bc_tx_exec(tx,
	                     "INSERT INTO pki_keys (id, kind, state, cert_pem, public_sha256, "
	                     "key_sealed, created_at, activated_at) VALUES ($1, $2, $3, $4, $5, "
	                     "$6, $7, $8) ON CONFLICT DO NOTHING",
	                     p, 8, &changed)) != 0)
		return rc;
	if (changed == 1)
		row->id = id;
	return changed == 1;
}

int bc_row_pki_key_set_state(bc_tx *tx, int64_t id, const char *was, const char *state,
                             int64_t at_ms, int forced)
{
	int64_t changed = 0;
	int rc;

	bc_param p[] = {BC_INT(id), BC_TEXT(was), BC_TEXT(state), BC_INT(at_ms), BC_INT(forced)};
	if ((rc =
	         bc_tx_exec(tx,
	                    "UPDATE pki_keys SET state = $3, "
	                    "activated_at = CASE WHEN $3 = 'active' THEN $4 ELSE activated_at END, "
	                    "retired_at = CASE WHEN $3 = 'retired' THEN $4 ELSE retired_at END, "
	                    "forced = $5 WHERE id = $1 AND state = $2",
	                    p, 5, &changed)) != 0)
		return rc;
	return changed == 1 ? 0 : BC_ERR_CONFLICT;
}

int bc_row_pki_sequence(bc_tx *tx, int64_t *out)
{
	bc_rows *r = NULL;
	int rc;

	*out = 0;
	if ((rc = bc_row_first(tx, "SELECT value FROM pki_state WHERE name = $1",
	                       (bc_param[]){BC_TEXT(SEQUENCE_NAME)}, 1, &r)) != 1)
		return rc;
	*out = bc_rows_int(r, 0);
	bc_rows_free(r);
	return 0;
}

int bc_row_pki_sequence_raise(bc_tx *tx, int64_t floor, int64_t *out)
{
	int64_t was = 0;
	int rc;

	*out = 0;
	if ((rc = bc_tx_exec(tx,
	                     "INSERT INTO pki_state (name, value) VALUES ($1, 0) "
	                     "ON CONFLICT (name) DO NOTHING",
	                     (bc_param[]){BC_TEXT(SEQUENCE_NAME)}, 1, NULL)) != 0)
		return rc;
	if ((rc = bc_row_pki_sequence(tx, &was)) != 0)
		return rc;
	*out = was + 1 > floor ? was + 1 : floor;
	bc_param p[] = {BC_TEXT(SEQUENCE_NAME), BC_INT(*out)};
	return bc_tx_exec(tx, "UPDATE pki_state SET value = $2 WHERE name = $1", p, 2, NULL);
}
