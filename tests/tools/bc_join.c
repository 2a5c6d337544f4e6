/* bc-join: the test client. Joins this machine with a token before bcd exists (the
 * tests and the README's tour), through the same client code bcd uses.
 *
 *   bc-join --pins FILE [--token-file FILE] [--attestor ID] [--role node|site]
 *           [--out DIR] [--product-uuid U] [--serial S] [--mac M]... [--hostname H]
 *
 * The token comes from --token-file or BC_JOIN_TOKEN, never from the command line
 * (other users can read a process's arguments). On success writes DIR/node.key
 * (PKCS#8 PEM, 0600) and DIR/node.crt (the chain, PEM), prints "joined as <node id>"
 * and exits 0; otherwise prints one line "bc-join: <what>" and exits 1 (2 for usage). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bc/buf.h"
#include "bc/canon.h"
#include "bc/client.h"
#include "bc/crypto.h"
#include "bc/files.h"
#include "bc/pki.h"
#include "bc/wire.h"

#define AGENT_VERSION   "bc-join/1"
#define MAX_PINS_FILE   (256 * 1024)
#define MAX_TOKEN_FILE  1024
#define MAX_ROUNDS      10
#define DEFAULT_RETRY_S 30
#define MAX_RETRY_S     300
#define EXIT_USAGE      2

struct opts {
	const char *pins;
	const char *token_file;
	const char *attestor;
	const char *role;
	const char *out_dir;
	char *macs[BC_WIRE_MACS_MAX];
	size_t n_macs;
	const char *product_uuid;
	const char *serial;
	const char *hostname;
	int help;
};

struct msg {
	char text[512];
};

static void say(struct msg *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct msg *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->text, sizeof(m->text), fmt, ap);
	va_end(ap);
}

static const char usage_text[] =
    "usage: bc-join --pins FILE [--token-file FILE] [--attestor ID] [--role node|site]\n"
    "               [--out DIR] [--product-uuid U] [--serial S] [--mac M]... [--hostname H]\n"
    "The token is read from --token-file or the environment variable BC_JOIN_TOKEN.\n";

/* xx:xx:xx:xx:xx:xx in either case, made canonical in place as the claims require. */
static int mac_ok(char *s)
{
	char c[BC_MAC_LEN + 1];

	if (bc_mac_canon(s, c) != 0)
		return 0;
	memcpy(s, c, sizeof(c));
	return 1;
}

/* 8-4-4-4-12 hex digits in either case, made canonical in place. */
static int uuid_ok(char *s)
{
	char c[BC_UUID_LEN + 1];

	if (bc_uuid_canon(s, c) != 0)
		return 0;
	memcpy(s, c, sizeof(c));
	return 1;
}

/* getopt_long takes any unambiguous prefix of a long option ("--token" for
 * "--token-file"); we want the names spelled out, so a mistyped option never reads
 * as another one. The option word is the one before optind, or the one before that
 * when its value was a separate word. */
static const char *option_word(char **argv, const struct option *lo)
{
	if (lo->has_arg == required_argument && optarg == argv[optind - 1])
		return argv[optind - 2];
	return argv[optind - 1];
}

static int spelled_out(const char *word, const struct option *lo)
{
	size_t n = strlen(lo->name);

	return strncmp(word, "--", 2) == 0 && strncmp(word + 2, lo->name, n) == 0 &&
	       (word[2 + n] == '\0' || word[2 + n] == '=');
}

static const struct option longopts[] = {{"pins", required_argument, NULL, 'p'},
                                         {"token-file", required_argument, NULL, 't'},
                                         {"attestor", required_argument, NULL, 'a'},
                                         {"role", required_argument, NULL, 'r'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"product-uuid", required_argument, NULL, 'u'},
                                         {"serial", required_argument, NULL, 's'},
                                         {"mac", required_argument, NULL, 'm'},
                                         {"hostname", required_argument, NULL, 'H'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};

/* One option getopt_long returned, its value in optarg. */
static int take_option(int c, char **argv, struct opts *o, struct msg *m)
{
	switch (c) {
	case 'p': o->pins = optarg; return 0;
	case 't': o->token_file = optarg; return 0;
	case 'a': o->attestor = optarg; return 0;
	case 'r': o->role = optarg; return 0;
	case 'o': o->out_dir = optarg; return 0;
	case 's': o->serial = optarg; return 0;
	case 'H': o->hostname = optarg; return 0;
	case 'h': o->help = 1; return 0;
	case 'u':
		if (!uuid_ok(optarg)) {
			say(m, "--product-uuid: expected a UUID (8-4-4-4-12 hex digits)");
			return BC_ERR_INVALID;
		}
		o->product_uuid = optarg;
		return 0;
	case 'm':
		if (o->n_macs == BC_WIRE_MACS_MAX || !mac_ok(optarg)) {
			say(m, "--mac: expected xx:xx:xx:xx:xx:xx, at most %d times",
			    BC_WIRE_MACS_MAX);
			return BC_ERR_INVALID;
		}
		o->macs[o->n_macs++] = optarg;
		return 0;
	case ':': say(m, "%s needs a value", argv[optind - 1]); return BC_ERR_INVALID;
	default:
		/* only up to '=': the value might be a token */
		say(m, "unknown option %.*s", (int)strcspn(argv[optind - 1], "="),
		    argv[optind - 1]);
		return BC_ERR_INVALID;
	}
}

static int parse_args(int argc, char **argv, struct opts *o, struct msg *m)
{
	const char *word;
	int c, li = -1, rc;

	memset(o, 0, sizeof(*o));
	o->role = BC_ROLE_NODE;
	o->out_dir = ".";
	opterr = 0;
	/* the leading ':' makes getopt_long tell a missing value (':') from an unknown option */
	while ((c = getopt_long(argc, argv, ":", longopts, &li)) != -1) {
		if (c != ':' && c != '?' &&
		    !spelled_out(word = option_word(argv, &longopts[li]), &longopts[li])) {
			say(m, "unknown option %.*s (options are spelled out in full)",
			    (int)strcspn(word, "="), word);
			return BC_ERR_INVALID;
		}
		if ((rc = take_option(c, argv, o, m)) != 0)
			return rc;
	}
	/* not echoed: a token pasted on the command line must not reach a log */
	if (optind != argc) {
		say(m, "unexpected argument: the token comes from --token-file or BC_JOIN_TOKEN");
		return BC_ERR_INVALID;
	}
	if (o->pins == NULL && !o->help) {
		say(m, "--pins FILE is required");
		return BC_ERR_INVALID;
	}
	if (strcmp(o->role, BC_ROLE_NODE) != 0 && strcmp(o->role, BC_ROLE_SITE) != 0) {
		say(m, "--role: expected node or site");
		return BC_ERR_INVALID;
	}
	return 0;
}

/* A regular file of at most max bytes, NUL-terminated; the caller wipes and frees. */
static int read_file(const char *path, size_t max, char **out, size_t *len, struct msg *m)
{
	int rc = bc_file_read(path, max, BC_FILE_TEXT, out, len);

	if (rc == BC_ERR_LIMIT)
		say(m, "%s: larger than %zu bytes", path, max);
	else if (rc == BC_ERR_INVALID && errno == EINVAL)
		say(m, "%s: not a regular file of at most %zu bytes", path, max);
	else if (rc != 0)
		say(m, "%s: %s", path, strerror(errno));
	return rc;
}

/* bct_ then [A-Za-z0-9_-], one line; one trailing newline ("\n" or "\r\n") is allowed. */
static int check_token(char *t, size_t len, const char *where, struct msg *m)
{
	if (len > 0 && t[len - 1] == '\n') {
		t[--len] = '\0';
		if (len > 0 && t[len - 1] == '\r')
			t[--len] = '\0';
	}
	if (len <= strlen(BC_WIRE_TOKEN_PREFIX) || len > BC_WIRE_TOKEN_MAX || strlen(t) != len ||
	    strncmp(t, BC_WIRE_TOKEN_PREFIX, strlen(BC_WIRE_TOKEN_PREFIX)) != 0) {
		say(m, "%s: expected one line bct_...", where);
		return BC_ERR_INVALID;
	}
	for (size_t i = strlen(BC_WIRE_TOKEN_PREFIX); i < len; i++) {
		if (!isalnum((unsigned char)t[i]) && t[i] != '_' && t[i] != '-') {
			say(m, "%s: expected one line bct_...", where);
			return BC_ERR_INVALID;
		}
	}
	return 0;
}

/* *tok is malloc'd; the caller wipes it (bc_freezero(tok, strlen(tok))). */
static int read_token(const struct opts *o, char **tok, struct msg *m)
{
	const char *env = getenv("BC_JOIN_TOKEN");
	size_t len = 0;
	int rc;

	*tok = NULL;
	if (o->token_file != NULL) {
		if ((rc = read_file(o->token_file, MAX_TOKEN_FILE, tok, &len, m)) != 0)
			return rc;
	} else if (env != NULL) {
		len = strnlen(env, MAX_TOKEN_FILE + 1);
		if ((*tok = strndup(env, MAX_TOKEN_FILE)) == NULL) {
			say(m, "out of memory");
			return BC_ERR_NOMEM;
		}
	} else {
		say(m, "no token: use --token-file FILE or BC_JOIN_TOKEN");
		return BC_ERR_NOT_FOUND;
	}
	if ((rc = check_token(*tok, len, o->token_file ? "token file" : "BC_JOIN_TOKEN", m)) != 0) {
		bc_freezero(*tok, len);
		*tok = NULL;
	}
	return rc;
}

static int read_pins(const char *path, struct bc_client_pins *pins, struct msg *m)
{
	char *text = NULL, err[256];
	size_t len = 0;
	int rc;

	if ((rc = read_file(path, MAX_PINS_FILE, &text, &len, m)) != 0)
		return rc;
	if ((rc = bc_client_pins_from_json(text, len, pins, err, sizeof(err))) != 0)
		say(m, "%s: %s", path, err);
	free(text);
	return rc;
}

static void wait_seconds(uint32_t s)
{
	struct timespec ts = {.tv_sec = s, .tv_nsec = 0};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Join, and wait out a pending deferral with the same CSR, up to MAX_ROUNDS rounds. */
static int join_rounds(const struct bc_client_pins *pins, const struct bc_join_params *p,
                       struct bc_join_answer *a, struct msg *m)
{
	char err[512];
	uint32_t wait;
	int rc;

	for (int round = 1;; round++) {
		if ((rc = bc_client_join(pins, p, a, err, sizeof(err))) != 0) {
			say(m, "%s", err);
			return rc;
		}
		switch (a->state) {
		case BC_JOIN_JOINED: return 0;
		case BC_JOIN_CHALLENGE:
			say(m, "the server sent a %s challenge, which bc-join cannot answer",
			    a->challenge_attestor);
			return BC_ERR_UNSUPPORTED;
		case BC_JOIN_PENDING: break;
		default: say(m, "an answer in an unknown state"); return BC_ERR_INTERNAL;
		}
		if (round == MAX_ROUNDS) {
			say(m, "still pending after %d rounds (join request %s)", MAX_ROUNDS,
			    a->request_id[0] ? a->request_id : "without an id");
			return BC_ERR_EXPIRED;
		}
		wait = a->retry_after_seconds ? a->retry_after_seconds : DEFAULT_RETRY_S;
		fprintf(stderr, "bc-join: pending (join request %s), retrying in %u s\n",
		        a->request_id[0] ? a->request_id : "without an id",
		        wait > MAX_RETRY_S ? MAX_RETRY_S : wait);
		bc_join_answer_free(a);
		wait_seconds(wait > MAX_RETRY_S ? MAX_RETRY_S : wait);
	}
}

/* Written to a temporary file in dir, synced, then renamed over the name, so a crash
 * leaves the old file or the new one and never half of either. */
static int write_atomic(const char *dir, const char *name, const char *data, mode_t mode,
                        struct msg *m)
{
	int rc = bc_file_write_atomic(dir, name, data, strlen(data), mode, 0);

	if (rc == BC_ERR_LIMIT)
		say(m, "%s: path too long", dir);
	else if (rc != 0)
		say(m, "%s/%s: %s", dir, name, strerror(errno));
	return rc;
}

static int chain_pem(const struct bc_join_answer *a, char **out)
{
	bc_buf b;
	X509 *x = NULL;
	char *pem = NULL;
	size_t len;
	int rc = 0;

	*out = NULL;
	bc_buf_init(&b, 0);
	for (size_t i = 0; i < a->n_chain && rc == 0; i++) {
		if ((rc = bc_x509_from_der(a->chain[i], a->chain_lens[i], &x)) == 0 &&
		    (rc = bc_x509_to_pem(x, &pem)) == 0)
			rc = bc_buf_put(&b, pem, strlen(pem));
		X509_free(x);
		x = NULL;
		free(pem);
		pem = NULL;
	}
	if (rc == 0 && (rc = bc_buf_put_u8(&b, 0)) == 0 &&
	    (*out = (char *)bc_buf_steal(&b, &len)) == NULL)
		rc = BC_ERR_NOMEM;
	bc_buf_free(&b);
	return rc;
}

static int write_identity(const char *dir, EVP_PKEY *key, const struct bc_join_answer *a,
                          struct msg *m)
{
	char *key_pem = NULL, *crt_pem = NULL;
	int rc;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		say(m, "%s: %s", dir, strerror(errno));
		return BC_ERR_IO;
	}
	if ((rc = bc_key_to_pem(key, &key_pem)) != 0 || (rc = chain_pem(a, &crt_pem)) != 0) {
		say(m, "cannot encode the key or the chain (%s)", bc_err_str(rc));
		goto out;
	}
	/* The key first: a node.crt beside no node.key would be useless. */
	if ((rc = write_atomic(dir, "node.key", key_pem, 0600, m)) != 0)
		goto out;
	rc = write_atomic(dir, "node.crt", crt_pem, 0644, m);
out:
	if (key_pem != NULL)
		bc_freezero(key_pem, strlen(key_pem));
	free(crt_pem);
	return rc;
}

static int run(const struct opts *o, struct msg *m, char node_id[static 64])
{
	struct bc_client_pins pins;
	struct bc_join_answer a;
	struct bc_client_claims claims;
	struct bc_join_params p;
	struct utsname u;
	EVP_PKEY *key = NULL;
	uint8_t *csr = NULL;
	size_t csr_len = 0;
	char *token = NULL, host[256] = "";
	int rc;

	memset(&pins, 0, sizeof(pins));
	memset(&a, 0, sizeof(a));
	memset(&claims, 0, sizeof(claims));
	memset(&p, 0, sizeof(p));
	if ((rc = read_pins(o->pins, &pins, m)) != 0)
		goto out;
	if ((rc = read_token(o, &token, m)) != 0)
		goto out;
	if ((rc = bc_key_generate(&key)) != 0 ||
	    (rc = bc_csr_make(key, BC_WIRE_CSR_CN, &csr, &csr_len)) != 0) {
		say(m, "cannot make the node key and CSR (%s)", bc_err_str(rc));
		goto out;
	}
	claims.macs = (char **)o->macs;
	claims.n_macs = o->n_macs;
	claims.product_uuid = (char *)o->product_uuid;
	claims.serial = (char *)o->serial;
	if (o->hostname == NULL && gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	claims.hostname = (char *)(o->hostname != NULL ? o->hostname : host);
	claims.arch = uname(&u) == 0 ? u.machine : NULL;
	p.attestor = o->attestor;
	p.role = o->role;
	p.token = token;
	p.claims = &claims;
	p.key = key;
	p.csr = csr; /* the same CSR on every round */
	p.csr_len = csr_len;
	p.agent_version = AGENT_VERSION;
	if ((rc = join_rounds(&pins, &p, &a, m)) != 0)
		goto out;
	if ((rc = write_identity(o->out_dir, key, &a, m)) != 0)
		goto out;
	memcpy(node_id, a.node_id, sizeof(a.node_id));
out:
	if (token != NULL)
		bc_freezero(token, strlen(token));
	bc_join_answer_free(&a);
	bc_client_pins_free(&pins);
	EVP_PKEY_free(key);
	free(csr);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct msg m = {""};
	char node_id[64];

	if (parse_args(argc, argv, &o, &m) != 0) {
		fprintf(stderr, "bc-join: %s\n%s", m.text, usage_text);
		return EXIT_USAGE;
	}
	if (o.help) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (run(&o, &m, node_id) != 0) {
		fprintf(stderr, "bc-join: %s\n", m.text);
		return 1;
	}
	printf("joined as %s\n", node_id);
	return 0;
}
