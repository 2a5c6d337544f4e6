/* bcd's config file (/etc/bcd/config.toml) and the pins built from it. Every key is
 * known here, in the field tables below read by bc_toml_read_table: an unknown key or
 * table is an error naming it and the known ones, so a typo never leaves a setting at
 * its default without a word. */
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"
#include "bc/toml.h"

#define MAX_CA_BUNDLE (256u * 1024)
#define MAX_KEY_B64   1024

void bcd_say(struct bcd_msg *m, const char *fmt, ...)
{
	va_list ap;

	if (m == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(m->text, sizeof(m->text), fmt, ap);
	va_end(ap);
}

#define S(k, member, fl)                                                                           \
	{                                                                                          \
		.key = k, .type = BC_TOML_STRING, .flags = BC_TOML_COPY | (fl),                    \
		BC_TOML_AT(struct bcd_config, member)                                              \
	}
#define REQ (BC_TOML_REQUIRED | BC_TOML_NONEMPTY)
static const struct bc_toml_field top_fields[] = {
    S("server", server, REQ),
    S("join_signing_key_id", join_signing_key_id, REQ),
    S("join_signing_key", join_signing_key, REQ),
    S("join_encryption_key", join_encryption_key, REQ),
    S("trust_domain", trust_domain, REQ),
    S("ca_bundle", ca_bundle, REQ),
    S("data_dir", data_dir, REQ),
    {.key = "fakehw", .type = BC_TOML_TABLE},
    {.key = "cloud", .type = BC_TOML_TABLE},
    {.key = "site", .type = BC_TOML_TABLE},
    {.key = "helper", .type = BC_TOML_TABLE},
};
static const struct bc_toml_field fakehw_fields[] = {
    S("claims", fakehw_claims, 0),
    S("tpm", fakehw_tpm, 0),
};
static const struct bc_toml_field cloud_fields[] = {
    S("provider", cloud_provider, 0),
    S("audience", cloud_audience, 0),
    S("metadata_url", cloud_metadata_url, 0),
    S("identity_token_file", cloud_token_file, 0),
    S("identity_token_command", cloud_token_command, 0),
};
static const struct bc_toml_field site_fields[] = {
    S("id", site_id, REQ),
    S("listen", site_listen, REQ),
    S("kernel", site_kernel, REQ),
    S("initrd", site_initrd, REQ),
    S("cmdline", site_cmdline, 0),
    S("unknown_machines", site_unknown, 0),
    /* a string: site.c reads it and says what it allows */
    S("lease_ttl_seconds", site_lease_ttl, 0),
    {.key = "max_connections",
     .type = BC_TOML_INT,
     .min = 1,
     .max = 1024,
     BC_TOML_AT(struct bcd_config, site_max_conns)},
    {.key = "max_connections_per_client",
     .type = BC_TOML_INT,
     .min = 1,
     .max = 1024,
     BC_TOML_AT(struct bcd_config, site_max_per_client)},
    {.key = "header_timeout_seconds",
     .type = BC_TOML_SECONDS,
     .min = 1,
     .max = 60,
     .scale = 1000,
     BC_TOML_AT(struct bcd_config, site_head_ms)},
    {.key = "request_timeout_seconds",
     .type = BC_TOML_SECONDS,
     .min = 1,
     .max = 300,
     .scale = 1000,
     BC_TOML_AT(struct bcd_config, site_request_ms)},
};
static const struct bc_toml_field helper_fields[] = {
    S("socket", helper_socket, 0),
    S("user", helper_user, 0),
};
#undef REQ
#undef S

struct table {
	const char *name; /* "" for the top level */
	const struct bc_toml_field *fields;
	size_t n;
	size_t has; /* offsetof the has_ flag, or 0 for the top level */
};

#define T(name, fs, has)                                                                           \
	{                                                                                          \
		name, fs, sizeof(fs) / sizeof(fs[0]), has                                          \
	}
static const struct table tables[] = {
    T("", top_fields, 0),
    T("fakehw", fakehw_fields, offsetof(struct bcd_config, has_fakehw)),
    T("cloud", cloud_fields, offsetof(struct bcd_config, has_cloud)),
    T("site", site_fields, offsetof(struct bcd_config, has_site)),
    T("helper", helper_fields, offsetof(struct bcd_config, has_helper)),
};
#undef T

/* Members that name files, read relative to the config's directory. */
static const size_t path_members[] = {
    offsetof(struct bcd_config, ca_bundle),
    offsetof(struct bcd_config, fakehw_claims),
    offsetof(struct bcd_config, cloud_token_file),
};

void bcd_config_free(struct bcd_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->path);
	free(cfg->dir);
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		for (size_t k = 0; k < tables[i].n; k++)
			if (tables[i].fields[k].type == BC_TOML_STRING)
				free(*(char **)((char *)cfg + tables[i].fields[k].off));
	memset(cfg, 0, sizeof(*cfg));
}

static char *resolve(const char *dir, const char *p)
{
	char *out = NULL;

	if (p[0] == '/')
		return strdup(p);
	if (asprintf(&out, "%s/%s", dir, p) < 0)
		return NULL;
	return out;
}

/* The reader's finding in bcd's words, which docs/agent.md and the tests quote. */
static void say_problem(const struct bcd_config *cfg, const struct table *tb,
                        const struct bc_toml_read *r, const char *err, struct bcd_msg *m)
{
	char known[400], key[256];
	const char *dot = tb->name[0] ? "." : "";

	snprintf(key, sizeof(key), "%s%s%s", tb->name, dot, r->key);
	switch (r->problem) {
	case BC_TOML_UNKNOWN_KEY:
		bc_toml_known(tb->fields, tb->n, known, sizeof(known));
		bcd_say(m, "%s: unknown key %s (known: %s); remove it (see docs/agent.md)",
		        cfg->path, key, known);
		break;
	case BC_TOML_UNKNOWN_TABLE:
		bc_toml_known(tb->fields, tb->n, known, sizeof(known));
		bcd_say(m, "%s: unknown table [%s] (known: %s); remove it (see docs/agent.md)",
		        cfg->path, key, known);
		break;
	case BC_TOML_MISSING:
		bcd_say(m,
		        "%s: %s is missing; add it (better-compute daemon config --bcd-dir writes "
		        "it)",
		        cfg->path, key);
		break;
	case BC_TOML_EMPTY:
		bcd_say(
		    m, "%s: %s is empty; set it (better-compute daemon config --bcd-dir writes it)",
		    cfg->path, key);
		break;
	case BC_TOML_WRONG_TYPE:
	case BC_TOML_OUT_OF_RANGE:
		if (r->field != NULL && r->field->type != BC_TOML_STRING) {
			/* the reader's words name the type and the bounds */
			bcd_say(m, "%s: %s%s%s", cfg->path, tb->name, dot, err);
			break;
		}
		/* fall through */
	case BC_TOML_NOT_A_CHOICE:
	case BC_TOML_BOTH_NAMES:
	case BC_TOML_OK:
	default: bcd_say(m, "%s: %s must be a string", cfg->path, key); break;
	}
}

/* Every table through the shared reader; a table's keys only when it is there. */
static int read_tables(const bc_toml *t, struct bcd_config *cfg, struct bcd_msg *m)
{
	char err[512];
	int rc;

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		const struct table *tb = &tables[i];
		struct bc_toml_read r = {
		    .table = tb->name, .label = "", .fields = tb->fields, .n_fields = tb->n};
		if (tb->has) {
			if (!bc_toml_has_table(t, tb->name))
				continue;
			*(int *)((char *)cfg + tb->has) = 1;
		}
		if ((rc = bc_toml_read_table(t, &r, cfg, err, sizeof(err))) != 0) {
			if (rc == BC_ERR_CONFIG)
				say_problem(cfg, tb, &r, err, m);
			return rc;
		}
	}
	for (size_t i = 0; i < sizeof(path_members) / sizeof(path_members[0]); i++) {
		char **p = (char **)((char *)cfg + path_members[i]), *r;
		if (*p == NULL || (*p)[0] == '\0')
			continue;
		if ((r = resolve(cfg->dir, *p)) == NULL)
			return BC_ERR_NOMEM;
		free(*p);
		*p = r;
	}
	return 0;
}

/* [helper]: socket an absolute path that fits a sockaddr_un, user a plain user name. */
static int helper_defaults(struct bcd_config *cfg, struct bcd_msg *m)
{
	const char *u;

	if (cfg->helper_socket == NULL && (cfg->helper_socket = strdup(BCD_HELPER_SOCKET)) == NULL)
		return BC_ERR_NOMEM;
	if (cfg->helper_user == NULL && (cfg->helper_user = strdup(BCD_HELPER_USER)) == NULL)
		return BC_ERR_NOMEM;
	if (cfg->helper_socket[0] != '/' || strlen(cfg->helper_socket) >= BCD_HELPER_SOCKET_MAX) {
		bcd_say(m, "%s: helper.socket must be an absolute path of at most %d bytes",
		        cfg->path, BCD_HELPER_SOCKET_MAX - 1);
		return BC_ERR_CONFIG;
	}
	u = cfg->helper_user;
	if (u[0] == '\0' || u[0] == '-' || strlen(u) > 32 ||
	    strspn(u, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(u)) {
		bcd_say(m, "%s: helper.user must be a user name ([a-z0-9_-], at most 32)",
		        cfg->path);
		return BC_ERR_CONFIG;
	}
	return 0;
}

int bcd_config_load(const char *path, struct bcd_config *cfg, struct bcd_msg *m)
{
	bc_toml *t = NULL;
	char err[512], *copy = NULL;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	if ((cfg->path = strdup(path)) == NULL || (copy = strdup(path)) == NULL ||
	    (cfg->dir = strdup(dirname(copy))) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = bc_toml_load(path, &t, err, sizeof(err))) != 0) {
		bcd_say(m, "%s%s", err,
		        rc == BC_ERR_NOT_FOUND ? " (write it with better-compute "
		                                 "daemon config --bcd-dir, or pass --config)"
		                               : "");
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if ((rc = read_tables(t, cfg, m)) != 0 ||
	    (cfg->has_helper && (rc = helper_defaults(cfg, m)) != 0))
		goto out;
	if (cfg->fakehw_claims != NULL && cfg->fakehw_claims[0] == '\0') {
		free(cfg->fakehw_claims);
		cfg->fakehw_claims = NULL;
	}
	if (cfg->data_dir[0] != '/') {
		bcd_say(m, "%s: data_dir must be an absolute path", cfg->path);
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if (!bc_trust_domain_valid(cfg->trust_domain)) {
		bcd_say(m, "%s: trust_domain is not a trust domain name ([a-z0-9.-], 1 to 255)",
		        cfg->path);
		rc = BC_ERR_CONFIG;
	}
out:
	if (rc == BC_ERR_NOMEM)
		bcd_say(m, "out of memory");
	if (rc != 0)
		bcd_config_free(cfg);
	bc_toml_free(t);
	free(copy);
	return rc;
}

/* A P-256 public key from single-line base64 of its SPKI DER. */
static int read_key(const struct bcd_config *cfg, const char *field, const char *b64,
                    EVP_PKEY **out, struct bcd_msg *m)
{
	uint8_t *der = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (strlen(b64) > MAX_KEY_B64 || bc_b64_decode(b64, strlen(b64), &der, &len) != 0 ||
	    bc_key_from_spki(der, len, out) != 0) {
		bcd_say(m,
		        "%s: %s is not base64 of a P-256 public key (SPKI DER); write it again "
		        "with better-compute daemon config --bcd-dir",
		        cfg->path, field);
		rc = BC_ERR_CONFIG;
	} else {
		rc = 0;
	}
	free(der);
	return rc;
}

/* The rest is checked by the client's own pins reader, given the pins as its JSON;
 * its field names are turned back into the config's. */
static int pins_via_json(const struct bcd_config *cfg, EVP_PKEY *sign, EVP_PKEY *enc,
                         const char *ca, struct bc_client_pins *pins, struct bcd_msg *m)
{
	char *sign_pem = NULL, *enc_pem = NULL, *text = NULL, err[512];
	json_t *j = NULL;
	int rc;

	if ((rc = bc_pubkey_to_pem(sign, &sign_pem)) != 0 ||
	    (rc = bc_pubkey_to_pem(enc, &enc_pem)) != 0)
		goto out;
	j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "server", cfg->server, "joinSigningKeyId",
	              cfg->join_signing_key_id, "joinSigningKey", sign_pem, "joinEncryptionKey",
	              enc_pem, "caBundle", ca, "trustDomain", cfg->trust_domain);
	if (j == NULL || (text = bc_json_dump(j)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = bc_client_pins_from_json(text, strlen(text), pins, err, sizeof(err))) != 0) {
		if (strncmp(err, "pins: caBundle:", 15) == 0)
			bcd_say(m,
			        "%s:%s; write it again with better-compute daemon config --bcd-dir",
			        cfg->ca_bundle, err + 15);
		else if (strncmp(err, "pins: server:", 13) == 0)
			bcd_say(m, "%s: server:%s", cfg->path, err + 13);
		else
			bcd_say(m, "%s: %s", cfg->path, err);
		rc = BC_ERR_CONFIG;
	}
out:
	json_decref(j);
	free(text);
	free(sign_pem);
	free(enc_pem);
	return rc;
}

int bcd_pins_from_config(const struct bcd_config *cfg, struct bc_client_pins *pins,
                         struct bcd_msg *m)
{
	EVP_PKEY *sign = NULL, *enc = NULL;
	char kid[BC_KEY_ID_LEN + 1], *ca = NULL;
	size_t ca_len = 0;
	int rc;

	memset(pins, 0, sizeof(*pins));
	if ((rc = read_key(cfg, "join_signing_key", cfg->join_signing_key, &sign, m)) != 0 ||
	    (rc = read_key(cfg, "join_encryption_key", cfg->join_encryption_key, &enc, m)) != 0)
		goto out;
	if ((rc = bc_key_id(sign, kid)) != 0)
		goto out;
	if (strcmp(kid, cfg->join_signing_key_id) != 0) {
		bcd_say(m,
		        "%s: join_signing_key_id is not the key id of join_signing_key; write the "
		        "config again with better-compute daemon config --bcd-dir",
		        cfg->path);
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if ((rc = bcd_read_file(cfg->ca_bundle, MAX_CA_BUNDLE, &ca, &ca_len, m)) != 0) {
		char why[sizeof(m->text)];
		memcpy(why, m->text, sizeof(why));
		bcd_say(m,
		        "%s (ca_bundle in %s); write it with better-compute daemon config "
		        "--bcd-dir",
		        why, cfg->path);
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if ((rc = pins_via_json(cfg, sign, enc, ca, pins, m)) == 0 &&
	    (rc = bcd_pins_load_file(cfg, pins, m)) != 0)
		bc_client_pins_free(pins);
out:
	if (rc == BC_ERR_NOMEM)
		bcd_say(m, "out of memory");
	EVP_PKEY_free(sign);
	EVP_PKEY_free(enc);
	free(ca);
	return rc;
}
