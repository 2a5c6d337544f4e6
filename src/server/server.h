/* The control plane as a library: what `better-compute serve` runs, and what tests
 * and embedders start in-process (bc_server_new in DESIGN.md).
 *
 * bc_server_start() loads the secret and the PKI bundle named by the config, opens
 * the store (applying migrations), registers the built-in attestors and the plugins,
 * configures them, and listens. A refusal hook given here is called for every join
 * refusal in addition to the config's on_refusal command (the hook sees each one,
 * summarized or not; the command, the published ones only). */
#ifndef BC_SERVER_SERVER_H
#define BC_SERVER_SERVER_H

#include <stdint.h>

#include "join/join.h"
#include "server/config.h"

struct bc_server;

BC_WUR int bc_server_start(const struct bc_server_config *cfg, bc_refusal_fn hook, void *hook_ctx,
                           struct bc_server **out, char *err, size_t errlen);
uint16_t bc_server_port(const struct bc_server *s);
/* The ids of the attestors that run, comma-separated, into out (cut at outlen). */
void bc_server_attestors(const struct bc_server *s, char *out, size_t outlen);
/* The metrics_listen listener's bound port; 0 without one. */
uint16_t bc_server_metrics_port(const struct bc_server *s);
struct bc_join_service *bc_server_join(struct bc_server *s);
bc_store *bc_server_store(struct bc_server *s);
/* Runs the prune the server runs every prune_interval_seconds, once, now, with the
 * retention of its config; its counts go to /metrics (bc_prune_deleted_total) like a
 * scheduled one's. */
void bc_server_prune_now(struct bc_server *s);
const bc_pki *bc_server_pki(const struct bc_server *s);
/* The PKI bundle cfg names, opened with its secret_file (both checked for mode 0600);
 * err says what to do when it fails (BC_ERR_CONFIG). */
BC_WUR int bc_server_pki_load(const struct bc_server_config *cfg, bc_pki **out, char *err,
                              size_t errlen);
/* Refusals the on_refusal command never saw (its queue was full), since the start. */
uint64_t bc_server_refusals_dropped(struct bc_server *s);
/* Checks the TLS certificate served now, at bc_now_ms(), as the server does every
 * minute (server_tls.h): 1 when it renewed it, 0 otherwise or on plain HTTP. */
int bc_server_tls_check(struct bc_server *s);
/* Stops accepting, finishes in-flight requests, frees. */
void bc_server_stop(struct bc_server *s);

#endif
