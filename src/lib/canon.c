/* Canonical UUIDs and MAC addresses: the shape checks every module shares. */
#include "bc/canon.h"

#include <string.h>

/* The lower-case digit, or -1 for a character that is not a hex digit (no locale). */
static int hex_lower(char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
		return c;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 'a';
	return -1;
}

/* in, of exactly len characters, with sep where is_sep says and hex digits
 * elsewhere, lowered into out[len + 1]. */
static int canon(const char *in, size_t len, char sep, int (*is_sep)(size_t), char *out)
{
	int c, rc = BC_ERR_INVALID;

	out[0] = '\0';
	if (in == NULL || strnlen(in, len + 1) != len)
		return rc;
	for (size_t i = 0; i < len; i++) {
		c = is_sep(i) ? (in[i] == sep ? sep : -1) : hex_lower(in[i]);
		if (c < 0)
			goto out;
		out[i] = (char)c;
	}
	out[len] = '\0';
	rc = 0;
out:
	if (rc != 0)
		out[0] = '\0';
	return rc;
}

static int uuid_sep(size_t i)
{
	return i == 8 || i == 13 || i == 18 || i == 23;
}

static int mac_sep(size_t i)
{
	return i % 3 == 2;
}

int bc_uuid_canon(const char *in, char out[static BC_UUID_LEN + 1])
{
	return canon(in, BC_UUID_LEN, '-', uuid_sep, out);
}

int bc_mac_canon(const char *in, char out[static BC_MAC_LEN + 1])
{
	/* one separator throughout: ':' or '-' (as Windows and some BMCs print it) */
	char sep = in != NULL && strnlen(in, 3) == 3 && in[2] == '-' ? '-' : ':';
	int rc = canon(in, BC_MAC_LEN, sep, mac_sep, out);

	for (size_t i = 2; rc == 0 && i < BC_MAC_LEN; i += 3)
		out[i] = ':';
	return rc;
}
