/* Small files: one bounded reader and one atomic writer for every module. */
#include "bc/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "bc/buf.h"

#define CHUNK 4096

static int open_regular(const char *path, size_t max, int flags, int *fd)
{
	int oflags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
	struct stat st;
	int e;

	if (!(flags & BC_FILE_FOLLOW))
		oflags |= O_NOFOLLOW;
	if ((*fd = open(path, oflags)) < 0) {
		if (errno == ENOENT)
			return BC_ERR_NOT_FOUND;
		return errno == ELOOP ? BC_ERR_INVALID : BC_ERR_IO;
	}
	if (fstat(*fd, &st) != 0) {
		e = errno;
		close(*fd);
		*fd = -1;
		errno = e;
		return BC_ERR_IO;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uintmax_t)st.st_size > max) {
		close(*fd);
		*fd = -1;
		errno = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		return S_ISREG(st.st_mode) ? BC_ERR_LIMIT : BC_ERR_INVALID;
	}
	return 0;
}

/* Into b (max + 1 bytes: room for the NUL), refusing content past max. */
static int read_bounded(int fd, size_t max, bc_buf *b)
{
	uint8_t chunk[CHUNK];
	ssize_t n;
	int rc = 0;

	for (;;) {
		if ((n = read(fd, chunk, sizeof(chunk))) < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = BC_ERR_IO;
			break;
		}
		if (n == 0)
			break;
		if ((size_t)n > max - b->len) {
			errno = EFBIG;
			rc = BC_ERR_LIMIT;
			break;
		}
		if ((rc = bc_buf_put(b, chunk, (size_t)n)) != 0)
			break;
	}
	OPENSSL_cleanse(chunk, sizeof(chunk));
	return rc;
}

int bc_file_read(const char *path, size_t max, int flags, char **out, size_t *len)
{
	bc_buf b;
	int fd = -1, rc, e;

	*out = NULL;
	*len = 0;
	bc_buf_init(&b, max < SIZE_MAX ? max + 1 : max);
	if (path == NULL || max == SIZE_MAX) {
		errno = EINVAL;
		return BC_ERR_INVALID;
	}
	if ((rc = open_regular(path, max, flags, &fd)) != 0)
		return rc;
	if ((rc = read_bounded(fd, max, &b)) != 0)
		goto out;
	if ((flags & BC_FILE_TEXT) && b.len > 0 && memchr(b.p, '\0', b.len) != NULL) {
		errno = EILSEQ;
		rc = BC_ERR_INVALID;
		goto out;
	}
	if ((rc = bc_buf_put_u8(&b, 0)) != 0)
		goto out;
	*out = (char *)bc_buf_steal(&b, len);
	(*len)--;
out:
	e = errno;
	close(fd);
	bc_buf_free(&b);
	errno = e;
	return rc;
}

int bc_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, c, n)) < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return BC_ERR_IO;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int bc_file_write_temp(const char *dir, const char *name, const void *data, size_t len,
                       unsigned mode, char *tmp, size_t tmplen)
{
	int fd, n, e;

	n = snprintf(tmp, tmplen, "%s/.%s.XXXXXX", dir, name);
	if (n < 0 || (size_t)n >= tmplen) {
		if (tmplen > 0)
			tmp[0] = '\0';
		errno = ENAMETOOLONG;
		return BC_ERR_LIMIT;
	}
	if ((fd = mkstemp(tmp)) < 0) {
		tmp[0] = '\0';
		return BC_ERR_IO;
	}
	if (fchmod(fd, (mode_t)mode) != 0 || bc_write_all(fd, data, len) != 0 || fsync(fd) != 0) {
		e = errno;
		close(fd);
		goto fail;
	}
	if (close(fd) != 0) {
		e = errno;
		goto fail;
	}
	return 0;
fail:
	unlink(tmp);
	tmp[0] = '\0';
	errno = e;
	return BC_ERR_IO;
}

int bc_file_sync_dir(const char *dir)
{
	int fd, rc = 0, e = 0;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fsync(fd) != 0) {
		e = errno;
		rc = BC_ERR_IO;
	}
	if (fd >= 0)
		close(fd);
	errno = e;
	return rc;
}

int bc_file_write_atomic(const char *dir, const char *name, const void *data, size_t len,
                         unsigned mode, int flags)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int n, rc, e = 0;

	tmp[0] = '\0';
	n = snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(dst)) {
		errno = ENAMETOOLONG;
		return BC_ERR_LIMIT;
	}
	if ((rc = bc_file_write_temp(dir, name, data, len, mode, tmp, sizeof(tmp))) != 0)
		return rc;
	if (flags & BC_FILE_EXCL) {
		if (link(tmp, dst) != 0)
			rc = errno == EEXIST ? BC_ERR_CONFLICT : BC_ERR_IO;
	} else if (rename(tmp, dst) != 0) {
		rc = BC_ERR_IO;
	} else {
		tmp[0] = '\0'; /* renamed: nothing left to remove */
	}
	e = errno;
	if (rc == 0 && (rc = bc_file_sync_dir(dir)) != 0)
		e = errno;
	if (tmp[0] != '\0')
		unlink(tmp);
	errno = e;
	return rc;
}

int bc_file_check_mode(const char *path, int flags, char *err, size_t errlen)
{
	const char *what = NULL;
	struct stat st;
	unsigned mode;

	if (stat(path, &st) != 0)
		return 0;
	mode = (unsigned)st.st_mode & 07777;
	if (mode & (S_IWGRP | S_IWOTH))
		what = mode & S_IWOTH ? "every user" : "its group";
	if (what != NULL) {
		snprintf(err, errlen, "%s: mode %04o lets %s change it; run `chmod %s %s`", path,
		         mode, what, flags & BC_MODE_SECRET ? "600" : "go-w", path);
		return BC_ERR_DENIED;
	}
	if ((flags & BC_MODE_SECRET) && (mode & S_IROTH)) {
		snprintf(err, errlen, "%s: mode %04o lets every user read it; run `chmod 600 %s`",
		         path, mode, path);
		return BC_ERR_DENIED;
	}
	return 0;
}
