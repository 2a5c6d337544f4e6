#include "join/holder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "bc/crypto.h"
#include "bc/json.h"

static int read_fail(struct bc_holder *h, int rc)
{
	bc_holder_clear(h);
	return rc == BC_ERR_NOMEM ? rc : BC_HOLDER_MALFORMED;
}

/* OpenSSL decodes the leaf once, for identity, issuer and key. */
static int read_x509(struct bc_holder *h, const bc_pki *pki)
{
	X509 *leaf = NULL;
	int rc;

	if ((rc = bc_x509_from_der(h->der, h->len, &leaf)) == 0 &&
	    (rc = bc_pki_node_identity_x509(leaf, pki->trust_domain, &h->id)) == 0 &&
	    (rc = bc_pki_verify_node_x509(pki, leaf)) == 0)
		rc = bc_key_to_point(X509_get0_pubkey(leaf), h->point);
	X509_free(leaf);
	return rc;
}

int bc_holder_read(struct bc_holder *h, const bc_pki *pki, const uint8_t *der, size_t len,
                   const char *role)
{
	int rc;

	memset(h, 0, sizeof(*h));
	h->der = der;
	h->len = len;
	if (der == NULL || len == 0)
		return BC_HOLDER_MALFORMED;
	if ((rc = read_x509(h, pki)) != 0)
		return read_fail(h, rc);
	if (role != NULL && strcmp(h->id.role, role) != 0)
		return BC_HOLDER_ROLE;
	return BC_HOLDER_OK;
}

/* The statements column (a JSON array of strings, as we wrote it) into id. */
static int statements_from(const char *text, struct bc_node_identity *id)
{
	json_t *a = NULL;
	const char *v;
	int rc = BC_ERR_INVALID;

	if (bc_json_parse(text, strlen(text), 0, &a, NULL, 0) != 0 || !json_is_array(a) ||
	    json_array_size(a) >= BC_MAX_URIS)
		goto out;
	for (size_t i = 0; i < json_array_size(a); i++) {
		if ((v = json_string_value(json_array_get(a, i))) == NULL)
			goto out;
		if ((id->statements[i] = strdup(v)) == NULL) {
			rc = BC_ERR_NOMEM;
			goto out;
		}
		id->n_statements = i + 1;
	}
	rc = 0;
out:
	json_decref(a);
	return rc;
}

struct lookup {
	struct bc_holder *h;
	struct bc_cert_row row;
	int found;
};

static int lookup_tx(bc_tx *tx, void *arg)
{
	struct lookup *l = arg;
	int rc = bc_row_cert_find(tx, NULL, l->h->der, l->h->len, &l->row);

	l->found = rc == 1 && l->row.has_key;
	return rc < 0 ? rc : 0;
}

int bc_holder_lookup(struct bc_holder *h, bc_store *store, const uint8_t *der, size_t len,
                     const char *role)
{
	struct lookup l = {.h = h};
	int rc;

	memset(h, 0, sizeof(*h));
	h->der = der;
	h->len = len;
	if (der == NULL || len == 0)
		return BC_HOLDER_MALFORMED;
	if ((rc = bc_store_run(store, BC_TX_READ, lookup_tx, &l)) != 0)
		return rc;
	if (!l.found)
		return BC_HOLDER_NOT_CURRENT;
	snprintf(h->id.node_id, sizeof(h->id.node_id), "%s", l.row.node.id);
	snprintf(h->id.role, sizeof(h->id.role), "%s", l.row.role);
	h->id.not_after_ms = l.row.not_after;
	memcpy(h->point, l.row.point, sizeof(h->point));
	if ((rc = statements_from(l.row.statements, &h->id)) != 0) {
		bc_holder_clear(h);
		return rc == BC_ERR_NOMEM ? rc : BC_HOLDER_NOT_CURRENT;
	}
	if (role != NULL && strcmp(h->id.role, role) != 0)
		return BC_HOLDER_ROLE;
	return BC_HOLDER_OK;
}

int bc_holder_identify(struct bc_holder *h, bc_store *store, const bc_pki *pki, const uint8_t *der,
                       size_t len, const char *role)
{
	int rc = bc_holder_lookup(h, store, der, len, role);

	/* not ours as stored: whether it is a node certificate at all decides the reason */
	if (rc == BC_HOLDER_NOT_CURRENT)
		rc = bc_holder_read(h, pki, der, len, role);
	return rc;
}

int bc_holder_read_stored(struct bc_holder *h, const char *trust_domain, const uint8_t *der,
                          size_t len)
{
	int rc;

	memset(h, 0, sizeof(*h));
	h->der = der;
	h->len = len;
	if (der == NULL || len == 0)
		return BC_HOLDER_MALFORMED;
	rc = bc_pki_node_identity_point(der, len, trust_domain, &h->id, h->point);
	if (rc != 0)
		return read_fail(h, rc);
	return BC_HOLDER_OK;
}

int bc_holder_prove(const struct bc_holder *h, const char *purpose, const void *payload, size_t len,
                    const uint8_t *sig, size_t siglen)
{
	if (h->id.node_id[0] == 0 ||
	    bc_es256_verify_point(h->point, purpose, payload, len, sig, siglen) != 0)
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
	if (w->lock && (rc = bc_row_node_lock(tx, h->id.node_id)) != 0)
		return rc;
	if ((rc = bc_row_cert_find(tx, h->id.node_id, h->der, h->len, row)) < 0)
		return rc;
	if (rc == 0)
		return BC_HOLDER_NOT_CURRENT;
	return row_state(row, w);
}

void bc_holder_clear(struct bc_holder *h)
{
	bc_node_identity_clear(&h->id);
	memset(h->point, 0, sizeof(h->point));
}
