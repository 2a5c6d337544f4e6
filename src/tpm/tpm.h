/* TPM 2.0 structures and checks for the server (libtss2-mu only; the server links no
 * TPM): names, object attributes, public areas as OpenSSL keys, TPMS_ATTEST and
 * TPMT_SIGNATURE, PCR digests and selections, software MakeCredential and EK
 * certificate chains. Formulas: shared/notes/TPM.md.
 *
 * Every input here is untrusted bytes from the network. Parsers unmarshal with
 * libtss2-mu, refuse trailing bytes (BC_ERR_TRAILING), truncated input
 * (BC_ERR_TRUNCATED) and anything else out of shape (BC_ERR_INVALID), and bound
 * sizes (BC_ERR_LIMIT). A public area must also marshal back to exactly the bytes it
 * came from, so an object has one encoding and one name.
 *
 * Errors: 0 or a negative BC_ERR_*; BC_ERR_VERIFY when a signature, HMAC or chain
 * does not verify. Out-pointers are set to NULL/0 first; the caller frees what it
 * gets (free(), EVP_PKEY_free()). */
#ifndef BC_TPM_H
#define BC_TPM_H

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>
#include <tss2/tss2_tpm2_types.h>

#include "bc/err.h"

#define BC_TPM_MAX_STRUCT 2048     /* a TPMT_PUBLIC, TPMS_ATTEST or TPMT_SIGNATURE */
#define BC_TPM_NAME_MAX   (2 + 64) /* nameAlg || digest */

/* TPMA_OBJECT masks checked here (TPM 2.0 Part 2). */
#define BC_TPMA_FIXED_TPM             0x2u
#define BC_TPMA_FIXED_PARENT          0x10u
#define BC_TPMA_SENSITIVE_DATA_ORIGIN 0x20u
#define BC_TPMA_RESTRICTED            0x10000u
#define BC_TPMA_DECRYPT               0x20000u
#define BC_TPMA_SIGN                  0x40000u

/* The one adapter from TSS2 return codes (libtss2-mu) to ours: a short buffer is
 * BC_ERR_TRUNCATED, a bad size or value BC_ERR_INVALID, anything else
 * BC_ERR_INVALID too (the input is what was wrong). */
BC_WUR int bc_tpm_err(uint32_t tss2_rc);

/* A TPM_ALG_ID hash: its OpenSSL digest and size, NULL / 0 for any other. Only
 * SHA-256, SHA-384 and SHA-512 are accepted anywhere. */
const EVP_MD *bc_tpm_md(uint16_t alg);
size_t bc_tpm_hash_size(uint16_t alg);

/* A TPMT_PUBLIC (not a TPM2B_PUBLIC). */
BC_WUR int bc_tpm_public_parse(const uint8_t *p, size_t len, TPMT_PUBLIC *out);
/* name = u16 nameAlg || H_nameAlg(bytes), bytes a TPMT_PUBLIC that parsed; into
 * name[BC_TPM_NAME_MAX], *len its length. */
BC_WUR int bc_tpm_name(const TPMT_PUBLIC *pub, const uint8_t *bytes, size_t n,
                       uint8_t name[static BC_TPM_NAME_MAX], size_t *len);

/* 0 when pub is an attestation key: restricted, sign, fixedTPM, fixedParent,
 * sensitiveDataOrigin set and decrypt clear, RSA (2048+) or ECC (P-256, P-384)
 * with a signing scheme; BC_ERR_INVALID otherwise. */
BC_WUR int bc_tpm_check_ak(const TPMT_PUBLIC *pub);
/* 0 when pub is a key made in a TPM that can never leave it and signs: fixedTPM,
 * fixedParent, sensitiveDataOrigin, sign set, decrypt clear; BC_ERR_INVALID. */
BC_WUR int bc_tpm_check_node_key(const TPMT_PUBLIC *pub);
/* 0 when pub is an endorsement key we can challenge: a restricted decryption key
 * (fixedTPM, fixedParent, sensitiveDataOrigin, restricted, decrypt; sign clear),
 * RSA-2048 or ECC P-256/P-384, AES-128 or AES-256 CFB, nameAlg SHA-256/384. */
BC_WUR int bc_tpm_check_ek(const TPMT_PUBLIC *pub);

/* The public key of an RSA or ECC (P-256, P-384) public area, the point checked. */
BC_WUR int bc_tpm_public_key(const TPMT_PUBLIC *pub, EVP_PKEY **out);

/* A TPMS_ATTEST. Checks nothing but its shape: the caller checks magic and type. */
BC_WUR int bc_tpm_attest_parse(const uint8_t *p, size_t len, TPMS_ATTEST *out);
/* A TPMT_SIGNATURE of RSASSA, RSAPSS or ECDSA with SHA-256/384/512. */
BC_WUR int bc_tpm_signature_parse(const uint8_t *p, size_t len, TPMT_SIGNATURE *out);
/* Verifies sig over msg (the attest bytes as the TPM produced them) with key, the
 * signer's key from bc_tpm_public_key. BC_ERR_VERIFY when it does not verify or
 * the signature's algorithm does not fit the key. */
BC_WUR int bc_tpm_signature_verify(EVP_PKEY *key, const TPMT_SIGNATURE *sig, const uint8_t *msg,
                                   size_t len);

/* The quote's selection is exactly one bank, alg, and covers every PCR of want
 * (indexes < 24); its selected PCRs, ascending, into sel[24] and *n. */
BC_WUR int bc_tpm_selection(const TPML_PCR_SELECTION *s, uint16_t alg, const uint32_t *want,
                            size_t n_want, uint32_t sel[static 24], size_t *n);
/* A quote's pcrDigest: H_hash(values[0] || values[1] || ...), each value of the
 * bank's digest size, hash the signing scheme's (the TPM digests the selection with
 * the quote's signing hash, not the bank's). */
BC_WUR int bc_tpm_pcr_digest(uint16_t bank, uint16_t hash, const uint8_t *const *values, size_t n,
                             uint8_t *out, size_t *out_len);
/* The hash a parsed TPMT_SIGNATURE names. */
uint16_t bc_tpm_signature_hash(const TPMT_SIGNATURE *sig);

/* MakeCredential in software: the credential for name (the AK's) and secret under
 * the EK (checked by bc_tpm_check_ek). id_object receives a TPM2B_ID_OBJECT and
 * enc_secret a TPM2B_ENCRYPTED_SECRET, both with their size prefix. */
BC_WUR int bc_tpm_make_credential(const TPMT_PUBLIC *ek, const uint8_t *name, size_t name_len,
                                  const uint8_t *secret, size_t secret_len, uint8_t **id_object,
                                  size_t *id_len, uint8_t **enc_secret, size_t *enc_len);
/* The KDFs of Part 1, exposed for tests. out receives bits/8 bytes. */
BC_WUR int bc_tpm_kdfa(uint16_t alg, const uint8_t *key, size_t key_len, const char *label,
                       const uint8_t *u, size_t u_len, const uint8_t *v, size_t v_len,
                       uint32_t bits, uint8_t *out);
BC_WUR int bc_tpm_kdfe(uint16_t alg, const uint8_t *z, size_t z_len, const char *label,
                       const uint8_t *pu, size_t pu_len, const uint8_t *pv, size_t pv_len,
                       uint32_t bits, uint8_t *out);

/* The EK certificate (DER) chains to one of roots through the given intermediates
 * (DER), at time now_ms; a root need not be self-signed (an intermediate or a
 * cross-signed root the operator trusts ends the chain), and its key is the EK's
 * (ek_key). *cert receives the parsed certificate (for its issuer and serial). BC_ERR_VERIFY: no
 * chain; BC_ERR_CONFLICT: a chain, but another key; BC_ERR_INVALID: not a certificate. */
BC_WUR int bc_tpm_ek_cert_verify(X509 *const *roots, size_t n_roots, const uint8_t *der, size_t len,
                                 const uint8_t *const *inter, const size_t *inter_lens,
                                 size_t n_inter, EVP_PKEY *ek_key, int64_t now_ms, X509 **cert);

/* An AK's TPM2_Certify of a key, qualified by sha256(csr), checked as a certified node
 * key (the join's node-key proof and every AK-certified renewal): the signature by ak,
 * a TPM_ST_ATTEST_CERTIFY whose extraData is csr_sha256, the certified name the TPM
 * name of key_public, the key's attributes (bc_tpm_check_node_key), and its
 * SubjectPublicKeyInfo the CSR's (spki_sha256). Returns 0 with *result set, or a
 * negative BC_ERR_* when the check itself could not run. */
enum bc_tpm_certify_result {
	BC_TPM_CERTIFY_OK = 0,
	BC_TPM_CERTIFY_MALFORMED,
	BC_TPM_CERTIFY_SIGNATURE,
	BC_TPM_CERTIFY_NONCE,
	BC_TPM_CERTIFY_NAME,
	BC_TPM_CERTIFY_ATTRIBUTES,
	BC_TPM_CERTIFY_NOT_CSR,
};
BC_WUR int bc_tpm_check_certify(EVP_PKEY *ak, const uint8_t *key_public, size_t key_public_len,
                                const uint8_t *certify_info, size_t certify_info_len,
                                const uint8_t *signature, size_t signature_len,
                                const uint8_t csr_sha256[static 32],
                                const uint8_t spki_sha256[static 32],
                                enum bc_tpm_certify_result *result);

#endif
