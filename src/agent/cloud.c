/* The cloud-iid producer: the instance identity document from the provider's metadata
 * endpoint, as JoinRequest.attestation {"provider","document"[,"signature","rsa2048"]}.
 *   gcp:  GET /computeMetadata/v1/instance/service-accounts/default/identity
 *         ?audience=<audience>#<hex sha256(csr)>&format=full, Metadata-Flavor: Google;
 *   aws:  IMDSv2: PUT /latest/api/token, then the document, signature and rsa2048
 *         under /latest/dynamic/instance-identity/ with that session token;
 *   oidc: the token from identity_token_file, or what identity_token_command prints
 *         (it gets the audience bound to the CSR in $BCD_AUDIENCE).
 * [cloud] metadata_url replaces the endpoint's base for tests; it must be loopback
 * (or https). The real endpoints are plain http on a link-local address. */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/producer.h"
#include "bc/codec.h"
#include "bc/fetch.h"
#include "bc/httpc.h"
#include "bc/json.h"
#include "bc/proc.h"
#include "bc/wire.h"

#define GCP_BASE  "http://metadata.google.internal"
#define AWS_BASE  "http://169.254.169.254"
#define DOC_MAX   (32 * 1024)
#define URL_MAX   2048
#define TOKEN_TTL "X-aws-ec2-metadata-token-ttl-seconds: 60"

struct cloud {
	char provider[8];
	char *audience;
	char *base; /* NULL: the provider's own endpoint */
	char *token_file;
	char *token_command;
};

static void cloud_free(void *ctx)
{
	struct cloud *c = ctx;

	if (c == NULL)
		return;
	free(c->audience);
	free(c->base);
	free(c->token_file);
	free(c->token_command);
	free(c);
}

/* One request to the metadata endpoint: the provider's base (or [cloud] metadata_url),
 * the path, the method (NULL: GET) and its one header. */
struct md_request {
	const char *def_base;
	const char *path;
	const char *method;
	const char *header;
};

/* q into *out (NUL-terminated) with its status in *status: 200 or 404 (either may be
 * what a caller expects); any other status is BC_ERR_UNAVAILABLE. */
static int get(const struct cloud *c, const struct md_request *q, char **out, long *status,
               char *err, size_t errlen)
{
	const char *hdrs[1] = {q->header};
	char url[URL_MAX];
	size_t len = 0;
	int rc;

	snprintf(url, sizeof(url), "%s%s", c->base ? c->base : q->def_base, q->path);
	struct bc_fetch f = {.url = url,
	                     .method = q->method,
	                     .headers = hdrs,
	                     .n_headers = 1,
	                     .http = c->base ? BC_FETCH_HTTP_LOOPBACK : BC_FETCH_HTTP,
	                     .max = DOC_MAX,
	                     .timeout_s = 10};
	if ((rc = bc_fetch_run(&f, status, out, &len, err, errlen)) != 0)
		return rc;
	if (*status != 200 && *status != 404) {
		snprintf(err, errlen, "%s: HTTP status %ld", url, *status);
		free(*out);
		*out = NULL;
		return BC_ERR_UNAVAILABLE;
	}
	return 0;
}

static char *audience_for(const struct cloud *c, const uint8_t csr_sha256[static 32])
{
	char hex[65], *a = NULL;

	bc_hex_encode_to(csr_sha256, 32, hex);
	if (asprintf(&a, "%s" BC_WIRE_CLOUD_AUDIENCE_SEP "%s", c->audience, hex) < 0)
		return NULL;
	return a;
}

static int gcp_token(const struct cloud *c, const uint8_t csr_sha256[static 32], char **out,
                     char *err, size_t errlen)
{
	struct md_request q = {GCP_BASE, NULL, NULL, "Metadata-Flavor: Google"};
	char path[URL_MAX], *aud = audience_for(c, csr_sha256), *esc = NULL;
	long status;
	int rc;

	if (aud == NULL || (esc = bc_httpc_escape(aud)) == NULL) {
		free(aud);
		return BC_ERR_NOMEM;
	}
	snprintf(path, sizeof(path),
	         "/computeMetadata/v1/instance/service-accounts/default/identity?audience=%s"
	         "&format=full",
	         esc);
	free(esc);
	free(aud);
	q.path = path;
	if ((rc = get(c, &q, out, &status, err, errlen)) == 0 && status != 200) {
		snprintf(err, errlen, "the GCP metadata server has no identity token (HTTP %ld)",
		         status);
		free(*out);
		*out = NULL;
		rc = BC_ERR_UNAVAILABLE;
	}
	return rc;
}

/* Base64 as IMDS serves it (lines) without its white space. */
static void strip_space(char *s)
{
	char *w = s;

	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			*w++ = *s;
	*w = 0;
}

static int aws_parts(const struct cloud *c, char **doc, char **sig, char **p7, char *err,
                     size_t errlen)
{
	static const struct md_request token = {AWS_BASE, "/latest/api/token", "PUT", TOKEN_TTL};
	char *session = NULL, hdr[512];
	struct md_request q = {AWS_BASE, NULL, NULL, hdr};
	long st;
	int rc;

	*doc = *sig = *p7 = NULL;
	if ((rc = get(c, &token, &session, &st, err, errlen)) != 0)
		return rc;
	strip_space(session);
	if (st != 200 || strlen(session) > 400) {
		snprintf(err, errlen, "IMDSv2 gave no session token (HTTP %ld)", st);
		free(session);
		return BC_ERR_UNAVAILABLE;
	}
	snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s", session);
	bc_freezero(session, strlen(session));
	q.path = "/latest/dynamic/instance-identity/document";
	if ((rc = get(c, &q, doc, &st, err, errlen)) != 0 || st != 200) {
		if (rc == 0)
			snprintf(err, errlen, "IMDS has no identity document (HTTP %ld)", st);
		return rc ? rc : BC_ERR_UNAVAILABLE;
	}
	/* rsa2048 is preferred; signature is missing in some regions: either may 404 */
	q.path = "/latest/dynamic/instance-identity/rsa2048";
	if ((rc = get(c, &q, p7, &st, err, errlen)) != 0)
		return rc;
	if (st != 200) {
		free(*p7);
		*p7 = NULL;
	}
	q.path = "/latest/dynamic/instance-identity/signature";
	if ((rc = get(c, &q, sig, &st, err, errlen)) != 0)
		return rc;
	if (st != 200) {
		free(*sig);
		*sig = NULL;
	}
	if (*sig == NULL && *p7 == NULL) {
		snprintf(err, errlen, "IMDS serves neither rsa2048 nor signature");
		return BC_ERR_UNAVAILABLE;
	}
	if (*sig)
		strip_space(*sig);
	if (*p7)
		strip_space(*p7);
	return 0;
}

static int oidc_token(const struct cloud *c, const uint8_t csr_sha256[static 32], char **out,
                      char *err, size_t errlen)
{
	char *aud, *buf;
	size_t len = 0;
	int rc, status = 0;

	*out = NULL;
	if (c->token_file) {
		struct bcd_msg m = {""};
		if ((rc = bcd_read_file(c->token_file, DOC_MAX, out, &len, &m)) != 0)
			snprintf(err, errlen, "%s", m.text);
	} else {
		if ((aud = audience_for(c, csr_sha256)) == NULL ||
		    (buf = malloc(DOC_MAX + 1)) == NULL) {
			free(aud);
			return BC_ERR_NOMEM;
		}
		setenv("BCD_AUDIENCE", aud, 1);
		free(aud);
		rc = bc_proc_run_sh(c->token_command, "", 0, 30000, buf, DOC_MAX, &len, &status);
		if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			snprintf(err, errlen, "identity_token_command failed (%s)",
			         rc ? bc_err_str(rc) : "exit status not 0");
			free(buf);
			return rc ? rc : BC_ERR_UNAVAILABLE;
		}
		*out = buf;
	}
	if (*out)
		strip_space(*out);
	return rc;
}

static int evidence(void *ctx, EVP_PKEY *node_key, const uint8_t csr_sha256[static 32],
                    uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
	const struct cloud *c = ctx;
	char *doc = NULL, *sig = NULL, *p7 = NULL, *text;
	json_t *o;
	int rc;

	(void)node_key;
	*out = NULL;
	*outlen = 0;
	if (strcmp(c->provider, "gcp") == 0)
		rc = gcp_token(c, csr_sha256, &doc, err, errlen);
	else if (strcmp(c->provider, "aws") == 0)
		rc = aws_parts(c, &doc, &sig, &p7, err, errlen);
	else
		rc = oidc_token(c, csr_sha256, &doc, err, errlen);
	if (rc == 0 && (strcmp(c->provider, "aws") != 0))
		strip_space(doc);
	o = rc == 0 ? json_pack("{s:s, s:s, s:s*, s:s*}", "provider", c->provider, "document", doc,
	                        "signature", sig, "rsa2048", p7)
	            : NULL;
	if (rc == 0 && (o == NULL || (text = bc_json_dump(o)) == NULL)) {
		snprintf(err, errlen, "the identity document is not text");
		rc = BC_ERR_INVALID;
	} else if (rc == 0) {
		*out = (uint8_t *)text;
		*outlen = strlen(text);
	}
	json_decref(o);
	free(doc);
	free(sig);
	free(p7);
	return rc;
}

static int answer(void *ctx, const struct bcd_challenge *ch, uint8_t **out, size_t *outlen,
                  char *err, size_t errlen)
{
	(void)ctx;
	*out = NULL;
	*outlen = 0;
	snprintf(err, errlen,
	         BC_WIRE_ATTESTOR_CLOUD_IID " has one round; the server sent a %s challenge",
	         ch->attestor);
	return BC_ERR_UNSUPPORTED;
}

static int dup_opt(char **dst, const char *s)
{
	return s && (*dst = strdup(s)) == NULL ? BC_ERR_NOMEM : 0;
}

int bcd_cloud_producer_new(const struct bcd_config *cfg, const char *provider,
                           const char *token_file, struct bcd_producer **out, char *err,
                           size_t errlen)
{
	struct bcd_producer *p = NULL;
	struct cloud *c;

	*out = NULL;
	provider = provider ? provider : cfg->cloud_provider;
	token_file = token_file ? token_file : cfg->cloud_token_file;
	if (provider == NULL ||
	    (strcmp(provider, "gcp") && strcmp(provider, "aws") && strcmp(provider, "oidc"))) {
		snprintf(err, errlen,
		         "--attestor " BC_WIRE_ATTESTOR_CLOUD_IID
		         " needs --provider gcp, aws or oidc (or "
		         "[cloud] provider)");
		return BC_ERR_INVALID;
	}
	if (strcmp(provider, "aws") != 0 && cfg->cloud_audience == NULL) {
		snprintf(err, errlen,
		         "%s: [cloud] audience is required for --provider %s: the "
		         "audience the control plane's [attestors." BC_WIRE_ATTESTOR_CLOUD_IID
		         ".%s] expects",
		         cfg->path, provider, provider);
		return BC_ERR_CONFIG;
	}
	if (strcmp(provider, "oidc") == 0 && token_file == NULL &&
	    cfg->cloud_token_command == NULL) {
		snprintf(err, errlen,
		         "--provider oidc needs --identity-token-file or [cloud] "
		         "identity_token_command");
		return BC_ERR_CONFIG;
	}
	if (cfg->cloud_metadata_url &&
	    !bc_fetch_url_allowed(cfg->cloud_metadata_url, BC_FETCH_HTTP_LOOPBACK)) {
		snprintf(err, errlen,
		         "%s: [cloud] metadata_url must be https or a loopback http URL "
		         "(it is for tests)",
		         cfg->path);
		return BC_ERR_CONFIG;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL || (p = calloc(1, sizeof(*p))) == NULL) {
		free(c);
		return BC_ERR_NOMEM;
	}
	snprintf(c->provider, sizeof(c->provider), "%s", provider);
	if (dup_opt(&c->audience, cfg->cloud_audience) ||
	    dup_opt(&c->base, cfg->cloud_metadata_url) || dup_opt(&c->token_file, token_file) ||
	    dup_opt(&c->token_command, cfg->cloud_token_command)) {
		cloud_free(c);
		free(p);
		return BC_ERR_NOMEM;
	}
	p->attestor = BC_WIRE_ATTESTOR_CLOUD_IID;
	p->ctx = c;
	p->evidence = evidence;
	p->answer = answer;
	p->free = cloud_free;
	*out = p;
	return 0;
}
