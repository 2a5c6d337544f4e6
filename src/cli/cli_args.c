/* Options and arguments: the global options, which may appear anywhere, and each
 * command's own, declared in its table entry as "name= flag" (see cli.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bc/buf.h"
#include "bc/clock.h"
#include "cli/cli.h"

void cli_free(struct cli *c)
{
	if (c->opt_api_key != NULL)
		bc_freezero(c->opt_api_key, strlen(c->opt_api_key));
	if (c->api_key != NULL)
		bc_freezero(c->api_key, strlen(c->api_key));
	free(c->server);
	free(c->ca_file);
	free(c->tenant);
	for (size_t k = 0; k < CLI_MAX_ARGS; k++)
		free(c->resolved_args[k]);
	for (size_t k = 0; k < c->n_opts; k++)
		free(c->opts[k].name);
	memset(c, 0, sizeof(*c));
}

/* The code of a failure for --json: the server's, or one that says what kind. */
static const char *code_of(const struct cli *c, int rc)
{
	if (c->usage_error)
		return "USAGE";
	switch (rc) {
	case BC_ERR_INVALID: return "INVALID_INPUT";
	case BC_ERR_NOT_FOUND: return "NOT_FOUND";
	case BC_ERR_CONFLICT: return "CONFLICT";
	case BC_ERR_DENIED: return "ACCESS_DENIED";
	case BC_ERR_UNAVAILABLE: return "UNAVAILABLE";
	default: return "FAILED";
	}
}

/* One line on stderr: "better-compute: [CODE: ]message", or under --json
 * {"error":{"code","message"}}. */
__attribute__((format(printf, 4, 0))) static int vemit(struct cli *c, int rc, const char *code,
                                                       const char *fmt, va_list ap)
{
	char msg[2048];
	json_t *e = NULL;
	char *text = NULL;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	c->reported = 1;
	if ((c->json || c->json_errors) &&
	    (e = json_pack("{s:{s:s, s:s}}", "error", "code", code ? code : code_of(c, rc),
	                   "message", msg)) != NULL &&
	    (text = json_dumps(e, JSON_COMPACT)) != NULL)
		fprintf(stderr, "%s\n", text);
	else
		fprintf(stderr, CLI_NAME ": %s%s%s\n", code ? code : "", code ? ": " : "", msg);
	free(text);
	json_decref(e);
	return rc;
}

int cli_fail(struct cli *c, int rc, const char *fmt, ...)
{
	va_list ap;

	/* no command prefix: an API error reads "better-compute: CODE: message" */
	va_start(ap, fmt);
	vemit(c, rc, NULL, fmt, ap);
	va_end(ap);
	return rc;
}

int cli_error(struct cli *c, int rc, const char *code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vemit(c, rc, code, fmt, ap);
	va_end(ap);
	return rc;
}

int cli_usage(struct cli *c, const char *fmt, ...)
{
	char what[64] = "", msg[1024];
	va_list ap;

	if (c->cmd != NULL)
		snprintf(what, sizeof(what), "%s%s%s", c->cmd->group, c->cmd->name ? " " : "",
		         c->cmd->name ? c->cmd->name : "");
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->usage_error = 1;
	return cli_fail(c, BC_ERR_INVALID, "%s%s%s; see `" CLI_NAME "%s%s --help`", what,
	                what[0] ? ": " : "", msg, what[0] ? " " : "", what);
}

/* "--name=value" or "--name value": the value and how many argv slots were used. */
static int take_value(struct cli *c, int argc, char **argv, int i, const char *name, size_t namelen,
                      char **val, int *consumed)
{
	const char *eq = argv[i] + 2 + namelen;

	*val = NULL;
	*consumed = 0;
	if (*eq == '=') {
		*val = (char *)eq + 1;
		*consumed = 1;
		return 0;
	}
	if (i + 1 >= argc)
		return cli_usage(c, "--%.*s needs a value", (int)namelen, name);
	*val = argv[i + 1];
	*consumed = 2;
	return 0;
}

static int set_once(struct cli *c, const char **slot, const char *val, const char *name)
{
	if (*slot != NULL)
		return cli_usage(c, "--%s given twice", name);
	*slot = val;
	return 0;
}

/* The API key is copied and the argv string wiped, so it lingers in neither the
 * process's command line (ps) nor a core file's copy of argv. */
static int take_api_key(struct cli *c, char *val)
{
	if (c->opt_api_key != NULL)
		return cli_usage(c, "--api-key given twice");
	if ((c->opt_api_key = strdup(val)) == NULL)
		return BC_ERR_NOMEM;
	OPENSSL_cleanse(val, strlen(val));
	return 0;
}

int cli_parse_global(struct cli *c, int argc, char **argv, int i, int *consumed)
{
	static const char *const valued[] = {"server",  "api-key", "api-key-file",
	                                     "ca-file", "tenant",  "timeout"};
	const char *a = argv[i];
	const char **slots[] = {&c->opt_server,  NULL,           &c->opt_api_key_file,
	                        &c->opt_ca_file, &c->opt_tenant, &c->opt_timeout};
	size_t len;
	char *val;

	*consumed = 0;
	if (strcmp(a, "--version") == 0) {
		c->version = 1;
		*consumed = 1;
		return 0;
	}
	if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		c->help = 1;
		*consumed = 1;
		return 0;
	}
	if (strncmp(a, "--json", 6) == 0 && (a[6] == '\0' || a[6] == '=')) {
		if (a[6] == '=')
			return cli_usage(c, "--json takes no value");
		c->json = 1;
		*consumed = 1;
		return 0;
	}
	if (strncmp(a, "--", 2) != 0)
		return 0;
	len = strcspn(a + 2, "=");
	for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++) {
		int rc;

		if (strlen(valued[k]) != len || strncmp(a + 2, valued[k], len) != 0)
			continue;
		if ((rc = take_value(c, argc, argv, i, valued[k], len, &val, consumed)) != 0)
			return rc;
		if (slots[k] == NULL)
			return take_api_key(c, val);
		return set_once(c, slots[k], val, valued[k]);
	}
	return 0;
}

/* Whether the command declares option name (of namelen bytes); *valued: "name=". */
static int cmd_has_opt(const struct cli_cmd *cmd, const char *name, size_t namelen, int *valued)
{
	const char *p = cmd->opts;

	*valued = 0;
	while (*p != '\0') {
		size_t n = strcspn(p, " =");

		if (n == namelen && strncmp(p, name, n) == 0) {
			*valued = p[n] == '=';
			return 1;
		}
		p += strcspn(p, " ");
		p += strspn(p, " ");
	}
	return 0;
}

static int parse_cmd_opt(struct cli *c, int argc, char **argv, int i, int *consumed)
{
	const char *a = argv[i];
	size_t len;
	int valued, rc;
	char *val = NULL;

	*consumed = 1;
	if (strncmp(a, "--", 2) != 0)
		return cli_usage(c, "unknown option %s", a);
	len = strcspn(a + 2, "=");
	if (!cmd_has_opt(c->cmd, a + 2, len, &valued))
		return cli_usage(c, "unknown option --%.*s", (int)len, a + 2);
	if (valued && (rc = take_value(c, argc, argv, i, a + 2, len, &val, consumed)) != 0)
		return rc;
	if (!valued && a[2 + len] == '=')
		return cli_usage(c, "--%.*s takes no value", (int)len, a + 2);
	for (size_t k = 0; k < c->n_opts; k++)
		if (strlen(c->opts[k].name) == len && strncmp(c->opts[k].name, a + 2, len) == 0)
			return cli_usage(c, "--%.*s given twice", (int)len, a + 2);
	if (c->n_opts == CLI_MAX_OPTS)
		return cli_usage(c, "too many options");
	/* a copy, since in argv the name runs on into "=value" */
	if ((c->opts[c->n_opts].name = strndup(a + 2, len)) == NULL)
		return BC_ERR_NOMEM;
	c->opts[c->n_opts++].val = val;
	return 0;
}

/* Values end up in JSON, which is UTF-8: say so here rather than fail later. */
static int check_text(struct cli *c, const char *s)
{
	json_t *t = json_string(s);

	if (t == NULL)
		return cli_usage(c, "\"%s\" is not valid UTF-8", s);
	json_decref(t);
	return 0;
}

int cli_parse_command(struct cli *c, int argc, char **argv, int first)
{
	int dashdash = 0, consumed, rc;

	for (int i = first; i < argc; i += consumed) {
		const char *a = argv[i];

		consumed = 1;
		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = 1;
			continue;
		}
		if (!dashdash && a[0] == '-' && a[1] != '\0') {
			if ((rc = cli_parse_global(c, argc, argv, i, &consumed)) != 0)
				return rc;
			if (consumed == 0 && (rc = parse_cmd_opt(c, argc, argv, i, &consumed)) != 0)
				return rc;
			continue;
		}
		if (c->n_args == CLI_MAX_ARGS)
			return cli_usage(c, "too many arguments");
		c->args[c->n_args++] = a;
	}
	for (size_t k = 0; k < c->n_args; k++)
		if ((rc = check_text(c, c->args[k])) != 0)
			return rc;
	for (size_t k = 0; k < c->n_opts; k++)
		if (c->opts[k].val != NULL && (rc = check_text(c, c->opts[k].val)) != 0)
			return rc;
	return 0;
}

const char *cli_opt(const struct cli *c, const char *name)
{
	for (size_t k = 0; k < c->n_opts; k++)
		if (strcmp(c->opts[k].name, name) == 0)
			return c->opts[k].val;
	return NULL;
}

int cli_flag(const struct cli *c, const char *name)
{
	for (size_t k = 0; k < c->n_opts; k++)
		if (strcmp(c->opts[k].name, name) == 0)
			return 1;
	return 0;
}

int cli_opt_int(struct cli *c, const char *name, int64_t min, int64_t max, int64_t *out,
                int *present)
{
	const char *v = cli_opt(c, name);
	char *end;
	long long n;

	*out = 0;
	*present = 0;
	if (v == NULL)
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	/* digits only: strtoll alone would take " 12", "+12" and "12abc" up to the junk */
	if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || n < min || n > max)
		return cli_usage(c, "--%s: expected a whole number from %lld to %lld, got \"%s\"",
		                 name, (long long)min, (long long)max, v);
	*out = n;
	*present = 1;
	return 0;
}

int cli_opt_ttl(struct cli *c, json_t *body)
{
	const char *ttl = cli_opt(c, "ttl");
	int64_t ms;

	if (ttl == NULL)
		return 0;
	if (bc_duration_parse_ms(ttl, &ms) != 0)
		return cli_usage(c, "--ttl: expected a duration like 30m, 1h or 7d, got \"%s\"",
		                 ttl);
	/* "0s" would mean a credential dead on arrival, "1500ms" a rounding */
	if (ms < 1000 || ms % 1000 != 0)
		return cli_usage(c, "--ttl: expected whole seconds, at least 1s, got \"%s\"", ttl);
	return json_object_set_new(body, "ttlSeconds", json_integer(ms / 1000)) ? BC_ERR_NOMEM : 0;
}
