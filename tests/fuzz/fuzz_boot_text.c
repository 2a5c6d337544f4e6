/* bcd's commissioning parsers on arbitrary text: the first byte picks the ramdisk's
 * kernel command line (bc.token, bc.assertion, bc.server) or bcd site's iPXE request
 * target (/boot.ipxe?mac=&uuid=&ip=). Must never crash or leak; what they accept has
 * its shape. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/canon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1) {
		struct bcd_cmdline c;
		if (bcd_cmdline_parse((const char *)data + 1, size - 1, &c) == 0) {
			if (c.assertion == NULL || c.assertion_len == 0 ||
			    strncmp(c.token, "bct_", 4) != 0)
				abort();
			bcd_cmdline_free(&c);
		}
	} else {
		struct bcd_boot_query q;
		char m[BC_MAC_LEN + 1];
		if (bcd_boot_query_parse((const char *)data + 1, size - 1, &q) == 0 &&
		    (bc_mac_canon(q.mac, m) != 0 || strcmp(m, q.mac) != 0))
			abort();
	}
	return 0;
}
