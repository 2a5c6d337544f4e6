/* Which attestors bcd can join with, and their producers. join-token and provisioned
 * send only the sealed token; the tpm producer lands with the tpm issue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/producer.h"

int bcd_producer_for(const char *attestor, struct bcd_producer **out, char *err, size_t errlen)
{
	*out = NULL;
	if (attestor == NULL || strcmp(attestor, "join-token") == 0 ||
	    strcmp(attestor, "provisioned") == 0)
		return 0;
	if (strcmp(attestor, "tpm") == 0) {
		snprintf(err, errlen, "--attestor tpm: this build of bcd has no TPM producer yet; "
		         "join with a token (--attestor join-token)");
		return BC_ERR_UNSUPPORTED;
	}
	snprintf(err, errlen, "--attestor %.64s: bcd cannot produce evidence for it; choose "
	         "join-token, provisioned or tpm", attestor);
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
