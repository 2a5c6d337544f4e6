/* The one check of a node certificate's holder: Renew, SiteService, FetchSecret, the
 * x509pop attestor and the signer of a discovery assertion all authenticate a node by
 * a certificate we issued and a proof by its key, and all of them ask it here.
 *
 * Two parts:
 * - store-free: bc_holder_peek() reads the leaf (its identity from the SPIFFE ID, its
 *   key as a point), optionally of one role; bc_holder_prove() verifies a proof under
 *   that key for a purpose. The caller builds the payload between the two (a
 *   renewal's names the node the leaf names). bc_holder_confirm() checks the CA's
 *   signature, for a leaf refused before its row was found.
 * - in the caller's transaction, at database time: bc_holder_current() holds the leaf
 *   to its stored node_certs row: byte for byte a row of that node, of the node's
 *   current identity generation, not revoked, not superseded (a newer certificate of
 *   the node was used: the leaf's key was rotated away), not expired beyond the
 *   caller's grace, the node not retired, the node of the role the caller requires,
 *   the client's time within the caller's window.
 * Each returns one enum bc_holder_status (or a negative BC_ERR_* for a failure that is
 * no refusal: memory, the store); each caller maps it to its own documented reasons.
 * A holder is "backed" once its proof verified and its leaf is known to be ours (its
 * row found, or bc_holder_confirm accepted it): its refusals are the node's own
 * (join/refusal.h records them one by one); before that, anyone holding the
 * certificate, which is no secret, could send it. */
#ifndef BC_JOIN_HOLDER_H
#define BC_JOIN_HOLDER_H

#include <stddef.h>
#include <stdint.h>

#include "bc/pki.h"
#include "bc/store.h"
#include "rows/certs.h"

enum bc_holder_status {
	BC_HOLDER_OK = 0,
	BC_HOLDER_MALFORMED,   /* not a node certificate the node CA signed for this domain */
	BC_HOLDER_ROLE,        /* the leaf's (or its node's) role is not the one required */
	BC_HOLDER_PROOF,       /* the proof does not verify under the leaf's key */
	BC_HOLDER_NOT_CURRENT, /* no node_certs row of the leaf's node holds these bytes */
	BC_HOLDER_RETIRED,     /* the node is retired */
	BC_HOLDER_GENERATION,  /* the leaf is of an older identity generation */
	BC_HOLDER_REVOKED,
	BC_HOLDER_SUPERSEDED, /* a newer certificate of the node was used */
	BC_HOLDER_EXPIRED,    /* past not_after by more than the caller's grace */
	BC_HOLDER_CLIENT_TIME /* the client's time is outside the caller's window */
};

/* A leaf as read by bc_holder_peek. der is borrowed from the caller for as long as the
 * holder is used; bc_holder_clear() frees id's statements. */
struct bc_holder {
	const uint8_t *der;
	size_t len;
	struct bc_node_identity id;
	uint8_t point[65]; /* the leaf's key, uncompressed */
};

/* Reads der as a node certificate (its identity from the SPIFFE ID in the trust
 * domain, its key as a point) into h: BC_HOLDER_OK; BC_HOLDER_MALFORMED for anything
 * else (h is then cleared); BC_HOLDER_ROLE when role is not NULL and the leaf's role
 * differs; BC_ERR_NOMEM. Without the CA's signature (bc_pki_node_identity: our
 * own form is read without OpenSSL's X509 decoder): the leaf that is next held to its stored
 * row by bc_holder_current: a row holding exactly these bytes is what makes it ours,
 * so the hot path parses nothing twice and checks no signature of ours. Until that
 * row is found nothing read here is trusted: a refusal found before it goes through
 * bc_holder_confirm, and a caller counts the holder as backed only once the row was
 * found or bc_holder_confirm accepted the leaf. */
BC_WUR int bc_holder_peek(struct bc_holder *h, const char *trust_domain, const uint8_t *der,
                          size_t len, const char *role);

/* For a leaf read by bc_holder_peek that is refused before its row was found, or that
 * no row holds: status when the leaf is a certificate the node CA signed (a node
 * certificate of ours, not stored or not current), BC_HOLDER_MALFORMED when it is not
 * (whatever else is wrong with it), BC_ERR_NOMEM. Costs the X509 decode and the CA's
 * signature: refusals only. */
BC_WUR int bc_holder_confirm(const struct bc_holder *h, const bc_pki *pki, int status);

/* BC_HOLDER_OK when sig is an ES256 signature under purpose over payload by the
 * leaf's key, else BC_HOLDER_PROOF. */
BC_WUR int bc_holder_prove(const struct bc_holder *h, const char *purpose, const void *payload,
                           size_t len, const uint8_t *sig, size_t siglen);

/* What the caller requires of the stored leaf. */
struct bc_holder_want {
	int64_t now_ms;         /* database time (bc_tx_now_ms) */
	int64_t grace_ms;       /* accepted this long after not_after (0: unexpired) */
	int64_t window_ms;      /* client_time_ms within this of now_ms; 0: not checked */
	int64_t client_time_ms; /* the time the request was signed at */
	const char *role;       /* the node's role required; NULL: any */
	const char *not_role;   /* a role refused (the leaf's or its node's); NULL: none */
	int lock;               /* lock the node's row first (the lineage is written) */
	const bc_pki *pki;      /* the node CA set: a stored leaf a retired CA issued is
	                           BC_HOLDER_MALFORMED (checked last); NULL: not checked */
};

/* The leaf against its row and its node, in the order retired, generation, revoked,
 * superseded, expired, role (and not_role: BC_HOLDER_ROLE too), client time, then its
 * CA not retired (w->pki; BC_HOLDER_MALFORMED): BC_HOLDER_OK or the
 * first that fails, with *row filled whenever the row was found (BC_HOLDER_NOT_CURRENT: zeroed); or
 * a negative BC_ERR_* from the store. */
BC_WUR int bc_holder_current(bc_tx *tx, const struct bc_holder *h, const struct bc_holder_want *w,
                             struct bc_cert_row *row);

void bc_holder_clear(struct bc_holder *h);

#endif
