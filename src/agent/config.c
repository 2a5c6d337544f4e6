/* bcd's config file (/etc/bcd/config.toml) and the pins built from it. Every key is
 * known here: an unknown key or table is an error naming it, so a typo never leaves a
 * setting at its default without a word. */
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

struct field {
	const char *key;
	size_t off;
	int required;
	int is_path; /* resolved against the config's directory */
};

#define F(k, member, req, path)                                                                    \
	{                                                                                          \
		k, offsetof(struct bcd_config, member), req, path                                  \
	}
static const struct field top_fields[] = {
    F("server", server, 1, 0),
    F("join_signing_key_id", join_signing_key_id, 1, 0),
    F("join_signing_key", join_signing_key, 1, 0),
    F("join_encryption_key", join_encryption_key, 1, 0),
    F("trust_domain", trust_domain, 1, 0),
    F("ca_bundle", ca_bundle, 1, 1),
    F("data_dir", data_dir, 1, 0),
};
static const struct field fakehw_fields[] = {
    F("claims", fakehw_claims, 0, 1),
    F("tpm", fakehw_tpm, 0, 0),
};
static const struct field cloud_fields[] = {
    F("provider", cloud_provider, 0, 0),
    F("audience", cloud_audience, 0, 0),
    F("metadata_url", cloud_metadata_url, 0, 0),
    F("identity_token_file", cloud_token_file, 0, 1),
    F("identity_token_command", cloud_token_command, 0, 0),
};
static const struct field site_fields[] = {
    F("id", site_id, 1, 0),
    F("listen", site_listen, 1, 0),
    F("kernel", site_kernel, 1, 0),
    F("initrd", site_initrd, 1, 0),
    F("cmdline", site_cmdline, 0, 0),
    F("unknown_machines", site_unknown, 0, 0),
    F("lease_ttl_seconds", site_lease_ttl, 0, 0),
};
static const struct field helper_fields[] = {
    F("socket", helper_socket, 0, 0),
    F("user", helper_user, 0, 0),
};
#undef F

void bcd_config_free(struct bcd_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->path);
	free(cfg->dir);
	for (size_t i = 0; i < sizeof(top_fields) / sizeof(top_fields[0]); i++)
		free(*(char **)((char *)cfg + top_fields[i].off));
	for (size_t i = 0; i < sizeof(fakehw_fields) / sizeof(fakehw_fields[0]); i++)
		free(*(char **)((char *)cfg + fakehw_fields[i].off));
	for (size_t i = 0; i < sizeof(cloud_fields) / sizeof(cloud_fields[0]); i++)
		free(*(char **)((char *)cfg + cloud_fields[i].off));
	for (size_t i = 0; i < sizeof(helper_fields) / sizeof(helper_fields[0]); i++)
		free(*(char **)((char *)cfg + helper_fields[i].off));
	for (size_t i = 0; i < sizeof(site_fields) / sizeof(site_fields[0]); i++)
		free(*(char **)((char *)cfg + site_fields[i].off));
	memset(cfg, 0, sizeof(*cfg));
}

static const struct field *find_field(const struct field *fs, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(fs[i].key, key) == 0)
			return &fs[i];
	return NULL;
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

/* The keys of one table: each known, a string, and stored (paths resolved). */
static int read_table(const bc_toml *t, const char *table, const struct field *fs, size_t n,
                      struct bcd_config *cfg, struct bcd_msg *m)
{
	const char *const *keys;
	size_t nk = 0;
	char path[128];
	const char *v;

	if (bc_toml_keys(t, table, &keys, &nk) != 0)
		nk = 0;
	for (size_t i = 0; i < nk; i++) {
		const struct field *f = find_field(fs, n, keys[i]);
		if (f == NULL) {
			bcd_say(m, "%s: unknown key %s%s%s; remove it (see docs/agent.md)",
			        cfg->path, table, table[0] ? "." : "", keys[i]);
			return BC_ERR_CONFIG;
		}
		snprintf(path, sizeof(path), "%s%s%s", table, table[0] ? "." : "", keys[i]);
		if (bc_toml_get_string(t, path, &v) != 0) {
			bcd_say(m, "%s: %s must be a string", cfg->path, path);
			return BC_ERR_CONFIG;
		}
		if (v[0] == '\0' && f->required) {
			bcd_say(m,
			        "%s: %s is empty; set it (better-compute daemon config --bcd-dir "
			        "writes it)",
			        cfg->path, path);
			return BC_ERR_CONFIG;
		}
		char **dst = (char **)((char *)cfg + f->off);
		*dst = f->is_path && v[0] != '\0' ? resolve(cfg->dir, v) : strdup(v);
		if (*dst == NULL)
			return BC_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (fs[i].required && *(char **)((char *)cfg + fs[i].off) == NULL) {
			bcd_say(m,
			        "%s: %s%s%s is missing; add it (better-compute daemon config "
			        "--bcd-dir writes it)",
			        cfg->path, table, table[0] ? "." : "", fs[i].key);
			return BC_ERR_CONFIG;
		}
	}
	return 0;
}

static int check_tables(const bc_toml *t, struct bcd_config *cfg, struct bcd_msg *m)
{
	const char *const *names;
	size_t n = 0;

	if (bc_toml_tables(t, "", &names, &n) != 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(names[i], "fakehw") == 0) {
			cfg->has_fakehw = 1;
		} else if (strcmp(names[i], "helper") == 0) {
			cfg->has_helper = 1;
		} else if (strcmp(names[i], "cloud") == 0) {
			cfg->has_cloud = 1;
		} else if (strcmp(names[i], "site") == 0) {
			cfg->has_site = 1;
		} else {
			bcd_say(m, "%s: unknown table [%s]; remove it (see docs/agent.md)",
			        cfg->path, names[i]);
			return BC_ERR_CONFIG;
		}
	}
	if (cfg->has_fakehw && bc_toml_tables(t, "fakehw", &names, &n) == 0 && n > 0) {
		bcd_say(m, "%s: unknown table [fakehw.%s]", cfg->path, names[0]);
		return BC_ERR_CONFIG;
	}
	if (cfg->has_helper && bc_toml_tables(t, "helper", &names, &n) == 0 && n > 0) {
		bcd_say(m, "%s: unknown table [helper.%s]", cfg->path, names[0]);
		return BC_ERR_CONFIG;
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
	if ((rc = check_tables(t, cfg, m)) != 0)
		goto out;
	if ((rc = read_table(t, "", top_fields, sizeof(top_fields) / sizeof(top_fields[0]), cfg,
	                     m)) != 0)
		goto out;
	if (cfg->has_fakehw &&
	    (rc = read_table(t, "fakehw", fakehw_fields,
	                     sizeof(fakehw_fields) / sizeof(fakehw_fields[0]), cfg, m)) != 0)
		goto out;
	if (cfg->has_cloud &&
	    (rc = read_table(t, "cloud", cloud_fields,
	                     sizeof(cloud_fields) / sizeof(cloud_fields[0]), cfg, m)) != 0)
		goto out;
	if (cfg->has_site &&
	    (rc = read_table(t, "site", site_fields, sizeof(site_fields) / sizeof(site_fields[0]),
	                     cfg, m)) != 0)
		goto out;
	if (cfg->has_helper &&
	    ((rc = read_table(t, "helper", helper_fields,
	                      sizeof(helper_fields) / sizeof(helper_fields[0]), cfg, m)) != 0 ||
	     (rc = helper_defaults(cfg, m)) != 0))
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
	rc = pins_via_json(cfg, sign, enc, ca, pins, m);
out:
	if (rc == BC_ERR_NOMEM)
		bcd_say(m, "out of memory");
	EVP_PKEY_free(sign);
	EVP_PKEY_free(enc);
	free(ca);
	return rc;
}
