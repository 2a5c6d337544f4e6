/* pcrPolicy: allowed digests per PCR (pcr_policy), then a command that reads the
 * quoted values as JSON on stdin and answers "accept" or a reason on stdout
 * (pcr_policy_command). pcr_policy refusing is pcr-policy; the command refusing is
 * "pcr-policy:<its reason>" when its reason is a short name, else pcr-policy; its
 * answer goes to the log either way. */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "attest/tpm_internal.h"
#include "bc/codec.h"
#include "bc/json.h"
#include "bc/log.h"
#include "bc/reasons.h"
#include "bc/proc.h"

#define CMD_TIMEOUT_MS 5000
#define CMD_ANSWER_MAX 256

/* The command's reasons, as published: a refusal reason is a static string (the
 * refusal summary and the metrics keep the pointer past the attestor's config, which a
 * reload frees), so they live for the process, and there are at most POLICY_REASONS of
 * them, so that a command cannot grow the metrics' series. Not attestor state: the
 * same name is the same string whichever config answered it. */
#define POLICY_PREFIX     BC_R_PCR_POLICY ":"
#define POLICY_REASONS    16
#define POLICY_REASON_LEN 48
static char policy_reasons[POLICY_REASONS][sizeof(POLICY_PREFIX) + POLICY_REASON_LEN];
static size_t n_policy_reasons;
static pthread_mutex_t policy_reasons_mu = PTHREAD_MUTEX_INITIALIZER;

/* A name: 1 to POLICY_REASON_LEN of [a-z0-9-], starting with a letter or digit. */
static int reason_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > POLICY_REASON_LEN || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* "pcr-policy:<answer>" for an answer that is a name, while the table has room or
 * holds it; else pcr-policy. */
static const char *policy_reason(const char *answer)
{
	const char *r = NULL;
	char want[sizeof(policy_reasons[0])];

	if (!reason_name_ok(answer))
		return BC_R_PCR_POLICY;
	snprintf(want, sizeof(want), "%s%s", POLICY_PREFIX, answer);
	pthread_mutex_lock(&policy_reasons_mu);
	for (size_t i = 0; i < n_policy_reasons && r == NULL; i++)
		if (strcmp(policy_reasons[i], want) == 0)
			r = policy_reasons[i];
	if (r == NULL && n_policy_reasons < POLICY_REASONS) {
		memcpy(policy_reasons[n_policy_reasons], want, sizeof(want));
		r = policy_reasons[n_policy_reasons++];
	}
	pthread_mutex_unlock(&policy_reasons_mu);
	return r != NULL ? r : BC_R_PCR_POLICY;
}

static int allowed(const struct tpm_cfg *c, const uint32_t *idx, const uint8_t *const *values,
                   size_t n)
{
	size_t hs = bc_tpm_hash_size(c->pcr_alg);

	for (uint32_t i = 0; i < TPM_PCR_MAX; i++) {
		const struct tpm_pcr_allowed *a = &c->policy[i];
		int seen = 0, ok = 0;
		if (a->n == 0)
			continue;
		for (size_t k = 0; k < n; k++) {
			if (idx[k] != i)
				continue;
			seen = 1;
			for (size_t j = 0; j < a->n; j++)
				ok |= memcmp(values[k], a->digests[j], hs) == 0;
		}
		/* a constrained PCR the quote did not cover cannot be shown to comply */
		if (!seen || !ok)
			return 0;
	}
	return 1;
}

static char *policy_input(const struct tpm_cfg *c, const char *ek_hex, const uint32_t *idx,
                          const uint8_t *const *values, size_t n)
{
	size_t hs = bc_tpm_hash_size(c->pcr_alg);
	json_t *pcrs = json_object(), *doc;
	char key[8], hex[2 * 64 + 1], *s;

	for (size_t k = 0; k < n; k++) {
		snprintf(key, sizeof(key), "%u", idx[k]);
		bc_hex_encode_to(values[k], hs, hex);
		json_object_set_new(pcrs, key, json_string(hex));
	}
	doc = json_pack("{s:s, s:s, s:o}", "ekSha256", ek_hex, "bank",
	                c->pcr_alg == TPM2_ALG_SHA256   ? "sha256"
	                : c->pcr_alg == TPM2_ALG_SHA384 ? "sha384"
	                                                : "sha512",
	                "pcrs", pcrs);
	s = doc ? bc_json_dump(doc) : NULL;
	json_decref(doc);
	return s;
}

/* 1 accept, 0 refuse (*reason its reason, the answer logged), < 0 the command could
 * not run. */
static int run_command(const struct tpm_cfg *c, const char *input, const char **reason)
{
	char answer[CMD_ANSWER_MAX + 1] = "", *nl;
	size_t alen = 0;
	int status = 0, rc;

	if ((rc = bc_proc_run_sh(c->policy_cmd, input, strlen(input), CMD_TIMEOUT_MS, answer,
	                         CMD_ANSWER_MAX, &alen, &status)) != 0)
		return rc;
	if ((nl = strchr(answer, '\n')) != NULL)
		*nl = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return BC_ERR_IO;
	rc = strcmp(answer, "accept") == 0;
	if (!rc) {
		*reason = policy_reason(answer);
		bc_log(BC_LOG_WARN, "pcr_policy_command refused", "answer", answer, "reason",
		       *reason, NULL);
	}
	return rc;
}

int tpm_pcr_policy(const struct tpm_cfg *c, const char *ek_hex, const uint32_t *idx,
                   const uint8_t *const *values, size_t n, const char **reason)
{
	char *input;
	int r;

	if (c->has_pcr_policy && !allowed(c, idx, values, n)) {
		*reason = BC_R_PCR_POLICY;
		return 0;
	}
	if (c->policy_cmd == NULL)
		return 0;
	if ((input = policy_input(c, ek_hex, idx, values, n)) == NULL)
		return BC_ERR_NOMEM;
	r = run_command(c, input, reason);
	free(input);
	if (r < 0) {
		/* a policy that cannot answer refuses: never admit on an error */
		bc_log(BC_LOG_ERROR, "pcr_policy_command failed", "error", bc_err_str(r), NULL);
		*reason = BC_R_PCR_POLICY;
	}
	return 0;
}
