#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "client/internal.h"

void bc_client_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void bc_client_show(const char *s, char out[static BC_CLIENT_SHOW_LEN])
{
	size_t i;

	if (s == NULL)
		s = "";
	for (i = 0; s[i] != '\0' && i < 64; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (s[i] != '\0') {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = '\0';
}

int bc_client_same_key(EVP_PKEY *a, EVP_PKEY *b)
{
	uint8_t *da = NULL, *db = NULL;
	size_t la = 0, lb = 0;
	int same = 0;

	if (a == NULL || b == NULL)
		return 0;
	if (bc_key_spki(a, &da, &la) == 0 && bc_key_spki(b, &db, &lb) == 0)
		same = la == lb && memcmp(da, db, la) == 0;
	free(da);
	free(db);
	return same;
}
