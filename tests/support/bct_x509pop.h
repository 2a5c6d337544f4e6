/* Test support for x509pop: a machine joined with a token, and the proof of possession
 * (a fresh key's CSR signed by the machine's current key over its current chain) that
 * re-joins it. What a function fills is the caller's to free with the matching _free;
 * failures fail the cmocka test. */
#ifndef BCT_X509POP_H
#define BCT_X509POP_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "bctest.h"

struct bct_machine {
	EVP_PKEY *key;
	struct bc_join_answer ans;
};

/* m: a fresh key joined on cp as role with a token of pool (site NULL) or of site. */
void bct_machine_join(struct bct_cp *cp, const char *pool, struct bct_machine *m, const char *role,
                      const char *site);
void bct_machine_free(struct bct_machine *m);

struct bct_pop {
	uint8_t *csr;
	size_t csr_len;
	EVP_PKEY *next;
	char *evidence;
};

/* Evidence for a new CSR, by m's current key over its current chain, at client_time
 * (0: now) for node_id (NULL: m's own). */
void bct_pop_make(const struct bct_machine *m, int64_t client_time, const char *node_id,
                  struct bct_pop *p);
void bct_pop_free(struct bct_pop *p);
/* A join by x509pop as role with p: bct_join's status. */
int bct_pop_join(struct bct_cp *cp, const struct bct_pop *p, const char *role,
                 struct bc_join_answer *ans);
/* The same refused by name, counted as one refusal. */
void bct_pop_refused(struct bct_cp *cp, const struct bct_pop *p, const char *role,
                     const char *reason);
/* node_certs.col = v on the rows of node. */
void bct_cert_set(struct bct_cp *cp, const char *node, const char *col, int64_t v);

#endif
