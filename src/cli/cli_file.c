/* Small files: written atomically (a reader sees the old file or the whole new one,
 * never a part) and read with a bound. Errors leave errno as the failing call set it,
 * so callers can say why. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bc/buf.h"
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

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return BC_ERR_IO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The rename is durable only once the directory entry is on disk too. */
static int sync_dir(const char *path)
{
	char *dir = strdup(path), *slash;
	int fd, rc = 0;

	if (dir == NULL)
		return BC_ERR_NOMEM;
	slash = strrchr(dir, '/');
	if (slash == NULL)
		strcpy(dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0)
		rc = BC_ERR_IO;
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

static int write_temp(const char *tmp_template, char *tmp, const void *data, size_t len,
                      unsigned mode)
{
	int fd, rc = 0;

	strcpy(tmp, tmp_template);
	if ((fd = mkstemp(tmp)) < 0) {
		tmp[0] = '\0'; /* nothing to remove */
		return BC_ERR_IO;
	}
	if (fchmod(fd, mode) != 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0)
		rc = BC_ERR_IO;
	if (close(fd) != 0 && rc == 0)
		rc = BC_ERR_IO;
	return rc;
}

int cli_write_file(const char *path, const void *data, size_t len, unsigned mode, int flags)
{
	char *tmpl = NULL, *tmp = NULL;
	int rc, saved = 0;

	if (asprintf(&tmpl, "%s.tmp-XXXXXX", path) < 0)
		return BC_ERR_NOMEM;
	if ((tmp = strdup(tmpl)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	if ((rc = write_temp(tmpl, tmp, data, len, mode)) != 0) {
		saved = errno;
		goto out;
	}
	/* link() refuses an existing name atomically, where a check then rename races */
	if (flags & CLI_WRITE_NOCLOBBER) {
		if (link(tmp, path) != 0)
			rc = errno == EEXIST ? BC_ERR_CONFLICT : BC_ERR_IO;
	} else if (rename(tmp, path) != 0) {
		rc = BC_ERR_IO;
	}
	saved = errno;
	if (rc == 0 && (rc = sync_dir(path)) != 0)
		saved = errno;
out:
	if (tmp != NULL && tmp[0] != '\0')
		unlink(tmp);
	free(tmp);
	free(tmpl);
	errno = saved;
	return rc;
}

int cli_read_file(const char *path, size_t max, char **out, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, rc = 0, saved = 0;

	*out = NULL;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? BC_ERR_NOT_FOUND : BC_ERR_IO;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = BC_ERR_IO;
		saved = errno ? errno : EINVAL;
		goto out;
	}
	if ((size_t)st.st_size > max) {
		rc = BC_ERR_LIMIT;
		saved = EFBIG;
		goto out;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = BC_ERR_IO;
			saved = errno;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	buf = NULL;
out:
	if (buf != NULL)
		bc_freezero(buf, (size_t)st.st_size + 1);
	close(fd);
	errno = saved;
	return rc;
}
