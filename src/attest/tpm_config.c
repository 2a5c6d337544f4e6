/* [attestors.tpm] in server.toml, and the files it names (ek_roots, resolve,
 * pcr_policy). Every key is checked; an unknown one is an error naming it. */
#include <ctype.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/tpm_internal.h"
#include "bc/codec.h"
#include "bc/files.h"
#include "bc/json.h"
#include "bc/toml.h"

#define FILE_MAX  (1024 * 1024)
#define ROOTS_MAX 64

static const char *const KEYS[] = {"ek_roots",
                                   "allow_uncertified_ek",
                                   "pcr_bank",
                                   "pcrs",
                                   "pcr_policy",
                                   "pcr_policy_command",
                                   "resolve",
                                   "enrollment_tenant",
                                   "enrollment_site",
                                   "enrollment_pool",
                                   "pending_ttl_seconds",
                                   "retry_after_seconds",
                                   "challenge_ttl_ms",
                                   "node_key",
                                   "roles",
                                   NULL};

static int fail(char *err, size_t errlen, const char *table, const char *key, const char *what)
{
	snprintf(err, errlen, "[%s] %s: %s", table, key, what);
	return BC_ERR_CONFIG;
}

/* PEM (one or more certificates) or one DER certificate. */
static int load_roots(struct tpm_cfg *c, const char *path)
{
	char *text = NULL;
	size_t len;
	BIO *bio = NULL;
	X509 *x;
	int rc, n = 0;

	/* DER is binary: no BC_FILE_TEXT */
	if ((rc = bc_file_read(path, FILE_MAX, BC_FILE_FOLLOW, &text, &len)) != 0)
		return rc;
	if (strstr(text, "-----BEGIN") != NULL) {
		bio = BIO_new_mem_buf(text, (int)len);
		while (bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
			if (c->n_roots == ROOTS_MAX) {
				X509_free(x);
				rc = BC_ERR_LIMIT;
				break;
			}
			c->roots[c->n_roots++] = x;
			n++;
		}
		ERR_clear_error();
	} else {
		const unsigned char *p = (const unsigned char *)text;
		if ((x = d2i_X509(NULL, &p, (long)len)) != NULL && c->n_roots < ROOTS_MAX) {
			c->roots[c->n_roots++] = x;
			n++;
		} else {
			X509_free(x);
		}
		ERR_clear_error();
	}
	BIO_free(bio);
	free(text);
	return rc != 0 ? rc : n > 0 ? 0 : BC_ERR_INVALID;
}

/* "0-7", "0,1,2", or ["0","1"] into c->pcrs. */
static int parse_pcrs(struct tpm_cfg *c, const char *const *items, size_t n)
{
	uint32_t mask = 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = items[i];
		char *end;
		while (*s) {
			unsigned long a = strtoul(s, &end, 10), b;
			if (end == s || a >= TPM_PCR_MAX)
				return BC_ERR_INVALID;
			b = a;
			if (*end == '-') {
				s = end + 1;
				b = strtoul(s, &end, 10);
				if (end == s || b >= TPM_PCR_MAX || b < a)
					return BC_ERR_INVALID;
			}
			for (unsigned long k = a; k <= b; k++)
				mask |= 1u << k;
			if (*end == ',')
				end++;
			else if (*end != 0)
				return BC_ERR_INVALID;
			s = end;
		}
	}
	c->n_pcrs = 0;
	for (uint32_t k = 0; k < TPM_PCR_MAX; k++)
		if (mask & (1u << k))
			c->pcrs[c->n_pcrs++] = k;
	return 0;
}

/* A structured file as JSON: JSON itself, or the TOML subset turned into the same
 * shape (tables are objects, string arrays arrays). */
static json_t *toml_to_json(const bc_toml *t, const char *table)
{
	const char *const *names, *const *keys, *const *arr, *s;
	size_t n, nk, na;
	char path[512];
	json_t *o = json_object();

	if (bc_toml_keys(t, table, &keys, &nk) == 0) {
		for (size_t i = 0; i < nk; i++) {
			snprintf(path, sizeof(path), "%s%s%s", table, table[0] ? "." : "", keys[i]);
			if (bc_toml_get_string(t, path, &s) == 0) {
				json_object_set_new(o, keys[i], json_string(s));
			} else if (bc_toml_get_strings(t, path, &arr, &na) == 0) {
				json_t *a = json_array();
				for (size_t k = 0; k < na; k++)
					json_array_append_new(a, json_string(arr[k]));
				json_object_set_new(o, keys[i], a);
			} else {
				json_object_set_new(o, keys[i], json_null());
			}
		}
	}
	if (bc_toml_tables(t, table, &names, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s%s%s", table, table[0] ? "." : "",
			         names[i]);
			json_object_set_new(o, names[i], toml_to_json(t, path));
		}
	}
	return o;
}

static int load_structured(const char *path, json_t **out, char *why, size_t whylen)
{
	const char *p;
	char *text = NULL;
	bc_toml *t = NULL;
	size_t len;
	int rc;

	*out = NULL;
	/* no BC_FILE_TEXT: both parsers refuse a NUL byte and say where */
	if ((rc = bc_file_read(path, FILE_MAX, BC_FILE_FOLLOW, &text, &len)) != 0) {
		snprintf(why, whylen, "cannot read %s (%s)", path, bc_err_str(rc));
		return rc;
	}
	for (p = text; isspace((unsigned char)*p); p++)
		;
	if (*p == '{')
		rc = bc_json_parse(text, len, FILE_MAX, out, why, whylen);
	else if ((rc = bc_toml_parse(text, len, &t, why, whylen)) == 0)
		*out = toml_to_json(t, "");
	bc_toml_free(t);
	free(text);
	return rc != 0 ? BC_ERR_CONFIG : 0;
}

static int copy_id(char dst[BC_ID_MAX], const json_t *v)
{
	const char *s = json_string_value(v);

	if (v == NULL)
		return 0;
	if (s == NULL || strlen(s) == 0 || strlen(s) >= BC_ID_MAX)
		return BC_ERR_INVALID;
	snprintf(dst, BC_ID_MAX, "%s", s);
	return 0;
}

/* Serial numbers compare as lower-case hex without leading zeros. */
static int norm_serial(const char *in, char out[80])
{
	size_t n = 0;

	if (strncasecmp(in, "0x", 2) == 0)
		in += 2;
	while (*in == '0' && in[1])
		in++;
	for (; *in; in++) {
		if (*in == ':')
			continue;
		if (!isxdigit((unsigned char)*in) || n >= 79)
			return BC_ERR_INVALID;
		out[n++] = (char)tolower((unsigned char)*in);
	}
	out[n] = 0;
	return n ? 0 : BC_ERR_INVALID;
}

static int resolve_entry(struct tpm_place_entry *e, const char *name, const json_t *v, int by_ek,
                         char *why, size_t whylen)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v)) {
		snprintf(why, whylen, "%s: not a table", name);
		return BC_ERR_CONFIG;
	}
	json_object_foreach((json_t *)v, k, x)
	{
		if (strcmp(k, "tenant") && strcmp(k, "pool") && strcmp(k, "site") &&
		    strcmp(k, "node") && (by_ek || (strcmp(k, "issuer") && strcmp(k, "serial")))) {
			snprintf(why, whylen, "%s: unknown key %s", name, k);
			return BC_ERR_CONFIG;
		}
	}
	if (copy_id(e->tenant, json_object_get(v, "tenant")) ||
	    copy_id(e->pool, json_object_get(v, "pool")) ||
	    copy_id(e->site, json_object_get(v, "site")) ||
	    copy_id(e->node, json_object_get(v, "node")) ||
	    (e->tenant[0] == 0 && e->node[0] == 0)) {
		snprintf(why, whylen, "%s: tenant (or node) required, ids of 1 to 63 bytes", name);
		return BC_ERR_CONFIG;
	}
	if (by_ek) {
		uint8_t d[32];
		if (strlen(name) != 64 || bc_hex_decode_to(name, d, 32) != 0) {
			snprintf(why, whylen, "ek.%s: not the hex SHA-256 of an EK", name);
			return BC_ERR_CONFIG;
		}
		for (size_t i = 0; i < 64; i++)
			e->ek_sha256[i] = (char)tolower((unsigned char)name[i]);
		e->ek_sha256[64] = 0;
		return 0;
	}
	const char *iss = json_string_value(json_object_get(v, "issuer"));
	const char *ser = json_string_value(json_object_get(v, "serial"));
	if (iss == NULL || ser == NULL || norm_serial(ser, e->serial) != 0 ||
	    (e->issuer = strdup(iss)) == NULL) {
		snprintf(why, whylen, "certificate.%s: issuer and a hex serial required", name);
		return BC_ERR_CONFIG;
	}
	return 0;
}

static int load_resolve(struct tpm_cfg *c, const char *path, char *why, size_t whylen)
{
	json_t *doc = NULL, *ek, *certs, *v;
	const char *k;
	size_t n;
	int rc;

	if ((rc = load_structured(path, &doc, why, whylen)) != 0)
		return rc;
	ek = json_object_get(doc, "ek");
	certs = json_object_get(doc, "certificate");
	n = json_object_size(ek) + json_object_size(certs);
	if (!json_is_object(doc) ||
	    json_object_size(doc) != (size_t)(ek != NULL) + (size_t)(certs != NULL)) {
		snprintf(why, whylen,
		         "%s: expected only [ek.<sha256>] and [certificate.<name>] tables", path);
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if ((c->resolve = calloc(n ? n : 1, sizeof(*c->resolve))) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	json_object_foreach(ek, k, v)
	{
		if ((rc = resolve_entry(&c->resolve[c->n_resolve++], k, v, 1, why, whylen)) != 0)
			goto out;
	}
	json_object_foreach(certs, k, v)
	{
		if ((rc = resolve_entry(&c->resolve[c->n_resolve++], k, v, 0, why, whylen)) != 0)
			goto out;
	}
out:
	json_decref(doc);
	return rc;
}

/* { "<pcr index>": ["<hex digest>", ...] }: each listed PCR must hold one of its
 * digests; PCRs not listed are not constrained. */
static int load_pcr_policy(struct tpm_cfg *c, const char *path, char *why, size_t whylen)
{
	size_t hs = bc_tpm_hash_size(c->pcr_alg);
	json_t *doc = NULL, *v;
	const char *k;
	char *end;
	int rc;

	if ((rc = load_structured(path, &doc, why, whylen)) != 0)
		return rc;
	rc = BC_ERR_CONFIG;
	if (!json_is_object(doc)) {
		snprintf(why, whylen, "%s: expected PCR index = [digests]", path);
		goto out;
	}
	json_object_foreach(doc, k, v)
	{
		unsigned long i = strtoul(k, &end, 10);
		struct tpm_pcr_allowed *a;
		if (end == k || *end || i >= TPM_PCR_MAX || !json_is_array(v) ||
		    json_array_size(v) == 0) {
			snprintf(why, whylen, "%s: %s: expected a PCR index 0-23 = [hex digests]",
			         path, k);
			goto out;
		}
		a = &c->policy[i];
		if ((a->digests = calloc(json_array_size(v), 64)) == NULL) {
			rc = BC_ERR_NOMEM;
			goto out;
		}
		for (size_t j = 0; j < json_array_size(v); j++) {
			const char *h = json_string_value(json_array_get(v, j));
			if (h == NULL || strlen(h) != 2 * hs ||
			    bc_hex_decode_to(h, a->digests[j], hs) != 0) {
				snprintf(why, whylen, "%s: %s: a digest is not %zu bytes of hex",
				         path, k, hs);
				goto out;
			}
			a->n++;
		}
	}
	c->has_pcr_policy = 1;
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

static int load_strings(struct tpm_cfg *c, const bc_toml *t, const char *table, char *err,
                        size_t errlen)
{
	const char *const *arr;
	const char *s;
	char path[256];
	size_t n;
	int rc;

	snprintf(path, sizeof(path), "%s.ek_roots", table);
	if (bc_toml_get_strings(t, path, &arr, &n) == 0) {
		if ((c->roots = calloc(ROOTS_MAX, sizeof(*c->roots))) == NULL)
			return BC_ERR_NOMEM;
		for (size_t i = 0; i < n; i++)
			if (load_roots(c, arr[i]) != 0)
				return fail(err, errlen, table, "ek_roots", arr[i]);
	} else if (bc_toml_get_string(t, path, &s) != BC_ERR_NOT_FOUND) {
		return fail(err, errlen, table, "ek_roots",
		            "expected an array of certificate files");
	}
	snprintf(path, sizeof(path), "%s.pcrs", table);
	if (bc_toml_get_strings(t, path, &arr, &n) == 0)
		rc = parse_pcrs(c, arr, n);
	else if (bc_toml_get_string(t, path, &s) == 0)
		rc = parse_pcrs(c, &s, 1);
	else
		rc = bc_toml_get_string(t, path, &s) == BC_ERR_NOT_FOUND ? 0 : BC_ERR_INVALID;
	if (rc != 0)
		return fail(err, errlen, table, "pcrs",
		            "expected \"0-7\" or [\"0\", \"1\", ...] of 0-23");
	snprintf(path, sizeof(path), "%s.roles", table);
	if (bc_toml_get_strings(t, path, &arr, &n) == 0) {
		c->n_roles = 0;
		for (size_t i = 0; i < n; i++) {
			if (c->n_roles == 2 || (strcmp(arr[i], "node") && strcmp(arr[i], "site")))
				return fail(err, errlen, table, "roles",
				            "expected node and/or site");
			c->roles[c->n_roles++] = strcmp(arr[i], "node") ? "site" : "node";
		}
		if (c->n_roles == 0)
			return fail(err, errlen, table, "roles", "expected node and/or site");
	} else if (bc_toml_get_int(t, path, &(int64_t){0}) != BC_ERR_NOT_FOUND) {
		return fail(err, errlen, table, "roles", "expected an array of roles");
	}
	return 0;
}

/* Optional typed values: 0 and *set when present, 0 when absent, < 0 wrong type. */
static int opt_string(const bc_toml *t, const char *table, const char *key, const char **out)
{
	char path[256];
	int rc;

	*out = NULL;
	snprintf(path, sizeof(path), "%s.%s", table, key);
	rc = bc_toml_get_string(t, path, out);
	return rc == BC_ERR_NOT_FOUND ? 0 : rc;
}

static int opt_id(const bc_toml *t, const char *table, const char *key, char out[BC_ID_MAX])
{
	const char *s;
	int rc;

	if ((rc = opt_string(t, table, key, &s)) != 0)
		return rc;
	if (s == NULL)
		return 0;
	if (strlen(s) == 0 || strlen(s) >= BC_ID_MAX)
		return BC_ERR_INVALID;
	snprintf(out, BC_ID_MAX, "%s", s);
	return 0;
}

static int load_scalars(struct tpm_cfg *c, const bc_toml *t, const char *table, char *err,
                        size_t errlen)
{
	const char *s;
	char path[256];
	int rc;

	snprintf(path, sizeof(path), "%s.allow_uncertified_ek", table);
	if ((rc = bc_toml_get_bool(t, path, &c->allow_uncertified)) != 0 && rc != BC_ERR_NOT_FOUND)
		return fail(err, errlen, table, "allow_uncertified_ek", "expected true or false");
	if (opt_string(t, table, "pcr_bank", &s) != 0)
		return fail(err, errlen, table, "pcr_bank",
		            "expected \"sha256\", \"sha384\" or \"sha512\"");
	if (s) {
		c->pcr_alg = !strcmp(s, "sha256")   ? TPM2_ALG_SHA256
		             : !strcmp(s, "sha384") ? TPM2_ALG_SHA384
		             : !strcmp(s, "sha512") ? TPM2_ALG_SHA512
		                                    : 0;
		if (c->pcr_alg == 0)
			return fail(err, errlen, table, "pcr_bank",
			            "expected \"sha256\", \"sha384\" or \"sha512\"");
	}
	if (opt_string(t, table, "node_key", &s) != 0 ||
	    (s && strcmp(s, "certified") && strcmp(s, "any")))
		return fail(err, errlen, table, "node_key", "expected \"certified\" or \"any\"");
	c->node_key_any = s && strcmp(s, "any") == 0;
	if (opt_string(t, table, "pcr_policy_command", &s) != 0 || (s && s[0] == 0))
		return fail(err, errlen, table, "pcr_policy_command", "expected a command");
	if (s && (c->policy_cmd = strdup(s)) == NULL)
		return BC_ERR_NOMEM;
	if (bc_attest_opt_int(t, table, "pending_ttl_seconds", 60, 30LL * 86400,
	                      &c->pending_ttl_s) != 0)
		return fail(err, errlen, table, "pending_ttl_seconds", "expected 60 to 2592000");
	if (bc_attest_opt_int(t, table, "retry_after_seconds", 1, 3600, &c->retry_after_s) != 0)
		return fail(err, errlen, table, "retry_after_seconds", "expected 1 to 3600");
	if (bc_attest_opt_int(t, table, "challenge_ttl_ms", 1000, TPM_CHALLENGE_TTL_MAX_MS,
	                      &c->challenge_ttl_ms) != 0)
		return fail(err, errlen, table, "challenge_ttl_ms",
		            "expected 1000 to 300000 (at most 5 minutes)");
	if (opt_id(t, table, "enrollment_tenant", c->enroll_tenant) != 0)
		return fail(err, errlen, table, "enrollment_tenant", "expected a tenant id");
	if (opt_id(t, table, "enrollment_site", c->enroll_site) != 0)
		return fail(err, errlen, table, "enrollment_site", "expected a site id");
	if (opt_id(t, table, "enrollment_pool", c->enroll_pool) != 0)
		return fail(err, errlen, table, "enrollment_pool", "expected a pool id");
	if ((c->enroll_site[0] || c->enroll_pool[0]) && c->enroll_tenant[0] == 0)
		return fail(err, errlen, table, "enrollment_tenant",
		            "required with enrollment_site/pool");
	if (c->enroll_tenant[0] && c->enroll_site[0] == 0)
		return fail(err, errlen, table, "enrollment_site",
		            "required with enrollment_tenant");
	return 0;
}

static int load_files(struct tpm_cfg *c, const bc_toml *t, const char *table, char *err,
                      size_t errlen)
{
	char why[384] = "";
	const char *s;

	if (opt_string(t, table, "resolve", &s) != 0)
		return fail(err, errlen, table, "resolve", "expected a file name");
	if (s && load_resolve(c, s, why, sizeof(why)) != 0)
		return fail(err, errlen, table, "resolve", why);
	if (opt_string(t, table, "pcr_policy", &s) != 0)
		return fail(err, errlen, table, "pcr_policy", "expected a file name");
	if (s && load_pcr_policy(c, s, why, sizeof(why)) != 0)
		return fail(err, errlen, table, "pcr_policy", why);
	return 0;
}

static int check_keys(const bc_toml *t, const char *table, char *err, size_t errlen)
{
	const char *const *keys, *const *subs;
	size_t n, ns;

	if (bc_toml_tables(t, table, &subs, &ns) == 0 && ns > 0)
		return fail(err, errlen, table, subs[0], "unknown table");
	if (bc_toml_keys(t, table, &keys, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (KEYS[k] && strcmp(KEYS[k], keys[i]) != 0)
			k++;
		if (KEYS[k] == NULL)
			return fail(err, errlen, table, keys[i], "unknown key");
	}
	return 0;
}

int tpm_cfg_load(const bc_toml *t, const char *table, struct tpm_cfg **out, char *err,
                 size_t errlen)
{
	static const char *const ALL[] = {"0-7"};
	struct tpm_cfg *c;
	int rc;

	*out = NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return BC_ERR_NOMEM;
	c->pcr_alg = TPM2_ALG_SHA256;
	c->pending_ttl_s = 86400;
	c->retry_after_s = 30;
	c->challenge_ttl_ms = TPM_CHALLENGE_TTL_MAX_MS;
	c->roles[0] = "node";
	c->n_roles = 1;
	(void)parse_pcrs(c, ALL, 1);
	if (t != NULL && ((rc = check_keys(t, table, err, errlen)) != 0 ||
	                  (rc = load_scalars(c, t, table, err, errlen)) != 0 ||
	                  (rc = load_strings(c, t, table, err, errlen)) != 0 ||
	                  (rc = load_files(c, t, table, err, errlen)) != 0))
		goto fail;
	if (c->n_roots == 0 && !c->allow_uncertified) {
		rc = fail(err, errlen, table, "ek_roots",
		          "required (the manufacturer CAs EK certificates chain to), unless "
		          "allow_uncertified_ek = true (labs only)");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	tpm_cfg_free(c);
	return rc;
}

void tpm_cfg_free(struct tpm_cfg *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n_roots; i++)
		X509_free(c->roots[i]);
	free(c->roots);
	for (size_t i = 0; i < c->n_resolve; i++)
		free(c->resolve[i].issuer);
	free(c->resolve);
	for (size_t i = 0; i < TPM_PCR_MAX; i++)
		free(c->policy[i].digests);
	free(c->policy_cmd);
	free(c);
}
