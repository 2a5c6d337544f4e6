/* Node-key operations in the TPM or through bcd helper (keyops.h), and the helper's
 * client side of the wire (helper.h). Whatever answered, the answer is checked, never
 * taken on trust: TPM structures here with the server's own checks (src/tpm); a
 * signature where it is used, under the key it must be (bc_es256_sign's signer check,
 * bcd_csr_signed's X509_REQ_verify), which covers the TPM and the helper alike. */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/helper.h"
#include "agent/keyops.h"
#include "bc/buf.h"
#include "bc/crypto.h"
#include "tpm/tpm.h"

struct bcd_keyops {
	struct bcd_tpm *t; /* the TPM itself, or */
	int fd;            /* bcd helper (-1 when not) */
	uint8_t *buf;      /* the helper's last answer, BCD_HELPER_FRAME_MAX */
};

#define say(err, errlen, ...) snprintf(err, errlen, __VA_ARGS__)

void bcd_keyops_key_free(struct bcd_keyops_key *k)
{
	if (k == NULL)
		return;
	EVP_PKEY_free(k->pkey);
	memset(k, 0, sizeof(*k));
}

/* ---- the helper's client ---- */

int bcd_helper_connect(const char *path, int *fd, char *err, size_t errlen)
{
	struct timeval tv = {.tv_sec = BCD_HELPER_TIMEOUT_S, .tv_usec = 0};
	struct sockaddr_un sa;
	int s;

	*fd = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (path == NULL || strlen(path) >= sizeof(sa.sun_path))
		return BC_ERR_CONFIG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		say(err, errlen, "bcd helper at %s: %s (is bcd-helper.service running?)", path,
		    strerror(errno));
		if (s >= 0)
			close(s);
		return BC_ERR_UNAVAILABLE;
	}
	(void)setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	*fd = s;
	return 0;
}

/* A refusal's line, printable only, for a message. */
static void refusal_text(const uint8_t *p, size_t n, char *err, size_t errlen)
{
	char line[BCD_HELPER_LINE_MAX + 1];
	size_t i;

	if (n > BCD_HELPER_LINE_MAX)
		n = BCD_HELPER_LINE_MAX;
	for (i = 0; i < n; i++)
		line[i] = p[i] >= 0x20 && p[i] <= 0x7e ? (char)p[i] : '?';
	line[i] = '\0';
	say(err, errlen, "bcd helper refused: %s", line);
}

int bcd_helper_call(int fd, const char *verb, const uint8_t *body, size_t len,
                    uint8_t buf[static BCD_HELPER_FRAME_MAX], bc_reader *ans, char *err,
                    size_t errlen)
{
	size_t vlen = strlen(verb), n = 0;
	int rc;

	bc_reader_init(ans, buf, 0);
	if (vlen == 0 || vlen > BCD_HELPER_VERB_MAX || len > BCD_HELPER_FRAME_MAX - 1 - vlen)
		return BC_ERR_INVALID;
	buf[0] = (uint8_t)vlen;
	memcpy(buf + 1, verb, vlen);
	if (len > 0)
		memcpy(buf + 1 + vlen, body, len);
	if ((rc = bcd_helper_write(fd, buf, 1 + vlen + len)) != 0 ||
	    (rc = bcd_helper_read(fd, buf, &n)) != 0) {
		say(err, errlen, "bcd helper: %s: no answer (%s)", verb, bc_err_str(rc));
		return BC_ERR_UNAVAILABLE;
	}
	if (buf[0] == BCD_HELPER_REFUSED) {
		refusal_text(buf + 1, n - 1, err, errlen);
		return BC_ERR_DENIED;
	}
	if (buf[0] != BCD_HELPER_OK) {
		say(err, errlen, "bcd helper: %s: an answer out of shape", verb);
		return BC_ERR_INVALID;
	}
	bc_reader_init(ans, buf + 1, n - 1);
	return 0;
}

/* A request about one node key: its unique and, for a verb that takes one, a short
 * field (a digest, qualifying data; it may be empty). */
struct keyed {
	const char *verb;
	const uint8_t *unique;
	int with_extra;
	const uint8_t *extra;
	size_t extra_len;
};

/* q as a body (unique, then extra with its length byte) and the helper's answer. */
static int call_keyed(struct bcd_keyops *s, const struct keyed *q, bc_reader *r, char *err,
                      size_t errlen)
{
	uint8_t body[BCD_TPM_UNIQUE_LEN + 1 + 64];
	size_t n = BCD_TPM_UNIQUE_LEN;
	int rc;

	if (q->extra_len > 64)
		return BC_ERR_INVALID;
	memcpy(body, q->unique, BCD_TPM_UNIQUE_LEN);
	if (q->with_extra) {
		body[n++] = (uint8_t)q->extra_len;
		if (q->extra_len > 0)
			memcpy(body + n, q->extra, q->extra_len);
		n += q->extra_len;
	}
	rc = bcd_helper_call(s->fd, q->verb, body, n, s->buf, r, err, errlen);
	OPENSSL_cleanse(body, sizeof(body));
	return rc;
}

/* ---- sessions ---- */

int bcd_keyops_open(const char *tcti, const char *helper, struct bcd_keyops **out, char *err,
                    size_t errlen)
{
	struct bcd_keyops *s;
	int rc;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return BC_ERR_NOMEM;
	s->fd = -1;
	if (helper != NULL && helper[0] != '\0') {
		if ((s->buf = malloc(BCD_HELPER_FRAME_MAX)) == NULL)
			rc = BC_ERR_NOMEM;
		else
			rc = bcd_helper_connect(helper, &s->fd, err, errlen);
	} else {
		rc = bcd_tpm_open(tcti, &s->t, err, errlen);
	}
	if (rc != 0) {
		bcd_keyops_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void bcd_keyops_close(struct bcd_keyops *s)
{
	if (s == NULL)
		return;
	bcd_tpm_close(s->t);
	if (s->fd >= 0)
		close(s->fd);
	if (s->buf != NULL)
		bc_freezero(s->buf, BCD_HELPER_FRAME_MAX);
	free(s);
}

/* A public area from the TPM or the helper: it parses exactly, is an AK (ak) or a
 * P-256 node key, and gives its name and key. */
static int take_public(const uint8_t *p, size_t len, int ak, uint8_t *pub, size_t *pub_len,
                       uint8_t name[static BCD_TPM_NAME_LEN], EVP_PKEY **key)
{
	uint8_t nm[BC_TPM_NAME_MAX];
	size_t nlen = 0;
	TPMT_PUBLIC t;

	*key = NULL;
	if (len == 0 || len > BCD_TPM_PUBLIC_MAX || bc_tpm_public_parse(p, len, &t) != 0 ||
	    (ak ? bc_tpm_check_ak(&t) : bc_tpm_check_node_key(&t)) != 0 || t.type != TPM2_ALG_ECC ||
	    t.parameters.eccDetail.curveID != TPM2_ECC_NIST_P256 ||
	    bc_tpm_name(&t, p, len, nm, &nlen) != 0 || nlen != BCD_TPM_NAME_LEN ||
	    bc_tpm_public_key(&t, key) != 0)
		return BC_ERR_INVALID;
	memcpy(pub, p, len);
	*pub_len = len;
	memcpy(name, nm, BCD_TPM_NAME_LEN);
	return 0;
}

int bcd_keyops_ak(struct bcd_keyops *s, struct bcd_tpm_ak *ak, EVP_PKEY **key, char *err,
                  size_t errlen)
{
	struct bcd_tpm_ak got;
	const uint8_t *p = NULL;
	size_t n = 0;
	bc_reader r;
	int rc;

	*key = NULL;
	memset(ak, 0, sizeof(*ak));
	if (s->t != NULL) {
		if ((rc = bcd_tpm_ak(s->t, &got)) != 0) {
			say(err, errlen, "%s", bcd_tpm_error(s->t));
			return rc;
		}
		p = got.pub;
		n = got.pub_len;
	} else {
		if ((rc = bcd_helper_call(s->fd, "tpm.ak", NULL, 0, s->buf, &r, err, errlen)) != 0)
			return rc;
		if (bc_reader_b16(&r, &p, &n) != 0 || bc_reader_done(&r) != 0)
			n = 0;
	}
	if (take_public(p, n, 1, ak->pub, &ak->pub_len, ak->name, key) != 0) {
		say(err, errlen, "the AK's public area is not an attestation key's");
		return BC_ERR_INVALID;
	}
	return 0;
}

int bcd_keyops_key(struct bcd_keyops *s, const uint8_t unique[static BCD_TPM_UNIQUE_LEN],
                   struct bcd_keyops_key *out, char *err, size_t errlen)
{
	struct bcd_tpm_nodekey *k = NULL;
	const uint8_t *p = NULL;
	size_t n = 0;
	bc_reader r;
	int rc;

	memset(out, 0, sizeof(*out));
	if (s->t != NULL) {
		if ((rc = bcd_tpm_nodekey_load(s->t, unique, &k)) != 0) {
			say(err, errlen, "%s", bcd_tpm_error(s->t));
			return rc;
		}
		p = bcd_tpm_nodekey_public(k, &n);
	} else {
		struct keyed q = {.verb = "tpm.nodekey", .unique = unique};

		if ((rc = call_keyed(s, &q, &r, err, errlen)) != 0)
			return rc;
		if (bc_reader_b16(&r, &p, &n) != 0 || bc_reader_done(&r) != 0)
			n = 0;
	}
	rc = take_public(p, n, 0, out->pub, &out->pub_len, out->name, &out->pkey);
	bcd_tpm_nodekey_free(k);
	if (rc != 0)
		say(err, errlen, "the node key's public area is not a P-256 node key's");
	return rc;
}

int bcd_keyops_sign(struct bcd_keyops *s, const uint8_t unique[static BCD_TPM_UNIQUE_LEN],
                    const uint8_t digest[static 32], uint8_t sig[static 64], char *err,
                    size_t errlen)
{
	struct bcd_tpm_nodekey *k = NULL;
	const uint8_t *p;
	bc_reader r;
	struct keyed sign = {.verb = "tpm.sign",
	                     .unique = unique,
	                     .with_extra = 1,
	                     .extra = digest,
	                     .extra_len = 32};
	int rc;

	memset(sig, 0, 64);
	if (s->t != NULL) {
		if ((rc = bcd_tpm_nodekey_load(s->t, unique, &k)) != 0 ||
		    (rc = bcd_tpm_nodekey_sign(s->t, k, digest, 32, sig)) != 0)
			say(err, errlen, "%s", bcd_tpm_error(s->t));
		bcd_tpm_nodekey_free(k);
	} else if ((rc = call_keyed(s, &sign, &r, err, errlen)) == 0) {
		if (bc_reader_bytes(&r, 64, &p) != 0 || bc_reader_done(&r) != 0) {
			say(err, errlen, "bcd helper: tpm.sign: an answer out of shape");
			return BC_ERR_INVALID;
		}
		memcpy(sig, p, 64);
	}
	return rc;
}

static int copy_out(const uint8_t *p, size_t n, uint8_t **out, size_t *len)
{
	if (n == 0 || n > BC_TPM_MAX_STRUCT || (*out = malloc(n)) == NULL)
		return n == 0 || n > BC_TPM_MAX_STRUCT ? BC_ERR_INVALID : BC_ERR_NOMEM;
	memcpy(*out, p, n);
	*len = n;
	return 0;
}

int bcd_keyops_certify(struct bcd_keyops *s, const uint8_t unique[static BCD_TPM_UNIQUE_LEN],
                       const uint8_t *qualifying, size_t len, struct bcd_tpm_attest *out, char *err,
                       size_t errlen)
{
	struct bcd_tpm_nodekey *k = NULL;
	const uint8_t *a = NULL, *g = NULL;
	size_t alen = 0, glen = 0;
	bc_reader r;
	struct keyed q = {.verb = "tpm.certify",
	                  .unique = unique,
	                  .with_extra = 1,
	                  .extra = qualifying,
	                  .extra_len = len};
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > 64)
		return BC_ERR_INVALID;
	if (s->t != NULL) {
		if ((rc = bcd_tpm_nodekey_load(s->t, unique, &k)) != 0 ||
		    (rc = bcd_tpm_certify(s->t, k, qualifying, len, out)) != 0)
			say(err, errlen, "%s", bcd_tpm_error(s->t));
		bcd_tpm_nodekey_free(k);
		return rc;
	}
	if ((rc = call_keyed(s, &q, &r, err, errlen)) != 0)
		return rc;
	if (bc_reader_b16(&r, &a, &alen) != 0 || bc_reader_b16(&r, &g, &glen) != 0 ||
	    bc_reader_done(&r) != 0 || copy_out(a, alen, &out->attest, &out->attest_len) != 0 ||
	    copy_out(g, glen, &out->sig, &out->sig_len) != 0) {
		bcd_tpm_attest_free(out);
		say(err, errlen, "bcd helper: tpm.certify: an answer out of shape");
		return BC_ERR_INVALID;
	}
	return 0;
}
