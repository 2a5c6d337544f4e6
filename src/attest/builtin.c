/* The built-in attestors, registered with JoinService as plugins are: join-token
 * always; the optional ones when server.toml has an [attestors.<id>] table. Each entry
 * is added with its attestor's file. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "attest/attest.h"
#include "bc/err.h"

struct builtin {
	const char *id;
	const struct bc_attestor *(*get)(void);
};

static const struct builtin builtins[] = {
    {"x509pop", bc_attestor_x509pop},     {"tpm", bc_attestor_tpm},
    {"cloud-iid", bc_attestor_cloud_iid}, {"provisioned", bc_attestor_provisioned},
    {"discovery", bc_attestor_discovery}, {NULL, NULL},
};

const struct bc_attestor *bc_attestor_builtin(const char *id)
{
	for (size_t i = 0; builtins[i].id != NULL; i++)
		if (strcmp(builtins[i].id, id) == 0)
			return builtins[i].get();
	return NULL;
}

static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void make_names(void)
{
	size_t off = 0;

	for (size_t i = 0; builtins[i].id != NULL && off < sizeof(names); i++)
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

	if ((rc = bc_join_register(s, bc_attestor_join_token())) != 0)
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
