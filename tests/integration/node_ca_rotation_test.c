/* Node CA rotation on two replicas of one store: a prepared CA is published and signs
 * nothing, activation switches issuing on every replica, the old CA still carries
 * renewals and x509pop joins, retire is refused until its certificates have expired
 * (then allowed on the test clock), and a forced retire refuses its certificates by the
 * existing reasons. Each replica reads the store's set when the test says so
 * (bc_node_cas_refresh), never on a timer the test waits for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/reasons.h"
#include "bc/wire.h"
#include "bc/x509pop.h"
#include "bctest.h"
#include "server/config.h"
#include "server/node_cas.h"
#include "server/pki_changes.h"
#include "server/server.h"

static struct bct_cp cp, rep;
static char pool_id[64];
static uint8_t secret[32];

static int setup(void **state)
{
	char err[256];

	(void)state;
	if (bct_cp_start(&cp, "[attestors.x509pop]\n") != 0 || bct_cp_replica(&cp, &rep) != 0)
		return -1;
	if (bc_server_secret_load(cp.cfg.secret_file, secret, err, sizeof(err)) != 0)
		return -1;
	return bct_pool(&cp, "root", "default", "{}", pool_id);
}

static int teardown(void **state)
{
	(void)state;
	bc_clock_set_offset_ms(0);
	bct_cp_stop(&rep);
	bct_cp_stop(&cp);
	return 0;
}

static const bc_pki *pki_of(struct bct_cp *c)
{
	return bc_server_pki(c->srv);
}

/* One change of the node CA: its generation (id in and out), the refusal in why. */
static int ca_change(int (*fn)(bc_store *, struct bc_pki_change *), struct bct_cp *c, int64_t *id,
                     int force, int64_t *until, const char **why)
{
	static struct bc_pki_change ch;
	int rc;

	memset(&ch, 0, sizeof(ch));
	ch.kind = BC_PKI_KIND_NODE_CA;
	ch.id = *id;
	ch.force = force;
	rc = fn(bct_store(c), &ch);
	*id = ch.id;
	if (until != NULL)
		*until = ch.until;
	*why = ch.why;
	return rc;
}

static int ca_rotate(struct bct_cp *c, int64_t *id, const char **why)
{
	static struct bc_pki_change ch;
	int rc;

	memset(&ch, 0, sizeof(ch));
	ch.kind = BC_PKI_KIND_NODE_CA;
	rc = bc_pki_key_rotate(bct_store(c), pki_of(c), secret, &ch);
	*id = ch.id;
	*why = ch.why;
	return rc;
}

/* Both replicas read the store's set now. */
static void refresh(void)
{
	int64_t known = 0;

	assert_int_equal(bc_node_cas_refresh(bct_store(&cp), pki_of(&cp), secret, &known), 0);
	known = 0;
	assert_int_equal(bc_node_cas_refresh(bct_store(&rep), pki_of(&rep), secret, &known), 0);
}

struct machine {
	EVP_PKEY *key;
	struct bc_join_answer ans;
};

static void join_one(struct bct_cp *c, struct machine *m)
{
	struct bct_token_opts to = {.pool = pool_id};
	char *t = bct_token(&cp, &to, NULL);

	assert_int_equal(bc_key_generate(&m->key), 0);
	struct bct_join_opts jo = {.token = t, .key = m->key};
	assert_int_equal(bct_join(c, &jo, &m->ans), 0);
	free(t);
}

static void drop(struct machine *m)
{
	bc_join_answer_free(&m->ans);
	EVP_PKEY_free(m->key);
	memset(m, 0, sizeof(*m));
}

/* A renewal on c: the machine then holds the new certificate. */
static int renew(struct bct_cp *c, struct machine *m)
{
	struct bc_join_answer out;
	EVP_PKEY *next = NULL;
	int rc;

	assert_int_equal(bc_key_generate(&next), 0);
	if ((rc = bct_renew(c, &m->ans, m->key, next, &out)) != 0) {
		EVP_PKEY_free(next);
		return rc;
	}
	bc_join_answer_free(&m->ans);
	EVP_PKEY_free(m->key);
	m->ans = out;
	m->key = next;
	return 0;
}

/* The generation of the set installed in c that issued the machine's leaf (0: none). */
static int64_t issuer_gen(struct bct_cp *c, const struct machine *m)
{
	struct bc_node_cas *cas = bc_pki_node_cas_get(pki_of(c));
	X509 *x = NULL;
	int64_t gen = 0;

	assert_non_null(cas);
	assert_int_equal(bc_x509_from_der(m->ans.chain[0], m->ans.chain_lens[0], &x), 0);
	for (size_t i = 0; i < cas->n; i++)
		if (X509_check_issued(cas->ca[i].cert, x) == X509_V_OK &&
		    X509_verify(x, X509_get0_pubkey(cas->ca[i].cert)) == 1)
			gen = cas->ca[i].id;
	/* the chain's CA is the one that issued it */
	assert_int_equal(m->ans.n_chain, 2);
	X509_free(x);
	bc_node_cas_put(cas);
	return gen;
}

static int count_pem(const bc_pki *pki)
{
	char *pem = NULL, *p;
	int n = 0;

	assert_int_equal(bc_pki_trust_bundle(pki, 0, &pem), 0);
	for (p = pem; (p = strstr(p, "BEGIN CERTIFICATE")) != NULL; p++)
		n++;
	free(pem);
	return n;
}

static int64_t sequence_of(const bc_pki *pki)
{
	struct bc_node_cas *cas = bc_pki_node_cas_get(pki);
	int64_t s = cas ? cas->sequence : -1;

	bc_node_cas_put(cas);
	return s;
}

static int x509pop_rejoin(struct bct_cp *c, struct machine *m)
{
	struct bc_join_answer ans;
	struct bc_signer s;
	EVP_PKEY *next = NULL;
	uint8_t *csr = NULL, d[32];
	size_t csr_len = 0;
	char *ev = NULL;
	int rc;

	assert_int_equal(bc_key_generate(&next), 0);
	assert_int_equal(bc_csr_make(next, BC_WIRE_CSR_CN, &csr, &csr_len), 0);
	assert_int_equal(bc_sha256(csr, csr_len, d), 0);
	assert_int_equal(bc_signer_init(&s, m->key, NULL, NULL), 0);
	assert_int_equal(bc_x509pop_evidence(m->ans.chain, m->ans.chain_lens, m->ans.n_chain, &s,
	                                     m->ans.node_id, d, bc_now_ms(), &ev),
	                 0);
	struct bct_join_opts jo = {.attestor = "x509pop",
	                           .key = next,
	                           .csr = csr,
	                           .csr_len = csr_len,
	                           .attestation = (const uint8_t *)ev,
	                           .attestation_len = strlen(ev)};
	rc = bct_join(c, &jo, &ans);
	free(csr);
	free(ev);
	if (rc != 0) {
		EVP_PKEY_free(next);
		return rc;
	}
	bc_join_answer_free(&m->ans);
	EVP_PKEY_free(m->key);
	m->ans = ans;
	m->key = next;
	return 0;
}

static void test_rotation(void **state)
{
	struct machine a = {0}, b = {0}, off = {0};
	const char *why = NULL;
	int64_t id = 0, until = 0, seq0, g2;

	(void)state;
	join_one(&cp, &a);
	join_one(&rep, &off); /* offline through the rotation, until its x509pop below */
	assert_int_equal(issuer_gen(&cp, &a), 1);
	assert_int_equal(count_pem(pki_of(&cp)), 1);
	seq0 = sequence_of(pki_of(&rep));
	assert_true(seq0 > 1000000000); /* the bundle's sequence (its notBefore), never lower */

	/* nothing to activate or retire yet: each refusal by its sentence */
	assert_int_equal(ca_change(bc_pki_key_activate, &cp, &id, 0, NULL, &why), BC_ERR_CONFLICT);
	assert_non_null(strstr(why, "no prepared node CA"));
	id = 0;
	assert_int_equal(ca_change(bc_pki_key_retire, &cp, &id, 0, &until, &why), BC_ERR_CONFLICT);
	assert_non_null(strstr(why, "only the one that issues is active"));
	id = 1;
	assert_int_equal(ca_change(bc_pki_key_retire, &cp, &id, 1, &until, &why), BC_ERR_CONFLICT);
	assert_non_null(strstr(why, "issues node certificates"));

	/* prepared: published on both replicas, the sequence up, signs nothing */
	assert_int_equal(ca_rotate(&cp, &id, &why), 0);
	/* generations are numbered across the three kinds: the join keys' are 2 and 3 */
	assert_int_equal(id, 4);
	g2 = id;
	assert_int_equal(ca_rotate(&cp, &id, &why), BC_ERR_CONFLICT);
	assert_non_null(strstr(why, "already prepared"));
	refresh();
	assert_int_equal(count_pem(pki_of(&rep)), 2);
	assert_int_equal(sequence_of(pki_of(&rep)), seq0 + 1);
	join_one(&rep, &b);
	assert_int_equal(issuer_gen(&rep, &b), 1);
	assert_int_equal(renew(&cp, &a), 0);
	assert_int_equal(issuer_gen(&cp, &a), 1);

	/* active: both replicas issue with it, the old CA still verifies */
	id = 0;
	assert_int_equal(ca_change(bc_pki_key_activate, &rep, &id, 0, NULL, &why), 0);
	assert_int_equal(id, g2);
	refresh();
	assert_int_equal(sequence_of(pki_of(&cp)), seq0 + 2);
	assert_int_equal(renew(&rep, &a), 0);
	assert_int_equal(issuer_gen(&rep, &a), g2);
	assert_int_equal(renew(&cp, &b), 0); /* b's leaf is gen 1's */
	assert_int_equal(issuer_gen(&cp, &b), g2);
	assert_int_equal(x509pop_rejoin(&cp, &off), 0); /* its leaf is gen 1's */
	assert_int_equal(issuer_gen(&cp, &off), g2);

	/* retire: refused until gen 1's certificates have all expired, then done */
	id = 0;
	assert_int_equal(ca_change(bc_pki_key_retire, &cp, &id, 0, &until, &why), BC_ERR_CONFLICT);
	assert_int_equal(id, 1);
	assert_true(until > bc_now_ms() + BC_NODE_CERT_TTL_MS - 60000);
	assert_non_null(strstr(why, "may be unexpired"));
	bc_clock_set_offset_ms(until - bc_now_ms() + 1000);
	id = 0;
	assert_int_equal(ca_change(bc_pki_key_retire, &cp, &id, 0, &until, &why), 0);
	assert_int_equal(id, 1);
	refresh();
	assert_int_equal(count_pem(pki_of(&cp)), 1);
	assert_int_equal(sequence_of(pki_of(&rep)), seq0 + 3);
	drop(&a);
	drop(&b);
	drop(&off);
}

static void test_forced_retire(void **state)
{
	struct machine a = {0}, off = {0};
	const char *why = NULL;
	int64_t id = 0, until = 0, known = 0;
	size_t n;

	(void)state;
	join_one(&cp, &a);
	join_one(&cp, &off);
	/* whichever generation issues now, one after it takes over */
	assert_int_equal(ca_rotate(&cp, &id, &why), 0);
	assert_int_equal(ca_change(bc_pki_key_activate, &cp, &id, 0, NULL, &why), 0);
	refresh();
	assert_int_equal(bc_pki_verify_node_cert(pki_of(&rep), a.ans.chain[0], a.ans.chain_lens[0]),
	                 0);
	/* the old one, compromised: --force although its certificates are unexpired */
	id = 0;
	assert_int_equal(ca_change(bc_pki_key_retire, &cp, &id, 1, &until, &why), 0);
	assert_true(until > bc_now_ms());
	assert_int_equal(bc_node_cas_refresh(bct_store(&cp), pki_of(&cp), secret, &known), 0);
	known = 0;
	assert_int_equal(bc_node_cas_refresh(bct_store(&rep), pki_of(&rep), secret, &known), 0);
	assert_int_equal(bc_pki_verify_node_cert(pki_of(&rep), a.ans.chain[0], a.ans.chain_lens[0]),
	                 BC_ERR_VERIFY);
	assert_int_equal(bc_pki_node_ca_retired(pki_of(&rep), a.ans.chain[0], a.ans.chain_lens[0]),
	                 1);
	/* its stored certificates stop renewing and re-joining, by the existing reasons */
	n = bct_refusal_count(&rep);
	assert_int_equal(renew(&rep, &a), BC_ERR_DENIED);
	assert_int_equal(bct_refusal_count(&rep), n + 1);
	assert_string_equal(bct_last_reason(&rep), BC_R_RENEW_MALFORMED);
	assert_true(bct_events(&cp, "security.renew.refused", BC_R_RENEW_MALFORMED, NULL) >= 1);
	n = bct_refusal_count(&cp);
	assert_int_equal(x509pop_rejoin(&cp, &off), BC_ERR_DENIED);
	assert_int_equal(bct_refusal_count(&cp), n + 1);
	assert_string_equal(bct_last_reason(&cp), BC_R_X509POP_MALFORMED);
	/* a new join is on the new CA */
	drop(&a);
	join_one(&rep, &a);
	assert_int_equal(renew(&cp, &a), 0);
	drop(&a);
	drop(&off);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rotation),
	    cmocka_unit_test(test_forced_retire),
	};

	if (bct_engine_skip())
		return BCT_SKIP;
	return cmocka_run_group_tests(tests, setup, teardown);
}
