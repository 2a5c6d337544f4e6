#include "lib/utf8.h"

static int is_cont(uint8_t c)
{
	return (c & 0xc0) == 0x80;
}

size_t bc_utf8_seq_len(const uint8_t *s, size_t n)
{
	uint8_t lo = 0x80, hi = 0xbf;
	size_t need;

	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		need = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		need = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		need = 4;
	else
		return 0;
	/* the second byte's range is what excludes overlong forms, surrogates and
	 * code points past U+10FFFF (RFC 3629, section 4) */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < need || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if (!is_cont(s[i]))
			return 0;
	return need;
}
