#include "bc/json.h"

#include <malloc.h>
#include <openssl/crypto.h>

#include <stdio.h>
#include <string.h>

#define JSON_DEFAULT_MAX (1024u * 1024u)
#define JSON_MAX_DEPTH   32

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

/* Depth of [ and { outside strings, before jansson sees the input: its own
 * limit (2048) is far more than any message of ours needs. The scan only has to
 * be right for input jansson would accept; anything else it refuses anyway. */
static int depth_ok(const unsigned char *p, size_t len)
{
	int depth = 0, in_str = 0;

	for (size_t i = 0; i < len; i++) {
		if (in_str) {
			if (p[i] == '\\')
				i++;
			else if (p[i] == '"')
				in_str = 0;
			continue;
		}
		switch (p[i]) {
		case '"': in_str = 1; break;
		case '[':
		case '{':
			if (++depth > JSON_MAX_DEPTH)
				return 0;
			break;
		case ']':
		case '}': depth--; break;
		default: break;
		}
	}
	return 1;
}

int bc_json_parse(const void *p, size_t len, size_t max, json_t **out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *v;

	*out = NULL;
	set_err(err, errlen, "");
	if (max == 0)
		max = JSON_DEFAULT_MAX;
	if (p == NULL && len > 0) {
		set_err(err, errlen, "no input");
		return BC_ERR_INVALID;
	}
	if (len > max) {
		if (err && errlen)
			snprintf(err, errlen, "larger than %zu bytes", max);
		return BC_ERR_LIMIT;
	}
	if (!depth_ok(p, len)) {
		if (err && errlen)
			snprintf(err, errlen, "nested deeper than %d", JSON_MAX_DEPTH);
		return BC_ERR_LIMIT;
	}
	/* no JSON_ALLOW_NUL: "\u0000" is refused, so every string is a C string;
	 * no JSON_DECODE_ANY: the top level is an object or an array */
	v = json_loadb(len ? p : "", len, JSON_REJECT_DUPLICATES, &jerr);
	if (v == NULL) {
		if (err && errlen)
			snprintf(err, errlen, "%s (line %d, column %d, position %d)", jerr.text,
			         jerr.line, jerr.column, jerr.position);
		return BC_ERR_INVALID;
	}
	*out = v;
	return 0;
}

static int get_member(const json_t *obj, const char *key, json_t **v)
{
	*v = NULL;
	if (!json_is_object(obj) || key == NULL)
		return BC_ERR_INVALID;
	if ((*v = json_object_get(obj, key)) == NULL)
		return BC_ERR_NOT_FOUND;
	return 0;
}

int bc_json_get_string(const json_t *obj, const char *key, const char **out)
{
	json_t *v;
	int rc;

	*out = NULL;
	if ((rc = get_member(obj, key, &v)) != 0)
		return rc;
	/* a value built in memory may hold a NUL; as a C string it would be cut */
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return BC_ERR_INVALID;
	*out = json_string_value(v);
	return 0;
}

int bc_json_get_int(const json_t *obj, const char *key, int64_t *out)
{
	json_t *v;
	int rc;

	*out = 0;
	if ((rc = get_member(obj, key, &v)) != 0)
		return rc;
	if (!json_is_integer(v))
		return BC_ERR_INVALID;
	*out = (int64_t)json_integer_value(v);
	return 0;
}

int bc_json_get_bool(const json_t *obj, const char *key, int *out)
{
	json_t *v;
	int rc;

	*out = 0;
	if ((rc = get_member(obj, key, &v)) != 0)
		return rc;
	if (!json_is_boolean(v))
		return BC_ERR_INVALID;
	*out = json_is_true(v);
	return 0;
}

/* jansson frees its parser buffers and string values without wiping them, and those
 * hold token secrets, API keys and the PKI bundle's private keys. Every block it frees
 * is wiped first. Allocation stays plain malloc(), so a caller may still free() what
 * json_dumps() returns. */
static void wiping_free(void *p)
{
	if (p == NULL)
		return;
	OPENSSL_cleanse(p, malloc_usable_size(p));
	free(p);
}

__attribute__((constructor)) static void bc_json_init(void)
{
	json_set_alloc_funcs(malloc, wiping_free);
}

char *bc_json_dump(const json_t *v)
{
	if (v == NULL)
		return NULL;
	/* JSON_ENCODE_ANY lets a scalar be dumped as well; objects are unaffected */
	return json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
}
