/* bcd, the agent: main() finds the command in the table below, parses the options
 * that command takes, runs it and exits. Only main() exits. The two tables (commands,
 * options) are the only place bcd's commands, flags and their help are written:
 * usage, bcd CMD --help, bcd completion bash and docs/agent.md follow them.
 *
 * Exit status: 0 success, 1 failure, 2 usage error (and bcd join --reset without
 * --yes). A failure prints one line "bcd: <what is wrong, and what to do>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/log.h"
#include "bc/wire.h"

#define C_JOIN       0x1
#define C_NODE       0x2
#define C_STATUS     0x4
#define C_DOCTOR     0x8
#define C_HELPER     0x10
#define C_SITE       0x20
#define C_RAMDISK    0x40
#define C_VERSION    0x80
#define C_COMPLETION 0x100
#define C_ALL        0x1ff
/* commands that read no config and reach no server */
#define C_LOCAL (C_VERSION | C_COMPLETION)

struct bcd_cmd {
	const char *name;
	unsigned bit;
	const char *args; /* positional words after the command, for usage */
	const char *summary;
	int (*fn)(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
};

static int cmd_version(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
static int cmd_completion(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);

static const struct bcd_cmd commands[] = {
    {"join", C_JOIN, "",
     "join this machine (the token from --token-file or BCD_JOIN_TOKEN); " BC_WIRE_ATTESTOR_X509POP
     ": re-join "
     "as the same node with the last certificate; " BC_WIRE_ATTESTOR_PROVISIONED
     ": the single-use token a deploy "
     "put in the user data; --role site: a site machine with a site token",
     bcd_cmd_join},
    {"node", C_NODE, "", "run the agent: renew the node certificate before it expires",
     bcd_cmd_node},
    {"status", C_STATUS, "", "show this machine's identity", bcd_cmd_status},
    {"doctor", C_DOCTOR, "",
     "check the config, the server, the clock, the TPM and the identity, and ask the server "
     "whether this node's certificate is still current; exit 1 when a check fails",
     bcd_cmd_doctor},
    {"helper", C_HELPER, "",
     "as root, serve the node keys in the TPM to an unprivileged bcd node ([helper])",
     bcd_cmd_helper},
    {"site", C_SITE, "",
     "on a site node: hold the site's boot lease and serve iPXE scripts that vouch for "
     "the machines it boots ([site])",
     bcd_cmd_site},
    {"ramdisk", C_RAMDISK, "",
     "in the commissioning ramdisk: join as a ramdisk node with the discovery token and "
     "assertion on the kernel command line (default /proc/cmdline)",
     bcd_cmd_ramdisk},
    {"version", C_VERSION, "", "print bcd's version (also bcd --version)", cmd_version},
    {"completion", C_COMPLETION, "bash",
     "print a bash completion script: source it, or install it as "
     "/usr/share/bash-completion/completions/bcd",
     cmd_completion},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

struct opt {
	const char *name;
	const char *arg;    /* the value's placeholder; NULL: a flag without a value */
	const char *values; /* the values it takes, space-separated (completion), or NULL */
	unsigned cmds;
	const char *help;
};

static const struct opt options[] = {
    {"config", "FILE", NULL, C_ALL & ~C_LOCAL, "the config (default " BCD_DEFAULT_CONFIG ")"},
    {"token-file", "FILE", NULL, C_JOIN,
     "a file holding the join token (else BCD_JOIN_TOKEN); never on the command line"},
    {"attestor", "NAME",
     BC_WIRE_ATTESTOR_JOIN_TOKEN " " BC_WIRE_ATTESTOR_TPM " " BC_WIRE_ATTESTOR_X509POP
                                 " " BC_WIRE_ATTESTOR_PROVISIONED " " BC_WIRE_ATTESTOR_CLOUD_IID,
     C_JOIN,
     "how to join: " BC_WIRE_ATTESTOR_JOIN_TOKEN " (default), " BC_WIRE_ATTESTOR_TPM
     ", " BC_WIRE_ATTESTOR_X509POP ", " BC_WIRE_ATTESTOR_PROVISIONED
     " or " BC_WIRE_ATTESTOR_CLOUD_IID},
    {"provider", "NAME", "gcp aws oidc", C_JOIN,
     BC_WIRE_ATTESTOR_CLOUD_IID
     ": the cloud whose identity document is the evidence (else [cloud] provider)"},
    {"identity-token-file", "FILE", NULL, C_JOIN,
     BC_WIRE_ATTESTOR_CLOUD_IID " oidc: a file holding the identity token"},
    {"role", "ROLE", "node site", C_JOIN, "node (default), or site with a site token"},
    {"reset", NULL, NULL, C_JOIN,
     "move this machine's identity aside (renamed *.reset-TIME) so that it can join again"},
    {"yes", NULL, NULL, C_JOIN,
     "with --reset: do it (without, bcd says what it would move and exits 2)"},
    {"json", NULL, NULL, C_STATUS | C_DOCTOR, "print JSON instead of text"},
    {"cmdline", "FILE", NULL, C_RAMDISK, "the kernel command line (default /proc/cmdline)"},
};
#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static const char exit_text[] = "Exit status: 0 ok, 1 failed, 2 usage error.\n";

static void usage(FILE *f)
{
	fprintf(f, "usage: " BCD_NAME " COMMAND [--config FILE] [options]\n\nCommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-11s  %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
	        "\n  --config FILE  the config (default " BCD_DEFAULT_CONFIG ")\n"
	        "  --version      print bcd's version\n"
	        "bcd help COMMAND (or bcd COMMAND --help) says what a command takes.\n%s"
	        "See docs/agent.md.\n",
	        exit_text);
}

/* One command's synopsis, what it does and its options, from the two tables. */
static void command_help(FILE *f, const struct bcd_cmd *c)
{
	fprintf(f, "usage: " BCD_NAME " %s", c->name);
	for (size_t k = 0; k < N_OPTIONS; k++)
		if (options[k].cmds & c->bit)
			fprintf(f, options[k].arg ? " [--%s %s]" : " [--%s]", options[k].name,
			        options[k].arg);
	fprintf(f, "%s%s\n\n%s\n", c->args[0] ? " " : "", c->args, c->summary);
	for (size_t k = 0, first = 1; k < N_OPTIONS; k++) {
		char word[48];
		if (!(options[k].cmds & c->bit))
			continue;
		if (first)
			fprintf(f, "\nOptions:\n");
		first = 0;
		snprintf(word, sizeof(word), "--%s%s%s", options[k].name, options[k].arg ? " " : "",
		         options[k].arg ? options[k].arg : "");
		fprintf(f, "  %-26s %s\n", word, options[k].help);
	}
	fprintf(f, "\n%sSee docs/agent.md.\n", exit_text);
}

static int cmd_version(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	(void)o, (void)m, (void)exit_status;
	printf(BCD_NAME " " BC_VERSION "\n");
	return 0;
}

/* A command's words for completion (its positional words, its options, --help),
 * space-separated, into out. */
static void command_words(const struct bcd_cmd *c, char *out, size_t len)
{
	size_t used = (size_t)snprintf(out, len, "%s%s", c->args, c->args[0] ? " " : "");

	for (size_t k = 0; k < N_OPTIONS && used < len; k++)
		if (options[k].cmds & c->bit)
			used += (size_t)snprintf(out + used, len - used, "--%s ", options[k].name);
	if (used < len)
		snprintf(out + used, len - used, "--help");
}

static void completion_bash(void)
{
	char words[512];

	printf("# bash completion for bcd, generated by bcd completion bash\n"
	       "_bcd() {\n"
	       "\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
	       "\tlocal cmds=\"");
	for (size_t i = 0; i < N_COMMANDS; i++)
		printf("%s%s", i ? " " : "", commands[i].name);
	printf(" help\"\n"
	       "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
	       "\t\tCOMPREPLY=($(compgen -W \"$cmds --help --version\" -- \"$cur\"))\n"
	       "\t\treturn\n\tfi\n\tcase \"$prev\" in\n");
	for (size_t k = 0; k < N_OPTIONS; k++)
		if (options[k].arg != NULL)
			printf("\t--%s) COMPREPLY=($(compgen %s%s%s -- \"$cur\")); return ;;\n",
			       options[k].name, options[k].values ? "-W \"" : "-f",
			       options[k].values ? options[k].values : "",
			       options[k].values ? "\"" : "");
	printf("\tesac\n\tcase \"${COMP_WORDS[1]}\" in\n"
	       "\thelp) COMPREPLY=($(compgen -W \"$cmds\" -- \"$cur\")) ;;\n");
	for (size_t i = 0; i < N_COMMANDS; i++) {
		command_words(&commands[i], words, sizeof(words));
		printf("\t%s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")) ;;\n", commands[i].name,
		       words);
	}
	printf("\tesac\n}\ncomplete -F _bcd bcd\n");
}

static int cmd_completion(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	if (o->shell == NULL || strcmp(o->shell, "bash") != 0) {
		bcd_say(m, "which shell? bcd completion bash (bash is the only one)");
		*exit_status = BCD_EXIT_USAGE;
		return BC_ERR_INVALID;
	}
	completion_bash();
	return 0;
}

static const struct bcd_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int set_opt(struct bcd_opts *o, const char *name, const char *val)
{
	if (strcmp(name, "config") == 0)
		o->config = val;
	else if (strcmp(name, "token-file") == 0)
		o->token_file = val;
	else if (strcmp(name, "attestor") == 0)
		o->attestor = val;
	else if (strcmp(name, "provider") == 0)
		o->provider = val;
	else if (strcmp(name, "identity-token-file") == 0)
		o->identity_token_file = val;
	else if (strcmp(name, "role") == 0)
		o->role = val;
	else if (strcmp(name, "cmdline") == 0)
		o->cmdline = val;
	else if (strcmp(name, "reset") == 0)
		o->reset = 1;
	else if (strcmp(name, "yes") == 0)
		o->yes = 1;
	else if (strcmp(name, "json") == 0)
		o->json = 1;
	else
		return BC_ERR_INVALID;
	return 0;
}

/* One option word (and its value) at argv[*i]; names are spelled out in full, and
 * seen[k] marks options[k] (checked against the command once it is known). The value
 * is never echoed (it may be a path someone mistook for a token). */
static int parse_opt(int argc, char **argv, int *i, unsigned char seen[static N_OPTIONS],
                     struct bcd_opts *o, struct bcd_msg *m)
{
	const char *word = argv[*i] + 2, *eq = strchr(word, '='), *val = NULL;
	size_t n = eq != NULL ? (size_t)(eq - word) : strlen(word);

	for (size_t k = 0; k < N_OPTIONS; k++) {
		const struct opt *op = &options[k];
		if (strlen(op->name) != n || strncmp(op->name, word, n) != 0)
			continue;
		if (op->arg != NULL) {
			val = eq != NULL ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
			if (val == NULL || val[0] == '\0') {
				bcd_say(m, "--%s needs a value", op->name);
				return BC_ERR_INVALID;
			}
		} else if (eq != NULL) {
			bcd_say(m, "--%s takes no value", op->name);
			return BC_ERR_INVALID;
		}
		seen[k] = 1;
		return set_opt(o, op->name, val);
	}
	bcd_say(m, "unknown option --%.*s", (int)(n > 40 ? 40 : n), word);
	return BC_ERR_INVALID;
}

/* Every option given, before or after the command, must be one of the command's. */
static int check_opts(const struct bcd_cmd *cmd, const unsigned char seen[static N_OPTIONS],
                      struct bcd_msg *m)
{
	for (size_t k = 0; k < N_OPTIONS; k++)
		if (seen[k] && !(options[k].cmds & cmd->bit)) {
			bcd_say(m, "--%s does not go with bcd %s (bcd help %s says what it takes)",
			        options[k].name, cmd->name, cmd->name);
			return BC_ERR_INVALID;
		}
	return 0;
}

/* A word that is neither an option nor the command: bcd completion's shell, else
 * refused. */
static int positional(const struct bcd_cmd *cmd, const char *word, int i, struct bcd_opts *o,
                      struct bcd_msg *m)
{
	if (cmd->bit == C_COMPLETION && o->shell == NULL) {
		o->shell = word;
		return 0;
	}
	/* not echoed: it may be a token pasted where it does not belong */
	bcd_say(m,
	        "unexpected argument %d after the command (bcd takes no arguments; the token "
	        "goes in --token-file or BCD_JOIN_TOKEN)",
	        i);
	return BC_ERR_INVALID;
}

static int parse_args(int argc, char **argv, const struct bcd_cmd **cmd, struct bcd_opts *o,
                      int *help, struct bcd_msg *m)
{
	unsigned char seen[N_OPTIONS] = {0};
	int rc;

	*cmd = NULL;
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "help") == 0) {
			*help = 1;
		} else if (strcmp(argv[i], "--version") == 0 && *cmd == NULL) {
			*cmd = find_command("version");
		} else if (strncmp(argv[i], "--", 2) == 0) {
			if ((rc = parse_opt(argc, argv, &i, seen, o, m)) != 0)
				return rc;
		} else if (*cmd == NULL) {
			if ((*cmd = find_command(argv[i])) == NULL) {
				bcd_say(m, "unknown command %.40s (bcd help lists them)", argv[i]);
				return BC_ERR_INVALID;
			}
		} else if ((rc = positional(*cmd, argv[i], i, o, m)) != 0) {
			return rc;
		}
	}
	if (*cmd == NULL && !*help) {
		bcd_say(m, "which command? join, node, status, doctor, helper, site, ramdisk, "
		           "version or completion");
		return BC_ERR_INVALID;
	}
	if (*cmd != NULL && !*help && (rc = check_opts(*cmd, seen, m)) != 0)
		return rc;
	if (o->config == NULL)
		o->config = BCD_DEFAULT_CONFIG;
	return 0;
}

int main(int argc, char **argv)
{
	const struct bcd_cmd *cmd = NULL;
	struct bcd_opts o;
	struct bcd_msg m = {""};
	int help = 0, status = 0, rc;

	if (parse_args(argc, argv, &cmd, &o, &help, &m) != 0) {
		fprintf(stderr, BCD_NAME ": %s\n", m.text);
		if (cmd != NULL)
			command_help(stderr, cmd);
		else
			usage(stderr);
		return BCD_EXIT_USAGE;
	}
	if (help) {
		if (cmd != NULL)
			command_help(stdout, cmd);
		else
			usage(stdout);
		return 0;
	}
	if (cmd->bit & C_LOCAL) {
		if ((rc = cmd->fn(&o, &m, &status)) != 0)
			fprintf(stderr, BCD_NAME " %s: %s\n", cmd->name, m.text);
		return rc != 0 ? (status != 0 ? status : 1) : status;
	}
	bc_log_set_level(BC_LOG_WARN);
	/* tpm2-tss logs ERROR lines for normal paths (an EK certificate index that is not
	 * there); bcd says what failed itself. TSS2_LOG set by the caller still wins. */
	setenv("TSS2_LOG", "all+none", 0);
	rc = cmd->fn(&o, &m, &status);
	if (rc != 0) {
		fprintf(stderr, BCD_NAME " %s: %s\n", cmd->name,
		        m.text[0] ? m.text : bc_err_str(rc));
		return status != 0 ? status : 1;
	}
	return status;
}
