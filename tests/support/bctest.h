/* Test support: a control plane started in-process on a loopback port with its own
 * temporary directory, store and PKI, and helpers that make tenants, pools and
 * tokens and join through the real client over HTTP. */
#ifndef BCTEST_H
#define BCTEST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/client.h"
#include "server/server.h"

#define BCT_MAX_REFUSALS 256

struct bct_refusal {
	char attestor[64];
	char reason[96];
	char token_id[64];
	char node_id[64];
	char tenant_id[64];
	unsigned long long count; /* 0: counted into a later summary */
	int summarized;
};

struct bct_cp {
	char dir[256];
	char db_name[64]; /* the PostgreSQL database made for this control plane, or "" */
	struct bc_server_config cfg;
	struct bc_server *srv;
	struct bc_client_pins pins;
	char url[128];
	pthread_mutex_t mu;
	struct bct_refusal refusals[BCT_MAX_REFUSALS];
	size_t n_refusals;
	uint64_t total_refusals; /* every on_refusal call, past BCT_MAX_REFUSALS too */
};

/* The engine under test: env BC_TEST_ENGINE=postgres puts each control plane on a
 * fresh database (CREATE DATABASE bct_<random>) of the server in
 * BC_TEST_POSTGRES_URL, dropped by bct_cp_stop(); unset or "sqlite", on bc.db in
 * its directory. BCT_SKIP: the engine asked for cannot be had (PostgreSQL without
 * a URL), and a test program exits with it (CTest's SKIP_RETURN_CODE). */
#define BCT_SKIP 77
/* 1, with a "skipped: ..." line, when bct_cp_start() would return BCT_SKIP: a
 * test program's main() returns BCT_SKIP then. 0 otherwise. */
int bct_engine_skip(void);

/* extra_toml: appended to server.toml (plugins, [attestors.x]); may be NULL.
 * 0, BCT_SKIP (see above), or an error. */
int bct_cp_start(struct bct_cp *cp, const char *extra_toml);
void bct_cp_stop(struct bct_cp *cp);
/* cmocka fixtures of a test case with its own control plane: bct_cp_setup starts one
 * on a clock without offset, with the case's prestate (may be NULL) as its extra_toml,
 * and puts it (malloc'd) in *state; bct_cp_teardown stops and frees it, and clears the
 * clock offset the case may have set. Chain a case's own setup after bct_cp_setup. */
int bct_cp_setup(void **state);
int bct_cp_teardown(void **state);
/* The fixture of a test program whose cases share one control plane: bct_pooled names
 * it (cp, started with extra_toml, may be NULL) and where root's pool "default" (policy
 * {}) leaves its id, before cmocka runs; bct_pooled_setup starts cp and makes the pool
 * (0, or -1 with cp stopped), bct_pooled_teardown stops cp: a group's (or each case's)
 * setup and teardown. */
void bct_pooled(struct bct_cp *cp, const char *extra_toml, char pool_id[64]);
int bct_pooled_setup(void **state);
int bct_pooled_teardown(void **state);
/* A second replica of cp's control plane: its own listener and refusal hook, cp's
 * store, secret and PKI bundle, with x509pop enabled. Stop it (bct_cp_stop) before cp. */
int bct_cp_replica(struct bct_cp *cp, struct bct_cp *replica);
/* The same with extra_toml (attestor tables) in place of [attestors.x509pop]. */
int bct_cp_replica_toml(struct bct_cp *cp, struct bct_cp *replica, const char *extra_toml);
bc_store *bct_store(struct bct_cp *cp);

/* Rows made directly in the store. */
int bct_exec(struct bct_cp *cp, const char *sql, const bc_param *p, size_t n);
int64_t bct_count(struct bct_cp *cp, const char *sql, const bc_param *p, size_t n);
char *bct_text(struct bct_cp *cp, const char *sql, const bc_param *p,
               size_t n); /* malloc'd or NULL */
int bct_tenant(struct bct_cp *cp, const char *id);
int bct_pool(struct bct_cp *cp, const char *tenant, const char *name, const char *policy,
             char id[64]);
int bct_site(struct bct_cp *cp, const char *tenant, const char *name, char id[64]);
struct bct_token_opts {
	const char *tenant; /* default root */
	const char *pool;
	const char *site;
	const char *role;   /* default node */
	int64_t uses;       /* default 1 */
	int64_t ttl_ms;     /* default 1 hour; negative: already expired */
	const char *expect; /* JSON, default {} */
	int allow_reclaim;
};
/* The whole token bct_tok_..._secret (malloc'd); *id (may be NULL) its id. */
char *bct_token(struct bct_cp *cp, const struct bct_token_opts *o, char id[64]);

struct bct_join_opts {
	const char *attestor;
	const char *role;
	const char *token;
	const uint8_t *attestation;
	size_t attestation_len;
	const char *product_uuid;
	const char *serial;
	const char *mac;
	EVP_PKEY *key;      /* NULL: a fresh key */
	const uint8_t *csr; /* or a given CSR */
	size_t csr_len;
};
/* A join through the real client: 0 and the verified answer, or BC_ERR_DENIED... */
int bct_join(struct bct_cp *cp, const struct bct_join_opts *o, struct bc_join_answer *ans);
/* n (at most 64) threads send the same join at once: *admitted joined, *denied were
 * refused (BC_ERR_DENIED); any other outcome counts in neither. */
int bct_race(struct bct_cp *cp, int n, const struct bct_join_opts *o, int *admitted, int *denied);
/* The same request, but the raw HTTP answer (status and body bytes). */
int bct_join_raw(struct bct_cp *cp, const struct bct_join_opts *o, long *status, uint8_t **body,
                 size_t *len);

/* ES256 by a key in memory through the one sign (a signer of key, bc_signer_init): what a
 * request made by hand is signed with. 0 or as bc_es256_sign. */
int bct_sign(EVP_PKEY *key, const char *purpose, const void *payload, size_t len,
             uint8_t sig[BC_SIG_LEN]);
/* A renewal through the real client of the certificate chain ans holds, proved by key,
 * for next_key: 0 and the successor in *out, or as bc_client_renew. */
int bct_renew(struct bct_cp *cp, const struct bc_join_answer *ans, EVP_PKEY *key,
              EVP_PKEY *next_key, struct bc_join_answer *out);

/* POSTs body to path on cp through the real client: the HTTP status, or -1 when no
 * answer came (the reason on stderr). */
long bct_post(struct bct_cp *cp, const char *path, const uint8_t *body, size_t len);

/* The events rows of type (NULL: any type) whose data holds "reason":"<reason>"
 * (NULL: any) and whose subject is subject (NULL: any): how many (-1 on a store
 * error), and the data of the newest (malloc'd; NULL when none). */
int64_t bct_events(struct bct_cp *cp, const char *type, const char *reason, const char *subject);
char *bct_event_newest(struct bct_cp *cp, const char *type, const char *reason,
                       const char *subject);

/* The newest refusal reason seen by the hook ("" when none), and how many. */
const char *bct_last_reason(struct bct_cp *cp);
size_t bct_refusal_count(struct bct_cp *cp);
uint64_t bct_refusal_total(struct bct_cp *cp);
struct bct_refusal bct_last_refusal(struct bct_cp *cp);

/* A fresh temporary directory under /tmp (malloc'd path) and its removal. */
char *bct_tmpdir(void);
void bct_rmrf(const char *path);
int bct_write_file(const char *path, const char *text);

#endif
