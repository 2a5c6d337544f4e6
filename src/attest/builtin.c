/* The built-in attestors, registered with JoinService as plugins are: the ones that
 * always run (join-token) by bc_attest_register_defaults, the others when server.toml
 * has an [attestors.<id>] table. A new attestor is a row here (and an id in bc/wire.h). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "attest/attest.h"
#include "bc/err.h"

static const struct bc_attest_builtin builtins[] = {
    {BC_WIRE_ATTESTOR_JOIN_TOKEN, 1, bc_attestor_join_token},
    {BC_WIRE_ATTESTOR_TPM, 0, bc_attestor_tpm},
    {BC_WIRE_ATTESTOR_X509POP, 0, bc_attestor_x509pop},
    {BC_WIRE_ATTESTOR_PROVISIONED, 0, bc_attestor_provisioned},
    {BC_WIRE_ATTESTOR_CLOUD_IID, 0, bc_attestor_cloud_iid},
    {BC_WIRE_ATTESTOR_DISCOVERY, 0, bc_attestor_discovery},
};
#define N_BUILTINS (sizeof(builtins) / sizeof(builtins[0]))

const struct bc_attest_builtin *bc_attest_builtin_at(size_t i)
{
	return i < N_BUILTINS ? &builtins[i] : NULL;
}

const struct bc_attestor *bc_attestor_builtin(const char *id)
{
	for (size_t i = 0; id != NULL && i < N_BUILTINS; i++)
		if (strcmp(builtins[i].id, id) == 0)
			return builtins[i].get();
	return NULL;
}

static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void make_names(void)
{
	size_t off = 0;

	for (size_t i = 0; i < N_BUILTINS && off < sizeof(names); i++)
		off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", i ? ", " : "",
		                        builtins[i].id);
	if (off == 0)
		snprintf(names, sizeof(names), "none");
}

const char *bc_attestor_builtin_names(void)
{
	pthread_once(&names_once, make_names);
	return names;
}

int bc_attest_register_defaults(struct bc_join_service *s)
{
	int rc;

	for (size_t i = 0; i < N_BUILTINS; i++)
		if (builtins[i].always && (rc = bc_join_register(s, builtins[i].get())) != 0)
			return rc;
	return bc_join_register_statement(s, bc_attest_tpm_statements());
}

int bc_attest_enable(struct bc_join_service *s, const bc_toml *cfg, char *err, size_t errlen)
{
	const char *const *tables;
	size_t n;
	int rc;

	if (cfg == NULL || bc_toml_tables(cfg, "attestors", &tables, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct bc_attestor *a;
		if (bc_join_attestor_known(s, tables[i]))
			continue;
		if ((a = bc_attestor_builtin(tables[i])) == NULL) {
			snprintf(
			    err, errlen,
			    "[attestors.%s]: no attestor with that id runs here (built-in: %s; "
			    "others come from plugins)",
			    tables[i], bc_attestor_builtin_names());
			return BC_ERR_CONFIG;
		}
		if ((rc = bc_join_register(s, a)) != 0) {
			snprintf(err, errlen, "[attestors.%s]: %s", tables[i], bc_err_str(rc));
			return rc;
		}
	}
	return 0;
}
