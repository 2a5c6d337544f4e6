/* better-compute: the control plane's command line. main() finds the command in
 * the table below, parses its options and runs it; only main() exits.
 *
 * Exit status: 0 success, 1 failure, 2 usage error. */
#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/log.h"
#include "cli/cli.h"
#include "server/serve.h"

#define API CLI_F_API
#define TNT (CLI_F_API | CLI_F_TENANT)

static const struct cli_cmd commands[] = {
    {"init", NULL,
     "[--dir var] [--trust-domain bc.internal] [--listen 127.0.0.1:8080] [--public-url URL]",
     "bootstrap a control plane in a directory (no server needed)",
     "dir= trust-domain= listen= public-url=", 0, 0, 0, cli_cmd_init,
     "  --dir DIR            where to write (default var): server.toml, secret, pki.bundle,\n"
     "                       bc.db, admin.key, tls-ca.pem, and tls.crt/tls.key for TLS\n"
     "  --trust-domain NAME  the SPIFFE trust domain of node certificates (default bc.internal)\n"
     "  --listen HOST:PORT   the server's address (default 127.0.0.1:8080); TLS unless loopback\n"
     "  --public-url URL     what agents use (default http://LISTEN on loopback, else https://)\n"
     "It refuses a DIR that holds a server.toml. On failure it removes what it wrote.\n"},
    {"serve", NULL, "--config server.toml", "run the control plane", "", 0, 0, 0, NULL, NULL},
    {"prune", NULL, "--config server.toml [--batch 5000] [--events-days N]",
     "delete expired and spent rows and old events from the store (no server needed)",
     "config= batch= events-days=", 0, 0, 0, cli_cmd_prune,
     "  --config FILE        the server.toml whose database to prune\n"
     "  --batch N            rows per transaction (default 5000)\n"
     "  --events-days N      delete events older than N days (default: event_retention_days\n"
     "                       of server.toml, 90; 0 keeps every event)\n"
     "Deletes expired attestation uses, expired, spent or revoked tokens, decided or\n"
     "expired join requests and old events, at database time, and prints the counts.\n"},
    {"store", "copy", "--from <sqlite path> --to <postgres url> [--batch 500]",
     "copy a whole store into a new, empty database (no server needed)", "from= to= batch=", 0, 0,
     0, cli_cmd_store_copy,
     "  --from PATH          the SQLite database (stop its server first)\n"
     "  --to URL             the target, e.g. postgres://bc@db.example/bc: migrated, and\n"
     "                       refused unless every table is empty\n"
     "  --batch N            rows per INSERT (default 500)\n"
     "The target is written in one transaction: a copy that fails leaves it empty.\n"},
    {"pki", "init", "--config server.toml [--trust-domain bc.internal]",
     "write the PKI bundle server.toml names, if it does not exist yet", "config= trust-domain=", 0,
     0, 0, cli_cmd_pki_init,
     "  --config FILE        the server.toml whose pki_bundle (and secret_file) to write\n"
     "  --trust-domain NAME  the SPIFFE trust domain (default bc.internal)\n"
     "The secret is made when secret_file does not exist. Existing keys are never\n"
     "overwritten.\n"},
    {"api-keys", "create", "--name N [--ttl 720h] [--tenant T]", "create an API key (shown once)",
     "name= ttl=", 0, 0, TNT, cli_cmd_api_keys_create,
     "  --name N             what the key is for (a person, a pipeline)\n"
     "  --ttl DURATION       refuse the key after this long: 1h, 30d, 720h (default: never)\n"
     "The key is printed once; the server keeps only its hash.\n"},
    {"api-keys", "list", "[--tenant T]", "list API keys: created, expires, last used, revoked", "",
     0, 0, TNT, cli_cmd_api_keys_list, NULL},
    {"api-keys", "revoke", "ID [--tenant T]", "revoke an API key: it is refused from now on", "", 1,
     1, TNT, cli_cmd_api_keys_revoke, NULL},
    {"tenants", "list", "", "list tenants", "", 0, 0, API, cli_cmd_tenants_list, NULL},
    {"tenants", "create", "NAME", "create a tenant (root key only)", "", 1, 1, API,
     cli_cmd_tenants_create, NULL},
    {"pools", "create", "NAME [--join-attestors a,b] [--policy JSON]", "create a pool",
     "join-attestors= policy=", 1, 1, TNT, cli_cmd_pools_create,
     "  --join-attestors a,b the attestors that may admit machines into the pool\n"
     "                       (policy.joinAttestors), e.g. tpm,x509pop\n"
     "  --policy JSON        the whole policy object, e.g. '{\"joinAttestors\":[\"tpm\"]}'\n"},
    {"pools", "get", "ID", "show a pool", "", 1, 1, TNT, cli_cmd_pools_get, NULL},
    {"pools", "list", "", "list pools", "", 0, 0, TNT, cli_cmd_pools_list, NULL},
    {"pools", "update", "ID [--name N] [--policy JSON] [--join-attestors a,b]",
     "rename a pool or change its policy (--join-attestors keeps the rest of the policy)",
     "name= policy= join-attestors=", 1, 1, TNT, cli_cmd_pools_update,
     "  --name N             a new name\n"
     "  --policy JSON        a new policy object: it replaces the old one whole\n"
     "  --join-attestors a,b set only policy.joinAttestors and keep the rest of the policy\n"},
    {"sites", "create", "NAME", "create a site", "", 1, 1, TNT, cli_cmd_sites_create, NULL},
    {"sites", "list", "", "list sites", "", 0, 0, TNT, cli_cmd_sites_list, NULL},
    {"sites", "get", "ID", "show a site and who holds its boot lease (holder, epoch, expiry)", "",
     1, 1, TNT, cli_cmd_sites_get, NULL},
    {"sites", "release-lease", "ID",
     "end the site's boot lease: another site node takes it at the next epoch", "", 1, 1, TNT,
     cli_cmd_sites_release_lease, NULL},
    {"tokens", "create",
     "--role node|site|provisioned (--pool ID|NAME | --site ID|NAME) [--uses N] [--ttl 1h] "
     "[--expect-product-uuid U] "
     "[--expect-mac M] [--expect-serial S] [--allow-reclaim] [--description D] [--out FILE]",
     "create a join token (its secret is shown once, or written to --out FILE)",
     "role= pool= site= uses= ttl= expect-product-uuid= expect-mac= expect-serial= "
     "allow-reclaim description= out=",
     0, 0, TNT, cli_cmd_tokens_create,
     "  --role node|site     what the machine joins as; provisioned: a provider bootstrap's\n"
     "                       single-use token (--pool and --expect-product-uuid needed)\n"
     "  --pool ID            the pool of a node token      --site ID  the site of a site token\n"
     "  --uses N             how many joins it admits (1 to 10000; default 1)\n"
     "  --ttl DURATION       how long it is valid: 30m, 1h, 7d (default 1h)\n"
     "  --expect-product-uuid U, --expect-mac M, --expect-serial S\n"
     "                       admit only a machine that reports these\n"
     "  --allow-reclaim      let the token re-join a machine another node holds\n"
     "  --description D      a note shown in `tokens list`\n"
     "  --out FILE           write the secret to a new FILE (mode 0600) instead of printing it\n"},
    {"tokens", "list", "", "list join tokens", "", 0, 0, TNT, cli_cmd_tokens_list, NULL},
    {"tokens", "revoke", "ID", "revoke a join token", "", 1, 1, TNT, cli_cmd_tokens_revoke, NULL},
    {"join-requests", "list", "[--state pending|approved|denied|used]",
     "list join requests (machines waiting for an operator, such as tpm enrollment)", "state=", 0,
     0, TNT, cli_cmd_join_requests_list, "  --state S            only requests in this state\n"},
    {"join-requests", "approve", "ID", "approve a pending join request: the machine joins", "", 1,
     1, TNT, cli_cmd_join_requests_approve, NULL},
    {"join-requests", "deny", "ID", "deny a pending join request: the machine stops", "", 1, 1, TNT,
     cli_cmd_join_requests_deny, NULL},
    {"join-requests", "delete", "ID", "delete a join request: the machine's next round starts over",
     "", 1, 1, TNT, cli_cmd_join_requests_delete, NULL},
    {"nodes", "list", "", "list nodes", "", 0, 0, TNT, cli_cmd_nodes_list, NULL},
    {"nodes", "get", "ID", "show a node", "", 1, 1, TNT, cli_cmd_nodes_get, NULL},
    {"nodes", "cordon", "ID", "cordon a node", "", 1, 1, TNT, cli_cmd_nodes_cordon, NULL},
    {"nodes", "uncordon", "ID", "uncordon a node", "", 1, 1, TNT, cli_cmd_nodes_uncordon, NULL},
    {"nodes", "delete", "ID --yes",
     "delete a cordoned or retired node: revoke its certificates, free its bindings", "yes", 1, 1,
     TNT, cli_cmd_nodes_delete,
     "  --yes                do it; without it, say what it would do and exit 2\n"},
    {"nodes", "revoke-identity", "ID",
     "revoke every certificate of a node and raise its identity generation", "", 1, 1, TNT,
     cli_cmd_nodes_revoke_identity, NULL},
    {"nodes", "retire", "ID", "retire a node and revoke its certificates", "", 1, 1, TNT,
     cli_cmd_nodes_retire, NULL},
    {"nodes", "inventory", "ID", "show what each of a node's joins claimed, oldest first", "", 1, 1,
     TNT, cli_cmd_nodes_inventory, NULL},
    {"workflows", "list", "", "list commission and deploy workflows", "", 0, 0, TNT,
     cli_cmd_workflows_list, NULL},
    {"workflows", "get", "ID", "show a workflow", "", 1, 1, TNT, cli_cmd_workflows_get, NULL},
    {"workflows", "cancel", "ID", "cancel a running workflow (a deploy's token is then refused)",
     "", 1, 1, TNT, cli_cmd_workflows_cancel, NULL},
    {"workflows", "complete", "ID [--failed]", "end a running workflow as succeeded (or failed)",
     "failed", 1, 1, TNT, cli_cmd_workflows_complete,
     "  --failed             end it as failed rather than succeeded\n"},
    {"machines", "commission", "--site S --mac M [--product-uuid U] [--node N] [--ttl 1h]",
     "create a commission workflow and its boot entry for a MAC at a site",
     "site= mac= product-uuid= node= ttl=", 0, 0, TNT, cli_cmd_machines_commission,
     "  --site ID            the site whose boot server boots the machine\n"
     "  --mac M              its MAC address, any case, ':' or '-' between octets\n"
     "  --product-uuid U     the product UUID it must report, when known\n"
     "  --node N             the node it is, when it was one before\n"
     "  --ttl DURATION       how long the boot entry lives (default 1h, at most 7d)\n"},
    {"machines", "deploy",
     "--node N [--user-data FILE] [--out FILE] [--bcd-url URL] [--data-dir DIR] [--ttl 24h]",
     "create a deploy workflow: a single-use provisioned token in the node's user data",
     "node= user-data= out= bcd-url= data-dir= ttl=", 0, 0, TNT, cli_cmd_machines_deploy,
     "  --node N             the node whose OS is installed (it must have joined once)\n"
     "  --user-data FILE     a template instead of the default cloud-init document:\n"
     "                       {{token}}, {{server}}, {{config}} (bcd's config.toml) and\n"
     "                       {{ca}} (its ca.pem) are filled in\n"
     "  --out FILE           write the user data to a new FILE (0600) instead of printing it\n"
     "  --bcd-url URL        cloud-init downloads bcd from this https:// URL first\n"
     "  --data-dir DIR       bcd's data directory in the config (default /var/lib/bcd)\n"
     "  --ttl DURATION       how long the token is valid (default 24h, at most 7d)\n"
     "The user data holds the token's secret: it is shown once.\n"},
    {"events", "list", "[--type T] [--limit N]", "list events, newest first", "type= limit=", 0, 0,
     TNT, cli_cmd_events_list,
     "  --type T             only events of this type, e.g. security.join.refused\n"
     "  --limit N            at most N events (1 to 1000; default 100)\n"},
    {"daemon", "config", "[--out FILE | --bcd-dir DIR [--data-dir DIR]]",
     "print the agent's pins (server, keys, CA bundle) as JSON, or write them to FILE",
     "out= bcd-dir= data-dir=", 0, 0, API, cli_cmd_daemon_config,
     "  --out FILE           write the JSON to FILE instead of printing it\n"
     "  --bcd-dir DIR        write bcd's DIR/config.toml and DIR/ca.pem instead\n"
     "  --data-dir DIR       the data_dir in that config.toml (default /var/lib/bcd)\n"},
    {"daemon", "install-script",
     "(--bcd-url URL (--bcd-sha256 HEX | --bcd-file FILE) | --bcd-path PATH) [--attestor "
     "join-token|tpm|provisioned|cloud-iid [--provider gcp|aws|oidc] [--audience A]] "
     "[--data-dir DIR]",
     "print a sh script that installs or upgrades bcd on a machine and joins it",
     "bcd-url= bcd-path= bcd-sha256= bcd-file= attestor= provider= audience= data-dir=", 0, 0, API,
     cli_cmd_daemon_install_script,
     "  --bcd-url URL        where the machine downloads the bcd binary (https:// only)\n"
     "  --bcd-sha256 HEX     the binary's SHA-256: the script installs nothing else\n"
     "  --bcd-file FILE      or a local copy of the binary, whose SHA-256 is pinned\n"
     "  --bcd-path PATH      or a bcd binary already on the machine (pinned too with\n"
     "                       --bcd-sha256 or --bcd-file)\n"
     "  --attestor A         join-token (default: the token on stdin or --token-file) or\n"
     "                       tpm (no token; the script fails early without /dev/tpmrm0)\n"
     "                       or provisioned (the token from machines deploy in\n"
     "                       --token-file; the machine's product UUID binds it)\n"
     "                       or cloud-iid (no token: the cloud's instance identity)\n"
     "  --provider P         cloud-iid: gcp, aws or oidc (oidc: set [cloud]\n"
     "                       identity_token_command in the config before the join)\n"
     "  --audience A         cloud-iid gcp and oidc: [attestors.cloud-iid.P] audience\n"
     "  --data-dir DIR       bcd's data directory (default /var/lib/bcd)\n"
     "Run the script as root: sh install-bcd.sh < token. Again to upgrade, without a token.\n"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char global_help[] =
    "Global options (before or after the command):\n"
    "  --server URL         the control plane (env BC_SERVER; default: public_url of\n"
    "                       ./var/server.toml when it exists, else http://127.0.0.1:8080)\n"
    "  --api-key KEY        the API key (env BC_API_KEY)\n"
    "  --api-key-file FILE  a file holding the API key (env BC_API_KEY_FILE;\n"
    "                       default: ./var/admin.key when it exists)\n"
    "  --ca-file PEM        CA certificates for an https server (default: ./var/tls-ca.pem)\n"
    "  --tenant T           the tenant of a tenant-scoped command (default: the key's own)\n"
    "  --json               print the API's JSON as is, for scripts\n"
    "  --help               help for any command\n";

static int group_exists(const char *group)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].group, group) == 0)
			return 1;
	return 0;
}

static const struct cli_cmd *find_command(const char *group, const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		const struct cli_cmd *c = &commands[i];
		if (strcmp(c->group, group) != 0)
			continue;
		if (c->name == NULL || (name != NULL && strcmp(c->name, name) == 0))
			return c;
	}
	return NULL;
}

static void print_commands(FILE *f, const char *group)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		const struct cli_cmd *c = &commands[i];
		char words[64];

		if (group != NULL && strcmp(c->group, group) != 0)
			continue;
		snprintf(words, sizeof(words), "%s%s%s", c->group, c->name ? " " : "",
		         c->name ? c->name : "");
		fprintf(f, "  %-24s %s\n", words, c->summary);
	}
}

static void print_help(FILE *f, const char *group)
{
	if (group != NULL) {
		fprintf(f, "usage: " CLI_NAME " %s COMMAND [options]\n\nCommands:\n", group);
		print_commands(f, group);
		fprintf(f, "\nRun `" CLI_NAME " %s COMMAND --help` for a command's options.\n",
		        group);
		return;
	}
	fprintf(f, "usage: " CLI_NAME " [global options] COMMAND [options]\n\nCommands:\n");
	print_commands(f, NULL);
	fprintf(f, "\n%s\nRun `" CLI_NAME " COMMAND --help` for a command's options.\n",
	        global_help);
}

static void print_usage(const struct cli_cmd *cmd)
{
	FILE *f = stdout;

	fprintf(f, "usage: " CLI_NAME " %s%s%s %s\n\n%c%s.\n", cmd->group, cmd->name ? " " : "",
	        cmd->name ? cmd->name : "", cmd->usage, toupper((unsigned char)cmd->summary[0]),
	        cmd->summary + 1);
	if (cmd->help != NULL)
		fprintf(f, "\nOptions:\n%s", cmd->help);
	if (cmd->flags & CLI_F_API)
		fprintf(f, "\nIt speaks the admin API of the server given by --server.\n");
	fprintf(f, "\n%s", global_help);
}

/* `serve` has options of its own: everything from the word on is the server's. */
static int run_serve(struct cli *c, int argc, char **argv, int i)
{
	static char *serve_help[] = {"serve", "--help", NULL};

	if (c->opt_server || c->opt_api_key || c->opt_api_key_file || c->opt_ca_file ||
	    c->opt_tenant || c->json) {
		c->usage_error = 1;
		return cli_fail(
		    c, BC_ERR_INVALID,
		    "serve: the client options (--server, --api-key, --json, ...) do not "
		    "apply to serve; see `" CLI_NAME " serve --help`");
	}
	c->exit_direct = 1;
	if (c->help)
		c->exit_status = bc_cmd_serve(2, serve_help);
	else
		c->exit_status = bc_cmd_serve(argc - i, argv + i);
	return 0;
}

/* The counts of positional arguments, and --tenant only where it means something. */
static int check_command(struct cli *c)
{
	const struct cli_cmd *cmd = c->cmd;

	if ((int)c->n_args < cmd->min_args)
		return cli_usage(c, "missing argument: %s", cmd->usage);
	if ((int)c->n_args > cmd->max_args)
		return cli_usage(c, "unexpected argument `%s`", c->args[cmd->max_args]);
	if (c->opt_tenant != NULL && !(cmd->flags & CLI_F_TENANT))
		return cli_usage(c, "--tenant does not apply to this command");
	if (c->opt_tenant != NULL && c->opt_tenant[0] == '\0')
		return cli_usage(c, "--tenant is empty; give a tenant id");
	return 0;
}

/* Global options before the command's words (and between them). */
static int skip_globals(struct cli *c, int argc, char **argv, int *i)
{
	int consumed, rc;

	while (*i < argc && argv[*i][0] == '-' && argv[*i][1] != '\0') {
		if ((rc = cli_parse_global(c, argc, argv, *i, &consumed)) != 0)
			return rc;
		if (consumed == 0)
			return cli_usage(c, "unknown option %s before the command", argv[*i]);
		*i += consumed;
	}
	return 0;
}

/* "create, get, list or update": the commands of a group, for a message. */
static void group_verbs(const char *group, char *out, size_t len)
{
	size_t n = 0, k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < N_COMMANDS; i++)
		n += strcmp(commands[i].group, group) == 0;
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (strcmp(commands[i].group, group) != 0)
			continue;
		k++;
		snprintf(out + strlen(out), len - strlen(out), "%s%s",
		         k == 1 ? "" : (k == n ? " or " : ", "), commands[i].name);
	}
}

/* The second word of a group with several commands. */
static int find_verb(struct cli *c, int argc, char **argv, const char *group, int *i)
{
	const char *name = NULL;
	char verbs[160];
	int rc;

	if ((rc = skip_globals(c, argc, argv, i)) != 0)
		return rc;
	if (*i < argc)
		name = argv[(*i)++];
	if (name != NULL && (c->cmd = find_command(group, name)) != NULL)
		return 0;
	if (c->help && name == NULL) {
		print_help(stdout, group);
		return 0;
	}
	group_verbs(group, verbs, sizeof(verbs));
	c->usage_error = 1;
	if (name == NULL)
		return cli_fail(c, BC_ERR_INVALID,
		                "%s: which command? %s; see `" CLI_NAME " %s --help`", group, verbs,
		                group);
	return cli_fail(c, BC_ERR_INVALID,
	                "%s: unknown command `%s`; choose %s; see `" CLI_NAME " %s --help`", group,
	                name, verbs, group);
}

static int dispatch(struct cli *c, int argc, char **argv)
{
	const char *group = NULL;
	int i = 1, rc;

	if ((rc = skip_globals(c, argc, argv, &i)) != 0)
		return rc;
	if (i < argc && strcmp(argv[i], "help") == 0) {
		c->help = 1;
		i++;
	}
	if (i < argc)
		group = argv[i++];
	if (group == NULL) {
		print_help(c->help ? stdout : stderr, NULL);
		if (c->help)
			return 0;
		c->usage_error = c->reported = 1;
		return BC_ERR_INVALID;
	}
	if (!group_exists(group))
		return cli_usage(c, "unknown command `%s`", group);
	if (strcmp(group, "serve") == 0)
		return run_serve(c, argc, argv, i - 1);
	/* the libraries log for a server; a command's user wants only its own messages */
	bc_log_set_level(BC_LOG_WARN);
	if ((c->cmd = find_command(group, NULL)) == NULL) {
		if ((rc = find_verb(c, argc, argv, group, &i)) != 0 || c->cmd == NULL)
			return rc;
	}
	if ((rc = cli_parse_command(c, argc, argv, i)) != 0)
		return rc;
	if (c->help) {
		print_usage(c->cmd);
		return 0;
	}
	if ((rc = check_command(c)) != 0)
		return rc;
	return c->cmd->fn(c);
}

int main(int argc, char **argv)
{
	struct cli c;
	int rc, status;

	memset(&c, 0, sizeof(c));
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, CLI_NAME ": cannot initialize libcurl; check the installation\n");
		return 1;
	}
	rc = dispatch(&c, argc, argv);
	if (rc != 0 && !c.reported)
		fprintf(stderr, CLI_NAME ": %s%s%s: %s\n", c.cmd ? c.cmd->group : "",
		        c.cmd && c.cmd->name ? " " : "", c.cmd && c.cmd->name ? c.cmd->name : "",
		        bc_err_str(rc));
	if (rc != 0)
		status = c.usage_error ? 2 : 1;
	else
		status = c.exit_direct ? c.exit_status : 0;
	cli_free(&c);
	curl_global_cleanup();
	return status;
}
