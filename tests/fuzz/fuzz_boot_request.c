/* bcd site's request head parser (bcd_site_request_parse) on arbitrary bytes, as the
 * poll loop calls it: on every prefix as the bytes arrive. Must never crash or leak;
 * a head it accepts has a canonical MAC; and a decision, once made, is the one every
 * longer input gets (the loop answers on the bytes it has); q is filled only on 0. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/canon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	struct bcd_boot_query q;
	char m[BC_MAC_LEN + 1];
	int first = BC_ERR_TRUNCATED;

	if (size == 0 || size > 2 * BCD_REQUEST_MAX)
		return 0;
	/* every prefix of a short input, a spread of a long one's, and the whole */
	for (size_t n = 1, step = size / 512 + 1;; n += step) {
		int rc;
		if (n > size)
			n = size;
		rc = bcd_site_request_parse(p, n, &q);
		if (rc != 0 && rc != BC_ERR_TRUNCATED && rc != BC_ERR_INVALID &&
		    rc != BC_ERR_LIMIT && rc != BC_ERR_NOT_FOUND)
			abort();
		if (rc == 0 && (bc_mac_canon(q.mac, m) != 0 || strcmp(m, q.mac) != 0))
			abort();
		if (rc != 0 && q.mac[0] != '\0')
			abort();
		/* decided once: the same for every longer input */
		if (first != BC_ERR_TRUNCATED && rc != first)
			abort();
		first = rc;
		if (n == size)
			break;
	}
	return 0;
}
