/* libFuzzer: bc_pki_node_identity on arbitrary bytes, trust domain fixed. What
 * it accepts must obey the contract: a valid role and node id, urn:bc:
 * statements only, at most BC_MAX_URIS URIs. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/pki.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_node_identity id;

	if (bc_pki_node_identity(data, size, "example.org", &id, NULL) == 0) {
		if (!bc_role_valid(id.role) || !bc_node_id_valid(id.node_id))
			abort();
		if (id.n_statements > BC_MAX_URIS - 1)
			abort();
		for (size_t i = 0; i < id.n_statements; i++) {
			if (strncmp(id.statements[i], "urn:bc:", 7) != 0)
				abort();
		}
	} else if (id.n_statements != 0 || id.statements[0] != NULL || id.node_id[0] != '\0') {
		abort();
	}
	bc_node_identity_clear(&id);
	return 0;
}
