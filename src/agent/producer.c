/* bcd's producers, one row per attestor (producer.h): what makes the evidence bcd join
 * sends. join-token and provisioned send only the sealed token; tpm's producer is in
 * tpm_producer.c, cloud-iid's in cloud.c; x509pop's (x509pop.c) starts from the
 * identity that is there and discovery's (ramdisk.c) from the kernel command line, so
 * neither is made from the config here. What each attestor asks of the options is in
 * the client's table (bc_client_attestor). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/nodekey.h"
#include "agent/producer.h"
#include "bc/client.h"
#include "bc/wire.h"

static int tpm_new(const struct bcd_config *cfg, const struct bcd_opts *o,
                   struct bcd_producer **out, char *err, size_t errlen)
{
	struct bcd_msg m = {""};
	char tcti[BCD_TCTI_MAX];
	int rc;

	(void)o;
	if ((rc = bcd_tpm_tcti(cfg, BCD_TPM_ANY, tcti, sizeof(tcti), &m)) != 0) {
		snprintf(err, errlen, "--attestor " BC_WIRE_ATTESTOR_TPM ": %s", m.text);
		return rc;
	}
	return bcd_tpm_producer_new(tcti, out, err, errlen);
}

static int cloud_new(const struct bcd_config *cfg, const struct bcd_opts *o,
                     struct bcd_producer **out, char *err, size_t errlen)
{
	return bcd_cloud_producer_new(cfg, o != NULL ? o->provider : NULL,
	                              o != NULL ? o->identity_token_file : NULL, out, err, errlen);
}

static const struct bcd_producer_kind kinds[] = {
    {BC_WIRE_ATTESTOR_JOIN_TOKEN, NULL},     {BC_WIRE_ATTESTOR_TPM, tpm_new},
    {BC_WIRE_ATTESTOR_X509POP, NULL},        {BC_WIRE_ATTESTOR_PROVISIONED, NULL},
    {BC_WIRE_ATTESTOR_CLOUD_IID, cloud_new}, {BC_WIRE_ATTESTOR_DISCOVERY, NULL},
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

const struct bcd_producer_kind *bcd_producer_kind(const char *attestor)
{
	if (attestor == NULL)
		return NULL;
	for (size_t i = 0; i < N_KINDS; i++)
		if (strcmp(kinds[i].id, attestor) == 0)
			return &kinds[i];
	return NULL;
}

int bcd_producer_for(const struct bcd_config *cfg, const char *attestor, const struct bcd_opts *o,
                     struct bcd_producer **out, char *err, size_t errlen)
{
	const struct bcd_producer_kind *k;
	const struct bc_client_attestor *a;
	char names[128];

	*out = NULL;
	if (attestor == NULL)
		attestor = BC_WIRE_ATTESTOR_JOIN_TOKEN;
	k = bcd_producer_kind(attestor);
	a = bc_client_attestor(attestor);
	if (k != NULL && a != NULL && k->make != NULL)
		return k->make(cfg, o, out, err, errlen);
	if (k != NULL && a != NULL && (a->flags & BC_CA_TOKEN))
		return 0;
	snprintf(err, errlen,
	         "--attestor %.64s: bcd join cannot produce evidence for it from the config; "
	         "choose one of %s",
	         attestor, bc_client_attestor_names(BC_CA_JOIN, names, sizeof(names)));
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
