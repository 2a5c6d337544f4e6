/* The server's own TLS certificate: renewed when the server TLS CA issued it, its
 * expiry said when the operator supplied it (server_tls.h). */
#include "server/server_tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bc/clock.h"
#include "bc/buf.h"
#include "bc/log.h"

#define CHECK_EVERY_S 60
#define DAY_MS        (24LL * 3600 * 1000)

struct bc_tls_watch {
	const bc_pki *pki;
	struct bc_http *http;
	pthread_mutex_t mu; /* info and warned_ms */
	struct bc_server_tls info;
	int64_t warned_ms;
	pthread_cond_t cond;
	int stop;
	pthread_t thread;
	int running;
};

/* A new certificate for the same names, served from the next connection on. */
static int renew(struct bc_tls_watch *w)
{
	struct bc_server_tls next;
	char *cert = NULL, *key = NULL, na[32];
	int rc;

	rc = bc_pki_server_tls_cert(w->pki, (const char *const *)w->info.hosts, w->info.n_hosts,
	                            &cert, &key);
	if (rc == 0)
		rc = bc_http_set_tls(w->http, cert, key);
	if (rc == 0)
		rc = bc_pki_server_tls_read(w->pki, cert, &next);
	free(cert);
	if (key != NULL)
		bc_freezero(key, strlen(key));
	if (rc != 0) {
		bc_log(BC_LOG_ERROR,
		       "cannot renew the server TLS certificate; the old one is served, retried "
		       "in a minute",
		       "error", bc_err_str(rc), NULL);
		return 0;
	}
	bc_server_tls_clear(&w->info);
	w->info = next;
	bc_time_format_ms(next.not_after_ms, na, sizeof(na));
	bc_log(BC_LOG_INFO, "renewed the server TLS certificate", "notAfter", na, NULL);
	return 1;
}

/* An operator's certificate: a warning a day from two thirds into its life. */
static void warn_expiry(struct bc_tls_watch *w, int64_t now)
{
	char na[32];

	if (w->warned_ms != 0 && now - w->warned_ms < DAY_MS)
		return;
	w->warned_ms = now;
	bc_time_format_ms(w->info.not_after_ms, na, sizeof(na));
	bc_log(now >= w->info.not_after_ms ? BC_LOG_ERROR : BC_LOG_WARN,
	       now >= w->info.not_after_ms
	           ? "the TLS certificate ([tls] cert) has expired: agents cannot renew; replace "
	             "it and restart"
	           : "the TLS certificate ([tls] cert) expires soon: replace it and restart "
	             "(the server renews only a certificate its TLS CA issued)",
	       "notAfter", na, NULL);
}

int bc_tls_watch_check(struct bc_tls_watch *w)
{
	int64_t now = bc_now_ms();
	int renewed = 0;

	pthread_mutex_lock(&w->mu);
	if (now >= bc_server_tls_renew_at(&w->info)) {
		if (w->info.ours)
			renewed = renew(w);
		else
			warn_expiry(w, now);
	}
	pthread_mutex_unlock(&w->mu);
	return renewed;
}

void bc_tls_watch_expiry(struct bc_tls_watch *w, int64_t *not_after_ms, int *ours)
{
	pthread_mutex_lock(&w->mu);
	*not_after_ms = w->info.not_after_ms;
	*ours = w->info.ours;
	pthread_mutex_unlock(&w->mu);
}

static void *watch_main(void *arg)
{
	struct bc_tls_watch *w = arg;
	struct timespec until;

	for (;;) {
		pthread_mutex_lock(&w->mu);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += CHECK_EVERY_S;
		while (!w->stop && pthread_cond_timedwait(&w->cond, &w->mu, &until) != ETIMEDOUT)
			;
		if (w->stop) {
			pthread_mutex_unlock(&w->mu);
			return NULL;
		}
		pthread_mutex_unlock(&w->mu);
		(void)bc_tls_watch_check(w);
	}
}

int bc_tls_watch_start(const bc_pki *pki, struct bc_http *http, const char *cert_pem,
                       struct bc_tls_watch **out)
{
	struct bc_tls_watch *w;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return BC_ERR_NOMEM;
	w->pki = pki;
	w->http = http;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = bc_pki_server_tls_read(pki, cert_pem, &w->info)) != 0) {
		bc_tls_watch_stop(w);
		return rc;
	}
	(void)bc_tls_watch_check(w);
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		bc_tls_watch_stop(w);
		return BC_ERR_NOMEM;
	}
	w->running = 1;
	*out = w;
	return 0;
}

void bc_tls_watch_stop(struct bc_tls_watch *w)
{
	if (w == NULL)
		return;
	if (w->running) {
		pthread_mutex_lock(&w->mu);
		w->stop = 1;
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
	}
	bc_server_tls_clear(&w->info);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
