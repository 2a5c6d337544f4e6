/* The cloud-iid JWKS cache.
 *
 * A file is trust the operator placed: read when the server is configured (refused
 * when others may write it) and again only after a SIGHUP (bc/reload.h), at its next
 * use, never on an unknown kid: appending a key to it admits nothing until the
 * operator says so. A file that fails on SIGHUP leaves the set read before.
 *
 * A URL is fetched by one refresher thread per source, never by a join: the first
 * load at start, again after an hour (the set in use stays meanwhile), and on a
 * token whose kid the set lacks, at most once a minute (key rotation). A join that
 * needs a load (no set yet, or an unknown kid) waits for it at most
 * CLOUD_JWKS_WAIT_MS, and only CLOUD_JWKS_WAITERS joins wait at once; the rest, and
 * those whose wait ends first, go on with the set there is (jws-kid,
 * jwks-unavailable). The lock is never held across a fetch. A set in use stays alive
 * (refcounted) while a newer one replaces it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest/cloud_iid.h"
#include "bc/clock.h"
#include "bc/fetch.h"
#include "bc/files.h"
#include "bc/log.h"
#include "bc/reload.h"

static int load(const struct jwks_src *s, bc_jwks **out, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	long status = 0;
	int rc;

	*out = NULL;
	if (s->is_url) {
		struct bc_fetch f = {.url = s->location,
		                     .ca_file = s->ca_file,
		                     .http = BC_FETCH_HTTP_LOOPBACK,
		                     .max = BC_JWKS_MAX};
		if ((rc = bc_fetch_run(&f, &status, &text, &len, err, errlen)) == 0 &&
		    status != 200) {
			snprintf(err, errlen, "%s: HTTP status %ld", s->location, status);
			rc = BC_ERR_UNAVAILABLE;
		}
	} else if ((rc = bc_file_check_mode(s->location, 0, err, errlen)) != 0) {
		return rc;
	} else if ((rc = bc_file_read(s->location, BC_JWKS_MAX, BC_FILE_FOLLOW | BC_FILE_TEXT,
	                              &text, &len)) != 0) {
		snprintf(err, errlen, "%s: cannot read (%s)", s->location, bc_err_str(rc));
	}
	if (rc == 0 && (rc = bc_jwks_parse(text, len, out)) != 0)
		snprintf(err, errlen, "%s: not a JWKS of RSA or P-256 keys with kids (%s)",
		         s->location, bc_err_str(rc));
	free(text);
	return rc;
}

static void ref_drop(struct jwks_ref *r)
{
	bc_jwks_free(r->keys);
	free(r);
}

void jwks_put(struct jwks_src *s, struct jwks_ref *r)
{
	int last;

	if (r == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	last = --r->refs == 0;
	pthread_mutex_unlock(&s->mu);
	if (last)
		ref_drop(r);
}

/* Under s->mu: k becomes the current set. */
static int install(struct jwks_src *s, bc_jwks *k, int64_t now_ms)
{
	struct jwks_ref *r, *old;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		bc_jwks_free(k);
		return BC_ERR_NOMEM;
	}
	r->keys = k;
	r->refs = 1; /* the source's own */
	old = s->cur;
	s->cur = r;
	s->loaded_ms = now_ms;
	if (old && --old->refs == 0)
		ref_drop(old);
	return 0;
}

/* The refresher: one load per request, outside the lock. */
static void *refresher(void *arg)
{
	struct jwks_src *s = arg;
	char err[512];
	bc_jwks *k;
	int rc;

	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		if (!s->want) {
			pthread_cond_wait(&s->work, &s->mu);
			continue;
		}
		s->want = 0;
		s->loading = 1;
		pthread_mutex_unlock(&s->mu);
		err[0] = 0;
		k = NULL;
		rc = load(s, &k, err, sizeof(err));
		if (rc != 0)
			bc_log(BC_LOG_WARN, "cloud-iid: JWKS load failed", "jwks", s->location,
			       "error", err, NULL);
		pthread_mutex_lock(&s->mu);
		if (rc == 0 && install(s, k, bc_now_ms()) == 0)
			s->last_err[0] = 0;
		else if (rc != 0)
			snprintf(s->last_err, sizeof(s->last_err), "%s", err);
		s->loading = 0;
		s->loads++;
		pthread_cond_broadcast(&s->done);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Under s->mu: asks the refresher for a load unless one was asked for within the
 * minute (a clock gone back allows it). 1 when a load is pending or running. */
static int request(struct jwks_src *s, int64_t now_ms)
{
	if (!s->want && !s->loading &&
	    (s->tried_ms == 0 || now_ms - s->tried_ms >= CLOUD_REFETCH_MS ||
	     now_ms < s->tried_ms)) {
		s->tried_ms = now_ms;
		s->want = 1;
		pthread_cond_signal(&s->work);
	}
	return s->want || s->loading;
}

/* Under s->mu: waits for the load pending or running to end, at most
 * CLOUD_JWKS_WAIT_MS of real time, when fewer than CLOUD_JWKS_WAITERS wait already. */
static void wait_load(struct jwks_src *s)
{
	uint64_t seen = s->loads;
	struct timespec until;

	if (s->waiters >= CLOUD_JWKS_WAITERS || clock_gettime(CLOCK_MONOTONIC, &until) != 0)
		return;
	until.tv_sec += CLOUD_JWKS_WAIT_MS / 1000;
	until.tv_nsec += (CLOUD_JWKS_WAIT_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	s->waiters++;
	while (s->loads == seen && !s->stop &&
	       pthread_cond_timedwait(&s->done, &s->mu, &until) != ETIMEDOUT)
		;
	s->waiters--;
}

/* A file, after a SIGHUP it has not been read since: read again by the first join
 * to see it, outside the lock (the others go on with the set there is). */
static void file_sighup(struct jwks_src *s)
{
	uint64_t g = bc_reload_generation();
	char err[512] = "";
	bc_jwks *k = NULL;
	int claim, rc;

	pthread_mutex_lock(&s->mu);
	if ((claim = g != s->gen) != 0)
		s->gen = g;
	pthread_mutex_unlock(&s->mu);
	if (!claim)
		return;
	if ((rc = load(s, &k, err, sizeof(err))) == 0) {
		pthread_mutex_lock(&s->mu);
		rc = install(s, k, bc_now_ms());
		pthread_mutex_unlock(&s->mu);
	}
	if (rc != 0)
		bc_log(BC_LOG_WARN,
		       "cloud-iid: JWKS file not read again after SIGHUP; the set read "
		       "before stays",
		       "jwks", s->location, "error", err[0] ? err : bc_err_str(rc), NULL);
	else
		bc_log(BC_LOG_INFO, "cloud-iid: JWKS file read again after SIGHUP", "jwks",
		       s->location, NULL);
}

struct jwks_ref *jwks_get(struct jwks_src *s, int64_t now_ms, const char *kid, char *err,
                          size_t errlen)
{
	struct jwks_ref *r;
	int stale, need;

	if (!s->is_url)
		file_sighup(s);
	pthread_mutex_lock(&s->mu);
	if (s->is_url) {
		stale = s->cur == NULL || now_ms - s->loaded_ms >= CLOUD_JWKS_TTL_MS ||
		        now_ms < s->loaded_ms;
		/* a stale set serves while the refresher loads the next */
		need = s->cur == NULL || (kid && !bc_jwks_has(s->cur->keys, kid));
		if ((stale || need) && request(s, now_ms) && need)
			wait_load(s);
	}
	if ((r = s->cur) != NULL)
		r->refs++;
	else
		snprintf(err, errlen, "%s: no key set yet (%s)", s->location,
		         s->last_err[0] ? s->last_err
		                        : "the first load has not ended; retried after a minute");
	pthread_mutex_unlock(&s->mu);
	return r;
}

static int start_refresher(struct jwks_src *s)
{
	pthread_condattr_t a;

	if (pthread_condattr_init(&a) != 0)
		return BC_ERR_NOMEM;
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (pthread_cond_init(&s->done, &a) != 0 || pthread_cond_init(&s->work, NULL) != 0) {
		pthread_condattr_destroy(&a);
		return BC_ERR_NOMEM;
	}
	pthread_condattr_destroy(&a);
	s->conds = 1;
	/* the first load now, in the background */
	s->tried_ms = bc_now_ms();
	s->want = 1;
	if (pthread_create(&s->thread, NULL, refresher, s) != 0)
		return BC_ERR_NOMEM;
	s->has_thread = 1;
	return 0;
}

int jwks_src_init(struct jwks_src *s, const char *location, const char *ca_file, char *err,
                  size_t errlen)
{
	bc_jwks *k = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->inited = 1;
	s->is_url = strstr(location, "://") != NULL;
	if ((s->location = strdup(location)) == NULL ||
	    (ca_file && (s->ca_file = strdup(ca_file)) == NULL))
		return BC_ERR_NOMEM;
	if (s->is_url) {
		if (!bc_fetch_url_allowed(location, BC_FETCH_HTTP_LOOPBACK)) {
			snprintf(err, errlen,
			         "%s: expected an https URL (plain http only to loopback)",
			         location);
			return BC_ERR_CONFIG;
		}
		return start_refresher(s);
	}
	/* a file is read now (and after a SIGHUP): a mistake is reported at start */
	s->gen = bc_reload_generation();
	if ((rc = load(s, &k, err, errlen)) != 0)
		return rc == BC_ERR_NOMEM ? rc : BC_ERR_CONFIG;
	return install(s, k, bc_now_ms());
}

void jwks_src_clear(struct jwks_src *s)
{
	if (!s->inited)
		return;
	if (s->has_thread) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_signal(&s->work);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
	}
	if (s->conds) {
		pthread_cond_destroy(&s->work);
		pthread_cond_destroy(&s->done);
	}
	if (s->cur && --s->cur->refs == 0)
		ref_drop(s->cur);
	free(s->location);
	free(s->ca_file);
	pthread_mutex_destroy(&s->mu);
	memset(s, 0, sizeof(*s));
}
