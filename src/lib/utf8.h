/* Internal to libbc (not installed): strict UTF-8 for the TOML reader and the
 * logger. */
#ifndef BC_LIB_UTF8_H
#define BC_LIB_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length (1 to 4) of the well-formed UTF-8 sequence at s, reading at most n
 * bytes; 0 when it is not one (overlong forms, surrogates, code points above
 * U+10FFFF, stray continuation bytes, a sequence cut short by n). */
size_t bc_utf8_seq_len(const uint8_t *s, size_t n);

#endif
