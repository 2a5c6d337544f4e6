/* One session with whatever derives node keys: the TPM itself (a root bcd, bcd join),
 * or bcd helper for an unprivileged bcd node under [helper] (helper.h). The node-key
 * code (nodekey.c) uses these and never cares which; the helper's answers are checked
 * here as strictly as the TPM's own (bcd_tpm_* checks those): public areas parse
 * exactly and have the attributes asked for, and a signature verifies under the key's
 * public half before it is returned.
 *
 * A session is short: opened for one operation or one renewal and closed before it
 * returns (swtpm takes one connection at a time). Errors: 0 or a negative BC_ERR_*,
 * with one line in err; BC_ERR_UNAVAILABLE when the TPM or the helper cannot be
 * reached. */
#ifndef BCD_KEYOPS_H
#define BCD_KEYOPS_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/tpm.h"
#include "bc/err.h"

struct bcd_keyops;

/* A key's public half as the TPM derived it. Free with bcd_keyops_key_free. */
struct bcd_keyops_key {
	uint8_t pub[BCD_TPM_PUBLIC_MAX]; /* marshaled TPMT_PUBLIC */
	size_t pub_len;
	uint8_t name[BCD_TPM_NAME_LEN];
	EVP_PKEY *pkey;
};
void bcd_keyops_key_free(struct bcd_keyops_key *k);

/* helper non-NULL and non-empty: a session with bcd helper at that socket; otherwise
 * the TPM at tcti. Free with bcd_keyops_close. */
BC_WUR int bcd_keyops_open(const char *tcti, const char *helper, struct bcd_keyops **out, char *err,
                           size_t errlen);
void bcd_keyops_close(struct bcd_keyops *s);
/* The AK (an attestation key by its attributes), its name and its public key. */
BC_WUR int bcd_keyops_ak(struct bcd_keyops *s, struct bcd_tpm_ak *ak, EVP_PKEY **key, char *err,
                         size_t errlen);
/* The node key of unique (a node key by its attributes, ECC P-256). */
BC_WUR int bcd_keyops_key(struct bcd_keyops *s, const uint8_t unique[static BCD_TPM_UNIQUE_LEN],
                          struct bcd_keyops_key *out, char *err, size_t errlen);
/* ECDSA by the key of unique over a SHA-256 digest, P1363 r || s; the caller checks it
 * under the key it expects (the signer's check in bc_es256_sign does). */
BC_WUR int bcd_keyops_sign(struct bcd_keyops *s, const uint8_t unique[static BCD_TPM_UNIQUE_LEN],
                           const uint8_t digest[static 32], uint8_t sig[static 64], char *err,
                           size_t errlen);
/* The AK's certification of the key of unique over qualifying (at most 64 bytes),
 * as bytes only: the caller checks it (bc_tpm_check_certify) under the AK it got
 * from bcd_keyops_ak. Free with bcd_tpm_attest_free. */
BC_WUR int bcd_keyops_certify(struct bcd_keyops *s, const uint8_t unique[static BCD_TPM_UNIQUE_LEN],
                              const uint8_t *qualifying, size_t len, struct bcd_tpm_attest *out,
                              char *err, size_t errlen);

#endif
