#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/json.h"
#include "client/internal.h"

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

#define MAX_ERROR_JSON (64u * 1024)

int bc_client_refused(const char *what, const char *event, long status, const uint8_t *resp,
                      size_t len, char *err, size_t errlen)
{
	char shown[BC_CLIENT_SHOW_LEN], jerr[160];
	const char *code = NULL;
	json_t *j = NULL;
	int rc;

	if (len > 0 && bc_json_parse(resp, len, MAX_ERROR_JSON, &j, jerr, sizeof(jerr)) == 0 &&
	    json_is_object(j) && bc_json_get_string(j, "code", &code) != 0)
		code = NULL;
	if (code != NULL && strcmp(code, "permission_denied") == 0) {
		bc_errf(err, errlen,
		        "%s refused by the server (permission_denied): ask the "
		        "operator to check the %s event",
		        what, event);
		rc = BC_ERR_DENIED;
	} else if (code != NULL && strcmp(code, "invalid_argument") == 0) {
		bc_errf(err, errlen,
		        "%s refused by the server as malformed "
		        "(invalid_argument, HTTP %ld)",
		        what, status);
		rc = BC_ERR_INVALID;
	} else {
		bc_client_show(code != NULL ? code : "no Connect error code", shown);
		bc_errf(err, errlen, "%s failed: the server answered HTTP %ld (%s)", what, status,
		        shown);
		rc = status == 400 ? BC_ERR_INVALID : BC_ERR_UNAVAILABLE;
	}
	json_decref(j);
	return rc;
}
