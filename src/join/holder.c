#include "join/holder.h"

#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"

int bc_holder_peek(struct bc_holder *h, const char *trust_domain, const uint8_t *der, size_t len,
                   const char *role)
{
	int rc;

	memset(h, 0, sizeof(*h));
	h->der = der;
	h->len = len;
	if (der == NULL || len == 0)
		return BC_HOLDER_MALFORMED;
	if ((rc = bc_pki_node_identity(der, len, trust_domain, &h->id, h->point)) != 0) {
		bc_holder_clear(h);
		return rc == BC_ERR_NOMEM ? rc : BC_HOLDER_MALFORMED;
	}
	if (role != NULL && strcmp(h->id.role, role) != 0)
		return BC_HOLDER_ROLE;
	return BC_HOLDER_OK;
}

int bc_holder_confirm(const struct bc_holder *h, const bc_pki *pki, int status)
{
	int rc;

	if (status < 0 || status == BC_HOLDER_MALFORMED || h->der == NULL)
		return status < 0 ? status : BC_HOLDER_MALFORMED;
	if ((rc = bc_pki_verify_node_cert(pki, h->der, h->len)) == BC_ERR_NOMEM)
		return rc;
	return rc == 0 ? status : BC_HOLDER_MALFORMED;
}

int bc_holder_prove(const struct bc_holder *h, const char *purpose, const void *payload, size_t len,
                    const uint8_t *sig, size_t siglen)
{
	if (h->id.node_id[0] == 0 ||
	    bc_es256_verify(h->point, purpose, payload, len, sig, siglen) != 0)
		return BC_HOLDER_PROOF;
	return BC_HOLDER_OK;
}

/* The stored row's own state, in the order every caller reports it. */
static int row_state(const struct bc_cert_row *row, const struct bc_holder_want *w)
{
	if (strcmp(row->node.state, "retired") == 0)
		return BC_HOLDER_RETIRED;
	if (row->generation != row->node.generation)
		return BC_HOLDER_GENERATION;
	if (row->revoked)
		return BC_HOLDER_REVOKED;
	if (row->superseded)
		return BC_HOLDER_SUPERSEDED;
	/* without grace not_after itself is past; with it, up to grace after it */
	if (w->grace_ms == 0 ? row->not_after <= w->now_ms
	                     : w->now_ms - row->not_after > w->grace_ms)
		return BC_HOLDER_EXPIRED;
	if (w->role != NULL && strcmp(row->node.role, w->role) != 0)
		return BC_HOLDER_ROLE;
	if (w->not_role != NULL &&
	    (strcmp(row->role, w->not_role) == 0 || strcmp(row->node.role, w->not_role) == 0))
		return BC_HOLDER_ROLE;
	if (w->window_ms > 0 && (w->client_time_ms < w->now_ms - w->window_ms ||
	                         w->client_time_ms > w->now_ms + w->window_ms))
		return BC_HOLDER_CLIENT_TIME;
	return BC_HOLDER_OK;
}

int bc_holder_current(bc_tx *tx, const struct bc_holder *h, const struct bc_holder_want *w,
                      struct bc_cert_row *row)
{
	int rc;

	memset(row, 0, sizeof(*row));
	/* the lineage of a node is read and written under its row's lock */
	if (w->lock && (rc = bc_row_cert_lock_node(tx, h->id.node_id, h->der, h->len)) != 0)
		return rc;
	if ((rc = bc_row_cert_find(tx, h->id.node_id, h->der, h->len, row)) < 0)
		return rc;
	if (rc == 0)
		return BC_HOLDER_NOT_CURRENT;
	if ((rc = row_state(row, w)) != BC_HOLDER_OK)
		return rc;
	/* stored, so ours: but a CA retired before its leaves expired (a compromised one)
	   takes them with it */
	if (w->pki != NULL && bc_pki_node_ca_retired(w->pki, h->der, h->len))
		return BC_HOLDER_MALFORMED;
	return BC_HOLDER_OK;
}

void bc_holder_clear(struct bc_holder *h)
{
	bc_node_identity_clear(&h->id);
	memset(h->point, 0, sizeof(h->point));
}
