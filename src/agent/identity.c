/* The node's identity in the data directory: identity.json (the commit point),
 * node.key (PKCS#8 PEM or a BCD TPM NODE KEY record, 0600), node.crt (the chain, PEM,
 * leaf first) and ca.pem (the trust bundle). identity.json is written last, so a
 * directory with a loadable identity.json holds the key and chain it names; everything
 * read back is checked against it, and against each other, before bcd uses it. */
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/json.h"
#include "bc/pki.h"

#define MAX_IDENTITY  (16u * 1024)
#define MAX_CHAIN_PEM (128u * 1024)
#define MAX_CHAIN     8
#define RESET_HINT    "join again: bcd join --reset --yes, then bcd join"

void bcd_identity_free(struct bcd_identity *id)
{
	if (id == NULL)
		return;
	bcd_nodekey_free(&id->nk); /* id->key is its view */
	for (size_t i = 0; id->chain != NULL && i < id->n_chain; i++)
		free(id->chain[i]);
	free(id->chain);
	free(id->chain_lens);
	memset(id, 0, sizeof(*id));
}

static const char *const identity_keys[] = {"nodeId",   "role",   "trustDomain",
                                            "notAfter", "serial", "joinedAt"};
#define N_IDENTITY_KEYS (sizeof(identity_keys) / sizeof(identity_keys[0]))

static int copy_field(const json_t *j, const char *key, char *dst, size_t dstlen)
{
	const char *v;

	if (bc_json_get_string(j, key, &v) != 0 || strlen(v) >= dstlen)
		return BC_ERR_INVALID;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* identity.json: exactly the six string fields, a valid node id and role, and the
 * config's trust domain. */
static int read_identity_json(const struct bcd_config *cfg, const char *path,
                              struct bcd_identity *id, struct bcd_msg *m)
{
	char *text = NULL, jerr[160], na[40], serial[64];
	size_t len = 0;
	json_t *j = NULL;
	int rc;

	if ((rc = bcd_read_file(path, MAX_IDENTITY, &text, &len, m)) != 0)
		return rc;
	rc = BC_ERR_INVALID;
	if (bc_json_parse(text, len, MAX_IDENTITY, &j, jerr, sizeof(jerr)) != 0 ||
	    !json_is_object(j)) {
		bcd_say(m, "%s: not a JSON object (corrupt); %s", path, RESET_HINT);
		goto out;
	}
	if (json_object_size(j) != N_IDENTITY_KEYS) {
		bcd_say(m,
		        "%s: expected exactly the fields nodeId, role, trustDomain, notAfter, "
		        "serial, joinedAt (corrupt); %s",
		        path, RESET_HINT);
		goto out;
	}
	for (size_t i = 0; i < N_IDENTITY_KEYS; i++) {
		const char *v;
		if (bc_json_get_string(j, identity_keys[i], &v) != 0) {
			bcd_say(m, "%s: %s is missing or not a string (corrupt); %s", path,
			        identity_keys[i], RESET_HINT);
			goto out;
		}
	}
	if (copy_field(j, "nodeId", id->node_id, sizeof(id->node_id)) != 0 ||
	    !bc_node_id_valid(id->node_id) ||
	    copy_field(j, "role", id->role, sizeof(id->role)) != 0 || !bc_role_valid(id->role) ||
	    copy_field(j, "trustDomain", id->trust_domain, sizeof(id->trust_domain)) != 0 ||
	    copy_field(j, "joinedAt", id->joined_at, sizeof(id->joined_at)) != 0 ||
	    copy_field(j, "notAfter", na, sizeof(na)) != 0 ||
	    copy_field(j, "serial", serial, sizeof(serial)) != 0) {
		bcd_say(m, "%s: a malformed nodeId, role or time (corrupt); %s", path, RESET_HINT);
		goto out;
	}
	if (strcmp(id->trust_domain, cfg->trust_domain) != 0) {
		bcd_say(m, "%s: trust domain %s, the config says %s; %s", path, id->trust_domain,
		        cfg->trust_domain, RESET_HINT);
		goto out;
	}
	rc = 0;
out:
	json_decref(j);
	free(text);
	return rc;
}

static int push_der(struct bcd_identity *id, X509 *x)
{
	uint8_t *der = NULL;
	size_t len = 0;
	int rc;

	if (id->n_chain == MAX_CHAIN)
		return BC_ERR_LIMIT;
	if ((rc = bc_x509_to_der(x, &der, &len)) != 0)
		return rc;
	id->chain[id->n_chain] = der;
	id->chain_lens[id->n_chain] = len;
	id->n_chain++;
	return 0;
}

/* node.crt: one to MAX_CHAIN PEM certificates and nothing else. */
static int read_chain(const char *path, struct bcd_identity *id, struct bcd_msg *m)
{
	char *text = NULL;
	size_t len = 0;
	BIO *b = NULL;
	X509 *x;
	unsigned long e;
	int rc;

	if ((rc = bcd_read_file(path, MAX_CHAIN_PEM, &text, &len, m)) != 0)
		return rc;
	if ((id->chain = calloc(MAX_CHAIN, sizeof(*id->chain))) == NULL ||
	    (id->chain_lens = calloc(MAX_CHAIN, sizeof(*id->chain_lens))) == NULL ||
	    (b = BIO_new_mem_buf(text, (int)len)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	ERR_clear_error();
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		rc = push_der(id, x);
		X509_free(x);
		if (rc != 0)
			break;
	}
	e = ERR_peek_last_error();
	ERR_clear_error();
	if (rc != 0 || id->n_chain == 0 || ERR_GET_LIB(e) != ERR_LIB_PEM ||
	    ERR_GET_REASON(e) != PEM_R_NO_START_LINE) {
		bcd_say(m, "%s: not a chain of 1 to %d PEM certificates (corrupt); %s", path,
		        MAX_CHAIN, RESET_HINT);
		rc = BC_ERR_INVALID;
	}
out:
	BIO_free(b);
	free(text);
	return rc;
}

/* The leaf names the identity's node and role, in the config's trust domain. */
static int check_leaf(const struct bcd_config *cfg, const char *path, struct bcd_identity *id,
                      struct bcd_msg *m)
{
	struct bc_node_identity ni;
	int rc = 0;

	if (bc_pki_node_identity(id->chain[0], id->chain_lens[0], cfg->trust_domain, &ni, NULL) !=
	    0) {
		bcd_say(m, "%s: the leaf is not a node certificate of trust domain %s; %s", path,
		        cfg->trust_domain, RESET_HINT);
		return BC_ERR_INVALID;
	}
	if (strcmp(ni.node_id, id->node_id) != 0 || strcmp(ni.role, id->role) != 0) {
		bcd_say(m, "%s: the certificate is for %s %s, identity.json names %s %s; %s", path,
		        ni.role, ni.node_id, id->role, id->node_id, RESET_HINT);
		rc = BC_ERR_INVALID;
	} else {
		snprintf(id->serial, sizeof(id->serial), "%s", ni.serial_hex);
		id->not_before_ms = ni.not_before_ms;
		id->not_after_ms = ni.not_after_ms;
	}
	bc_node_identity_clear(&ni);
	return rc;
}

/* The identity takes k: id->key and id->key_in_tpm are views of id->nk. */
static void take_key(struct bcd_identity *id, struct bcd_nodekey *k)
{
	bcd_nodekey_free(&id->nk);
	id->nk = *k;
	memset(k, 0, sizeof(*k));
	id->key = id->nk.key;
	id->key_in_tpm = id->nk.in_tpm;
}

/* node.key, or a node.key.next left by a renewal cut short after node.crt moved.
 * Either is a PKCS#8 file or a record whose key the TPM derives (nodekey.c). */
static int read_node_key(const struct bcd_config *cfg, struct bcd_identity *id, struct bcd_msg *m)
{
	char path[4096], next[4096];
	X509 *leaf = NULL;
	struct bcd_nodekey k, kn;
	struct bcd_msg ignored;
	int rc;

	memset(&k, 0, sizeof(k));
	memset(&kn, 0, sizeof(kn));
	if (bcd_path(path, sizeof(path), cfg->data_dir, BCD_NODE_KEY) != 0 ||
	    bcd_path(next, sizeof(next), cfg->data_dir, BCD_NODE_KEY_NEXT) != 0)
		return BC_ERR_LIMIT;
	if ((rc = bc_x509_from_der(id->chain[0], id->chain_lens[0], &leaf)) != 0)
		return rc;
	if ((rc = bcd_nodekey_read(cfg, path, &k, m)) != 0)
		goto out;
	if (bc_key_same(k.key, X509_get0_pubkey(leaf))) {
		take_key(id, &k);
		goto out;
	}
	if (bcd_nodekey_read(cfg, next, &kn, &ignored) == 0 &&
	    bc_key_same(kn.key, X509_get0_pubkey(leaf))) {
		/* the renewal had committed its certificate; only bcd node finishes the
		 * swap (bcd_identity_finish_swap), so a status run beside it never races it */
		take_key(id, &kn);
		id->key_from_next = 1;
		goto out;
	}
	/* a key in the TPM that no longer matches: the spec's hint, word for word */
	if (k.in_tpm)
		bcd_say(m,
		        "%s: the node key does not match the node certificate: the TPM derives "
		        "another key from node.key (was the TPM cleared?); %s",
		        path, RESET_HINT);
	else
		bcd_say(m, "%s: the node key does not match the node certificate (%s/%s); %s", path,
		        cfg->data_dir, BCD_NODE_CRT, RESET_HINT);
	rc = BC_ERR_INVALID;
out:
	bcd_nodekey_free(&k);
	bcd_nodekey_free(&kn);
	X509_free(leaf);
	return rc;
}

static int identity_load_once(const struct bcd_config *cfg, struct bcd_identity *id,
                              struct bcd_msg *m)
{
	char path[4096];
	int rc;

	memset(id, 0, sizeof(*id));
	if ((rc = bcd_path(path, sizeof(path), cfg->data_dir, BCD_IDENTITY)) != 0)
		goto out;
	if ((rc = read_identity_json(cfg, path, id, m)) != 0) {
		if (rc == BC_ERR_NOT_FOUND)
			bcd_say(m, "%s: no identity: this machine has not joined; run bcd join",
			        path);
		goto out;
	}
	if ((rc = bcd_path(path, sizeof(path), cfg->data_dir, BCD_NODE_CRT)) != 0)
		goto out;
	if ((rc = read_chain(path, id, m)) != 0) {
		if (rc == BC_ERR_NOT_FOUND)
			bcd_say(m, "%s: missing, identity.json names a node; %s", path, RESET_HINT);
		rc = rc == BC_ERR_NOT_FOUND ? BC_ERR_INVALID : rc;
		goto out;
	}
	if ((rc = check_leaf(cfg, path, id, m)) != 0)
		goto out;
	if ((rc = read_node_key(cfg, id, m)) == BC_ERR_NOT_FOUND) {
		bcd_say(m, "%s/%s: missing, identity.json names a node; %s", cfg->data_dir,
		        BCD_NODE_KEY, RESET_HINT);
		rc = BC_ERR_INVALID;
	}
out:
	if (rc == BC_ERR_NOMEM)
		bcd_say(m, "out of memory");
	if (rc != 0)
		bcd_identity_free(id);
	return rc;
}

/* node.crt's inode and change time (zeros when it cannot be read): a renewal renames a
 * new file over it, so a different value means the identity was replaced meanwhile. */
static void crt_stamp(const struct bcd_config *cfg, struct stat *st)
{
	char path[4096];

	memset(st, 0, sizeof(*st));
	if (bcd_path(path, sizeof(path), cfg->data_dir, BCD_NODE_CRT) == 0)
		(void)stat(path, st);
}

/* A reader beside bcd node (status, doctor) may read the old node.crt and then the new
 * node.key of a renewal committed between the two reads: a mismatch seen while node.crt
 * changed is read again, not reported (bounded: a renewal takes far longer than a read). */
int bcd_identity_load(const struct bcd_config *cfg, struct bcd_identity *id, struct bcd_msg *m)
{
	struct stat before, after;
	int rc;

	for (int attempt = 0;; attempt++) {
		crt_stamp(cfg, &before);
		rc = identity_load_once(cfg, id, m);
		if (rc != BC_ERR_INVALID || attempt == 4)
			return rc;
		crt_stamp(cfg, &after);
		if (before.st_ino == after.st_ino &&
		    before.st_ctim.tv_sec == after.st_ctim.tv_sec &&
		    before.st_ctim.tv_nsec == after.st_ctim.tv_nsec)
			return rc;
		if (m != NULL)
			m->text[0] = '\0';
	}
}

int bcd_chain_pem(uint8_t *const *ders, const size_t *lens, size_t n, char **out)
{
	bc_buf b;
	X509 *x = NULL;
	char *pem = NULL;
	size_t len;
	int rc = 0;

	*out = NULL;
	bc_buf_init(&b, 0);
	for (size_t i = 0; i < n && rc == 0; i++) {
		if ((rc = bc_x509_from_der(ders[i], lens[i], &x)) == 0 &&
		    (rc = bc_x509_to_pem(x, &pem)) == 0)
			rc = bc_buf_put(&b, pem, strlen(pem));
		X509_free(x);
		x = NULL;
		free(pem);
		pem = NULL;
	}
	if (rc == 0 && (rc = bc_buf_put_u8(&b, 0)) == 0 &&
	    (*out = (char *)bc_buf_steal(&b, &len)) == NULL)
		rc = BC_ERR_NOMEM;
	bc_buf_free(&b);
	return rc;
}

int bcd_key_pem(EVP_PKEY *key, char **out)
{
	return bc_key_to_pem(key, out);
}

int bcd_identity_text(const char *node_id, const char *role, const char *trust_domain,
                      const char *serial, int64_t not_after_ms, const char *joined_at, char **out)
{
	char na[40], now[40], *s = NULL;
	json_t *j;
	int rc = BC_ERR_NOMEM;

	*out = NULL;
	bc_time_format_ms(not_after_ms, na, sizeof(na));
	bc_time_format_ms(bc_now_ms(), now, sizeof(now));
	j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "nodeId", node_id, "role", role,
	              "trustDomain", trust_domain, "notAfter", na, "serial", serial, "joinedAt",
	              joined_at != NULL ? joined_at : now);
	if (j != NULL && (s = bc_json_dump(j)) != NULL && asprintf(out, "%s\n", s) >= 0)
		rc = 0;
	else
		*out = NULL;
	json_decref(j);
	free(s);
	return rc;
}

int bcd_identity_write_json(const struct bcd_config *cfg, const char *node_id, const char *role,
                            const char *trust_domain, const char *serial, int64_t not_after_ms,
                            const char *joined_at, struct bcd_msg *m)
{
	char *text = NULL;
	int rc;

	if (bcd_identity_text(node_id, role, trust_domain, serial, not_after_ms, joined_at,
	                      &text) != 0) {
		bcd_say(m, "out of memory");
		return BC_ERR_NOMEM;
	}
	rc = bcd_write_atomic(cfg->data_dir, BCD_IDENTITY, text, strlen(text), 0644, m);
	free(text);
	return rc;
}

int bcd_identity_finish_swap(const struct bcd_config *cfg, struct bcd_identity *id,
                             struct bcd_msg *m)
{
	char path[4096], next[4096];
	int rc;

	if (!id->key_from_next)
		return 0;
	if (bcd_path(path, sizeof(path), cfg->data_dir, BCD_NODE_KEY) != 0 ||
	    bcd_path(next, sizeof(next), cfg->data_dir, BCD_NODE_KEY_NEXT) != 0)
		return BC_ERR_LIMIT;
	if ((rc = bcd_commit(next, cfg->data_dir, BCD_NODE_KEY, m)) != 0 ||
	    (rc = bcd_sync_dir(cfg->data_dir, m)) != 0)
		return rc;
	id->key_from_next = 0;
	return 0;
}

int bcd_identity_reload(const struct bcd_config *cfg, struct bcd_identity *id, int rc,
                        struct bcd_msg *m)
{
	struct bcd_msg ignored;
	int lrc;

	bcd_identity_free(id);
	lrc = bcd_identity_load(cfg, id, rc == 0 ? m : &ignored);
	return rc != 0 ? rc : lrc;
}
