/* A SQLite VFS ("bc-wal") over the default one that gathers the writes to a WAL file:
 * consecutive writes (a commit's frames, each a 24-byte header and a page) are kept in
 * one buffer and reach the file in one write, before any read, size, truncation, sync
 * or close of that file. Every other file goes to the default VFS unchanged.
 *
 * Sound only with PRAGMA synchronous=FULL (which every handle of the store sets): a
 * commit then syncs the WAL before the wal-index makes its frames visible, and the sync
 * writes the buffer first. Under NORMAL a commit is not synced, and a reader could be
 * shown frames still in the buffer. */
#ifndef BC_STORE_SQLITE_VFS_H
#define BC_STORE_SQLITE_VFS_H

#include "bc/err.h"

#define BC_SQLITE_VFS_NAME "bc-wal"

/* Registers the VFS (not as the default) once per process. 0, or BC_ERR_INTERNAL when
 * SQLite has no default VFS or refuses it. */
BC_WUR int bc_sqlite_vfs_register(void);

#endif
