/* Files of the data directory: bounded reads, and writes through a temporary file in
 * the same directory (fsync, rename, fsync the directory), so that a reader, or a
 * bcd started after a crash, sees the old file or the whole new one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "bc/buf.h"
#include "bc/files.h"

int bcd_path(char *out, size_t outlen, const char *dir, const char *name)
{
	int n = snprintf(out, outlen, "%s/%s", dir, name);

	return (n < 0 || (size_t)n >= outlen) ? BC_ERR_LIMIT : 0;
}

int bcd_exists(const char *dir, const char *name)
{
	char p[4096];
	struct stat st;

	return bcd_path(p, sizeof(p), dir, name) == 0 && lstat(p, &st) == 0;
}

int bcd_read_file(const char *path, size_t max, char **out, size_t *len, struct bcd_msg *m)
{
	int rc = bc_file_read(path, max, BC_FILE_TEXT, out, len);

	switch (rc) {
	case 0: break;
	case BC_ERR_LIMIT: bcd_say(m, "%s: larger than %zu bytes", path, max); break;
	case BC_ERR_NOMEM: bcd_say(m, "out of memory"); break;
	case BC_ERR_INVALID:
		if (errno == EILSEQ)
			bcd_say(m, "%s: holds a NUL byte", path);
		else if (errno == EINVAL)
			bcd_say(m, "%s: not a regular file", path);
		else
			bcd_say(m, "%s: %s", path, strerror(errno));
		break;
	default: bcd_say(m, "%s: %s", path, strerror(errno)); break;
	}
	return rc;
}

int bcd_write_temp(const char *dir, const char *name, const void *data, size_t len, unsigned mode,
                   char *tmp, size_t tmplen, struct bcd_msg *m)
{
	int rc = bc_file_write_temp(dir, name, data, len, mode, tmp, tmplen);

	if (rc == BC_ERR_LIMIT)
		bcd_say(m, "%s: path too long", dir);
	else if (rc != 0)
		bcd_say(m, "%s/%s: cannot write: %s", dir, name, strerror(errno));
	return rc;
}

int bcd_commit(const char *tmp, const char *dir, const char *name, struct bcd_msg *m)
{
	char dst[4096];

	if (bcd_path(dst, sizeof(dst), dir, name) != 0) {
		bcd_say(m, "%s: path too long", dir);
		return BC_ERR_LIMIT;
	}
	if (rename(tmp, dst) != 0) {
		bcd_say(m, "%s: cannot rename into place: %s", dst, strerror(errno));
		return BC_ERR_IO;
	}
	return 0;
}

int bcd_sync_dir(const char *dir, struct bcd_msg *m)
{
	int rc = bc_file_sync_dir(dir);

	if (rc != 0)
		bcd_say(m, "%s: cannot sync the directory: %s", dir, strerror(errno));
	return rc;
}

int bcd_write_atomic(const char *dir, const char *name, const void *data, size_t len, unsigned mode,
                     struct bcd_msg *m)
{
	int rc = bc_file_write_atomic(dir, name, data, len, mode, 0);

	if (rc == BC_ERR_LIMIT)
		bcd_say(m, "%s: path too long", dir);
	else if (rc != 0)
		bcd_say(m, "%s/%s: cannot write: %s", dir, name, strerror(errno));
	return rc;
}

int bcd_ensure_dir(const char *dir, struct bcd_msg *m)
{
	struct stat st;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		bcd_say(m, "%s: cannot make the data directory: %s (data_dir in the config)", dir,
		        strerror(errno));
		return BC_ERR_IO;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		bcd_say(m, "%s: not a directory (data_dir in the config)", dir);
		return BC_ERR_IO;
	}
	return 0;
}

int bcd_lock_dir(const char *dir, int wait, int *fd, struct bcd_msg *m)
{
	int d, rc, e;

	*fd = -1;
	if ((d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		bcd_say(m, "%s: cannot open the data directory: %s", dir, strerror(errno));
		return errno == ENOENT ? BC_ERR_NOT_FOUND : BC_ERR_IO;
	}
	if ((rc = flock(d, LOCK_EX | LOCK_NB)) != 0 && errno == EWOULDBLOCK && wait) {
		fprintf(stderr, BCD_NAME ": waiting for another bcd changing %s\n", dir);
		while ((rc = flock(d, LOCK_EX)) != 0 && errno == EINTR)
			;
	}
	if (rc != 0) {
		e = errno;
		bcd_say(m, "%s: another bcd is changing the data directory (%s); try again", dir,
		        strerror(e));
		close(d);
		return e == EWOULDBLOCK ? BC_ERR_BUSY : BC_ERR_IO;
	}
	*fd = d;
	return 0;
}

void bcd_unlock_dir(int fd)
{
	if (fd >= 0)
		close(fd);
}

int bcd_host_has_tpm(const struct bcd_config *cfg)
{
	struct stat st;

	if (cfg->has_fakehw)
		return cfg->fakehw_tpm != NULL && cfg->fakehw_tpm[0] != '\0';
	if (bcd_test_host_tpm() != NULL)
		return 1;
	return stat("/dev/tpmrm0", &st) == 0;
}

const char *bcd_test_host_tpm(void)
{
#ifdef BC_TESTING
	const char *v = getenv(BCD_TEST_HOST_TPM_ENV);

	/* only swtpm, as [fakehw] tpm: the TCTI loader would load any libtss2-tcti-<name> */
	if (v != NULL && strncmp(v, "swtpm:", 6) == 0 && strpbrk(v, "\n\r") == NULL)
		return v;
#endif
	return NULL;
}
