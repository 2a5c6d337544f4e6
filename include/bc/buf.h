/* Bounded readers and writers for untrusted bytes (after OpenSSH's sshbuf).
 *
 * bc_reader reads big-endian integers and length-prefixed strings from a byte
 * range it does not own; every getter checks the remaining length first and
 * leaves the reader unchanged on failure. bc_reader_done() refuses trailing bytes.
 *
 * bc_buf is a growable byte buffer with a hard maximum (max == 0 means 16 MiB);
 * bc_buf_free() wipes the bytes before freeing them, so it may hold secrets. */
#ifndef BC_BUF_H
#define BC_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

typedef struct {
	const uint8_t *p;
	size_t len;
	size_t off;
} bc_reader;

void bc_reader_init(bc_reader *r, const void *p, size_t len);
size_t bc_reader_left(const bc_reader *r);
BC_WUR int bc_reader_u8(bc_reader *r, uint8_t *v);
BC_WUR int bc_reader_u16(bc_reader *r, uint16_t *v); /* big-endian */
BC_WUR int bc_reader_u32(bc_reader *r, uint32_t *v);
BC_WUR int bc_reader_u64(bc_reader *r, uint64_t *v);
/* n bytes in place: *out points into the reader's range. */
BC_WUR int bc_reader_bytes(bc_reader *r, size_t n, const uint8_t **out);
/* A 16-bit big-endian length then that many bytes (a TPM2B). */
BC_WUR int bc_reader_b16(bc_reader *r, const uint8_t **out, size_t *len);
/* BC_ERR_TRAILING when bytes are left. */
BC_WUR int bc_reader_done(const bc_reader *r);

typedef struct {
	uint8_t *p;
	size_t len;
	size_t cap;
	size_t max;
} bc_buf;

void bc_buf_init(bc_buf *b, size_t max);
BC_WUR int bc_buf_put(bc_buf *b, const void *p, size_t n); /* BC_ERR_LIMIT past max */
BC_WUR int bc_buf_put_u8(bc_buf *b, uint8_t v);
BC_WUR int bc_buf_put_u16(bc_buf *b, uint16_t v);
BC_WUR int bc_buf_put_u32(bc_buf *b, uint32_t v);
BC_WUR int bc_buf_put_u64(bc_buf *b, uint64_t v);
/* The string's bytes then a 0x00 (the signing payload convention). */
BC_WUR int bc_buf_put_cstr(bc_buf *b, const char *s);
/* Hands the bytes to the caller (free with free()); the buffer is reset. */
uint8_t *bc_buf_steal(bc_buf *b, size_t *len);
void bc_buf_free(bc_buf *b);

/* Wipes and frees; NULL is fine. */
void bc_freezero(void *p, size_t len);

#endif
