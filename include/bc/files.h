/* Small files: a bounded read with every check in one place, and atomic writes
 * (a reader, or a process started after a crash, sees the old file or the whole new
 * one, never a part).
 *
 * Errors are 0 or a negative BC_ERR_*; on failure errno is left as the failing call
 * set it, so a caller can say why (strerror). The checks set it too: ELOOP for a
 * symbolic link, EINVAL for a path that is not a regular file, EFBIG for a file
 * larger than its bound, EILSEQ for a NUL byte in text. */
#ifndef BC_FILES_H
#define BC_FILES_H

#include <stddef.h>

#include "bc/err.h"

/* bc_file_read flags */
#define BC_FILE_TEXT 0x1 /* the content is text: an embedded NUL byte is refused */
/* An operator's configuration (server.toml, the PKI bundle, TLS files, ek_roots, an
 * API key file): a symbolic link is followed, as a configuration manager links files
 * into place; what it names must still be a regular file. Files a program writes
 * itself (bcd's data directory) are read without it. */
#define BC_FILE_FOLLOW 0x2

/* Reads path, opened O_RDONLY | O_CLOEXEC | O_NOCTTY, and O_NOFOLLOW unless
 * BC_FILE_FOLLOW: a regular file
 * of at most max bytes (checked before reading and again while reading, for a file
 * that grows). *out is malloc'd and holds *len bytes then a NUL; the caller frees
 * it (bc_freezero(*out, *len + 1) when it holds a secret: the buffers this function
 * drops are wiped). *out is NULL and *len 0 on failure.
 * BC_ERR_NOT_FOUND: no such file. BC_ERR_INVALID: a symbolic link (without
 * BC_FILE_FOLLOW), not a regular file, or (BC_FILE_TEXT) a NUL byte. BC_ERR_LIMIT: more than max
 * bytes. BC_ERR_NOMEM; BC_ERR_IO for any other failure. */
BC_WUR int bc_file_read(const char *path, size_t max, int flags, char **out, size_t *len);

/* bc_file_check_mode flags */
#define BC_MODE_SECRET 0x1 /* also refuse a file every user may read */
/* Refuses a file (what a link names) that users besides its owner may change (group-
 * or world-writable) or, BC_MODE_SECRET, that every user may read. BC_ERR_DENIED
 * with err "PATH: mode 0644 lets every user read it; run `chmod 600 PATH`".
 * 0 otherwise, a file that cannot be stat()ed included: its reader says why. */
BC_WUR int bc_file_check_mode(const char *path, int flags, char *err, size_t errlen);

/* write(2) until all n bytes are written, retrying on EINTR. BC_ERR_IO otherwise. */
BC_WUR int bc_write_all(int fd, const void *p, size_t n);

/* Writes data into a new temporary file dir/.name.XXXXXX (created 0600, then
 * fchmod to mode), fsynced and closed. tmp[tmplen] receives its path, for rename or
 * unlink; tmp[0] is '\0' on failure (nothing is left behind).
 * BC_ERR_LIMIT when the path does not fit tmp; BC_ERR_IO. */
BC_WUR int bc_file_write_temp(const char *dir, const char *name, const void *data, size_t len,
                              unsigned mode, char *tmp, size_t tmplen);

/* fsync of the directory, so that renames into it are durable. BC_ERR_IO. */
BC_WUR int bc_file_sync_dir(const char *dir);

/* bc_file_write_atomic flags */
#define BC_FILE_EXCL 0x1 /* refuse an existing dir/name (BC_ERR_CONFLICT) */

/* dir/name holds exactly data with mode, or is as it was: bc_file_write_temp, then
 * rename (or, with BC_FILE_EXCL, link(), which refuses an existing name atomically
 * where a check then rename would race), then bc_file_sync_dir. The temporary file
 * is removed on every path. BC_ERR_CONFLICT (BC_FILE_EXCL and the name exists),
 * BC_ERR_LIMIT (path too long), BC_ERR_IO. */
BC_WUR int bc_file_write_atomic(const char *dir, const char *name, const void *data, size_t len,
                                unsigned mode, int flags);

#endif
