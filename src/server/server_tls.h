/* The server's own TLS certificate over its life. A certificate the bundle's server
 * TLS CA issued (what `init` writes) is renewed by the server two thirds into its life,
 * for the same names, and served from the next connection on without a restart; each
 * replica renews its own, in memory (tls.crt on disk is left as it is: a replica that
 * starts with an old one renews it at once). A certificate the operator supplied is
 * never replaced: from two thirds into its life, a warning a day says when it expires.
 * Both show in bc_tls_certificate_expiry_timestamp_seconds. */
#ifndef BC_SERVER_SERVER_TLS_H
#define BC_SERVER_SERVER_TLS_H

#include <stdint.h>

#include "bc/pki.h"
#include "server/http.h"

struct bc_tls_watch;

/* Reads cert_pem (what http serves now), checks it once (renewing it when due) and
 * starts a thread that checks it every minute. pki and http outlive the watch.
 * BC_ERR_INVALID when cert_pem holds no certificate. */
BC_WUR int bc_tls_watch_start(const bc_pki *pki, struct bc_http *http, const char *cert_pem,
                              struct bc_tls_watch **out);
/* The check the thread makes, at bc_now_ms(): 1 when it renewed the certificate. */
int bc_tls_watch_check(struct bc_tls_watch *w);
/* The certificate served now: its notAfter (ms) and whether the server renews it. */
void bc_tls_watch_expiry(struct bc_tls_watch *w, int64_t *not_after_ms, int *ours);
/* Stops the thread and frees; NULL is a no-op. */
void bc_tls_watch_stop(struct bc_tls_watch *w);

#endif
