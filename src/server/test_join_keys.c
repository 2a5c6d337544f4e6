/* A test build's stand-in for the store's join key rotation (BC_TESTING only): the
 * file named by BC_TEST_JOIN_KEYS adds keys to the loaded pki's join key set, one a
 * line, "<state> <use> <PKCS#8 PEM file>": state next or retired adds the key so;
 * active adds it as next and switches to it (the active key before is retired). An
 * end-to-end test restarts the server with another file to rotate. A release build
 * has no such variable: the store's pki_keys table fills the set. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/files.h"
#include "bc/pki.h"
#include "server/server.h"

#ifdef BC_TESTING
static int add_line(bc_pki *pki, const char *state, const char *use, const char *path)
{
	enum bc_join_key_state st = bc_join_key_state_of(state);
	enum bc_join_key_use u = bc_join_key_use_of(use);
	EVP_PKEY *key = NULL;
	char *pem = NULL, kid[BC_KEY_ID_LEN + 1];
	size_t len = 0;
	int rc;

	if (st == 0 || u == 0)
		return BC_ERR_INVALID;
	if ((rc = bc_file_read(path, 64 * 1024, BC_FILE_TEXT | BC_FILE_FOLLOW, &pem, &len)) != 0)
		return rc;
	rc = bc_key_from_pem(pem, len, &key);
	bc_freezero(pem, len + 1);
	if (rc != 0 || (rc = bc_key_id(key, kid)) != 0) {
		EVP_PKEY_free(key);
		return rc;
	}
	if ((rc = bc_pki_join_key_add(pki, u, st == BC_JOIN_KEY_ACTIVE ? BC_JOIN_KEY_NEXT : st,
	                              key)) != 0)
		return rc;
	return st == BC_JOIN_KEY_ACTIVE ? bc_pki_join_key_activate(pki, kid) : 0;
}

int bc_server_test_join_keys(bc_pki *pki, char *err, size_t errlen)
{
	const char *path = getenv("BC_TEST_JOIN_KEYS");
	char line[1200], state[16], use[32], file[1024];
	FILE *f;
	int rc = 0, n = 0;

	if (path == NULL || *path == '\0')
		return 0;
	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "BC_TEST_JOIN_KEYS %s: %s", path, strerror(errno));
		return BC_ERR_CONFIG;
	}
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		n++;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (sscanf(line, "%15s %31s %1023s", state, use, file) != 3 ||
		    add_line(pki, state, use, file) != 0) {
			snprintf(err, errlen,
			         "BC_TEST_JOIN_KEYS %s:%d: not \"<state> <use> <pem>\" "
			         "of a key that can join the set",
			         path, n);
			rc = BC_ERR_CONFIG;
		}
	}
	fclose(f);
	return rc;
}
#else
int bc_server_test_join_keys(bc_pki *pki, char *err, size_t errlen)
{
	(void)pki;
	(void)err;
	(void)errlen;
	return 0;
}
#endif
