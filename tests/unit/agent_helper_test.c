/* src/agent/helper.c: bcd helper's dispatch, served on one end of a socketpair in a
 * thread while the test speaks the wire on the other, against a real swtpm
 * (scripts/swtpm.sh): the AK and node keys it gives are the TPM's own, signing and
 * certifying check under them, at most 8 keys are kept (least recently used dropped,
 * derived again on use), and unknown verbs, bad shapes, bad frames and a helper
 * without a TPM are refused, each ending the session. Peer credentials need two uids:
 * tests/e2e/bcd_tpm_renew_test.sh. Skipped (77) without swtpm. */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_swtpm.h"

#include <openssl/evp.h>

#include "agent/helper.h"
#include "agent/tpm.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "tpm/tpm.h"

struct server {
	struct bcd_helper *h;
	int fd;
	int rc;
	pthread_t th;
};

static void *serve(void *arg)
{
	struct server *s = arg;

	s->rc = bcd_helper_serve(s->h, s->fd);
	close(s->fd);
	return NULL;
}

/* A session: the helper serves one end; *client is the other. */
static void begin(struct server *s, struct bcd_helper *h, int *client)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	s->h = h;
	s->fd = sv[0];
	s->rc = 1;
	*client = sv[1];
	assert_int_equal(pthread_create(&s->th, NULL, serve, s), 0);
}

static int end(struct server *s, int client)
{
	close(client);
	pthread_join(s->th, NULL);
	return s->rc;
}

/* A raw request (verb length byte and all), and the answer's status and body. */
static int raw(int fd, const uint8_t *req, size_t len, uint8_t *ans, size_t *alen)
{
	int rc;

	if ((rc = bcd_helper_write(fd, req, len)) != 0)
		return rc;
	return bcd_helper_read(fd, ans, alen);
}

static struct bcd_helper *helper(const char *t)
{
	struct bcd_helper *h = NULL;

	assert_int_equal(bcd_helper_new(t, &h), 0);
	return h;
}

static void unique_of(uint8_t u[32], uint8_t n)
{
	memset(u, 0, 32);
	u[0] = 0xb0;
	u[31] = n;
}

/* ---- refusals ---- */

/* Each request is refused with line, and the session ends (the next read sees EOF). */
static void refused(struct bcd_helper *h, const uint8_t *req, size_t len, const char *line)
{
	uint8_t buf[BCD_HELPER_FRAME_MAX];
	struct server s;
	size_t n = 0;
	int c;

	begin(&s, h, &c);
	assert_int_equal(raw(c, req, len, buf, &n), 0);
	assert_true(n >= 1);
	assert_int_equal(buf[0], BCD_HELPER_REFUSED);
	assert_true(n - 1 >= strlen(line));
	assert_memory_equal(buf + 1, line, strlen(line));
	assert_int_equal(bcd_helper_read(c, buf, &n), BC_ERR_NOT_FOUND);
	assert_int_equal(end(&s, c), BC_ERR_DENIED);
}

static size_t req(uint8_t *out, const char *verb, const uint8_t *body, size_t len)
{
	out[0] = (uint8_t)strlen(verb);
	memcpy(out + 1, verb, strlen(verb));
	if (len > 0)
		memcpy(out + 1 + strlen(verb), body, len);
	return 1 + strlen(verb) + len;
}

static void test_unknown_verbs(void **state)
{
	struct bcd_helper *h = helper(tcti);
	uint8_t r[128];
	size_t n;

	(void)state;
	n = req(r, "tpm.clear", NULL, 0);
	refused(h, r, n, "unknown verb");
	n = req(r, "tpm.AK", NULL, 0);
	refused(h, r, n, "unknown verb");
	n = req(r, "tpm.ak2", NULL, 0);
	refused(h, r, n, "unknown verb");
	r[0] = 0; /* an empty verb */
	refused(h, r, 1, "unknown verb");
	r[0] = 17; /* longer than any verb */
	memset(r + 1, 'a', 17);
	refused(h, r, 18, "unknown verb");
	r[0] = 6; /* a verb cut short by the frame */
	memcpy(r + 1, "tpm", 3);
	refused(h, r, 4, "unknown verb");
	assert_int_equal(bcd_helper_loaded(h), 0);
	bcd_helper_free(h);
}

static void test_bad_shapes(void **state)
{
	struct bcd_helper *h = helper(tcti);
	uint8_t r[256], b[200];
	size_t n;

	(void)state;
	memset(b, 7, sizeof(b));
	n = req(r, "tpm.ak", b, 1); /* a body where none goes */
	refused(h, r, n, "tpm.ak: a request out of shape");
	n = req(r, "tpm.nodekey", b, 31);
	refused(h, r, n, "tpm.nodekey: a request out of shape");
	n = req(r, "tpm.nodekey", b, 33);
	refused(h, r, n, "tpm.nodekey: a request out of shape");
	b[32] = 33; /* a digest of 33 bytes */
	n = req(r, "tpm.sign", b, 33 + 33);
	refused(h, r, n, "tpm.sign: a request out of shape");
	b[32] = 32; /* says 32, brings 31 */
	n = req(r, "tpm.sign", b, 33 + 31);
	refused(h, r, n, "tpm.sign: a request out of shape");
	n = req(r, "tpm.sign", b, 33 + 33); /* a trailing byte */
	refused(h, r, n, "tpm.sign: a request out of shape");
	b[32] = 65; /* qualifying data over 64 bytes */
	n = req(r, "tpm.certify", b, 33 + 65);
	refused(h, r, n, "tpm.certify: a request out of shape");
	n = req(r, "tpm.certify", b, 20);
	refused(h, r, n, "tpm.certify: a request out of shape");
	bcd_helper_free(h);
}

static void test_bad_frames(void **state)
{
	struct bcd_helper *h = helper(tcti);
	uint8_t zero[4] = {0, 0, 0, 0}, big[4] = {0, 0, 0x10, 0x01}, buf[BCD_HELPER_FRAME_MAX];
	struct server s;
	size_t n;
	int c;

	(void)state;
	begin(&s, h, &c);
	assert_int_equal(write(c, zero, 4), 4);
	assert_int_equal(bcd_helper_read(c, buf, &n), 0);
	assert_int_equal(buf[0], BCD_HELPER_REFUSED);
	end(&s, c);
	begin(&s, h, &c);
	assert_int_equal(write(c, big, 4), 4);
	assert_int_equal(bcd_helper_read(c, buf, &n), 0);
	assert_int_equal(buf[0], BCD_HELPER_REFUSED);
	end(&s, c);
	/* a frame cut short: no answer, the session ends */
	begin(&s, h, &c);
	assert_int_equal(write(c, "\0\0\0\x09tpm", 7), 7);
	shutdown(c, SHUT_WR);
	assert_int_not_equal(bcd_helper_read(c, buf, &n), 0);
	assert_int_not_equal(end(&s, c), 0);
	bcd_helper_free(h);
}

static void test_no_tpm(void **state)
{
	struct bcd_helper *h = helper("swtpm:host=127.0.0.1,port=1");
	uint8_t r[32];
	size_t n = req(r, "tpm.ak", NULL, 0);

	(void)state;
	refused(h, r, n, "the TPM is unavailable");
	bcd_helper_free(h);
}

/* A peer sends a frame's header and then its body a byte at a time: the session ends
 * at its deadline with a refusal, long before the body could be whole. The bytes sent
 * decide, not a clock: 4000 of them, one every 2 ms, against a deadline of 300 ms. */
static void test_trickle(void **state)
{
	struct bcd_helper *h = helper("swtpm:host=127.0.0.1,port=1");
	uint8_t hdr[4] = {0, 0, 0x0f, 0xa0}, buf[BCD_HELPER_FRAME_MAX];
	const char *line = "no complete request within 300 ms";
	struct server s;
	size_t sent = 0, n = 0;
	int c;

	(void)state;
	assert_int_equal(bcd_helper_set_idle(h, 0), BC_ERR_INVALID);
	assert_int_equal(bcd_helper_set_idle(h, BCD_HELPER_TIMEOUT_S * 1000 + 1), BC_ERR_INVALID);
	assert_int_equal(bcd_helper_set_idle(h, 300), 0);
	begin(&s, h, &c);
	assert_int_equal(write(c, hdr, 4), 4);
	while (sent < 4000 && send(c, "x", 1, MSG_NOSIGNAL) == 1) {
		sent++;
		usleep(2000);
	}
	assert_true(sent < 4000);
	assert_int_equal(bcd_helper_read(c, buf, &n), 0);
	assert_int_equal(buf[0], BCD_HELPER_REFUSED);
	assert_true(n - 1 >= strlen(line));
	assert_memory_equal(buf + 1, line, strlen(line));
	assert_int_equal(end(&s, c), BC_ERR_EXPIRED);
	bcd_helper_free(h);
}

/* A step without the fd readable, before the deadline, neither reads nor ends the
 * session; a peer that closes between requests ends it cleanly. */
static void test_step_waits(void **state)
{
	struct bcd_helper *h = helper("swtpm:host=127.0.0.1,port=1");
	struct bcd_helper_session *ss = NULL;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(bcd_helper_session_new(h, sv[0], &ss), 0);
	assert_int_equal(bcd_helper_session_fd(ss), sv[0]);
	assert_true(bcd_helper_session_wait(ss) > 0);
	assert_int_equal(bcd_helper_session_step(h, ss, 0), 0);
	close(sv[1]);
	assert_int_equal(bcd_helper_session_step(h, ss, 1), BCD_HELPER_ENDED);
	bcd_helper_session_free(h, ss);
	close(sv[0]);
	bcd_helper_free(h);
}

/* ---- keys ---- */

static void call(int c, const char *verb, const uint8_t *body, size_t len, uint8_t *buf,
                 const uint8_t **ans, size_t *alen)
{
	char err[512] = "";
	bc_reader r;

	assert_int_equal(bcd_helper_call(c, verb, body, len, buf, &r, err, sizeof(err)), 0);
	*ans = r.p;
	*alen = r.len;
}

static EVP_PKEY *public_key(const uint8_t *p, size_t n, int ak)
{
	TPMT_PUBLIC t;
	EVP_PKEY *k = NULL;

	assert_int_equal(bc_tpm_public_parse(p, n, &t), 0);
	assert_int_equal(ak ? bc_tpm_check_ak(&t) : bc_tpm_check_node_key(&t), 0);
	assert_int_equal(bc_tpm_public_key(&t, &k), 0);
	return k;
}

static void test_keys(void **state)
{
	struct bcd_helper *h = helper(tcti);
	uint8_t buf[BCD_HELPER_FRAME_MAX], body[32 + 1 + 64], ak_pub[BCD_TPM_PUBLIC_MAX];
	uint8_t key_pub[BCD_TPM_PUBLIC_MAX], digest[32], point[65], spki_h[32], *spki = NULL;
	size_t alen, ak_len, key_len, spki_len = 0, plen;
	const uint8_t *ans, *p, *att, *sig;
	size_t att_len, sig_len;
	enum bc_tpm_certify_result res = BC_TPM_CERTIFY_MALFORMED;
	EVP_PKEY *ak, *key;
	struct bcd_tpm *t = NULL;
	struct bcd_tpm_ak direct;
	struct bcd_tpm_nodekey *nk = NULL;
	struct server s;
	bc_reader r;
	int c;

	(void)state;
	begin(&s, h, &c);
	call(c, "tpm.ak", NULL, 0, buf, &ans, &alen);
	bc_reader_init(&r, ans, alen);
	assert_int_equal(bc_reader_b16(&r, &p, &ak_len), 0);
	assert_int_equal(bc_reader_done(&r), 0);
	memcpy(ak_pub, p, ak_len);
	ak = public_key(ak_pub, ak_len, 1);
	unique_of(body, 1);
	call(c, "tpm.nodekey", body, 32, buf, &ans, &alen);
	bc_reader_init(&r, ans, alen);
	assert_int_equal(bc_reader_b16(&r, &p, &key_len), 0);
	memcpy(key_pub, p, key_len);
	key = public_key(key_pub, key_len, 0);
	/* a signature, checked under the key's public half */
	assert_int_equal(bc_sha256((const uint8_t *)"payload", 7, digest), 0);
	body[32] = 32;
	memcpy(body + 33, digest, 32);
	call(c, "tpm.sign", body, 65, buf, &ans, &alen);
	assert_int_equal(alen, 64);
	assert_int_equal(bc_p256_public_point(key, point), 0);
	assert_int_equal(bc_es256_verify(point, BC_ES256_DIGEST, digest, 32, ans, alen), 0);
	/* the AK's certification of that key over the digest, as the server checks it */
	call(c, "tpm.certify", body, 65, buf, &ans, &alen);
	bc_reader_init(&r, ans, alen);
	assert_int_equal(bc_reader_b16(&r, &att, &att_len), 0);
	assert_int_equal(bc_reader_b16(&r, &sig, &sig_len), 0);
	assert_int_equal(bc_reader_done(&r), 0);
	assert_int_equal(bc_key_spki(key, &spki, &spki_len), 0);
	assert_int_equal(bc_sha256(spki, spki_len, spki_h), 0);
	assert_int_equal(bc_tpm_check_certify(ak, key_pub, key_len, att, att_len, sig, sig_len,
	                                      digest, spki_h, &res),
	                 0);
	assert_int_equal(res, BC_TPM_CERTIFY_OK);
	assert_int_equal(end(&s, c), 0);
	/* the same AK and key as the TPM gives bcd itself (the helper's session is closed) */
	assert_int_equal(bcd_tpm_open(tcti, &t, NULL, 0), 0);
	assert_int_equal(bcd_tpm_ak(t, &direct), 0);
	assert_int_equal(direct.pub_len, ak_len);
	assert_memory_equal(direct.pub, ak_pub, ak_len);
	assert_int_equal(bcd_tpm_nodekey_load(t, body, &nk), 0);
	p = bcd_tpm_nodekey_public(nk, &plen);
	assert_int_equal(plen, key_len);
	assert_memory_equal(p, key_pub, key_len);
	bcd_tpm_nodekey_free(nk);
	bcd_tpm_close(t);
	free(spki);
	EVP_PKEY_free(ak);
	EVP_PKEY_free(key);
	bcd_helper_free(h);
}

static void test_lru(void **state)
{
	struct bcd_helper *h = helper(tcti);
	uint8_t buf[BCD_HELPER_FRAME_MAX], u[32], first[BCD_TPM_PUBLIC_MAX], body[65];
	const uint8_t *ans;
	size_t alen, first_len = 0;
	struct server s;
	int c;

	(void)state;
	begin(&s, h, &c);
	for (uint8_t i = 1; i <= BCD_HELPER_MAX_KEYS + 1; i++) {
		unique_of(u, i);
		call(c, "tpm.nodekey", u, 32, buf, &ans, &alen);
		if (i == 1) {
			memcpy(first, ans, alen);
			first_len = alen;
		}
		assert_true(bcd_helper_loaded(h) <= BCD_HELPER_MAX_KEYS);
	}
	assert_int_equal(bcd_helper_loaded(h), BCD_HELPER_MAX_KEYS);
	unique_of(u, 1);
	assert_false(bcd_helper_has(h, u)); /* the least recently used went first */
	unique_of(u, 2);
	assert_true(bcd_helper_has(h, u));
	/* a dropped key is derived again on use: the same key, and back in the table */
	unique_of(body, 1);
	body[32] = 32;
	memset(body + 33, 0x5a, 32);
	call(c, "tpm.sign", body, 65, buf, &ans, &alen);
	assert_int_equal(alen, 64);
	assert_true(bcd_helper_has(h, body));
	call(c, "tpm.nodekey", body, 32, buf, &ans, &alen);
	assert_int_equal(alen, first_len);
	assert_memory_equal(ans, first, first_len);
	assert_int_equal(bcd_helper_loaded(h), BCD_HELPER_MAX_KEYS);
	unique_of(u, 2); /* now the least recently used: dropped for key 1 */
	assert_false(bcd_helper_has(h, u));
	assert_int_equal(end(&s, c), 0);
	bcd_helper_free(h);
}

/* The table never answers for the TPM: after a TPM2_Clear (a new owner seed, between
 * two sessions) tpm.nodekey gives the key the TPM derives now, so bcd node sees the
 * mismatch (and the spec's "was the TPM cleared?") at its load, not at a signature. */
static void test_nodekey_after_clear(void **state)
{
	struct bcd_helper *h = helper(tcti);
	uint8_t buf[BCD_HELPER_FRAME_MAX], u[32], before[BCD_TPM_PUBLIC_MAX];
	const uint8_t *ans;
	size_t alen, before_len;
	struct server s;
	int c;

	(void)state;
	unique_of(u, 0x77);
	begin(&s, h, &c);
	call(c, "tpm.nodekey", u, 32, buf, &ans, &alen);
	memcpy(before, ans, alen);
	before_len = alen;
	assert_int_equal(end(&s, c), 0);
	assert_true(bcd_helper_has(h, u));
	/* the session closed the TPM: tpm2-tools may have it */
	if (sh("TSS2_LOG=all+none TPM2TOOLS_TCTI='%s' tpm2_clear >/dev/null 2>&1", tcti) != 0) {
		bcd_helper_free(h);
		skip();
	}
	begin(&s, h, &c);
	call(c, "tpm.nodekey", u, 32, buf, &ans, &alen);
	assert_false(alen == before_len && memcmp(ans, before, alen) == 0);
	assert_int_equal(end(&s, c), 0);
	bcd_helper_free(h);
}

/* ---- swtpm ---- */

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unknown_verbs),
	    cmocka_unit_test(test_bad_shapes),
	    cmocka_unit_test(test_bad_frames),
	    cmocka_unit_test(test_no_tpm),
	    cmocka_unit_test(test_trickle),
	    cmocka_unit_test(test_step_waits),
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_lru),
	    /* last: it clears the TPM */
	    cmocka_unit_test(test_nodekey_after_clear),
	};

	return agent_swtpm_run("agent_helper_test", tests, sizeof(tests) / sizeof(tests[0]));
}
