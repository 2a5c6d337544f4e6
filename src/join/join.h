/* JoinService: admits machines through attestors and issues node certificates.
 *
 * One service per process, configured before it serves: attestors and statement
 * verifiers registered (a later registration with the same id replaces the earlier
 * one), configured, then bc_join_handle() and bc_renew_handle() from any number of
 * threads. JoinService knows the attestor interface (bc/attestor.h), never an
 * attestor. */
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
	/* Refusals no credential backs (join/refusal.h: no token whose secret matched, no
	 * certificate of ours whose key proved the request) name nothing and are
	 * summarized (summarized = 1): count is how many this one publishes, at most once
	 * per reason per minute, or 0 when it was only counted into a later one.
	 * Otherwise 1. */
	unsigned long long count;
	int summarized;
	int check_only; /* Renew's checkOnly (bcd doctor's check), not a renewal */
};
typedef void (*bc_refusal_fn)(void *ctx, const struct bc_refusal *r);

/* What a JoinService call did when it did not refuse, after its commit: for metrics. */
enum bc_join_outcome_type {
	BC_JOIN_OUTCOME_JOINED = 1, /* a new node */
	BC_JOIN_OUTCOME_RECLAIMED,  /* a known node, at its next identity generation */
	BC_JOIN_OUTCOME_DEFERRED,   /* a challenge or an operator's approval */
	BC_JOIN_OUTCOME_RENEWED,    /* Renew issued (or answered again) a certificate */
	BC_JOIN_OUTCOME_CHECKED,    /* Renew's checkOnly (bcd doctor): the leaf is current */
};
struct bc_join_outcome {
	enum bc_join_outcome_type type;
	const char *attestor; /* the attestor's id; NULL for Renew's */
	int replayed;         /* RENEWED: the certificate already issued, answered again */
};
typedef void (*bc_outcome_fn)(void *ctx, const struct bc_join_outcome *o);

struct bc_join_config {
	bc_store *store;
	const bc_pki *pki;
	bc_refusal_fn on_refusal; /* may be NULL; called for every refusal of Join, Renew
	                             ("renew"), SiteService and FetchSecret ("site"), after
	                             its event */
	void *on_refusal_ctx;
	bc_outcome_fn on_outcome; /* may be NULL; called for every answer that is no refusal */
	void *on_outcome_ctx;
};

struct bc_join_service;

/* 1 when a pool's policy (its JSON text) admits joins by attestor_id: its
 * joinAttestors is absent or lists it; 0 otherwise, and for a policy that does not
 * parse. The one home of this rule: JoinService applies it to every join into a pool,
 * the admin API to an enrollment (machines enroll: its deploy joins by provisioned). */
int bc_join_pool_admits(const char *policy_json, const char *attestor_id);

/* A service with no attestor and no statement verifier: the caller registers them
 * (the server registers the built-ins of src/attest like plugins). */
BC_WUR int bc_join_service_new(const struct bc_join_config *cfg, struct bc_join_service **out);
void bc_join_service_free(struct bc_join_service *s);

/* Registers a copy of a (the struct; ctx stays the attestor's). Replaces one with the
 * same id. BC_ERR_INVALID for a wrong abi or a missing id/verify/roles. */
BC_WUR int bc_join_register(struct bc_join_service *s, const struct bc_attestor *a);
/* dlopen()s a shared object exporting bc_attestor_plugin() and registers it. */
BC_WUR int bc_join_load_plugin(struct bc_join_service *s, const char *path, char *err,
                               size_t errlen);
/* Registers the verifier of the statements starting with v->prefix (a copy; ctx stays
 * the caller's), replacing one with the same prefix. */
BC_WUR int bc_join_register_statement(struct bc_join_service *s,
                                      const struct bc_statement_verifier *v);
/* Removes the verifier of that prefix, if any: such statements are then neither
 * issued nor renewed. Before serving, or in tests. */
void bc_join_drop_statement(struct bc_join_service *s, const char *prefix);
/* Calls each registered attestor's configure() with its [attestors.<id>] table. */
BC_WUR int bc_join_configure(struct bc_join_service *s, const bc_toml *cfg, char *err,
                             size_t errlen);
/* 1 when an attestor with that id runs here. */
int bc_join_attestor_known(const struct bc_join_service *s, const char *id);
/* The id of the i-th attestor registered, or NULL past the last: for the startup log. */
const char *bc_join_attestor_id(const struct bc_join_service *s, size_t i);
/* Same as bc_join_attestor_known, with the signature of bc_admin_config.attestor_known. */
int bc_join_attestor_known_cb(void *svc, const char *id);

/* What JoinService answered, for the transport (src/server/connect.c) to map onto
 * HTTP and Connect error JSON. Every refusal is BC_RPC_REFUSED, whatever its reason. */
enum bc_rpc_status {
	BC_RPC_OK = 0,      /* *resp holds the serialized SignedResponse */
	BC_RPC_REFUSED,     /* permission_denied */
	BC_RPC_INVALID,     /* the body is not the method's request message */
	BC_RPC_UNAVAILABLE, /* the store is away: retry */
	BC_RPC_INTERNAL,    /* a failure of ours (signing, out of memory) */
};

/* Handles a serialized JoinRequest. On BC_RPC_OK *resp (malloc'd, the caller frees)
 * holds the SignedResponse; otherwise *resp is NULL. */
BC_WUR enum bc_rpc_status bc_join_handle(struct bc_join_service *s, const uint8_t *body, size_t len,
                                         uint8_t **resp, size_t *resp_len);

/* Handles a serialized RenewRequest, answering like bc_join_handle. */
BC_WUR enum bc_rpc_status bc_renew_handle(struct bc_join_service *s, const uint8_t *body,
                                          size_t len, uint8_t **resp, size_t *resp_len);

/* FetchSecret (site.c): a serialized SecretRequest from a site node holding its site's
 * site::boot lease; answers a SecretResponseBody signed under secret-response. */
BC_WUR enum bc_rpc_status bc_secret_handle(struct bc_join_service *s, const uint8_t *body,
                                           size_t len, uint8_t **resp, size_t *resp_len);
/* SiteService (site.c): serialized LeaseRequest / BootEntriesRequest; answers a
 * LeaseBody / BootEntriesBody signed under site-response. The lease TTL is capped to
 * BC_SITE_LEASE_TTL_MAX seconds (0 asks for BC_SITE_LEASE_TTL_DEFAULT). */
#define BC_SITE_LEASE_TTL_DEFAULT 30
#define BC_SITE_LEASE_TTL_MAX     300
/* Live discovery tokens for MACs no workflow names, at most, per site. */
#define BC_SITE_UNKNOWN_TOKENS_MAX 64
/* Live discovery tokens of one commission workflow, at most. */
#define BC_SITE_WORKFLOW_TOKENS_MAX 16
BC_WUR enum bc_rpc_status bc_site_acquire_handle(struct bc_join_service *s, const uint8_t *body,
                                                 size_t len, uint8_t **resp, size_t *resp_len);
BC_WUR enum bc_rpc_status bc_site_renew_handle(struct bc_join_service *s, const uint8_t *body,
                                               size_t len, uint8_t **resp, size_t *resp_len);
BC_WUR enum bc_rpc_status bc_site_release_handle(struct bc_join_service *s, const uint8_t *body,
                                                 size_t len, uint8_t **resp, size_t *resp_len);
BC_WUR enum bc_rpc_status bc_site_boot_entries_handle(struct bc_join_service *s,
                                                      const uint8_t *body, size_t len,
                                                      uint8_t **resp, size_t *resp_len);

#endif
