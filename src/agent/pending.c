/* The join that waits: when the control plane defers a join for an operator's
 * approval, bcd keeps the key and CSR the join request was made for, so that a later
 * bcd join (or bcd ramdisk on a data directory that persists) asks again with the same
 * CSR instead of a new one the pending request refuses (enrollment-csr).
 *
 * pending.json: exactly {"attestor", "role", "createdAtMs", "csr" (base64url DER)};
 * node.key.pending (0600): the key's node.key text (PKCS#8, or the TPM record). Both
 * are untrusted input: bounded, parsed strictly, the CSR checked and its key compared
 * with node.key.pending's. A file that is malformed, for another attestor or role, or
 * older than the server's default pending TTL is ignored (said on stderr) and replaced. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "agent/agent.h"
#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/files.h"
#include "bc/json.h"
#include "bc/pki.h"

#define MAX_PENDING_JSON 8192
#define MAX_CSR_DER      2048
#define N_PENDING_KEYS   4
#define FUTURE_SLACK_MS  (5 * 60 * 1000)

void bcd_pending_free(struct bcd_pending *p)
{
	if (p == NULL)
		return;
	free(p->csr);
	memset(p, 0, sizeof(*p));
}

int bcd_pending_parse(const char *text, size_t len, const char *attestor, const char *role,
                      int64_t now_ms, struct bcd_pending *p, struct bcd_msg *m)
{
	const char *at = NULL, *ro = NULL, *csr = NULL;
	int64_t created = 0;
	EVP_PKEY *pub = NULL;
	json_t *j = NULL;
	char jerr[128];
	int rc = BC_ERR_INVALID;

	memset(p, 0, sizeof(*p));
	if (bc_json_parse(text, len, MAX_PENDING_JSON, &j, jerr, sizeof(jerr)) != 0 ||
	    !json_is_object(j) || json_object_size(j) != N_PENDING_KEYS ||
	    bc_json_get_string(j, "attestor", &at) != 0 ||
	    bc_json_get_string(j, "role", &ro) != 0 || bc_json_get_string(j, "csr", &csr) != 0 ||
	    bc_json_get_int(j, "createdAtMs", &created) != 0 || strlen(at) >= sizeof(p->attestor) ||
	    strlen(ro) >= sizeof(p->role) || created <= 0) {
		bcd_say(m, BCD_PENDING ": malformed (not the four fields bcd writes)");
		goto out;
	}
	if (bc_b64url_decode(csr, strlen(csr), &p->csr, &p->csr_len) != 0 || p->csr_len == 0 ||
	    p->csr_len > MAX_CSR_DER || bc_csr_check(p->csr, p->csr_len, &pub) != 0) {
		bcd_say(m, BCD_PENDING ": malformed (its csr is not a CSR bcd made)");
		goto out;
	}
	if (created > now_ms + FUTURE_SLACK_MS) {
		bcd_say(m, BCD_PENDING ": malformed (made in the future)");
		goto out;
	}
	if (strcmp(at, attestor) != 0 || strcmp(ro, role) != 0) {
		bcd_say(m, BCD_PENDING ": for attestor %s, role %s, and this join is %s, %s", at,
		        ro, attestor, role);
		rc = BC_ERR_CONFLICT;
		goto out;
	}
	if (now_ms - created > (int64_t)BCD_PENDING_MAX_AGE_S * 1000) {
		bcd_say(m,
		        BCD_PENDING
		        ": older than the server's pending TTL (%d s): its join request "
		        "has expired",
		        BCD_PENDING_MAX_AGE_S);
		rc = BC_ERR_EXPIRED;
		goto out;
	}
	snprintf(p->attestor, sizeof(p->attestor), "%s", at);
	snprintf(p->role, sizeof(p->role), "%s", ro);
	p->created_ms = created;
	rc = 0;
out:
	EVP_PKEY_free(pub);
	json_decref(j);
	if (rc != 0) {
		free(p->csr);
		memset(p, 0, sizeof(*p));
	}
	return rc;
}

void bcd_pending_drop(const struct bcd_config *cfg)
{
	static const char *const names[] = {BCD_PENDING, BCD_NODE_KEY_PENDING};
	char path[4096];
	int removed = 0;

	for (size_t i = 0; i < 2; i++)
		if (bcd_path(path, sizeof(path), cfg->data_dir, names[i]) == 0 && unlink(path) == 0)
			removed = 1;
	if (removed && bc_file_sync_dir(cfg->data_dir) != 0)
		fprintf(stderr, BCD_NAME ": %s: cannot sync the directory\n", cfg->data_dir);
}

/* The CSR's key is the key's. */
static int same_key(const struct bcd_nodekey *k, const struct bcd_pending *p)
{
	EVP_PKEY *pub = NULL;
	int same;

	if (bc_csr_check(p->csr, p->csr_len, &pub) != 0)
		return 0;
	same = bc_key_same(pub, k->key);
	EVP_PKEY_free(pub);
	return same;
}

int bcd_pending_load(const struct bcd_config *cfg, const char *attestor, const char *role,
                     struct bcd_nodekey *k, uint8_t **csr, size_t *csr_len, struct bcd_msg *m)
{
	struct bcd_pending p;
	struct bcd_msg why = {""};
	char path[4096], *text = NULL;
	size_t len = 0;
	int rc;

	memset(k, 0, sizeof(*k));
	memset(&p, 0, sizeof(p));
	*csr = NULL;
	*csr_len = 0;
	if (!bcd_exists(cfg->data_dir, BCD_PENDING) &&
	    !bcd_exists(cfg->data_dir, BCD_NODE_KEY_PENDING))
		return BC_ERR_NOT_FOUND;
	if (bcd_path(path, sizeof(path), cfg->data_dir, BCD_PENDING) != 0)
		return BC_ERR_LIMIT;
	if ((rc = bcd_read_file(path, MAX_PENDING_JSON, &text, &len, &why)) == 0) {
		rc = bcd_pending_parse(text, len, attestor, role, bc_now_ms(), &p, &why);
		free(text);
	}
	if (rc == 0) {
		if (bcd_path(path, sizeof(path), cfg->data_dir, BCD_NODE_KEY_PENDING) != 0)
			rc = BC_ERR_LIMIT;
		else
			rc = bcd_nodekey_read(cfg, path, k, &why);
		/* a TPM that cannot be reached says nothing about the key: keep it */
		if (rc == BC_ERR_UNAVAILABLE) {
			bcd_say(m, "%s; the pending key is kept: fix that and run bcd join again",
			        why.text);
			bcd_pending_free(&p);
			return rc;
		}
		if (rc == 0 && !same_key(k, &p)) {
			bcd_say(&why,
			        BCD_NODE_KEY_PENDING ": not the key of " BCD_PENDING "'s CSR");
			bcd_nodekey_free(k);
			rc = BC_ERR_INVALID;
		}
	}
	if (rc != 0) {
		fprintf(stderr,
		        BCD_NAME ": %s: %s; ignored: a new key and CSR replace it (a join request "
		                 "still pending for the old one refuses them until it expires)\n",
		        cfg->data_dir, why.text[0] ? why.text : bc_err_str(rc));
		bcd_pending_free(&p);
		bcd_pending_drop(cfg);
		return BC_ERR_NOT_FOUND;
	}
	*csr = p.csr;
	*csr_len = p.csr_len;
	p.csr = NULL;
	fprintf(stderr, BCD_NAME ": asking again with the key and CSR kept in %s/%s\n",
	        cfg->data_dir, BCD_PENDING);
	return 0;
}

int bcd_pending_save(const struct bcd_config *cfg, const char *attestor, const char *role,
                     const struct bcd_nodekey *k, const uint8_t *csr, size_t csr_len,
                     struct bcd_msg *m)
{
	char *pem = NULL, *b64 = NULL, *s = NULL;
	json_t *j = NULL;
	int rc = BC_ERR_NOMEM;

	if ((rc = bcd_nodekey_pem(k, &pem)) != 0)
		goto out;
	rc = BC_ERR_NOMEM;
	if ((b64 = bc_b64url_encode(csr, csr_len)) == NULL ||
	    (j = json_pack("{s:s, s:s, s:I, s:s}", "attestor", attestor, "role", role,
	                   "createdAtMs", (json_int_t)bc_now_ms(), "csr", b64)) == NULL ||
	    (s = bc_json_dump(j)) == NULL)
		goto out;
	/* the key first: a pending.json always names a key that is there */
	if ((rc = bc_file_write_atomic(cfg->data_dir, BCD_NODE_KEY_PENDING, pem, strlen(pem), 0600,
	                               0)) != 0 ||
	    (rc = bc_file_write_atomic(cfg->data_dir, BCD_PENDING, s, strlen(s), 0600, 0)) != 0)
		goto out;
out:
	if (rc != 0)
		bcd_say(m, "%s: cannot keep the pending key and CSR (%s)", cfg->data_dir,
		        bc_err_str(rc));
	if (pem != NULL)
		bc_freezero(pem, strlen(pem));
	free(b64);
	free(s);
	json_decref(j);
	return rc;
}
