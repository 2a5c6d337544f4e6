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

static const char *const top_keys[] = {
    "listen",
    "public_url",
    "database",
    "secret_file",
    "pki_bundle",
    "threads",
    "max_body",
    "log_level",
    "log_format",
    "on_refusal",
    "plugins",
    "event_retention_days",
    "max_unauthenticated_body",
    "unauthenticated_body_budget",
    "request_timeout",
    "max_connections",
    "max_connections_per_address",
    "on_refusal_processes",
    "on_refusal_queue",
    "max_queue_wait_ms",
    "metrics_listen",
    "access_log",
};
static const char *const top_tables[] = {"tls", "attestors"};

static int in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}

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

static int get_str(const struct bc_server_config *c, const char *key, const char *def, int path,
                   char **out, char *err, size_t errlen)
{
	const char *v = NULL;
	int rc = bc_toml_get_string(c->toml, key, &v);

	*out = NULL;
	if (rc == BC_ERR_NOT_FOUND)
		v = def;
	if (rc == BC_ERR_INVALID) {
		snprintf(err, errlen, "%s: %s: expected a string", c->path, key);
		return BC_ERR_CONFIG;
	}
	if (v == NULL)
		return 0;
	*out = path && v[0] ? resolve(c->dir, v) : strdup(v);
	return *out ? 0 : BC_ERR_NOMEM;
}

static int get_num(const struct bc_server_config *c, const char *key, int64_t def, int64_t lo,
                   int64_t hi, int64_t *out, char *err, size_t errlen)
{
	int rc = bc_toml_get_int(c->toml, key, out);

	if (rc == BC_ERR_NOT_FOUND) {
		*out = def;
		return 0;
	}
	if (rc != 0 || *out < lo || *out > hi) {
		snprintf(err, errlen, "%s: %s: expected an integer from %lld to %lld", c->path, key,
		         (long long)lo, (long long)hi);
		return BC_ERR_CONFIG;
	}
	return 0;
}

static int check_keys(const struct bc_server_config *c, char *err, size_t errlen)
{
	const char *const *names;
	size_t n;

	if (bc_toml_keys(c->toml, "", &names, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (!in_list(names[i], top_keys, sizeof(top_keys) / sizeof(*top_keys))) {
				snprintf(err, errlen,
				         "%s: %s: unknown key (known: listen, public_url, "
				         "database, secret_file, pki_bundle, threads, max_body, "
				         "log_level, "
				         "log_format, on_refusal, plugins, event_retention_days, "
				         "max_unauthenticated_body, unauthenticated_body_budget, "
				         "request_timeout, max_connections, "
				         "max_connections_per_address, "
				         "on_refusal_processes, on_refusal_queue, "
				         "max_queue_wait_ms, metrics_listen, access_log, [tls], "
				         "[attestors.<id>])",
				         c->path, names[i]);
				return BC_ERR_CONFIG;
			}
	if (bc_toml_tables(c->toml, "", &names, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (!in_list(names[i], top_tables, 2)) {
				snprintf(err, errlen,
				         "%s: [%s]: unknown table (known: [tls], "
				         "[attestors.<id>])",
				         c->path, names[i]);
				return BC_ERR_CONFIG;
			}
	if (bc_toml_keys(c->toml, "tls", &names, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (strcmp(names[i], "cert") != 0 && strcmp(names[i], "key") != 0) {
				snprintf(err, errlen, "%s: tls.%s: unknown key (known: cert, key)",
				         c->path, names[i]);
				return BC_ERR_CONFIG;
			}
	return 0;
}

/* What one client may hold of the server (docs/server.md, "Limits"). */
static int load_limits(struct bc_server_config *c, char *err, size_t errlen)
{
	int64_t v[8];
	int rc;

	if ((rc = get_num(c, "max_unauthenticated_body", 65536, 1024, 16 << 20, &v[0], err,
	                  errlen)) != 0 ||
	    (rc = get_num(c, "unauthenticated_body_budget", 64 << 20, 0, (int64_t)1 << 40, &v[1],
	                  err, errlen)) != 0 ||
	    (rc = get_num(c, "request_timeout", 10, 1, 3600, &v[2], err, errlen)) != 0 ||
	    (rc = get_num(c, "max_connections", 4096, 16, 1 << 20, &v[3], err, errlen)) != 0 ||
	    (rc = get_num(c, "max_connections_per_address", 64, 1, 1 << 20, &v[4], err, errlen)) !=
	        0 ||
	    (rc = get_num(c, "on_refusal_processes", 4, 1, 256, &v[5], err, errlen)) != 0 ||
	    (rc = get_num(c, "on_refusal_queue", 256, 1, 65536, &v[6], err, errlen)) != 0 ||
	    (rc = get_num(c, "max_queue_wait_ms", 3000, 0, 60000, &v[7], err, errlen)) != 0)
		return rc;
	c->max_unauth_body = (size_t)v[0];
	c->unauth_body_budget = (size_t)v[1];
	c->request_timeout_s = (unsigned)v[2];
	c->max_connections = (unsigned)v[3];
	c->max_connections_per_address = (unsigned)v[4];
	c->on_refusal_processes = (unsigned)v[5];
	c->on_refusal_queue = (unsigned)v[6];
	c->max_queue_wait_ms = (unsigned)v[7];
	return 0;
}

static int load_fields(struct bc_server_config *c, char *err, size_t errlen)
{
	const char *lvl = NULL, *fmt = NULL;
	const char *const *plugins;
	int64_t v;
	int rc;

	if ((rc = get_str(c, "listen", "127.0.0.1:8080", 0, &c->listen, err, errlen)) ||
	    (rc = get_str(c, "public_url", NULL, 0, &c->public_url, err, errlen)) ||
	    (rc = get_str(c, "database", "bc.db", 1, &c->database, err, errlen)) ||
	    (rc = get_str(c, "secret_file", "secret", 1, &c->secret_file, err, errlen)) ||
	    (rc = get_str(c, "pki_bundle", "pki.bundle", 1, &c->pki_bundle, err, errlen)) ||
	    (rc = get_str(c, "tls.cert", NULL, 1, &c->tls_cert, err, errlen)) ||
	    (rc = get_str(c, "tls.key", NULL, 1, &c->tls_key, err, errlen)) ||
	    (rc = get_str(c, "on_refusal", NULL, 0, &c->on_refusal, err, errlen)) ||
	    (rc = get_str(c, "metrics_listen", NULL, 0, &c->metrics_listen, err, errlen)))
		return rc;
	if (c->metrics_listen && c->metrics_listen[0] == 0) {
		free(c->metrics_listen);
		c->metrics_listen = NULL;
	}
	if ((rc = bc_toml_get_bool(c->toml, "access_log", &c->access_log)) == BC_ERR_INVALID) {
		snprintf(err, errlen, "%s: access_log: expected true or false", c->path);
		return BC_ERR_CONFIG;
	}
	if ((rc = get_num(c, "threads", 8, 1, 256, &v, err, errlen)) != 0)
		return rc;
	c->threads = (unsigned)v;
	if ((rc = get_num(c, "max_body", 65536, 1024, 16 << 20, &v, err, errlen)) != 0)
		return rc;
	c->max_body = (size_t)v;
	if ((rc = load_limits(c, err, errlen)) != 0)
		return rc;
	/* 0 keeps every event; a century is as long as "forever" needs to be */
	if ((rc = get_num(c, "event_retention_days", 90, 0, 36500, &v, err, errlen)) != 0)
		return rc;
	c->event_retention_days = v;
	if (c->on_refusal && c->on_refusal[0] == 0) {
		free(c->on_refusal);
		c->on_refusal = NULL;
	}
	if ((c->tls_cert == NULL) != (c->tls_key == NULL)) {
		snprintf(err, errlen, "%s: [tls]: set both cert and key, or neither", c->path);
		return BC_ERR_CONFIG;
	}
	if (bc_toml_get_string(c->toml, "log_level", &lvl) == 0 &&
	    bc_log_parse_level(lvl, (enum bc_log_level *)&c->log_level) != 0) {
		snprintf(err, errlen, "%s: log_level: expected debug, info, warn or error",
		         c->path);
		return BC_ERR_CONFIG;
	}
	if (bc_toml_get_string(c->toml, "log_format", &fmt) == 0 &&
	    bc_log_parse_format(fmt, (enum bc_log_format *)&c->log_format) != 0) {
		snprintf(err, errlen, "%s: log_format: expected logfmt or json", c->path);
		return BC_ERR_CONFIG;
	}
	rc = bc_toml_get_strings(c->toml, "plugins", &plugins, &c->n_plugins);
	if (rc == BC_ERR_INVALID) {
		snprintf(err, errlen, "%s: plugins: expected an array of paths", c->path);
		return BC_ERR_CONFIG;
	}
	if (rc == 0 && c->n_plugins) {
		if ((c->plugins = calloc(c->n_plugins, sizeof(char *))) == NULL)
			return BC_ERR_NOMEM;
		for (size_t i = 0; i < c->n_plugins; i++)
			if ((c->plugins[i] = resolve(c->dir, plugins[i])) == NULL)
				return BC_ERR_NOMEM;
	} else {
		c->n_plugins = 0;
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
	else if ((rc = check_keys(out, err, errlen)) == 0)
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
	for (size_t i = 0; i < c->n_plugins; i++)
		free(c->plugins ? c->plugins[i] : NULL);
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
