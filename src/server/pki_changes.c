/* The rotating keys of the PKI in the store (pki_changes.h). */
#include "server/pki_changes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "server/node_cas.h"

/* What differs between the kinds: the words for the operator and the rules. */
struct kind_rules {
	const char *kind;
	const char *what;     /* "node CA" */
	const char *does;     /* what the one activated last does, for a sentence */
	const char *one;      /* the same, after "the one that" */
	size_t max_in_use;    /* prepared and active rows at most (a rotate beyond is refused) */
	int certs;            /* 1: it signs certificates that must expire before it retires */
	int force_takes_over; /* 1: --force retires the current one, a prepared one taking over */
};

static const struct kind_rules rules[] = {
    {BC_PKI_KIND_NODE_CA, "node CA", "issues node certificates", "issues", BC_NODE_CAS_MAX - 1, 1,
     0},
    {BC_PKI_KIND_JOIN_SIGNING, "join signing key", "signs answers", "signs answers",
     BC_JOIN_KEYS_IN_USE, 0, 1},
    {BC_PKI_KIND_JOIN_ENCRYPTION, "join encryption key", "is what new tokens are sealed to",
     "new tokens are sealed to", BC_JOIN_KEYS_IN_USE, 0, 1},
};

static const struct kind_rules *rules_of(const char *kind)
{
	for (size_t i = 0; kind != NULL && i < sizeof(rules) / sizeof(rules[0]); i++)
		if (strcmp(kind, rules[i].kind) == 0)
			return &rules[i];
	return NULL;
}

int bc_pki_kind_known(const char *kind)
{
	return rules_of(kind) != NULL;
}

static int refuse(struct bc_pki_change *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int refuse(struct bc_pki_change *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return BC_ERR_CONFLICT;
}

/* ---- one generation as a row ---- */

struct new_key {
	struct bc_pki_key_row row; /* cert_pem and key_sealed malloc'd */
	int64_t floor;             /* the sequence at least */
	struct bc_pki_change *c;
	const struct kind_rules *k;
};

static void new_key_clear(struct new_key *n)
{
	free(n->row.cert_pem);
	if (n->row.key_sealed != NULL)
		bc_freezero(n->row.key_sealed, strlen(n->row.key_sealed));
	memset(&n->row, 0, sizeof(n->row));
}

/* cert: the node CA's certificate, NULL for a join key (no certificate). */
static int new_key_fill(struct new_key *n, const char *kind, X509 *cert, EVP_PKEY *key,
                        const char *state, const uint8_t secret[static 32])
{
	uint8_t sha[32];
	int rc;

	snprintf(n->row.kind, sizeof(n->row.kind), "%s", kind);
	snprintf(n->row.state, sizeof(n->row.state), "%s", state);
	if (cert != NULL ? (rc = bc_x509_to_pem(cert, &n->row.cert_pem)) != 0
	                 : (rc = (n->row.cert_pem = strdup("")) == NULL ? BC_ERR_NOMEM : 0) != 0)
		return rc;
	if ((rc = bc_pki_seal_key(key, secret, &n->row.key_sealed)) != 0 ||
	    (rc = bc_key_spki_sha256(key, sha)) != 0)
		return rc;
	bc_hex_encode_to(sha, sizeof(sha), n->row.public_sha256);
	return 0;
}

/* ---- generation 1 ---- */

static int seed_tx(bc_tx *tx, void *arg)
{
	struct new_key *n = arg;
	struct bc_pki_key_row *rows = NULL;
	size_t nrows = 0;
	int64_t seq;
	int rc;

	if ((rc = bc_row_pki_keys_list(tx, n->row.kind, 0, &rows, &nrows)) != 0)
		return rc;
	bc_row_pki_keys_free(rows, nrows);
	if (nrows > 0)
		return 0;
	n->row.created_at = n->row.activated_at;
	if ((rc = bc_row_pki_key_insert(tx, &n->row)) <= 0)
		return rc; /* another replica seeded it a moment ago */
	return bc_row_pki_sequence_raise(tx, n->floor, &seq);
}

int bc_pki_keys_seed(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32])
{
	X509 *one[1] = {pki->node_ca};
	int64_t nb = bc_pki_trust_sequence(one, 1);
	struct {
		const char *kind;
		X509 *cert;
		EVP_PKEY *key;
	} g1[] = {{BC_PKI_KIND_NODE_CA, pki->node_ca, pki->node_ca_key},
	          {BC_PKI_KIND_JOIN_SIGNING, NULL, pki->join_signing},
	          {BC_PKI_KIND_JOIN_ENCRYPTION, NULL, pki->join_encryption}};
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(g1) / sizeof(g1[0]); i++) {
		struct new_key n = {0};
		/* active since the bundle began: a generation that follows is activated later */
		n.row.activated_at = nb * 1000;
		n.floor = nb;
		if ((rc = new_key_fill(&n, g1[i].kind, g1[i].cert, g1[i].key, BC_PKI_ACTIVE,
		                       secret)) == 0)
			rc = bc_store_run(st, BC_TX_WRITE, seed_tx, &n);
		new_key_clear(&n);
	}
	return rc;
}

/* ---- the changes ---- */

size_t bc_pki_key_current(const struct bc_pki_key_row *rows, size_t n)
{
	size_t best = n;

	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].state, BC_PKI_ACTIVE) == 0 &&
		    (best == n || rows[i].activated_at > rows[best].activated_at ||
		     (rows[i].activated_at == rows[best].activated_at &&
		      rows[i].id > rows[best].id)))
			best = i;
	return best;
}

int64_t bc_node_ca_last_cert(const struct bc_pki_key_row *rows, size_t n, size_t i)
{
	int64_t next = 0;

	if (rows[i].activated_at == 0)
		return 0;
	/* the first generation activated after it stopped it issuing */
	for (size_t j = 0; j < n; j++) {
		int64_t a = rows[j].activated_at;
		if (j == i || a == 0 || a < rows[i].activated_at ||
		    (a == rows[i].activated_at && rows[j].id < rows[i].id))
			continue;
		if (next == 0 || a < next)
			next = a;
	}
	return next == 0 ? 0 : next + BC_NODE_CA_LAST_CERT_MS;
}

static int list_live(bc_tx *tx, const char *kind, struct bc_pki_key_row **rows, size_t *n)
{
	/* the rows not retired: retired_at NULL */
	return bc_row_pki_keys_list(tx, kind, INT64_MAX, rows, n);
}

/* The prepared row (the one named by id when id is not 0), or n. */
static size_t prepared_of(const struct bc_pki_key_row *rows, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].state, BC_PKI_PREPARED) == 0 && (id == 0 || rows[i].id == id))
			return i;
	return n;
}

static int rotate_tx(bc_tx *tx, void *arg)
{
	struct new_key *nk = arg;
	struct bc_pki_change *c = nk->c;
	struct bc_pki_key_row *rows = NULL;
	size_t n = 0;
	int64_t seq;
	int rc;

	c->why[0] = '\0';
	if ((rc = list_live(tx, c->kind, &rows, &n)) != 0)
		return rc;
	if (prepared_of(rows, n, 0) < n)
		rc = refuse(c,
		            "a %s is already prepared: activate it (pki activate %s) or retire it "
		            "first",
		            nk->k->what, c->kind);
	else if (n >= nk->k->max_in_use)
		rc = refuse(c, "too many %ss in use: retire the old ones first (pki status)",
		            nk->k->what);
	bc_row_pki_keys_free(rows, n);
	if (rc != 0)
		return rc;
	nk->row.created_at = bc_tx_now_ms(tx);
	if ((rc = bc_row_pki_key_insert(tx, &nk->row)) < 0)
		return rc;
	if (rc == 0)
		return BC_ERR_INTERNAL; /* a fresh key already stored */
	c->id = nk->row.id;
	return bc_row_pki_sequence_raise(tx, 0, &seq);
}

int bc_pki_key_rotate(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32],
                      struct bc_pki_change *c)
{
	struct new_key nk = {.c = c, .k = rules_of(c->kind)};
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	int rc;

	c->id = 0;
	c->why[0] = '\0';
	if (nk.k == NULL)
		return BC_ERR_INVALID;
	if ((rc = bc_pki_keys_seed(st, pki, secret)) != 0)
		return rc;
	rc =
	    nk.k->certs ? bc_pki_new_node_ca(pki, bc_now_ms(), &cert, &key) : bc_key_generate(&key);
	if (rc != 0 || (rc = new_key_fill(&nk, c->kind, cert, key, BC_PKI_PREPARED, secret)) != 0)
		goto out;
	rc = bc_store_run(st, BC_TX_WRITE, rotate_tx, &nk);
out:
	new_key_clear(&nk);
	X509_free(cert);
	EVP_PKEY_free(key);
	return rc;
}

struct change {
	struct bc_pki_change *c;
	const struct kind_rules *k;
};

static int activate_tx(bc_tx *tx, void *arg)
{
	struct change *ch = arg;
	struct bc_pki_change *c = ch->c;
	struct bc_pki_key_row *rows = NULL;
	size_t n = 0, i;
	int64_t seq;
	int rc;

	c->why[0] = '\0';
	if ((rc = list_live(tx, c->kind, &rows, &n)) != 0)
		return rc;
	if ((i = prepared_of(rows, n, c->id)) == n) {
		rc = refuse(c, "no prepared %s to activate: `pki rotate %s` prepares one",
		            ch->k->what, c->kind);
	} else {
		c->id = rows[i].id;
		rc = bc_row_pki_key_set_state(tx, c->id, BC_PKI_PREPARED, BC_PKI_ACTIVE,
		                              bc_tx_now_ms(tx), 0);
	}
	bc_row_pki_keys_free(rows, n);
	return rc != 0 ? rc : bc_row_pki_sequence_raise(tx, 0, &seq);
}

int bc_pki_key_activate(bc_store *st, struct bc_pki_change *c)
{
	struct change ch = {.c = c, .k = rules_of(c->kind)};

	c->why[0] = '\0';
	if (ch.k == NULL)
		return BC_ERR_INVALID;
	return bc_store_run(st, BC_TX_WRITE, activate_tx, &ch);
}

/* The row retire picks: the one named, else the oldest active one that is not current;
 * n with a refusal in why when none may be. */
static size_t retire_pick(struct change *ch, const struct bc_pki_key_row *rows, size_t n)
{
	struct bc_pki_change *c = ch->c;
	size_t current = bc_pki_key_current(rows, n), pick = n;

	for (size_t i = 0; i < n; i++) {
		if (c->id != 0 ? rows[i].id != c->id
		               : (i == current || strcmp(rows[i].state, BC_PKI_ACTIVE) != 0))
			continue;
		if (pick == n || rows[i].activated_at < rows[pick].activated_at)
			pick = i;
	}
	if (pick == n && c->id != 0)
		refuse(c, "no %s of that generation is prepared or active (pki status lists them)",
		       ch->k->what);
	else if (pick == n)
		refuse(c,
		       "no %s to retire: only the one that %s is active (rotate and activate "
		       "another first%s)",
		       ch->k->what, ch->k->one,
		       ch->k->force_takes_over ? "; if its key is compromised, prepare one and "
		                                 "retire it by --id with --force"
		                               : "");
	else if (pick == current && !ch->k->force_takes_over)
		refuse(c, "that %s %s: rotate and activate another first", ch->k->what,
		       ch->k->does);
	else if (pick == current && !c->force)
		refuse(c,
		       "that %s %s: rotate and activate another first, or retire it now with "
		       "--force if its key is compromised (a prepared key takes over)",
		       ch->k->what, ch->k->does);
	else if (pick == current && prepared_of(rows, n, 0) == n)
		refuse(c,
		       "that %s %s and no next key is prepared to take over: `pki rotate %s` "
		       "first, then retire it with --force",
		       ch->k->what, ch->k->does, c->kind);
	return c->why[0] != '\0' ? n : pick;
}

/* The current join key retired at once: the prepared one takes over first. */
static int take_over(bc_tx *tx, struct bc_pki_change *c, const struct bc_pki_key_row *rows,
                     size_t n, int64_t now)
{
	size_t p = prepared_of(rows, n, 0);

	c->took_over = rows[p].id;
	c->forced = 1;
	return bc_row_pki_key_set_state(tx, rows[p].id, BC_PKI_PREPARED, BC_PKI_ACTIVE, now, 0);
}

static int retire_tx(bc_tx *tx, void *arg)
{
	struct change *ch = arg;
	struct bc_pki_change *c = ch->c;
	struct bc_pki_key_row *rows = NULL;
	size_t n = 0, i;
	int64_t now = bc_tx_now_ms(tx), seq;
	int rc;

	c->why[0] = '\0';
	c->until = c->took_over = 0;
	c->forced = 0;
	if ((rc = list_live(tx, c->kind, &rows, &n)) != 0)
		return rc;
	rc = BC_ERR_CONFLICT;
	if ((i = retire_pick(ch, rows, n)) == n)
		goto out;
	c->id = rows[i].id;
	if (ch->k->certs) {
		c->until = bc_node_ca_last_cert(rows, n, i);
		c->forced = c->until > now;
	}
	if (c->forced && !c->force) {
		rc = refuse(c, "certificates it signed may be unexpired: retire it after then, or "
		               "now with --force if its key is compromised");
		goto out;
	}
	if (i == bc_pki_key_current(rows, n) && (rc = take_over(tx, c, rows, n, now)) != 0)
		goto out;
	if ((rc = bc_row_pki_key_set_state(tx, c->id, rows[i].state, BC_PKI_RETIRED, now,
	                                   c->forced)) == 0)
		rc = bc_row_pki_sequence_raise(tx, 0, &seq);
out:
	bc_row_pki_keys_free(rows, n);
	return rc;
}

int bc_pki_key_retire(bc_store *st, struct bc_pki_change *c)
{
	struct change ch = {.c = c, .k = rules_of(c->kind)};

	c->why[0] = '\0';
	if (ch.k == NULL)
		return BC_ERR_INVALID;
	return bc_store_run(st, BC_TX_WRITE, retire_tx, &ch);
}

struct listing {
	const char *kind;
	struct bc_pki_key_row *rows;
	size_t n;
	int64_t now;
};

static int list_tx(bc_tx *tx, void *arg)
{
	struct listing *l = arg;

	bc_row_pki_keys_free(l->rows, l->n);
	l->rows = NULL;
	l->n = 0;
	l->now = bc_tx_now_ms(tx);
	return bc_row_pki_keys_list(tx, l->kind, 0, &l->rows, &l->n);
}

int bc_pki_keys_list(bc_store *st, const char *kind, struct bc_pki_key_row **rows, size_t *n,
                     int64_t *now_ms)
{
	struct listing l = {.kind = kind};
	int rc = bc_store_run(st, BC_TX_READ, list_tx, &l);

	*rows = rc == 0 ? l.rows : NULL;
	*n = rc == 0 ? l.n : 0;
	*now_ms = l.now;
	if (rc != 0)
		bc_row_pki_keys_free(l.rows, l.n);
	return rc;
}
