/* The "bc-wal" VFS (sqlite_vfs.h). A WAL commit writes each frame as two writes, its
 * header and its page: about 30 write system calls a token join on this store, 40% of
 * all the server's system calls, each a VM exit on a paravirtualized guest. Gathered,
 * a commit's frames are one write. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_vfs.h"

/* Enough for a batch of a few joins' frames; a write that does not fit goes through. */
#define WAL_BUF_CAP (512 * 1024)
/* The most one write of the unix VFS takes: it keeps only the low 17 bits of a length
 * (seekAndWriteFd), so the buffer goes to it in pieces under 128 KiB. */
#define WAL_WRITE_MAX (124 * 1024)

struct wal_file {
	sqlite3_file base; /* pMethods: wal_methods */
	sqlite3_file *real;
	unsigned char *buf;
	sqlite3_int64 buf_off; /* the file offset of buf[0] */
	size_t buf_len;
};

static sqlite3_vfs *base_vfs;
static sqlite3_vfs bc_vfs;
static sqlite3_io_methods wal_methods;

static int wal_flush(struct wal_file *f)
{
	size_t done = 0;
	int src = SQLITE_OK;

	while (src == SQLITE_OK && done < f->buf_len) {
		size_t n = f->buf_len - done < WAL_WRITE_MAX ? f->buf_len - done : WAL_WRITE_MAX;

		src = f->real->pMethods->xWrite(f->real, f->buf + done, (int)n,
		                                f->buf_off + (sqlite3_int64)done);
		done += n;
	}
	f->buf_len = 0;
	return src;
}

static int wal_close(sqlite3_file *p)
{
	struct wal_file *f = (struct wal_file *)p;
	int src = wal_flush(f), csrc = f->real->pMethods->xClose(f->real);

	free(f->buf);
	f->buf = NULL;
	return src != SQLITE_OK ? src : csrc;
}

static int wal_read(sqlite3_file *p, void *out, int n, sqlite3_int64 off)
{
	struct wal_file *f = (struct wal_file *)p;
	int src = wal_flush(f);

	return src != SQLITE_OK ? src : f->real->pMethods->xRead(f->real, out, n, off);
}

/* Appended to the buffer when it follows what the buffer holds and fits; else the
 * buffer is written first, and the write starts a new one (or, too large, goes
 * through). */
static int wal_write(sqlite3_file *p, const void *in, int n, sqlite3_int64 off)
{
	struct wal_file *f = (struct wal_file *)p;
	int src;

	if (f->buf_len > 0 && off == f->buf_off + (sqlite3_int64)f->buf_len &&
	    (size_t)n <= WAL_BUF_CAP - f->buf_len) {
		memcpy(f->buf + f->buf_len, in, (size_t)n);
		f->buf_len += (size_t)n;
		return SQLITE_OK;
	}
	if ((src = wal_flush(f)) != SQLITE_OK)
		return src;
	if (f->buf == NULL)
		f->buf = malloc(WAL_BUF_CAP);
	if (f->buf == NULL || (size_t)n > WAL_WRITE_MAX)
		return f->real->pMethods->xWrite(f->real, in, n, off);
	memcpy(f->buf, in, (size_t)n);
	f->buf_off = off;
	f->buf_len = (size_t)n;
	return SQLITE_OK;
}

static int wal_truncate(sqlite3_file *p, sqlite3_int64 size)
{
	struct wal_file *f = (struct wal_file *)p;
	int src = wal_flush(f);

	return src != SQLITE_OK ? src : f->real->pMethods->xTruncate(f->real, size);
}

static int wal_sync(sqlite3_file *p, int flags)
{
	struct wal_file *f = (struct wal_file *)p;
	int src = wal_flush(f);

	return src != SQLITE_OK ? src : f->real->pMethods->xSync(f->real, flags);
}

static int wal_size(sqlite3_file *p, sqlite3_int64 *size)
{
	struct wal_file *f = (struct wal_file *)p;
	int src = wal_flush(f);

	return src != SQLITE_OK ? src : f->real->pMethods->xFileSize(f->real, size);
}

static int wal_lock(sqlite3_file *p, int level)
{
	struct wal_file *f = (struct wal_file *)p;

	return f->real->pMethods->xLock(f->real, level);
}

static int wal_unlock(sqlite3_file *p, int level)
{
	struct wal_file *f = (struct wal_file *)p;

	return f->real->pMethods->xUnlock(f->real, level);
}

static int wal_check_lock(sqlite3_file *p, int *out)
{
	struct wal_file *f = (struct wal_file *)p;

	return f->real->pMethods->xCheckReservedLock(f->real, out);
}

/* Written first: a file control may read or resize the file. */
static int wal_control(sqlite3_file *p, int op, void *arg)
{
	struct wal_file *f = (struct wal_file *)p;
	int src = wal_flush(f);

	return src != SQLITE_OK ? src : f->real->pMethods->xFileControl(f->real, op, arg);
}

static int wal_sector(sqlite3_file *p)
{
	struct wal_file *f = (struct wal_file *)p;

	return f->real->pMethods->xSectorSize(f->real);
}

static int wal_device(sqlite3_file *p)
{
	struct wal_file *f = (struct wal_file *)p;

	return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int bc_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *p, int flags, int *out)
{
	struct wal_file *f = (struct wal_file *)p;
	int src;

	(void)vfs;
	/* every other file is the default VFS's own, in the space SQLite gave */
	if (!(flags & SQLITE_OPEN_WAL))
		return base_vfs->xOpen(base_vfs, name, p, flags, out);
	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	if ((src = base_vfs->xOpen(base_vfs, name, f->real, flags, out)) != SQLITE_OK) {
		/* SQLite calls xClose only when pMethods is set */
		if (f->real->pMethods != NULL)
			(void)f->real->pMethods->xClose(f->real);
		return src;
	}
	p->pMethods = &wal_methods;
	return SQLITE_OK;
}

static int bc_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	return base_vfs->xDelete(base_vfs, name, sync_dir);
}

static int bc_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return base_vfs->xAccess(base_vfs, name, flags, out);
}

static int bc_full_path(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return base_vfs->xFullPathname(base_vfs, name, n, out);
}

static int bc_random(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return base_vfs->xRandomness(base_vfs, n, out);
}

static int bc_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return base_vfs->xSleep(base_vfs, us);
}

static int bc_time(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return base_vfs->xCurrentTimeInt64(base_vfs, out);
}

static int bc_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return base_vfs->xGetLastError(base_vfs, n, out);
}

static void *bc_dl_open(sqlite3_vfs *vfs, const char *name)
{
	(void)vfs;
	return base_vfs->xDlOpen(base_vfs, name);
}

static void bc_dl_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	base_vfs->xDlError(base_vfs, n, out);
}

static void (*bc_dl_sym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	(void)vfs;
	return base_vfs->xDlSym(base_vfs, h, sym);
}

static void bc_dl_close(sqlite3_vfs *vfs, void *h)
{
	(void)vfs;
	base_vfs->xDlClose(base_vfs, h);
}

static int bc_time_double(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return base_vfs->xCurrentTime(base_vfs, out);
}

static pthread_once_t vfs_once = PTHREAD_ONCE_INIT;
static int vfs_rc = BC_ERR_INTERNAL;

static void vfs_init(void)
{
	sqlite3_io_methods m = {
	    .iVersion = 1,
	    .xClose = wal_close,
	    .xRead = wal_read,
	    .xWrite = wal_write,
	    .xTruncate = wal_truncate,
	    .xSync = wal_sync,
	    .xFileSize = wal_size,
	    .xLock = wal_lock,
	    .xUnlock = wal_unlock,
	    .xCheckReservedLock = wal_check_lock,
	    .xFileControl = wal_control,
	    .xSectorSize = wal_sector,
	    .xDeviceCharacteristics = wal_device,
	};

	/* the default VFS (unix) needs version 2 or more for xCurrentTimeInt64 */
	if ((base_vfs = sqlite3_vfs_find(NULL)) == NULL || base_vfs->iVersion < 2)
		return;
	wal_methods = m;
	bc_vfs = (sqlite3_vfs){
	    .iVersion = 2,
	    .szOsFile = (int)sizeof(struct wal_file) + base_vfs->szOsFile,
	    .mxPathname = base_vfs->mxPathname,
	    .zName = BC_SQLITE_VFS_NAME,
	    .xOpen = bc_open,
	    .xDelete = bc_delete,
	    .xAccess = bc_access,
	    .xFullPathname = bc_full_path,
	    .xDlOpen = bc_dl_open,
	    .xDlError = bc_dl_error,
	    .xDlSym = bc_dl_sym,
	    .xDlClose = bc_dl_close,
	    .xRandomness = bc_random,
	    .xSleep = bc_sleep,
	    .xCurrentTime = bc_time_double,
	    .xCurrentTimeInt64 = bc_time,
	    .xGetLastError = bc_last_error,
	};
	if (sqlite3_vfs_register(&bc_vfs, 0) == SQLITE_OK)
		vfs_rc = 0;
}

int bc_sqlite_vfs_register(void)
{
	pthread_once(&vfs_once, vfs_init);
	return vfs_rc;
}
