/* init: a control plane in a directory, made directly on the store (no server
 * needed). server.toml is written last, so its presence means a finished init;
 * if any step fails, every file this run wrote is removed and init can run again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "bc/buf.h"
#include "bc/httpc.h"
#include "bc/pki.h"
#include "bc/store.h"
#include "cli/cli.h"
#include "rows/tenants.h"
#include "server/admin.h"
#include "bc/net.h"

#define F_CONFIG  "server.toml"
#define F_SECRET  "secret"
#define F_BUNDLE  "pki.bundle"
#define F_DB      "bc.db"
#define F_KEY     "admin.key"
#define F_CA      "tls-ca.pem"
#define F_CERT    "tls.crt"
#define F_TLSKEY  "tls.key"
#define MAX_FILES 16

struct init {
	const char *dir, *trust_domain, *listen;
	char *public_url;
	char host[256]; /* of listen, without brackets; "" for a wildcard */
	int tls;
	/* what this run made, removed again when a step fails */
	char *made[MAX_FILES];
	size_t n_made;
	int made_dir;
	bc_pki *pki;
	char *api_key;
};

static int made(struct init *in, const char *name, char **path)
{
	*path = NULL;
	if (in->n_made == MAX_FILES)
		return BC_ERR_INTERNAL;
	if ((*path = cli_join_path(in->dir, name)) == NULL)
		return BC_ERR_NOMEM;
	in->made[in->n_made++] = *path;
	return 0;
}

/* The last file registered was not written by us after all. */
static void unmade(struct init *in)
{
	free(in->made[--in->n_made]);
}

static void init_free(struct init *in, int failed)
{
	for (size_t i = in->n_made; i-- > 0;) {
		if (failed)
			unlink(in->made[i]);
		free(in->made[i]);
	}
	if (failed && in->made_dir)
		rmdir(in->dir);
	free(in->public_url);
	if (in->pki != NULL)
		bc_pki_free(in->pki);
	if (in->api_key != NULL)
		bc_freezero(in->api_key, strlen(in->api_key));
}

/* Written into server.toml as a basic string: no quote, backslash or control
 * character, so that a value cannot end the string and add keys of its own. */
static int toml_safe(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '"' || s[i] == '\\' || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* host:port or [v6]:port; the host without brackets into in->host. */
static int parse_listen(struct cli *c, struct init *in)
{
	const char *l = in->listen, *colon = strrchr(l, ':'), *h = l, *he;
	char *end;
	long port;

	if (colon == NULL)
		return cli_usage(c, "--listen \"%s\" has no port; give HOST:PORT", l);
	port = strtol(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end != '\0' || port < 1 || port > 65535)
		return cli_usage(c, "--listen \"%s\": the port must be 1 to 65535", l);
	he = colon;
	if (l[0] == '[') {
		if (colon[-1] != ']')
			return cli_usage(c, "--listen \"%s\": write an IPv6 address as [ADDR]:PORT",
			                 l);
		h++;
		he--;
	}
	if ((size_t)(he - h) >= sizeof(in->host) || !toml_safe(h, (size_t)(he - h)))
		return cli_usage(c, "--listen \"%s\": not a host name or address", l);
	memcpy(in->host, h, (size_t)(he - h));
	in->host[he - h] = '\0';
	if (strcmp(in->host, "0.0.0.0") == 0 || strcmp(in->host, "::") == 0)
		in->host[0] = '\0';
	return 0;
}

/* What agents are told to use; plain HTTP only where the server may speak it. */
static int choose_url(struct cli *c, struct init *in)
{
	const char *u = cli_opt(c, "public-url");
	int loopback = bc_net_hostport_is_loopback(in->listen);

	if (u == NULL && in->host[0] == '\0')
		return cli_usage(c,
		                 "--listen %s takes every address: give --public-url "
		                 "https://NAME:PORT, the address agents use",
		                 in->listen);
	if (u == NULL &&
	    asprintf(&in->public_url, "%s://%s", loopback ? "http" : "https", in->listen) < 0)
		return BC_ERR_NOMEM;
	if (u != NULL && (in->public_url = strdup(u)) == NULL)
		return BC_ERR_NOMEM;
	u = in->public_url;
	if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
		return cli_usage(c,
		                 "--public-url \"%s\" must start with https:// (or http:// on "
		                 "loopback)",
		                 u);
	if (!toml_safe(u, strlen(u)) || strchr(u, ' ') != NULL)
		return cli_usage(c, "--public-url \"%s\" is not a URL", u);
	if (!loopback && strncmp(u, "http://", 7) == 0)
		return cli_usage(c,
		                 "--public-url %s: plain HTTP is only allowed on a loopback "
		                 "--listen; use https://",
		                 u);
	in->tls = !loopback || strncmp(u, "https://", 8) == 0;
	return 0;
}

static int init_options(struct cli *c, struct init *in)
{
	int rc;

	in->dir = cli_opt(c, "dir") ? cli_opt(c, "dir") : "var";
	in->trust_domain = cli_opt(c, "trust-domain") ? cli_opt(c, "trust-domain") : "bc.internal";
	in->listen = cli_opt(c, "listen") ? cli_opt(c, "listen") : "127.0.0.1:8080";
	if (in->dir[0] == '\0')
		return cli_usage(c, "--dir is empty");
	if ((rc = parse_listen(c, in)) != 0)
		return rc;
	return choose_url(c, in);
}

/* Any user may replace what is written into a world-writable directory: the secret,
 * the bundle, server.toml (and so the commands the server runs). */
static int dir_private(struct cli *c, const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0)
		return cli_fail(c, BC_ERR_IO, "cannot read %s: %s; check --dir", dir,
		                strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_fail(c, BC_ERR_INVALID, "%s is not a directory; check --dir", dir);
	if (st.st_mode & S_IWOTH)
		return cli_fail(c, BC_ERR_DENIED,
		                "%s: mode %04o lets every user change what is in it; run `chmod "
		                "700 %s`, or choose another --dir",
		                dir, (unsigned)st.st_mode & 07777, dir);
	return 0;
}

/* Refuses a finished init, and files a failed or foreign one left behind. */
static int init_dir(struct cli *c, struct init *in)
{
	static const char *const names[] = {F_SECRET, F_BUNDLE, F_DB,    F_KEY,
	                                    F_CA,     F_CERT,   F_TLSKEY};
	char *p = NULL;
	int rc = 0;

	if ((p = cli_join_path(in->dir, F_CONFIG)) == NULL)
		return BC_ERR_NOMEM;
	if (cli_exists(p))
		rc = cli_fail(c, BC_ERR_CONFLICT, "already initialized: %s exists", p);
	for (size_t i = 0; rc == 0 && i < sizeof(names) / sizeof(names[0]); i++) {
		free(p);
		if ((p = cli_join_path(in->dir, names[i])) == NULL)
			return BC_ERR_NOMEM;
		if (cli_exists(p))
			rc =
			    cli_fail(c, BC_ERR_CONFLICT,
			             "%s exists but %s/" F_CONFIG " does not: remove what is in %s "
			             "or choose another --dir",
			             p, in->dir, in->dir);
	}
	free(p);
	if (rc != 0)
		return rc;
	if (mkdir(in->dir, 0700) == 0)
		in->made_dir = 1;
	else if (errno != EEXIST)
		return cli_fail(c, BC_ERR_IO, "cannot create the directory %s: %s; check --dir",
		                in->dir, strerror(errno));
	return dir_private(c, in->dir);
}

static int write_made(struct cli *c, struct init *in, const char *name, const char *text,
                      unsigned mode)
{
	char *path;
	int rc;

	if ((rc = made(in, name, &path)) != 0)
		return rc;
	if ((rc = cli_write_file(path, text, strlen(text), mode, CLI_WRITE_NOCLOBBER)) != 0) {
		int saved = errno;

		rc = cli_fail(c, rc, "cannot write %s: %s", path,
		              rc == BC_ERR_CONFLICT ? "it exists" : strerror(saved));
		/* not ours to remove: it appeared while we ran */
		unmade(in);
	}
	return rc;
}

/* The TLS certificate's names: the listen host and the public URL's host. */
static int tls_hosts(struct init *in, char **url_host, const char *hosts[2], size_t *n)
{
	struct bc_httpc_url u;
	const char *why;

	*url_host = NULL;
	*n = 0;
	/* the host as the client connects to it: an IPv6 address without its brackets, as
	 * a SAN holds it */
	if (bc_httpc_url_parse(in->public_url, &u, &why) == 0 &&
	    (*url_host = strdup(u.host)) == NULL)
		return BC_ERR_NOMEM;
	if (in->host[0] != '\0')
		hosts[(*n)++] = in->host;
	if (*url_host != NULL && (*n == 0 || strcmp(*url_host, in->host) != 0))
		hosts[(*n)++] = *url_host;
	return 0;
}

static int init_tls(struct cli *c, struct init *in)
{
	const char *hosts[2];
	char *url_host = NULL, *cert = NULL, *key = NULL;
	size_t n;
	int rc;

	if ((rc = tls_hosts(in, &url_host, hosts, &n)) != 0)
		return rc;
	if ((rc = bc_pki_server_tls_cert(in->pki, hosts, n, &cert, &key)) != 0) {
		rc = cli_fail(c, rc,
		              "cannot make the server's TLS certificate for %s: %s; check "
		              "--listen and --public-url",
		              in->listen, bc_err_str(rc));
		goto out;
	}
	if ((rc = write_made(c, in, F_CERT, cert, 0600)) != 0)
		goto out;
	rc = write_made(c, in, F_TLSKEY, key, 0600);
out:
	free(url_host);
	free(cert);
	if (key != NULL)
		bc_freezero(key, strlen(key));
	return rc;
}

static int init_keys(struct cli *c, struct init *in)
{
	uint8_t secret[32];
	char *path, *ca = NULL;
	int rc;

	if ((rc = made(in, F_SECRET, &path)) != 0)
		goto out;
	if ((rc = cli_new_secret(c, path, secret)) != 0) {
		unmade(in);
		goto out;
	}
	if ((rc = made(in, F_BUNDLE, &path)) != 0)
		goto out;
	if ((rc = cli_new_bundle(c, path, in->trust_domain, secret, &in->pki)) != 0) {
		unmade(in);
		goto out;
	}
	/* the CA an admin's CLI and an agent verify the server's TLS with */
	if ((rc = bc_x509_to_pem(in->pki->tls_ca, &ca)) != 0) {
		rc = cli_fail(c, rc, "cannot encode the TLS CA certificate: %s", bc_err_str(rc));
		goto out;
	}
	if ((rc = write_made(c, in, F_CA, ca, 0644)) != 0)
		goto out;
	if (in->tls)
		rc = init_tls(c, in);
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	free(ca);
	return rc;
}

struct init_tx {
	char *key;
};

/* The root tenant and its first API key, in one transaction. */
static int init_tx_fn(bc_tx *tx, void *arg)
{
	struct init_tx *a = arg;
	int rc;

	/* a replayed transaction makes a new key: drop the one of the attempt before */
	if (a->key != NULL) {
		bc_freezero(a->key, strlen(a->key));
		a->key = NULL;
	}
	if ((rc = bc_row_tenant_insert_root(tx, bc_tx_now_ms(tx))) != 0)
		return rc;
	return bc_admin_create_api_key(tx, "root", "admin", &a->key);
}

static int init_store(struct cli *c, struct init *in)
{
	static const char *const aux[] = {F_DB "-wal", F_DB "-shm", F_DB "-journal"};
	struct init_tx a = {NULL};
	bc_store *st = NULL;
	char *path, *url = NULL, *unused, err[256] = "";
	int rc;

	/* SQLite's side files go too if the database is removed */
	for (size_t i = 0; i < sizeof(aux) / sizeof(aux[0]); i++)
		if ((rc = made(in, aux[i], &unused)) != 0)
			return rc;
	if ((rc = made(in, F_DB, &path)) != 0)
		return rc;
	if (asprintf(&url, "sqlite:%s", path) < 0)
		return BC_ERR_NOMEM;
	if ((rc = bc_store_open(url, &st, err, sizeof(err))) != 0) {
		rc = cli_fail(c, rc, "cannot create the store %s: %s", path, err);
		goto out;
	}
	if ((rc = bc_store_run(st, BC_TX_WRITE, init_tx_fn, &a)) != 0) {
		rc = cli_fail(c, rc, "cannot create the root tenant and its API key in %s: %s (%s)",
		              path, bc_err_str(rc), bc_store_errmsg());
		goto out;
	}
	in->api_key = a.key;
	a.key = NULL;
out:
	if (a.key != NULL)
		bc_freezero(a.key, strlen(a.key));
	if (st != NULL)
		bc_store_close(st);
	free(url);
	return rc;
}

static int init_config(struct cli *c, struct init *in)
{
	char *text = NULL, *keyline = NULL;
	int rc;

	if (asprintf(&keyline, "%s\n", in->api_key) < 0)
		return BC_ERR_NOMEM;
	rc = write_made(c, in, F_KEY, keyline, 0600);
	bc_freezero(keyline, strlen(keyline));
	if (rc != 0)
		return rc;
	if (asprintf(&text,
	             "# written by `" CLI_NAME " init`; every key is described in "
	             "docs/server.md\n"
	             "listen      = \"%s\"\n"
	             "public_url  = \"%s\"\n"
	             "database    = \"" F_DB "\"\n"
	             "secret_file = \"" F_SECRET "\"\n"
	             "pki_bundle  = \"" F_BUNDLE "\"\n"
	             "%s",
	             in->listen, in->public_url,
	             in->tls ? "\n[tls]\ncert = \"" F_CERT "\"\nkey  = \"" F_TLSKEY "\"\n" : "") <
	    0)
		return BC_ERR_NOMEM;
	rc = write_made(c, in, F_CONFIG, text, 0644);
	free(text);
	return rc;
}

static int init_report(struct cli *c, struct init *in)
{
	char *cfg = cli_join_path(in->dir, F_CONFIG), *key = cli_join_path(in->dir, F_KEY);
	int rc = 0;

	if (cfg == NULL || key == NULL) {
		rc = BC_ERR_NOMEM;
	} else if (c->json) {
		rc = cli_print_json(json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "dir", in->dir, "config",
		                              cfg, "publicUrl", in->public_url, "trustDomain",
		                              in->trust_domain, "apiKey", in->api_key, "apiKeyFile",
		                              key));
	} else {
		printf("Initialized a control plane in %s (trust domain %s, agents use %s).\n"
		       "The admin API key of tenant root, shown only this once (it is also in %s, "
		       "mode 0600):\n%s\n"
		       "Start the server with: " CLI_NAME " serve --config %s\n",
		       in->dir, in->trust_domain, in->public_url, key, in->api_key, cfg);
	}
	free(cfg);
	free(key);
	return rc;
}

int cli_cmd_init(struct cli *c)
{
	struct init in;
	int rc;

	memset(&in, 0, sizeof(in));
	if ((rc = init_options(c, &in)) != 0 || (rc = init_dir(c, &in)) != 0 ||
	    (rc = init_keys(c, &in)) != 0 || (rc = init_store(c, &in)) != 0 ||
	    (rc = init_config(c, &in)) != 0)
		goto out;
	rc = init_report(c, &in);
out:
	init_free(&in, rc != 0);
	return rc;
}
