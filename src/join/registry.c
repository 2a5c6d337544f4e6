/* The attestor registry and plugin loading. Written before serving, read after. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/log.h"
#include "join/internal.h"

static int valid_attestor(const struct bc_attestor *a)
{
	if (a == NULL || a->abi != BC_ATTESTOR_ABI || a->id == NULL || a->verify == NULL)
		return 0;
	size_t n = strlen(a->id);
	if (n == 0 || n > 32)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = a->id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return 0;
	}
	return a->n_roles > 0 && a->roles != NULL;
}

int bc_join_register(struct bc_join_service *s, const struct bc_attestor *a)
{
	if (!valid_attestor(a))
		return BC_ERR_INVALID;
	for (size_t i = 0; i < s->n_attestors; i++) {
		if (strcmp(s->attestors[i].id, a->id) == 0) {
			if (s->attestors[i].destroy)
				s->attestors[i].destroy(&s->attestors[i]);
			s->attestors[i] = *a;
			bc_log(BC_LOG_INFO, "attestor replaced", "attestor", a->id, NULL);
			return 0;
		}
	}
	if (s->n_attestors == BC_MAX_ATTESTORS)
		return BC_ERR_LIMIT;
	s->attestors[s->n_attestors++] = *a;
	return 0;
}

int bc_join_load_plugin(struct bc_join_service *s, const char *path, char *err, size_t errlen)
{
	bc_attestor_plugin_fn fn;
	const struct bc_attestor *a;
	void *h;
	int rc;

	if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(err, errlen, "plugin %s: %s", path, dlerror());
		return BC_ERR_CONFIG;
	}
	*(void **)(&fn) = dlsym(h, "bc_attestor_plugin");
	if (fn == NULL || (a = fn()) == NULL) {
		snprintf(err, errlen, "plugin %s: exports no bc_attestor_plugin()", path);
		dlclose(h);
		return BC_ERR_CONFIG;
	}
	if (a->abi != BC_ATTESTOR_ABI) {
		snprintf(err, errlen, "plugin %s: attestor ABI %u, this server speaks %u", path,
		         a->abi, BC_ATTESTOR_ABI);
		dlclose(h);
		return BC_ERR_CONFIG;
	}
	if ((rc = bc_join_register(s, a)) != 0) {
		snprintf(err, errlen,
		         "plugin %s: attestor refused (%s): it needs an id of [a-z0-9-], "
		         "a verify function and at least one role",
		         path, bc_err_str(rc));
		dlclose(h);
		return BC_ERR_CONFIG;
	}
	/* the handle stays open for the life of the process: the attestor's code lives in it */
	if (s->n_plugins < BC_MAX_ATTESTORS)
		s->plugins[s->n_plugins++] = h;
	bc_log(BC_LOG_INFO, "attestor plugin loaded", "attestor", a->id, "path", path, NULL);
	return 0;
}

/* An [attestors.<id>] table enables the built-in attestor of that id (x509pop, tpm,
 * ...) unless a plugin already registered one: only join-token runs without one. */
static int enable_builtins(struct bc_join_service *s, const bc_toml *cfg, char *err, size_t errlen)
{
	const char *const *names;
	size_t n;
	int rc;

	if (cfg == NULL || bc_toml_tables(cfg, "attestors", &names, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct bc_attestor *a;
		if (bc_join_attestor_known(s, names[i]))
			continue;
		if ((a = bc_attestor_builtin(names[i])) == NULL) {
			snprintf(err, errlen,
			         "[attestors.%s]: no attestor with that id runs here "
			         "(built-in: %s; others come from plugins)",
			         names[i], bc_attestor_builtin_names());
			return BC_ERR_CONFIG;
		}
		if ((rc = bc_join_register(s, a)) != 0) {
			snprintf(err, errlen, "[attestors.%s]: %s", names[i], bc_err_str(rc));
			return rc;
		}
	}
	return 0;
}

int bc_join_configure(struct bc_join_service *s, const bc_toml *cfg, char *err, size_t errlen)
{
	char table[64];
	int rc;

	if ((rc = enable_builtins(s, cfg, err, errlen)) != 0)
		return rc;
	for (size_t i = 0; i < s->n_attestors; i++) {
		struct bc_attestor *a = &s->attestors[i];
		if (a->configure == NULL)
			continue;
		snprintf(table, sizeof(table), "attestors.%s", a->id);
		if ((rc = a->configure(a, cfg, table, err, errlen)) != 0)
			return rc;
	}
	return 0;
}

const struct bc_attestor *bc_join_find(const struct bc_join_service *s, const char *id)
{
	for (size_t i = 0; i < s->n_attestors; i++)
		if (strcmp(s->attestors[i].id, id) == 0)
			return &s->attestors[i];
	return NULL;
}

void bc_join_set_key_statements(struct bc_join_service *s, int enabled)
{
	s->cfg.no_key_statements = !enabled;
}

int bc_join_attestor_known(const struct bc_join_service *s, const char *id)
{
	return id != NULL && bc_join_find(s, id) != NULL;
}

int bc_join_attestor_known_cb(void *svc, const char *id)
{
	return bc_join_attestor_known(svc, id);
}

int bc_join_service_new(const struct bc_join_config *cfg, struct bc_join_service **out)
{
	struct bc_join_service *s;
	int rc;

	*out = NULL;
	if (cfg->store == NULL || cfg->pki == NULL)
		return BC_ERR_INVALID;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return BC_ERR_NOMEM;
	s->cfg = *cfg;
	if ((rc = bc_x509_to_der(cfg->pki->node_ca, &s->node_ca_der, &s->node_ca_der_len)) != 0 ||
	    (rc = bc_join_register(s, bc_attestor_join_token())) != 0) {
		free(s->node_ca_der);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void bc_join_service_free(struct bc_join_service *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n_attestors; i++)
		if (s->attestors[i].destroy)
			s->attestors[i].destroy(&s->attestors[i]);
	/* plugin handles are not closed: a plugin's threads or atexit hooks may outlive us */
	free(s->node_ca_der);
	free(s);
}
