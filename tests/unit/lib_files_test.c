/* bc/files.h: the bounded reader's refusals and the atomic writer's guarantees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bc/files.h"

struct dir {
	char path[64];
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	snprintf(d->path, sizeof(d->path), "/tmp/bc_files_test.XXXXXX");
	if (mkdtemp(d->path) == NULL)
		return -1;
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	if (system(cmd) != 0)
		return -1;
	free(d);
	return 0;
}

static void put(const struct dir *d, const char *name, const void *p, size_t n, char *path)
{
	FILE *f;

	snprintf(path, 128, "%s/%s", d->path, name);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void test_read(void **state)
{
	struct dir *d = *state;
	char path[128], *out = (char *)1;
	size_t len = 7;

	put(d, "a", "hello", 5, path);
	assert_int_equal(bc_file_read(path, 5, BC_FILE_TEXT, &out, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(out, "hello");
	free(out);

	put(d, "empty", "", 0, path);
	assert_int_equal(bc_file_read(path, 5, BC_FILE_TEXT, &out, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(out, "");
	free(out);
}

static void test_read_refusals(void **state)
{
	struct dir *d = *state;
	char path[128], link[128], *out = (char *)1;
	size_t len = 7;

	put(d, "big", "hello!", 6, path);
	assert_int_equal(bc_file_read(path, 5, 0, &out, &len), BC_ERR_LIMIT);
	assert_int_equal(errno, EFBIG);
	assert_null(out);
	assert_int_equal(len, 0);

	put(d, "nul", "a\0b", 3, path);
	assert_int_equal(bc_file_read(path, 16, BC_FILE_TEXT, &out, &len), BC_ERR_INVALID);
	assert_int_equal(errno, EILSEQ);
	assert_null(out);
	/* binary content (DER) may hold NULs */
	assert_int_equal(bc_file_read(path, 16, 0, &out, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "a\0b\0", 4);
	free(out);

	snprintf(link, sizeof(link), "%s/link", d->path);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(bc_file_read(link, 16, 0, &out, &len), BC_ERR_INVALID);
	assert_int_equal(errno, ELOOP);
	assert_null(out);
	/* an operator's configuration may be linked into place, to a regular file only */
	assert_int_equal(bc_file_read(link, 16, BC_FILE_FOLLOW, &out, &len), 0);
	assert_int_equal(len, 3);
	free(out);
	out = NULL;
	snprintf(link, sizeof(link), "%s/devlink", d->path);
	assert_int_equal(symlink("/dev/null", link), 0);
	assert_int_equal(bc_file_read(link, 16, BC_FILE_FOLLOW, &out, &len), BC_ERR_INVALID);
	assert_int_equal(errno, EINVAL);
	assert_null(out);

	assert_int_equal(bc_file_read(d->path, 16, 0, &out, &len), BC_ERR_INVALID);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(bc_file_read("/dev/null", 16, 0, &out, &len), BC_ERR_INVALID);
	assert_null(out);

	snprintf(path, sizeof(path), "%s/absent", d->path);
	assert_int_equal(bc_file_read(path, 16, 0, &out, &len), BC_ERR_NOT_FOUND);
	assert_int_equal(errno, ENOENT);
}

/* A regular file whose size fstat does not know (as /proc shows): the bound holds
 * while reading too. */
static void test_read_bound_while_reading(void **state)
{
	char *out = (char *)1;
	size_t len = 7;

	(void)state;
	if (access("/proc/self/status", R_OK) != 0)
		skip();
	assert_int_equal(bc_file_read("/proc/self/status", 16, BC_FILE_TEXT, &out, &len),
	                 BC_ERR_LIMIT);
	assert_null(out);
	assert_int_equal(bc_file_read("/proc/self/status", 1 << 20, BC_FILE_TEXT, &out, &len), 0);
	assert_true(len > 16);
	assert_non_null(strstr(out, "SigBlk:"));
	free(out);
}

static void test_write_all(void **state)
{
	struct dir *d = *state;
	char path[128], *out;
	size_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/w", d->path);
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
	assert_int_equal(bc_write_all(fd, "abc", 3), 0);
	assert_int_equal(bc_write_all(fd, "", 0), 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(bc_file_read(path, 8, 0, &out, &len), 0);
	assert_string_equal(out, "abc");
	free(out);
	assert_true((fd = open(path, O_RDONLY)) >= 0);
	assert_int_equal(bc_write_all(fd, "abc", 3), BC_ERR_IO);
	assert_int_equal(close(fd), 0);
}

static int count_entries(const char *dir)
{
	char cmd[160], buf[16] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	assert_non_null(p = popen(cmd, "r"));
	assert_non_null(fgets(buf, sizeof(buf), p));
	pclose(p);
	return atoi(buf);
}

static void test_write_atomic(void **state)
{
	struct dir *d = *state;
	char path[128], *out;
	struct stat st;
	size_t len;

	snprintf(path, sizeof(path), "%s/f", d->path);
	assert_int_equal(bc_file_write_atomic(d->path, "f", "one", 3, 0640, 0), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(bc_file_write_atomic(d->path, "f", "two!", 4, 0600, 0), 0);
	assert_int_equal(bc_file_read(path, 8, 0, &out, &len), 0);
	assert_string_equal(out, "two!");
	free(out);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	/* exclusive: an existing name is refused and left alone */
	assert_int_equal(bc_file_write_atomic(d->path, "f", "three", 5, 0600, BC_FILE_EXCL),
	                 BC_ERR_CONFLICT);
	assert_int_equal(bc_file_read(path, 8, 0, &out, &len), 0);
	assert_string_equal(out, "two!");
	free(out);
	assert_int_equal(bc_file_write_atomic(d->path, "g", "new", 3, 0600, BC_FILE_EXCL), 0);
	assert_int_equal(count_entries(d->path), 2); /* f, g: no temporary file left */
}

static void test_write_atomic_failure_keeps_old(void **state)
{
	struct dir *d = *state;
	char path[128], sub[128], *out;
	size_t len;

	assert_int_equal(bc_file_write_atomic(d->path, "f", "old", 3, 0600, 0), 0);
	snprintf(path, sizeof(path), "%s/f", d->path);
	/* the rename fails: f is now a directory that is not empty */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(sub, sizeof(sub), "%s/f/keep", d->path);
	put(d, "f/keep", "old", 3, sub);
	assert_int_equal(bc_file_write_atomic(d->path, "f", "new", 3, 0600, 0), BC_ERR_IO);
	assert_int_equal(bc_file_read(sub, 8, 0, &out, &len), 0);
	assert_string_equal(out, "old");
	free(out);
	assert_int_equal(count_entries(d->path), 1); /* the temporary file is gone */

	/* the temporary file cannot be made: a missing directory */
	snprintf(sub, sizeof(sub), "%s/none", d->path);
	assert_int_equal(bc_file_write_atomic(sub, "f", "x", 1, 0600, 0), BC_ERR_IO);
	assert_int_equal(errno, ENOENT);
}

static void test_write_temp(void **state)
{
	struct dir *d = *state;
	char tmp[256], small[8], *out;
	size_t len;

	assert_int_equal(bc_file_write_temp(d->path, "x", "abc", 3, 0600, tmp, sizeof(tmp)), 0);
	assert_non_null(strstr(tmp, "/.x."));
	assert_int_equal(bc_file_read(tmp, 8, 0, &out, &len), 0);
	assert_string_equal(out, "abc");
	free(out);
	assert_int_equal(unlink(tmp), 0);
	assert_int_equal(bc_file_write_temp(d->path, "x", "abc", 3, 0600, small, sizeof(small)),
	                 BC_ERR_LIMIT);
	assert_string_equal(small, "");
	assert_int_equal(bc_file_sync_dir(d->path), 0);
	assert_int_equal(bc_file_sync_dir(tmp), BC_ERR_IO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_refusals, setup, teardown),
	    cmocka_unit_test(test_read_bound_while_reading),
	    cmocka_unit_test_setup_teardown(test_write_all, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_atomic, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_atomic_failure_keeps_old, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_temp, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
