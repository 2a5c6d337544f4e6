/* Internal to the cloud-iid attestor: its configuration (cloud_iid_config.c), the
 * JWKS cache (cloud_iid_jwks.c), the AWS document (cloud_iid_aws.c) and the attestor
 * (cloud_iid.c). */
#ifndef BC_ATTEST_CLOUD_IID_H
#define BC_ATTEST_CLOUD_IID_H

#include <openssl/x509.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/attestor.h"
#include "bc/jws.h"
#include "bc/toml.h"
#include "bc/wire.h"

#define CLOUD_ID           BC_WIRE_ATTESTOR_CLOUD_IID
#define CLOUD_BINDING_KIND "cloud-iid"
#define CLOUD_GCP_ISSUER   "https://accounts.google.com"
#define CLOUD_GCP_JWKS     "https://www.googleapis.com/oauth2/v3/certs"
#define CLOUD_JWKS_TTL_MS  (3600LL * 1000)
#define CLOUD_REFETCH_MS   (60LL * 1000)
#define CLOUD_LEEWAY_MS    (60LL * 1000)
#define CLOUD_FIELD_MAX    128
#define CLOUD_OIDC_MAX     16
#define CLOUD_LIST_MAX     256

/* How long a join waits for a JWKS load it needs (no set yet, or an unknown kid),
 * in real time, and how many joins of one source wait at once: the rest go on at
 * once with the set there is. */
#define CLOUD_JWKS_WAIT_MS 2000
#define CLOUD_JWKS_WAITERS 4

/* A key set from a file (read at configure, and again after a SIGHUP) or an https URL (loaded by
 * the source's refresher thread: at start, after an hour, and on an unknown kid at
 * most once a minute). cloud_iid_jwks.c says who waits for what. */
struct jwks_ref {
	bc_jwks *keys;
	int refs;
};

struct jwks_src {
	char *location; /* a file name, or an https (or loopback http) URL */
	int is_url;
	char *ca_file; /* NULL: the system store */
	pthread_mutex_t mu;
	pthread_cond_t work; /* the refresher waits for want or stop */
	pthread_cond_t done; /* joins wait for loads to grow (CLOCK_MONOTONIC) */
	struct jwks_ref *cur;
	int64_t loaded_ms; /* the last successful load */
	int64_t tried_ms;  /* the last load asked for */
	uint64_t loads;    /* loads ended, successful or not */
	int want, loading, stop, waiters;
	char last_err[512]; /* why the last load failed; "" after a success */
	uint64_t gen;       /* a file: the bc_reload_generation() it was read under */
	pthread_t thread;
	int inited, conds, has_thread;
};

/* The current set (a reference: jwks_put it). A file is read again first when a
 * SIGHUP came since it was read. For a URL: a stale set asks the
 * refresher for a new one and is returned meanwhile; no set, or one without kid
 * (NULL: none asked for), asks for a load (at most once a minute) and waits for it
 * as the file's top comment says. Never fetches. NULL when there is no set; err says
 * why. */
struct jwks_ref *jwks_get(struct jwks_src *s, int64_t now_ms, const char *kid, char *err,
                          size_t errlen);
void jwks_put(struct jwks_src *s, struct jwks_ref *r);
/* Configure: a file is read now (refused when others may write it: BC_ERR_DENIED
 * reported as BC_ERR_CONFIG, err the chmod to run); a URL must be https or loopback
 * http, and its refresher starts its first load. jwks_src_clear stops it. */
BC_WUR int jwks_src_init(struct jwks_src *s, const char *location, const char *ca_file, char *err,
                         size_t errlen);
void jwks_src_clear(struct jwks_src *s);

struct str_list {
	char **v;
	size_t n;
};
int str_list_has(const struct str_list *l, const char *s); /* 1 when empty too */

struct jwt_provider {
	char name[80]; /* "gcp" or "oidc.<id>": the subject's provider */
	char *issuer;
	char *audience; /* the token's aud is this + "#" + hex sha256(csr) */
	struct jwks_src jwks;
	struct str_list allowed; /* projects or accounts; empty: any */
	const char *algs[2];
	size_t n_algs;
	int64_t max_age_ms;
	/* oidc: dotted claim paths */
	char *account_claim, *instance_claim, *zone_claim;
};

struct aws_region {
	char *name; /* a region, or "*" */
	STACK_OF(X509) * certs;
};

struct aws_cfg {
	struct aws_region *regions;
	size_t n_regions;
	STACK_OF(X509) * all; /* every certificate, for PKCS7_verify's signer lookup */
	struct str_list accounts;
	int64_t max_age_ms;
};

struct resolve_rule {
	char *name;
	char *provider, *account, *zone, *region; /* zone, region: NULL for any */
	/* the request's role, the machine's claimed product UUID (canonical): NULL for any */
	char *role, *product_uuid;
	char tenant[BC_ID_MAX], pool[BC_ID_MAX], site[BC_ID_MAX];
	char node[BC_ID_MAX]; /* "" or the known node the instance re-keys in place */
};

struct cloud_cfg {
	struct jwt_provider *gcp;
	struct aws_cfg *aws;
	struct jwt_provider *oidc[CLOUD_OIDC_MAX];
	size_t n_oidc;
	struct resolve_rule *rules;
	size_t n_rules;
	const char *roles[2];
	size_t n_roles;
};

BC_WUR int cloud_cfg_load(const bc_toml *t, const char *table, struct cloud_cfg **out, char *err,
                          size_t errlen);
void cloud_cfg_free(struct cloud_cfg *c);

/* What check() proved: who the instance is. */
struct cloud_identity {
	char provider[80];
	char account[CLOUD_FIELD_MAX];
	char instance[CLOUD_FIELD_MAX];
	char zone[CLOUD_FIELD_MAX];
	char region[CLOUD_FIELD_MAX];
	char subject_hex[65]; /* sha256(provider 0x00 account 0x00 instance) */
};

/* The AWS document: rsa2048 (PKCS#7 SignedData) when present, and then document
 * must be the content it signed; else signature over the document's bytes; the
 * identity read only from the bytes that verified. 0 with *reason set on a refusal. */
BC_WUR int aws_check(const struct aws_cfg *c, const char *document, size_t doclen,
                     const uint8_t *sig, size_t siglen, const uint8_t *p7, size_t p7len,
                     int64_t now_ms, struct cloud_identity *id, const char **reason);
/* The AWS identity document's JSON (exact bytes) into id; BC_ERR_INVALID. *pending_ms
 * its pendingTime. Exposed for the fuzz target. */
BC_WUR int aws_parse_document(const char *doc, size_t len, struct cloud_identity *id,
                              int64_t *pending_ms);

#endif
