#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bc/x509pop.h"
#include "bct_x509pop.h"

void bct_machine_join(struct bct_cp *cp, const char *pool, struct bct_machine *m, const char *role,
                      const char *site)
{
	struct bct_token_opts to = {.pool = site ? NULL : pool, .site = site, .role = role};
	char *t = bct_token(cp, &to, NULL);

	assert_int_equal(bc_key_generate(&m->key), 0);
	struct bct_join_opts jo = {.token = t, .key = m->key, .role = role};
	assert_int_equal(bct_join(cp, &jo, &m->ans), 0);
	free(t);
}

void bct_machine_free(struct bct_machine *m)
{
	bc_join_answer_free(&m->ans);
	EVP_PKEY_free(m->key);
}

void bct_pop_make(const struct bct_machine *m, int64_t client_time, const char *node_id,
                  struct bct_pop *p)
{
	struct bc_signer s;
	uint8_t d[32];

	assert_int_equal(bc_key_generate(&p->next), 0);
	assert_int_equal(bc_csr_make(p->next, BC_WIRE_CSR_CN, &p->csr, &p->csr_len), 0);
	assert_int_equal(bc_sha256(p->csr, p->csr_len, d), 0);
	assert_int_equal(bc_signer_init(&s, m->key, NULL, NULL), 0);
	assert_int_equal(bc_x509pop_evidence(m->ans.chain, m->ans.chain_lens, m->ans.n_chain, &s,
	                                     node_id ? node_id : m->ans.node_id, d,
	                                     client_time ? client_time : bc_now_ms(), &p->evidence),
	                 0);
}

void bct_pop_free(struct bct_pop *p)
{
	free(p->csr);
	free(p->evidence);
	EVP_PKEY_free(p->next);
}

int bct_pop_join(struct bct_cp *cp, const struct bct_pop *p, const char *role,
                 struct bc_join_answer *ans)
{
	struct bct_join_opts jo = {.attestor = "x509pop",
	                           .role = role,
	                           .key = p->next,
	                           .csr = p->csr,
	                           .csr_len = p->csr_len,
	                           .attestation = (const uint8_t *)p->evidence,
	                           .attestation_len = strlen(p->evidence)};
	return bct_join(cp, &jo, ans);
}

void bct_pop_refused(struct bct_cp *cp, const struct bct_pop *p, const char *role,
                     const char *reason)
{
	struct bc_join_answer ans;
	size_t n = bct_refusal_count(cp);

	assert_int_equal(bct_pop_join(cp, p, role, &ans), BC_ERR_DENIED);
	assert_int_equal(bct_refusal_count(cp), n + 1);
	assert_string_equal(bct_last_reason(cp), reason);
}

void bct_cert_set(struct bct_cp *cp, const char *node, const char *col, int64_t v)
{
	char sql[160];
	snprintf(sql, sizeof(sql), "UPDATE node_certs SET %s = $2 WHERE node_id = $1", col);
	bc_param p[] = {BC_TEXT(node), BC_INT(v)};
	assert_int_equal(bct_exec(cp, sql, p, 2), 0);
}
