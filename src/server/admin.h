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
/* The same with role: admin, operator, viewer or metrics (docs/admin-api.md, "Roles");
 * BC_ERR_INVALID for any other. bc_admin_create_api_key makes an admin key. */
BC_WUR int bc_admin_create_api_key_role(bc_tx *tx, const char *tenant_id, const char *name,
                                        const char *role, char **key_out);
/* The tenant of a presented key, or BC_ERR_DENIED (also when the key is revoked or
 * expired at database time). */
BC_WUR int bc_admin_authenticate(bc_tx *tx, const char *authorization, char tenant_id[64],
                                 char key_id[64]);

/* GET /metrics on the main listener: 0 for a root tenant's key whose role may scrape
 * (every role may), else BC_ERR_DENIED or a store error; *authenticated 1 when the
 * key itself was good (a key of another tenant is not a failed guess). */
BC_WUR int bc_admin_authorize_metrics(bc_tx *tx, const char *authorization, int *authenticated);

#ifdef BC_TESTING
/* Route i of the admin API's table (0, or BC_ERR_NOT_FOUND past the last): its method,
 * its pattern ("{x}" a path segment) and the least role that may call it, so that a
 * test reaches every route with every role. */
BC_WUR int bc_admin_route_at(size_t i, const char **method, const char **pattern,
                             const char **min_role);
#endif

/* The agent's pins (docs/admin-api.md, GET /v1/daemon-config) as a JSON string. */
char *bc_admin_daemon_config_json(const bc_pki *pki, const char *public_url);

#endif
