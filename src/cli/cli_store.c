/* Commands that work on the store directly, like init (no server needed):
 *   prune --config server.toml [--batch N] [--events-days N] [--audit-days N]
 *                                                             retention (bc_store_prune)
 *   store copy --from <sqlite path> --to <url> [--batch N]     moving up (bc_store_copy)
 * Database URLs are never printed back: they may hold a password. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
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
	const char *path = cli_opt(c, "config");
	bc_store *st = NULL;
	char err[512] = "";
	int64_t days = 0, audit_days = 0;
	int batch_given = 0, given = 0, audit_given = 0, rc;

	memset(&cfg, 0, sizeof(cfg));
	if (path == NULL)
		return cli_usage(c, "--config server.toml is required");
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
