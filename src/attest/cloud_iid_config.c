/* [attestors.cloud-iid] in server.toml: the providers .gcp, .aws (with its
 * .aws.certificates table, region = PEM file), .oidc.<id>, the .resolve.<name> rules
 * and roles. Each table is read through bc_attest_read_table (its field table below):
 * an unknown key is an error naming it and the known ones. The region names of
 * .aws.certificates are the operator's, read as a map. */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/cloud_iid.h"
#include "bc/canon.h"
#include "bc/files.h"
#include "bc/pki.h"

#define PEM_MAX (256 * 1024)

/* What the readers fill, before it is checked and copied. */
struct jwt_raw {
	const char *issuer, *audience, *jwks, *jwks_ca;
	const char *account_claim, *instance_claim, *zone_claim;
	struct bc_toml_strings allowed, algs;
	int64_t max_age_ms;
};

#define LIST_EXPECT "a non-empty array of strings"
#define JWT_STR(k, m)                                                                              \
	{                                                                                          \
		.key = k, .type = BC_TOML_STRING, .flags = BC_TOML_NONEMPTY,                       \
		.expect = "a non-empty string", BC_TOML_AT(struct jwt_raw, m)                      \
	}
#define JWT_LIST(k, m)                                                                             \
	{                                                                                          \
		.key = k, .type = BC_TOML_STRINGS, .min = 1, .max = CLOUD_LIST_MAX,                \
		.expect = LIST_EXPECT, BC_TOML_AT(struct jwt_raw, m)                               \
	}
#define MAX_AGE(m)                                                                                 \
	{                                                                                          \
		.key = "max_age_seconds", .type = BC_TOML_SECONDS, .min = 1, .max = 24 * 3600,     \
		.scale = 1000, .old = "max_age_ms", BC_TOML_AT(m, max_age_ms)                      \
	}

static const struct bc_toml_field gcp_fields[] = {
    JWT_STR("audience", audience), JWT_STR("jwks", jwks),  JWT_STR("jwks_ca", jwks_ca),
    JWT_LIST("projects", allowed), JWT_LIST("algs", algs), MAX_AGE(struct jwt_raw),
};

static const struct bc_toml_field oidc_fields[] = {
    JWT_STR("issuer", issuer),
    JWT_STR("audience", audience),
    JWT_STR("jwks", jwks),
    JWT_STR("jwks_ca", jwks_ca),
    JWT_STR("account_claim", account_claim),
    JWT_STR("instance_claim", instance_claim),
    JWT_STR("zone_claim", zone_claim),
    JWT_LIST("accounts", allowed),
    JWT_LIST("algs", algs),
    MAX_AGE(struct jwt_raw),
};

struct aws_raw {
	struct bc_toml_strings accounts;
	int64_t max_age_ms;
};

static const struct bc_toml_field aws_fields[] = {
    {.key = "accounts",
     .type = BC_TOML_STRINGS,
     .min = 1,
     .max = CLOUD_LIST_MAX,
     .expect = LIST_EXPECT,
     BC_TOML_AT(struct aws_raw, accounts)},
    MAX_AGE(struct aws_raw),
    {.key = "certificates", .type = BC_TOML_TABLE},
};

struct rule_raw {
	const char *provider, *account, *zone, *region, *tenant, *pool, *site;
	const char *node, *role, *product_uuid;
};

#define RULE_STR(k)                                                                                \
	{                                                                                          \
		.key = #k, .type = BC_TOML_STRING, .flags = BC_TOML_NONEMPTY,                      \
		.expect = "a non-empty string", BC_TOML_AT(struct rule_raw, k)                     \
	}
static const struct bc_toml_field rule_fields[] = {
    RULE_STR(provider), RULE_STR(account), RULE_STR(zone), RULE_STR(region), RULE_STR(tenant),
    RULE_STR(pool),     RULE_STR(site),    RULE_STR(node), RULE_STR(role),   RULE_STR(product_uuid),
};

struct top_raw {
	struct bc_toml_strings roles;
};

static const struct bc_toml_field top_fields[] = {
    {.key = "roles",
     .type = BC_TOML_STRINGS,
     .min = 1,
     .max = 2,
     .expect = "node and/or site",
     BC_TOML_AT(struct top_raw, roles)},
    {.key = "gcp", .type = BC_TOML_TABLE},
    {.key = "aws", .type = BC_TOML_TABLE},
    {.key = "oidc", .type = BC_TOML_TABLE, .expect = "[oidc.<id>]"},
    {.key = "resolve", .type = BC_TOML_TABLE, .expect = "[resolve.<name>]"},
};

/* [oidc] and [resolve] hold only named sub-tables. */
static const struct bc_toml_field named_fields[] = {
    {.key = "*", .type = BC_TOML_TABLE},
};

/* table.name into out; BC_ERR_CONFIG when it does not fit. */
static int sub_table(char *out, size_t n, const char *table, const char *name)
{
	int k = snprintf(out, n, "%s.%s", table, name);

	return k < 0 || (size_t)k >= n ? BC_ERR_CONFIG : 0;
}

#define READ(t, table, fields, dst, err, errlen)                                                   \
	bc_attest_read_table(t, table, fields, BC_ATTEST_N_FIELDS(fields), dst, err, errlen)

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

static int copy_list(const struct bc_toml_strings *from, struct str_list *l)
{
	if (from->v == NULL)
		return 0;
	if ((l->v = calloc(from->n, sizeof(*l->v))) == NULL)
		return BC_ERR_NOMEM;
	for (; l->n < from->n; l->n++)
		if ((l->v[l->n] = strdup(from->v[l->n])) == NULL)
			return BC_ERR_NOMEM;
	return 0;
}

static int set_algs(const struct bc_toml_strings *algs, const char *table, struct jwt_provider *p,
                    char *err, size_t errlen)
{
	p->algs[0] = "RS256";
	p->algs[1] = "ES256";
	p->n_algs = 2;
	if (algs->v == NULL)
		return 0;
	p->n_algs = 0;
	for (size_t i = 0; i < algs->n; i++) {
		if (p->n_algs < 2 && strcmp(algs->v[i], "RS256") == 0)
			p->algs[p->n_algs++] = "RS256";
		else if (p->n_algs < 2 && strcmp(algs->v[i], "ES256") == 0)
			p->algs[p->n_algs++] = "ES256";
		else
			return bc_attest_config_fail(
			    err, errlen, table, "algs",
			    "expected \"RS256\" and/or \"ES256\" (never none or HS*)");
	}
	return 0;
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

static int jwt_common(const struct jwt_raw *raw, const char *table, struct jwt_provider *p,
                      const char *def_jwks, char *err, size_t errlen)
{
	char why[512] = "";
	const char *jwks = raw->jwks ? raw->jwks : def_jwks;
	int rc;

	if (raw->audience == NULL)
		return bc_attest_config_fail(
		    err, errlen, table, "audience",
		    "required (the token's aud is audience#<hex sha256(csr)>)");
	if (jwks == NULL)
		return bc_attest_config_fail(err, errlen, table, "jwks",
		                             "required (a JWKS file or https URL)");
	if ((p->audience = strdup(raw->audience)) == NULL)
		return BC_ERR_NOMEM;
	p->max_age_ms = raw->max_age_ms;
	if ((rc = copy_list(&raw->allowed, &p->allowed)) != 0 ||
	    (rc = set_algs(&raw->algs, table, p, err, errlen)) != 0)
		return rc;
	/* last: a URL's refresher starts its first load here */
	if ((rc = jwks_src_init(&p->jwks, jwks, raw->jwks_ca, why, sizeof(why))) != 0)
		return rc == BC_ERR_NOMEM ? rc
		                          : bc_attest_config_fail(err, errlen, table, "jwks", why);
	return 0;
}

static int load_gcp(const bc_toml *t, const char *table, struct cloud_cfg *c, char *err,
                    size_t errlen)
{
	struct jwt_raw raw = {.max_age_ms = 600000};
	int rc;

	if ((rc = READ(t, table, gcp_fields, &raw, err, errlen)) != 0)
		return rc;
	if ((c->gcp = calloc(1, sizeof(*c->gcp))) == NULL)
		return BC_ERR_NOMEM;
	snprintf(c->gcp->name, sizeof(c->gcp->name), "gcp");
	if ((c->gcp->issuer = strdup(CLOUD_GCP_ISSUER)) == NULL)
		return BC_ERR_NOMEM;
	return jwt_common(&raw, table, c->gcp, CLOUD_GCP_JWKS, err, errlen);
}

static int load_oidc_one(const bc_toml *t, const char *table, const char *id, struct cloud_cfg *c,
                         char *err, size_t errlen)
{
	struct jwt_raw raw = {.max_age_ms = 600000};
	struct jwt_provider *p;
	int rc;

	if ((rc = READ(t, table, oidc_fields, &raw, err, errlen)) != 0)
		return rc;
	if (c->n_oidc == CLOUD_OIDC_MAX)
		return bc_attest_config_fail(err, errlen, table, id, "at most 16 OIDC issuers");
	if ((p = c->oidc[c->n_oidc++] = calloc(1, sizeof(*p))) == NULL)
		return BC_ERR_NOMEM;
	snprintf(p->name, sizeof(p->name), "oidc.%s", id);
	if (raw.issuer == NULL)
		return bc_attest_config_fail(err, errlen, table, "issuer", "required");
	/* a name alone is anyone's to choose: the account pins whose instance it is */
	if (raw.account_claim == NULL || raw.instance_claim == NULL)
		return bc_attest_config_fail(
		    err, errlen, table, raw.account_claim ? "instance_claim" : "account_claim",
		    "required: the claims that name the account (a project, a subscription) "
		    "and the instance");
	for (size_t i = 0; i + 1 < c->n_oidc; i++)
		if (strcmp(c->oidc[i]->issuer, raw.issuer) == 0)
			return bc_attest_config_fail(err, errlen, table, "issuer",
			                             "another [oidc.<id>] has this issuer");
	if ((p->issuer = strdup(raw.issuer)) == NULL ||
	    (p->account_claim = strdup(raw.account_claim)) == NULL ||
	    (p->instance_claim = strdup(raw.instance_claim)) == NULL ||
	    (raw.zone_claim && (p->zone_claim = strdup(raw.zone_claim)) == NULL))
		return BC_ERR_NOMEM;
	return jwt_common(&raw, table, p, NULL, err, errlen);
}

typedef int (*table_fn)(const bc_toml *t, const char *table, const char *name, struct cloud_cfg *c,
                        char *err, size_t errlen);

/* fn for each [table.<name>]; table itself may hold no keys. */
static int each_table(const bc_toml *t, const char *table, table_fn fn, struct cloud_cfg *c,
                      char *err, size_t errlen)
{
	const char *const *names;
	char sub[512];
	size_t n;
	int rc;

	if ((rc = READ(t, table, named_fields, NULL, err, errlen)) != 0)
		return rc;
	if (bc_toml_tables(t, table, &names, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if ((rc = sub_table(sub, sizeof(sub), table, names[i])) != 0 ||
		    (rc = fn(t, sub, names[i], c, err, errlen)) != 0)
			return rc;
	}
	return 0;
}

/* The RSA sizes a region file may hold: AWS signs "signature" with a 1024-bit key in
 * every region, so that path accepts one; rsa2048's PKCS#7 only verifies under 2048
 * bits or more. Nothing else ever sees a key under 2048 bits. */
#define AWS_SIG_MIN_BITS 1024
#define AWS_P7_MIN_BITS  2048

/* One certificate of a region file: an RSA key of at least 1024 bits goes into the
 * region's certificates (the signature path); of at least 2048, also into all
 * (PKCS7_verify's signers). A DSA certificate (AWS's pkcs7 endpoint, which bcd does
 * not use) is skipped. *used 1 when it was kept. */
static int add_cert(X509 *x, STACK_OF(X509) * into, STACK_OF(X509) * all, int *used)
{
	EVP_PKEY *pk = X509_get0_pubkey(x);
	int type = pk ? EVP_PKEY_get_base_id(pk) : 0, bits = pk ? EVP_PKEY_get_bits(pk) : 0;

	*used = 0;
	if (type == EVP_PKEY_DSA)
		return 0;
	if (type != EVP_PKEY_RSA || bits < AWS_SIG_MIN_BITS)
		return BC_ERR_INVALID;
	if (!sk_X509_push(into, x))
		return BC_ERR_NOMEM;
	X509_up_ref(x);
	*used = 1;
	if (bits >= AWS_P7_MIN_BITS) {
		X509_up_ref(x);
		if (!sk_X509_push(all, x)) {
			X509_free(x);
			return BC_ERR_NOMEM;
		}
	}
	return 0;
}

/* A PEM file of AWS's certificates for a region (add_cert); at least one usable. The
 * file must not be writable by others: it is the trust. */
static int load_certs(const char *path, STACK_OF(X509) * into, STACK_OF(X509) * all, char *why,
                      size_t whylen)
{
	char *text = NULL;
	size_t len;
	BIO *bio;
	X509 *x;
	int n = 0, used, rc;

	if ((rc = bc_file_check_mode(path, 0, why, whylen)) != 0)
		return rc;
	if ((rc = bc_file_read(path, PEM_MAX, BC_FILE_FOLLOW | BC_FILE_TEXT, &text, &len)) != 0)
		goto fail;
	if ((bio = BIO_new_mem_buf(text, (int)len)) == NULL) {
		free(text);
		return BC_ERR_NOMEM;
	}
	while (rc == 0 && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		rc = add_cert(x, into, all, &used);
		n += used;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(bio);
	free(text);
	if (rc == 0 && n == 0)
		rc = BC_ERR_INVALID;
	if (rc == 0 || rc == BC_ERR_NOMEM)
		return rc;
fail:
	snprintf(why, whylen,
	         "%s: expected PEM RSA certificates of at least 1024 bits, as AWS publishes "
	         "them (1024-bit ones verify only \"signature\"; rsa2048 needs 2048) (%s)",
	         path, bc_err_str(rc));
	return rc;
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
	struct aws_raw raw = {.max_age_ms = 1800000};
	const char *const *regions;
	char sub[512], path[768], what[900];
	struct aws_cfg *a;
	size_t n = 0;
	int rc;

	if ((rc = READ(t, table, aws_fields, &raw, err, errlen)) != 0)
		return rc;
	if ((a = c->aws = calloc(1, sizeof(*a))) == NULL || (a->all = sk_X509_new_null()) == NULL)
		return BC_ERR_NOMEM;
	a->max_age_ms = raw.max_age_ms;
	if ((rc = copy_list(&raw.accounts, &a->accounts)) != 0)
		return rc;
	if (sub_table(sub, sizeof(sub), table, "certificates") != 0 ||
	    bc_toml_keys(t, sub, &regions, &n) != 0 || n == 0)
		return bc_attest_config_fail(
		    err, errlen, table, "certificates",
		    "required: [.certificates] region = \"PEM file\" (\"*\" for the rest), "
		    "the certificates AWS publishes for each region");
	if ((a->regions = calloc(n, sizeof(*a->regions))) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		struct aws_region *r = &a->regions[a->n_regions++];
		const char *file;
		if (sub_table(path, sizeof(path), sub, regions[i]) != 0)
			return bc_attest_config_fail(err, errlen, sub, regions[i], "name too long");
		if ((r->name = strdup(regions[i])) == NULL ||
		    (r->certs = sk_X509_new_null()) == NULL)
			return BC_ERR_NOMEM;
		if (bc_toml_get_string(t, path, &file) != 0)
			return bc_attest_config_fail(err, errlen, sub, regions[i],
			                             "expected a PEM file name");
		if ((rc = load_certs(file, r->certs, a->all, what, sizeof(what))) != 0)
			return rc == BC_ERR_NOMEM
			           ? rc
			           : bc_attest_config_fail(err, errlen, sub, regions[i], what);
	}
	return 0;
}

static int copy_id(const char *s, const char *table, const char *key, char out[BC_ID_MAX],
                   int required, char *err, size_t errlen)
{
	if ((s && strlen(s) >= BC_ID_MAX) || (required && s == NULL))
		return bc_attest_config_fail(err, errlen, table, key,
		                             required ? "required: an id of 1 to 63 bytes"
		                                      : "an id of 1 to 63 bytes");
	if (s)
		snprintf(out, BC_ID_MAX, "%s", s);
	return 0;
}

static int load_rule(const bc_toml *t, const char *table, const char *name, struct resolve_rule *r,
                     char *err, size_t errlen)
{
	struct rule_raw raw = {0};
	int rc;

	if ((rc = READ(t, table, rule_fields, &raw, err, errlen)) != 0)
		return rc;
	if (raw.provider == NULL || raw.account == NULL)
		return bc_attest_config_fail(
		    err, errlen, table, "provider/account",
		    "required: the provider (gcp, aws, oidc.<id>) and the account or project "
		    "this rule admits");
	if ((r->name = strdup(name)) == NULL || (r->provider = strdup(raw.provider)) == NULL ||
	    (r->account = strdup(raw.account)) == NULL ||
	    (raw.zone && (r->zone = strdup(raw.zone)) == NULL) ||
	    (raw.region && (r->region = strdup(raw.region)) == NULL))
		return BC_ERR_NOMEM;
	if ((rc = copy_id(raw.tenant, table, "tenant", r->tenant, 1, err, errlen)) != 0 ||
	    (rc = copy_id(raw.pool, table, "pool", r->pool, 0, err, errlen)) != 0 ||
	    (rc = copy_id(raw.site, table, "site", r->site, 0, err, errlen)) != 0 ||
	    (rc = copy_id(raw.node, table, "node", r->node, 0, err, errlen)) != 0)
		return rc;
	if (raw.role && strcmp(raw.role, BC_ROLE_NODE) != 0 && strcmp(raw.role, BC_ROLE_SITE) != 0)
		return bc_attest_config_fail(err, errlen, table, "role", "expected node or site");
	if ((raw.role && (r->role = strdup(raw.role)) == NULL))
		return BC_ERR_NOMEM;
	if (raw.product_uuid) {
		char u[BC_UUID_LEN + 1];
		if (bc_uuid_canon(raw.product_uuid, u) != 0)
			return bc_attest_config_fail(err, errlen, table, "product_uuid",
			                             "expected a UUID");
		if ((r->product_uuid = strdup(u)) == NULL)
			return BC_ERR_NOMEM;
	}
	return 0;
}

static int add_rule(const bc_toml *t, const char *table, const char *name, struct cloud_cfg *c,
                    char *err, size_t errlen)
{
	struct resolve_rule *r;

	if (c->n_rules == CLOUD_LIST_MAX)
		return bc_attest_config_fail(err, errlen, table, name, "at most 256 resolve rules");
	if ((r = realloc(c->rules, (c->n_rules + 1) * sizeof(*r))) == NULL)
		return BC_ERR_NOMEM;
	c->rules = r;
	memset(&r[c->n_rules], 0, sizeof(*r));
	return load_rule(t, table, name, &r[c->n_rules++], err, errlen);
}

static int set_roles(const struct bc_toml_strings *roles, const char *table, struct cloud_cfg *c,
                     char *err, size_t errlen)
{
	c->roles[0] = "node";
	c->n_roles = 1;
	if (roles->v == NULL)
		return 0;
	c->n_roles = 0;
	for (size_t i = 0; i < roles->n; i++) {
		if (strcmp(roles->v[i], "node") && strcmp(roles->v[i], "site"))
			return bc_attest_config_fail(err, errlen, table, "roles",
			                             "expected node and/or site");
		c->roles[c->n_roles++] = strcmp(roles->v[i], "node") ? "site" : "node";
	}
	return 0;
}

static int load(const bc_toml *t, const char *table, struct cloud_cfg *c, char *err, size_t errlen)
{
	struct top_raw raw = {0};
	char sub[512];
	int rc;

	if ((rc = READ(t, table, top_fields, &raw, err, errlen)) != 0 ||
	    (rc = set_roles(&raw.roles, table, c, err, errlen)) != 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.gcp", table);
	if (bc_toml_has_table(t, sub) && (rc = load_gcp(t, sub, c, err, errlen)) != 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.aws", table);
	if (bc_toml_has_table(t, sub) && (rc = load_aws(t, sub, c, err, errlen)) != 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.oidc", table);
	if ((rc = each_table(t, sub, load_oidc_one, c, err, errlen)) != 0)
		return rc;
	snprintf(sub, sizeof(sub), "%s.resolve", table);
	if ((rc = each_table(t, sub, add_rule, c, err, errlen)) != 0)
		return rc;
	if (c->gcp == NULL && c->aws == NULL && c->n_oidc == 0)
		return bc_attest_config_fail(
		    err, errlen, table, "gcp/aws/oidc",
		    "configure at least one provider ([.gcp], [.aws], [.oidc.<id>])");
	if (c->n_rules == 0)
		return bc_attest_config_fail(
		    err, errlen, table, "resolve",
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
		return bc_attest_config_fail(err, errlen, table, "gcp/aws/oidc",
		                             "no configuration");
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
		free(r->role);
		free(r->product_uuid);
		free(r->zone);
		free(r->region);
	}
	free(c->rules);
	free(c);
}
