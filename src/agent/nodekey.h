/* bcd's node key, wherever it lives: a PKCS#8 P-256 file key, or a key in the host's
 * TPM (an owner-hierarchy primary derived again from a 32-byte unique at every use;
 * node.key then holds only the "BCD TPM NODE KEY" record). Whatever holds it, the
 * key makes CSRs and ES256 signatures through the functions here, so the callers
 * never care (the spec's "The node key in the TPM").
 *
 * Which TPM: a host opens /dev/tpmrm0 when it exists; a config with [fakehw] uses
 * only [fakehw] tpm (a swtpm TCTI string, "swtpm:host=H,port=N"), never the host's.
 * New keys go into the TPM only when node keys may use it: always on a host, and on
 * a fakehw config only with BCD_FAKEHW_TPM_KEYS=1. A key already in the TPM loads
 * from whichever TPM the config names.
 *
 * The TPM connection is opened for each operation and closed before it returns
 * (swtpm takes one connection at a time, and bcd join's attestor opens it too).
 * Errors: 0 or a negative BC_ERR_*, with one line in the struct bcd_msg. */
#ifndef BCD_NODEKEY_H
#define BCD_NODEKEY_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/tpm.h"
#include "bc/err.h"

#define BCD_TCTI_MAX  256
#define BCD_TCTI_HOST "device:/dev/tpmrm0"

struct bcd_config;
struct bcd_msg;

struct bcd_nodekey {
	EVP_PKEY *key; /* a file key: the private key; in the TPM: its public half */
	int in_tpm;
	uint8_t unique[BCD_TPM_UNIQUE_LEN]; /* in the TPM: node.key's record */
	char tcti[BCD_TCTI_MAX];            /* in the TPM: the TPM that derives it */
	char helper[108];                   /* or bcd helper's socket: an unprivileged
	                                     * process under [helper] never opens the TPM */
};

enum bcd_tpm_use {
	BCD_TPM_ANY = 0,     /* the attestor, or loading a key already in the TPM */
	BCD_TPM_NEW_KEYS = 1 /* making a new node key */
};
/* The TCTI of the config's TPM for use into out: 0, or BC_ERR_NOT_FOUND when there is
 * none (m says why), BC_ERR_CONFIG for a [fakehw] tpm that is not a swtpm TCTI. */
BC_WUR int bcd_tpm_tcti(const struct bcd_config *cfg, enum bcd_tpm_use use, char *out, size_t len,
                        struct bcd_msg *m);

/* A new node key into k (zeroed first): in the TPM when node keys may use it, else a
 * file key. When the TPM cannot make it: with tpm_required, the error; otherwise a
 * warning in the log and a file key. Free with bcd_nodekey_free. */
BC_WUR int bcd_nodekey_new(const struct bcd_config *cfg, int tpm_required, struct bcd_nodekey *k,
                           struct bcd_msg *m);
/* The key in a node.key file (PKCS#8, or a record derived in the config's TPM).
 * BC_ERR_NOT_FOUND when the file is missing; BC_ERR_UNAVAILABLE when the record's
 * TPM cannot be opened. */
BC_WUR int bcd_nodekey_read(const struct bcd_config *cfg, const char *path, struct bcd_nodekey *k,
                            struct bcd_msg *m);
/* node.key's text: PKCS#8 PEM or the record; *out malloc'd, wipe with
 * bc_freezero(p, strlen(p)). */
BC_WUR int bcd_nodekey_pem(const struct bcd_nodekey *k, char **out);
/* A CSR for the key (subject CN = cn, as bc_csr_make), made in the TPM for a TPM key;
 * *der malloc'd. */
BC_WUR int bcd_nodekey_csr(const struct bcd_nodekey *k, const char *cn, uint8_t **der, size_t *len,
                           struct bcd_msg *m);
/* The signer of k (bc/crypto.h) for bc_es256_sign and the client's calls: a file key
 * signs in memory; a key in the TPM signs there (or through bcd helper), opened for
 * each signature, and bc_es256_sign checks each under k->key before it is used. s
 * borrows k, which must outlive it. */
BC_WUR int bcd_nodekey_signer(const struct bcd_nodekey *k, struct bc_signer *s);
/* Wipes the unique and frees the key; k is zeroed. NULL is fine. */
void bcd_nodekey_free(struct bcd_nodekey *k);

/* 1 when the leaf certificate (DER) carries a urn:bc:tpm-ak: statement (its node key
 * is certified by that AK, and renewals must prove the next key the same way). */
int bcd_leaf_names_ak(const uint8_t *der, size_t len);

/* The AK a leaf certificate (DER) names, urn:bc:tpm-ak:sha256:<hex of the AK's TPM
 * name>: 1 with its name, 0 when the leaf names none, BC_ERR_INVALID when a statement
 * is malformed or there is more than one (name zeroed). */
BC_WUR int bcd_leaf_ak_name(const uint8_t *der, size_t len, uint8_t name[static BCD_TPM_NAME_LEN]);

#define BCD_RENEW_ANOTHER_TPM                                                                      \
	"renewal: this TPM's attestation key is not the one the certificate names (another "       \
	"TPM, or its endorsement seed changed): the certificate cannot be renewed here; join "     \
	"again: bcd join --reset --yes, then bcd join"

/* What a renewal of a certificate that names an AK sends as its key attestation: the
 * AK's public area and name, the next key's public area, and the AK's certification
 * of it (RenewRequest.key_attestation). Free with bcd_key_cert_free. */
struct bcd_key_cert {
	struct bcd_tpm_ak ak;
	uint8_t key_pub[BCD_TPM_PUBLIC_MAX];
	size_t key_pub_len;
	struct bcd_tpm_attest cert;
};
void bcd_key_cert_free(struct bcd_key_cert *c);
/* The next node key of a certificate that names the AK ak_name, in one session with
 * the config's TPM (or bcd helper): the AK derived and its name compared with ak_name,
 * the next key made in the TPM (k, never a file), its CSR signed there (*csr malloc'd)
 * and the AK's certification of it over sha256(csr), checked before it is returned.
 * A failure says which step in m with the spec's renewal messages: the TPM
 * unavailable (BC_ERR_UNAVAILABLE), another AK (BC_ERR_VERIFY, BCD_RENEW_ANOTHER_TPM),
 * the next key, or the certification. Nothing is kept on failure. */
BC_WUR int bcd_nodekey_new_certified(const struct bcd_config *cfg,
                                     const uint8_t ak_name[static BCD_TPM_NAME_LEN],
                                     struct bcd_nodekey *k, uint8_t **csr, size_t *csr_len,
                                     struct bcd_key_cert *kc, struct bcd_msg *m);

#endif
