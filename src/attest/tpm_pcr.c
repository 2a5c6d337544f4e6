/* pcrPolicy: allowed digests per PCR (pcr_policy), then a command that reads the
 * quoted values as JSON on stdin and answers "accept" or a reason on stdout
 * (pcr_policy_command). Either one refusing is pcr-policy; the command's own
 * reason goes to the log. */
#include <jansson.h>
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

/* 1 accept, 0 refuse (reason logged), < 0 the command could not run. */
static int run_command(const struct tpm_cfg *c, const char *input)
{
	char answer[CMD_ANSWER_MAX + 1], *nl;
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
	if (!rc)
		bc_log(BC_LOG_WARN, "pcr_policy_command refused", "answer", answer, NULL);
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
	r = run_command(c, input);
	free(input);
	if (r < 0)
		/* a policy that cannot answer refuses: never admit on an error */
		bc_log(BC_LOG_ERROR, "pcr_policy_command failed", "error", bc_err_str(r), NULL);
	if (r <= 0)
		*reason = BC_R_PCR_POLICY;
	return 0;
}
