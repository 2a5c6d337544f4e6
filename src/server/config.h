/* server.toml: what `better-compute serve` reads.
 *
 *   listen      = "127.0.0.1:8080"        # host:port; [v6]:port. Plain HTTP only on loopback
 *   public_url  = "http://127.0.0.1:8080" # what agents are told to use (daemon config)
 *   database    = "bc.db"                 # SQLite path, or postgres://...
 *   secret_file = "secret"                # 64 hex characters: the server secret
 *   pki_bundle  = "pki.bundle"            # written by `better-compute pki init`, sealed
 *   threads     = 8                       # HTTP worker threads
 *   max_body    = 65536                   # bytes per request body (an admin API key's)
 *   max_unauthenticated_body = 65536      # bytes per body before authentication
 *   unauthenticated_body_budget = 67108864 # bytes all such bodies hold at once
 *   request_timeout_seconds = 10          # a request's headers and body
 *   max_connections = 4096                # open connections in all
 *   max_connections_per_address = 64      # open connections from one client address
 *   on_refusal_processes = 4              # on_refusal commands running at once
 *   on_refusal_queue = 256                # refusals waiting for one
 *   max_queue_wait_seconds = 3            # a JoinService request that waited longer for a
 *                                         # worker is shed: 503 with Retry-After; 0 never
 *   log_level   = "info"                  # debug, info, warn, error
 *   log_format  = "logfmt"                # logfmt or json
 *   on_refusal  = ""                      # a command run with the refusal JSON on stdin
 *   plugins     = []                      # attestor plugins: shared objects
 *   metrics_listen = ""                   # host:port of a plain-HTTP listener serving only
 *                                         # GET /metrics, without an API key: bind it to
 *                                         # loopback or a scrape network
 *   access_log  = false                   # one line per request (client, method, path,
 *                                         # status, duration)
 *   event_retention_days = 90             # prune deletes older events; 0 keeps them all
 *   audit_retention_days = 400            # prune deletes older audit rows; 0 keeps them
 *   prune_interval_seconds = 3600         # the server prunes this often; 0: only
 *                                         # `better-compute prune` does
 *   [tls]
 *   cert = "tls.crt"                      # PEM chain; both or neither
 *   key  = "tls.key"
 *   [attestors.<id>]                      # options of an attestor (see docs/)
 *
 * Relative paths are read from the directory of the config file. Unknown keys are
 * an error naming the key, so a typo never silently falls back to a default. The
 * former names request_timeout and max_queue_wait_ms (milliseconds) are still read,
 * with a warning. */
#ifndef BC_SERVER_CONFIG_H
#define BC_SERVER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"
#include "bc/toml.h"

struct bc_server_config {
	char *path; /* the file read */
	char *dir;  /* its directory */
	char *listen;
	char *public_url;
	char *database; /* resolved: an absolute SQLite path or a postgres:// URL */
	char *secret_file;
	char *pki_bundle;
	char *tls_cert; /* NULL: plain HTTP (loopback only) */
	char *tls_key;
	char *on_refusal;     /* NULL: none */
	char *metrics_listen; /* NULL: /metrics on the main listener only */
	int access_log;       /* 1: one log line per request */
	char **plugins;       /* resolved */
	size_t n_plugins;
	struct bc_toml_strings raw_plugins; /* as written, into toml */
	unsigned threads;
	size_t max_body;
	size_t max_unauth_body;
	size_t unauth_body_budget;
	unsigned request_timeout_s;
	unsigned max_connections;
	unsigned max_connections_per_address;
	unsigned on_refusal_processes;
	unsigned on_refusal_queue;
	unsigned max_queue_wait_ms;
	int64_t event_retention_days;
	int64_t audit_retention_days;
	unsigned prune_interval_s; /* 0: no pruning inside the server */
	int log_level;             /* enum bc_log_level */
	int log_format;            /* enum bc_log_format */
	bc_toml *toml;             /* kept for the attestors' own tables */
};

/* err: "server.toml: <key>: <what is wrong>". On failure *out holds nothing to free
 * (bc_server_config_free on it is harmless). */
BC_WUR int bc_server_config_load(const char *path, struct bc_server_config *out, char *err,
                                 size_t errlen);
void bc_server_config_free(struct bc_server_config *c);
/* Reads the 32-byte secret (64 hex characters, optional trailing newline). */
BC_WUR int bc_server_secret_load(const char *path, uint8_t out[static 32], char *err,
                                 size_t errlen);

#endif
