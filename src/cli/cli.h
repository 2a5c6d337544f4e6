/* The `better-compute` command line: shared state of one invocation, the command
 * table's shape, and the helpers every command group uses.
 *
 * Ownership: struct cli owns every string it points to except the option values
 * and arguments, which point into argv. cli_free() wipes the API key. Commands
 * return 0 or a negative BC_ERR_*; a command that prints its own message calls cli_fail() or
 * cli_usage(), so main() prints a generic one only when nothing was said. */
#ifndef BC_CLI_H
#define BC_CLI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

#define CLI_NAME     "better-compute"
#define CLI_MAX_OPTS 24
#define CLI_MAX_ARGS 8

struct cli;

/* flags of a command */
#define CLI_F_API    0x1 /* speaks the admin API */
#define CLI_F_TENANT 0x2 /* tenant-scoped: --tenant applies */

struct cli_cmd {
	const char *group;   /* first word: "pools" */
	const char *name;    /* second word: "create"; NULL for a one-word command */
	const char *usage;   /* what follows the words: "NAME [--policy JSON]" */
	const char *summary; /* one line for the lists */
	const char *opts;    /* its options: "policy= yes" ('=': takes a value) */
	int min_args;
	int max_args;
	unsigned flags;
	int (*fn)(struct cli *c);
	const char *help; /* the options explained, or NULL */
	int arg_kind;     /* enum cli_kind: the first argument names one (resolved first) */
};

struct cli_kv {
	char *name;      /* malloc'd */
	const char *val; /* NULL for a flag */
};

struct cli {
	/* global options, as given */
	const char *opt_server;
	const char *opt_api_key_file;
	const char *opt_ca_file;
	const char *opt_tenant;
	const char *opt_timeout;
	char *opt_api_key; /* a copy: the argv string is wiped */
	int json;
	int json_errors; /* --json somewhere on the line: errors as JSON */

	/* resolved on the first API call */
	int resolved;
	char *server;   /* URL without a trailing '/' */
	char *api_key;  /* wiped in cli_free() */
	char *ca_file;  /* NULL: the system's CAs */
	char *tenant;   /* --tenant, or the key's own (GET /v1/whoami) */
	long timeout_s; /* --timeout: seconds a request may take in all */

	const struct cli_cmd *cmd;
	struct cli_kv opts[CLI_MAX_OPTS];
	size_t n_opts;
	const char *args[CLI_MAX_ARGS];
	size_t n_args;

	int help;        /* --help: print the usage and run nothing */
	int version;     /* --version */
	int usage_error; /* exit 2 rather than 1 */
	int reported;    /* a message was printed */
	int exit_direct; /* serve: exit with exit_status */
	int exit_status;
	char *resolved_args[CLI_MAX_ARGS]; /* ids of names given as arguments */
};

void cli_free(struct cli *c);

/* argument parsing (cli_args.c) */
/* Parses the global options that may appear anywhere; *consumed is 1 or 2 when
 * argv[i] (and its value) was one, 0 when it is not a global option. */
BC_WUR int cli_parse_global(struct cli *c, int argc, char **argv, int i, int *consumed);
/* Parses the command's options and positional arguments after its words. */
BC_WUR int cli_parse_command(struct cli *c, int argc, char **argv, int first);
const char *cli_opt(const struct cli *c, const char *name);
int cli_flag(const struct cli *c, const char *name);
/* A whole number in [min, max] from option name, or a usage error; *present is 0
 * (and *out 0) when the option was not given. */
BC_WUR int cli_opt_int(struct cli *c, const char *name, int64_t min, int64_t max, int64_t *out,
                       int *present);
/* --ttl DURATION (30m, 1h, 7d; at least a second), when given, as body's ttlSeconds. */
BC_WUR int cli_opt_ttl(struct cli *c, json_t *body);

/* messages: "better-compute: ..." on stderr, one line */
int cli_fail(struct cli *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same with a code of its own ("NOT_FOUND"): "better-compute: CODE: message". */
int cli_error(struct cli *c, int rc, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A usage error (exit 2): the message, then the command's usage. */
int cli_usage(struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The server.toml of a command that works on the store or the PKI without a server:
 * --config, else ./var/server.toml when it exists (what `better-compute init` makes
 * here; the API commands find their server from it the same way), in *out. Without
 * either, a usage error that says what the file is for (`what`: "whose store to
 * read", ...), and its code. */
BC_WUR int cli_config_path(struct cli *c, const char *what, const char **out);

/* the admin API (cli_conn.c, cli_api.c) */
/* Resolves the server URL, the API key and the CA file (once). */
BC_WUR int cli_connect(struct cli *c);
struct cli_resp {
	long status;
	char *body; /* NUL-terminated */
	size_t len;
	json_t *json;
};
void cli_resp_free(struct cli_resp *r);
/* method path (from "/v1/..."), body may be NULL. 0 for a 2xx answer holding a
 * JSON object; otherwise the error has been printed and a BC_ERR_* returned. */
BC_WUR int cli_api(struct cli *c, const char *method, const char *path, json_t *body,
                   struct cli_resp *out);
/* The tenant a command acts on: --tenant, or the API key's own. */
BC_WUR int cli_tenant(struct cli *c, const char **out);
/* "/v1/tenants/<t>/seg/seg..." from NULL-terminated segments, each an id
 * ([A-Za-z0-9._-], not "." or ".."; checked before any request: a usage error). */
BC_WUR int cli_tenant_path(struct cli *c, char **out, ...) __attribute__((sentinel));
/* "?k=v&..." of the pairs whose value is not NULL (escaped); "" when none. */
BC_WUR int cli_query(struct cli *c, char **out, const char *const *kv, size_t n);
/* The tenant's list what with the query of the pairs kv (at most 12) and the page
 * options --cursor and --limit when given and not in kv: "/v1/tenants/<t>/what?...". */
BC_WUR int cli_list_path(struct cli *c, char **out, const char *what, const char *const *kv,
                         size_t n);
/* Wipes the characters of a string member in place (a secret in an answer). */
void cli_wipe_member(json_t *obj, const char *key);
/* Prints the answer's JSON as it came (--json). */
void cli_print_raw(const struct cli_resp *r);
/* DELETE path (freed here): the answer with --json, else "<what> <id> deleted". */
BC_WUR int cli_delete(struct cli *c, char *path, const char *what, const char *id);

/* Names where ids are accepted (cli_resolve.c): the one resolver of every command.
 * v is returned as is when it has the kind's id prefix ("pool_"); otherwise the one
 * object of the tenant whose name (a node: hostname; a tenant: id or name) is v.
 * None: NOT_FOUND naming v; several: CONFLICT naming their ids (exit 1). *id is
 * malloc'd; v NULL gives *id NULL. */
enum cli_kind { CLI_K_NONE, CLI_K_TENANT, CLI_K_POOL, CLI_K_SITE, CLI_K_NODE, CLI_K_API_KEY };
BC_WUR int cli_resolve(struct cli *c, enum cli_kind kind, const char *v, char **id);
/* args[i] resolved in place (kept in c, freed by cli_free). */
BC_WUR int cli_resolve_arg(struct cli *c, enum cli_kind kind, size_t i);
/* "2026-11-29T10:00:00[.123]Z" as Unix milliseconds; -1 when it is not one. */
int64_t cli_parse_time(const char *s);

/* output for people (cli_print.c) */
enum cli_fmt {
	CLI_STR = 0,     /* string, number or boolean; "-" when null */
	CLI_TIME,        /* RFC 3339 shortened to "2026-11-29 10:00:00Z" */
	CLI_LIST,        /* array of strings joined by "," */
	CLI_JSON,        /* compact JSON */
	CLI_USES,        /* usesLeft/usesTotal */
	CLI_TARGET,      /* poolId or siteId */
	CLI_TOKEN_STATE, /* active, used, expired or revoked */
	CLI_EXPIRY       /* a time as "in 23h59m" or "expired 2h ago" */
};
struct cli_col {
	const char *header;
	const char *key; /* dotted path into the object: "certificate.notAfter" */
	enum cli_fmt fmt;
	int in_list; /* shown in tables, not only in the detail view */
	size_t max;  /* cut longer cells in tables (0: no limit) */
};
/* A table of the objects in array (header row, aligned columns). */
BC_WUR int cli_print_table(const json_t *array, const struct cli_col *cols, size_t n);
/* One object as "FIELD  value" lines. */
BC_WUR int cli_print_object(const json_t *obj, const struct cli_col *cols, size_t n);
/* Prints the array under key of the answer as a table, or the raw answer (--json). */
BC_WUR int cli_show_list(struct cli *c, const struct cli_resp *r, const char *key,
                         const struct cli_col *cols, size_t n);
/* Prints the answer (or obj inside it) as a detail view, or the raw answer (--json). */
BC_WUR int cli_show_object(struct cli *c, const struct cli_resp *r, const json_t *obj,
                           const struct cli_col *cols, size_t n);
/* Prints v as compact JSON and a newline, then releases v (NULL: out of memory). */
BC_WUR int cli_print_json(json_t *v);
/* Replaces control characters (C0, DEL, C1) with '?', so that text from the server
 * cannot drive the terminal. In place. */
void cli_sanitize(char *s);
/* The same, keeping the newlines. */
void cli_sanitize_lines(char *s);
/* "2026-11-29T10:00:00.000Z" -> "2026-11-29 10:00:00Z" into out[32]; other text is
 * copied as is (cut to fit). */
void cli_time_short(const char *in, char out[static 32]);
/* A string member or NULL (not a string, absent or null). */
const char *cli_jstr(const json_t *obj, const char *key);

/* files (cli_file.c) */
#define CLI_WRITE_NOCLOBBER 0x1 /* fail with BC_ERR_CONFLICT if path exists */
/* Writes through a temporary file in the same directory: write, fsync, rename (or
 * link for NOCLOBBER), fsync the directory. The file has exactly mode. */
BC_WUR int cli_write_file(const char *path, const void *data, size_t len, unsigned mode, int flags);
int cli_exists(const char *path);
/* The one rule of every file a command writes (--out, --bcd-dir's files): an existing
 * file is replaced only with --force. cli_out_check refuses (CONFLICT, exit 1,
 * naming the file and --force) before the command changes anything on the server;
 * path NULL passes. cli_out_flags: the cli_write_file flags the rule gives. */
BC_WUR int cli_out_check(struct cli *c, const char *path);
int cli_out_flags(const struct cli *c);
/* dir + "/" + name, malloc'd. */
char *cli_join_path(const char *dir, const char *name);

/* key files (cli_pki.c); both print their own errors and never overwrite a file */
struct bc_pki;
/* 32 random bytes into secret and, as 64 hex characters and a newline, into path (0600). */
BC_WUR int cli_new_secret(struct cli *c, const char *path, uint8_t secret[static 32]);
/* A new PKI bundle for trust_domain, sealed under secret into path (0600). */
BC_WUR int cli_new_bundle(struct cli *c, const char *path, const char *trust_domain,
                          const uint8_t secret[static 32], struct bc_pki **out);

/* the commands */
int cli_cmd_init(struct cli *c);
int cli_cmd_pki_init(struct cli *c);
int cli_cmd_pki_bundle(struct cli *c);
int cli_cmd_pki_check(struct cli *c);
int cli_cmd_pki_rotate(struct cli *c);
/* Installs the store's node CA set (seeded with the bundle's CA) in pki: what the
 * server serves, for pki bundle. 0, or the error already said. */
struct bc_server_config;
struct bc_pki;
int cli_pki_store_cas(struct cli *c, const struct bc_server_config *cfg, const struct bc_pki *pki);
int cli_cmd_pki_activate(struct cli *c);
int cli_cmd_pki_retire(struct cli *c);
int cli_cmd_pki_status(struct cli *c);
int cli_cmd_api_keys_create(struct cli *c);
int cli_cmd_api_keys_list(struct cli *c);
int cli_cmd_api_keys_revoke(struct cli *c);
int cli_cmd_tenants_list(struct cli *c);
int cli_cmd_tenants_create(struct cli *c);
int cli_cmd_tenants_delete(struct cli *c);
int cli_cmd_daemon_config(struct cli *c);
/* cli_install.c: daemon config --bcd-dir, and daemon install-script */
int cli_daemon_config_bcd(struct cli *c, const char *dir);
/* GET /v1/daemon-config as bcd's config.toml (data_dir from --data-dir, default
 * /var/lib/bcd), its ca.pem and the server URL (may be NULL), all malloc'd. */
BC_WUR int cli_bcd_files(struct cli *c, char **toml, char **ca, char **server);
int cli_cmd_daemon_install_script(struct cli *c);
int cli_cmd_pools_create(struct cli *c);
int cli_cmd_pools_get(struct cli *c);
int cli_cmd_pools_list(struct cli *c);
int cli_cmd_pools_update(struct cli *c);
int cli_cmd_pools_delete(struct cli *c);
int cli_cmd_sites_create(struct cli *c);
int cli_cmd_sites_list(struct cli *c);
int cli_cmd_sites_get(struct cli *c);
int cli_cmd_sites_release_lease(struct cli *c);
int cli_cmd_sites_delete(struct cli *c);
int cli_cmd_tokens_create(struct cli *c);
int cli_cmd_tokens_list(struct cli *c);
int cli_cmd_tokens_revoke(struct cli *c);
int cli_cmd_nodes_list(struct cli *c);
int cli_cmd_nodes_get(struct cli *c);
int cli_cmd_nodes_cordon(struct cli *c);
int cli_cmd_nodes_uncordon(struct cli *c);
int cli_cmd_nodes_delete(struct cli *c);
int cli_cmd_nodes_revoke_identity(struct cli *c);
int cli_cmd_nodes_retire(struct cli *c);
/* cli_workflows.c */
int cli_cmd_workflows_list(struct cli *c);
int cli_cmd_workflows_get(struct cli *c);
int cli_cmd_workflows_cancel(struct cli *c);
int cli_cmd_workflows_complete(struct cli *c);
int cli_cmd_machines_commission(struct cli *c);
int cli_cmd_machines_deploy(struct cli *c);
int cli_cmd_machines_enroll(struct cli *c);
int cli_cmd_nodes_inventory(struct cli *c);
int cli_cmd_events_list(struct cli *c);
int cli_cmd_join_requests_list(struct cli *c);
int cli_cmd_join_requests_approve(struct cli *c);
int cli_cmd_join_requests_deny(struct cli *c);
int cli_cmd_join_requests_delete(struct cli *c);
int cli_cmd_prune(struct cli *c);
int cli_cmd_audit_list(struct cli *c);
int cli_cmd_store_copy(struct cli *c);
int cli_cmd_store_migrate(struct cli *c);
int cli_cmd_store_backup(struct cli *c);

#endif
