#include "server/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bc/files.h"
#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/log.h"
#include <openssl/crypto.h>

/* A path relative to the config file's directory; URLs pass through. */
static char *resolve(const char *dir, const char *p)
{
	char *out;

	if (strncmp(p, "sqlite:", 7) == 0 && strncmp(p, "sqlite://", 9) != 0) {
		/* sqlite:<path>: the path is relative like any other */
		if (p[7] == '/')
			return strdup(p);
		if (asprintf(&out, "sqlite:%s/%s", dir, p + 7) < 0)
			return NULL;
		return out;
	}
	if (p[0] == '/' || strstr(p, "://") != NULL)
		return strdup(p);
	if (asprintf(&out, "%s/%s", dir, p) < 0)
		return NULL;
	return out;
}

#define C(member) BC_TOML_AT(struct bc_server_config, member)
#define COPY(k, member)                                                                            \
	{                                                                                          \
		.key = k, .type = BC_TOML_STRING, .flags = BC_TOML_COPY, C(member)                 \
	}
#define NUM(k, lo, hi, member)                                                                     \
	{                                                                                          \
		.key = k, .type = BC_TOML_INT, .min = lo, .max = hi, C(member)                     \
	}

/* In the order of enum bc_log_level and enum bc_log_format. */
static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const formats[] = {"logfmt", "json", NULL};

/* The top level of server.toml (docs/server.md, "server.toml"). */
static const struct bc_toml_field top_fields[] = {
    COPY("listen", listen),
    COPY("public_url", public_url),
    COPY("database", database),
    COPY("secret_file", secret_file),
    COPY("pki_bundle", pki_bundle),
    NUM("threads", 1, 256, threads),
    NUM("max_body", 1024, 16 << 20, max_body),
    {.key = "log_level", .type = BC_TOML_CHOICE, .choices = levels, C(log_level)},
    {.key = "log_format", .type = BC_TOML_CHOICE, .choices = formats, C(log_format)},
    COPY("on_refusal", on_refusal),
    {.key = "plugins",
     .type = BC_TOML_STRINGS,
     .expect = "an array of paths",
     BC_TOML_AT(struct bc_server_config, raw_plugins)},
    /* 0 keeps every event; a century is as long as "forever" needs to be */
    NUM("event_retention_days", 0, 36500, event_retention_days),
    NUM("audit_retention_days", 0, 36500, audit_retention_days),
    /* 0: the server never prunes by itself (run `better-compute prune`) */
    {.key = "prune_interval_seconds",
     .type = BC_TOML_SECONDS,
     .min = 0,
     .max = 7 * 86400,
     C(prune_interval_s)},
    NUM("max_unauthenticated_body", 1024, 16 << 20, max_unauth_body),
    NUM("unauthenticated_body_budget", 0, (int64_t)1 << 40, unauth_body_budget),
    {.key = "request_timeout_seconds",
     .type = BC_TOML_SECONDS,
     .min = 1,
     .max = 3600,
     .old = "request_timeout",
     C(request_timeout_s)},
    NUM("max_connections", 16, 1 << 20, max_connections),
    NUM("max_connections_per_address", 1, 1 << 20, max_connections_per_address),
    NUM("on_refusal_processes", 1, 256, on_refusal_processes),
    NUM("on_refusal_queue", 1, 65536, on_refusal_queue),
    {.key = "max_queue_wait_seconds",
     .type = BC_TOML_SECONDS,
     .min = 0,
     .max = 60,
     .scale = 1000,
     .old = "max_queue_wait_ms",
     C(max_queue_wait_ms)},
    COPY("metrics_listen", metrics_listen),
    {.key = "access_log", .type = BC_TOML_BOOL, C(access_log)},
    {.key = "tls", .type = BC_TOML_TABLE},
    {.key = "attestors", .type = BC_TOML_TABLE, .expect = "[attestors.<id>]"},
};

static const struct bc_toml_field tls_fields[] = {
    COPY("cert", tls_cert),
    COPY("key", tls_key),
};

/* [attestors] holds only the attestors' own tables, which each attestor reads. */
static const struct bc_toml_field attestors_fields[] = {
    {.key = "*", .type = BC_TOML_TABLE, .expect = "[attestors.<id>]"},
};
#undef NUM
#undef COPY
#undef C

static int read_table(struct bc_server_config *c, const char *table, const char *sub,
                      const struct bc_toml_field *fields, size_t n, char *err, size_t errlen)
{
	char label[600];
	struct bc_toml_read r = {.table = table, .label = label, .fields = fields, .n_fields = n};

	snprintf(label, sizeof(label), "%s: %s", c->path, sub);
	return bc_toml_read_table(c->toml, &r, c, err, errlen);
}

/* What the file leaves out, before it is read. */
static int set_defaults(struct bc_server_config *c)
{
	c->threads = 8;
	c->max_body = 65536;
	c->max_unauth_body = 65536;
	c->unauth_body_budget = 64 << 20;
	c->request_timeout_s = 10;
	c->max_connections = 4096;
	c->max_connections_per_address = 64;
	c->on_refusal_processes = 4;
	c->on_refusal_queue = 256;
	c->max_queue_wait_ms = 3000;
	c->event_retention_days = 90;
	c->audit_retention_days = 400;
	c->prune_interval_s = 3600;
	if ((c->listen = strdup("127.0.0.1:8080")) == NULL ||
	    (c->database = strdup("bc.db")) == NULL ||
	    (c->secret_file = strdup("secret")) == NULL ||
	    (c->pki_bundle = strdup("pki.bundle")) == NULL)
		return BC_ERR_NOMEM;
	return 0;
}

/* A path member made relative to the config's directory (when set and not ""). */
static int resolve_member(const struct bc_server_config *c, char **p)
{
	char *r;

	if (*p == NULL || (*p)[0] == '\0')
		return 0;
	if ((r = resolve(c->dir, *p)) == NULL)
		return BC_ERR_NOMEM;
	free(*p);
	*p = r;
	return 0;
}

static void empty_is_none(char **p)
{
	if (*p && (*p)[0] == '\0') {
		free(*p);
		*p = NULL;
	}
}

static int load_fields(struct bc_server_config *c, char *err, size_t errlen)
{
	int rc;

	if ((rc = set_defaults(c)) != 0 ||
	    (rc = read_table(c, "", "", top_fields, sizeof(top_fields) / sizeof(*top_fields), err,
	                     errlen)) != 0 ||
	    (rc = read_table(c, "tls", "tls.", tls_fields, sizeof(tls_fields) / sizeof(*tls_fields),
	                     err, errlen)) != 0 ||
	    (rc = read_table(c, "attestors", "attestors.", attestors_fields, 1, err, errlen)) != 0)
		return rc;
	if ((rc = resolve_member(c, &c->database)) != 0 ||
	    (rc = resolve_member(c, &c->secret_file)) != 0 ||
	    (rc = resolve_member(c, &c->pki_bundle)) != 0 ||
	    (rc = resolve_member(c, &c->tls_cert)) != 0 ||
	    (rc = resolve_member(c, &c->tls_key)) != 0)
		return rc;
	empty_is_none(&c->metrics_listen);
	empty_is_none(&c->on_refusal);
	if ((c->tls_cert == NULL) != (c->tls_key == NULL)) {
		snprintf(err, errlen, "%s: [tls]: set both cert and key, or neither", c->path);
		return BC_ERR_CONFIG;
	}
	if (c->raw_plugins.n) {
		if ((c->plugins = calloc(c->raw_plugins.n, sizeof(char *))) == NULL)
			return BC_ERR_NOMEM;
		for (; c->n_plugins < c->raw_plugins.n; c->n_plugins++)
			if ((c->plugins[c->n_plugins] =
			         resolve(c->dir, c->raw_plugins.v[c->n_plugins])) == NULL)
				return BC_ERR_NOMEM;
	}
	if (c->public_url == NULL &&
	    asprintf(&c->public_url, "%s://%s", c->tls_cert ? "https" : "http", c->listen) < 0)
		return BC_ERR_NOMEM;
	return 0;
}

int bc_server_config_load(const char *path, struct bc_server_config *out, char *err, size_t errlen)
{
	char *tmp;
	int rc;

	memset(out, 0, sizeof(*out));
	out->log_level = BC_LOG_INFO;
	out->log_format = BC_LOG_LOGFMT;
	if ((tmp = strdup(path)) == NULL)
		return BC_ERR_NOMEM;
	out->path = strdup(path);
	out->dir = strdup(dirname(tmp));
	free(tmp);
	if (out->path == NULL || out->dir == NULL) {
		bc_server_config_free(out);
		return BC_ERR_NOMEM;
	}
	/* whoever may change server.toml chooses the commands the server runs */
	if (bc_file_check_mode(path, 0, err, errlen) != 0)
		rc = BC_ERR_CONFIG;
	else if ((rc = bc_toml_load(path, &out->toml, err, errlen)) != 0)
		rc = BC_ERR_CONFIG;
	else
		rc = load_fields(out, err, errlen);
	/* on failure nothing is left for the caller to free */
	if (rc != 0)
		bc_server_config_free(out);
	return rc;
}

void bc_server_config_free(struct bc_server_config *c)
{
	free(c->path);
	free(c->dir);
	free(c->listen);
	free(c->public_url);
	free(c->database);
	free(c->secret_file);
	free(c->pki_bundle);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->on_refusal);
	free(c->metrics_listen);
	for (size_t i = 0; c->plugins && i < c->n_plugins; i++)
		free(c->plugins[i]);
	free(c->plugins);
	bc_toml_free(c->toml);
	memset(c, 0, sizeof(*c));
}

int bc_server_secret_load(const char *path, uint8_t out[static 32], char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0, n;
	int rc;

	if (bc_file_check_mode(path, BC_MODE_SECRET, err, errlen) != 0)
		return BC_ERR_CONFIG;
	/* 64 hex characters and a newline; a little room for white space */
	if ((rc = bc_file_read(path, 80, BC_FILE_TEXT | BC_FILE_FOLLOW, &text, &len)) != 0) {
		if (rc == BC_ERR_LIMIT || (rc == BC_ERR_INVALID && errno == EILSEQ))
			snprintf(err, errlen, "%s: expected 64 hex characters (the server secret)",
			         path);
		else
			snprintf(err, errlen, "%s: %s (better-compute init writes it)", path,
			         strerror(errno));
		return BC_ERR_CONFIG;
	}
	for (n = len; n > 0 && isspace((unsigned char)text[n - 1]);)
		text[--n] = 0;
	rc = (n == 64) ? bc_hex_decode_to(text, out, 32) : BC_ERR_INVALID;
	bc_freezero(text, len + 1);
	if (rc != 0) {
		snprintf(err, errlen, "%s: expected 64 hex characters (the server secret)", path);
		return BC_ERR_CONFIG;
	}
	return 0;
}
