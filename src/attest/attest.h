/* The built-in attestors, registered by the server like plugins: JoinService knows
 * only the interface (bc/attestor.h).
 *
 * The server registers bc_attest_register_defaults() first (join-token and the
 * statement verifiers), then its plugins (one with id join-token replaces the
 * built-in), then bc_attest_enable(), then bc_join_configure(). */
#ifndef BC_ATTEST_H
#define BC_ATTEST_H

#include <stddef.h>
#include <stdint.h>

#include "bc/attestor.h"
#include "bc/toml.h"
#include "bc/wire.h"
#include "join/join.h"

const struct bc_attestor *bc_attestor_join_token(void);
const struct bc_attestor *bc_attestor_x509pop(void);
const struct bc_attestor *bc_attestor_tpm(void);
const struct bc_attestor *bc_attestor_cloud_iid(void);
const struct bc_attestor *bc_attestor_provisioned(void);
const struct bc_attestor *bc_attestor_discovery(void);
/* The built-in attestors, one row each (builtin.c): id, whether it always runs (the
 * others run when server.toml has an [attestors.<id>] table) and the attestor. */
struct bc_attest_builtin {
	const char *id; /* a BC_WIRE_ATTESTOR_* */
	int always;
	const struct bc_attestor *(*get)(void);
};
/* The built-in of that id (join-token included), or NULL. */
const struct bc_attestor *bc_attestor_builtin(const char *id);
/* The i-th row (0 ..), NULL past the last. */
const struct bc_attest_builtin *bc_attest_builtin_at(size_t i);
/* "join-token, x509pop, tpm, ...": for error messages. */
const char *bc_attestor_builtin_names(void);
/* The verifier of urn:bc:tpm-ak: statements: the AK named in the leaf certifies the
 * next key at every renewal (tpm_renew.c). */
const struct bc_statement_verifier *bc_attest_tpm_statements(void);

/* The built-ins that always run (join-token) and every statement verifier. */
BC_WUR int bc_attest_register_defaults(struct bc_join_service *s);
/* An [attestors.<id>] table of cfg enables the built-in of that id unless a plugin
 * already registered one. BC_ERR_CONFIG, with err naming the table, for an id that is
 * neither. */
BC_WUR int bc_attest_enable(struct bc_join_service *s, const bc_toml *cfg, char *err,
                            size_t errlen);

/* ---- an attestor's configuration (config.c) ----
 *
 * Every attestor reads its [attestors.<id>] table, and the sub-tables it owns, through
 * bc_attest_read_table(): bc_toml_read_table() over the attestor's field table with
 * every message starting "[<table>] " and a renamed key's warning (naming the new key)
 * logged at warn level. A key the table does not set keeps what dst held (the
 * default). 0, BC_ERR_CONFIG with err "[<table>] <key>: <what is wrong, what is
 * allowed>", or BC_ERR_NOMEM. */
BC_WUR int bc_attest_read_table(const bc_toml *t, const char *table,
                                const struct bc_toml_field *fields, size_t n_fields, void *dst,
                                char *err, size_t errlen);
/* An attestor's own check of a value read, worded like the reader's: err
 * "[<table>] <key>: <what>". Returns BC_ERR_CONFIG. */
int bc_attest_config_fail(char *err, size_t errlen, const char *table, const char *key,
                          const char *what);
/* The number of entries of a field table (an array, not a pointer). */
#define BC_ATTEST_N_FIELDS(fields) (sizeof(fields) / sizeof((fields)[0]))

/* The approval queue's keys (attest/requests.h), the same in every attestor that
 * defers for approval (tpm, discovery): how long a pending request lasts, and the
 * Retry-After of a deferral, each into an int64_t member m of seconds of struct S. */
#define BC_ATTEST_PENDING_TTL_S 86400
#define BC_ATTEST_RETRY_AFTER_S 30
#define BC_ATTEST_PENDING_TTL_FIELD(S, m)                                                          \
	{                                                                                          \
		.key = "pending_ttl_seconds", .type = BC_TOML_SECONDS, .min = 60,                  \
		.max = 30LL * 86400, BC_TOML_AT(S, m)                                              \
	}
#define BC_ATTEST_RETRY_AFTER_FIELD(S, m)                                                          \
	{                                                                                          \
		.key = "retry_after_seconds", .type = BC_TOML_SECONDS, .min = 1, .max = 3600,      \
		BC_TOML_AT(S, m)                                                                   \
	}

#endif
