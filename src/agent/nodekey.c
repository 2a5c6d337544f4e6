/* The node key, a file or in the TPM (nodekey.h). A TPM key is never stored in the
 * TPM: each use opens the TPM, derives the key from its unique, uses it, flushes it
 * and closes the connection. Every key the TPM derives is compared with the public
 * half the caller holds, so a TPM that derives another key (after TPM2_Clear) fails
 * instead of signing with a stranger. */
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/agent.h"
#include "agent/nodekey.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "bc/log.h"
#include "bc/pki.h"

#define MAX_KEY_PEM (16u * 1024)
#define TPM_KEY_PEM "-----BEGIN " BCD_TPM_NODE_KEY_PEM "-----"
#define TPM_AK_URN "urn:bc:tpm-ak:"
#define FAKEHW_KEYS_ENV "BCD_FAKEHW_TPM_KEYS"

static int fakehw_keys_allowed(void)
{
	const char *v = getenv(FAKEHW_KEYS_ENV);

	return v != NULL && strcmp(v, "1") == 0;
}

int bcd_tpm_tcti(const struct bcd_config *cfg, enum bcd_tpm_use use, char *out, size_t len,
                 struct bcd_msg *m)
{
	struct stat st;
	const char *t;

	out[0] = '\0';
	if (cfg->has_fakehw) {
		t = cfg->fakehw_tpm;
		if (t == NULL || t[0] == '\0') {
			bcd_say(m, "%s: [fakehw] names no TPM (tpm = \"swtpm:host=H,port=N\")", cfg->path);
			return BC_ERR_NOT_FOUND;
		}
		/* only swtpm: the TCTI loader would load any libtss2-tcti-<name> */
		if (strncmp(t, "swtpm:", 6) != 0 || strlen(t) >= len || strpbrk(t, "\n\r") != NULL) {
			bcd_say(m, "%s: [fakehw] tpm: expected \"swtpm:host=127.0.0.1,port=N\"", cfg->path);
			return BC_ERR_CONFIG;
		}
		if (use == BCD_TPM_NEW_KEYS && !fakehw_keys_allowed()) {
			bcd_say(m, "node keys use the fakehw TPM only with " FAKEHW_KEYS_ENV "=1");
			return BC_ERR_NOT_FOUND;
		}
		snprintf(out, len, "%s", t);
		return 0;
	}
	if (stat("/dev/tpmrm0", &st) != 0) {
		bcd_say(m, "this host has no TPM (/dev/tpmrm0 is missing; load the kernel's TPM "
		        "driver, or enable the TPM in the firmware)");
		return BC_ERR_NOT_FOUND;
	}
	snprintf(out, len, "%s", BCD_TCTI_HOST);
	return 0;
}

void bcd_nodekey_free(struct bcd_nodekey *k)
{
	if (k == NULL)
		return;
	EVP_PKEY_free(k->key);
	OPENSSL_cleanse(k, sizeof(*k));
}

/* Opens k's TPM and derives k's key there, checked against k->key when it is set. */
static int load_in_tpm(const struct bcd_nodekey *k, struct bcd_tpm **t,
                       struct bcd_tpm_nodekey **nk, struct bcd_msg *m)
{
	uint8_t *a = NULL, *b = NULL;
	size_t la = 0, lb = 0;
	char err[512] = "";
	int rc, same;

	*t = NULL;
	*nk = NULL;
	if ((rc = bcd_tpm_open(k->tcti, t, err, sizeof(err))) != 0) {
		bcd_say(m, "the TPM (%s) is unavailable: %s", k->tcti, err);
		return rc;
	}
	if ((rc = bcd_tpm_nodekey_load(*t, k->unique, nk)) != 0) {
		bcd_say(m, "the TPM cannot derive the node key: %s", bcd_tpm_error(*t));
		goto out;
	}
	if (k->key == NULL)
		goto out;
	if ((rc = bc_key_spki(k->key, &a, &la)) != 0 ||
	    (rc = bc_key_spki(bcd_tpm_nodekey_pkey(*nk), &b, &lb)) != 0)
		goto out;
	same = la == lb && memcmp(a, b, la) == 0;
	if (!same) {
		bcd_say(m, "the TPM derives another key from node.key (was the TPM cleared?)");
		rc = BC_ERR_VERIFY;
	}
out:
	free(a);
	free(b);
	if (rc != 0) {
		bcd_tpm_nodekey_free(*nk);
		bcd_tpm_close(*t);
		*nk = NULL;
		*t = NULL;
	}
	return rc;
}

static void unload(struct bcd_tpm *t, struct bcd_tpm_nodekey *nk)
{
	bcd_tpm_nodekey_free(nk);
	bcd_tpm_close(t);
}

/* k->unique and k->tcti set: derives the key and keeps its public half. */
static int derive_public(struct bcd_nodekey *k, struct bcd_msg *m)
{
	struct bcd_tpm *t;
	struct bcd_tpm_nodekey *nk;
	int rc;

	if ((rc = load_in_tpm(k, &t, &nk, m)) != 0)
		return rc;
	k->key = bcd_tpm_nodekey_pkey(nk);
	if (k->key == NULL || EVP_PKEY_up_ref(k->key) != 1) {
		k->key = NULL;
		rc = BC_ERR_INTERNAL;
	}
	unload(t, nk);
	return rc;
}

static int new_in_tpm(const char *tcti, struct bcd_nodekey *k, struct bcd_msg *m)
{
	int rc;

	k->in_tpm = 1;
	snprintf(k->tcti, sizeof(k->tcti), "%s", tcti);
	if ((rc = bcd_tpm_unique_new(k->unique)) != 0) {
		bcd_say(m, "no random bytes for the node key (%s)", bc_err_str(rc));
		return rc;
	}
	return derive_public(k, m);
}

int bcd_nodekey_new(const struct bcd_config *cfg, int tpm_required, struct bcd_nodekey *k,
                    struct bcd_msg *m)
{
	struct bcd_msg why = {""};
	char tcti[BCD_TCTI_MAX];
	int rc;

	memset(k, 0, sizeof(*k));
	if ((rc = bcd_tpm_tcti(cfg, BCD_TPM_NEW_KEYS, tcti, sizeof(tcti), &why)) == BC_ERR_CONFIG) {
		bcd_say(m, "%s", why.text);
		return rc;
	}
	if (rc == 0) {
		if ((rc = new_in_tpm(tcti, k, &why)) == 0)
			return 0;
		bcd_nodekey_free(k);
		if (tpm_required) {
			bcd_say(m, "the node key in the TPM: %s", why.text);
			return rc;
		}
		bc_log(BC_LOG_WARN, "the TPM cannot hold the node key; using a file key", "error",
		       why.text, NULL);
	}
	if ((rc = bc_key_generate(&k->key)) != 0)
		bcd_say(m, "cannot make the node key (%s)", bc_err_str(rc));
	return rc;
}

static int read_record(const struct bcd_config *cfg, const char *path, const char *pem, size_t len,
                       struct bcd_nodekey *k, struct bcd_msg *m)
{
	struct bcd_msg why = {""};
	int rc;

	k->in_tpm = 1;
	if (bcd_tpm_record_decode(pem, len, k->unique) != 0) {
		bcd_say(m, "%s: not a " BCD_TPM_NODE_KEY_PEM " record of %d bytes (corrupt); join "
		        "again: bcd join --reset --yes, then bcd join", path, BCD_TPM_UNIQUE_LEN);
		return BC_ERR_INVALID;
	}
	if ((rc = bcd_tpm_tcti(cfg, BCD_TPM_ANY, k->tcti, sizeof(k->tcti), &why)) != 0) {
		bcd_say(m, "%s: the node key is in a TPM, and %s", path, why.text);
		return rc == BC_ERR_NOT_FOUND ? BC_ERR_UNAVAILABLE : rc;
	}
	if ((rc = derive_public(k, &why)) != 0)
		bcd_say(m, "%s: the node key is in the TPM: %s", path, why.text);
	return rc;
}

int bcd_nodekey_read(const struct bcd_config *cfg, const char *path, struct bcd_nodekey *k,
                     struct bcd_msg *m)
{
	char *pem = NULL;
	size_t len = 0;
	int rc;

	memset(k, 0, sizeof(*k));
	if ((rc = bcd_read_file(path, MAX_KEY_PEM, &pem, &len, m)) != 0)
		return rc;
	if (strstr(pem, TPM_KEY_PEM) != NULL) {
		rc = read_record(cfg, path, pem, len, k, m);
	} else if (bc_key_from_pem(pem, len, &k->key) != 0) {
		bcd_say(m, "%s: not a PKCS#8 P-256 private key PEM (corrupt); join again: bcd join "
		        "--reset --yes, then bcd join", path);
		rc = BC_ERR_INVALID;
	}
	bc_freezero(pem, len + 1);
	if (rc != 0)
		bcd_nodekey_free(k);
	return rc;
}

int bcd_nodekey_pem(const struct bcd_nodekey *k, char **out)
{
	*out = NULL;
	if (k->in_tpm)
		return bcd_tpm_record_encode(k->unique, out);
	return bc_key_to_pem(k->key, out);
}

int bcd_nodekey_csr(const struct bcd_nodekey *k, const char *cn, uint8_t **der, size_t *len,
                    struct bcd_msg *m)
{
	struct bcd_tpm *t;
	struct bcd_tpm_nodekey *nk;
	int rc;

	*der = NULL;
	*len = 0;
	if (!k->in_tpm) {
		if ((rc = bc_csr_make(k->key, cn, der, len)) != 0)
			bcd_say(m, "cannot make the CSR (%s)", bc_err_str(rc));
		return rc;
	}
	if ((rc = load_in_tpm(k, &t, &nk, m)) != 0)
		return rc;
	if ((rc = bcd_tpm_nodekey_csr(t, nk, cn, der, len)) != 0)
		bcd_say(m, "the TPM cannot sign the CSR: %s", bcd_tpm_error(t));
	unload(t, nk);
	return rc;
}

int bcd_nodekey_sign(void *ctx, const char *purpose, const uint8_t *payload, size_t len,
                     uint8_t sig[64])
{
	const struct bcd_nodekey *k = ctx;
	struct bcd_tpm *t;
	struct bcd_tpm_nodekey *nk;
	struct bcd_msg m = {""};
	uint8_t digest[32];
	int rc;

	memset(sig, 0, 64);
	if (k == NULL || k->key == NULL)
		return BC_ERR_INVALID;
	if (!k->in_tpm)
		return bc_es256_sign(k->key, purpose, payload, len, sig);
	if ((rc = bc_es256_digest(purpose, payload, len, digest)) != 0)
		return rc;
	if ((rc = load_in_tpm(k, &t, &nk, &m)) != 0) {
		bc_log(BC_LOG_WARN, "cannot sign with the node key", "error", m.text, NULL);
		return rc;
	}
	if ((rc = bcd_tpm_nodekey_sign(t, nk, digest, sizeof(digest), sig)) != 0)
		bc_log(BC_LOG_WARN, "the TPM cannot sign with the node key", "error", bcd_tpm_error(t),
		       NULL);
	unload(t, nk);
	return rc;
}

int bcd_leaf_names_ak(const uint8_t *der, size_t len)
{
	const unsigned char *p = der;
	GENERAL_NAMES *sans = NULL;
	X509 *x;
	int found = 0;

	if (der == NULL || len == 0 || (x = d2i_X509(NULL, &p, (long)len)) == NULL)
		return 0;
	sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; sans != NULL && i < sk_GENERAL_NAME_num(sans); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		const ASN1_IA5STRING *u = g->type == GEN_URI ? g->d.uniformResourceIdentifier : NULL;
		if (u != NULL && (size_t)u->length >= strlen(TPM_AK_URN) &&
		    memcmp(u->data, TPM_AK_URN, strlen(TPM_AK_URN)) == 0)
			found = 1;
	}
	GENERAL_NAMES_free(sans);
	X509_free(x);
	return found;
}
