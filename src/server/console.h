/* The web console: the static files of web/, compiled into the binary
 * (cmake/embed_web.cmake), served under /console/. Nothing is read from disk: a path
 * is answered only when it equals the name of an embedded file, so no path can reach
 * anything else. The console's pages call the admin API (/v1/) from the browser with
 * the operator's API key; this route needs no key and holds no data. */
#ifndef BC_SERVER_CONSOLE_H
#define BC_SERVER_CONSOLE_H

#include <stddef.h>

#include "server/http.h"

struct bc_console_file {
	const char *path;         /* "/console/index.html" */
	const char *content_type; /* "text/html; charset=utf-8" */
	const unsigned char *data;
	size_t len;
};

/* generated at build time from web/ */
extern const struct bc_console_file bc_console_files[];
extern const size_t bc_console_files_count;

/* 1 when the path is the console's: "/" (the server's root), "/console" or under
 * "/console/". */
int bc_console_owns(const char *path);
/* GET or HEAD of "/", "/console" or "/console/" is index.html; an embedded file is itself;
 * any other path 404, any other method 405. */
void bc_console_serve(const struct bc_http_request *req, struct bc_http_response *resp);

#endif
