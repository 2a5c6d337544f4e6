/* Test support for the tpm attestor: an agent on a swtpm (bct_tpm.h) answering its two
 * rounds with tpm2-tools, the way bcd does, and control planes whose [attestors.tpm]
 * trust the swtpm's manufacturer CA. Failures fail the cmocka test; what a function
 * returns or fills is the caller's to free (free(), bct_blob_free(),
 * bct_tpm_answer_free()). */
#ifndef BCT_TPM_AGENT_H
#define BCT_TPM_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "bct_tpm.h"
#include "bctest.h"
#include "bettercompute/attest/v1/tpm.pb-c.h"

/* Persistent handles the agent's keys are made at. */
#define BCT_AK_HANDLE  "0x81000011"
#define BCT_NK_HANDLE  "0x81000010" /* the node key: owner hierarchy, the spec's attributes */
#define BCT_NK_DECRYPT "0x81000012" /* sign and decrypt: not a node key */
#define BCT_NK_OTHER   "0x81000013" /* a good node key, but not the CSR's */
#define BCT_EK_HANDLE  "0x81010001"
#define BCT_NK_ATTRS   "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|sign"

struct bct_blob {
	uint8_t *p;
	size_t n;
};

void bct_blob_free(struct bct_blob *b);
struct bct_blob bct_blob_dup(const void *p, size_t n);

struct bct_tpm_agent {
	struct bct_tpm tpm;
	/* What the agent sends in round 1 (and again in round 2), field by field so that a
	 * test can put other bytes in one; it puts the agent's own back after. */
	struct bct_blob ek, ek_cert, inter, ak;
	uint8_t ak_name[64]; /* the AK's TPM name */
	size_t ak_name_len;
	char ek_hex[65];         /* sha256 of the EK's TPMT_PUBLIC: its binding key */
	char resolve_path[512];  /* the last bct_tpm_resolve() file */
	struct bct_blob made[4]; /* the agent's own bytes, freed by bct_tpm_agent_stop */
};

/* Starts the swtpm and makes the agent's EK, AK and node keys: 0, or 77 (swtpm or
 * tpm2-tools missing: the test skips), or 1 with a line naming test on stderr; all
 * but 0 stop it again. */
int bct_tpm_agent_start(struct bct_tpm_agent *ag, const char *test);
void bct_tpm_agent_stop(struct bct_tpm_agent *ag);

/* A file of the TPM's directory; the same TPM2B_PUBLIC file's TPMT_PUBLIC. */
struct bct_blob bct_tpm_file(struct bct_tpm_agent *ag, const char *name);
struct bct_blob bct_tpm_tpmt(struct bct_tpm_agent *ag, const char *name);
/* A CSR (DER) for the key at handle, subject CN=cn, signed in the TPM (tpm2_sign over
 * the SHA-256 of the to-be-signed part). */
struct bct_blob bct_tpm_csr(struct bct_tpm_agent *ag, const char *handle, const char *cn);
/* Round 1's TpmEvidence (packed) from ag's fields. */
uint8_t *bct_tpm_evidence(struct bct_tpm_agent *ag, size_t *len);

/* Round 2's answer, field by field. */
struct bct_tpm_answer {
	struct bct_blob state, secret, quote, qsig, nk_pub, cinfo, csig;
	uint8_t pcrs[24][32];
	uint32_t idx[24];
	size_t n_pcrs;
	int has_nk;
};

void bct_tpm_answer_free(struct bct_tpm_answer *a);
/* TPM2_Certify of the key at obj by the AK, qualified by q (32 bytes), through
 * tpm2_send (two password sessions with empty auth, the AK's own scheme), into
 * a->cinfo and a->csig. */
void bct_tpm_certify(struct bct_tpm_agent *ag, const char *obj, const uint8_t q[32],
                     struct bct_tpm_answer *a);
/* Round 2 the way an honest agent answers ch for csr, with the node key at nk
 * certified (NULL: none). */
void bct_tpm_answer_make(struct bct_tpm_agent *ag,
                         const Bettercompute__Attest__V1__TpmChallenge *ch,
                         const struct bct_blob *csr, const char *nk, struct bct_tpm_answer *a);
/* Round 2's TpmAnswer (packed): a with ag's evidence. */
uint8_t *bct_tpm_answer_pack(struct bct_tpm_agent *ag, const struct bct_tpm_answer *a, size_t *len);

/* Round 1 on cp for csr, which must be answered with a challenge (free_unpacked). */
Bettercompute__Attest__V1__TpmChallenge *bct_tpm_round1(struct bct_tpm_agent *ag, struct bct_cp *cp,
                                                        const struct bct_blob *csr);
/* Round 2 with a (claiming uuid as the product UUID, may be NULL): bct_join's status. */
int bct_tpm_round2(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                   const struct bct_tpm_answer *a, struct bc_join_answer *ans);
int bct_tpm_round2_uuid(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                        const struct bct_tpm_answer *a, const char *uuid,
                        struct bc_join_answer *ans);
/* Round 2 with a refused by reason, no node written. */
void bct_tpm_refused(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                     const struct bct_tpm_answer *a, const char *reason);
/* Round 1, then the honest answer into a with nk certified (NULL: none). */
void bct_tpm_full_answer(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                         const char *nk, struct bct_tpm_answer *a);
/* Both rounds for csr (the node key certified) while an enrollment request waits:
 * pending, retry_after seconds asked, its id ("jr_...") in id. */
void bct_tpm_pending(struct bct_tpm_agent *ag, struct bct_cp *cp, const struct bct_blob *csr,
                     uint32_t retry_after, char id[64]);

/* A control plane whose [attestors.tpm] has ek_roots = [roots] and these lines (may be
 * NULL); the same with the swtpm's manufacturer root. */
void bct_tpm_cp_start_roots(struct bct_cp *cp, const char *roots, const char *lines);
void bct_tpm_cp_start(struct bct_tpm_agent *ag, struct bct_cp *cp, const char *lines);
/* A resolve file sending the agent's EK into pool (and naming node when set; either may
 * be NULL): its path, ag->resolve_path. */
const char *bct_tpm_resolve(struct bct_tpm_agent *ag, const char *pool, const char *node);
/* A control plane whose resolve file sends the agent's EK into a pool of root with this
 * policy, the pool's id into pool. The pool's id is made first: the resolve file names
 * it before the store exists. With ek_roots = [roots], or the manufacturer root. */
void bct_tpm_cp_start_resolved_roots(struct bct_tpm_agent *ag, struct bct_cp *cp, const char *roots,
                                     const char *policy, char pool[64]);
void bct_tpm_cp_start_resolved(struct bct_tpm_agent *ag, struct bct_cp *cp, const char *policy,
                               char pool[64]);

#endif
