/* bcd, the agent: what its files share. One invocation runs one command from the
 * table in main.c; every command gets the parsed options and the loaded config.
 *
 * Trust: the config file, the data directory and every byte from the server are
 * untrusted input. Files are read with a bound and parsed strictly; every write to the
 * data directory goes through a temporary file in the same directory (fsync, rename,
 * fsync the directory), so a crash leaves the old file or the whole new one.
 *
 * Messages: a function that fails writes one line into a struct bcd_msg (what is
 * wrong, naming the file or field, and what to do); main() prints it and exits. */
#ifndef BCD_AGENT_H
#define BCD_AGENT_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/nodekey.h"
#include "bc/client.h"
#include "bc/err.h"
#include "bc/wire.h"

#define BCD_NAME "bcd"
/* The release, BC_VERSION (CMakeLists.txt's project version), is the one home of the
 * version: `bcd --version` prints it and a join claims it as agentVersion "bcd/0.6.0". */
#define BCD_AGENT_VERSION  BCD_NAME "/" BC_VERSION
#define BCD_DEFAULT_CONFIG "/etc/bcd/config.toml"
#define BCD_EXIT_USAGE     2

/* data directory file names */
#define BCD_IDENTITY         "identity.json"
#define BCD_NODE_KEY         "node.key"
#define BCD_NODE_KEY_NEXT    "node.key.next"
#define BCD_NODE_CRT         "node.crt"
#define BCD_NODE_CRT_NEXT    "node.crt.next"
#define BCD_CA               "ca.pem"
#define BCD_JOURNAL          "journal.db"
#define BCD_PENDING          "pending.json"
#define BCD_NODE_KEY_PENDING "node.key.pending"
#define BCD_PINS             "pins.json"

struct bcd_msg {
	char text[1024];
};
void bcd_say(struct bcd_msg *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- config (config.c) ---- */
struct bcd_config {
	char *path; /* as given */
	char *dir;  /* its directory: relative paths in it are from here */
	char *server;
	char *join_signing_key_id;
	char *join_signing_key;    /* base64 SPKI DER */
	char *join_encryption_key; /* base64 SPKI DER */
	char *trust_domain;
	char *ca_bundle; /* resolved path */
	char *data_dir;
	char *fakehw_claims; /* resolved path, or NULL */
	char *fakehw_tpm;    /* reserved for the tpm issue; NULL or "" when unset */
	int has_fakehw;
	char *helper_socket; /* [helper] socket; set (default below) when has_helper */
	char *helper_user;   /* [helper] user, the only peer bcd helper serves */
	int has_helper;
	/* [cloud]: the cloud-iid producer (cloud.c); each NULL when unset */
	char *cloud_provider;      /* gcp, aws or oidc (--provider overrides) */
	char *cloud_audience;      /* gcp, oidc: the server's audience (bound to the CSR) */
	char *cloud_metadata_url;  /* tests: the metadata endpoint's base, loopback only */
	char *cloud_token_file;    /* oidc: a file holding the identity token (resolved) */
	char *cloud_token_command; /* oidc: prints the token for the audience in $BCD_AUDIENCE */
	int has_cloud;
	/* [site]: bcd site's boot server (site.c) */
	char *site_id;
	char *site_listen; /* host:port, loopback unless behind the site's own network */
	char *site_kernel; /* URLs iPXE fetches */
	char *site_initrd;
	char *site_cmdline;   /* more kernel parameters */
	char *site_unknown;   /* "true": script unknown MACs too (the server decides) */
	char *site_lease_ttl; /* seconds, as text; default 30 */
	/* how much of it a client may hold; 0 when unset (site.c has the defaults) */
	int site_max_conns;      /* open connections in all */
	int site_max_per_client; /* open connections from one address */
	int64_t site_head_ms;    /* from accept to the end of the request head */
	int64_t site_request_ms; /* from accept to the answer written */
	int has_site;
};
#define BCD_HELPER_SOCKET     "/run/bcd/helper.sock"
#define BCD_HELPER_USER       "bcd"
#define BCD_HELPER_SOCKET_MAX 108 /* sizeof(sockaddr_un.sun_path) */
/* Loads and checks the config: unknown keys or tables and missing or empty fields
 * are errors naming them. cfg is zeroed first; free with bcd_config_free. */
BC_WUR int bcd_config_load(const char *path, struct bcd_config *cfg, struct bcd_msg *m);
void bcd_config_free(struct bcd_config *cfg);
/* The pins (struct bc_client_pins) from the config: the keys decoded, the key id
 * checked against the signing key, the CA bundle read from its file. The caller
 * frees with bc_client_pins_free. */
BC_WUR int bcd_pins_from_config(const struct bcd_config *cfg, struct bc_client_pins *pins,
                                struct bcd_msg *m);

/* ---- join key rotation (pins.c) ---- */
/* The data directory's pins.json over pins (from the config): its key set replaces the
 * config's unless the config was written since (its join_signing_key_id is not the
 * file's base). 0 also when there is no file; BC_ERR_CONFIG for a file that does not
 * read, with m naming it. bcd_pins_from_config calls it. */
BC_WUR int bcd_pins_load_file(const struct bcd_config *cfg, struct bc_client_pins *pins,
                              struct bcd_msg *m);
/* An answer's pins-update statement (NULL: none): opened against pins, applied, and
 * when its sequence rose, pins.json written atomically (logged "pins updated"). A
 * refused statement changes nothing and is logged with its reason (BC_PINS_R_*); the
 * caller decides whether that fails anything (a renewal it came with stands). */
BC_WUR int bcd_pins_learn(const struct bcd_config *cfg, struct bc_client_pins *pins,
                          const uint8_t *stmt, size_t len, struct bcd_msg *m);
/* The statement of an answer that stands whatever it says (a join's, a re-join's, a
 * renewal's): bcd_pins_learn, its failure logged "pins not updated" and nothing else. */
void bcd_pins_learn_answer(const struct bcd_config *cfg, struct bc_client_pins *pins,
                           const struct bc_join_answer *a);

/* ---- files (files.c) ---- */
/* A regular file of at most max bytes, NUL-terminated (malloc'd; secrets: the caller
 * wipes with bc_freezero(p, len + 1)). BC_ERR_NOT_FOUND when absent. */
BC_WUR int bcd_read_file(const char *path, size_t max, char **out, size_t *len, struct bcd_msg *m);
/* dir/name into out; BC_ERR_LIMIT when it does not fit. */
BC_WUR int bcd_path(char *out, size_t outlen, const char *dir, const char *name);
/* Writes data into a new temporary file dir/.name.XXXXXX with mode, fsynced;
 * tmp[] receives its path (for bcd_commit or unlink). */
BC_WUR int bcd_write_temp(const char *dir, const char *name, const void *data, size_t len,
                          unsigned mode, char *tmp, size_t tmplen, struct bcd_msg *m);
/* rename(tmp, dir/name). The directory is not synced: call bcd_sync_dir after the
 * last rename of a group. */
BC_WUR int bcd_commit(const char *tmp, const char *dir, const char *name, struct bcd_msg *m);
BC_WUR int bcd_sync_dir(const char *dir, struct bcd_msg *m);
/* bcd_write_temp, bcd_commit and bcd_sync_dir in one. */
BC_WUR int bcd_write_atomic(const char *dir, const char *name, const void *data, size_t len,
                            unsigned mode, struct bcd_msg *m);
/* The data directory exists (made 0700 if not; its parent must exist). */
BC_WUR int bcd_ensure_dir(const char *dir, struct bcd_msg *m);
int bcd_exists(const char *dir, const char *name);
/* One bcd at a time changes the data directory (bcd node's renewals and re-joins, bcd
 * join): an exclusive flock on the directory itself, held until bcd_unlock_dir. With
 * wait, blocks until the other bcd is done (saying so on stderr); without, answers
 * BC_ERR_BUSY at once. *fd is -1 on failure. */
BC_WUR int bcd_lock_dir(const char *dir, int wait, int *fd, struct bcd_msg *m);
void bcd_unlock_dir(int fd);

/* ---- the identity in the data directory (identity.c) ---- */
struct bcd_identity {
	char node_id[64];
	char role[16];
	char trust_domain[256];
	char serial[41];
	int64_t not_before_ms; /* from the leaf certificate */
	int64_t not_after_ms;
	char joined_at[32];    /* RFC 3339, kept across renewals */
	struct bcd_nodekey nk; /* the node key that matches the leaf (nodekey.h) */
	EVP_PKEY *key;         /* nk.key, borrowed: a file key, or a TPM key's public half */
	int key_in_tpm;        /* nk.in_tpm; 0: a PKCS#8 file */
	int key_from_next;     /* node.key.next matched: a renewal was cut short */
	uint8_t **chain;       /* DER, leaf first */
	size_t *chain_lens;
	size_t n_chain;
};
/* Loads the identity: identity.json is the commit point, and everything is checked
 * against it (the leaf names its node id, role and trust domain; the node key is the
 * leaf's). A node.key.next that matches the leaf while node.key does not (a renewal
 * cut short between its renames) is used (key_from_next), and nothing is written.
 * A mismatch read while node.crt was replaced (a renewal of bcd node beside the
 * reader) is read again, up to five times. BC_ERR_NOT_FOUND when there is no
 * identity.json. Free with bcd_identity_free. */
BC_WUR int bcd_identity_load(const struct bcd_config *cfg, struct bcd_identity *id,
                             struct bcd_msg *m);
/* For bcd node: a loaded identity whose key came from node.key.next gets it renamed
 * over node.key (the rest of the cut-short renewal's swap). */
BC_WUR int bcd_identity_finish_swap(const struct bcd_config *cfg, struct bcd_identity *id,
                                    struct bcd_msg *m);
void bcd_identity_free(struct bcd_identity *id);
/* After a replacement, whole or cut short: id freed and loaded again from the files, so
 * the next attempt starts from what is on disk (node.key.next may be the certificate's
 * key by then). Returns rc when it is an error (m keeps its message), else the load's;
 * id->key is NULL when the identity no longer loads. */
BC_WUR int bcd_identity_reload(const struct bcd_config *cfg, struct bcd_identity *id, int rc,
                               struct bcd_msg *m);
/* Writes a new identity from a JOINED answer: node.key, node.crt, ca.pem and
 * identity.json to temporary names first, then renamed, identity.json last.
 * joined_at NULL: now. */
BC_WUR int bcd_identity_save(const struct bcd_config *cfg, const struct bcd_nodekey *key,
                             const struct bc_join_answer *a, const char *joined_at,
                             struct bcd_msg *m);
/* Replacing an identity that is there (a renewal, an x509pop re-join), in an order
 * that leaves a loadable identity after a crash at any point (save.c says which).
 * bcd_next_key: a new key (in the TPM when node keys may use it, bcd_nodekey_new) into
 * node.key.next (0600) before the request that certifies it (next: the caller frees
 * with bcd_nodekey_free); a key still read from node.key.next is moved over
 * node.key first. bcd_next_key_drop: node.key.next removed when the request failed.
 * bcd_identity_replace: the JOINED answer for that key into place, identity.json
 * last, joined_at kept. */
BC_WUR int bcd_next_key(const struct bcd_config *cfg, struct bcd_identity *id,
                        struct bcd_nodekey *next, struct bcd_msg *m);
/* bcd_next_key for a certificate that names an AK: the key made in the TPM and certified
 * by that AK (bcd_nodekey_new_certified: *csr and kc are the caller's to free), never a
 * file key; m has the spec's renewal message on failure. */
BC_WUR int bcd_next_key_certified(const struct bcd_config *cfg, struct bcd_identity *id,
                                  const uint8_t ak_name[static BCD_TPM_NAME_LEN],
                                  struct bcd_nodekey *next, uint8_t **csr, size_t *csr_len,
                                  struct bcd_key_cert *kc, struct bcd_msg *m);
void bcd_next_key_drop(const struct bcd_config *cfg);
BC_WUR int bcd_identity_replace(const struct bcd_config *cfg, const struct bc_join_answer *a,
                                const char *joined_at, struct bcd_msg *m);
/* identity.json alone, from a loaded identity (after a renewal, or to repair one that
 * lags its certificate). */
BC_WUR int bcd_identity_write_json(const struct bcd_config *cfg, const char *node_id,
                                   const char *role, const char *trust_domain, const char *serial,
                                   int64_t not_after_ms, const char *joined_at, struct bcd_msg *m);
/* identity.json's text (malloc'd); joined_at NULL: now. */
BC_WUR int bcd_identity_text(const char *node_id, const char *role, const char *trust_domain,
                             const char *serial, int64_t not_after_ms, const char *joined_at,
                             char **out);
/* The chain of an answer as PEM (malloc'd, NUL-terminated). */
BC_WUR int bcd_chain_pem(uint8_t *const *ders, const size_t *lens, size_t n, char **out);
/* The node key as a PKCS#8 PEM file body; wipe with bc_freezero(p, strlen(p)). */
BC_WUR int bcd_key_pem(EVP_PKEY *key, char **out);

/* ---- a join waiting for an operator's approval (pending.c) ---- */
/* The server's default pending_ttl_seconds: a pending.json older than this is for a
 * join request that has expired. */
#define BCD_PENDING_MAX_AGE_S 86400
struct bcd_pending {
	char attestor[64];
	char role[16];
	int64_t created_ms;
	uint8_t *csr; /* DER, checked */
	size_t csr_len;
};
/* pending.json's text for a join of attestor and role at now_ms: 0 with p filled
 * (free with bcd_pending_free); BC_ERR_INVALID malformed (or made in the future),
 * BC_ERR_CONFLICT for another attestor or role, BC_ERR_EXPIRED older than
 * BCD_PENDING_MAX_AGE_S. m says which. */
BC_WUR int bcd_pending_parse(const char *text, size_t len, const char *attestor, const char *role,
                             int64_t now_ms, struct bcd_pending *p, struct bcd_msg *m);
void bcd_pending_free(struct bcd_pending *p);
/* The kept key (k, bcd_nodekey_free) and CSR (*csr malloc'd) for this attestor and
 * role: 0; BC_ERR_NOT_FOUND when there are none, or when they were ignored (said on
 * stderr, the files removed); BC_ERR_UNAVAILABLE when the key's TPM cannot be
 * reached (kept, m says so). */
BC_WUR int bcd_pending_load(const struct bcd_config *cfg, const char *attestor, const char *role,
                            struct bcd_nodekey *k, uint8_t **csr, size_t *csr_len,
                            struct bcd_msg *m);
/* node.key.pending (0600) then pending.json, each atomically. */
BC_WUR int bcd_pending_save(const struct bcd_config *cfg, const char *attestor, const char *role,
                            const struct bcd_nodekey *k, const uint8_t *csr, size_t csr_len,
                            struct bcd_msg *m);
/* Both files removed (those that exist). */
void bcd_pending_drop(const struct bcd_config *cfg);

/* ---- one join request (join.c) ---- */
struct bcd_producer;
struct bcd_join_req {
	const char *attestor;          /* the JoinRequest.attestor */
	const char *role;              /* "node" or "site" */
	const char *token;             /* NULL for an attestor whose evidence is the credential */
	struct bcd_producer *producer; /* NULL: no evidence (join-token) */
	EVP_PKEY *key;                 /* the CSR is made from it, unless csr is given */
	const uint8_t *csr;            /* NULL, or the CSR of key made already (a TPM key) */
	size_t csr_len;
	int wait_pending; /* 0: a pending answer is an error (bcd node) */
	/* NULL, or called once at the first pending answer that is waited out (bcd join
	 * keeps its key and CSR there); an error ends the join */
	int (*on_pending)(void *ctx, struct bcd_msg *m);
	void *on_pending_ctx;
};
/* The claims, a CSR for r->key, and the rounds until a JOINED answer (*a, freed with
 * bc_join_answer_free). Nothing is written. BC_ERR_DENIED when the server refused,
 * BC_ERR_UNAVAILABLE when it could not be reached. */
BC_WUR int bcd_join_request(const struct bcd_config *cfg, const struct bc_client_pins *pins,
                            const struct bcd_join_req *r, struct bc_join_answer *a,
                            struct bcd_msg *m);

/* A first join that keeps what it waits with: the key and CSR of pending.json when
 * they are for r's attestor and role (bcd_pending_load), else a new key (in the TPM
 * when node keys may use it; tpm_required: never a file key) and CSR; r->key, csr and
 * on_pending are set for the rounds and cleared after. The first pending answer saves
 * them (bcd_pending_save); a refusal (BC_ERR_DENIED) removes them, and so does success,
 * after the identity is saved (bcd_identity_save). *a as bcd_join_request's. */
BC_WUR int bcd_join_kept(const struct bcd_config *cfg, const struct bc_client_pins *pins,
                         struct bcd_join_req *r, int tpm_required, struct bc_join_answer *a,
                         struct bcd_msg *m);

/* ---- x509pop: re-joining as the same node (x509pop.c) ---- */
/* Re-joins the node of id (loaded, even with an expired certificate) with x509pop:
 * the evidence is its chain and a proof by its key, the role its certificate's
 * (node-tenant asks for node), the new key goes through node.key.next and the answer
 * replaces the identity in the renewal's order (bcd_identity_replace). On success id
 * is the new identity, loaded again. BC_ERR_DENIED when the control plane refused
 * (m says what the operator can do); id is unchanged on any failure before the
 * answer, and freed (id->key NULL) when the new identity does not load. */
BC_WUR int bcd_x509pop_rejoin(const struct bcd_config *cfg, struct bc_client_pins *pins,
                              struct bcd_identity *id, int wait_pending, struct bcd_msg *m);
#define BCD_X509POP_REFUSED_HINT                                                                   \
	"the control plane refused to re-join this node with its last certificate (expired "       \
	"more than the grace period ago, revoked, or the node was retired); join again with a "    \
	"new token: bcd join --reset --yes --token-file FILE"

/* What to do when the server no longer holds this node's certificate as current. */
#define BCD_REJOIN_HINT                                                                            \
	"join again with a new join token from the operator (better-compute tokens create): "      \
	"bcd join --reset --yes --token-file FILE"

/* What to do when an answer is not signed by a pinned join key: the server's join keys
 * were rotated and these pins retired while this agent was away (or it is not the
 * control plane the pins name). */
#define BCD_PINS_RETIRED_HINT                                                                      \
	"if the control plane's join keys were rotated while this machine was away, write the "    \
	"config again (better-compute daemon config --bcd-dir) and join again with a new token: "  \
	"bcd join --reset --yes --token-file FILE"

/* ---- hardware claims (claims.c) ---- */
/* From [fakehw] claims when set, otherwise from /sys, uname and the host name.
 * Free with bcd_claims_free. */
BC_WUR int bcd_claims_read(const struct bcd_config *cfg, struct bc_client_claims *c,
                           struct bcd_msg *m);
void bcd_claims_free(struct bc_client_claims *c);

/* ---- the server's /healthz (http.c) ---- */
/* GET url/healthz with the pinned CA; *status the HTTP status and *date_ms the
 * server's Date header (0 when it sent none). */
BC_WUR int bcd_healthz(const struct bc_client_pins *pins, long *status, int64_t *date_ms,
                       struct bcd_msg *m);

/* ---- bcd join --reset (reset.c) ---- */
/* Without yes: prints what it would move and sets *exit_status to 2. With yes: moves
 * identity.json, node.key, node.key.next, journal.db, pending.json and node.key.pending
 * (those that exist) to
 * <name>.reset-<UTC yyyymmddThhmmssZ>, never over an existing name. */
BC_WUR int bcd_reset(const struct bcd_config *cfg, int yes, struct bcd_msg *m, int *exit_status);

/* ---- the machine ---- */
/* 1 when this host has a TPM for node keys: /dev/tpmrm0, or [fakehw] tpm set. */
int bcd_host_has_tpm(const struct bcd_config *cfg);
/* Test builds only (BC_TESTING, never a release build): the host's TPM is the swtpm that
 * BCD_TEST_HOST_TPM names ("swtpm:host=127.0.0.1,port=N") instead of /dev/tpmrm0, so a
 * test reaches a host's TPM path, the install script's included, without a TPM device
 * (tests/e2e/install_script_tpm_test.sh). NULL when unset, and always in a release build. */
#define BCD_TEST_HOST_TPM_ENV "BCD_TEST_HOST_TPM"
const char *bcd_test_host_tpm(void);

/* ---- commands ---- */
struct bcd_cmd;
struct bcd_opts {
	const char *config;
	const char *token_file;
	const char *attestor;
	const char *provider;            /* cloud-iid: gcp, aws or oidc */
	const char *identity_token_file; /* cloud-iid oidc */
	const char *role;                /* bcd join --role: node (default) or site */
	const char *cmdline;             /* bcd ramdisk --cmdline (default /proc/cmdline) */
	const char *shell;               /* bcd completion SHELL */
	int reset;
	int yes;
	int json; /* bcd status, bcd doctor */
};
/* ---- commissioning: the untrusted text (bootparse.c) ---- */
#define BCD_CMDLINE_MAX 4096 /* /proc/cmdline is at most a page */
#define BCD_QUERY_MAX   1024

/* What bcd site put on the ramdisk's kernel command line. */
struct bcd_cmdline {
	char token[BC_WIRE_TOKEN_MAX + 1];
	uint8_t *assertion; /* the SignedDiscoveryAssertion, decoded (malloc'd) */
	size_t assertion_len;
	char server[512]; /* bc.server=, or "" */
};
/* bc.token (a token's shape), bc.assertion (base64url, no padding, at most
 * BC_WIRE_ASSERTION_MAX bytes decoded) and bc.server (an http(s) URL) from the words of
 * text; each at most once; other words are ignored. BC_ERR_NOT_FOUND when bc.token or
 * bc.assertion is missing, BC_ERR_INVALID for anything out of shape. Free (wipes) with
 * bcd_cmdline_free. */
BC_WUR int bcd_cmdline_parse(const char *text, size_t len, struct bcd_cmdline *c);
void bcd_cmdline_free(struct bcd_cmdline *c);

/* An iPXE script request's target: exactly /boot.ipxe?mac=...[&uuid=...][&ip=...]
 * (percent-decoded, each at most once; other keys ignored): the MAC canonical, the UUID
 * canonical or "", the IP an IPv4 or IPv6 address or "". BC_ERR_INVALID otherwise. */
struct bcd_boot_query {
	char mac[18];
	char uuid[37];
	char ip[46];
};
BC_WUR int bcd_boot_query_parse(const char *target, size_t len, struct bcd_boot_query *q);

/* bcd site's request head, from the bytes read so far (buf[0..len), len > 0; bytes past
 * BCD_REQUEST_MAX are not looked at): "GET <target> HTTP/1.0" or "HTTP/1.1", header lines
 * "name: value", an empty line; each line ends in LF or CRLF and holds visible ASCII,
 * spaces and tabs only. What follows the head is not read (a GET has no body).
 *   0                  the head is whole and its target is a boot query (q filled);
 *   BC_ERR_TRUNCATED   not whole yet: read more;
 *   BC_ERR_INVALID     out of shape (answer 400), decided as soon as a byte shows it:
 *                      another method or version, a request line of
 *                      BCD_REQUEST_LINE_MAX bytes or more, a control byte, a header
 *                      line without a name;
 *   BC_ERR_LIMIT       BCD_REQUEST_MAX bytes and the head has not ended (answer 400);
 *   BC_ERR_NOT_FOUND   a whole head whose target bcd_boot_query_parse refuses (404).
 * A result other than BC_ERR_TRUNCATED stays the same whatever bytes follow, so the
 * caller may decide on the bytes it has. q is zeroed unless the result is 0. */
#define BCD_REQUEST_MAX      8192
#define BCD_REQUEST_LINE_MAX (BCD_QUERY_MAX + 16) /* "GET " target " HTTP/1.1" */
BC_WUR int bcd_site_request_parse(const char *buf, size_t len, struct bcd_boot_query *q);

int bcd_cmd_site(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
int bcd_cmd_ramdisk(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
int bcd_cmd_join(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
int bcd_cmd_node(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
int bcd_cmd_status(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
int bcd_cmd_doctor(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);
int bcd_cmd_helper(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status);

#endif
