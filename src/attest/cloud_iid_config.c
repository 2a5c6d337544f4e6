/* [attestors.cloud-iid] in server.toml: the providers .gcp, .aws (with its
 * .aws.certificates table, region = PEM file), .oidc.<id>, the .resolve.<name> rules
 * and roles. Every key is checked; an unknown one is an error naming it. */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/cloud_iid.h"
#include "bc/files.h"

#define PEM_MAX (256 * 1024)

struct keys {
	const char *const *known; /* NULL-terminated */
	const char *const *tables;
};

/* table.name into out; BC_ERR_CONFIG when it does not fit. */
static int sub_table(char *out, size_t n, const char *table, const char *name)
{
	int k = snprintf(out, n, "%s.%s", table, name);

	return k < 0 || (size_t)k >= n ? BC_ERR_CONFIG : 0;
}

static int fail(char *err, size_t errlen, const char *table, const char *key, const char *what)
{
	snprintf(err, errlen, "[%s] %s: %s", table, key, what);
	return BC_ERR_CONFIG;
}

static int in(const char *const *set, const char *s)
{
	for (size_t i = 0; set && set[i]; i++)
		if (strcmp(set[i], s) == 0)
			return 1;
	return 0;
}

static int check_keys(const bc_toml *t, const char *table, const struct keys *k, char *err,
                      size_t errlen)
{
	const char *const *names;
	size_t n;

	if (bc_toml_keys(t, table, &names, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (!in(k->known, names[i]))
				return fail(err, errlen, table, names[i], "unknown key");
	if (bc_toml_tables(t, table, &names, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (!in(k->tables, names[i]))
				return fail(err, errlen, table, names[i], "unknown table");
	return 0;
}

static const char *get_str(const bc_toml *t, const char *table, const char *key, int *bad)
{
	char path[256];
	const char *s = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s.%s", table, key);
	if ((rc = bc_toml_get_string(t, path, &s)) != 0 && rc != BC_ERR_NOT_FOUND)
		*bad = 1;
	if (s && s[0] == 0)
		*bad = 1;
	return rc == 0 ? s : NULL;
}

static int get_ms(const bc_toml *t, const char *table, const char *key, int64_t *v, char *err,
                  size_t errlen)
{
	if (bc_attest_opt_int(t, table, key, 1000, 24LL * 3600 * 1000, v) != 0)
		return fail(err, errlen, table, key, "expected 1000 to 86400000 (ms)");
	return 0;
}

int str_list_has(const struct str_list *l, const char *s)
{
	if (l->n == 0)
		return 1;
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return 1;
	return 0;
}

static void str_list_free(struct str_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int get_list(const bc_toml *t, const char *table, const char *key, struct str_list *l,
                    char *err, size_t errlen)
{
	const char *const *arr;
	char path[256];
	size_t n;
	int rc;

	snprintf(path, sizeof(path), "%s.%s", table, key);
	if ((rc = bc_toml_get_strings(t, path, &arr, &n)) == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0 || n == 0 || n > CLOUD_LIST_MAX)
		return fail(err, errlen, table, key, "expected a non-empty array of strings");
	if ((l->v = calloc(n, sizeof(*l->v))) == NULL)
		return BC_ERR_NOMEM;
	for (; l->n < n; l->n++)
		if ((l->v[l->n] = strdup(arr[l->n])) == NULL)
			return BC_ERR_NOMEM;
	return 0;
}

static int get_algs(const bc_toml *t, const char *table, struct jwt_provider *p, char *err,
                    size_t errlen)
{
	struct str_list l = {0};
	int rc;

	p->algs[0] = "RS256";
	p->algs[1] = "ES256";
	p->n_algs = 2;
	if ((rc = get_list(t, table, "algs", &l, err, errlen)) != 0 || l.n == 0)
		goto out;
	p->n_algs = 0;
	for (size_t i = 0; i < l.n && rc == 0; i++) {
		if (p->n_algs < 2 && strcmp(l.v[i], "RS256") == 0)
			p->algs[p->n_algs++] = "RS256";
		else if (p->n_algs < 2 && strcmp(l.v[i], "ES256") == 0)
			p->algs[p->n_algs++] = "ES256";
		else
			rc = fail(err, errlen, table, "algs",
			          "expected \"RS256\" and/or \"ES256\" (never none or HS*)");
	}
out:
	str_list_free(&l);
	return rc;
}

static void jwt_free(struct jwt_provider *p)
{
	if (p == NULL)
		return;
	free(p->issuer);
	free(p->audience);
	free(p->account_claim);
	free(p->instance_claim);
	free(p->zone_claim);
	str_list_free(&p->allowed);
	jwks_src_clear(&p->jwks);
	free(p);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int jwt_common(const bc_toml *t, const char *table, struct jwt_provider *p,
                      const char *def_jwks, const char *list_key, char *err, size_t errlen)
{
	char why[512] = "";
	const char *jwks, *ca, *aud;
	int bad = 0, rc;

	aud = get_str(t, table, "audience", &bad);
	jwks = get_str(t, table, "jwks", &bad);
	ca = get_str(t, table, "jwks_ca", &bad);
	if (bad)
		return fail(err, errlen, table, "audience/jwks/jwks_ca",
		            "expected non-empty strings");
	if (aud == NULL)
		return fail(err, errlen, table, "audience",
		            "required (the token's aud is audience#<hex sha256(csr)>)");
	if (jwks == NULL && (jwks = def_jwks) == NULL)
		return fail(err, errlen, table, "jwks", "required (a JWKS file or https URL)");
	if ((p->audience = strdup(aud)) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = jwks_src_init(&p->jwks, jwks, ca, why, sizeof(why))) != 0)
		return rc == BC_ERR_NOMEM ? rc : fail(err, errlen, table, "jwks", why);
	p->max_age_ms = 600000;
	if ((rc = get_ms(t, table, "max_age_ms", &p->max_age_ms, err, errlen)) != 0 ||
	    (rc = get_list(t, table, list_key, &p->allowed, err, errlen)) != 0)
		return rc;
	return get_algs(t, table, p, err, errlen);
}

static int load_gcp(const bc_toml *t, const char *table, struct cloud_cfg *c, char *err,
                    size_t errlen)
{
	static const char *const known[] = {"audience", "jwks",       "jwks_ca", "projects",
	                                    "algs",     "max_age_ms", NULL};
	const struct keys k = {known, NULL};
	int rc;

	if ((rc = check_keys(t, table, &k, err, errlen)) != 0)
		return rc;
	if ((c->gcp = calloc(1, sizeof(*c->gcp))) == NULL)
		return BC_ERR_NOMEM;
	pthread_mutex_init(&c->gcp->jwks.mu, NULL);
	snprintf(c->gcp->name, sizeof(c->gcp->name), "gcp");
	if ((c->gcp->issuer = strdup(CLOUD_GCP_ISSUER)) == NULL)
		return BC_ERR_NOMEM;
	return jwt_common(t, table, c->gcp, CLOUD_GCP_JWKS, "projects", err, errlen);
}

static int load_oidc_one(const bc_toml *t, const char *table, const char *id, struct cloud_cfg *c,
                         char *err, size_t errlen)
{
	static const char *const known[] = {
	    "issuer",        "audience",       "jwks",       "jwks_ca",
	    "account_claim", "instance_claim", "zone_claim", "accounts",
	    "algs",          "max_age_ms",     NULL};
	const struct keys k = {known, NULL};
	struct jwt_provider *p;
	const char *iss, *acc, *ins, *zone;
	int bad = 0, rc;

	if ((rc = check_keys(t, table, &k, err, errlen)) != 0)
		return rc;
	if (c->n_oidc == CLOUD_OIDC_MAX)
		return fail(err, errlen, table, id, "at most 16 OIDC issuers");
	if ((p = c->oidc[c->n_oidc++] = calloc(1, sizeof(*p))) == NULL)
		return BC_ERR_NOMEM;
	pthread_mutex_init(&p->jwks.mu, NULL);
	snprintf(p->name, sizeof(p->name), "oidc.%s", id);
	iss = get_str(t, table, "issuer", &bad);
	acc = get_str(t, table, "account_claim", &bad);
	ins = get_str(t, table, "instance_claim", &bad);
	zone = get_str(t, table, "zone_claim", &bad);
	if (bad || iss == NULL)
		return fail(err, errlen, table, "issuer",
		            "required, and every key a non-empty string");
	/* a name alone is anyone's to choose: the account pins whose instance it is */
	if (acc == NULL || ins == NULL)
		return fail(
		    err, errlen, table, acc ? "instance_claim" : "account_claim",
		    "required: the claims that name the account (a project, a subscription) "
		    "and the instance");
	for (size_t i = 0; i + 1 < c->n_oidc; i++)
		if (strcmp(c->oidc[i]->issuer, iss) == 0)
			return fail(err, errlen, table, "issuer",
			            "another [oidc.<id>] has this issuer");
	if ((p->issuer = strdup(iss)) == NULL || (p->account_claim = strdup(acc)) == NULL ||
	    (p->instance_claim = strdup(ins)) == NULL ||
	    (zone && (p->zone_claim = dup_or_null(zone)) == NULL))
		return BC_ERR_NOMEM;
	return jwt_common(t, table, p, NULL, "accounts", err, errlen);
}

typedef int (*table_fn)(const bc_toml *t, const char *table, const char *name, struct cloud_cfg *c,
                        char *err, size_t errlen);

/* fn for each [table.<name>]; table itself may hold no keys. */
static int each_table(const bc_toml *t, const char *table, const char *what, table_fn fn,
                      struct cloud_cfg *c, char *err, size_t errlen)
{
	const char *const *names;
	char sub[512];
	size_t n;
	int rc;

	if (bc_toml_keys(t, table, &names, &n) == 0 && n > 0)
		return fail(err, errlen, table, names[0], what);
	if (bc_toml_tables(t, table, &names, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if ((rc = sub_table(sub, sizeof(sub), table, names[i])) != 0 ||
		    (rc = fn(t, sub, names[i], c, err, errlen)) != 0)
			return rc;
	}
	return 0;
}

/* RSA certificates of at least 2048 bits, PEM. */
static int load_certs(const char *path, STACK_OF(X509) * into, STACK_OF(X509) * all)
{
	char *text = NULL;
	size_t len;
	BIO *bio;
	X509 *x;
	int n = 0, rc;

	if ((rc = bc_file_read(path, PEM_MAX, BC_FILE_FOLLOW | BC_FILE_TEXT, &text, &len)) != 0)
		return rc;
	if ((bio = BIO_new_mem_buf(text, (int)len)) == NULL) {
		free(text);
		return BC_ERR_NOMEM;
	}
	rc = 0;
	while (rc == 0 && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		EVP_PKEY *pk = X509_get0_pubkey(x);
		if (pk == NULL || EVP_PKEY_get_base_id(pk) != EVP_PKEY_RSA ||
		    EVP_PKEY_get_bits(pk) < 2048 || !sk_X509_push(into, x)) {
			X509_free(x);
			rc = BC_ERR_INVALID;
			break;
		}
		X509_up_ref(x);
		if (!sk_X509_push(all, x)) {
			X509_free(x);
			rc = BC_ERR_NOMEM;
		}
		n++;
	}
	ERR_clear_error();
	BIO_free(bio);
	free(text);
	return rc != 0 ? rc : n ? 0 : BC_ERR_INVALID;
}

static void aws_free(struct aws_cfg *a)
{
	if (a == NULL)
		return;
	for (size_t i = 0; i < a->n_regions; i++) {
		free(a->regions[i].name);
		sk_X509_pop_free(a->regions[i].certs, X509_free);
	}
	free(a->regions);
	sk_X509_pop_free(a->all, X509_free);
	str_list_free(&a->accounts);
	free(a);
}

static int load_aws(const bc_toml *t, const char *table, struct cloud_cfg *c, char *err,
                    size_t errlen)
{
	static const char *const known[] = {"accounts", "max_age_ms", NULL};
	static const char *const tables[] = {"certificates", NULL};
	const struct keys k = {known, tables};
	const char *const *regions;
	char sub[512], path[768], what[900];
	struct aws_cfg *a;
	size_t n = 0;
	int rc;

	if ((rc = check_keys(t, table, &k, err, errlen)) != 0)
		return rc;
	if ((a = c->aws = calloc(1, sizeof(*a))) == NULL || (a->all = sk_X509_new_null()) == NULL)
		return BC_ERR_NOMEM;
	a->max_age_ms = 1800000;
	if ((rc = get_ms(t, table, "max_age_ms", &a->max_age_ms, err, errlen)) != 0 ||
	    (rc = get_list(t, table, "accounts", &a->accounts, err, errlen)) != 0)
		return rc;
	if (sub_table(sub, sizeof(sub), table, "certificates") != 0 ||
	    bc_toml_keys(t, sub, &regions, &n) != 0 || n == 0)
		return fail(err, errlen, table, "certificates",
		            "required: [.certificates] region = \"PEM file\" (\"*\" for the rest), "
		            "the certificates AWS publishes for each region");
	if ((a->regions = calloc(n, sizeof(*a->regions))) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		struct aws_region *r = &a->regions[a->n_regions++];
		const char *file;
		if (sub_table(path, sizeof(path), sub, regions[i]) != 0)
			return fail(err, errlen, sub, regions[i], "name too long");
		if ((r->name = strdup(regions[i])) == NULL ||
		    (r->certs = sk_X509_new_null()) == NULL)
			return BC_ERR_NOMEM;
		if (bc_toml_get_string(t, path, &file) != 0)
			return fail(err, errlen, sub, regions[i], "expected a PEM file name");
		if ((rc = load_certs(file, r->certs, a->all)) != 0) {
			snprintf(what, sizeof(what),
			         "%s: expected PEM RSA certificates of at least 2048 bits (%s)",
			         file, bc_err_str(rc));
			return fail(err, errlen, sub, regions[i], what);
		}
	}
	return 0;
}

static int copy_id(const bc_toml *t, const char *table, const char *key, char out[BC_ID_MAX],
                   int required, char *err, size_t errlen)
{
	int bad = 0;
	const char *s = get_str(t, table, key, &bad);

	if (bad || (s && strlen(s) >= BC_ID_MAX) || (required && s == NULL))
		return fail(err, errlen, table, key,
		            required ? "required: an id of 1 to 63 bytes"
		                     : "an id of 1 to 63 bytes");
	if (s)
		snprintf(out, BC_ID_MAX, "%s", s);
	return 0;
}

static int load_rule(const bc_toml *t, const char *table, const char *name, struct resolve_rule *r,
                     char *err, size_t errlen)
{
	static const char *const known[] = {"provider", "account", "zone", "region",
	                                    "tenant",   "pool",    "site", NULL};
	const struct keys k = {known, NULL};
	const char *prov, *acc, *zone, *region;
	int bad = 0, rc;

	if ((rc = check_keys(t, table, &k, err, errlen)) != 0)
		return rc;
	prov = get_str(t, table, "provider", &bad);
	acc = get_str(t, table, "account", &bad);
	zone = get_str(t, table, "zone", &bad);
	region = get_str(t, table, "region", &bad);
	if (bad || prov == NULL || acc == NULL)
		return fail(
		    err, errlen, table, "provider/account",
		    "required: the provider (gcp, aws, oidc.<id>) and the account or project "
		    "this rule admits");
	if ((r->name = strdup(name)) == NULL || (r->provider = strdup(prov)) == NULL ||
	    (r->account = strdup(acc)) == NULL || (zone && (r->zone = strdup(zone)) == NULL) ||
	    (region && (r->region = strdup(region)) == NULL))
		return BC_ERR_NOMEM;
	if ((rc = copy_id(t, table, "tenant", r->tenant, 1, err, errlen)) != 0 ||
	    (rc = copy_id(t, table, "pool", r->pool, 0, err, errlen)) != 0 ||
	    (rc = copy_id(t, table, "site", r->site, 0, err, errlen)) != 0)
		return rc;
	return 0;
}

static int add_rule(const bc_toml *t, const char *table, const char *name, struct cloud_cfg *c,
                    char *err, size_t errlen)
{
	struct resolve_rule *r;

	if (c->n_rules == CLOUD_LIST_MAX)
		return fail(err, errlen, table, name, "at most 256 resolve rules");
	if ((r = realloc(c->rules, (c->n_rules + 1) * sizeof(*r))) == NULL)
		return BC_ERR_NOMEM;
	c->rules = r;
	memset(&r[c->n_rules], 0, sizeof(*r));
	return load_rule(t, table, name, &r[c->n_rules++], err, errlen);
}

static int load_roles(const bc_toml *t, const char *table, struct cloud_cfg *c, char *err,
                      size_t errlen)
{
	const char *const *arr;
	char path[256];
	size_t n;
	int rc;

	c->roles[0] = "node";
	c->n_roles = 1;
	snprintf(path, sizeof(path), "%s.roles", table);
	if ((rc = bc_toml_get_strings(t, path, &arr, &n)) == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0 || n == 0 || n > 2)
		return fail(err, errlen, table, "roles", "expected node and/or site");
	c->n_roles = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(arr[i], "node") && strcmp(arr[i], "site"))
			return fail(err, errlen, table, "roles", "expected node and/or site");
		c->roles[c->n_roles++] = strcmp(arr[i], "node") ? "site" : "node";
	}
	return 0;
}

static int load(const bc_toml *t, const char *table, struct cloud_cfg *c, char *err, size_t errlen)
{
	static const char *const known[] = {"roles", NULL};
	static const char *const tables[] = {"gcp", "aws", "oidc", "resolve", NULL};
	const struct keys k = {known, tables};
	char sub[512];
	int rc;

	if ((rc = check_keys(t, table, &k, err, errlen)) != 0 ||
	    (rc = load_roles(t, table, c, err, errlen)) != 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.gcp", table);
	if (bc_toml_has_table(t, sub) && (rc = load_gcp(t, sub, c, err, errlen)) != 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.aws", table);
	if (bc_toml_has_table(t, sub) && (rc = load_aws(t, sub, c, err, errlen)) != 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.oidc", table);
	if ((rc = each_table(t, sub, "expected [oidc.<id>] tables only", load_oidc_one, c, err,
	                     errlen)) != 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.resolve", table);
	if ((rc = each_table(t, sub, "expected [resolve.<name>] tables only", add_rule, c, err,
	                     errlen)) != 0)
		return rc;
	if (c->gcp == NULL && c->aws == NULL && c->n_oidc == 0)
		return fail(err, errlen, table, "gcp/aws/oidc",
		            "configure at least one provider ([.gcp], [.aws], [.oidc.<id>])");
	if (c->n_rules == 0)
		return fail(err, errlen, table, "resolve",
		            "required: [.resolve.<name>] rules (provider, account -> tenant, pool, "
		            "site); without one no instance can join");
	return 0;
}

int cloud_cfg_load(const bc_toml *t, const char *table, struct cloud_cfg **out, char *err,
                   size_t errlen)
{
	struct cloud_cfg *c;
	int rc;

	*out = NULL;
	if (t == NULL)
		return fail(err, errlen, table, "gcp/aws/oidc", "no configuration");
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return BC_ERR_NOMEM;
	if ((rc = load(t, table, c, err, errlen)) != 0) {
		cloud_cfg_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void cloud_cfg_free(struct cloud_cfg *c)
{
	if (c == NULL)
		return;
	jwt_free(c->gcp);
	aws_free(c->aws);
	for (size_t i = 0; i < c->n_oidc; i++)
		jwt_free(c->oidc[i]);
	for (size_t i = 0; i < c->n_rules; i++) {
		struct resolve_rule *r = &c->rules[i];
		free(r->name);
		free(r->provider);
		free(r->account);
		free(r->zone);
		free(r->region);
	}
	free(c->rules);
	free(c);
}
