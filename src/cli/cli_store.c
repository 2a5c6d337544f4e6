/* Commands that work on the store directly, like init (no server needed):
 *   prune --config server.toml [--batch N] [--events-days N] [--audit-days N]
 *                                                             retention (bc_store_prune)
 *   store copy --from <sqlite path> --to <url> [--batch N]     moving up (bc_store_copy)
 *   store migrate --config server.toml [--check]    migrations (bc_store_migration_plan)
 *   store backup --config server.toml --out FILE [--force]     a copy (bc_store_backup)
 * Database URLs are never printed back: they may hold a password. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "bc/store.h"
#include "cli/cli.h"
#include "server/config.h"

#define DAY_MS (86400LL * 1000)

static int open_store(struct cli *c, const char *url, const char *what, bc_store **out)
{
	char err[512] = "";
	int rc;

	if ((rc = bc_store_open(url, out, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "cannot open %s: %s", what, err[0] ? err : bc_err_str(rc));
	return 0;
}

static int print_prune(struct cli *c, const struct bc_prune_counts *n)
{
	if (c->json)
		return cli_print_json(json_pack(
		    "{s:I,s:I,s:I,s:I,s:I,s:I}", "attestationUses", (json_int_t)n->attestation_uses,
		    "joinTokens", (json_int_t)n->join_tokens, "joinRequests",
		    (json_int_t)n->join_requests, "events", (json_int_t)n->events, "nodeCerts",
		    (json_int_t)n->node_certs, "audit", (json_int_t)n->audit));
	printf("removed %" PRId64 " attestation_uses, %" PRId64 " join_tokens, %" PRId64
	       " join_requests, %" PRId64 " events, %" PRId64 " node_certs, %" PRId64 " audit\n",
	       n->attestation_uses, n->join_tokens, n->join_requests, n->events, n->node_certs,
	       n->audit);
	return 0;
}

int cli_cmd_prune(struct cli *c)
{
	struct bc_server_config cfg;
	struct bc_prune_opts o = {0};
	struct bc_prune_counts n;
	const char *path;
	bc_store *st = NULL;
	char err[512] = "";
	int64_t days = 0, audit_days = 0;
	int batch_given = 0, given = 0, audit_given = 0, rc;

	memset(&cfg, 0, sizeof(cfg));
	if ((rc = cli_config_path(c, "whose database to prune", &path)) != 0)
		return rc;
	if ((rc = cli_opt_int(c, "batch", 1, 1000000, &o.batch, &batch_given)) != 0 ||
	    (rc = cli_opt_int(c, "events-days", 0, 36500, &days, &given)) != 0 ||
	    (rc = cli_opt_int(c, "audit-days", 0, 36500, &audit_days, &audit_given)) != 0)
		return rc;
	if ((rc = bc_server_config_load(path, &cfg, err, sizeof(err))) != 0) {
		rc = cli_fail(c, rc, "%s", err);
		goto out;
	}
	if (!given)
		days = cfg.event_retention_days;
	o.event_retention_ms = days * DAY_MS;
	if (!audit_given)
		audit_days = cfg.audit_retention_days;
	o.audit_retention_ms = audit_days * DAY_MS;
	if ((rc = open_store(c, cfg.database, "the database of server.toml", &st)) != 0)
		goto out;
	rc = bc_store_prune(st, &o, &n);
	if (rc != 0) {
		/* whole batches before the error stay removed: say how many */
		cli_fail(c, rc,
		         "prune stopped: %s (%s); what was removed so far stays removed, run "
		         "it again",
		         bc_err_str(rc), bc_store_errmsg());
		(void)print_prune(c, &n);
		goto out;
	}
	rc = print_prune(c, &n);
out:
	bc_store_close(st);
	bc_server_config_free(&cfg);
	return rc;
}

static int print_copy(struct cli *c, const struct bc_copy_report *r)
{
	int64_t total = 0;
	json_t *j = json_object();

	if (j == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; i < r->n_tables; i++) {
		total += r->tables[i].rows;
		json_object_set_new(j, r->tables[i].table, json_integer(r->tables[i].rows));
		if (!c->json)
			printf("%-18s %" PRId64 "\n", r->tables[i].table, r->tables[i].rows);
	}
	if (c->json)
		return cli_print_json(
		    json_pack("{s:o,s:I}", "tables", j, "rows", (json_int_t)total));
	json_decref(j);
	printf("copied %" PRId64 " rows; point database in server.toml at the target, then "
	       "start the server\n",
	       total);
	return 0;
}

int cli_cmd_store_copy(struct cli *c)
{
	const char *from = cli_opt(c, "from"), *to = cli_opt(c, "to");
	struct bc_copy_report r;
	bc_store *src = NULL, *dst = NULL;
	char err[512] = "";
	int64_t batch = 0;
	int given = 0, rc;

	if (from == NULL || to == NULL)
		return cli_usage(c, "--from and --to are required");
	if ((rc = cli_opt_int(c, "batch", 1, 10000, &batch, &given)) != 0)
		return rc;
	/* opening a missing SQLite path would create an empty store and copy nothing */
	if (strstr(from, "://") == NULL && !cli_exists(from))
		return cli_fail(c, BC_ERR_NOT_FOUND,
		                "--from %s: no such file; give the SQLite "
		                "database of the server (database in its server.toml)",
		                from);
	if (strcmp(from, to) == 0)
		return cli_usage(c, "--from and --to are the same database");
	if ((rc = open_store(c, from, "the source (--from)", &src)) != 0 ||
	    (rc = open_store(c, to, "the target (--to)", &dst)) != 0)
		goto out;
	if ((rc = bc_store_copy(src, dst, batch, &r, err, sizeof(err))) != 0) {
		rc = cli_fail(c, rc, "store copy: %s; nothing was written to the target", err);
		goto out;
	}
	rc = print_copy(c, &r);
out:
	bc_store_close(dst);
	bc_store_close(src);
	return rc;
}

/* The store of --config's server.toml, opened without migrating: neither command
 * below may change a database that a server of another version serves. */
static int open_config_store(struct cli *c, struct bc_server_config *cfg, bc_store **st)
{
	const char *path;
	char err[512] = "";
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	*st = NULL;
	if ((rc = cli_config_path(c, "whose database to use", &path)) != 0)
		return rc;
	if ((rc = bc_server_config_load(path, cfg, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s", err);
	/* opening a missing SQLite path would create an empty store */
	if (strstr(cfg->database, "://") == NULL && !cli_exists(cfg->database) &&
	    !(strncmp(cfg->database, "sqlite:", 7) == 0 && cli_exists(cfg->database + 7)))
		return cli_fail(c, BC_ERR_NOT_FOUND,
		                "the database of %s does not exist: run `better-compute init`, or "
		                "fix database in server.toml",
		                path);
	if ((rc = bc_store_open_flags(cfg->database, BC_STORE_NO_MIGRATE, st, err, sizeof(err))) !=
	    0)
		return cli_fail(c, rc, "cannot open the database of server.toml: %s", err);
	return 0;
}

struct migration_list {
	json_t *names; /* --json */
	int n;
	const char *verb;
};

static void list_migration(void *arg, int64_t version, const char *name)
{
	struct migration_list *l = arg;

	l->n++;
	if (l->names != NULL)
		json_array_append_new(
		    l->names, json_pack("{s:I,s:s}", "version", (json_int_t)version, "name", name));
	else
		printf("%s %s\n", l->verb, name);
}

static int print_migrations(struct cli *c, struct migration_list *l, int64_t from, int64_t latest)
{
	if (c->json)
		return cli_print_json(json_pack(
		    "{s:I,s:I,s:O,s:b}", "schemaVersion", (json_int_t)from, "latest",
		    (json_int_t)latest, "migrations", l->names, "check", cli_flag(c, "check")));
	if (l->n == 0)
		printf("schema version %" PRId64 ", the latest this better-compute knows: nothing "
		       "to run\n",
		       from);
	else if (cli_flag(c, "check"))
		printf("schema version %" PRId64 ": %d migration%s would run to reach %" PRId64
		       " (the server runs them at start, or run `better-compute store migrate`)\n",
		       from, l->n, l->n == 1 ? "" : "s", latest);
	else
		printf("schema version %" PRId64 " -> %" PRId64 ": %d migration%s applied\n", from,
		       latest, l->n, l->n == 1 ? "" : "s");
	return 0;
}

int cli_cmd_store_migrate(struct cli *c)
{
	struct bc_server_config cfg;
	struct migration_list l = {.verb = "would run"};
	bc_store *st = NULL;
	char err[512] = "";
	int64_t from = 0, latest = 0;
	int rc;

	if ((rc = open_config_store(c, &cfg, &st)) != 0)
		goto out;
	if (c->json && (l.names = json_array()) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if (cli_flag(c, "check")) {
		rc = bc_store_migration_plan(st, &from, &latest, list_migration, &l, err,
		                             sizeof(err));
	} else if ((rc = bc_store_migration_plan(st, &from, &latest, NULL, NULL, err,
	                                         sizeof(err))) == 0) {
		l.verb = "applied";
		rc = bc_store_migrate(st, list_migration, &l, err, sizeof(err));
	}
	if (rc != 0) {
		rc = cli_fail(c, rc, "store migrate: %s", err);
		goto out;
	}
	rc = print_migrations(c, &l, from, latest);
out:
	json_decref(l.names);
	bc_store_close(st);
	bc_server_config_free(&cfg);
	return rc;
}

int cli_cmd_store_backup(struct cli *c)
{
	struct bc_server_config cfg;
	const char *out_path = cli_opt(c, "out");
	bc_store *st = NULL;
	struct stat sb;
	char err[640] = "";
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	if (out_path == NULL)
		return cli_usage(c, "--out FILE is required");
	if ((rc = open_config_store(c, &cfg, &st)) != 0)
		goto out;
	if (bc_store_engine(st) == BC_STORE_POSTGRES) {
		/* BC_ERR_UNSUPPORTED, with what to use instead; a usage error (exit 2) */
		if (bc_store_backup(st, out_path, 0, err, sizeof(err)) != BC_ERR_UNSUPPORTED)
			snprintf(err, sizeof(err), "the store is on PostgreSQL: use pg_dump");
		rc = cli_usage(c, "%s", err);
		goto out;
	}
	if ((rc = bc_store_backup(st, out_path, cli_flag(c, "force"), err, sizeof(err))) != 0) {
		rc = cli_fail(c, rc, "store backup: %s", err);
		goto out;
	}
	if (stat(out_path, &sb) != 0) {
		rc = cli_fail(c, BC_ERR_IO, "store backup: %s: %s", out_path, strerror(errno));
		goto out;
	}
	if (c->json)
		rc = cli_print_json(
		    json_pack("{s:s,s:I}", "out", out_path, "bytes", (json_int_t)sb.st_size));
	else
		printf("backed up to %s (%lld bytes, mode 0600); restore: stop the server, put "
		       "the file at database of server.toml, start it\n",
		       out_path, (long long)sb.st_size);
out:
	bc_store_close(st);
	bc_server_config_free(&cfg);
	return rc;
}
