#include "bct_pg.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>

/* server_url with its database (the path) replaced by name, query kept. */
static int url_with_db(const char *server_url, const char *name, char *url, size_t urllen)
{
	const char *auth = strstr(server_url, "://"), *end, *query;
	int n;

	if (auth == NULL)
		return -1;
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	/* the path runs to the query */
	query = end + strcspn(end, "?#");
	n = snprintf(url, urllen, "%.*s/%s%s", (int)(end - server_url), server_url, name, query);
	return n > 0 && (size_t)n < urllen ? 0 : -1;
}

/* One command on the server's own database. */
static int admin_exec(const char *server_url, const char *sql, char *err, size_t errlen)
{
	static const char *const keys[] = {"connect_timeout", "dbname", NULL};
	const char *values[] = {"10", server_url, NULL};
	PGconn *pg = PQconnectdbParams(keys, values, 1);
	PGresult *r = NULL;
	int rc = -1;

	if (PQstatus(pg) != CONNECTION_OK) {
		snprintf(err, errlen, "connect to %s: %s", server_url, PQerrorMessage(pg));
		goto out;
	}
	r = PQexec(pg, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		snprintf(err, errlen, "%s: %s", sql, PQerrorMessage(pg));
		goto out;
	}
	rc = 0;
out:
	PQclear(r);
	PQfinish(pg);
	return rc;
}

int bct_pg_create(const char *server_url, char *name, size_t namelen, char *url, size_t urllen,
                  char *err, size_t errlen)
{
	unsigned char rnd[8];
	char sql[128];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		snprintf(err, errlen, "getrandom failed");
		return -1;
	}
	snprintf(name, namelen, "bct_%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
	         rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	if (url_with_db(server_url, name, url, urllen) != 0) {
		snprintf(err, errlen, "not a postgres:// URL with room for a database: %s",
		         server_url);
		return -1;
	}
	/* template0: nobody is connected to it, which CREATE DATABASE requires */
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8'", name);
	return admin_exec(server_url, sql, err, errlen);
}

int bct_pg_drop(const char *server_url, const char *name)
{
	char sql[128], err[512];

	if (name == NULL || strncmp(name, "bct_", 4) != 0)
		return -1;
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
	if (admin_exec(server_url, sql, err, sizeof(err)) != 0) {
		fprintf(stderr, "bct_pg_drop: %s\n", err);
		return -1;
	}
	return 0;
}

#else

int bct_pg_create(const char *server_url, char *name, size_t namelen, char *url, size_t urllen,
                  char *err, size_t errlen)
{
	(void)server_url;
	(void)name;
	(void)namelen;
	(void)url;
	(void)urllen;
	snprintf(err, errlen, "built without libpq");
	return -1;
}

int bct_pg_drop(const char *server_url, const char *name)
{
	(void)server_url;
	(void)name;
	return -1;
}

#endif
