/* Paths of small files; writes go through bc_file_write_atomic (bc/files.h). Errors
 * leave errno as the failing call set it, so callers can say why. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bc/files.h"
#include "cli/cli.h"

char *cli_join_path(const char *dir, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

int cli_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* path as the directory and name bc_file_write_atomic takes. */
static int split_path(const char *path, char **dir, const char **name)
{
	const char *slash = strrchr(path, '/');

	*name = slash != NULL ? slash + 1 : path;
	if (slash == NULL)
		*dir = strdup(".");
	else if (slash == path)
		*dir = strdup("/");
	else
		*dir = strndup(path, (size_t)(slash - path));
	return *dir != NULL ? 0 : BC_ERR_NOMEM;
}

int cli_write_file(const char *path, const void *data, size_t len, unsigned mode, int flags)
{
	const char *name;
	char *dir = NULL;
	int rc, saved;

	if ((rc = split_path(path, &dir, &name)) != 0)
		return rc;
	rc = bc_file_write_atomic(dir, name, data, len, mode,
	                          (flags & CLI_WRITE_NOCLOBBER) ? BC_FILE_EXCL : 0);
	saved = errno;
	free(dir);
	errno = saved;
	return rc;
}

int cli_out_check(struct cli *c, const char *path)
{
	if (path == NULL || cli_flag(c, "force") || !cli_exists(path))
		return 0;
	return cli_error(c, BC_ERR_CONFLICT, "CONFLICT",
	                 "%s exists; give --force to replace it, or another file", path);
}

int cli_out_flags(const struct cli *c)
{
	return cli_flag(c, "force") ? 0 : CLI_WRITE_NOCLOBBER;
}
