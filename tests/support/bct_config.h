/* Attestor configuration in tests: a built-in attestor configured from TOML text the
 * way the server configures it (its configure() with the table's dotted path), and
 * the checks every configuration test makes: a table loads, or it is refused with a
 * message that names the key. The checks fail the running cmocka test. */
#ifndef BCT_CONFIG_H
#define BCT_CONFIG_H

#include <stddef.h>

#include "bc/attestor.h"
#include "bct_capture.h"

struct bct_config {
	/* the built-in's getter (bc_attestor_tpm): each check configures a copy of it */
	const struct bc_attestor *(*attestor)(void);
	const char *table; /* its table's path: "attestors.tpm" */
	const char *dir;   /* NULL, or what "@D@" in a text stands for */
};

/* Configures a (a copy of k->attestor(), its ctx NULL or a context of an earlier call)
 * from text, which must parse as TOML (a test failure otherwise). 0, or the error
 * configure() returned with its message in err. a keeps its context on a refusal. */
int bct_configure(const struct bct_config *k, struct bc_attestor *a, const char *text, char *err,
                  size_t errlen);
/* The same with stderr captured into c while configure() runs (a renamed key's
 * warning goes there). */
int bct_configure_logged(const struct bct_config *k, struct bc_attestor *a, const char *text,
                         char *err, size_t errlen, struct bct_capture *c);
/* text loads: a fresh copy is configured with a context, which destroy() frees. */
void bct_config_loads(const struct bct_config *k, const char *text);
/* text is refused with BC_ERR_CONFIG and no context left; the message contains want
 * (bct_config_refused) or is want (bct_config_refused_exact). */
void bct_config_refused(const struct bct_config *k, const char *text, const char *want);
void bct_config_refused_exact(const struct bct_config *k, const char *text, const char *want);

#endif
