/* The admin API under /v1/ (docs/admin-api.md): JSON over HTTP, API keys scoped to a
 * tenant, the root tenant's keys administer all. */
#ifndef BC_SERVER_ADMIN_H
#define BC_SERVER_ADMIN_H

#include "bc/pki.h"
#include "bc/store.h"
#include "server/http.h"

struct bc_admin_config {
	bc_store *store;
	const bc_pki *pki; /* daemon-config: signing/encryption keys, CA bundle */
	const char *public_url;
	/* 1 when id names an attestor this server runs (pool policy validation) */
	int (*attestor_known)(void *ctx, const char *id);
	void *attestor_ctx;
	/* the id of the i-th attestor this server runs, NULL past the last (GET /v1/server);
	 * NULL: none is said */
	const char *(*attestor_at)(void *ctx, size_t i);
	/* failed authentication per client address (admin_limit.h); NULL: not limited */
	struct bc_admin_limiter *limiter;
};

/* Handles any request whose path starts with /v1/. */
void bc_admin_handle(const struct bc_admin_config *cfg, const struct bc_http_request *req,
                     struct bc_http_response *resp);

/* The failed-key limit of /v1/, for a route outside it that authenticates by API key
 * (GET /metrics), so that guessing keys costs the same everywhere (one home):
 * bc_admin_limit_blocked answers 429 with Retry-After into resp and returns 1 while
 * req's address has failed too often, else 0; bc_admin_limit_failed counts and logs a
 * failed authentication of req's address. */
int bc_admin_limit_blocked(const struct bc_admin_config *cfg, const struct bc_http_request *req,
                           struct bc_http_response *resp);
void bc_admin_limit_failed(const struct bc_admin_config *cfg, const struct bc_http_request *req);

/* API keys: "bck_" + key id (key_ + 26) + "_" + base64url(32 random bytes). Creates
 * the row in tx and returns the whole key (malloc'd, shown once). */
BC_WUR int bc_admin_create_api_key(bc_tx *tx, const char *tenant_id, const char *name,
                                   char **key_out);
/* The tenant of a presented key, or BC_ERR_DENIED (also when the key is revoked or
 * expired at database time). */
BC_WUR int bc_admin_authenticate(bc_tx *tx, const char *authorization, char tenant_id[64],
                                 char key_id[64]);

/* The agent's pins (docs/admin-api.md, GET /v1/daemon-config) as a JSON string. */
char *bc_admin_daemon_config_json(const bc_pki *pki, const char *public_url);

#endif
