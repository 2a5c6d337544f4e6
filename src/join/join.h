/* JoinService: admits machines through attestors and issues node certificates.
 *
 * One service per process, configured before it serves: attestors registered
 * (built-ins, then plugins; a later registration with the same id replaces the
 * earlier one), then bc_join_handle() from any number of threads. */
#ifndef BC_JOIN_H
#define BC_JOIN_H

#include <stddef.h>
#include <stdint.h>

#include "bc/attestor.h"
#include "bc/pki.h"
#include "bc/store.h"
#include "bc/toml.h"

struct bc_refusal {
	const char *attestor;
	const char *reason;   /* as published: "token-secret", "join:pool-attestor" */
	const char *token_id; /* NULL when unknown */
	const char *node_id;
	const char *tenant_id;
};
typedef void (*bc_refusal_fn)(void *ctx, const struct bc_refusal *r);

struct bc_join_config {
	bc_store *store;
	const bc_pki *pki;
	bc_refusal_fn on_refusal; /* may be NULL; called after the refusal event commits */
	void *on_refusal_ctx;
	/* 1: this JoinService cannot prove key statements (urn:bc:tpm-ak:) again, so a
	 * join is never issued one (node-key-statement) and a leaf naming one does not
	 * renew (key-statement-unsupported). For embedders without the tpm module. */
	int no_key_statements;
};

struct bc_join_service;

BC_WUR int bc_join_service_new(const struct bc_join_config *cfg, struct bc_join_service **out);
void bc_join_service_free(struct bc_join_service *s);

/* Registers a copy of a (the struct; ctx stays the attestor's). Replaces one with the
 * same id. BC_ERR_INVALID for a wrong abi or a missing id/verify. */
BC_WUR int bc_join_register(struct bc_join_service *s, const struct bc_attestor *a);
/* dlopen()s a shared object exporting bc_attestor_plugin() and registers it. */
BC_WUR int bc_join_load_plugin(struct bc_join_service *s, const char *path, char *err,
                               size_t errlen);
/* Whether this JoinService proves key statements again (see bc_join_config's
 * no_key_statements); 1 by default. Before serving, or in tests. */
void bc_join_set_key_statements(struct bc_join_service *s, int enabled);
/* Calls each attestor's configure() with its [attestors.<id>] table. */
BC_WUR int bc_join_configure(struct bc_join_service *s, const bc_toml *cfg, char *err,
                             size_t errlen);
/* 1 when an attestor with that id runs here. */
int bc_join_attestor_known(const struct bc_join_service *s, const char *id);
/* Same, with the signature of bc_admin_config.attestor_known. */
int bc_join_attestor_known_cb(void *svc, const char *id);

/* The built-in attestors (src/attest). join-token always runs; the others run when
 * server.toml has an [attestors.<id>] table for them (it may be empty). */
const struct bc_attestor *bc_attestor_join_token(void);
const struct bc_attestor *bc_attestor_x509pop(void);
const struct bc_attestor *bc_attestor_tpm(void);
/* The optional built-in of that id, or NULL. */
const struct bc_attestor *bc_attestor_builtin(const char *id);
/* "x509pop, tpm" or "none": for error messages. */
const char *bc_attestor_builtin_names(void);

/* Handles a serialized JoinRequest. Fills the HTTP status, content type and body:
 * 200 application/proto SignedResponse; or a Connect error (application/json):
 * 403 permission_denied for every refusal (byte for byte the same), 400
 * invalid_argument for a body that does not decode, 503 unavailable when the store
 * is away. */
void bc_join_handle(struct bc_join_service *s, const uint8_t *body, size_t len, int *status,
                    const char **content_type, uint8_t **resp, size_t *resp_len);

/* Handles a serialized RenewRequest, answering like bc_join_handle (a refusal is
 * 403 permission_denied "Renew refused", byte for byte the same for every reason). */
void bc_renew_handle(struct bc_join_service *s, const uint8_t *body, size_t len, int *status,
                     const char **content_type, uint8_t **resp, size_t *resp_len);

/* The Connect error bodies, exposed for tests. */
extern const char bc_connect_permission_denied[];
extern const char bc_connect_renew_refused[];

#endif
