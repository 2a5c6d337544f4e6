/* The node key, a file or in the TPM (nodekey.h). A TPM key is never stored in the
 * TPM: each use opens the TPM, derives the key from its unique, uses it, flushes it
 * and closes the connection. Every key the TPM derives is compared with the public
 * half the caller holds, so a TPM that derives another key (after TPM2_Clear) fails
 * instead of signing with a stranger. */
#include <openssl/crypto.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef BC_TESTING
#include <fcntl.h>
#include <time.h>
#endif

#include "agent/agent.h"
#include "bc/files.h"
#include "agent/keyops.h"
#include "agent/nodekey.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "bc/log.h"
#include "bc/pki.h"
#include "bc/wire.h"
#include "tpm/tpm.h"

#define MAX_KEY_PEM (16u * 1024)
#define TPM_KEY_PEM "-----BEGIN " BCD_TPM_NODE_KEY_PEM "-----"
/* the spec's renewal messages, word for word ("Renewing a TPM-held key") */
#define RENEW_UNAVAILABLE                                                                          \
	"renewal: the certificate's node key is in the TPM, which is unavailable: "
#define RENEW_NEXT_KEY  "renewal: the next node key in the TPM: "
#define RENEW_CERTIFY   "renewal: the TPM's attestation key certifying the next key: "
#define FAKEHW_KEYS_ENV "BCD_FAKEHW_TPM_KEYS"

#ifdef BC_TESTING
/* Test builds only: BCD_TEST_RENEW_PAUSE=STEP:PATH holds a renewal, its TPM session
 * open, before STEP ("next-key" or "certify"): it creates PATH.paused and waits until
 * PATH.go exists, so that a test stops the TPM at that point without timing
 * (tests/e2e/bcd_tpm_gone_steps_test.sh). Never in a release build. */
static void test_pause(const char *step)
{
	const char *v = getenv("BCD_TEST_RENEW_PAUSE");
	size_t n = strlen(step);
	struct timespec ts = {0, 50 * 1000 * 1000};
	char p[1024];
	int fd;

	if (v == NULL || strncmp(v, step, n) != 0 || v[n] != ':' || strlen(v + n + 1) > 1000)
		return;
	snprintf(p, sizeof(p), "%s.go", v + n + 1);
	if (access(p, F_OK) == 0)
		return;
	snprintf(p, sizeof(p), "%s.paused", v + n + 1);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0)
		close(fd);
	snprintf(p, sizeof(p), "%s.go", v + n + 1);
	while (access(p, F_OK) != 0)
		nanosleep(&ts, NULL);
}
#else
#define test_pause(step) ((void)0)
#endif

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
			bcd_say(m, "%s: [fakehw] names no TPM (tpm = \"swtpm:host=H,port=N\")",
			        cfg->path);
			return BC_ERR_NOT_FOUND;
		}
		/* only swtpm: the TCTI loader would load any libtss2-tcti-<name> */
		if (strncmp(t, "swtpm:", 6) != 0 || strlen(t) >= len ||
		    strpbrk(t, "\n\r") != NULL) {
			bcd_say(m, "%s: [fakehw] tpm: expected \"swtpm:host=127.0.0.1,port=N\"",
			        cfg->path);
			return BC_ERR_CONFIG;
		}
		if (use == BCD_TPM_NEW_KEYS && !fakehw_keys_allowed()) {
			bcd_say(m, "node keys use the fakehw TPM only with " FAKEHW_KEYS_ENV "=1");
			return BC_ERR_NOT_FOUND;
		}
		snprintf(out, len, "%s", t);
		return 0;
	}
	if ((t = bcd_test_host_tpm()) != NULL && strlen(t) < len) {
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

/* Where k's key is reached: bcd helper for an unprivileged process under [helper]
 * (it never opens the TPM), else the TPM itself. */
static void set_backend(const struct bcd_config *cfg, struct bcd_nodekey *k)
{
	k->helper[0] = '\0';
	if (cfg->has_helper && cfg->helper_socket != NULL && geteuid() != 0)
		snprintf(k->helper, sizeof(k->helper), "%s", cfg->helper_socket);
}

static int open_ops(const struct bcd_nodekey *k, struct bcd_keyops **s, struct bcd_msg *m)
{
	char err[512] = "";
	int rc;

	if ((rc = bcd_keyops_open(k->tcti, k->helper, s, err, sizeof(err))) != 0)
		bcd_say(m, "the TPM (%s) is unavailable: %s",
		        k->helper[0] ? "through bcd helper" : k->tcti, err);
	return rc;
}

/* k->unique set: derives the key and keeps its public half, or checks it against
 * k->key when that is set already. */
static int derive_public(struct bcd_nodekey *k, struct bcd_msg *m)
{
	struct bcd_keyops *s = NULL;
	struct bcd_keyops_key got;
	char err[512] = "";
	int rc;

	memset(&got, 0, sizeof(got));
	if ((rc = open_ops(k, &s, m)) != 0)
		return rc;
	if ((rc = bcd_keyops_key(s, k->unique, &got, err, sizeof(err))) != 0) {
		bcd_say(m, "the TPM cannot derive the node key: %s", err);
	} else if (k->key == NULL) {
		k->key = got.pkey;
		got.pkey = NULL;
	} else if (EVP_PKEY_eq(k->key, got.pkey) != 1) {
		bcd_say(m, "the TPM derives another key from node.key (was the TPM cleared?)");
		rc = BC_ERR_VERIFY;
	}
	bcd_keyops_key_free(&got);
	bcd_keyops_close(s);
	return rc;
}

static int new_in_tpm(const struct bcd_config *cfg, const char *tcti, struct bcd_nodekey *k,
                      struct bcd_msg *m)
{
	int rc;

	k->in_tpm = 1;
	set_backend(cfg, k);
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
		if ((rc = new_in_tpm(cfg, tcti, k, &why)) == 0)
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
		bcd_say(m,
		        "%s: not a " BCD_TPM_NODE_KEY_PEM " record of %d bytes (corrupt); join "
		        "again: bcd join --reset --yes, then bcd join",
		        path, BCD_TPM_UNIQUE_LEN);
		return BC_ERR_INVALID;
	}
	if ((rc = bcd_tpm_tcti(cfg, BCD_TPM_ANY, k->tcti, sizeof(k->tcti), &why)) != 0) {
		bcd_say(m, "%s: the node key is in a TPM, and %s", path, why.text);
		return rc == BC_ERR_NOT_FOUND ? BC_ERR_UNAVAILABLE : rc;
	}
	set_backend(cfg, k);
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
	if (bc_file_check_mode(path, BC_MODE_SECRET, m->text, sizeof(m->text)) != 0)
		return BC_ERR_DENIED;
	if ((rc = bcd_read_file(path, MAX_KEY_PEM, &pem, &len, m)) != 0)
		return rc;
	if (strstr(pem, TPM_KEY_PEM) != NULL) {
		rc = read_record(cfg, path, pem, len, k, m);
	} else if (bc_key_from_pem(pem, len, &k->key) != 0) {
		bcd_say(m,
		        "%s: not a PKCS#8 P-256 private key PEM (corrupt); join again: bcd join "
		        "--reset --yes, then bcd join",
		        path);
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

struct ops_signer {
	struct bcd_keyops *s;
	const struct bcd_nodekey *k;
	char err[512];
};

static int ops_sign_digest(void *ctx, const uint8_t digest[static 32], uint8_t sig[static 64])
{
	struct ops_signer *o = ctx;

	return bcd_keyops_sign(o->s, o->k->unique, digest, sig, o->err, sizeof(o->err));
}

/* A CSR for o->k by the keyops already open in o->s, checked under o->k->key. */
static int ops_csr(struct ops_signer *o, const char *cn, uint8_t **der, size_t *len)
{
	struct bc_signer s;
	int rc;

	if ((rc = bc_signer_init(&s, o->k->key, ops_sign_digest, o)) != 0)
		return rc;
	return bcd_csr_signed(&s, cn, der, len);
}

int bcd_nodekey_csr(const struct bcd_nodekey *k, const char *cn, uint8_t **der, size_t *len,
                    struct bcd_msg *m)
{
	struct ops_signer o = {.s = NULL, .k = k, .err = ""};
	int rc;

	*der = NULL;
	*len = 0;
	if (!k->in_tpm) {
		if ((rc = bc_csr_make(k->key, cn, der, len)) != 0)
			bcd_say(m, "cannot make the CSR (%s)", bc_err_str(rc));
		return rc;
	}
	if ((rc = open_ops(k, &o.s, m)) != 0)
		return rc;
	if ((rc = ops_csr(&o, cn, der, len)) != 0)
		bcd_say(m, "the TPM cannot sign the CSR: %s", o.err[0] ? o.err : bc_err_str(rc));
	bcd_keyops_close(o.s);
	return rc;
}

/* A bc_sign_fn for a key in the TPM: ctx is the const struct bcd_nodekey *. */
static int tpm_sign(void *ctx, const uint8_t digest[static 32], uint8_t sig[static 64])
{
	const struct bcd_nodekey *k = ctx;
	struct bcd_keyops *s = NULL;
	struct bcd_msg m = {""};
	char err[512] = "";
	int rc;

	memset(sig, 0, 64);
	if ((rc = open_ops(k, &s, &m)) != 0) {
		bc_log(BC_LOG_WARN, "cannot sign with the node key", "error", m.text, NULL);
		return rc;
	}
	if ((rc = bcd_keyops_sign(s, k->unique, digest, sig, err, sizeof(err))) != 0)
		bc_log(BC_LOG_WARN, "the TPM cannot sign with the node key", "error", err, NULL);
	bcd_keyops_close(s);
	return rc;
}

int bcd_nodekey_signer(const struct bcd_nodekey *k, struct bc_signer *s)
{
	memset(s, 0, sizeof(*s));
	if (k == NULL || k->key == NULL)
		return BC_ERR_INVALID;
	/* ctx is only ever read back as a const struct bcd_nodekey * */
	return bc_signer_init(s, k->key, k->in_tpm ? tpm_sign : NULL, (void *)k);
}

/* 1 when u is a URI SAN that is an AK statement, whatever name algorithm it names. */
static int is_ak_statement(const ASN1_IA5STRING *u)
{
	const size_t n = strlen(BC_WIRE_TPM_AK_URN_SCHEME);

	return u != NULL && (size_t)u->length >= n &&
	       memcmp(u->data, BC_WIRE_TPM_AK_URN_SCHEME, n) == 0;
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
		const ASN1_IA5STRING *u =
		    g->type == GEN_URI ? g->d.uniformResourceIdentifier : NULL;
		if (is_ak_statement(u))
			found = 1;
	}
	GENERAL_NAMES_free(sans);
	X509_free(x);
	return found;
}

/* urn:bc:tpm-ak:sha256:<68 lowercase hex>: the AK's name, 0x000B || SHA-256. */
static int ak_urn_name(const ASN1_IA5STRING *u, uint8_t name[static BCD_TPM_NAME_LEN])
{
	static const char hex[] = "0123456789abcdef";
	size_t pre = strlen(BC_WIRE_TPM_AK_URN_SHA256);

	if ((size_t)u->length != pre + 2 * BCD_TPM_NAME_LEN ||
	    memcmp(u->data, BC_WIRE_TPM_AK_URN_SHA256, pre) != 0)
		return BC_ERR_INVALID;
	for (size_t i = 0; i < BCD_TPM_NAME_LEN; i++) {
		const char *hi = memchr(hex, u->data[pre + 2 * i], 16);
		const char *lo = memchr(hex, u->data[pre + 2 * i + 1], 16);
		if (hi == NULL || lo == NULL || u->data[pre + 2 * i] == 0 ||
		    u->data[pre + 2 * i + 1] == 0)
			return BC_ERR_INVALID;
		name[i] = (uint8_t)((hi - hex) << 4 | (lo - hex));
	}
	return name[0] == 0x00 && name[1] == 0x0b ? 0 : BC_ERR_INVALID;
}

int bcd_leaf_ak_name(const uint8_t *der, size_t len, uint8_t name[static BCD_TPM_NAME_LEN])
{
	const unsigned char *p = der;
	GENERAL_NAMES *sans = NULL;
	X509 *x;
	int found = 0;

	memset(name, 0, BCD_TPM_NAME_LEN);
	if (der == NULL || len == 0 || (x = d2i_X509(NULL, &p, (long)len)) == NULL)
		return BC_ERR_INVALID;
	sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; sans != NULL && i < sk_GENERAL_NAME_num(sans) && found >= 0; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		const ASN1_IA5STRING *u =
		    g->type == GEN_URI ? g->d.uniformResourceIdentifier : NULL;
		if (!is_ak_statement(u))
			continue;
		/* one statement, well formed: the server refuses anything else anyway */
		found = found == 0 && ak_urn_name(u, name) == 0 ? 1 : BC_ERR_INVALID;
	}
	GENERAL_NAMES_free(sans);
	X509_free(x);
	if (found < 0)
		memset(name, 0, BCD_TPM_NAME_LEN);
	return found;
}

void bcd_key_cert_free(struct bcd_key_cert *c)
{
	if (c == NULL)
		return;
	bcd_tpm_attest_free(&c->cert);
	memset(c, 0, sizeof(*c));
}

/* The AK of this TPM, checked to be the one the certificate names. */
static int certifier(struct bcd_keyops *s, const uint8_t ak_name[static BCD_TPM_NAME_LEN],
                     struct bcd_key_cert *kc, EVP_PKEY **ak, struct bcd_msg *m)
{
	char err[512] = "";
	int rc;

	if ((rc = bcd_keyops_ak(s, &kc->ak, ak, err, sizeof(err))) != 0) {
		bcd_say(m, RENEW_UNAVAILABLE "%s", err);
		return rc;
	}
	if (CRYPTO_memcmp(kc->ak.name, ak_name, BCD_TPM_NAME_LEN) != 0) {
		bcd_say(m, "%s", BCD_RENEW_ANOTHER_TPM);
		return BC_ERR_VERIFY;
	}
	return 0;
}

/* The next key made in the TPM (k->unique set) and its CSR, signed there. */
static int next_key(struct bcd_keyops *s, struct bcd_nodekey *k, struct bcd_key_cert *kc,
                    uint8_t **csr, size_t *csr_len, struct bcd_msg *m)
{
	struct ops_signer o = {.s = s, .k = k, .err = ""};
	struct bcd_keyops_key got;
	int rc;

	memset(&got, 0, sizeof(got));
	if ((rc = bcd_tpm_unique_new(k->unique)) != 0 ||
	    (rc = bcd_keyops_key(s, k->unique, &got, o.err, sizeof(o.err))) != 0) {
		bcd_say(m, RENEW_NEXT_KEY "%s", o.err[0] ? o.err : "no random bytes");
		return rc;
	}
	memcpy(kc->key_pub, got.pub, got.pub_len);
	kc->key_pub_len = got.pub_len;
	k->key = got.pkey;
	got.pkey = NULL;
	if ((rc = ops_csr(&o, BC_WIRE_CSR_CN, csr, csr_len)) != 0)
		bcd_say(m, RENEW_NEXT_KEY "the CSR: %s", o.err[0] ? o.err : bc_err_str(rc));
	return rc;
}

/* The AK's certification of the next key over sha256(csr), checked as the server
 * will check it, under the AK this TPM (or the helper) announced. */
static int certify_next(struct bcd_keyops *s, const struct bcd_nodekey *k, EVP_PKEY *ak,
                        const uint8_t *csr, size_t csr_len, struct bcd_key_cert *kc,
                        struct bcd_msg *m)
{
	enum bc_tpm_certify_result r = BC_TPM_CERTIFY_MALFORMED;
	uint8_t h[32], spki_h[32], *spki = NULL;
	size_t spki_len = 0;
	char err[512] = "";
	int rc;

	if ((rc = bc_sha256(csr, csr_len, h)) != 0 ||
	    (rc = bc_key_spki(k->key, &spki, &spki_len)) != 0 ||
	    (rc = bc_sha256(spki, spki_len, spki_h)) != 0) {
		bcd_say(m, RENEW_CERTIFY "%s", bc_err_str(rc));
		goto out;
	}
	if ((rc = bcd_keyops_certify(s, k->unique, h, sizeof(h), &kc->cert, err, sizeof(err))) !=
	    0) {
		bcd_say(m, RENEW_CERTIFY "%s", err);
		goto out;
	}
	rc = bc_tpm_check_certify(ak, kc->key_pub, kc->key_pub_len, kc->cert.attest,
	                          kc->cert.attest_len, kc->cert.sig, kc->cert.sig_len, h, spki_h,
	                          &r);
	if (rc == 0 && r != BC_TPM_CERTIFY_OK)
		rc = BC_ERR_VERIFY;
	if (rc != 0)
		bcd_say(m, RENEW_CERTIFY "the certification does not check (result %d)", (int)r);
out:
	free(spki);
	return rc;
}

int bcd_nodekey_new_certified(const struct bcd_config *cfg,
                              const uint8_t ak_name[static BCD_TPM_NAME_LEN], struct bcd_nodekey *k,
                              uint8_t **csr, size_t *csr_len, struct bcd_key_cert *kc,
                              struct bcd_msg *m)
{
	struct bcd_msg why = {""};
	struct bcd_keyops *s = NULL;
	EVP_PKEY *ak = NULL;
	char err[512] = "";
	int rc;

	memset(k, 0, sizeof(*k));
	memset(kc, 0, sizeof(*kc));
	*csr = NULL;
	*csr_len = 0;
	k->in_tpm = 1;
	set_backend(cfg, k);
	/* no fallback to a file key: this certificate's keys never leave the TPM */
	if ((rc = bcd_tpm_tcti(cfg, BCD_TPM_ANY, k->tcti, sizeof(k->tcti), &why)) != 0) {
		bcd_say(m, RENEW_UNAVAILABLE "%s", why.text);
		rc = rc == BC_ERR_NOT_FOUND ? BC_ERR_UNAVAILABLE : rc;
		goto out;
	}
	if ((rc = bcd_keyops_open(k->tcti, k->helper, &s, err, sizeof(err))) != 0) {
		bcd_say(m, RENEW_UNAVAILABLE "%s", err);
		goto out;
	}
	/* one session: the AK checked, the next key made, signed and certified */
	if ((rc = certifier(s, ak_name, kc, &ak, m)) != 0)
		goto out;
	test_pause("next-key");
	if ((rc = next_key(s, k, kc, csr, csr_len, m)) != 0)
		goto out;
	test_pause("certify");
	if ((rc = certify_next(s, k, ak, *csr, *csr_len, kc, m)) != 0)
		goto out;
out:
	bcd_keyops_close(s);
	EVP_PKEY_free(ak);
	if (rc != 0) {
		free(*csr);
		*csr = NULL;
		*csr_len = 0;
		bcd_key_cert_free(kc);
		bcd_nodekey_free(k);
	}
	return rc;
}
