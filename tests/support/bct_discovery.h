/* Test support for the discovery attestor: a site node (a boot server) joined with a
 * site token, which takes the site's lease, fetches discovery tokens and signs
 * assertions, and a ramdisk joining with them; commission workflows made in the store.
 * Failures fail the cmocka test; what a function fills is the caller's to free. */
#ifndef BCT_DISCOVERY_H
#define BCT_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "bc/client.h"
#include "bc/crypto.h"
#include "bctest.h"

/* A site node: its key, its chain and the caller the client library takes. */
struct bct_site_node {
	EVP_PKEY *key;
	struct bc_join_answer ans;
	struct bc_signer signer;
	struct bc_site_caller c;
	uint64_t epoch; /* of the lease it last held */
};

/* A site node of tenant's site (its id: site, which must outlive s) joined on on. */
void bct_site_node(struct bct_cp *on, const char *tenant, const char *site,
                   struct bct_site_node *s);
void bct_site_node_free(struct bct_site_node *s);
/* The lease call k for s (ttl 0: the server's default): the client's status; s->epoch
 * follows a lease it holds. */
int bct_lease(struct bct_cp *on, struct bct_site_node *s, enum bc_lease_call k, uint32_t ttl,
              struct bc_lease_answer *a);
/* FetchSecret by s for workflow wf ("" none) and mac: the token (malloc'd) with *rc 0,
 * its expiry checked to be within 15 minutes; NULL with *rc the client's status. */
char *bct_fetch_token(struct bct_cp *on, struct bct_site_node *s, const char *wf, const char *mac,
                      int *rc);
/* A running commission workflow of tenant's site for mac (and uuid, node: may be NULL),
 * its id in wf. */
void bct_commission(struct bct_cp *on, const char *tenant, const char *site, const char *mac,
                    const char *uuid, const char *node, char wf[64]);

struct bct_assertion {
	const char *site;
	const char *signer;
	uint64_t epoch;
	const char *mac;
	const char *uuid;
	const char *wf;
	int64_t issued_at;
	int64_t not_after;
	EVP_PKEY *key;
};

/* The assertion s's boot server signs now for mac (and wf, uuid: may be NULL), valid
 * 10 minutes; a test alters a field before signing it. */
struct bct_assertion bct_vouch(struct bct_site_node *s, const char *mac, const char *wf,
                               const char *uuid);
/* a signed by a->key: malloc'd bytes, their length in *len. */
uint8_t *bct_assertion_sign(const struct bct_assertion *a, size_t *len);

struct bct_ramdisk {
	const char *token;
	const uint8_t *att;
	size_t att_len;
	const char *mac;  /* claimed */
	const char *uuid; /* claimed */
	const uint8_t *csr;
	size_t csr_len;
	EVP_PKEY *key; /* NULL: a fresh one */
	const char *serial;
};

/* r joins on on by discovery as ramdisk: bct_join's status (the refusal printed under
 * env BCT_LOG). */
int bct_ramdisk_join(struct bct_cp *on, const struct bct_ramdisk *r, struct bc_join_answer *ans);
/* A machine s's boot server vouched for: a discovery token fetched on on for wf (""
 * none) and mac, an assertion s signs now for mac, wf and uuid (may be NULL), and the
 * ramdisk r that claims mac and uuid with them (a test sets r's CSR, key or serial).
 * Free with bct_vouched_free. */
struct bct_vouched {
	char *token;
	uint8_t *att;
	size_t att_len;
	struct bct_ramdisk r;
};
void bct_vouched(struct bct_cp *on, struct bct_site_node *s, const char *wf, const char *mac,
                 const char *uuid, struct bct_vouched *v);
void bct_vouched_free(struct bct_vouched *v);
/* A fresh key and its CSR (malloc'd). */
void bct_key_csr(EVP_PKEY **key, uint8_t **csr, size_t *len);

#endif
