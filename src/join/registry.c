/* The attestor registry and plugin loading. Written before serving, read after. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/log.h"
#include "join/internal.h"

static int valid_attestor(const struct bc_attestor *a)
{
	if (a == NULL || (a->abi != BC_ATTESTOR_ABI && a->abi != 1) || a->id == NULL ||
	    a->verify == NULL)
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

/* A copy of a as this ABI's struct: an ABI 1 attestor is this one's prefix, and runs
 * without check() and release(). */
static struct bc_attestor upgrade(const struct bc_attestor *a)
{
	struct bc_attestor c;

	memset(&c, 0, sizeof(c));
	memcpy(&c, a, a->abi == 1 ? BC_ATTESTOR_V1_SIZE : sizeof(c));
	return c;
}

int bc_join_register(struct bc_join_service *s, const struct bc_attestor *in)
{
	struct bc_attestor copy, *a = &copy;

	if (!valid_attestor(in))
		return BC_ERR_INVALID;
	copy = upgrade(in);
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
	if (a->abi != BC_ATTESTOR_ABI && a->abi != 1) {
		snprintf(err, errlen, "plugin %s: attestor ABI %u, this server speaks 1 and %u",
		         path, a->abi, BC_ATTESTOR_ABI);
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

int bc_join_configure(struct bc_join_service *s, const bc_toml *cfg, char *err, size_t errlen)
{
	char table[64];
	int rc;

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

const struct bc_statement_verifier *bc_join_find_statement(const struct bc_join_service *s,
                                                           const char *statement)
{
	for (size_t i = 0; i < s->n_statements; i++)
		if (strncmp(statement, s->statements[i].prefix, strlen(s->statements[i].prefix)) ==
		    0)
			return &s->statements[i];
	return NULL;
}

int bc_join_register_statement(struct bc_join_service *s, const struct bc_statement_verifier *v)
{
	if (v == NULL || v->prefix == NULL || v->prefix[0] == 0 || v->verify == NULL)
		return BC_ERR_INVALID;
	bc_join_drop_statement(s, v->prefix);
	if (s->n_statements == BC_MAX_STATEMENTS)
		return BC_ERR_LIMIT;
	s->statements[s->n_statements++] = *v;
	return 0;
}

void bc_join_drop_statement(struct bc_join_service *s, const char *prefix)
{
	for (size_t i = 0; i < s->n_statements; i++) {
		if (strcmp(s->statements[i].prefix, prefix) != 0)
			continue;
		s->statements[i] = s->statements[--s->n_statements];
		return;
	}
}

int bc_join_attestor_known(const struct bc_join_service *s, const char *id)
{
	return id != NULL && bc_join_find(s, id) != NULL;
}

const char *bc_join_attestor_id(const struct bc_join_service *s, size_t i)
{
	return i < s->n_attestors ? s->attestors[i].id : NULL;
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
	for (size_t i = 0; i < BC_REFUSAL_KINDS; i++)
		bc_refusal_summary_init(&s->refusals[i]);
	pthread_mutex_init(&s->pins_mu, NULL);
	if ((rc = bc_pki_bundle_set(cfg->pki, &s->bundle_set)) != 0) {
		pthread_mutex_destroy(&s->pins_mu);
		for (size_t i = 0; i < BC_REFUSAL_KINDS; i++)
			bc_refusal_summary_destroy(&s->refusals[i]);
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
	bc_join_pins_put(s->pins);
	bc_node_cas_put(s->bundle_set);
	pthread_mutex_destroy(&s->pins_mu);
	for (size_t i = 0; i < BC_REFUSAL_KINDS; i++)
		bc_refusal_summary_destroy(&s->refusals[i]);
	free(s);
}
