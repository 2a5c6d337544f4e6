/* bcd, the agent: main() finds the command in the table below, parses the options
 * that command takes, runs it and exits. Only main() exits.
 *
 * Exit status: 0 success, 1 failure, 2 usage error (and bcd join --reset without
 * --yes). A failure prints one line "bcd: <what is wrong, and what to do>". */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/log.h"

#define C_JOIN    0x1
#define C_NODE    0x2
#define C_STATUS  0x4
#define C_DOCTOR  0x8
#define C_HELPER  0x10
#define C_SITE    0x20
#define C_RAMDISK 0x40
#define C_ALL     0x7f

struct bcd_cmd {
	const char *name;
	unsigned bit;
	const char *usage;
	const char *summary;
	int (*fn)(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
};

static const struct bcd_cmd commands[] = {
    {"join", C_JOIN,
     "[--token-file FILE] [--attestor join-token|tpm|x509pop|provisioned|cloud-iid "
     "[--provider gcp|aws|oidc] [--identity-token-file FILE]] [--role node|site] "
     "[--reset [--yes]]",
     "join this machine (the token from --token-file or BCD_JOIN_TOKEN); x509pop: re-join "
     "as the same node with the last certificate; provisioned: the single-use token a deploy "
     "put in the user data; --role site: a site machine with a site token",
     bcd_cmd_join},
    {"node", C_NODE, "", "run the agent: renew the node certificate before it expires",
     bcd_cmd_node},
    {"status", C_STATUS, "[--json]", "show this machine's identity", bcd_cmd_status},
    {"doctor", C_DOCTOR, "", "check the config, the server, the identity and the clock",
     bcd_cmd_doctor},
    {"helper", C_HELPER, "",
     "as root, serve the node keys in the TPM to an unprivileged bcd node ([helper])",
     bcd_cmd_helper},
    {"site", C_SITE, "",
     "on a site node: hold the site's boot lease and serve iPXE scripts that vouch for "
     "the machines it boots ([site])",
     bcd_cmd_site},
    {"ramdisk", C_RAMDISK, "[--cmdline FILE]",
     "in the commissioning ramdisk: join as a ramdisk node with the discovery token and "
     "assertion on the kernel command line (default /proc/cmdline)",
     bcd_cmd_ramdisk},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

struct opt {
	const char *name;
	int has_value;
	unsigned cmds;
};

static const struct opt options[] = {
    {"config", 1, C_ALL},    {"token-file", 1, C_JOIN},
    {"attestor", 1, C_JOIN}, {"reset", 0, C_JOIN},
    {"yes", 0, C_JOIN},      {"json", 0, C_STATUS},
    {"provider", 1, C_JOIN}, {"identity-token-file", 1, C_JOIN},
    {"role", 1, C_JOIN},     {"cmdline", 1, C_RAMDISK},
};
#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: " BCD_NAME " COMMAND [--config FILE] [options]\n\nCommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-7s %s\n          %s\n", commands[i].name, commands[i].usage,
		        commands[i].summary);
	fprintf(f, "\n  --config FILE  the config (default " BCD_DEFAULT_CONFIG ")\n"
	           "See docs/agent.md.\n");
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

/* One option word (and its value) at argv[*i]; names are spelled out in full, and a
 * word of another command is refused. The value is never echoed (it may be a path
 * someone mistook for a token). */
static int parse_opt(int argc, char **argv, int *i, const struct bcd_cmd *cmd, struct bcd_opts *o,
                     struct bcd_msg *m)
{
	const char *word = argv[*i] + 2, *eq = strchr(word, '='), *val = NULL;
	size_t n = eq != NULL ? (size_t)(eq - word) : strlen(word);

	for (size_t k = 0; k < N_OPTIONS; k++) {
		const struct opt *op = &options[k];
		if (strlen(op->name) != n || strncmp(op->name, word, n) != 0)
			continue;
		if (cmd != NULL && !(op->cmds & cmd->bit)) {
			bcd_say(m, "--%s does not go with bcd %s", op->name, cmd->name);
			return BC_ERR_INVALID;
		}
		if (op->has_value) {
			val = eq != NULL ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
			if (val == NULL || val[0] == '\0') {
				bcd_say(m, "--%s needs a value", op->name);
				return BC_ERR_INVALID;
			}
		} else if (eq != NULL) {
			bcd_say(m, "--%s takes no value", op->name);
			return BC_ERR_INVALID;
		}
		return set_opt(o, op->name, val);
	}
	bcd_say(m, "unknown option --%.*s", (int)(n > 40 ? 40 : n), word);
	return BC_ERR_INVALID;
}

static int parse_args(int argc, char **argv, const struct bcd_cmd **cmd, struct bcd_opts *o,
                      int *help, struct bcd_msg *m)
{
	int rc;

	*cmd = NULL;
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "help") == 0) {
			*help = 1;
		} else if (strncmp(argv[i], "--", 2) == 0) {
			if ((rc = parse_opt(argc, argv, &i, *cmd, o, m)) != 0)
				return rc;
		} else if (*cmd == NULL) {
			if ((*cmd = find_command(argv[i])) == NULL) {
				bcd_say(m, "unknown command %.40s", argv[i]);
				return BC_ERR_INVALID;
			}
		} else {
			/* not echoed: it may be a token pasted where it does not belong */
			bcd_say(m,
			        "unexpected argument %d after the command (bcd takes no "
			        "arguments; the token goes in --token-file or BCD_JOIN_TOKEN)",
			        i);
			return BC_ERR_INVALID;
		}
	}
	if (*cmd == NULL && !*help) {
		bcd_say(m, "which command? join, node, status, doctor or helper");
		return BC_ERR_INVALID;
	}
	/* options given before the command: check them against it now */
	if (*cmd != NULL && ((o->token_file || o->attestor || o->role || o->reset || o->yes ||
	                      o->provider || o->identity_token_file) &&
	                     (*cmd)->bit != C_JOIN)) {
		bcd_say(m, "--token-file, --attestor, --provider, --identity-token-file, --role, "
		           "--reset and --yes go with bcd join only");
		return BC_ERR_INVALID;
	}
	if (*cmd != NULL && o->json && (*cmd)->bit != C_STATUS) {
		bcd_say(m, "--json goes with bcd status only");
		return BC_ERR_INVALID;
	}
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
		usage(stderr);
		return BCD_EXIT_USAGE;
	}
	if (help) {
		usage(stdout);
		return 0;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, BCD_NAME ": cannot initialize libcurl; check the installation\n");
		return 1;
	}
	bc_log_set_level(BC_LOG_WARN);
	/* tpm2-tss logs ERROR lines for normal paths (an EK certificate index that is not
	 * there); bcd says what failed itself. TSS2_LOG set by the caller still wins. */
	setenv("TSS2_LOG", "all+none", 0);
	rc = cmd->fn(&o, &m, &status);
	curl_global_cleanup();
	if (rc != 0) {
		fprintf(stderr, BCD_NAME " %s: %s\n", cmd->name,
		        m.text[0] ? m.text : bc_err_str(rc));
		return status != 0 ? status : 1;
	}
	return status;
}
