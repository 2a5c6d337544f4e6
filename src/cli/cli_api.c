/* The admin API over bc/httpc.h: one JSON request, one JSON answer, and the error
 * object of a refusal printed as "better-compute: CODE: message". */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bc/buf.h"
#include "bc/httpc.h"
#include "bc/json.h"
#include "cli/cli.h"

#define MAX_ANSWER        (16u * 1024 * 1024)
#define CONNECT_TIMEOUT_S 10L
#define MAX_HEADERS       4

void cli_resp_free(struct cli_resp *r)
{
	/* answers may hold a secret shown once (a token, an API key) */
	bc_freezero(r->body, r->len);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

/* The request's headers: lines[0] holds the key (wiped by free_headers). */
struct headers {
	char *lines[MAX_HEADERS];
	size_t n;
};

static void free_headers(struct headers *h)
{
	for (size_t i = 0; i < h->n; i++) {
		bc_freezero(h->lines[i], strlen(h->lines[i]));
		h->lines[i] = NULL;
	}
	h->n = 0;
}

static int make_headers(struct cli *c, int has_body, struct headers *h)
{
	static const char user_agent[] = "User-Agent: " CLI_NAME;
	static const char *const fixed[] = {user_agent, "Accept: application/json",
	                                    "Content-Type: application/json"};
	size_t nfixed = has_body ? 3 : 2;

	h->n = 0;
	if (asprintf(&h->lines[h->n], "Authorization: Bearer %s", c->api_key) < 0)
		return BC_ERR_NOMEM;
	h->n++;
	for (size_t i = 0; i < nfixed; i++) {
		if ((h->lines[h->n] = strdup(fixed[i])) == NULL)
			return BC_ERR_NOMEM;
		h->n++;
	}
	return 0;
}

static int report_transport(struct cli *c, int rc, const char *why)
{
	if (rc == BC_ERR_LIMIT)
		return cli_fail(c, BC_ERR_LIMIT,
		                "the answer of the control plane at %s was larger than %u bytes; "
		                "check --server",
		                c->server, MAX_ANSWER);
	if (rc == BC_ERR_NOMEM)
		return cli_fail(c, BC_ERR_NOMEM, "out of memory");
	if (strncmp(why, "timed out", 9) == 0)
		return cli_fail(c, BC_ERR_UNAVAILABLE,
		                "the control plane at %s did not answer within %lds: %s; is it "
		                "overloaded or hung? (--timeout sets the wait)",
		                c->server, c->timeout_s, why);
	if (rc == BC_ERR_VERIFY || rc == BC_ERR_CONFIG)
		return cli_fail(c, BC_ERR_UNAVAILABLE,
		                "cannot verify the TLS certificate of the control plane at %s: %s; "
		                "pass its CA with --ca-file (the tls-ca.pem `" CLI_NAME
		                " init` wrote)",
		                c->server, why);
	return cli_fail(c, BC_ERR_UNAVAILABLE,
	                "cannot reach the control plane at %s: %s; is `" CLI_NAME
	                " serve` running? (--server, BC_SERVER)",
	                c->server, why);
}

static int code_to_err(const char *code)
{
	if (strcmp(code, "INVALID_INPUT") == 0)
		return BC_ERR_INVALID;
	if (strcmp(code, "ACCESS_DENIED") == 0)
		return BC_ERR_DENIED;
	if (strcmp(code, "NOT_FOUND") == 0)
		return BC_ERR_NOT_FOUND;
	if (strcmp(code, "CONFLICT") == 0)
		return BC_ERR_CONFLICT;
	return BC_ERR_IO;
}

/* The API fields a command fills from a flag whose range only the server knows: it
 * names the field ("token.ttlSeconds: expected an integer from 60 to 31536000"), the
 * person typed the flag, so the message is said again in the flag's terms. The
 * server stays the one home of the limits; each field here holds seconds that the
 * flag took as a duration. (--uses and --limit are checked before sending.) */
static const struct {
	const char *field;
	const char *flag;
} FIELD_FLAGS[] = {{"ttlSeconds", "ttl"}};

/* 90 -> "90s", 3600 -> "1h", 31536000 -> "365d": the largest unit that divides it. */
static void duration_text(long long s, char out[static 24])
{
	if (s > 0 && s % 86400 == 0)
		snprintf(out, 24, "%lldd", s / 86400);
	else if (s > 0 && s % 3600 == 0)
		snprintf(out, 24, "%lldh", s / 3600);
	else if (s > 0 && s % 60 == 0)
		snprintf(out, 24, "%lldm", s / 60);
	else
		snprintf(out, 24, "%llds", s);
}

/* msg as the flag's message into out, or 0 when it names no field of a given flag. */
static int flag_message(const struct cli *c, const char *msg, char *out, size_t outlen)
{
	const char *colon = strstr(msg, ": "), *dot, *given;
	long long lo, hi;
	char a[24], b[24];

	if (colon == NULL)
		return 0;
	for (dot = colon; dot > msg && dot[-1] != '.'; dot--)
		;
	for (size_t i = 0; i < sizeof(FIELD_FLAGS) / sizeof(FIELD_FLAGS[0]); i++) {
		if (strlen(FIELD_FLAGS[i].field) != (size_t)(colon - dot) ||
		    strncmp(dot, FIELD_FLAGS[i].field, (size_t)(colon - dot)) != 0 ||
		    (given = cli_opt(c, FIELD_FLAGS[i].flag)) == NULL)
			continue;
		if (sscanf(colon + 2, "expected an integer from %lld to %lld", &lo, &hi) != 2)
			snprintf(out, outlen, "--%s: %s", FIELD_FLAGS[i].flag, colon + 2);
		else {
			duration_text(lo, a);
			duration_text(hi, b);
			snprintf(out, outlen, "--%s: expected a duration from %s to %s, got \"%s\"",
			         FIELD_FLAGS[i].flag, a, b, given);
		}
		return 1;
	}
	return 0;
}

/* {"error":{"code","message"}}; the text comes from the server, so it is cleaned of
 * control characters before it reaches the terminal. */
static int report_api_error(struct cli *c, const struct cli_resp *r)
{
	const json_t *e = r->json ? json_object_get(r->json, "error") : NULL;
	const char *code = cli_jstr(e, "code"), *msg = cli_jstr(e, "message"), *shown = NULL;
	char *scode, *smsg, flagged[1200];
	int rc;

	if (code == NULL || msg == NULL)
		return cli_fail(
		    c, BC_ERR_IO,
		    "the control plane at %s answered HTTP %ld without an error object; "
		    "check that --server names a `" CLI_NAME " serve`",
		    c->server, r->status);
	scode = strndup(code, 64);
	smsg = strndup(msg, 1024);
	if (scode == NULL || smsg == NULL) {
		free(scode);
		free(smsg);
		return BC_ERR_NOMEM;
	}
	cli_sanitize(scode);
	cli_sanitize(smsg);
	if (strcmp(scode, "INVALID_INPUT") == 0 && flag_message(c, smsg, flagged, sizeof(flagged)))
		shown = flagged;
	rc = cli_error(c, code_to_err(code), scode, "%s%s", shown ? shown : smsg,
	               r->status == 401 ? " (check the API key: --api-key-file, BC_API_KEY_FILE, "
	                                  "BC_API_KEY)"
	                                : "");
	free(scode);
	free(smsg);
	return rc;
}

static int perform(struct cli *c, const char *method, const char *url, const char *body,
                   struct cli_resp *out)
{
	struct headers h = {{NULL}, 0};
	/* no redirects are followed: one would carry the Authorization header elsewhere;
	 * the proxy of the environment for https only (the key never crosses a plain one) */
	struct bc_httpc_req q = {
	    .method = method,
	    .url = url,
	    .body = strcmp(method, "GET") != 0 ? (body != NULL ? body : "") : NULL,
	    .len = strcmp(method, "GET") != 0 && body != NULL ? strlen(body) : 0,
	    .ca_file = c->ca_file,
	    .use_proxy = strncmp(url, "https://", 8) == 0,
	    .connect_timeout_ms =
	        (int)(c->timeout_s < CONNECT_TIMEOUT_S ? c->timeout_s : CONNECT_TIMEOUT_S) * 1000,
	    .timeout_ms = (int)c->timeout_s * 1000,
	    .max = MAX_ANSWER};
	struct bc_httpc_resp r;
	char why[512];
	int rc;

	if ((rc = make_headers(c, body != NULL, &h)) != 0)
		goto out;
	q.headers = (const char *const *)h.lines;
	q.n_headers = h.n;
	if ((rc = bc_httpc_run(&q, &r, why, sizeof(why))) != 0) {
		rc = report_transport(c, rc, why);
		goto out;
	}
	out->status = r.status;
	out->len = r.len;
	out->body = r.body != NULL ? r.body : strdup("");
	r.body = NULL;
	if (out->body == NULL)
		rc = BC_ERR_NOMEM;
	bc_httpc_resp_free(&r);
out:
	free_headers(&h);
	return rc;
}

static int parse_answer(struct cli *c, struct cli_resp *r)
{
	char err[200];

	if (r->len > 0 &&
	    bc_json_parse(r->body, r->len, MAX_ANSWER, &r->json, err, sizeof(err)) != 0)
		r->json = NULL;
	if (r->status >= 200 && r->status < 300) {
		if (r->json == NULL || !json_is_object(r->json))
			return cli_fail(
			    c, BC_ERR_IO,
			    "the control plane at %s answered HTTP %ld with something "
			    "other than a JSON object; check that --server names a `" CLI_NAME
			    " serve`",
			    c->server, r->status);
		return 0;
	}
	return report_api_error(c, r);
}

int cli_api(struct cli *c, const char *method, const char *path, json_t *body, struct cli_resp *out)
{
	char *url = NULL, *text = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = cli_connect(c)) != 0)
		return rc;
	if (asprintf(&url, "%s%s", c->server, path) < 0)
		return BC_ERR_NOMEM;
	if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = perform(c, method, url, text, out)) != 0)
		goto out;
	rc = parse_answer(c, out);
out:
	if (rc != 0)
		cli_resp_free(out);
	free(text);
	free(url);
	return rc;
}

int cli_tenant(struct cli *c, const char **out)
{
	struct cli_resp r;
	const char *t;
	int rc;

	*out = NULL;
	/* --tenant takes a name too: resolved once, through /v1/tenants */
	if (c->tenant == NULL && c->opt_tenant != NULL &&
	    (rc = cli_resolve(c, CLI_K_TENANT, c->opt_tenant, &c->tenant)) != 0)
		return rc;
	if (c->tenant != NULL) {
		*out = c->tenant;
		return 0;
	}
	if ((rc = cli_api(c, "GET", "/v1/whoami", NULL, &r)) != 0)
		return rc;
	if ((t = cli_jstr(r.json, "tenantId")) == NULL || t[0] == '\0')
		rc = cli_fail(c, BC_ERR_IO,
		              "GET /v1/whoami answered without a tenantId; "
		              "pass --tenant T");
	else if ((c->tenant = strdup(t)) == NULL)
		rc = BC_ERR_NOMEM;
	cli_resp_free(&r);
	*out = c->tenant;
	return rc;
}

/* Path segments are ids. The server decodes %2F before it routes, and an HTTP
 * client or proxy may fold "." and ".." away, so anything but an id's characters could aim the
 * request at another route: refused rather than escaped. */
static int check_segment(struct cli *c, const char *seg)
{
	static const char id_chars[] = "abcdefghijklmnopqrstuvwxyz"
	                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

	if (seg[0] == '\0' || strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0 ||
	    strspn(seg, id_chars) != strlen(seg))
		return cli_usage(c, "\"%s\" is not an id (letters, digits, '.', '_' and '-')", seg);
	return 0;
}

static int add_segment(struct cli *c, char **path, const char *seg)
{
	char *np = NULL;
	int rc;

	if ((rc = check_segment(c, seg)) != 0)
		return rc;
	if (asprintf(&np, "%s/%s", *path, seg) < 0)
		return BC_ERR_NOMEM;
	free(*path);
	*path = np;
	return 0;
}

int cli_tenant_path(struct cli *c, char **out, ...)
{
	const char *tenant, *seg;
	char *path = NULL;
	va_list ap;
	int rc = 0;

	*out = NULL;
	/* the ids the user gave are checked before anything goes to the network */
	va_start(ap, out);
	while (rc == 0 && (seg = va_arg(ap, const char *)) != NULL)
		rc = check_segment(c, seg);
	va_end(ap);
	if (rc != 0 || (rc = cli_connect(c)) != 0 || (rc = cli_tenant(c, &tenant)) != 0)
		return rc;
	if ((path = strdup("/v1/tenants")) == NULL)
		return BC_ERR_NOMEM;
	rc = add_segment(c, &path, tenant);
	va_start(ap, out);
	while (rc == 0 && (seg = va_arg(ap, const char *)) != NULL)
		rc = add_segment(c, &path, seg);
	va_end(ap);
	if (rc != 0) {
		free(path);
		return rc;
	}
	*out = path;
	return 0;
}

int cli_list_path(struct cli *c, char **out, const char *what, const char *const *kv, size_t n)
{
	static const char *const page[] = {"cursor", "limit"};
	const char *all[2 * 14];
	char *path = NULL, *q = NULL;
	size_t k = 0;
	int rc;

	*out = NULL;
	if (n > 12)
		return BC_ERR_INVALID;
	for (; k < 2 * n; k++)
		all[k] = kv[k];
	for (size_t i = 0; i < 2; i++) {
		int given = 0;
		for (size_t j = 0; j < n; j++)
			given |= strcmp(kv[2 * j], page[i]) == 0;
		if (!given) {
			all[k++] = page[i];
			all[k++] = cli_opt(c, page[i]);
		}
	}
	if ((rc = cli_tenant_path(c, &path, what, NULL)) == 0 &&
	    (rc = cli_query(c, &q, all, k / 2)) == 0 && asprintf(out, "%s%s", path, q) < 0) {
		*out = NULL;
		rc = BC_ERR_NOMEM;
	}
	free(path);
	free(q);
	return rc;
}

int cli_query(struct cli *c, char **out, const char *const *kv, size_t n)
{
	char *q, *np, *esc;
	int rc = 0;

	*out = NULL;
	if ((q = strdup("")) == NULL)
		return BC_ERR_NOMEM;
	for (size_t i = 0; rc == 0 && i + 1 < 2 * n; i += 2) {
		if (kv[i + 1] == NULL)
			continue;
		if ((esc = bc_httpc_escape(kv[i + 1])) == NULL) {
			rc = BC_ERR_NOMEM;
			break;
		}
		if (asprintf(&np, "%s%c%s=%s", q, q[0] ? '&' : '?', kv[i], esc) < 0)
			rc = BC_ERR_NOMEM;
		else {
			free(q);
			q = np;
		}
		free(esc);
	}
	if (rc != 0) {
		free(q);
		return rc;
	}
	*out = q;
	return 0;
}

void cli_wipe_member(json_t *obj, const char *key)
{
	json_t *v = obj ? json_object_get(obj, key) : NULL;

	/* jansson frees strings without wiping: clear the bytes it holds first */
	if (json_is_string(v))
		OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
}

void cli_print_raw(const struct cli_resp *r)
{
	fwrite(r->body, 1, r->len, stdout);
	if (r->len == 0 || r->body[r->len - 1] != '\n')
		fputc('\n', stdout);
}

int cli_delete(struct cli *c, char *path, const char *what, const char *id)
{
	struct cli_resp r;
	int rc;

	if ((rc = cli_api(c, "DELETE", path, NULL, &r)) == 0) {
		if (c->json)
			cli_print_raw(&r);
		else
			printf("%s %s deleted\n", what, id);
		cli_resp_free(&r);
	}
	free(path);
	return rc;
}
