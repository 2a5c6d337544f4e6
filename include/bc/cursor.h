/* A list page's cursor: an opaque token that names where a keyset page starts and in
 * which direction, for the admin API's lists (nextCursor, prevCursor, ?cursor=).
 *
 * A list is ordered by an indexed key: an integer (a time; 0 when the list orders by
 * id alone) then an id. A cursor carries that key of the row a page ends at, the
 * direction to go from it and the name of the list it belongs to, as base64url of
 * "<list>.<n|p>.<at>.<id>". It is not secret and not signed: it only moves a reader
 * within rows it may already read, so the client may build one. It is untrusted input
 * all the same: the decoder is strict (canonical base64url, canonical decimal, an id
 * of [A-Za-z0-9_-], the expected list name, no trailing bytes) and bounded
 * (BC_CURSOR_MAX characters). */
#ifndef BC_CURSOR_H
#define BC_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

#define BC_CURSOR_ID_MAX   64  /* bytes of the id */
#define BC_CURSOR_LIST_MAX 24  /* bytes of the list name: [a-z_] */
#define BC_CURSOR_MAX      160 /* characters of an encoded cursor, NUL not counted */

struct bc_cursor {
	int before; /* 1: the page before the key (prevCursor); 0: the page after it */
	int64_t at; /* 0 .. INT64_MAX */
	char id[BC_CURSOR_ID_MAX + 1];
};

/* Encodes k for list into out (at least BC_CURSOR_MAX + 1 bytes). BC_ERR_INVALID when
 * list, k->at or k->id is out of shape (so every cursor encoded decodes). */
BC_WUR int bc_cursor_encode(const char *list, const struct bc_cursor *k,
                            char out[static BC_CURSOR_MAX + 1]);

/* Decodes s, a cursor of list, into *k (zeroed first). BC_ERR_INVALID for anything
 * else: another list's cursor, bad base64url, a field out of shape, trailing bytes;
 * BC_ERR_LIMIT when s is longer than BC_CURSOR_MAX. */
BC_WUR int bc_cursor_decode(const char *list, const char *s, struct bc_cursor *k);

#endif
