/* The secret parsers (bc/secret.h) on arbitrary text: a join token as a JoinRequest
 * carries it, an API key as an Authorization header does. Whatever one accepts is
 * its prefix, the id it copied out, "_" and the secret it points at, in that order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/secret.h"
#include "bc/wire.h"

static void check(const char *s, const char *prefix, const char *id, const char *secret)
{
	size_t p = strlen(prefix);

	if (strlen(id) != BC_SECRET_ID_LEN || strncmp(s, prefix, p) != 0 ||
	    memcmp(s + p, id, BC_SECRET_ID_LEN) != 0 || s[p + BC_SECRET_ID_LEN] != '_' ||
	    secret != s + p + BC_SECRET_ID_LEN + 1)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[BC_SECRET_ID_LEN + 1];
	const char *secret;
	char *s = malloc(size + 1);

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (bc_secret_parse_token(s, id, &secret) == 0)
		check(s, BC_WIRE_TOKEN_PREFIX, id, secret);
	else if (id[0] != '\0' || secret != NULL)
		abort();
	if (bc_secret_parse_api_key(s, id, &secret) == 0) {
		check(s, BC_SECRET_API_KEY_PREFIX, id, secret);
		if (strlen(secret) != BC_SECRET_LEN)
			abort();
	} else if (id[0] != '\0' || secret != NULL) {
		abort();
	}
	free(s);
	return 0;
}
