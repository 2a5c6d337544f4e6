/* better-compute: the control plane's command line. main() finds the command in
 * the table below, parses its options and runs it; only main() exits.
 *
 * Exit status: 0 success, 1 failure, 2 usage error. */
#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "server/serve.h"

#define API CLI_F_API
#define TNT (CLI_F_API | CLI_F_TENANT)

static const struct cli_cmd commands[] = {
	{"init", NULL,
	 "[--dir var] [--trust-domain bc.internal] [--listen 127.0.0.1:8080] [--public-url URL]",
	 "bootstrap a control plane in a directory (no server needed)",
	 "dir= trust-domain= listen= public-url=", 0, 0, 0, cli_cmd_init},
	{"serve", NULL, "--config server.toml", "run the control plane", "", 0, 0, 0, NULL},
	{"pki", "init", "--config server.toml [--trust-domain bc.internal]",
	 "write the PKI bundle server.toml names, if it does not exist yet",
	 "config= trust-domain=", 0, 0, 0, cli_cmd_pki_init},
	{"api-keys", "create", "--name N [--tenant T]", "create an API key (shown once)",
	 "name=", 0, 0, TNT, cli_cmd_api_keys_create},
	{"tenants", "list", "", "list tenants", "", 0, 0, API, cli_cmd_tenants_list},
	{"tenants", "create", "NAME", "create a tenant (root key only)", "", 1, 1, API,
	 cli_cmd_tenants_create},
	{"pools", "create", "NAME [--join-attestors a,b] [--policy JSON]", "create a pool",
	 "join-attestors= policy=", 1, 1, TNT, cli_cmd_pools_create},
	{"pools", "get", "ID", "show a pool", "", 1, 1, TNT, cli_cmd_pools_get},
	{"pools", "list", "", "list pools", "", 0, 0, TNT, cli_cmd_pools_list},
	{"pools", "update", "ID [--name N] [--policy JSON] [--join-attestors a,b]",
	 "rename a pool or change its policy (--join-attestors keeps the rest of the policy)",
	 "name= policy= join-attestors=", 1, 1, TNT, cli_cmd_pools_update},
	{"sites", "create", "NAME", "create a site", "", 1, 1, TNT, cli_cmd_sites_create},
	{"sites", "list", "", "list sites", "", 0, 0, TNT, cli_cmd_sites_list},
	{"tokens", "create",
	 "--role node|site (--pool ID | --site ID) [--uses N] [--ttl 1h] [--expect-product-uuid U] "
	 "[--expect-mac M] [--expect-serial S] [--allow-reclaim] [--description D] [--out FILE]",
	 "create a join token (its secret is shown once, or written to --out FILE)",
	 "role= pool= site= uses= ttl= expect-product-uuid= expect-mac= expect-serial= "
	 "allow-reclaim description= out=",
	 0, 0, TNT, cli_cmd_tokens_create},
	{"tokens", "list", "", "list join tokens", "", 0, 0, TNT, cli_cmd_tokens_list},
	{"tokens", "revoke", "ID", "revoke a join token", "", 1, 1, TNT, cli_cmd_tokens_revoke},
	{"nodes", "list", "", "list nodes", "", 0, 0, TNT, cli_cmd_nodes_list},
	{"nodes", "get", "ID", "show a node", "", 1, 1, TNT, cli_cmd_nodes_get},
	{"nodes", "cordon", "ID", "cordon a node", "", 1, 1, TNT, cli_cmd_nodes_cordon},
	{"nodes", "uncordon", "ID", "uncordon a node", "", 1, 1, TNT, cli_cmd_nodes_uncordon},
	{"nodes", "delete", "ID --yes",
	 "delete a cordoned or retired node: revoke its certificates, free its bindings", "yes",
	 1, 1, TNT, cli_cmd_nodes_delete},
	{"nodes", "revoke-identity", "ID",
	 "revoke every certificate of a node and raise its identity generation", "", 1, 1, TNT,
	 cli_cmd_nodes_revoke_identity},
	{"nodes", "retire", "ID", "retire a node and revoke its certificates", "", 1, 1, TNT,
	 cli_cmd_nodes_retire},
	{"events", "list", "[--type T] [--limit N]", "list events, newest first", "type= limit=",
	 0, 0, TNT, cli_cmd_events_list},
	{"daemon", "config", "[--out FILE]",
	 "print the agent's pins (server, keys, CA bundle) as JSON, or write them to FILE",
	 "out=", 0, 0, API, cli_cmd_daemon_config},
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

void cli_print_usage(const struct cli_cmd *cmd, int to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;

	fprintf(f, "usage: " CLI_NAME " %s%s%s %s\n\n%c%s.\n", cmd->group, cmd->name ? " " : "",
		cmd->name ? cmd->name : "", cmd->usage, toupper((unsigned char)cmd->summary[0]),
		cmd->summary + 1);
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
		return cli_fail(c, BC_ERR_INVALID,
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

/* The second word of a group with several commands. */
static int find_verb(struct cli *c, int argc, char **argv, const char *group, int *i)
{
	const char *name = NULL;
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
	print_help(stderr, group);
	c->usage_error = 1;
	if (name == NULL)
		return cli_fail(c, BC_ERR_INVALID, "%s: which command? see `" CLI_NAME " %s --help`",
				group, group);
	return cli_fail(c, BC_ERR_INVALID, "%s: unknown command `%s`; see `" CLI_NAME " %s --help`",
			group, name, group);
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
	if ((c->cmd = find_command(group, NULL)) == NULL) {
		if ((rc = find_verb(c, argc, argv, group, &i)) != 0 || c->cmd == NULL)
			return rc;
	}
	if ((rc = cli_parse_command(c, argc, argv, i)) != 0)
		return rc;
	if (c->help) {
		cli_print_usage(c->cmd, 0);
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
