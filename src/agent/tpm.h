/* bcd's TPM client, over tpm2-tss ESAPI: the tpm attestor's evidence and answer (EK, AK,
 * ActivateCredential, Quote, PCR reads) and the node key held in the TPM (derived from a
 * 32-byte unique, signing digests and CSRs, certified by the AK). Formulas and
 * templates: shared/notes/TPM.md; the spec's "tpm", "bcd with its TPM" and "The node key
 * in the TPM" sections.
 *
 * Keys: nothing is made persistent. The EK, the AK and a node key are primaries derived
 * again from their fixed templates (and, for a node key, its unique) whenever they are
 * used; every transient object and session a call creates is flushed before it
 * returns, except a loaded node key (bcd_tpm_nodekey_load), flushed by
 * bcd_tpm_nodekey_free. A TPM without a resource manager (swtpm) has 3 object slots:
 * bcd_tpm_activate needs all three (EK, AK and a policy session), so free loaded node
 * keys before calling it; every other call needs at most two beside a loaded node key.
 *
 * Trust: every byte from the TPM is untrusted. Sizes are bounded, structures are
 * marshaled with libtss2-mu into bounded buffers, the public areas returned are checked
 * against the templates asked for, and quotes, certifications and signatures are
 * verified under the key that made them before they are returned.
 *
 * Errors: 0 or a negative BC_ERR_*. TSS2 return codes pass through one adapter:
 * BC_ERR_UNAVAILABLE when the TPM cannot be reached (TCTI), BC_ERR_NOMEM, BC_ERR_INVALID
 * for a response out of shape, BC_ERR_IO when the TPM refused a command. After a
 * failure bcd_tpm_error(t) names the step and the TSS2 text (Tss2_RC_Decode) and
 * bcd_tpm_last_rc(t) gives the TSS2 code (0 when the failure was not the TPM's).
 * Out-pointers are set to NULL/0 first; structures filled here are freed with their
 * *_free function, which wipes secrets. A struct bcd_tpm is used by one thread at a
 * time. */
#ifndef BCD_TPM_H
#define BCD_TPM_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "bc/crypto.h"
#include "bc/err.h"

#define BCD_TPM_UNIQUE_LEN   32
#define BCD_TPM_NODE_KEY_PEM "BCD TPM NODE KEY" /* the PEM type of a node.key record */
#define BCD_TPM_PUBLIC_MAX   640                /* a marshaled TPMT_PUBLIC */
#define BCD_TPM_NAME_LEN     34                 /* u16 SHA-256 || SHA-256 digest */
#define BCD_TPM_EK_CERT_MAX  4096               /* DER, as read from NV */
#define BCD_TPM_PCR_COUNT    24

/* TCG EK Credential Profile NV indexes of EK certificates. */
#define BCD_TPM_NV_EK_CERT_RSA2048    0x01C00002u
#define BCD_TPM_NV_EK_CERT_ECC_P256   0x01C0000Au
#define BCD_TPM_NV_EK_CERT_ECC_P384_H 0x01C00016u

struct bcd_tpm;

/* Connects to the TPM named by a TCTI string: "device:/dev/tpmrm0" on a host,
 * "swtpm:host=127.0.0.1,port=N" for swtpm (its control channel on N+1). The TPM must be
 * started (the kernel and swtpm's startup-clear do it). One probe command runs, so a
 * TPM that cannot be reached fails here: BC_ERR_UNAVAILABLE with one line in err
 * naming the TCTI. *out: free with bcd_tpm_close. */
BC_WUR int bcd_tpm_open(const char *tcti, struct bcd_tpm **out, char *err, size_t errlen);
/* Closes the connection; NULL is fine. Free loaded node keys first. */
void bcd_tpm_close(struct bcd_tpm *t);
/* The last failure: a NUL-terminated line ("" when none), valid until the next call. */
const char *bcd_tpm_error(const struct bcd_tpm *t);
uint32_t bcd_tpm_last_rc(const struct bcd_tpm *t);

/* ---- the endorsement key (tpm.c) ---- */
enum bcd_tpm_ek_type {
	BCD_TPM_EK_RSA2048 = 0, /* template L-1, the default */
	BCD_TPM_EK_ECC_P256 = 1 /* template L-2 */
};
struct bcd_tpm_ek {
	uint8_t pub[BCD_TPM_PUBLIC_MAX]; /* marshaled TPMT_PUBLIC */
	size_t pub_len;
	uint8_t *cert; /* DER, malloc'd; NULL when the TPM has none */
	size_t cert_len;
};
/* The EK of type (Esys_CreatePrimary on the endorsement hierarchy with the default
 * template, then flushed) and its certificate from NV: 0x01C00002 for RSA, 0x01C0000A
 * then 0x01C00016 for ECC. A certificate is returned only when its key is this EK's
 * (swtpm's 0x01C00016 holds a P-384 EK's, so a P-256 EK gets none); a missing one is
 * normal (cert NULL, and bcd_tpm_error says why). Free with bcd_tpm_ek_free. */
BC_WUR int bcd_tpm_ek(struct bcd_tpm *t, enum bcd_tpm_ek_type type, struct bcd_tpm_ek *out);
void bcd_tpm_ek_free(struct bcd_tpm_ek *ek);

/* ---- the attestation key (tpm.c) ---- */
struct bcd_tpm_ak {
	uint8_t pub[BCD_TPM_PUBLIC_MAX]; /* marshaled TPMT_PUBLIC */
	size_t pub_len;
	uint8_t name[BCD_TPM_NAME_LEN]; /* 0x000B || SHA-256(pub) */
};
/* The AK: a restricted P-256 ECDSA-SHA256 signing primary of the endorsement hierarchy
 * (fixedTPM, fixedParent, sensitiveDataOrigin, userWithAuth, noDA, restricted, sign)
 * from a fixed template, so a TPM always derives the same AK until its endorsement
 * seed changes. Nothing to free. */
BC_WUR int bcd_tpm_ak(struct bcd_tpm *t, struct bcd_tpm_ak *out);

/* ---- round 2 of a tpm join (tpm.c, tpm_quote.c) ---- */
/* ActivateCredential for the AK under the EK of ek_type, authorized by a
 * PolicySecret(endorsement) session. id_object is a TPM2B_ID_OBJECT and enc_secret a
 * TPM2B_ENCRYPTED_SECRET, each with its 2-byte size (TpmChallenge's fields); a trailing
 * byte is BC_ERR_TRAILING. *secret: malloc'd, at most 64 bytes; the caller wipes it
 * (bc_freezero). A credential made for another AK or EK is BC_ERR_IO (the TPM's
 * integrity check, rc in bcd_tpm_last_rc). Needs 3 free object slots on swtpm. */
BC_WUR int bcd_tpm_activate(struct bcd_tpm *t, enum bcd_tpm_ek_type ek_type,
                            const uint8_t *id_object, size_t id_len, const uint8_t *enc_secret,
                            size_t enc_len, uint8_t **secret, size_t *secret_len);

struct bcd_tpm_pcr {
	uint32_t index;
	uint8_t digest[64];
	size_t len; /* the bank's digest size */
};
/* A TPMS_ATTEST and its TPMT_SIGNATURE by the AK, as the TPM produced them, with the
 * AK that signed (its name, to compare with one a certificate names). For a quote,
 * the PCR values it covers too, ascending by index. */
struct bcd_tpm_attest {
	uint8_t *attest; /* marshaled TPMS_ATTEST, malloc'd */
	size_t attest_len;
	uint8_t *sig; /* marshaled TPMT_SIGNATURE, malloc'd */
	size_t sig_len;
	uint8_t ak_name[BCD_TPM_NAME_LEN];
	uint16_t pcr_hash_alg; /* quotes only */
	struct bcd_tpm_pcr pcrs[BCD_TPM_PCR_COUNT];
	size_t n_pcrs;
};
void bcd_tpm_attest_free(struct bcd_tpm_attest *a);

/* A quote by the AK of the PCRs (indexes < 24, any order, duplicates ignored, at least
 * one) of the bank hash_alg (TPM_ALG_SHA256 0x000B, SHA384 0x000C or SHA512 0x000D;
 * BC_ERR_UNSUPPORTED otherwise) over extra (at most 64 bytes), with the values read by
 * PCR_Read. Checked before it is returned: the signature under the AK, a QUOTE with
 * this extraData and selection, and a pcrDigest that is the hash of the values read
 * (read again when a PCR changed in between). Free with bcd_tpm_attest_free. */
BC_WUR int bcd_tpm_quote(struct bcd_tpm *t, uint16_t hash_alg, const uint32_t *pcrs, size_t n,
                         const uint8_t *extra, size_t extra_len, struct bcd_tpm_attest *out);

/* ---- the node key (tpm_nodekey.c) ---- */
/* A node key loaded in the TPM: an unrestricted P-256 signing primary of the owner
 * hierarchy (fixedTPM, fixedParent, sensitiveDataOrigin, userWithAuth, noDA, sign;
 * scheme NULL so each signature names its hash) whose template's unique is the
 * 32-byte unique, so the same unique derives the same key on the same TPM until its
 * owner seed changes (TPM2_Clear). */
struct bcd_tpm_nodekey;
/* A fresh unique (random bytes) for a new node key. */
BC_WUR int bcd_tpm_unique_new(uint8_t unique[static BCD_TPM_UNIQUE_LEN]);
/* Derives and loads the key of unique. It stays loaded (one object slot) until
 * bcd_tpm_nodekey_free, which flushes it; t must outlive it. */
BC_WUR int bcd_tpm_nodekey_load(struct bcd_tpm *t, const uint8_t unique[static BCD_TPM_UNIQUE_LEN],
                                struct bcd_tpm_nodekey **out);
void bcd_tpm_nodekey_free(struct bcd_tpm_nodekey *k);
/* Its public key (borrowed: valid while k is; EVP_PKEY_up_ref to keep it). */
EVP_PKEY *bcd_tpm_nodekey_pkey(const struct bcd_tpm_nodekey *k);
/* Its marshaled TPMT_PUBLIC (borrowed) and TPM name. */
const uint8_t *bcd_tpm_nodekey_public(const struct bcd_tpm_nodekey *k, size_t *len);
const uint8_t *bcd_tpm_nodekey_name(const struct bcd_tpm_nodekey *k);

/* ECDSA in the TPM over a digest of 32, 48 or 64 bytes (SHA-256, -384, -512), into
 * IEEE P1363 r || s. Not checked here: whoever uses it checks it under the key it
 * expects, where the signature is used (bc_es256_sign for a signer's, X509_REQ_verify
 * for a CSR's), so the check is made once, by the side that relies on it. */
BC_WUR int bcd_tpm_nodekey_sign(struct bcd_tpm *t, struct bcd_tpm_nodekey *k, const uint8_t *digest,
                                size_t len, uint8_t sig[static 64]);
/* A CSR (subject CN = cn, no extensions, as bc_csr_make) for the key, signed in the TPM
 * with ECDSA-SHA256 and verified; *der malloc'd. */
BC_WUR int bcd_tpm_nodekey_csr(struct bcd_tpm *t, struct bcd_tpm_nodekey *k, const char *cn,
                               uint8_t **der, size_t *len);
/* A CSR as bcd_tpm_nodekey_csr for the key of s (a signer whose fn signs, s->key its
 * public half), its to-be-signed part's SHA-256 signed through s->fn (ECDSA-SHA256)
 * and the result verified under s->key (BC_ERR_VERIFY otherwise); *der malloc'd. */
BC_WUR int bcd_csr_signed(const struct bc_signer *s, const char *cn, uint8_t **der, size_t *len);
/* The AK's TPM2_Certify of the key qualified by qualifying (the caller passes
 * sha256(csr); at most 64 bytes), checked before it is returned: signed by the AK, a
 * CERTIFY with this extraData naming this key. The AK is derived and flushed here.
 * Free with bcd_tpm_attest_free. */
BC_WUR int bcd_tpm_certify(struct bcd_tpm *t, struct bcd_tpm_nodekey *k, const uint8_t *qualifying,
                           size_t len, struct bcd_tpm_attest *out);

/* The node.key record: one PEM block of type "BCD TPM NODE KEY" whose bytes are the
 * unique. encode: *pem malloc'd, NUL-terminated (wipe with bc_freezero(p, strlen(p))).
 * decode: exactly one such block with only white space around it and no headers, of
 * exactly 32 bytes (BC_ERR_INVALID otherwise, BC_ERR_TRAILING for text after it,
 * BC_ERR_LIMIT over 4 KiB); unique is wiped on failure. */
BC_WUR int bcd_tpm_record_encode(const uint8_t unique[static BCD_TPM_UNIQUE_LEN], char **pem);
BC_WUR int bcd_tpm_record_decode(const char *pem, size_t len,
                                 uint8_t unique[static BCD_TPM_UNIQUE_LEN]);

#endif
