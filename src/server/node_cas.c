/* The node CA generations in the store (node_cas.h). */
#include "server/node_cas.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/log.h"

#define KIND BC_PKI_KIND_NODE_CA
/* retired rows read into a set: those whose leaves may still be unexpired */
#define RETIRED_KEPT_MS (2 * BC_NODE_CA_LAST_CERT_MS)

/* ---- one generation as a row ---- */

struct new_ca {
	struct bc_pki_key_row row; /* cert_pem and key_sealed malloc'd */
	int64_t floor;             /* the sequence at least */
	int64_t id;
	const char *why;
};

static void new_ca_clear(struct new_ca *n)
{
	free(n->row.cert_pem);
	if (n->row.key_sealed != NULL)
		bc_freezero(n->row.key_sealed, strlen(n->row.key_sealed));
	memset(n, 0, sizeof(*n));
}

static int new_ca_fill(struct new_ca *n, X509 *cert, EVP_PKEY *key, const char *state,
                       const uint8_t secret[static 32])
{
	uint8_t sha[32];
	int rc;

	snprintf(n->row.kind, sizeof(n->row.kind), "%s", KIND);
	snprintf(n->row.state, sizeof(n->row.state), "%s", state);
	if ((rc = bc_x509_to_pem(cert, &n->row.cert_pem)) != 0 ||
	    (rc = bc_pki_seal_key(key, secret, &n->row.key_sealed)) != 0 ||
	    (rc = bc_key_spki_sha256(key, sha)) != 0)
		return rc;
	bc_hex_encode_to(sha, sizeof(sha), n->row.public_sha256);
	return 0;
}

/* ---- generation 1 ---- */

static int seed_tx(bc_tx *tx, void *arg)
{
	struct new_ca *n = arg;
	struct bc_pki_key_row *rows = NULL;
	size_t nrows = 0;
	int64_t seq;
	int rc;

	if ((rc = bc_row_pki_keys_list(tx, KIND, 0, &rows, &nrows)) != 0)
		return rc;
	bc_row_pki_keys_free(rows, nrows);
	if (nrows > 0)
		return 0;
	n->row.created_at = n->row.activated_at;
	if ((rc = bc_row_pki_key_insert(tx, &n->row)) <= 0)
		return rc; /* another replica seeded it a moment ago */
	return bc_row_pki_sequence_raise(tx, n->floor, &seq);
}

int bc_node_cas_seed(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32])
{
	struct new_ca n = {0};
	X509 *one[1] = {pki->node_ca};
	int64_t nb = bc_pki_trust_sequence(one, 1);
	int rc;

	/* active since it began: a generation that follows it is activated later */
	n.row.activated_at = nb * 1000;
	n.floor = nb;
	if ((rc = new_ca_fill(&n, pki->node_ca, pki->node_ca_key, BC_PKI_ACTIVE, secret)) == 0)
		rc = bc_store_run(st, BC_TX_WRITE, seed_tx, &n);
	new_ca_clear(&n);
	return rc;
}

/* ---- reading the set ---- */

struct load {
	int64_t known, seq, now;
	struct bc_pki_key_row *rows;
	size_t n;
};

static int load_tx(bc_tx *tx, void *arg)
{
	struct load *l = arg;
	int rc;

	bc_row_pki_keys_free(l->rows, l->n);
	l->rows = NULL;
	l->n = 0;
	l->now = bc_tx_now_ms(tx);
	if ((rc = bc_row_pki_sequence(tx, &l->seq)) != 0 || (l->known != 0 && l->seq == l->known))
		return rc;
	return bc_row_pki_keys_list(tx, KIND, l->now - RETIRED_KEPT_MS, &l->rows, &l->n);
}

static enum bc_ca_state state_of(const char *s)
{
	return strcmp(s, BC_PKI_PREPARED) == 0 ? BC_CA_PREPARED
	       : strcmp(s, BC_PKI_ACTIVE) == 0 ? BC_CA_ACTIVE
	                                       : BC_CA_RETIRED;
}

static int add_row(struct bc_node_cas *cas, const struct bc_pki_key_row *r,
                   const uint8_t secret[static 32])
{
	struct bc_node_ca ca = {.id = r->id,
	                        .state = state_of(r->state),
	                        .created_ms = r->created_at,
	                        .activated_ms = r->activated_at,
	                        .retired_ms = r->retired_at};
	int rc;

	/* a CA retired the ordinary way took no unexpired leaf with it */
	if (ca.state == BC_CA_RETIRED && !r->forced)
		return 0;
	if ((rc = bc_x509_from_pem(r->cert_pem, &ca.cert)) != 0)
		return rc;
	if (ca.state != BC_CA_RETIRED &&
	    (rc = bc_pki_open_key(r->key_sealed, secret, &ca.key)) != 0)
		goto fail;
	if ((rc = bc_node_cas_add(cas, &ca)) == 0)
		return 0;
fail:
	X509_free(ca.cert);
	EVP_PKEY_free(ca.key);
	return rc;
}

int bc_node_cas_refresh(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32],
                        int64_t *known)
{
	struct load l = {.known = *known};
	struct bc_node_cas *cas = NULL;
	int rc;

	if (*known == 0 && (rc = bc_node_cas_seed(st, pki, secret)) != 0)
		return rc;
	if ((rc = bc_store_run(st, BC_TX_READ, load_tx, &l)) != 0 || l.rows == NULL)
		goto out;
	if ((rc = bc_node_cas_new(l.seq, &cas)) != 0)
		goto out;
	for (size_t i = 0; i < l.n && rc == 0; i++)
		rc = add_row(cas, &l.rows[i], secret);
	if (rc == 0 && (rc = bc_node_cas_finish(cas)) == 0) {
		bc_pki_node_cas_install(pki, cas);
		cas = NULL;
		*known = l.seq;
	}
out:
	bc_node_cas_put(cas);
	bc_row_pki_keys_free(l.rows, l.n);
	return rc;
}

/* ---- the changes ---- */

/* The index of the active row activated last (it issues), or n. */
static size_t issuing_of(const struct bc_pki_key_row *rows, size_t n)
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

static int list_live(bc_tx *tx, struct bc_pki_key_row **rows, size_t *n)
{
	/* the rows not retired: retired_at NULL */
	return bc_row_pki_keys_list(tx, KIND, INT64_MAX, rows, n);
}

static int rotate_tx(bc_tx *tx, void *arg)
{
	struct new_ca *c = arg;
	struct bc_pki_key_row *rows = NULL;
	size_t n = 0;
	int64_t seq;
	int rc;

	c->why = NULL;
	if ((rc = list_live(tx, &rows, &n)) != 0)
		return rc;
	for (size_t i = 0; i < n && c->why == NULL; i++)
		if (strcmp(rows[i].state, BC_PKI_PREPARED) == 0)
			c->why =
			    "a node CA is already prepared: activate it (pki activate node-ca) "
			    "or retire it first";
	if (c->why == NULL && n >= BC_NODE_CAS_MAX - 1)
		c->why = "too many node CAs in use: retire the old ones first (pki status)";
	bc_row_pki_keys_free(rows, n);
	if (c->why != NULL)
		return BC_ERR_CONFLICT;
	c->row.created_at = bc_tx_now_ms(tx);
	if ((rc = bc_row_pki_key_insert(tx, &c->row)) < 0)
		return rc;
	if (rc == 0)
		return BC_ERR_INTERNAL; /* a fresh key already stored */
	c->id = c->row.id;
	return bc_row_pki_sequence_raise(tx, 0, &seq);
}

int bc_node_ca_rotate(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32], int64_t *id,
                      const char **why)
{
	struct new_ca c = {0};
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	int rc;

	*id = 0;
	*why = NULL;
	if ((rc = bc_node_cas_seed(st, pki, secret)) != 0)
		return rc;
	if ((rc = bc_pki_new_node_ca(pki, bc_now_ms(), &cert, &key)) != 0 ||
	    (rc = new_ca_fill(&c, cert, key, BC_PKI_PREPARED, secret)) != 0)
		goto out;
	rc = bc_store_run(st, BC_TX_WRITE, rotate_tx, &c);
	*id = c.id;
	*why = c.why;
out:
	new_ca_clear(&c);
	X509_free(cert);
	EVP_PKEY_free(key);
	return rc;
}

struct change {
	int64_t id, until;
	int force;
	const char *why;
};

static int activate_tx(bc_tx *tx, void *arg)
{
	struct change *c = arg;
	struct bc_pki_key_row *rows = NULL;
	size_t n = 0, i;
	int64_t seq;
	int rc;

	c->why = NULL;
	if ((rc = list_live(tx, &rows, &n)) != 0)
		return rc;
	for (i = 0; i < n; i++)
		if (strcmp(rows[i].state, BC_PKI_PREPARED) == 0 &&
		    (c->id == 0 || rows[i].id == c->id))
			break;
	if (i == n) {
		c->why = "no prepared node CA to activate: `pki rotate node-ca` prepares one";
		rc = BC_ERR_CONFLICT;
	} else {
		c->id = rows[i].id;
		rc = bc_row_pki_key_set_state(tx, c->id, BC_PKI_PREPARED, BC_PKI_ACTIVE,
		                              bc_tx_now_ms(tx), 0);
	}
	bc_row_pki_keys_free(rows, n);
	return rc != 0 ? rc : bc_row_pki_sequence_raise(tx, 0, &seq);
}

int bc_node_ca_activate(bc_store *st, int64_t *id, const char **why)
{
	struct change c = {.id = *id};
	int rc = bc_store_run(st, BC_TX_WRITE, activate_tx, &c);

	*id = c.id;
	*why = c.why;
	return rc;
}

/* The row retire picks: the one named, else the oldest active one that no longer
 * issues; n with c->why set when none may be. */
static size_t retire_pick(struct change *c, const struct bc_pki_key_row *rows, size_t n)
{
	size_t issuing = issuing_of(rows, n), pick = n;

	for (size_t i = 0; i < n; i++) {
		if (c->id != 0 ? rows[i].id != c->id
		               : (i == issuing || strcmp(rows[i].state, BC_PKI_ACTIVE) != 0))
			continue;
		if (pick == n || rows[i].activated_at < rows[pick].activated_at)
			pick = i;
	}
	if (pick == n)
		c->why = c->id != 0 ? "no node CA of that generation is prepared or active "
		                      "(pki status lists them)"
		                    : "no node CA to retire: only the one that issues is active "
		                      "(rotate and activate another first)";
	else if (pick == issuing)
		c->why = "that node CA issues node certificates: rotate and activate another "
		         "first";
	return c->why != NULL ? n : pick;
}

static int retire_tx(bc_tx *tx, void *arg)
{
	struct change *c = arg;
	struct bc_pki_key_row *rows = NULL;
	size_t n = 0, i;
	int64_t now = bc_tx_now_ms(tx), seq;
	int rc, early = 0;

	c->why = NULL;
	c->until = 0;
	if ((rc = list_live(tx, &rows, &n)) != 0)
		return rc;
	rc = BC_ERR_CONFLICT;
	if ((i = retire_pick(c, rows, n)) == n)
		goto out;
	c->id = rows[i].id;
	c->until = bc_node_ca_last_cert(rows, n, i);
	early = c->until > now;
	if (early && !c->force) {
		c->why = "certificates it signed may be unexpired: retire it after then, or now "
		         "with --force if its key is compromised";
		goto out;
	}
	if ((rc = bc_row_pki_key_set_state(tx, c->id, rows[i].state, BC_PKI_RETIRED, now, early)) ==
	    0)
		rc = bc_row_pki_sequence_raise(tx, 0, &seq);
out:
	bc_row_pki_keys_free(rows, n);
	return rc;
}

int bc_node_ca_retire(bc_store *st, int64_t *id, int force, int64_t *until, const char **why)
{
	struct change c = {.id = *id, .force = force};
	int rc = bc_store_run(st, BC_TX_WRITE, retire_tx, &c);

	*id = c.id;
	*until = c.until;
	*why = c.why;
	return rc;
}

struct listing {
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
	return bc_row_pki_keys_list(tx, KIND, 0, &l->rows, &l->n);
}

int bc_node_cas_list(bc_store *st, struct bc_pki_key_row **rows, size_t *n, int64_t *now_ms)
{
	struct listing l = {0};
	int rc = bc_store_run(st, BC_TX_READ, list_tx, &l);

	*rows = rc == 0 ? l.rows : NULL;
	*n = rc == 0 ? l.n : 0;
	*now_ms = l.now;
	if (rc != 0)
		bc_row_pki_keys_free(l.rows, l.n);
	return rc;
}

/* ---- the refresh thread ---- */

struct bc_node_cas_watch {
	bc_store *st;
	const bc_pki *pki;
	uint8_t secret[32];
	int64_t known;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int stop, started, failing;
};

static void refresh_once(struct bc_node_cas_watch *w)
{
	int rc = bc_node_cas_refresh(w->st, w->pki, w->secret, &w->known);

	/* one line when it starts failing and one when it recovers, not one a tick */
	if (rc != 0 && !w->failing)
		bc_log(BC_LOG_WARN,
		       "cannot read the node CAs from the store; issuing with the set "
		       "read before, trying again",
		       "error", bc_err_str(rc), NULL);
	else if (rc == 0 && w->failing)
		bc_log(BC_LOG_INFO, "read the node CAs from the store again", NULL);
	w->failing = rc != 0;
}

static void *watch_main(void *arg)
{
	struct bc_node_cas_watch *w = arg;
	struct timespec at;

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_nsec += (long)(BC_NODE_CAS_REFRESH_MS % 1000) * 1000000L;
		at.tv_sec += BC_NODE_CAS_REFRESH_MS / 1000 + at.tv_nsec / 1000000000L;
		at.tv_nsec %= 1000000000L;
		while (!w->stop && pthread_cond_timedwait(&w->cond, &w->mu, &at) == 0)
			;
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->mu);
		refresh_once(w);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int bc_node_cas_watch_start(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32],
                            int64_t known, struct bc_node_cas_watch **out)
{
	struct bc_node_cas_watch *w;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return BC_ERR_NOMEM;
	w->st = st;
	w->pki = pki;
	w->known = known;
	memcpy(w->secret, secret, 32);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		bc_node_cas_watch_stop(w);
		return BC_ERR_INTERNAL;
	}
	w->started = 1;
	*out = w;
	return 0;
}

void bc_node_cas_watch_stop(struct bc_node_cas_watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	if (w->started)
		pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cond);
	OPENSSL_cleanse(w->secret, sizeof(w->secret));
	free(w);
}
