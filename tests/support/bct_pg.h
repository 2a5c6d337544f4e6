/* Fresh PostgreSQL databases for tests, on the server a test run was given
 * (BC_TEST_POSTGRES_URL, e.g. from scripts/pg.sh): the store tests make one per
 * case, the integration tests one per control plane.
 *
 * bct_pg_create(): CREATE DATABASE bct_<random hex> on server_url's server; name
 * receives the name and url the server URL with the database replaced. 0, or -1
 * with a message in err. Without libpq at build time it always fails.
 * bct_pg_drop(): DROP DATABASE ... WITH (FORCE), ending any connection left. */
#ifndef BCT_PG_H
#define BCT_PG_H

#include <stddef.h>

int bct_pg_create(const char *server_url, char *name, size_t namelen, char *url, size_t urllen,
                  char *err, size_t errlen);
int bct_pg_drop(const char *server_url, const char *name);

#endif
