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
#include "join/join.h"

const struct bc_attestor *bc_attestor_join_token(void);
const struct bc_attestor *bc_attestor_x509pop(void);
const struct bc_attestor *bc_attestor_tpm(void);
const struct bc_attestor *bc_attestor_cloud_iid(void);
const struct bc_attestor *bc_attestor_provisioned(void);
const struct bc_attestor *bc_attestor_discovery(void);
/* The optional built-in of that id, or NULL. */
const struct bc_attestor *bc_attestor_builtin(const char *id);
/* "x509pop, tpm": for error messages. */
const char *bc_attestor_builtin_names(void);
/* The verifier of urn:bc:tpm-ak: statements: the AK named in the leaf certifies the
 * next key at every renewal (tpm_renew.c). */
const struct bc_statement_verifier *bc_attest_tpm_statements(void);

/* join-token, which always runs, and every statement verifier. */
BC_WUR int bc_attest_register_defaults(struct bc_join_service *s);
/* An [attestors.<id>] table of cfg enables the built-in of that id unless a plugin
 * already registered one. BC_ERR_CONFIG, with err naming the table, for an id that is
 * neither. */
BC_WUR int bc_attest_enable(struct bc_join_service *s, const bc_toml *cfg, char *err,
                            size_t errlen);

#endif
