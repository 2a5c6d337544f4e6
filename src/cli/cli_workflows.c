/* workflows, machines commission|deploy, nodes inventory. A deploy's answer holds the
 * single-use provisioned token its userdata.render step minted: it is rendered into
 * the user data (a cloud-init document, or the operator's template), printed once or
 * written to --out FILE (0600), and wiped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/buf.h"
#include "bc/canon.h"
#include "bc/clock.h"
#include "bc/files.h"
#include "cli/cli.h"

#define TEMPLATE_MAX (64 * 1024)

static const struct cli_col wf_cols[] = {
    {"ID", "id", CLI_STR, 1, 0},
    {"KIND", "kind", CLI_STR, 1, 0},
    {"STATE", "state", CLI_STR, 1, 0},
    {"NODE", "nodeId", CLI_STR, 1, 0},
    {"DATA", "data", CLI_JSON, 1, 80},
    {"CREATED", "createdAt", CLI_TIME, 1, 0},
    {"UPDATED", "updatedAt", CLI_TIME, 0, 0},
};
#define N_WF_COLS (sizeof(wf_cols) / sizeof(wf_cols[0]))

static const struct cli_col inv_cols[] = {
    {"TAKEN", "takenAt", CLI_TIME, 1, 0},
    {"PRODUCT UUID", "claims.productUuid", CLI_STR, 1, 0},
    {"MACS", "claims.macs", CLI_LIST, 1, 0},
    {"SERIAL", "claims.serial", CLI_STR, 1, 0},
    {"HOSTNAME", "claims.hostname", CLI_STR, 1, 24},
    {"ARCH", "claims.arch", CLI_STR, 1, 0},
};
#define N_INV_COLS (sizeof(inv_cols) / sizeof(inv_cols[0]))

/* GET or POST the tenant's path; shows the answer (list key, or one object). */
static int call_show(struct cli *c, const char *method, json_t *body, const char *list_key,
                     const struct cli_col *cols, size_t n, const char *a, const char *b,
                     const char *d)
{
	struct cli_resp r;
	char *path = NULL;
	int rc;

	if ((rc = cli_tenant_path(c, &path, a, b, d, NULL)) != 0)
		return rc;
	if ((rc = cli_api(c, method, path, body, &r)) == 0) {
		rc = list_key ? cli_show_list(c, &r, list_key, cols, n)
		              : cli_show_object(c, &r, NULL, cols, n);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}

int cli_cmd_workflows_list(struct cli *c)
{
	struct cli_resp r;
	char *full = NULL;
	int rc;

	if ((rc = cli_list_path(c, &full, "workflows", NULL, 0)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", full, NULL, &r)) == 0) {
		rc = cli_show_list(c, &r, "workflows", wf_cols, N_WF_COLS);
		cli_resp_free(&r);
	}
	free(full);
	return rc;
}

int cli_cmd_workflows_get(struct cli *c)
{
	return call_show(c, "GET", NULL, NULL, wf_cols, N_WF_COLS, "workflows", c->args[0], NULL);
}

int cli_cmd_workflows_cancel(struct cli *c)
{
	return call_show(c, "POST", NULL, NULL, wf_cols, N_WF_COLS, "workflows", c->args[0],
	                 "cancel");
}

int cli_cmd_workflows_complete(struct cli *c)
{
	json_t *body = json_pack("{s:s}", "state", cli_flag(c, "failed") ? "failed" : "succeeded");
	int rc;

	if (body == NULL)
		return BC_ERR_NOMEM;
	rc = call_show(c, "POST", body, NULL, wf_cols, N_WF_COLS, "workflows", c->args[0],
	               "complete");
	json_decref(body);
	return rc;
}

int cli_cmd_nodes_inventory(struct cli *c)
{
	return call_show(c, "GET", NULL, "inventory", inv_cols, N_INV_COLS, "nodes", c->args[0],
	                 "inventory");
}

/* ---- machines commission ---- */

static int set_opt(json_t *b, const char *key, const char *v)
{
	return v == NULL || json_object_set_new(b, key, json_string(v)) == 0 ? 0 : BC_ERR_NOMEM;
}

int cli_cmd_machines_commission(struct cli *c)
{
	const char *mac = cli_opt(c, "mac");
	char *site = NULL, *node = NULL;
	json_t *b = NULL;
	int rc;

	if (cli_opt(c, "site") == NULL || mac == NULL)
		return cli_usage(c, "give --site ID and --mac M");
	if ((rc = cli_resolve(c, CLI_K_SITE, cli_opt(c, "site"), &site)) != 0 ||
	    (rc = cli_resolve(c, CLI_K_NODE, cli_opt(c, "node"), &node)) != 0)
		goto out;
	/* the server canonicalizes the MAC and UUID and names a malformed one */
	if ((b = json_pack("{s:s, s:s}", "siteId", site, "mac", mac)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = set_opt(b, "productUuid", cli_opt(c, "product-uuid"))) == 0 &&
	    (rc = set_opt(b, "nodeId", node)) == 0 && (rc = cli_opt_ttl(c, b)) == 0)
		rc = call_show(c, "POST", b, NULL, wf_cols, N_WF_COLS, "machines", "commission",
		               NULL);
out:
	json_decref(b);
	free(site);
	free(node);
	return rc;
}

/* ---- machines deploy: the user data ---- */

/* text with every "{{name}}" of the table replaced (malloc'd into *out). */
struct subst {
	const char *name;
	const char *value;
};

static int render(const char *text, const struct subst *s, size_t n, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);
	const char *p = text;

	if (f == NULL)
		return BC_ERR_NOMEM;
	while (*p != '\0') {
		size_t k = 0;
		for (; k < n; k++)
			if (strncmp(p, s[k].name, strlen(s[k].name)) == 0)
				break;
		if (k < n) {
			fputs(s[k].value, f);
			p += strlen(s[k].name);
		} else {
			fputc(*p++, f);
		}
	}
	return fclose(f) == 0 ? 0 : BC_ERR_NOMEM;
}

/* text as a YAML block scalar's lines, indented by six spaces. */
static char *indent(const char *text)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (f == NULL)
		return NULL;
	for (const char *l = text; *l != '\0';) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		fprintf(f, "      %.*s\n", (int)n, l);
		l += n + (nl != NULL);
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

static const char default_template[] =
    "#cloud-config\n"
    "# Better Compute deploy {{workflow}} of node {{node}} ({{server}}): bcd's config and\n"
    "# its single-use provisioned token, then `bcd join --attestor provisioned`, which\n"
    "# re-keys that node. The token is the secret of this document: keep it like one.\n"
    "write_files:\n"
    "  - path: /etc/bcd/config.toml\n"
    "    permissions: '0644'\n"
    "    content: |\n"
    "{{config_block}}"
    "  - path: /etc/bcd/ca.pem\n"
    "    permissions: '0644'\n"
    "    content: |\n"
    "{{ca_block}}"
    "  - path: /etc/bcd/provisioned.token\n"
    "    permissions: '0600'\n"
    "    content: |\n"
    "      {{token}}\n"
    "runcmd:\n"
    "{{install}}"
    "  - [mkdir, -p, -m, '0700', /var/lib/bcd]\n"
    "  - [/usr/local/bin/bcd, join, --config, /etc/bcd/config.toml, --attestor, provisioned, "
    "--token-file, /etc/bcd/provisioned.token]\n"
    "  - [rm, -f, /etc/bcd/provisioned.token]\n"
    "  - [systemctl, enable, --now, bcd.service]\n";

struct deploy_parts {
	char *toml, *ca, *server, *tmpl;
	size_t tmpl_len;
};

static void parts_free(struct deploy_parts *p)
{
	free(p->toml);
	free(p->ca);
	free(p->server);
	free(p->tmpl);
	memset(p, 0, sizeof(*p));
}

/* The user data: the template (or the default) with the answer's token filled in. */
static int user_data(struct cli *c, const struct deploy_parts *p, const json_t *ans, char **out,
                     size_t *len)
{
	const json_t *wf = json_object_get(ans, "workflow");
	const char *url = cli_opt(c, "bcd-url");
	char *cb = indent(p->toml), *ab = indent(p->ca), *install = NULL;
	int rc = BC_ERR_NOMEM;

	if (cb == NULL || ab == NULL)
		goto out;
	if (asprintf(&install,
	             url ? "  - [curl, -fsSL, -o, /usr/local/bin/bcd, '%s']\n"
	                   "  - [chmod, '0755', /usr/local/bin/bcd]\n"
	                 : "%s",
	             url ? url : "") < 0) {
		install = NULL;
		goto out;
	}
	const struct subst s[] = {
	    {"{{token}}", cli_jstr(ans, "token")},
	    {"{{server}}", p->server},
	    {"{{config}}", p->toml},
	    {"{{ca}}", p->ca},
	    {"{{workflow}}", cli_jstr(wf, "id") ? cli_jstr(wf, "id") : "?"},
	    {"{{node}}", cli_jstr(wf, "nodeId") ? cli_jstr(wf, "nodeId") : "?"},
	    {"{{config_block}}", cb},
	    {"{{ca_block}}", ab},
	    {"{{install}}", install},
	};
	rc = render(p->tmpl ? p->tmpl : default_template, s, p->tmpl ? 6 : sizeof(s) / sizeof(*s),
	            out, len);
out:
	free(cb);
	free(ab);
	free(install);
	return rc;
}

static int read_parts(struct cli *c, struct deploy_parts *p)
{
	const char *file = cli_opt(c, "user-data"), *url = cli_opt(c, "bcd-url");
	int rc;

	memset(p, 0, sizeof(*p));
	if (url != NULL && (strncmp(url, "https://", 8) != 0 || strpbrk(url, "'\"\\ \n") != NULL))
		return cli_usage(
		    c, "--bcd-url: an https:// URL without quotes, spaces or backslashes");
	if (file != NULL && (rc = bc_file_read(file, TEMPLATE_MAX, BC_FILE_FOLLOW | BC_FILE_TEXT,
	                                       &p->tmpl, &p->tmpl_len)) != 0)
		return cli_fail(c, rc, "cannot read the user-data template %s (at most 64 KiB): %s",
		                file, bc_err_str(rc));
	if (p->tmpl != NULL && strstr(p->tmpl, "{{token}}") == NULL)
		return cli_usage(c, "--user-data %s: the template must hold {{token}}", file);
	return cli_bcd_files(c, &p->toml, &p->ca, &p->server);
}

static int deliver(struct cli *c, const json_t *ans, char *text, size_t len)
{
	const char *file = cli_opt(c, "out");
	const json_t *wf = json_object_get(ans, "workflow");
	const char *id = cli_jstr(wf, "id") ? cli_jstr(wf, "id") : "?";

	if (file == NULL) {
		if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
			return cli_fail(c, BC_ERR_IO, "cannot write the user data: %s; cancel %s",
			                strerror(errno), id);
		return 0;
	}
	if (cli_write_file(file, text, len, 0600, cli_out_flags(c)) != 0)
		return cli_fail(c, BC_ERR_IO,
		                "cannot write the user data to %s: %s; cancel workflow %s "
		                "(`workflows cancel %s`) and deploy again",
		                file, strerror(errno), id, id);
	if (c->json)
		return cli_print_json(
		    json_pack("{s:O, s:s}", "workflow", wf, "userDataFile", file));
	printf("Deploy %s of node %s: its user data (with a single-use provisioned token) is in "
	       "%s (mode 0600) and is not shown again.\n",
	       id, cli_jstr(wf, "nodeId") ? cli_jstr(wf, "nodeId") : "?", file);
	return 0;
}

int cli_cmd_machines_deploy(struct cli *c)
{
	const char *file = cli_opt(c, "out");
	char *node = NULL;
	struct deploy_parts p;
	struct cli_resp r = {0};
	char *path = NULL, *text = NULL;
	size_t len = 0;
	json_t *b = NULL;
	int rc, have = 0;

	if (cli_opt(c, "node") == NULL)
		return cli_usage(c, "give --node ID: the node whose OS the deploy installs");
	if ((rc = cli_out_check(c, file)) != 0)
		return rc;
	if ((rc = read_parts(c, &p)) != 0)
		goto out;
	if ((rc = cli_resolve(c, CLI_K_NODE, cli_opt(c, "node"), &node)) != 0)
		goto out;
	if ((b = json_pack("{s:s, s:b}", "nodeId", node, "userDataTemplate", p.tmpl != NULL)) ==
	    NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = cli_opt_ttl(c, b)) != 0 ||
	    (rc = cli_tenant_path(c, &path, "machines", "deploy", NULL)) != 0 ||
	    (rc = cli_api(c, "POST", path, b, &r)) != 0)
		goto out;
	have = 1;
	if (cli_jstr(r.json, "token") == NULL) {
		rc = cli_fail(c, BC_ERR_IO,
		              "the control plane's answer holds no token; is --server a "
		              "`" CLI_NAME " serve` of this version?");
		goto out;
	}
	if ((rc = user_data(c, &p, r.json, &text, &len)) == 0)
		rc = deliver(c, r.json, text, len);
out:
	if (text != NULL)
		bc_freezero(text, len);
	if (have) {
		cli_wipe_member(r.json, "token");
		cli_resp_free(&r);
	}
	json_decref(b);
	free(path);
	free(node);
	parts_free(&p);
	return rc;
}
