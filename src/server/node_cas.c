/* The node CA and join key set read from the store, and the thread that keeps it current
 * (node_cas.h). */
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
#include "server/pki_changes.h"

/* retired rows read into a set: those whose leaves may still be unexpired */
#define RETIRED_KEPT_MS (2 * BC_NODE_CA_LAST_CERT_MS)

/* ---- reading the set ---- */

/* The rows of the three kinds: the node CAs (retired ones only while their leaves may be
 * unexpired), then the join signing and the join encryption keys (every row: which of
 * the retired ones a set keeps is add_join_rows's choice). */
static const char *const kinds[] = {BC_PKI_KIND_NODE_CA, BC_PKI_KIND_JOIN_SIGNING,
                                    BC_PKI_KIND_JOIN_ENCRYPTION};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

struct load {
	int64_t known, seq, now;
	int moved;
	struct bc_pki_key_row *rows[N_KINDS];
	size_t n[N_KINDS];
};

static void load_clear(struct load *l)
{
	for (size_t k = 0; k < N_KINDS; k++) {
		bc_row_pki_keys_free(l->rows[k], l->n[k]);
		l->rows[k] = NULL;
		l->n[k] = 0;
	}
}

static int load_tx(bc_tx *tx, void *arg)
{
	struct load *l = arg;
	int rc = 0;

	load_clear(l);
	l->moved = 0;
	l->now = bc_tx_now_ms(tx);
	if ((rc = bc_row_pki_sequence(tx, &l->seq)) != 0 || (l->known != 0 && l->seq == l->known))
		return rc;
	l->moved = 1;
	for (size_t k = 0; k < N_KINDS && rc == 0; k++)
		rc = bc_row_pki_keys_list(tx, kinds[k], k == 0 ? l->now - RETIRED_KEPT_MS : 0,
		                          &l->rows[k], &l->n[k]);
	return rc;
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

/* The public half of key (freed): a retired key's private part stays sealed. */
static int public_only(EVP_PKEY **key)
{
	uint8_t *der = NULL;
	size_t len = 0;
	EVP_PKEY *pub = NULL;
	int rc;

	if ((rc = bc_key_spki(*key, &der, &len)) == 0)
		rc = bc_key_from_spki(der, len, &pub);
	free(der);
	EVP_PKEY_free(*key);
	*key = pub;
	return rc;
}

static int add_join_row(struct bc_node_cas *cas, enum bc_join_key_use use,
                        const struct bc_pki_key_row *r, const uint8_t secret[static 32])
{
	struct bc_join_key k = {
	    .use = use, .id = r->id, .activated_ms = r->activated_at, .retired_ms = r->retired_at};
	int rc;

	k.state = strcmp(r->state, BC_PKI_PREPARED) == 0 ? BC_JOIN_KEY_NEXT
	          : strcmp(r->state, BC_PKI_ACTIVE) == 0 ? BC_JOIN_KEY_ACTIVE
	                                                 : BC_JOIN_KEY_RETIRED;
	if ((rc = bc_pki_open_key(r->key_sealed, secret, &k.key)) != 0 ||
	    (k.state == BC_JOIN_KEY_RETIRED && (rc = public_only(&k.key)) != 0)) {
		EVP_PKEY_free(k.key);
		return rc;
	}
	return bc_node_cas_add_join(cas, &k);
}

/* The join keys in use, then the retired ones, the last made first, while they fit. */
static int add_join_rows(struct bc_node_cas *cas, const struct load *l,
                         const uint8_t secret[static 32])
{
	int rc = 0;

	for (size_t k = 1; k < N_KINDS; k++)
		for (size_t i = 0; i < l->n[k] && rc == 0; i++)
			if (strcmp(l->rows[k][i].state, BC_PKI_RETIRED) != 0)
				rc = add_join_row(cas, (enum bc_join_key_use)k, &l->rows[k][i],
				                  secret);
	for (size_t k = 1; k < N_KINDS; k++)
		for (size_t i = l->n[k]; i-- > 0 && rc == 0 && cas->n_join < BC_JOIN_SET_MAX;)
			if (strcmp(l->rows[k][i].state, BC_PKI_RETIRED) == 0)
				rc = add_join_row(cas, (enum bc_join_key_use)k, &l->rows[k][i],
				                  secret);
	return rc;
}

int bc_node_cas_refresh(bc_store *st, const bc_pki *pki, const uint8_t secret[static 32],
                        int64_t *known)
{
	struct load l = {.known = *known};
	struct bc_node_cas *cas = NULL;
	int rc;

	if (*known == 0 && (rc = bc_pki_keys_seed(st, pki, secret)) != 0)
		return rc;
	if ((rc = bc_store_run(st, BC_TX_READ, load_tx, &l)) != 0 || !l.moved)
		goto out;
	if ((rc = bc_node_cas_new(l.seq, &cas)) != 0)
		goto out;
	for (size_t i = 0; i < l.n[0] && rc == 0; i++)
		rc = add_row(cas, &l.rows[0][i], secret);
	if (rc == 0)
		rc = add_join_rows(cas, &l, secret);
	if (rc == 0 && (rc = bc_node_cas_finish(cas)) == 0) {
		bc_pki_node_cas_install(pki, cas);
		cas = NULL;
		*known = l.seq;
	}
out:
	bc_node_cas_put(cas);
	load_clear(&l);
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
