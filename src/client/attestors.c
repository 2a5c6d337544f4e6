/* What a joining machine does with each built-in attestor (bc/client.h): the one table
 * bcd join checks its options against and `better-compute daemon install-script`
 * validates --attestor against. A new attestor is a line in bc/wire.h and a row here
 * (and one in the server's and bcd's tables). */
#include <stdio.h>
#include <string.h>

#include "bc/client.h"
#include "bc/wire.h"

static const struct bc_client_attestor attestors[] = {
    {BC_WIRE_ATTESTOR_JOIN_TOKEN, BC_CA_JOIN | BC_CA_INSTALL | BC_CA_TOKEN | BC_CA_SITE, NULL},
    {BC_WIRE_ATTESTOR_TPM, BC_CA_JOIN | BC_CA_INSTALL | BC_CA_KEY_IN_TPM,
     "the TPM is the credential"},
    {BC_WIRE_ATTESTOR_X509POP, BC_CA_JOIN | BC_CA_REJOIN,
     "it re-joins with the identity in the data directory"},
    {BC_WIRE_ATTESTOR_PROVISIONED, BC_CA_JOIN | BC_CA_INSTALL | BC_CA_TOKEN | BC_CA_TOKEN_FILE,
     NULL},
    {BC_WIRE_ATTESTOR_CLOUD_IID, BC_CA_JOIN | BC_CA_INSTALL | BC_CA_PROVIDER,
     "the instance identity is the credential"},
    {BC_WIRE_ATTESTOR_DISCOVERY, BC_CA_RAMDISK, "the discovery token is the credential"},
};
#define N_ATTESTORS (sizeof(attestors) / sizeof(attestors[0]))

const struct bc_client_attestor *bc_client_attestor(const char *id)
{
	if (id == NULL)
		return NULL;
	for (size_t i = 0; i < N_ATTESTORS; i++)
		if (strcmp(attestors[i].id, id) == 0)
			return &attestors[i];
	return NULL;
}

const struct bc_client_attestor *bc_client_attestor_at(size_t i)
{
	return i < N_ATTESTORS ? &attestors[i] : NULL;
}

const char *bc_client_attestor_names(unsigned flags, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < N_ATTESTORS && off < len; i++)
		if ((attestors[i].flags & flags) == flags)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off > 0 ? ", " : "",
			                        attestors[i].id);
	return buf;
}
