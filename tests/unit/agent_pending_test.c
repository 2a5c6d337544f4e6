/* src/agent/pending.c: what bcd join keeps while a join request waits. pending.json's
 * reader refuses, each by its code and message: malformed text (not JSON, fields
 * missing or extra, a CSR that is not one, made in the future), another attestor or
 * role, and a file older than the server's pending TTL. The files written by
 * bcd_pending_save read back to the same key and CSR; ignored ones are removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/evp.h>

#include "agent/agent.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"

#define NOW_MS ((int64_t)1800000000000)

static uint8_t *g_csr;
static size_t g_csr_len;
static EVP_PKEY *g_key;

static int setup(void **state)
{
	(void)state;
	if (bc_key_generate(&g_key) != 0 ||
	    bc_csr_make(g_key, BC_WIRE_CSR_CN, &g_csr, &g_csr_len) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(g_csr);
	EVP_PKEY_free(g_key);
	return 0;
}

static char *pending_text(const char *attestor, const char *role, int64_t created,
                          const char *csr_b64, const char *extra)
{
	char *b64 = bc_b64url_encode(g_csr, g_csr_len), *out = NULL;

	assert_non_null(b64);
	assert_true(asprintf(&out,
	                     "{\"attestor\":\"%s\",\"role\":\"%s\",\"createdAtMs\":%lld,"
	                     "\"csr\":\"%s\"%s}",
	                     attestor, role, (long long)created, csr_b64 ? csr_b64 : b64,
	                     extra ? extra : "") > 0);
	free(b64);
	return out;
}

static int parse(const char *text, int64_t now, struct bcd_msg *m)
{
	struct bcd_pending p;
	int rc;

	m->text[0] = '\0';
	rc = bcd_pending_parse(text, strlen(text), "tpm", BC_ROLE_NODE, now, &p, m);
	if (rc == 0) {
		assert_int_equal(p.csr_len, g_csr_len);
		assert_memory_equal(p.csr, g_csr, g_csr_len);
	} else {
		assert_null(p.csr);
	}
	bcd_pending_free(&p);
	return rc;
}

static void test_reads_what_bcd_writes(void **state)
{
	struct bcd_msg m;
	char *t = pending_text("tpm", BC_ROLE_NODE, NOW_MS - 1000, NULL, NULL);

	(void)state;
	assert_int_equal(parse(t, NOW_MS, &m), 0);
	free(t);
	/* a day less a second is still the same request's */
	t = pending_text("tpm", BC_ROLE_NODE, NOW_MS - (int64_t)BCD_PENDING_MAX_AGE_S * 1000 + 1000,
	                 NULL, NULL);
	assert_int_equal(parse(t, NOW_MS, &m), 0);
	free(t);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
	    "",
	    "not json",
	    "[]",
	    "{}",
	    "{\"attestor\":\"tpm\",\"role\":\"node\",\"createdAtMs\":1}",
	    "{\"attestor\":\"tpm\",\"role\":\"node\",\"createdAtMs\":\"1\",\"csr\":\"AA\"}",
	    "{\"attestor\":1,\"role\":\"node\",\"createdAtMs\":1,\"csr\":\"AA\"}",
	};
	struct bcd_msg m;
	char *t;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], NOW_MS, &m), BC_ERR_INVALID);
		assert_non_null(strstr(m.text, "malformed"));
	}
	/* a fifth field */
	t = pending_text("tpm", BC_ROLE_NODE, NOW_MS, NULL, ",\"more\":\"x\"");
	assert_int_equal(parse(t, NOW_MS, &m), BC_ERR_INVALID);
	free(t);
	/* a csr that is not base64url, not a CSR */
	t = pending_text("tpm", BC_ROLE_NODE, NOW_MS, "AA==", NULL);
	assert_int_equal(parse(t, NOW_MS, &m), BC_ERR_INVALID);
	free(t);
	t = pending_text("tpm", BC_ROLE_NODE, NOW_MS, "AAAA", NULL);
	assert_int_equal(parse(t, NOW_MS, &m), BC_ERR_INVALID);
	assert_non_null(strstr(m.text, "not a CSR"));
	free(t);
	/* made in the future, or at time zero */
	t = pending_text("tpm", BC_ROLE_NODE, NOW_MS + 3600 * 1000, NULL, NULL);
	assert_int_equal(parse(t, NOW_MS, &m), BC_ERR_INVALID);
	assert_non_null(strstr(m.text, "future"));
	free(t);
	t = pending_text("tpm", BC_ROLE_NODE, 0, NULL, NULL);
	assert_int_equal(parse(t, NOW_MS, &m), BC_ERR_INVALID);
	free(t);
}

static void test_other_attestor_or_role(void **state)
{
	struct bcd_msg m;
	char *t = pending_text("join-token", BC_ROLE_NODE, NOW_MS, NULL, NULL);

	(void)state;
	assert_int_equal(parse(t, NOW_MS, &m), BC_ERR_CONFLICT);
	assert_non_null(strstr(m.text, "attestor join-token"));
	free(t);
	t = pending_text("tpm", BC_ROLE_SITE, NOW_MS, NULL, NULL);
	assert_int_equal(parse(t, NOW_MS, &m), BC_ERR_CONFLICT);
	assert_non_null(strstr(m.text, "role site"));
	free(t);
}

static void test_too_old(void **state)
{
	struct bcd_msg m;
	char *t = pending_text("tpm", BC_ROLE_NODE,
	                       NOW_MS - (int64_t)BCD_PENDING_MAX_AGE_S * 1000 - 1, NULL, NULL);

	(void)state;
	assert_int_equal(parse(t, NOW_MS, &m), BC_ERR_EXPIRED);
	assert_non_null(strstr(m.text, "pending TTL"));
	free(t);
}

static void config(struct bcd_config *c, char *dir)
{
	memset(c, 0, sizeof(*c));
	c->path = "test.toml";
	c->has_fakehw = 1; /* never the host's TPM */
	c->data_dir = dir;
}

static int exists(const char *dir, const char *name)
{
	return bcd_exists(dir, name);
}

/* Saved files read back to the same key and CSR, the key 0600; those of another
 * attestor, or whose key is not the CSR's, are ignored and removed. */
static void test_save_load_and_ignore(void **state)
{
	char dir[] = "/tmp/bcd-pending-XXXXXX", path[512];
	struct bcd_nodekey k = {0}, back;
	struct bcd_config c;
	struct bcd_msg m = {""};
	uint8_t *csr = NULL;
	size_t csr_len = 0;
	struct stat st;
	EVP_PKEY *other = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	config(&c, dir);
	k.key = g_key;
	assert_int_equal(bcd_pending_load(&c, "tpm", BC_ROLE_NODE, &back, &csr, &csr_len, &m),
	                 BC_ERR_NOT_FOUND);
	assert_int_equal(bcd_pending_save(&c, "tpm", BC_ROLE_NODE, &k, g_csr, g_csr_len, &m), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, BCD_NODE_KEY_PENDING);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(bcd_pending_load(&c, "tpm", BC_ROLE_NODE, &back, &csr, &csr_len, &m), 0);
	assert_int_equal(csr_len, g_csr_len);
	assert_memory_equal(csr, g_csr, g_csr_len);
	assert_int_equal(EVP_PKEY_eq(back.key, g_key), 1);
	free(csr);
	bcd_nodekey_free(&back);

	/* another attestor: ignored and removed */
	assert_int_equal(
	    bcd_pending_load(&c, "join-token", BC_ROLE_NODE, &back, &csr, &csr_len, &m),
	    BC_ERR_NOT_FOUND);
	assert_false(exists(dir, BCD_PENDING));
	assert_false(exists(dir, BCD_NODE_KEY_PENDING));

	/* a key that is not the CSR's */
	assert_int_equal(bc_key_generate(&other), 0);
	k.key = other;
	assert_int_equal(bcd_pending_save(&c, "tpm", BC_ROLE_NODE, &k, g_csr, g_csr_len, &m), 0);
	assert_int_equal(bcd_pending_load(&c, "tpm", BC_ROLE_NODE, &back, &csr, &csr_len, &m),
	                 BC_ERR_NOT_FOUND);
	assert_null(csr);
	assert_false(exists(dir, BCD_PENDING));
	EVP_PKEY_free(other);

	/* pending.json without its key */
	k.key = g_key;
	assert_int_equal(bcd_pending_save(&c, "tpm", BC_ROLE_NODE, &k, g_csr, g_csr_len, &m), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(bcd_pending_load(&c, "tpm", BC_ROLE_NODE, &back, &csr, &csr_len, &m),
	                 BC_ERR_NOT_FOUND);
	assert_false(exists(dir, BCD_PENDING));
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reads_what_bcd_writes),  cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_other_attestor_or_role), cmocka_unit_test(test_too_old),
	    cmocka_unit_test(test_save_load_and_ignore),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
