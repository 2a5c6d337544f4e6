/* Where the admin API is and how to authenticate to it: --server, the API key and
 * the CA file, from options, the environment, or the files `better-compute init`
 * wrote under ./var. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/files.h"
#include "bc/httpc.h"
#include "bc/net.h"
#include "bc/toml.h"
#include "cli/cli.h"
#include "bc/net.h"

#define DEFAULT_SERVER "http://127.0.0.1:8080"
/* --timeout: the default, and the longest a person would wait (seconds) */
#define DEFAULT_TIMEOUT_S 30L
#define MAX_TIMEOUT_S     3600L
#define VAR_CONFIG        "var/server.toml"
#define VAR_KEY           "var/admin.key"
#define VAR_CA            "var/tls-ca.pem"
#define MAX_KEY_FILE      4096

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The public_url of ./var/server.toml, the server `better-compute init` set up here. */
static int server_from_config(struct cli *c, char **out)
{
	bc_toml *t = NULL;
	const char *url;
	char err[256];
	int rc;

	*out = NULL;
	if ((rc = bc_toml_load(VAR_CONFIG, &t, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "cannot read %s: %s; fix it or pass --server URL",
		                VAR_CONFIG, err);
	if (bc_toml_get_string(t, "public_url", &url) != 0 || url[0] == '\0') {
		rc = cli_fail(c, BC_ERR_CONFIG, "%s has no public_url; pass --server URL",
		              VAR_CONFIG);
		goto out;
	}
	if ((*out = strdup(url)) == NULL)
		rc = BC_ERR_NOMEM;
out:
	bc_toml_free(t);
	return rc;
}

int cli_config_path(struct cli *c, const char *what, const char **out)
{
	if ((*out = cli_opt(c, "config")) != NULL)
		return 0;
	if (cli_exists(VAR_CONFIG)) {
		*out = VAR_CONFIG;
		return 0;
	}
	return cli_usage(c,
	                 "--config is missing and there is no ./%s here: name the server.toml %s",
	                 VAR_CONFIG, what);
}

/* An API key must never travel in clear text beyond this machine. */
static int check_server_url(struct cli *c, const char *from)
{
	struct bc_httpc_url u;
	const char *why;

	if (bc_httpc_url_parse(c->server, &u, &why) != 0) {
		/* a malformed value given on the line or in the environment: usage (2) */
		c->usage_error = strcmp(from, "--server") == 0 || strcmp(from, "BC_SERVER") == 0;
		return cli_fail(c, BC_ERR_CONFIG,
		                "the server URL \"%s\" (%s) is not an http:// or https:// URL; "
		                "fix %s",
		                c->server, from, from);
	}
	if (!u.tls && !bc_net_host_is_loopback(u.host))
		return cli_fail(c, BC_ERR_CONFIG,
		                "refusing to send the API key over plain HTTP to %s (%s); "
		                "use an https:// URL",
		                u.host, from);
	return 0;
}

static int resolve_server(struct cli *c)
{
	const char *from = "--server", *s = c->opt_server;
	size_t n;
	int rc;

	if (s == NULL && (s = env("BC_SERVER")) != NULL)
		from = "BC_SERVER";
	if (s == NULL && !cli_exists(VAR_CONFIG)) {
		s = DEFAULT_SERVER;
		from = "the default; set --server";
	}
	if (s != NULL) {
		if ((c->server = strdup(s)) == NULL)
			return BC_ERR_NOMEM;
	} else {
		from = "public_url in " VAR_CONFIG;
		if ((rc = server_from_config(c, &c->server)) != 0)
			return rc;
	}
	/* paths are appended as "/v1/...": drop the trailing slashes */
	n = strlen(c->server);
	while (n > 0 && c->server[n - 1] == '/')
		c->server[--n] = '\0';
	return check_server_url(c, from);
}

/* bck_<key id>_<secret>: base64url and '_' only, which also keeps a key read from a
 * file from smuggling a second header line into the request. */
static int check_key(struct cli *c, const char *from)
{
	char *k = c->api_key;
	size_t n = strlen(k);

	while (n > 0 && isspace((unsigned char)k[n - 1]))
		k[--n] = '\0';
	if (n < 5 || n > 512 || strncmp(k, "bck_", 4) != 0)
		goto bad;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)k[i]) && k[i] != '_' && k[i] != '-')
			goto bad;
	return 0;
bad:
	return cli_fail(c, BC_ERR_CONFIG,
	                "the API key from %s is not a better-compute API key (bck_...); check %s",
	                from, from);
}

static int key_from_file(struct cli *c, const char *path, const char *from)
{
	char err[512];
	size_t len;
	int rc;

	/* the key opens the admin API: the rule of the server's secret file holds */
	if (bc_file_check_mode(path, BC_MODE_SECRET, err, sizeof(err)) != 0)
		return cli_fail(c, BC_ERR_CONFIG, "the API key file %s", err);
	rc = bc_file_read(path, MAX_KEY_FILE, BC_FILE_TEXT | BC_FILE_FOLLOW, &c->api_key, &len);
	if (rc == BC_ERR_INVALID && errno == EILSEQ)
		return cli_fail(c, BC_ERR_CONFIG, "the API key file %s (%s) holds a NUL byte", path,
		                from);
	if (rc != 0)
		return cli_fail(c, rc, "cannot read the API key file %s (%s): %s; check %s", path,
		                from, rc == BC_ERR_NOT_FOUND ? "no such file" : strerror(errno),
		                from);
	return check_key(c, from);
}

static int resolve_key(struct cli *c)
{
	const char *v;

	if (c->opt_api_key != NULL) {
		if ((c->api_key = strdup(c->opt_api_key)) == NULL)
			return BC_ERR_NOMEM;
		return check_key(c, "--api-key");
	}
	if (c->opt_api_key_file != NULL)
		return key_from_file(c, c->opt_api_key_file, "--api-key-file");
	if ((v = env("BC_API_KEY")) != NULL) {
		if ((c->api_key = strdup(v)) == NULL)
			return BC_ERR_NOMEM;
		return check_key(c, "BC_API_KEY");
	}
	if ((v = env("BC_API_KEY_FILE")) != NULL)
		return key_from_file(c, v, "BC_API_KEY_FILE");
	if (cli_exists(VAR_KEY))
		return key_from_file(c, VAR_KEY, VAR_KEY);
	return cli_fail(c, BC_ERR_CONFIG,
	                "no API key: pass --api-key-file FILE or set BC_API_KEY_FILE (or "
	                "BC_API_KEY), or run where ./" VAR_KEY " (from `" CLI_NAME " init`) is");
}

static int resolve_ca(struct cli *c)
{
	if (c->opt_ca_file != NULL) {
		if (!cli_exists(c->opt_ca_file))
			return cli_fail(c, BC_ERR_CONFIG,
			                "--ca-file %s: no such file; check the path",
			                c->opt_ca_file);
		return (c->ca_file = strdup(c->opt_ca_file)) != NULL ? 0 : BC_ERR_NOMEM;
	}
	/* the TLS CA of a server made by init here; otherwise the system's CAs */
	if (strncmp(c->server, "https://", 8) == 0 && cli_exists(VAR_CA))
		return (c->ca_file = strdup(VAR_CA)) != NULL ? 0 : BC_ERR_NOMEM;
	return 0;
}

/* --timeout D: the whole of one request (connect, send, answer), so that a hung
 * server costs at most D. */
static int resolve_timeout(struct cli *c)
{
	int64_t ms;

	c->timeout_s = DEFAULT_TIMEOUT_S;
	if (c->opt_timeout == NULL)
		return 0;
	if (bc_duration_parse_ms(c->opt_timeout, &ms) != 0 || ms < 1000 ||
	    ms > MAX_TIMEOUT_S * 1000 || ms % 1000 != 0) {
		c->usage_error = 1;
		return cli_fail(c, BC_ERR_INVALID,
		                "--timeout: expected whole seconds from 1s to 1h, like 10s or 2m, "
		                "got \"%s\"",
		                c->opt_timeout);
	}
	c->timeout_s = (long)(ms / 1000);
	return 0;
}

int cli_connect(struct cli *c)
{
	int rc;

	if (c->resolved)
		return 0;
	if ((rc = resolve_timeout(c)) != 0 || (rc = resolve_server(c)) != 0 ||
	    (rc = resolve_key(c)) != 0 || (rc = resolve_ca(c)) != 0)
		return rc;
	c->resolved = 1;
	return 0;
}
