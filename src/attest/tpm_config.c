/* [attestors.tpm] in server.toml, and the files it names (ek_roots, resolve,
 * pcr_policy). The table is read through the attestors' table reader
 * (bc_attest_read_table): an unknown key is an error naming it and the known ones. */
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

/* PEM (one or more certificates) or one DER certificate, in a file others may not
 * change (it decides which TPMs are genuine): BC_ERR_DENIED, why the chmod to run. */
static int load_roots(struct tpm_cfg *c, const char *path, char *why, size_t whylen)
{
	char *text = NULL;
	size_t len;
	BIO *bio = NULL;
	X509 *x;
	int rc, n = 0;

	if ((rc = bc_file_check_mode(path, 0, why, whylen)) != 0)
		return rc;
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

/* What the reader fills, before it is checked and turned into a tpm_cfg. */
struct raw {
	struct bc_toml_strings ek_roots, pcrs, roles;
	int allow_uncertified, pcr_bank, node_key;
	const char *pcr_policy, *policy_cmd, *resolve, *tenant, *site, *pool;
	int64_t pending_ttl_s, retry_after_s, challenge_ttl_ms;
};

static const char *const banks[] = {"sha256", "sha384", "sha512", NULL};
static const uint16_t bank_algs[] = {TPM2_ALG_SHA256, TPM2_ALG_SHA384, TPM2_ALG_SHA512};
static const char *const node_keys[] = {"certified", "any", NULL};

static const struct bc_toml_field fields[] = {
    {.key = "ek_roots",
     .type = BC_TOML_STRINGS,
     .expect = "an array of certificate files",
     BC_TOML_AT(struct raw, ek_roots)},
    {.key = "allow_uncertified_ek",
     .type = BC_TOML_BOOL,
     BC_TOML_AT(struct raw, allow_uncertified)},
    {.key = "pcr_bank", .type = BC_TOML_CHOICE, .choices = banks, BC_TOML_AT(struct raw, pcr_bank)},
    {.key = "pcrs",
     .type = BC_TOML_STRINGS,
     .flags = BC_TOML_ONE_OK,
     .expect = "\"0-7\" or [\"0\", \"1\", ...] of 0-23",
     BC_TOML_AT(struct raw, pcrs)},
    {.key = "pcr_policy",
     .type = BC_TOML_STRING,
     .expect = "a file name",
     BC_TOML_AT(struct raw, pcr_policy)},
    {.key = "pcr_policy_command",
     .type = BC_TOML_STRING,
     .flags = BC_TOML_NONEMPTY,
     .expect = "a command",
     BC_TOML_AT(struct raw, policy_cmd)},
    {.key = "resolve",
     .type = BC_TOML_STRING,
     .expect = "a file name",
     BC_TOML_AT(struct raw, resolve)},
    {.key = "enrollment_tenant",
     .type = BC_TOML_STRING,
     .flags = BC_TOML_NONEMPTY,
     .expect = "a tenant id",
     BC_TOML_AT(struct raw, tenant)},
    {.key = "enrollment_site",
     .type = BC_TOML_STRING,
     .flags = BC_TOML_NONEMPTY,
     .expect = "a site id",
     BC_TOML_AT(struct raw, site)},
    {.key = "enrollment_pool",
     .type = BC_TOML_STRING,
     .flags = BC_TOML_NONEMPTY,
     .expect = "a pool id",
     BC_TOML_AT(struct raw, pool)},
    BC_ATTEST_PENDING_TTL_FIELD(struct raw, pending_ttl_s),
    BC_ATTEST_RETRY_AFTER_FIELD(struct raw, retry_after_s),
    {.key = "challenge_ttl_seconds",
     .type = BC_TOML_SECONDS,
     .min = 1,
     .max = TPM_CHALLENGE_TTL_MAX_MS / 1000,
     .scale = 1000,
     .old = "challenge_ttl_ms",
     .expect = "1 to 300 (seconds: at most 5 minutes)",
     BC_TOML_AT(struct raw, challenge_ttl_ms)},
    {.key = "node_key",
     .type = BC_TOML_CHOICE,
     .choices = node_keys,
     BC_TOML_AT(struct raw, node_key)},
    {.key = "roles",
     .type = BC_TOML_STRINGS,
     .min = 1,
     .max = 2,
     .expect = "node and/or site",
     BC_TOML_AT(struct raw, roles)},
};

/* An id of 1 to 63 bytes ("" was refused by the reader), when set. */
static int set_id(char out[BC_ID_MAX], const char *s)
{
	if (s == NULL)
		return 0;
	if (strlen(s) >= BC_ID_MAX)
		return BC_ERR_INVALID;
	snprintf(out, BC_ID_MAX, "%s", s);
	return 0;
}

static int apply_scalars(struct tpm_cfg *c, const struct raw *r, const char *table, char *err,
                         size_t errlen)
{
	c->allow_uncertified = r->allow_uncertified;
	c->pcr_alg = bank_algs[r->pcr_bank];
	c->node_key_any = r->node_key == 1;
	if (r->policy_cmd && (c->policy_cmd = strdup(r->policy_cmd)) == NULL)
		return BC_ERR_NOMEM;
	c->pending_ttl_s = r->pending_ttl_s;
	c->retry_after_s = r->retry_after_s;
	c->challenge_ttl_ms = r->challenge_ttl_ms;
	if (set_id(c->enroll_tenant, r->tenant) != 0)
		return bc_attest_config_fail(err, errlen, table, "enrollment_tenant",
		                             "expected a tenant id");
	if (set_id(c->enroll_site, r->site) != 0)
		return bc_attest_config_fail(err, errlen, table, "enrollment_site",
		                             "expected a site id");
	if (set_id(c->enroll_pool, r->pool) != 0)
		return bc_attest_config_fail(err, errlen, table, "enrollment_pool",
		                             "expected a pool id");
	if ((c->enroll_site[0] || c->enroll_pool[0]) && c->enroll_tenant[0] == 0)
		return bc_attest_config_fail(err, errlen, table, "enrollment_tenant",
		                             "required with enrollment_site/pool");
	if (c->enroll_tenant[0] && c->enroll_site[0] == 0)
		return bc_attest_config_fail(err, errlen, table, "enrollment_site",
		                             "required with enrollment_tenant");
	return 0;
}

static int apply_lists(struct tpm_cfg *c, const struct raw *r, const char *table, char *err,
                       size_t errlen)
{
	char why[512];

	if (r->ek_roots.v != NULL) {
		if ((c->roots = calloc(ROOTS_MAX, sizeof(*c->roots))) == NULL)
			return BC_ERR_NOMEM;
		for (size_t i = 0; i < r->ek_roots.n; i++) {
			snprintf(why, sizeof(why), "%s", r->ek_roots.v[i]);
			if (load_roots(c, r->ek_roots.v[i], why, sizeof(why)) != 0)
				return bc_attest_config_fail(err, errlen, table, "ek_roots", why);
		}
	}
	if (r->pcrs.v != NULL && parse_pcrs(c, r->pcrs.v, r->pcrs.n) != 0)
		return bc_attest_config_fail(err, errlen, table, "pcrs",
		                             "expected \"0-7\" or [\"0\", \"1\", ...] of 0-23");
	if (r->roles.v != NULL) {
		c->n_roles = 0;
		for (size_t i = 0; i < r->roles.n; i++) {
			if (strcmp(r->roles.v[i], "node") && strcmp(r->roles.v[i], "site"))
				return bc_attest_config_fail(err, errlen, table, "roles",
				                             "expected node and/or site");
			c->roles[c->n_roles++] = strcmp(r->roles.v[i], "node") ? "site" : "node";
		}
	}
	return 0;
}

static int apply_files(struct tpm_cfg *c, const struct raw *r, const char *table, char *err,
                       size_t errlen)
{
	char why[384] = "";

	if (r->resolve && load_resolve(c, r->resolve, why, sizeof(why)) != 0)
		return bc_attest_config_fail(err, errlen, table, "resolve", why);
	if (r->pcr_policy && load_pcr_policy(c, r->pcr_policy, why, sizeof(why)) != 0)
		return bc_attest_config_fail(err, errlen, table, "pcr_policy", why);
	return 0;
}

/* The table through the shared reader, then each value checked and applied. */
static int load(struct tpm_cfg *c, const bc_toml *t, const char *table, char *err, size_t errlen)
{
	struct raw raw = {.pending_ttl_s = BC_ATTEST_PENDING_TTL_S,
	                  .retry_after_s = BC_ATTEST_RETRY_AFTER_S,
	                  .challenge_ttl_ms = TPM_CHALLENGE_TTL_MAX_MS};
	int rc;

	if ((rc = bc_attest_read_table(t, table, fields, BC_ATTEST_N_FIELDS(fields), &raw, err,
	                               errlen)) != 0 ||
	    (rc = apply_scalars(c, &raw, table, err, errlen)) != 0 ||
	    (rc = apply_lists(c, &raw, table, err, errlen)) != 0)
		return rc;
	return apply_files(c, &raw, table, err, errlen);
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
	c->roles[0] = "node";
	c->n_roles = 1;
	(void)parse_pcrs(c, ALL, 1);
	if ((rc = load(c, t, table, err, errlen)) != 0)
		goto fail;
	if (c->n_roots == 0 && !c->allow_uncertified) {
		rc = bc_attest_config_fail(
		    err, errlen, table, "ek_roots",
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
