/* The cloud-iid JWKS cache: a file or an https URL, loaded in check() (never inside
 * the join's transaction), kept an hour, loaded again on an unknown kid at most once
 * a minute. A set in use stays alive (refcounted) while a newer one replaces it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/cloud_iid.h"
#include "bc/fetch.h"
#include "bc/files.h"

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

void jwks_put(struct jwks_src *s, struct jwks_ref *r)
{
	int last;

	if (r == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	last = --r->refs == 0;
	pthread_mutex_unlock(&s->mu);
	if (last) {
		bc_jwks_free(r->keys);
		free(r);
	}
}

/* Under s->mu: replaces the current set with a fresh load, when one succeeds. */
static int reload(struct jwks_src *s, int64_t now_ms, char *err, size_t errlen)
{
	struct jwks_ref *r, *old;
	bc_jwks *k = NULL;
	int rc;

	s->tried_ms = now_ms;
	if ((rc = load(s, &k, err, errlen)) != 0)
		return rc;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		bc_jwks_free(k);
		return BC_ERR_NOMEM;
	}
	r->keys = k;
	r->refs = 1; /* the source's own */
	old = s->cur;
	s->cur = r;
	s->loaded_ms = now_ms;
	if (old && --old->refs == 0) {
		bc_jwks_free(old->keys);
		free(old);
	}
	return 0;
}

struct jwks_ref *jwks_get(struct jwks_src *s, int64_t now_ms, int refresh, char *err, size_t errlen)
{
	struct jwks_ref *r = NULL;
	int stale;

	pthread_mutex_lock(&s->mu);
	stale =
	    s->cur == NULL || now_ms - s->loaded_ms >= CLOUD_JWKS_TTL_MS || now_ms < s->loaded_ms;
	/* a failed or refreshed load is not tried again within the minute */
	if ((stale || refresh) &&
	    (s->tried_ms == 0 || now_ms - s->tried_ms >= CLOUD_REFETCH_MS || now_ms < s->tried_ms))
		(void)reload(s, now_ms, err, errlen);
	else if (s->cur == NULL)
		snprintf(err, errlen,
		         "%s: no key set (the last load failed less than a minute ago)",
		         s->location);
	if ((r = s->cur) != NULL)
		r->refs++;
	pthread_mutex_unlock(&s->mu);
	return r;
}

int jwks_src_init(struct jwks_src *s, const char *location, const char *ca_file, char *err,
                  size_t errlen)
{
	bc_jwks *k = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
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
		return 0;
	}
	/* a file is read now, so a mistake is reported at start */
	if ((rc = load(s, &k, err, errlen)) != 0)
		return BC_ERR_CONFIG;
	bc_jwks_free(k);
	return 0;
}

void jwks_src_clear(struct jwks_src *s)
{
	if (s->cur && --s->cur->refs == 0) {
		bc_jwks_free(s->cur->keys);
		free(s->cur);
	}
	free(s->location);
	free(s->ca_file);
	pthread_mutex_destroy(&s->mu);
	memset(s, 0, sizeof(*s));
}
