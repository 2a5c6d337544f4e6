/* bc_json_parse on arbitrary bytes: a refusal leaves nothing behind; an accepted
 * value dumps to canonical JSON that parses again and dumps the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc/json.h"

static void getters(const json_t *v)
{
	const char *key, *s;
	json_t *member;
	int64_t i;
	int b;

	if (!json_is_object(v))
		return;
	json_object_foreach((json_t *)v, key, member)
	{
		if (bc_json_get_string(v, key, &s) == 0 && strlen(s) != json_string_length(member))
			abort();
		(void)bc_json_get_int(v, key, &i);
		(void)bc_json_get_bool(v, key, &b);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = NULL, *again = NULL;
	char err[256], *d1, *d2;

	if (bc_json_parse(data, size, 65536, &v, err, sizeof(err)) != 0) {
		if (v != NULL || err[0] == '\0')
			abort();
		return 0;
	}
	getters(v);
	if ((d1 = bc_json_dump(v)) == NULL)
		abort();
	if (bc_json_parse(d1, strlen(d1), 0, &again, err, sizeof(err)) != 0)
		abort();
	if ((d2 = bc_json_dump(again)) == NULL || strcmp(d1, d2) != 0 || !json_equal(v, again))
		abort();
	free(d1);
	free(d2);
	json_decref(again);
	json_decref(v);
	return 0;
}
