/* Which attestors bcd can join with, and their producers. join-token and provisioned
 * send only the sealed token; tpm has its producer in tpm_producer.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/nodekey.h"
#include "agent/producer.h"

int bcd_producer_for(const struct bcd_config *cfg, const char *attestor, struct bcd_producer **out,
                     char *err, size_t errlen)
{
	struct bcd_msg m = {""};
	char tcti[BCD_TCTI_MAX];
	int rc;

	*out = NULL;
	if (attestor == NULL || strcmp(attestor, "join-token") == 0 ||
	    strcmp(attestor, "provisioned") == 0)
		return 0;
	if (strcmp(attestor, "tpm") == 0) {
		if ((rc = bcd_tpm_tcti(cfg, BCD_TPM_ANY, tcti, sizeof(tcti), &m)) != 0) {
			snprintf(err, errlen, "--attestor tpm: %s", m.text);
			return rc;
		}
		return bcd_tpm_producer_new(tcti, out, err, errlen);
	}
	snprintf(err, errlen,
	         "--attestor %.64s: bcd cannot produce evidence for it; choose "
	         "join-token, provisioned or tpm",
	         attestor);
	return BC_ERR_UNSUPPORTED;
}

void bcd_producer_free(struct bcd_producer *p)
{
	if (p == NULL)
		return;
	if (p->free != NULL)
		p->free(p->ctx);
	free(p);
}
