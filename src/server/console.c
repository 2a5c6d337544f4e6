/* The web console's static route: embedded files only (see console.h). */
#include "server/console.h"

#include <string.h>

#define PREFIX     "/console"
#define INDEX_PATH "/console/index.html"

static const char not_found[] = "{\"code\":\"not_found\",\"message\":\"no such console file\"}";
static const char bad_method[] =
    "{\"code\":\"method_not_allowed\",\"message\":\"the console answers GET and HEAD only\"}";

int bc_console_owns(const char *path)
{
	size_t n = sizeof(PREFIX) - 1;

	/* the server's root is the console's page: a browser pointed at the server finds it */
	if (strcmp(path, "/") == 0)
		return 1;
	return strncmp(path, PREFIX, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static const struct bc_console_file *find(const char *path)
{
	if (strcmp(path, "/") == 0 || strcmp(path, PREFIX) == 0 || strcmp(path, PREFIX "/") == 0)
		path = INDEX_PATH;
	for (size_t i = 0; i < bc_console_files_count; i++)
		if (strcmp(bc_console_files[i].path, path) == 0)
			return &bc_console_files[i];
	return NULL;
}

void bc_console_serve(const struct bc_http_request *req, struct bc_http_response *resp)
{
	const struct bc_console_file *f;

	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		bc_http_set_body(resp, 405, "application/json", bad_method, strlen(bad_method));
		return;
	}
	if ((f = find(req->path)) == NULL) {
		bc_http_set_body(resp, 404, "application/json", not_found, strlen(not_found));
		return;
	}
	bc_http_set_body(resp, 200, f->content_type, f->data, f->len);
}
