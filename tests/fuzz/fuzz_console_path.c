/* libFuzzer: arbitrary request paths through the console's static route. An answer is
 * 200 only for the exact name of an embedded file (or /console and /console/, which are
 * index.html), with that file's bytes; every other path is 404. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/console.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_http_request req = {.method = "GET"};
	struct bc_http_response resp = {0};
	char *path = malloc(size + 10);
	const struct bc_console_file *want = NULL;

	if (path == NULL)
		return 0;
	memcpy(path, "/console/", 9);
	memcpy(path + 9, data, size);
	path[9 + size] = '\0';
	/* the first byte chooses whether to keep the prefix */
	req.path = (size > 0 && data[0] == 0xff) ? path + 9 : path;
	for (size_t i = 0; i < bc_console_files_count; i++)
		if (strcmp(bc_console_files[i].path, req.path) == 0)
			want = &bc_console_files[i];
	if (strcmp(req.path, "/console") == 0 || strcmp(req.path, "/console/") == 0)
		for (size_t i = 0; i < bc_console_files_count; i++)
			if (strcmp(bc_console_files[i].path, "/console/index.html") == 0)
				want = &bc_console_files[i];
	if (bc_console_owns(req.path)) {
		bc_console_serve(&req, &resp);
		if (want != NULL) {
			if (resp.status != 200 || resp.body_len != want->len ||
			    memcmp(resp.body, want->data, want->len) != 0)
				abort();
		} else if (resp.status != 404) {
			abort();
		}
	} else if (strncmp(req.path, "/console/", 9) == 0) {
		abort();
	}
	free(resp.body);
	free(path);
	return 0;
}
