/* base64url (no padding), standard base64 (with padding) and hex.
 *
 * Decoders are strict: base64url refuses '+', '/', '=', white space and
 * non-canonical trailing bits; standard base64 requires correct padding; hex
 * accepts upper or lower case, even length only. Encoders return a malloc'd
 * NUL-terminated string; decoders a malloc'd byte array (plus a NUL after the
 * last byte, not counted in *len). The caller frees both. */
#ifndef BC_CODEC_H
#define BC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "bc/err.h"

char *bc_b64url_encode(const void *p, size_t len);
BC_WUR int bc_b64url_decode(const char *s, size_t slen, uint8_t **out, size_t *len);
char *bc_b64_encode(const void *p, size_t len);
BC_WUR int bc_b64_decode(const char *s, size_t slen, uint8_t **out, size_t *len);
char *bc_hex_encode(const void *p, size_t len); /* lower case */
/* Into a caller buffer of 2*len+1 bytes. */
void bc_hex_encode_to(const void *p, size_t len, char *out);
BC_WUR int bc_hex_decode(const char *s, size_t slen, uint8_t **out, size_t *len);
/* Exactly outlen bytes or BC_ERR_INVALID. */
BC_WUR int bc_hex_decode_to(const char *s, uint8_t *out, size_t outlen);

#endif
