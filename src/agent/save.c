/* Writing a new identity after a join. Every file goes to a temporary name first
 * (written and fsynced); only when all four are on disk are they renamed into place,
 * identity.json last, and the directory synced. A crash before the last rename leaves
 * no identity.json for the new files (bcd join runs again); after it, the whole new
 * identity.
 *
 * Replacing an identity that is there (a renewal, an x509pop re-join) goes another
 * way, because a crash must leave a loadable identity, old or new: node.key.next
 * before the request, then node.crt.next, then node.crt.next -> node.crt and
 * node.key.next -> node.key (between the two, the loader finds the certificate's key
 * in node.key.next), and identity.json last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "bc/pki.h"

#define MAX_TMP 4096

struct pending_file {
	const char *name;
	char *data;
	unsigned mode;
	int secret;
	char tmp[MAX_TMP];
};

static char *identity_of(const struct bc_join_answer *a, const char *joined_at,
                         const char *trust_domain, struct bcd_msg *m);

static void drop(struct pending_file *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (f[i].tmp[0] != '\0')
			unlink(f[i].tmp);
		if (f[i].data != NULL && f[i].secret)
			bc_freezero(f[i].data, strlen(f[i].data));
		else
			free(f[i].data);
	}
}

static int write_pending(const struct bcd_config *cfg, struct pending_file *f, size_t n,
                         struct bcd_msg *m)
{
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (f[i].data == NULL)
			continue;
		if ((rc = bcd_write_temp(cfg->data_dir, f[i].name, f[i].data, strlen(f[i].data),
		                         f[i].mode, f[i].tmp, sizeof(f[i].tmp), m)) != 0)
			return rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (f[i].data == NULL)
			continue;
		if ((rc = bcd_commit(f[i].tmp, cfg->data_dir, f[i].name, m)) != 0)
			return rc;
		f[i].tmp[0] = '\0';
	}
	return bcd_sync_dir(cfg->data_dir, m);
}

int bcd_identity_save(const struct bcd_config *cfg, const struct bcd_nodekey *key,
                      const struct bc_join_answer *a, const char *joined_at, struct bcd_msg *m)
{
	/* renamed in this order: identity.json, the commit point, last */
	struct pending_file f[] = {
	    {BCD_NODE_KEY, NULL, 0600, 1, ""},
	    {BCD_NODE_CRT, NULL, 0644, 0, ""},
	    {BCD_CA, NULL, 0644, 0, ""},
	    {BCD_IDENTITY, NULL, 0644, 0, ""},
	};
	size_t n = sizeof(f) / sizeof(f[0]);
	char stale[MAX_TMP];
	int rc;

	if ((rc = bcd_ensure_dir(cfg->data_dir, m)) != 0)
		return rc;
	if ((rc = bcd_nodekey_pem(key, &f[0].data)) != 0 ||
	    (rc = bcd_chain_pem(a->chain, a->chain_lens, a->n_chain, &f[1].data)) != 0 ||
	    (a->n_trust_bundle > 0 && (rc = bcd_chain_pem(a->trust_bundle, a->trust_bundle_lens,
	                                                  a->n_trust_bundle, &f[2].data)) != 0)) {
		bcd_say(m, "cannot encode the key or the certificates (%s)", bc_err_str(rc));
		goto out;
	}
	if ((f[3].data = identity_of(a, joined_at, cfg->trust_domain, m)) == NULL) {
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = write_pending(cfg, f, n, m)) != 0)
		goto out;
	/* a key left by an older renewal belongs to no certificate now */
	if (bcd_path(stale, sizeof(stale), cfg->data_dir, BCD_NODE_KEY_NEXT) == 0)
		unlink(stale);
out:
	drop(f, n);
	return rc;
}

/* identity.json's text for a JOINED answer, from its leaf (already checked by the
 * client: signed, for our CSR, for the answer's node id). */
static char *identity_of(const struct bc_join_answer *a, const char *joined_at,
                         const char *trust_domain, struct bcd_msg *m)
{
	struct bc_node_identity ni;
	char *text = NULL;
	int rc;

	if (a->n_chain == 0 ||
	    bc_pki_node_identity(a->chain[0], a->chain_lens[0], trust_domain, &ni, NULL) != 0) {
		bcd_say(m, "the answer's certificate is not a node certificate of trust domain %s",
		        trust_domain);
		return NULL;
	}
	rc = bcd_identity_text(ni.node_id, ni.role, trust_domain, ni.serial_hex, ni.not_after_ms,
	                       joined_at, &text);
	bc_node_identity_clear(&ni);
	if (rc != 0)
		bcd_say(m, "out of memory");
	return rc == 0 ? text : NULL;
}

/* next's record or PKCS#8 into node.key.next (0600). */
static int write_next(const struct bcd_config *cfg, const struct bcd_nodekey *next,
                      struct bcd_msg *m)
{
	char *pem = NULL;
	int rc;

	if ((rc = bcd_nodekey_pem(next, &pem)) != 0) {
		bcd_say(m, "cannot encode the next key (%s)", bc_err_str(rc));
		return rc;
	}
	rc = bcd_write_atomic(cfg->data_dir, BCD_NODE_KEY_NEXT, pem, strlen(pem), 0600, m);
	bc_freezero(pem, strlen(pem));
	return rc;
}

int bcd_next_key(const struct bcd_config *cfg, struct bcd_identity *id, struct bcd_nodekey *next,
                 struct bcd_msg *m)
{
	int rc;

	memset(next, 0, sizeof(*next));
	/* node.key.next is about to be overwritten: it must not be the only copy of the
	 * current key (a swap cut short) */
	if ((rc = bcd_identity_finish_swap(cfg, id, m)) != 0)
		return rc;
	/* in the TPM when node keys may use one, else (with a warning) a file */
	if ((rc = bcd_nodekey_new(cfg, 0, next, m)) != 0)
		return rc;
	if ((rc = write_next(cfg, next, m)) != 0)
		bcd_nodekey_free(next);
	return rc;
}

int bcd_next_key_certified(const struct bcd_config *cfg, struct bcd_identity *id,
                           const uint8_t ak_name[static BCD_TPM_NAME_LEN], struct bcd_nodekey *next,
                           uint8_t **csr, size_t *csr_len, struct bcd_key_cert *kc,
                           struct bcd_msg *m)
{
	int rc;

	memset(next, 0, sizeof(*next));
	*csr = NULL;
	*csr_len = 0;
	if ((rc = bcd_identity_finish_swap(cfg, id, m)) != 0)
		return rc;
	if ((rc = bcd_nodekey_new_certified(cfg, ak_name, next, csr, csr_len, kc, m)) != 0)
		return rc;
	if ((rc = write_next(cfg, next, m)) != 0) {
		bcd_nodekey_free(next);
		bcd_key_cert_free(kc);
		free(*csr);
		*csr = NULL;
		*csr_len = 0;
	}
	return rc;
}

void bcd_next_key_drop(const struct bcd_config *cfg)
{
	char path[MAX_TMP];

	if (bcd_path(path, sizeof(path), cfg->data_dir, BCD_NODE_KEY_NEXT) == 0)
		unlink(path);
}

int bcd_identity_replace(const struct bcd_config *cfg, const struct bc_join_answer *a,
                         const char *joined_at, struct bcd_msg *m)
{
	const char *dir = cfg->data_dir;
	char *chain = NULL, *ca = NULL, crt_next[MAX_TMP], key_next[MAX_TMP];
	struct bc_node_identity ni;
	int rc;

	/* read before anything moves, so identity.json can follow the certificate */
	if (a->n_chain == 0 || bc_pki_node_identity(a->chain[0], a->chain_lens[0],
	                                            cfg->trust_domain, &ni, NULL) != 0) {
		bcd_say(m,
		        "the new certificate is not a node certificate of trust domain %s; "
		        "nothing was replaced",
		        cfg->trust_domain);
		return BC_ERR_INVALID;
	}
	if ((rc = bcd_chain_pem(a->chain, a->chain_lens, a->n_chain, &chain)) != 0 ||
	    (a->n_trust_bundle > 0 && (rc = bcd_chain_pem(a->trust_bundle, a->trust_bundle_lens,
	                                                  a->n_trust_bundle, &ca)) != 0)) {
		bcd_say(m, "cannot encode the new certificates (%s)", bc_err_str(rc));
		goto out;
	}
	if ((rc = bcd_write_atomic(dir, BCD_NODE_CRT_NEXT, chain, strlen(chain), 0644, m)) != 0 ||
	    (ca != NULL && (rc = bcd_write_atomic(dir, BCD_CA, ca, strlen(ca), 0644, m)) != 0))
		goto out;
	if ((rc = bcd_path(crt_next, sizeof(crt_next), dir, BCD_NODE_CRT_NEXT)) != 0 ||
	    (rc = bcd_path(key_next, sizeof(key_next), dir, BCD_NODE_KEY_NEXT)) != 0)
		goto out;
	if ((rc = bcd_commit(crt_next, dir, BCD_NODE_CRT, m)) != 0 ||
	    (rc = bcd_commit(key_next, dir, BCD_NODE_KEY, m)) != 0 ||
	    (rc = bcd_sync_dir(dir, m)) != 0)
		goto out;
	rc = bcd_identity_write_json(cfg, ni.node_id, ni.role, cfg->trust_domain, ni.serial_hex,
	                             ni.not_after_ms, joined_at, m);
out:
	bc_node_identity_clear(&ni);
	free(chain);
	free(ca);
	return rc;
}
