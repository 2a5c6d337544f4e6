/* The numbered migrations, compiled in from src/store/migrations/NNN_name.sql
 * (cmake/embed_migrations.cmake). Applied in order of version at bc_store_open(). */
#ifndef BC_STORE_MIGRATIONS_H
#define BC_STORE_MIGRATIONS_H

#include <stddef.h>
#include <stdint.h>

struct bc_migration {
	int64_t version;
	const char *name;
	const char *sql; /* statements separated by ';' at the end of a line */
};

extern const struct bc_migration bc_migrations[];
extern const size_t bc_migrations_count;

#endif
