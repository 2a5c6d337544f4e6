/* bc_cursor_decode on arbitrary text: whatever it accepts encodes back to the very
 * input (the decoder is canonical) and decodes again to the same key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/cursor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const lists[] = {"nodes", "events", "nodes_expiring"};
	char *s = malloc(size + 1), out[BC_CURSOR_MAX + 1];
	struct bc_cursor k, again;

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		if (bc_cursor_decode(lists[i], s, &k) != 0)
			continue;
		if (bc_cursor_encode(lists[i], &k, out) != 0 || strcmp(out, s) != 0)
			abort();
		if (bc_cursor_decode(lists[i], out, &again) != 0 ||
		    memcmp(&k, &again, sizeof(k)) != 0)
			abort();
	}
	free(s);
	return 0;
}
