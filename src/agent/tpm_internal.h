/* What the files of bcd's TPM client (tpm.c, tpm_quote.c, tpm_nodekey.c) share: the
 * connection, the one TSS2 error adapter, primaries from templates checked against
 * what came back, and attestation checks. Not for use outside src/agent/tpm*.c. */
#ifndef BCD_TPM_INTERNAL_H
#define BCD_TPM_INTERNAL_H

#include <openssl/evp.h>
#include <tss2/tss2_esys.h>

#include "agent/tpm.h"

struct bcd_tpm {
	TSS2_TCTI_CONTEXT *tcti;
	ESYS_CONTEXT *esys;
	uint32_t last_rc;
	uint16_t nv_max; /* the largest NV_Read the TPM takes */
	char err[320];
};

/* The adapter: records "what: <Tss2_RC_Decode>" and the code in t, and maps the code
 * onto ours (see tpm.h). rc 0 returns 0 and records nothing. */
BC_WUR int bcd_tpmi_rc(struct bcd_tpm *t, TSS2_RC rc, const char *what);
/* Records a failure that is not the TPM's (last_rc 0). */
void bcd_tpmi_say(struct bcd_tpm *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Flushes a transient object or session and sets *h to ESYS_TR_NONE; ESYS_TR_NONE is
 * fine. A failure is not reported: there is nothing the caller could do. */
void bcd_tpmi_flush(struct bcd_tpm *t, ESYS_TR *h);

/* CreatePrimary of tmpl in hierarchy; *pub the public area, checked to be tmpl's but
 * for the unique (whose points or modulus must have the template's sizes). *h is
 * ESYS_TR_NONE on failure; the caller flushes it otherwise. */
BC_WUR int bcd_tpmi_primary(struct bcd_tpm *t, ESYS_TR hierarchy, const TPMT_PUBLIC *tmpl,
                            const char *what, ESYS_TR *h, TPMT_PUBLIC *pub);
/* The marshaled TPMT_PUBLIC and its name (0x000B || SHA-256). */
BC_WUR int bcd_tpmi_public_bytes(const TPMT_PUBLIC *pub, uint8_t out[static BCD_TPM_PUBLIC_MAX],
                                 size_t *len, uint8_t name[static BCD_TPM_NAME_LEN]);
/* The OpenSSL key of an RSA or ECC P-256 public area. */
BC_WUR int bcd_tpmi_pkey(const TPMT_PUBLIC *pub, EVP_PKEY **out);

/* Derives the AK: *h loaded (the caller flushes), ak filled, *key its public key. */
BC_WUR int bcd_tpmi_ak_load(struct bcd_tpm *t, ESYS_TR *h, struct bcd_tpm_ak *ak, EVP_PKEY **key);

/* An ECDSA TPMT_SIGNATURE with hash as r || s (BC_ERR_INVALID for another shape). */
BC_WUR int bcd_tpmi_ecdsa_p1363(const TPMT_SIGNATURE *sig, TPMI_ALG_HASH hash,
                                uint8_t out[static 64]);
/* Checks a TPM2B_ATTEST and its signature from the AK (key) and copies them into out:
 * it unmarshals exactly, has the magic, type and extraData (extra, as the TPM was
 * given it) wanted, and the signature (ECDSA-SHA256) verifies. *parsed receives the
 * structure. */
BC_WUR int bcd_tpmi_attest_take(struct bcd_tpm *t, const TPM2B_ATTEST *q, const TPMT_SIGNATURE *sig,
                                EVP_PKEY *key, TPM2_ST type, const TPM2B_DATA *extra,
                                TPMS_ATTEST *parsed, struct bcd_tpm_attest *out);

#endif
