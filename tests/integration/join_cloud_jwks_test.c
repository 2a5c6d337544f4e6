/* A slow JWKS endpoint stalls nothing: the cloud-iid JWKS URL is fetched by a
 * refresher thread, never by an HTTP worker or under the provider's lock. A loopback
 * JWKS server (tests/support/jwks_server.py) holds its answer open for as long as the
 * test says; while it holds it, /healthz answers, a token join is admitted, and OIDC
 * joins (more of them than may wait) are refused jwks-unavailable, each after waiting
 * at most a bound. That is decided by order, not by time: every one of them has its
 * answer before the JWKS server has sent its own. Then the set arrives and admits,
 * and a rotated set is loaded on an unknown kid, at most once a minute. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bc/clock.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/pki.h"
#include "bc/reasons.h"
#include "bc/wire.h"
#include "bct_cloud.h"
#include "bct_http.h"
#include "bctest.h"

extern char **environ;

static struct bct_cp cp;
static char dir[256];
static pid_t server = -1;
static EVP_PKEY *o1_key, *o2_key;
static int serial;

static int exists(const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 && st.st_size > 0;
}

static void put(const char *name, const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(bct_write_file(path, text), 0);
}

static void drop(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(unlink(path), 0);
}

/* Waits (polling, without a deadline of its own: ctest's timeout bounds it) until
 * the JWKS server has written name. */
static void await(const char *name)
{
	while (!exists(name))
		usleep(20 * 1000);
}

static void serve_keys(EVP_PKEY *const *keys, const char *const *kids, size_t n)
{
	char *j[2], *set;

	for (size_t i = 0; i < n; i++)
		j[i] = bct_jwk(keys[i], kids[i], "ES256");
	set = bct_jwks((const char *const *)j, n);
	put("jwks.json", set);
	for (size_t i = 0; i < n; i++)
		free(j[i]);
	free(set);
}

static int start_server(void)
{
	char script[512], port[16] = "", path[512];
	char *argv[] = {"python3", script, dir, NULL};
	FILE *f;

	snprintf(script, sizeof(script), "%s/tests/support/jwks_server.py",
	         getenv("BC_SOURCE_DIR") ? getenv("BC_SOURCE_DIR") : BC_SOURCE_DIR);
	if (posix_spawnp(&server, "python3", NULL, NULL, argv, environ) != 0)
		return -1;
	await("port");
	snprintf(path, sizeof(path), "%s/port", dir);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	if (fgets(port, sizeof(port), f) == NULL)
		port[0] = 0;
	fclose(f);
	return atoi(port);
}

static int setup(void **state)
{
	char toml[2048], *d;
	int port;
	(void)state;

	if ((d = bct_tmpdir()) == NULL)
		return -1;
	snprintf(dir, sizeof(dir), "%s", d);
	free(d);
	o1_key = bct_ec_key();
	o2_key = bct_ec_key();
	serve_keys(&o1_key, (const char *const[]){"o1"}, 1);
	/* the endpoint holds its answers from the start: the first load is stuck */
	put("hold", "1");
	if ((port = start_server()) <= 0)
		return -1;
	snprintf(toml, sizeof(toml),
	         "[attestors.cloud-iid.oidc.slow]\nissuer = \"https://slow.test\"\n"
	         "jwks = \"http://127.0.0.1:%d/jwks\"\naudience = \"https://bc.test\"\n"
	         "account_claim = \"tenant\"\ninstance_claim = \"sub\"\n"
	         "[attestors.cloud-iid.resolve.slow]\nprovider = \"oidc.slow\"\n"
	         "account = \"acme\"\ntenant = \"root\"\n",
	         port);
	return bct_cp_start(&cp, toml);
}

static int teardown(void **state)
{
	(void)state;
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
	}
	bct_cp_stop(&cp);
	bc_clock_set_offset_ms(0);
	bct_rmrf(dir);
	EVP_PKEY_free(o1_key);
	EVP_PKEY_free(o2_key);
	return 0;
}

/* An OIDC join of a fresh instance with a token under key/kid: 0, BC_ERR_DENIED, or
 * BC_ERR_UNAVAILABLE (shed, or no answer). */
static int oidc_join(EVP_PKEY *key, const char *kid)
{
	struct bc_join_answer ans;
	EVP_PKEY *ck = NULL;
	uint8_t *csr = NULL, d[32];
	size_t len = 0;
	char hex[65], hdr[128], body[512], *jwt, *ev;
	int64_t now = bc_now_ms() / 1000;
	int rc;

	assert_int_equal(bc_key_generate(&ck), 0);
	assert_int_equal(bc_csr_make(ck, BC_WIRE_CSR_CN, &csr, &len), 0);
	assert_int_equal(bc_sha256(csr, len, d), 0);
	bc_hex_encode_to(d, 32, hex);
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"ES256\",\"kid\":\"%s\"}", kid);
	snprintf(body, sizeof(body),
	         "{\"iss\":\"https://slow.test\",\"aud\":\"https://bc.test#%s\",\"iat\":%lld,"
	         "\"exp\":%lld,\"tenant\":\"acme\",\"sub\":\"vm-%d-%d\"}",
	         hex, (long long)now, (long long)(now + 600), (int)getpid(),
	         __atomic_add_fetch(&serial, 1, __ATOMIC_SEQ_CST));
	assert_non_null(jwt = bct_jwt(key, hdr, body));
	assert_true(asprintf(&ev, "{\"provider\":\"oidc\",\"document\":\"%s\"}", jwt) > 0);
	struct bct_join_opts jo = {.attestor = "cloud-iid",
	                           .key = ck,
	                           .csr = csr,
	                           .csr_len = len,
	                           .attestation = (const uint8_t *)ev,
	                           .attestation_len = strlen(ev)};
	rc = bct_join(&cp, &jo, &ans);
	if (rc == 0)
		bc_join_answer_free(&ans);
	free(ev);
	free(jwt);
	free(csr);
	EVP_PKEY_free(ck);
	return rc;
}

/* The same, one at a time: "" when admitted, else the reason. */
static const char *oidc_try(EVP_PKEY *key, const char *kid)
{
	int rc = oidc_join(key, kid);

	return rc == 0 ? "" : rc == BC_ERR_DENIED ? bct_last_reason(&cp) : "(no answer)";
}

/* oidc_try again while the load a join asked for has not ended within the join's
 * bound (a slow machine): the answer once it has. */
static const char *oidc_settled(EVP_PKEY *key, const char *kid, const char *pending)
{
	const char *why = "";

	for (int i = 0; i < 30; i++)
		if (strcmp(why = oidc_try(key, kid), pending) != 0)
			break;
	return why;
}

/* The status of /healthz, 0 when no answer came. */
static long healthz(void)
{
	long status = bct_http(&cp, "GET", "/healthz", NULL, NULL, NULL);

	return status > 0 ? status : 0;
}

struct racer {
	pthread_t th;
	int rc;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	r->rc = oidc_join(o1_key, "o1");
	return NULL;
}

#define RACERS 12 /* more than CLOUD_JWKS_WAITERS, more than the test's 8 workers */

static void test_slow_jwks_stalls_nothing(void **state)
{
	struct racer r[RACERS];
	struct bc_join_answer ans;
	char pool[64], *token;
	size_t before = bct_refusal_count(&cp), refused = 0;
	(void)state;

	/* the refresher's first load has reached the endpoint, which holds it */
	await("requests");
	for (int i = 0; i < RACERS; i++)
		assert_int_equal(pthread_create(&r[i].th, NULL, race, &r[i]), 0);
	/* while those wait for the set (or not at all), the rest of the server answers */
	assert_int_equal(healthz(), 200);
	assert_int_equal(bct_pool(&cp, "root", "p", "{}", pool), 0);
	struct bct_token_opts to = {.pool = pool};
	assert_non_null(token = bct_token(&cp, &to, NULL));
	struct bct_join_opts jo = {.token = token};
	assert_int_equal(bct_join(&cp, &jo, &ans), 0);
	bc_join_answer_free(&ans);
	free(token);
	/* each refused (or shed), none admitted or left without an answer by a worker */
	for (int i = 0; i < RACERS; i++) {
		pthread_join(r[i].th, NULL);
		assert_true(r[i].rc == BC_ERR_DENIED || r[i].rc == BC_ERR_UNAVAILABLE);
		refused += r[i].rc == BC_ERR_DENIED;
	}
	assert_true(refused > 0);
	pthread_mutex_lock(&cp.mu);
	assert_int_equal(cp.n_refusals - before, refused);
	for (size_t i = before; i < cp.n_refusals; i++)
		assert_string_equal(cp.refusals[i].reason, BC_R_JWKS_UNAVAILABLE);
	pthread_mutex_unlock(&cp.mu);
	assert_string_equal(oidc_try(o1_key, "o1"), BC_R_JWKS_UNAVAILABLE);
	assert_int_equal(healthz(), 200);
	/* all of that while the endpoint still held its answer */
	assert_false(exists("answered"));
	drop("hold");
}

/* The set arrives: admitted. The first load may have been abandoned (the fetch's own
 * timeout) if the machine was slow: a minute later a join asks for a new one. */
static void test_set_arrives(void **state)
{
	const char *why = "";
	(void)state;

	for (int i = 0; i < 10; i++) {
		why = oidc_try(o1_key, "o1");
		if (strcmp(why, BC_R_JWKS_UNAVAILABLE) != 0)
			break;
		bc_clock_set_offset_ms(bc_clock_offset_ms() + 61000);
	}
	assert_string_equal(why, "");
}

/* The endpoint rotates its keys: a token under the new kid asks for the set again,
 * at most once a minute, and the join waits for it. */
static void test_url_rotation(void **state)
{
	size_t before;
	(void)state;

	serve_keys((EVP_PKEY *const[]){o1_key, o2_key}, (const char *const[]){"o1", "o2"}, 2);
	bc_clock_set_offset_ms(bc_clock_offset_ms() + 61000);
	assert_string_equal(oidc_settled(o2_key, "o2", BC_R_JWS_KID), "");
	/* rotated again within the minute: not asked for, jws-kid */
	serve_keys(&o1_key, (const char *const[]){"o3"}, 1);
	before = bct_refusal_count(&cp);
	assert_string_equal(oidc_try(o1_key, "o3"), BC_R_JWS_KID);
	assert_int_equal(bct_refusal_count(&cp), before + 1);
	bc_clock_set_offset_ms(bc_clock_offset_ms() + 61000);
	assert_string_equal(oidc_settled(o1_key, "o3", BC_R_JWS_KID), "");
	/* a kid no set holds: refused, whatever the loads */
	assert_string_equal(oidc_try(o2_key, "nobody"), BC_R_JWS_KID);
}

int main(void)
{
	if (bct_engine_skip())
		return BCT_SKIP;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slow_jwks_stalls_nothing),
	    cmocka_unit_test(test_set_arrives),
	    cmocka_unit_test(test_url_rotation),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
