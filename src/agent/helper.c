/* bcd helper's wire and its request table (helper.h). Every byte from the peer is
 * untrusted: frames are bounded, each verb's body is read field by field with a
 * bc_reader and must end exactly where the verb's shape ends. */
#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/helper.h"
#include "bc/buf.h"
#include "bc/files.h"
#include "bc/log.h"

struct key_entry {
	int used;
	uint64_t stamp; /* last use; the smallest is dropped first */
	uint8_t unique[BCD_TPM_UNIQUE_LEN];
	uint8_t pub[BCD_TPM_PUBLIC_MAX];
	size_t pub_len;
};

struct bcd_helper {
	char tcti[512];
	struct bcd_tpm *t; /* open during a session */
	struct key_entry keys[BCD_HELPER_MAX_KEYS];
	uint64_t clock;
	unsigned idle_ms;
	size_t sessions; /* open; the TPM is closed when the last one ends */
};

/* ---- framing ---- */

/* A frame being read: its header, then its body into buf; got counts both. */
struct frame {
	uint8_t hdr[4];
	size_t got;
	size_t n; /* the body's length, once the header is in */
	uint8_t *buf;
};

struct bcd_helper_session {
	int fd;
	int64_t deadline; /* for the next complete frame */
	struct frame f;
	uint8_t buf[BCD_HELPER_FRAME_MAX];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds from now to deadline for poll(): 0 when it has passed. */
static int left_ms(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* One read, never past the frame's end (fd is readable): 1 when the frame is whole, 0
 * when more is to come, BC_ERR_NOT_FOUND at the end of stream before any byte,
 * BC_ERR_LIMIT for a length of 0 or over the maximum, BC_ERR_IO otherwise. */
static int frame_step(int fd, struct frame *f)
{
	uint8_t *p = f->got < 4 ? f->hdr + f->got : f->buf + (f->got - 4);
	size_t want = f->got < 4 ? 4 - f->got : 4 + f->n - f->got;
	ssize_t r = read(fd, p, want);

	if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (r == 0 && f->got == 0)
		return BC_ERR_NOT_FOUND;
	if (r <= 0)
		return BC_ERR_IO;
	f->got += (size_t)r;
	if (f->got == 4) {
		f->n = (size_t)f->hdr[0] << 24 | (size_t)f->hdr[1] << 16 | (size_t)f->hdr[2] << 8 |
		       f->hdr[3];
		if (f->n == 0 || f->n > BCD_HELPER_FRAME_MAX)
			return BC_ERR_LIMIT;
	}
	return f->got > 4 && f->got == 4 + f->n ? 1 : 0;
}

int bcd_helper_write(int fd, const void *p, size_t len)
{
	uint8_t hdr[4];
	int rc;

	if (len == 0 || len > BCD_HELPER_FRAME_MAX)
		return BC_ERR_LIMIT;
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
	if ((rc = bc_write_all(fd, hdr, 4)) != 0)
		return rc;
	return bc_write_all(fd, p, len);
}

int bcd_helper_read(int fd, uint8_t buf[static BCD_HELPER_FRAME_MAX], size_t *len)
{
	struct frame f = {.buf = buf};
	int64_t deadline = now_ms() + (int64_t)BCD_HELPER_TIMEOUT_S * 1000;
	int rc = 0;

	*len = 0;
	/* the deadline is the frame's, not each read's: a byte now and then does not
	 * extend it */
	while (rc == 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int left = left_ms(deadline), n;

		if (left == 0)
			return BC_ERR_EXPIRED;
		if ((n = poll(&p, 1, left)) < 0 && errno != EINTR)
			return BC_ERR_IO;
		if (n > 0)
			rc = frame_step(fd, &f);
	}
	if (rc < 0)
		return rc;
	*len = f.n;
	return 0;
}

/* ---- the key table ---- */

int bcd_helper_new(const char *tcti, struct bcd_helper **out)
{
	struct bcd_helper *h;

	*out = NULL;
	if (tcti == NULL || strlen(tcti) >= sizeof(h->tcti))
		return BC_ERR_INVALID;
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return BC_ERR_NOMEM;
	snprintf(h->tcti, sizeof(h->tcti), "%s", tcti);
	h->idle_ms = BCD_HELPER_TIMEOUT_S * 1000;
	*out = h;
	return 0;
}

int bcd_helper_set_idle(struct bcd_helper *h, unsigned ms)
{
	if (ms == 0 || ms > BCD_HELPER_TIMEOUT_S * 1000)
		return BC_ERR_INVALID;
	h->idle_ms = ms;
	return 0;
}

void bcd_helper_free(struct bcd_helper *h)
{
	if (h == NULL)
		return;
	bcd_tpm_close(h->t);
	OPENSSL_cleanse(h, sizeof(*h));
	free(h);
}

size_t bcd_helper_loaded(const struct bcd_helper *h)
{
	size_t n = 0;

	for (size_t i = 0; i < BCD_HELPER_MAX_KEYS; i++)
		n += h->keys[i].used ? 1 : 0;
	return n;
}

static struct key_entry *find_key(struct bcd_helper *h, const uint8_t *unique)
{
	for (size_t i = 0; i < BCD_HELPER_MAX_KEYS; i++)
		if (h->keys[i].used &&
		    CRYPTO_memcmp(h->keys[i].unique, unique, BCD_TPM_UNIQUE_LEN) == 0)
			return &h->keys[i];
	return NULL;
}

int bcd_helper_has(const struct bcd_helper *h, const uint8_t unique[static BCD_TPM_UNIQUE_LEN])
{
	return find_key((struct bcd_helper *)h, unique) != NULL;
}

/* The entry for unique: found, or a free one, or the least recently used one wiped. */
static struct key_entry *slot_for(struct bcd_helper *h, const uint8_t *unique)
{
	struct key_entry *e = find_key(h, unique), *lru = &h->keys[0];

	if (e != NULL)
		return e;
	for (size_t i = 0; i < BCD_HELPER_MAX_KEYS; i++) {
		if (!h->keys[i].used)
			return &h->keys[i];
		if (h->keys[i].stamp < lru->stamp)
			lru = &h->keys[i];
	}
	OPENSSL_cleanse(lru, sizeof(*lru));
	return lru;
}

/* Derives the key of unique (loaded: the caller frees it) and records it as used now. */
static int key_load(struct bcd_helper *h, const uint8_t *unique, struct bcd_tpm_nodekey **k)
{
	struct key_entry *e;
	const uint8_t *pub;
	size_t len;
	int rc;

	if ((rc = bcd_tpm_nodekey_load(h->t, unique, k)) != 0)
		return rc;
	pub = bcd_tpm_nodekey_public(*k, &len);
	e = slot_for(h, unique);
	e->used = 1;
	e->stamp = ++h->clock;
	memcpy(e->unique, unique, BCD_TPM_UNIQUE_LEN);
	memcpy(e->pub, pub, len);
	e->pub_len = len;
	return 0;
}

/* ---- the verbs ---- */

struct reply {
	bc_buf b;
	char why[BCD_HELPER_LINE_MAX]; /* a refusal's line */
};

static int put_b16(bc_buf *b, const uint8_t *p, size_t len)
{
	int rc;

	if (len > 0xffff)
		return BC_ERR_LIMIT;
	if ((rc = bc_buf_put_u16(b, (uint16_t)len)) != 0)
		return rc;
	return bc_buf_put(b, p, len);
}

/* unique[32] || u8 n || n bytes with allowed(n), and nothing after. */
static int read_keyed(bc_reader *r, const uint8_t **unique, const uint8_t **data, size_t *n,
                      int (*allowed)(size_t))
{
	uint8_t len = 0;

	if (bc_reader_bytes(r, BCD_TPM_UNIQUE_LEN, unique) != 0 || bc_reader_u8(r, &len) != 0 ||
	    !allowed(len) || bc_reader_bytes(r, len, data) != 0 || bc_reader_done(r) != 0)
		return BC_ERR_INVALID;
	*n = len;
	return 0;
}

static int digest_len_ok(size_t n)
{
	return n == 32 || n == 48 || n == 64;
}

static int qualifying_len_ok(size_t n)
{
	return n <= 64;
}

static int v_ak(struct bcd_helper *h, bc_reader *r, struct reply *out)
{
	struct bcd_tpm_ak ak;
	int rc;

	if (bc_reader_done(r) != 0)
		return BC_ERR_INVALID;
	if ((rc = bcd_tpm_ak(h->t, &ak)) != 0) {
		snprintf(out->why, sizeof(out->why), "the TPM's attestation key: %s",
		         bcd_tpm_error(h->t));
		return rc;
	}
	return put_b16(&out->b, ak.pub, ak.pub_len);
}

static int v_nodekey(struct bcd_helper *h, bc_reader *r, struct reply *out)
{
	struct bcd_tpm_nodekey *k = NULL;
	const uint8_t *unique, *pub;
	size_t len;
	int rc;

	if (bc_reader_bytes(r, BCD_TPM_UNIQUE_LEN, &unique) != 0 || bc_reader_done(r) != 0)
		return BC_ERR_INVALID;
	/* derived every time, never answered from the table: the TPM may have changed
	 * since (a TPM2_Clear between two sessions), and bcd node checks its key with this */
	if ((rc = key_load(h, unique, &k)) != 0) {
		snprintf(out->why, sizeof(out->why), "the node key: %s", bcd_tpm_error(h->t));
		return rc;
	}
	pub = bcd_tpm_nodekey_public(k, &len);
	rc = put_b16(&out->b, pub, len);
	bcd_tpm_nodekey_free(k);
	return rc;
}

static int v_sign(struct bcd_helper *h, bc_reader *r, struct reply *out)
{
	struct bcd_tpm_nodekey *k = NULL;
	const uint8_t *unique, *digest;
	uint8_t sig[64];
	size_t n;
	int rc;

	if (read_keyed(r, &unique, &digest, &n, digest_len_ok) != 0)
		return BC_ERR_INVALID;
	if ((rc = key_load(h, unique, &k)) != 0 ||
	    (rc = bcd_tpm_nodekey_sign(h->t, k, digest, n, sig)) != 0)
		snprintf(out->why, sizeof(out->why), "sign: %s", bcd_tpm_error(h->t));
	else
		rc = bc_buf_put(&out->b, sig, sizeof(sig));
	bcd_tpm_nodekey_free(k);
	OPENSSL_cleanse(sig, sizeof(sig));
	return rc;
}

static int v_certify(struct bcd_helper *h, bc_reader *r, struct reply *out)
{
	struct bcd_tpm_nodekey *k = NULL;
	struct bcd_tpm_attest a;
	const uint8_t *unique, *q;
	size_t n;
	int rc;

	memset(&a, 0, sizeof(a));
	if (read_keyed(r, &unique, &q, &n, qualifying_len_ok) != 0)
		return BC_ERR_INVALID;
	if ((rc = key_load(h, unique, &k)) != 0 || (rc = bcd_tpm_certify(h->t, k, q, n, &a)) != 0)
		snprintf(out->why, sizeof(out->why), "certify: %s", bcd_tpm_error(h->t));
	else if ((rc = put_b16(&out->b, a.attest, a.attest_len)) == 0)
		rc = put_b16(&out->b, a.sig, a.sig_len);
	bcd_tpm_nodekey_free(k);
	bcd_tpm_attest_free(&a);
	return rc;
}

#define V_TPM 0x1 /* opens the TPM for the session */

struct verb {
	const char *name;
	unsigned flags;
	int (*fn)(struct bcd_helper *h, bc_reader *body, struct reply *out);
};

static const struct verb verbs[] = {
    {"tpm.ak", V_TPM, v_ak},
    {"tpm.nodekey", V_TPM, v_nodekey},
    {"tpm.certify", V_TPM, v_certify},
    {"tpm.sign", V_TPM, v_sign},
};
#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

static const struct verb *find_verb(const uint8_t *name, size_t len)
{
	for (size_t i = 0; i < N_VERBS; i++)
		if (strlen(verbs[i].name) == len && memcmp(verbs[i].name, name, len) == 0)
			return &verbs[i];
	return NULL;
}

void bcd_helper_refuse(int fd, const char *why)
{
	uint8_t buf[1 + BCD_HELPER_LINE_MAX];
	size_t n = strnlen(why, BCD_HELPER_LINE_MAX);

	buf[0] = BCD_HELPER_REFUSED;
	memcpy(buf + 1, why, n);
	/* the session ends whether or not the peer reads it */
	if (bcd_helper_write(fd, buf, 1 + n) != 0)
		return;
}

/* One request: 0 with the answer sent; otherwise the refusal is sent and the session
 * ends. */
static int serve_one(struct bcd_helper *h, int fd, const uint8_t *req, size_t len)
{
	const struct verb *v = NULL;
	struct reply out;
	bc_reader r;
	uint8_t vlen = 0;
	const uint8_t *name = NULL;
	char err[512];
	int rc;

	memset(&out, 0, sizeof(out));
	bc_buf_init(&out.b, BCD_HELPER_FRAME_MAX);
	bc_reader_init(&r, req, len);
	if (bc_reader_u8(&r, &vlen) != 0 || vlen == 0 || vlen > BCD_HELPER_VERB_MAX ||
	    bc_reader_bytes(&r, vlen, &name) != 0 || (v = find_verb(name, vlen)) == NULL) {
		snprintf(out.why, sizeof(out.why), "unknown verb");
		rc = BC_ERR_DENIED;
		goto out;
	}
	if ((v->flags & V_TPM) && h->t == NULL &&
	    (rc = bcd_tpm_open(h->tcti, &h->t, err, sizeof(err))) != 0) {
		snprintf(out.why, sizeof(out.why), "the TPM is unavailable: %.250s", err);
		goto out;
	}
	if ((rc = bc_buf_put_u8(&out.b, BCD_HELPER_OK)) == 0 && (rc = v->fn(h, &r, &out)) != 0 &&
	    out.why[0] == '\0')
		snprintf(out.why, sizeof(out.why), "%s: %s", v->name,
		         rc == BC_ERR_INVALID ? "a request out of shape" : bc_err_str(rc));
	if (rc == 0)
		rc = bcd_helper_write(fd, out.b.p, out.b.len);
out:
	if (rc != 0 && out.why[0] != '\0') {
		bc_log(BC_LOG_WARN, "helper: request refused; session ended", "verb",
		       v != NULL ? v->name : "?", "error", out.why, NULL);
		bcd_helper_refuse(fd, out.why);
		rc = BC_ERR_DENIED;
	}
	bc_buf_free(&out.b);
	return rc;
}

/* ---- sessions ---- */

int bcd_helper_session_new(struct bcd_helper *h, int fd, struct bcd_helper_session **out)
{
	struct bcd_helper_session *s;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return BC_ERR_NOMEM;
	s->fd = fd;
	s->f.buf = s->buf;
	s->deadline = now_ms() + h->idle_ms;
	h->sessions++;
	*out = s;
	return 0;
}

int bcd_helper_session_fd(const struct bcd_helper_session *s)
{
	return s->fd;
}

int bcd_helper_session_wait(const struct bcd_helper_session *s)
{
	return left_ms(s->deadline);
}

int bcd_helper_session_step(struct bcd_helper *h, struct bcd_helper_session *s, int readable)
{
	char why[BCD_HELPER_LINE_MAX];
	int rc;

	if (!readable) {
		if (left_ms(s->deadline) > 0)
			return 0;
		snprintf(why, sizeof(why), "no complete request within %u ms; session closed",
		         h->idle_ms);
		bcd_helper_refuse(s->fd, why);
		return BC_ERR_EXPIRED;
	}
	if ((rc = frame_step(s->fd, &s->f)) == 0)
		return 0;
	if (rc == BC_ERR_LIMIT)
		bcd_helper_refuse(s->fd, "a frame of 0 or over 4096 bytes");
	if (rc < 0)
		return rc == BC_ERR_NOT_FOUND ? BCD_HELPER_ENDED : rc;
	rc = serve_one(h, s->fd, s->buf, s->f.n);
	OPENSSL_cleanse(s->buf, s->f.n);
	memset(&s->f, 0, sizeof(s->f));
	s->f.buf = s->buf;
	/* the next request has the whole idle time again, counted from this answer */
	s->deadline = now_ms() + h->idle_ms;
	return rc;
}

void bcd_helper_session_free(struct bcd_helper *h, struct bcd_helper_session *s)
{
	if (s == NULL)
		return;
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
	/* swtpm takes one connection at a time: bcd join may want it next */
	if (--h->sessions == 0) {
		bcd_tpm_close(h->t);
		h->t = NULL;
	}
}

int bcd_helper_serve(struct bcd_helper *h, int fd)
{
	struct bcd_helper_session *s = NULL;
	int rc;

	if ((rc = bcd_helper_session_new(h, fd, &s)) != 0)
		return rc;
	while (rc == 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = poll(&p, 1, bcd_helper_session_wait(s));

		if (n < 0 && errno != EINTR)
			rc = BC_ERR_IO;
		else
			rc = bcd_helper_session_step(h, s, n > 0);
	}
	bcd_helper_session_free(h, s);
	return rc == BCD_HELPER_ENDED ? 0 : rc;
}
