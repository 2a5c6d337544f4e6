/* The agent's pins: what `better-compute daemon config --json` printed. Everything the
 * client later trusts comes from here, so every field is checked before use. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/httpc.h"
#include "bc/json.h"
#include "bc/net.h"
#include "bc/pki.h"
#include "client/internal.h"

#define PINS_MAX_JSON (256u * 1024)

void bc_client_pins_free(struct bc_client_pins *p)
{
	if (p == NULL)
		return;
	free(p->server_url);
	free(p->join_signing_kid);
	EVP_PKEY_free(p->join_signing);
	EVP_PKEY_free(p->join_encryption);
	free(p->ca_bundle_pem);
	free(p->trust_domain);
	for (size_t i = 0; i < p->n_keys; i++)
		EVP_PKEY_free(p->keys[i].key);
	memset(p, 0, sizeof(*p));
}

/* The config's pair as the first two pins (active): the set every later statement
 * changes. */
static int pin_pair(struct bc_client_pins *p)
{
	EVP_PKEY *keys[2] = {p->join_signing, p->join_encryption};

	for (size_t i = 0; i < 2; i++) {
		struct bc_client_pin *k = &p->keys[i];
		int rc;
		k->use = i == 0 ? BC_JOIN_KEY_SIGNING : BC_JOIN_KEY_ENCRYPTION;
		k->state = BC_JOIN_KEY_ACTIVE;
		if ((rc = bc_key_id(keys[i], k->kid)) != 0 ||
		    (rc = bc_p256_public_point(keys[i], k->point)) != 0)
			return rc;
		if (EVP_PKEY_up_ref(keys[i]) != 1)
			return BC_ERR_NOMEM;
		k->key = keys[i];
		p->n_keys = i + 1;
	}
	return 0;
}

static int path_ok(const char *path)
{
	for (const char *c = path; *c != '\0'; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr("/._~-", *c) != NULL))
			return 0;
	}
	return 1;
}

/* Parsed with the HTTP client's own URL parser (bc_httpc_url_parse), so the host checked
 * here is the host it connects to later. The URL kept is its normal form (the scheme in
 * lower case) without a trailing '/'. */
static int check_url(const char *url, char **out, int *https, char *err, size_t errlen)
{
	struct bc_httpc_url u;
	const char *why;
	char port[8] = "";
	int v6, n;

	*out = NULL;
	*https = 0;
	if (bc_httpc_url_parse(url, &u, &why) != 0) {
		bc_errf(err, errlen,
		        strstr(why, "user information") != NULL
		            ? "pins: server: only scheme, host, port and a plain path are allowed"
		            : "pins: server: not a URL");
		return BC_ERR_CONFIG;
	}
	if (strchr(u.host, '%') != NULL || !path_ok(u.path)) {
		bc_errf(err, errlen,
		        "pins: server: only scheme, host, port and a plain path are allowed");
		return BC_ERR_CONFIG;
	}
	if (!u.tls && !bc_net_host_is_loopback(u.host)) {
		bc_errf(err, errlen,
		        "pins: server: must be https://, or http:// on a loopback address");
		return BC_ERR_CONFIG;
	}
	*https = u.tls;
	if (u.port_given)
		snprintf(port, sizeof(port), ":%u", u.port);
	v6 = strchr(u.host, ':') != NULL;
	n = (int)strlen(u.path);
	while (n > 0 && u.path[n - 1] == '/')
		n--;
	if (asprintf(out, "%s://%s%s%s%s%.*s", u.tls ? "https" : "http", v6 ? "[" : "", u.host,
	             v6 ? "]" : "", port, n, u.path) < 0) {
		*out = NULL;
		return BC_ERR_NOMEM;
	}
	return 0;
}

/* A non-empty string field; required says whether absence is an error
 * (otherwise *v is NULL and 0 is returned). */
static int get_field(const json_t *j, const char *field, int required, const char **v, char *err,
                     size_t errlen)
{
	int rc = bc_json_get_string(j, field, v);

	if (rc == BC_ERR_NOT_FOUND && !required) {
		*v = NULL;
		return 0;
	}
	if (rc == BC_ERR_NOT_FOUND) {
		bc_errf(err, errlen, "pins: %s: missing", field);
		return BC_ERR_CONFIG;
	}
	if (rc != 0 || *v == NULL) {
		bc_errf(err, errlen, "pins: %s: not a string", field);
		return BC_ERR_CONFIG;
	}
	if (**v == '\0') {
		bc_errf(err, errlen, "pins: %s: empty", field);
		return BC_ERR_CONFIG;
	}
	return 0;
}

static int is_p256(EVP_PKEY *k)
{
	char name[64];

	return EVP_PKEY_is_a(k, "EC") &&
	       EVP_PKEY_get_group_name(k, name, sizeof(name), NULL) == 1 &&
	       strcmp(name, SN_X9_62_prime256v1) == 0;
}

static int read_key(const json_t *j, const char *field, EVP_PKEY **out, char *err, size_t errlen)
{
	const char *pem;
	int rc;

	*out = NULL;
	if ((rc = get_field(j, field, 1, &pem, err, errlen)) != 0)
		return rc;
	if (bc_pubkey_from_pem(pem, strlen(pem), out) != 0 || !is_p256(*out)) {
		EVP_PKEY_free(*out);
		*out = NULL;
		bc_errf(err, errlen, "pins: %s: not a P-256 public key PEM", field);
		return BC_ERR_CONFIG;
	}
	return 0;
}

static int read_kid(const json_t *j, struct bc_client_pins *p, char *err, size_t errlen)
{
	char kid[BC_KEY_ID_LEN + 1];
	const char *v;
	int rc;

	if ((rc = get_field(j, "joinSigningKeyId", 1, &v, err, errlen)) != 0)
		return rc;
	if ((rc = bc_key_id(p->join_signing, kid)) != 0) {
		bc_errf(err, errlen, "pins: joinSigningKey: cannot compute its key id");
		return rc;
	}
	if (strcmp(v, kid) != 0) {
		bc_errf(err, errlen, "pins: joinSigningKeyId: does not match joinSigningKey");
		return BC_ERR_CONFIG;
	}
	if ((p->join_signing_kid = strdup(kid)) == NULL)
		return BC_ERR_NOMEM;
	return 0;
}

/* Every PEM block must be a certificate that parses, and there must be one at least. */
static int check_ca_bundle(const char *pem, char *err, size_t errlen)
{
	BIO *b;
	X509 *x;
	unsigned long e;
	int n = 0;

	if ((b = BIO_new_mem_buf(pem, -1)) == NULL)
		return BC_ERR_NOMEM;
	ERR_clear_error();
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		X509_free(x);
		n++;
	}
	e = ERR_peek_last_error();
	ERR_clear_error();
	BIO_free(b);
	if (n == 0 || ERR_GET_LIB(e) != ERR_LIB_PEM || ERR_GET_REASON(e) != PEM_R_NO_START_LINE) {
		bc_errf(err, errlen, "pins: caBundle: certificate %d is not a PEM certificate",
		        n + 1);
		return BC_ERR_CONFIG;
	}
	return 0;
}

/* The CA bundle pins the server's TLS, so an https server needs one; a loopback
 * http server may go without. */
static int read_ca_bundle(const json_t *j, int https, struct bc_client_pins *p, char *err,
                          size_t errlen)
{
	const char *v;
	int rc;

	if ((rc = get_field(j, "caBundle", https, &v, err, errlen)) != 0)
		return rc;
	if (v == NULL)
		return 0;
	if ((rc = check_ca_bundle(v, err, errlen)) != 0)
		return rc;
	if ((p->ca_bundle_pem = strdup(v)) == NULL)
		return BC_ERR_NOMEM;
	return 0;
}

int bc_client_pins_set_server(struct bc_client_pins *p, const char *url, char *err, size_t errlen)
{
	char *norm = NULL;
	int https, rc;

	bc_errf(err, errlen, "%s", "");
	if (p == NULL || url == NULL)
		return BC_ERR_INVALID;
	if ((rc = check_url(url, &norm, &https, err, errlen)) != 0)
		return rc;
	/* the rule read_ca_bundle applies: TLS is verified against the pinned CA only */
	if (https && p->ca_bundle_pem == NULL) {
		free(norm);
		bc_errf(err, errlen, "pins: server: https needs the pinned caBundle");
		return BC_ERR_CONFIG;
	}
	free(p->server_url);
	p->server_url = norm;
	return 0;
}

static int read_trust_domain(const json_t *j, struct bc_client_pins *p, char *err, size_t errlen)
{
	const char *v;
	int rc;

	if ((rc = get_field(j, "trustDomain", 0, &v, err, errlen)) != 0 || v == NULL)
		return rc;
	if (!bc_trust_domain_valid(v)) {
		bc_errf(err, errlen,
		        "pins: trustDomain: not a trust domain ([a-z0-9.-], 1 to 255)");
		return BC_ERR_CONFIG;
	}
	if ((p->trust_domain = strdup(v)) == NULL)
		return BC_ERR_NOMEM;
	return 0;
}

int bc_client_pins_from_json(const char *json, size_t len, struct bc_client_pins *out, char *err,
                             size_t errlen)
{
	struct bc_client_pins p;
	json_t *j = NULL;
	const char *url;
	char jerr[160];
	int rc, https = 0;

	memset(&p, 0, sizeof(p));
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	bc_errf(err, errlen, "%s", "");
	if (json == NULL || out == NULL) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if (bc_json_parse(json, len, PINS_MAX_JSON, &j, jerr, sizeof(jerr)) != 0) {
		bc_errf(err, errlen, "pins: not valid JSON: %s", jerr);
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if (!json_is_object(j)) {
		bc_errf(err, errlen, "pins: not a JSON object");
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if ((rc = get_field(j, "server", 1, &url, err, errlen)) != 0)
		goto out;
	if ((rc = check_url(url, &p.server_url, &https, err, errlen)) != 0)
		goto out;
	if ((rc = read_key(j, "joinSigningKey", &p.join_signing, err, errlen)) != 0)
		goto out;
	/* every answer is verified under it: its point is encoded once, here */
	if ((rc = bc_p256_public_point(p.join_signing, p.join_signing_point)) != 0) {
		bc_errf(err, errlen, "pins: joinSigningKey: cannot encode its point");
		goto out;
	}
	if ((rc = read_kid(j, &p, err, errlen)) != 0)
		goto out;
	if ((rc = read_key(j, "joinEncryptionKey", &p.join_encryption, err, errlen)) != 0)
		goto out;
	if ((rc = read_ca_bundle(j, https, &p, err, errlen)) != 0)
		goto out;
	if ((rc = read_trust_domain(j, &p, err, errlen)) != 0)
		goto out;
	if ((rc = pin_pair(&p)) != 0)
		goto out;
	*out = p;
	memset(&p, 0, sizeof(p));
out:
	if (rc == BC_ERR_NOMEM)
		bc_errf(err, errlen, "pins: out of memory");
	bc_client_pins_free(&p);
	json_decref(j);
	return rc;
}
