/* Test support: a swtpm with an EK certificate from a manufacturer CA made for the
 * test (swtpm_setup + swtpm_localca, shared/notes/TPM.md), on a free loopback port,
 * driven by tpm2-tools commands. Every command is followed by a flush of transient
 * objects and sessions: swtpm has no resource manager in front of it. */
#ifndef BCT_TPM_H
#define BCT_TPM_H

#include <stddef.h>
#include <stdint.h>

struct bct_tpm {
	char dir[256]; /* its files; commands run here */
	unsigned port;
	char root_pem[300]; /* the manufacturer root: ek_roots */
};

/* 0, or 77 (with a "skipped: ..." line) when swtpm or tpm2-tools are missing, or
 * -1 when it did not start. Sets TPM2TOOLS_TCTI for this process. */
int bct_tpm_start(struct bct_tpm *t);
void bct_tpm_stop(struct bct_tpm *t);
/* Runs a shell command in t->dir (printf-like), then flushes the TPM. The command's
 * exit status; its output goes to t->dir/log. */
int bct_tpm_sh(struct bct_tpm *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A file of t->dir (malloc'd, NULL when unreadable). */
uint8_t *bct_tpm_read(struct bct_tpm *t, const char *name, size_t *len);
int bct_tpm_write(struct bct_tpm *t, const char *name, const void *p, size_t len);
/* Hex of bytes into a malloc'd string. */
char *bct_hex(const uint8_t *p, size_t len);

#endif
