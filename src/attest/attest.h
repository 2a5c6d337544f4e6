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

#endif
