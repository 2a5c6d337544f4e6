/* The optional built-in attestors, enabled by an [attestors.<id>] table in
 * server.toml. Each entry is added with its attestor's file. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "join/join.h"

struct builtin {
	const char *id;
	const struct bc_attestor *(*get)(void);
};

static const struct builtin builtins[] = {
    {"x509pop", bc_attestor_x509pop},
    {"tpm", bc_attestor_tpm},
    {NULL, NULL},
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
