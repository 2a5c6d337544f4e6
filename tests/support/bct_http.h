/* One HTTP request made by hand to a test server's listener, for tests that check
 * what a route answers on the wire (the admin API, /metrics, /healthz) rather than
 * what the product's client makes of it. Through the project's HTTP client
 * (bc/httpc.h), apart from the server's own HTTP code, so a fault in that code cannot
 * hide itself. */
#ifndef BCT_HTTP_H
#define BCT_HTTP_H

struct bct_cp;

/* method ("GET", "HEAD", "POST", "PATCH", "DELETE", ...) path on cp's URL, with
 * "Authorization: Bearer key" when key is not NULL, and json as an
 * application/json body when not NULL (a POST without json sends an empty body).
 * The HTTP status, or -1 when no answer came within 60 s (the cause on stderr).
 * *body (when body is not NULL) receives the answer, NUL-terminated and
 * malloc'd, or NULL when there was none (HEAD); an answer over 1 MiB is -1. */
long bct_http(const struct bct_cp *cp, const char *method, const char *path, const char *key,
              const char *json, char **body);

#endif
