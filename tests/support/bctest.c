#include "bctest.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/log.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "bct_pg.h"
#include "bettercompute/join/v1/join.pb-c.h"
#include "server/admin.h"

char *bct_tmpdir(void)
{
	char tmpl[] = "/tmp/bctest.XXXXXX";
	char *d = mkdtemp(tmpl);
	return d ? strdup(d) : NULL;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void bct_rmrf(const char *path)
{
	if (path && path[0] && getenv("BCT_KEEP") == NULL)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int bct_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -1;
}

static void hook(void *ctx, const struct bc_refusal *r)
{
	struct bct_cp *cp = ctx;
	pthread_mutex_lock(&cp->mu);
	cp->total_refusals++;
	/* once full, the last slot keeps the newest: bct_last_refusal stays true */
	{
		struct bct_refusal *x =
		    &cp->refusals[cp->n_refusals < BCT_MAX_REFUSALS ? cp->n_refusals++
		                                                    : BCT_MAX_REFUSALS - 1];
		snprintf(x->attestor, sizeof(x->attestor), "%s", r->attestor ? r->attestor : "");
		snprintf(x->reason, sizeof(x->reason), "%s", r->reason ? r->reason : "");
		snprintf(x->token_id, sizeof(x->token_id), "%s", r->token_id ? r->token_id : "");
		snprintf(x->node_id, sizeof(x->node_id), "%s", r->node_id ? r->node_id : "");
		snprintf(x->tenant_id, sizeof(x->tenant_id), "%s",
		         r->tenant_id ? r->tenant_id : "");
		x->count = r->count;
		x->summarized = r->summarized;
	}
	pthread_mutex_unlock(&cp->mu);
}

static int write_secret_and_bundle(const char *dir)
{
	uint8_t secret[32];
	char hex[65], path[512], *text = NULL;
	bc_pki *pki = NULL;
	int rc;

	if ((rc = bc_random(secret, 32)) != 0)
		return rc;
	bc_hex_encode_to(secret, 32, hex);
	snprintf(path, sizeof(path), "%s/secret", dir);
	if (bct_write_file(path, hex) != 0 || chmod(path, 0600) != 0)
		return BC_ERR_IO;
	if ((rc = bc_pki_generate("bc.test", &pki)) != 0)
		return rc;
	if ((rc = bc_pki_seal(pki, secret, &text)) == 0) {
		snprintf(path, sizeof(path), "%s/pki.bundle", dir);
		rc = bct_write_file(path, text) == 0 && chmod(path, 0600) == 0 ? 0 : BC_ERR_IO;
	}
	free(text);
	bc_pki_free(pki);
	return rc;
}

static int engine_postgres(void)
{
	const char *e = getenv("BC_TEST_ENGINE");

	return e != NULL && strcmp(e, "postgres") == 0;
}

static const char *postgres_url(void)
{
	const char *u = getenv("BC_TEST_POSTGRES_URL");

	return u != NULL && u[0] != '\0' ? u : NULL;
}

int bct_engine_skip(void)
{
	if (!engine_postgres() || postgres_url() != NULL)
		return 0;
	printf("skipped: BC_TEST_POSTGRES_URL not set\n");
	return 1;
}

/* The database URL for server.toml: bc.db, or a fresh PostgreSQL database. */
static int select_database(struct bct_cp *cp, char *url, size_t urllen)
{
	const char *e = getenv("BC_TEST_ENGINE");
	char err[512];

	if (e == NULL || e[0] == '\0' || strcmp(e, "sqlite") == 0) {
		snprintf(url, urllen, "bc.db");
		return 0;
	}
	if (!engine_postgres()) {
		fprintf(stderr, "bct: BC_TEST_ENGINE=%s: expected sqlite or postgres\n", e);
		return BC_ERR_CONFIG;
	}
	if (postgres_url() == NULL)
		return BCT_SKIP;
	if (bct_pg_create(postgres_url(), cp->db_name, sizeof(cp->db_name), url, urllen, err,
	                  sizeof(err)) != 0) {
		fprintf(stderr, "bct: %s\n", err);
		cp->db_name[0] = '\0';
		return BC_ERR_UNAVAILABLE;
	}
	return 0;
}

static int cp_start(struct bct_cp *cp, const char *database, const char *extra_toml)
{
	char path[512], err[512] = "", toml[8192], *d, *pins = NULL;
	int rc;

	if ((d = bct_tmpdir()) == NULL)
		return BC_ERR_IO;
	snprintf(cp->dir, sizeof(cp->dir), "%s", d);
	free(d);
	if ((rc = write_secret_and_bundle(cp->dir)) != 0)
		return rc;
	snprintf(toml, sizeof(toml),
	         "listen = \"127.0.0.1:0\"\ndatabase = \"%s\"\nthreads = 8\n"
	         "log_level = \"%s\"\n%s\n",
	         database, getenv("BCT_LOG") ? getenv("BCT_LOG") : "error",
	         extra_toml ? extra_toml : "");
	snprintf(path, sizeof(path), "%s/server.toml", cp->dir);
	if (bct_write_file(path, toml) != 0)
		return BC_ERR_IO;
	if ((rc = bc_server_config_load(path, &cp->cfg, err, sizeof(err))) != 0) {
		fprintf(stderr, "bct: %s\n", err);
		return rc;
	}
	bc_log_set_level(cp->cfg.log_level);
	if ((rc = bc_server_start(&cp->cfg, hook, cp, &cp->srv, err, sizeof(err))) != 0) {
		fprintf(stderr, "bct: %s\n", err);
		return rc;
	}
	snprintf(cp->url, sizeof(cp->url), "http://127.0.0.1:%u", bc_server_port(cp->srv));
	if ((rc = bct_tenant(cp, "root")) != 0)
		return rc;
	if ((pins = bc_admin_daemon_config_json(bc_server_pki(cp->srv), cp->url)) == NULL)
		return BC_ERR_NOMEM;
	rc = bc_client_pins_from_json(pins, strlen(pins), &cp->pins, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "bct: pins: %s\n", err);
	free(pins);
	return rc;
}

int bct_cp_start(struct bct_cp *cp, const char *extra_toml)
{
	char database[512];
	int rc;

	memset(cp, 0, sizeof(*cp));
	pthread_mutex_init(&cp->mu, NULL);
	if ((rc = select_database(cp, database, sizeof(database))) != 0)
		return rc;
	if ((rc = cp_start(cp, database, extra_toml)) != 0 && cp->db_name[0] != '\0') {
		/* the control plane is not stopped after a failed start: its database goes now */
		bc_server_stop(cp->srv);
		cp->srv = NULL;
		bct_pg_drop(postgres_url(), cp->db_name);
		cp->db_name[0] = '\0';
	}
	return rc;
}

void bct_cp_stop(struct bct_cp *cp)
{
	bc_server_stop(cp->srv);
	cp->srv = NULL;
	bc_server_config_free(&cp->cfg);
	bc_client_pins_free(&cp->pins);
	bct_rmrf(cp->dir);
	/* after the server, whose store held connections to it */
	if (cp->db_name[0] != '\0' && postgres_url() != NULL)
		bct_pg_drop(postgres_url(), cp->db_name);
	cp->db_name[0] = '\0';
	pthread_mutex_destroy(&cp->mu);
}

int bct_cp_setup(void **state)
{
	struct bct_cp *cp = malloc(sizeof(*cp));
	const char *extra_toml = *state;

	bc_clock_set_offset_ms(0);
	if (cp == NULL || bct_cp_start(cp, extra_toml) != 0) {
		free(cp);
		return -1;
	}
	*state = cp;
	return 0;
}

int bct_cp_teardown(void **state)
{
	bct_cp_stop(*state);
	free(*state);
	*state = NULL;
	bc_clock_set_offset_ms(0);
	return 0;
}

static struct {
	struct bct_cp *cp;
	const char *extra_toml;
	char *pool_id;
} pooled;

void bct_pooled(struct bct_cp *cp, const char *extra_toml, char pool_id[64])
{
	pooled.cp = cp;
	pooled.extra_toml = extra_toml;
	pooled.pool_id = pool_id;
}

int bct_pooled_setup(void **state)
{
	(void)state;
	if (bct_cp_start(pooled.cp, pooled.extra_toml) != 0)
		return -1;
	if (bct_pool(pooled.cp, "root", "default", "{}", pooled.pool_id) != 0) {
		bct_cp_stop(pooled.cp);
		return -1;
	}
	return 0;
}

int bct_pooled_teardown(void **state)
{
	(void)state;
	bct_cp_stop(pooled.cp);
	return 0;
}

int bct_cp_replica(struct bct_cp *cp, struct bct_cp *r)
{
	return bct_cp_replica_toml(cp, r, "[attestors.x509pop]\n");
}

int bct_cp_replica_toml(struct bct_cp *cp, struct bct_cp *r, const char *extra_toml)
{
	char path[512], toml[8192], err[512] = "", *d, *pins = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	if ((d = bct_tmpdir()) == NULL)
		return BC_ERR_IO;
	snprintf(r->dir, sizeof(r->dir), "%s", d);
	free(d);
	/* the first control plane's store, secret and bundle: one control plane, two replicas */
	snprintf(toml, sizeof(toml),
	         "listen = \"127.0.0.1:0\"\ndatabase = \"%s\"\nsecret_file = \"%s\"\n"
	         "pki_bundle = \"%s\"\nthreads = 8\nlog_level = \"error\"\n%s",
	         cp->cfg.database, cp->cfg.secret_file, cp->cfg.pki_bundle, extra_toml);
	snprintf(path, sizeof(path), "%s/server.toml", r->dir);
	if (bct_write_file(path, toml) != 0)
		return BC_ERR_IO;
	if ((rc = bc_server_config_load(path, &r->cfg, err, sizeof(err))) != 0 ||
	    (rc = bc_server_start(&r->cfg, hook, r, &r->srv, err, sizeof(err))) != 0) {
		fprintf(stderr, "bct: replica: %s\n", err);
		return rc;
	}
	snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%u", bc_server_port(r->srv));
	if ((pins = bc_admin_daemon_config_json(bc_server_pki(r->srv), r->url)) == NULL)
		return BC_ERR_NOMEM;
	rc = bc_client_pins_from_json(pins, strlen(pins), &r->pins, err, sizeof(err));
	free(pins);
	return rc;
}

bc_store *bct_store(struct bct_cp *cp)
{
	return bc_server_store(cp->srv);
}

struct sql_arg {
	const char *sql;
	const bc_param *p;
	size_t n;
	int64_t i;
	char *text;
	int mode;
};

static int sql_tx(bc_tx *tx, void *arg)
{
	struct sql_arg *a = arg;
	switch (a->mode) {
	case 0: return bc_tx_exec(tx, a->sql, a->p, a->n, NULL);
	case 1: return bc_tx_query_int(tx, a->sql, a->p, a->n, &a->i);
	default: return bc_tx_query_text(tx, a->sql, a->p, a->n, &a->text);
	}
}

int bct_exec(struct bct_cp *cp, const char *sql, const bc_param *p, size_t n)
{
	struct sql_arg a = {sql, p, n, 0, NULL, 0};
	return bc_store_run(bct_store(cp), BC_TX_WRITE, sql_tx, &a);
}

int64_t bct_count(struct bct_cp *cp, const char *sql, const bc_param *p, size_t n)
{
	struct sql_arg a = {sql, p, n, -1, NULL, 1};
	if (bc_store_run(bct_store(cp), BC_TX_READ, sql_tx, &a) != 0)
		return -1;
	return a.i;
}

char *bct_text(struct bct_cp *cp, const char *sql, const bc_param *p, size_t n)
{
	struct sql_arg a = {sql, p, n, 0, NULL, 2};
	if (bc_store_run(bct_store(cp), BC_TX_READ, sql_tx, &a) != 0)
		return NULL;
	return a.text;
}

/* SELECT what FROM events with the filters of bct_events, then tail; p and n its
 * parameters (like[] holds the reason's pattern). */
static void events_query(const char *what, const char *type, const char *reason,
                         const char *subject, const char *tail, char sql[static 512],
                         char like[static 160], bc_param p[static 3], size_t *n)
{
	size_t k = 0;
	int len = snprintf(sql, 512, "SELECT %s FROM events WHERE 1 = 1", what);

	if (type) {
		p[k++] = BC_TEXT(type);
		len += snprintf(sql + len, 512 - (size_t)len, " AND type = $%zu", k);
	}
	if (reason) {
		snprintf(like, 160, "%%\"reason\":\"%s\"%%", reason);
		p[k++] = BC_TEXT(like);
		len += snprintf(sql + len, 512 - (size_t)len, " AND data LIKE $%zu", k);
	}
	if (subject) {
		p[k++] = BC_TEXT(subject);
		len += snprintf(sql + len, 512 - (size_t)len, " AND subject = $%zu", k);
	}
	snprintf(sql + len, 512 - (size_t)len, "%s", tail);
	*n = k;
}

int64_t bct_events(struct bct_cp *cp, const char *type, const char *reason, const char *subject)
{
	char sql[512], like[160];
	bc_param p[3];
	size_t n;

	events_query("COUNT(*)", type, reason, subject, "", sql, like, p, &n);
	return bct_count(cp, sql, p, n);
}

char *bct_event_newest(struct bct_cp *cp, const char *type, const char *reason, const char *subject)
{
	char sql[512], like[160];
	bc_param p[3];
	size_t n;

	events_query("data", type, reason, subject, " ORDER BY created_at DESC, id DESC LIMIT 1",
	             sql, like, p, &n);
	return bct_text(cp, sql, p, n);
}

int bct_tenant(struct bct_cp *cp, const char *id)
{
	bc_param p[] = {BC_TEXT(id), BC_INT(bc_now_ms())};
	return bct_exec(cp, "INSERT INTO tenants (id, name, created_at) VALUES ($1, $1, $2)", p, 2);
}

int bct_pool(struct bct_cp *cp, const char *tenant, const char *name, const char *policy,
             char id[64])
{
	int rc = bc_new_id("pool", id, 64);
	if (rc != 0)
		return rc;
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant), BC_TEXT(name),
	                BC_TEXT(policy ? policy : "{}"), BC_INT(bc_now_ms())};
	return bct_exec(cp,
	                "INSERT INTO pools (id, tenant_id, name, policy, created_at, updated_at) "
	                "VALUES ($1, $2, $3, $4, $5, $5)",
	                p, 5);
}

int bct_site(struct bct_cp *cp, const char *tenant, const char *name, char id[64])
{
	int rc = bc_new_id("site", id, 64);
	if (rc != 0)
		return rc;
	bc_param p[] = {BC_TEXT(id), BC_TEXT(tenant), BC_TEXT(name), BC_INT(bc_now_ms())};
	return bct_exec(
	    cp, "INSERT INTO sites (id, tenant_id, name, created_at) VALUES ($1, $2, $3, $4)", p,
	    4);
}

char *bct_token(struct bct_cp *cp, const struct bct_token_opts *o, char id_out[64])
{
	char id[64], hash[65], *secret, *token = NULL;
	uint8_t raw[32], d[32];
	int64_t now = bc_now_ms();

	if (bc_new_id("tok", id, sizeof(id)) != 0 || bc_random(raw, 32) != 0)
		return NULL;
	secret = bc_b64url_encode(raw, 32);
	if (bc_sha256(secret, strlen(secret), d) != 0)
		return NULL;
	bc_hex_encode_to(d, 32, hash);
	if (asprintf(&token, BC_WIRE_TOKEN_PREFIX "%s_%s", id, secret) < 0)
		token = NULL;
	free(secret);
	int64_t uses = o->uses ? o->uses : 1;
	int64_t ttl = o->ttl_ms ? o->ttl_ms : 3600 * 1000;
	bc_param p[] = {BC_TEXT(id),
	                BC_TEXT(o->tenant ? o->tenant : "root"),
	                BC_TEXT(o->pool),
	                BC_TEXT(o->site),
	                BC_TEXT(o->role ? o->role : "node"),
	                BC_TEXT(hash),
	                BC_INT(uses),
	                BC_INT(now + ttl),
	                BC_TEXT(o->expect ? o->expect : "{}"),
	                BC_INT(o->allow_reclaim),
	                BC_INT(now)};
	if (bct_exec(cp,
	             "INSERT INTO join_tokens (id, tenant_id, pool_id, site_id, role, secret_hash, "
	             "uses_left, uses_total, expires_at, expect, allow_reclaim, created_at) VALUES "
	             "($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11)",
	             p, 11) != 0) {
		free(token);
		return NULL;
	}
	if (id_out)
		snprintf(id_out, 64, "%s", id);
	return token;
}

static void fill_claims(const struct bct_join_opts *o, struct bc_client_claims *c, char **mac)
{
	memset(c, 0, sizeof(*c));
	*mac = (char *)(o->mac ? o->mac : "52:54:00:00:00:01");
	c->macs = mac;
	c->n_macs = 1;
	c->product_uuid = (char *)(o->product_uuid ? o->product_uuid : "");
	c->serial = (char *)(o->serial ? o->serial : "");
	c->hostname = "test-host";
	c->arch = "x86_64";
}

int bct_join(struct bct_cp *cp, const struct bct_join_opts *o, struct bc_join_answer *ans)
{
	struct bc_client_claims claims;
	char *mac, err[512] = "";
	EVP_PKEY *key = o->key;
	int rc;

	fill_claims(o, &claims, &mac);
	if (key == NULL && o->csr == NULL && (rc = bc_key_generate(&key)) != 0)
		return rc;
	struct bc_join_params p = {
	    .attestor = o->attestor,
	    .role = o->role,
	    .token = o->token,
	    .attestation = o->attestation,
	    .attestation_len = o->attestation_len,
	    .claims = &claims,
	    .key = key,
	    .csr = o->csr,
	    .csr_len = o->csr_len,
	    .agent_version = "bctest",
	};
	rc = bc_client_join(&cp->pins, &p, ans, err, sizeof(err));
	if (rc != 0 && rc != BC_ERR_DENIED && getenv("BCT_LOG"))
		fprintf(stderr, "bct_join: %s\n", err);
	if (key != o->key)
		EVP_PKEY_free(key);
	return rc;
}

struct racer {
	struct bct_cp *cp;
	const struct bct_join_opts *o;
	int rc;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct bc_join_answer ans;

	r->rc = bct_join(r->cp, r->o, &ans);
	if (r->rc == 0)
		bc_join_answer_free(&ans);
	return NULL;
}

int bct_race(struct bct_cp *cp, int n, const struct bct_join_opts *o, int *admitted, int *denied)
{
	struct racer r[64];
	pthread_t th[64];
	int started = 0;

	*admitted = *denied = 0;
	if (n < 1 || n > 64)
		return BC_ERR_INVALID;
	for (; started < n; started++) {
		r[started] = (struct racer){cp, o, 0};
		if (pthread_create(&th[started], NULL, race, &r[started]) != 0)
			break;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		*admitted += r[i].rc == 0;
		*denied += r[i].rc == BC_ERR_DENIED;
	}
	return started == n ? 0 : BC_ERR_INTERNAL;
}

int bct_join_raw(struct bct_cp *cp, const struct bct_join_opts *o, long *status, uint8_t **body,
                 size_t *len)
{
	Bettercompute__Join__V1__JoinRequest rq = BETTERCOMPUTE__JOIN__V1__JOIN_REQUEST__INIT;
	Bettercompute__Join__V1__HardwareClaims hc = BETTERCOMPUTE__JOIN__V1__HARDWARE_CLAIMS__INIT;
	struct bc_client_reply r = {0};
	uint8_t *csr = NULL, *sealed = NULL, *wire = NULL, d[32];
	size_t csr_len = 0, sealed_len = 0, wire_len;
	EVP_PKEY *key = NULL;
	char *mac = (char *)(o->mac ? o->mac : "52:54:00:00:00:01"), err[256];
	int rc;

	if (o->csr) {
		csr = malloc(o->csr_len);
		memcpy(csr, o->csr, o->csr_len);
		csr_len = o->csr_len;
	} else if ((rc = bc_key_generate(&key)) != 0 ||
	           (rc = bc_csr_make(key, "node", &csr, &csr_len)) != 0) {
		EVP_PKEY_free(key);
		return rc;
	}
	if ((rc = bc_sha256(csr, csr_len, d)) != 0)
		goto out;
	if (o->token && (rc = bc_client_seal_token(cp->pins.join_encryption, o->token, d, &sealed,
	                                           &sealed_len)) != 0)
		goto out;
	rq.attestor = (char *)(o->attestor ? o->attestor : "");
	rq.role = (char *)(o->role ? o->role : "node");
	rq.csr.data = csr;
	rq.csr.len = csr_len;
	rq.sealed_token.data = sealed;
	rq.sealed_token.len = sealed_len;
	rq.attestation.data = (uint8_t *)o->attestation;
	rq.attestation.len = o->attestation_len;
	hc.n_macs = 1;
	hc.macs = &mac;
	hc.product_uuid = (char *)(o->product_uuid ? o->product_uuid : "");
	hc.serial = (char *)(o->serial ? o->serial : "");
	rq.claims = &hc;
	wire_len = bettercompute__join__v1__join_request__get_packed_size(&rq);
	wire = malloc(wire_len ? wire_len : 1);
	bettercompute__join__v1__join_request__pack(&rq, wire);
	rc = bc_client_post(&cp->pins, BC_WIRE_PATH_JOIN, wire, wire_len, &r, err, sizeof(err));
	*status = r.status;
	*body = r.body;
	*len = r.len;
out:
	free(wire);
	free(sealed);
	free(csr);
	EVP_PKEY_free(key);
	return rc;
}

long bct_post(struct bct_cp *cp, const char *path, const uint8_t *body, size_t len)
{
	struct bc_client_reply r = {0};
	char err[256];

	if (bc_client_post(&cp->pins, path, body, len, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "bct: POST %s: %s\n", path, err);
		return -1;
	}
	free(r.body);
	return r.status;
}

const char *bct_last_reason(struct bct_cp *cp)
{
	const char *r;
	pthread_mutex_lock(&cp->mu);
	r = cp->n_refusals ? cp->refusals[cp->n_refusals - 1].reason : "";
	pthread_mutex_unlock(&cp->mu);
	return r;
}

uint64_t bct_refusal_total(struct bct_cp *cp)
{
	uint64_t n;
	pthread_mutex_lock(&cp->mu);
	n = cp->total_refusals;
	pthread_mutex_unlock(&cp->mu);
	return n;
}

size_t bct_refusal_count(struct bct_cp *cp)
{
	size_t n;
	pthread_mutex_lock(&cp->mu);
	n = cp->n_refusals;
	pthread_mutex_unlock(&cp->mu);
	return n;
}

struct bct_refusal bct_last_refusal(struct bct_cp *cp)
{
	struct bct_refusal r;
	memset(&r, 0, sizeof(r));
	pthread_mutex_lock(&cp->mu);
	if (cp->n_refusals)
		r = cp->refusals[cp->n_refusals - 1];
	pthread_mutex_unlock(&cp->mu);
	return r;
}

int bct_sign(EVP_PKEY *key, const char *purpose, const void *payload, size_t len,
             uint8_t sig[BC_SIG_LEN])
{
	struct bc_signer s;
	int rc;

	if ((rc = bc_signer_init(&s, key, NULL, NULL)) != 0)
		return rc;
	return bc_es256_sign(&s, purpose, payload, len, sig);
}

int bct_renew(struct bct_cp *cp, const struct bc_join_answer *ans, EVP_PKEY *key,
              EVP_PKEY *next_key, struct bc_join_answer *out)
{
	struct bc_renew_params p = {.chain = (const uint8_t *const *)ans->chain,
	                            .chain_lens = ans->chain_lens,
	                            .n_chain = ans->n_chain};
	struct bc_signer cur;
	uint8_t *csr = NULL;
	size_t csr_len = 0;
	char err[256];
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = bc_signer_init(&cur, key, NULL, NULL)) != 0 ||
	    (rc = bc_csr_make(next_key, BC_WIRE_CSR_CN, &csr, &csr_len)) != 0)
		return rc;
	p.signer = &cur;
	p.csr = csr;
	p.csr_len = csr_len;
	rc = bc_client_renew(&cp->pins, &p, out, err, sizeof(err));
	free(csr);
	return rc;
}
