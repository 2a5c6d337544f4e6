/* bcd join: join this machine once. The token comes from --token-file or
 * BCD_JOIN_TOKEN (never the command line: other users can read a process's
 * arguments). One node key and one CSR serve every round: a pending answer is waited
 * out and retried with the same CSR, a challenge answered through the attestor's
 * producer (at most 3 rounds). Every answer is verified by the client before anything
 * in it is used, and nothing is written until the join succeeded. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "agent/agent.h"
#include "agent/producer.h"
#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/log.h"
#include "bc/pki.h"
#include "bc/wire.h"

#define MAX_TOKEN_FILE       1024
#define MAX_CHALLENGE_ROUNDS 3
#define MAX_PENDING_ROUNDS   120
#define DEFAULT_RETRY_S      30
#define MAX_RETRY_S          300

/* bct_ then [A-Za-z0-9_-]: one line, and at most one newline after it. */
static int check_token(char *t, size_t len, const char *where, struct bcd_msg *m)
{
	if (len > 0 && t[len - 1] == '\n') {
		t[--len] = '\0';
		if (len > 0 && t[len - 1] == '\r')
			t[--len] = '\0';
	}
	if (len <= strlen(BC_WIRE_TOKEN_PREFIX) || len > BC_WIRE_TOKEN_MAX || strlen(t) != len ||
	    strncmp(t, BC_WIRE_TOKEN_PREFIX, strlen(BC_WIRE_TOKEN_PREFIX)) != 0)
		goto bad;
	for (size_t i = strlen(BC_WIRE_TOKEN_PREFIX); i < len; i++)
		if (!isalnum((unsigned char)t[i]) && t[i] != '_' && t[i] != '-')
			goto bad;
	return 0;
bad:
	bcd_say(m,
	        "%s: expected exactly one line bct_... (the token as `better-compute tokens "
	        "create` printed it); write it again",
	        where);
	return BC_ERR_INVALID;
}

/* *tok is malloc'd; the caller wipes it. */
static int read_token(const struct bcd_opts *o, char **tok, struct bcd_msg *m)
{
	const char *env = getenv("BCD_JOIN_TOKEN");
	size_t len = 0;
	int rc;

	*tok = NULL;
	if (o->token_file != NULL) {
		if ((rc = bcd_read_file(o->token_file, MAX_TOKEN_FILE, tok, &len, m)) != 0)
			return rc;
	} else if (env != NULL && env[0] != '\0') {
		len = strnlen(env, MAX_TOKEN_FILE + 1);
		if ((*tok = strndup(env, MAX_TOKEN_FILE)) == NULL)
			return BC_ERR_NOMEM;
		/* the copy is ours: nothing else in this process needs the secret in its
		 * environment (a child we start, /proc/self/environ) */
		OPENSSL_cleanse((char *)env, strlen(env));
		unsetenv("BCD_JOIN_TOKEN");
	} else {
		bcd_say(m, "no join token: give --token-file FILE or set BCD_JOIN_TOKEN");
		return BC_ERR_NOT_FOUND;
	}
	if ((rc = check_token(*tok, len, o->token_file ? o->token_file : "BCD_JOIN_TOKEN", m)) !=
	    0) {
		bc_freezero(*tok, len + 1);
		*tok = NULL;
	}
	return rc;
}

static void wait_seconds(uint32_t s)
{
	struct timespec ts = {.tv_sec = s, .tv_nsec = 0};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The attestation of the next round: the producer's answer to a challenge. */
static int answer_challenge(struct bcd_producer *pr, struct bc_join_answer *a,
                            const uint8_t h[static 32], int *n, uint8_t **att, size_t *att_len,
                            struct bcd_msg *m)
{
	struct bcd_challenge ch;
	char err[512] = "";
	int rc;

	if (pr == NULL || pr->answer == NULL) {
		bcd_say(m,
		        "the server sent a %s challenge, and this attestor has no producer to "
		        "answer it; join with the attestor the pool expects",
		        a->challenge_attestor);
		return BC_ERR_UNSUPPORTED;
	}
	if (++*n > MAX_CHALLENGE_ROUNDS) {
		bcd_say(m,
		        "the server sent more than %d challenges; ask the operator to check the "
		        "security.join.refused event",
		        MAX_CHALLENGE_ROUNDS);
		return BC_ERR_LIMIT;
	}
	bc_freezero(*att, *att_len);
	*att = NULL;
	ch = (struct bcd_challenge){.attestor = a->challenge_attestor,
	                            .payload = a->challenge,
	                            .len = a->challenge_len,
	                            .csr_sha256 = h};
	if ((rc = pr->answer(pr->ctx, &ch, att, att_len, err, sizeof(err))) != 0)
		bcd_say(m, "cannot answer the %s challenge: %s", a->challenge_attestor, err);
	return rc;
}

static int wait_pending(const struct bc_join_answer *a, int *n, struct bcd_msg *m)
{
	uint32_t s = a->retry_after_seconds ? a->retry_after_seconds : DEFAULT_RETRY_S;

	if (++*n > MAX_PENDING_ROUNDS) {
		bcd_say(m,
		        "still pending after %d rounds (join request %s); run bcd join again "
		        "once an operator approved it",
		        MAX_PENDING_ROUNDS, a->request_id);
		return BC_ERR_EXPIRED;
	}
	s = s > MAX_RETRY_S ? MAX_RETRY_S : s;
	fprintf(stderr, BCD_NAME ": pending (join request %s), retrying in %u s\n",
	        a->request_id[0] ? a->request_id : "without an id", s);
	wait_seconds(s);
	return 0;
}

/* bcd node cannot sleep through a pending answer (it would not hear SIGTERM), and an
 * x509pop re-join is never deferred: said, and retried with the daemon's backoff. */
static int no_wait(const struct bc_join_answer *a, struct bcd_msg *m)
{
	bcd_say(m,
	        "the control plane deferred the join (join request %s); an operator approves "
	        "it, then it is tried again",
	        a->request_id[0] ? a->request_id : "without an id");
	return BC_ERR_UNAVAILABLE;
}

static int evidence(struct bcd_producer *pr, EVP_PKEY *key, const uint8_t h[static 32],
                    uint8_t **att, size_t *att_len, struct bcd_msg *m)
{
	char err[512] = "";
	int rc;

	bc_freezero(*att, *att_len);
	*att = NULL;
	*att_len = 0;
	if (pr == NULL || pr->evidence == NULL)
		return 0;
	if ((rc = pr->evidence(pr->ctx, key, h, att, att_len, err, sizeof(err))) != 0)
		bcd_say(m, "cannot make the %s evidence: %s", pr->attestor, err);
	return rc;
}

/* A refusal after a wait: most likely the operator's decision on the join request. */
static void refused_after_wait(const char *request, struct bcd_msg *m)
{
	bcd_say(m,
	        "the control plane refused the join after join request %s waited: an operator "
	        "denied it, or it expired; ask the operator (better-compute join-requests list); "
	        "nothing was written",
	        request);
}

static int join_rounds(const struct bc_client_pins *pins, struct bc_join_params *p,
                       const struct bcd_join_req *r, struct bc_join_answer *a, struct bcd_msg *m)
{
	struct bcd_producer *pr = r->producer;
	int wait = r->wait_pending;
	uint8_t h[32], *att = NULL;
	size_t att_len = 0;
	char err[512], request[64] = "";
	int rc, challenges = 0, pendings = 0;

	if ((rc = bc_sha256(p->csr, p->csr_len, h)) != 0 ||
	    (rc = evidence(pr, p->key, h, &att, &att_len, m)) != 0)
		goto out;
	for (;;) {
		p->attestation = att;
		p->attestation_len = att_len;
		if ((rc = bc_client_join(pins, p, a, err, sizeof(err))) != 0) {
			if (rc == BC_ERR_DENIED && request[0] != '\0')
				refused_after_wait(request, m);
			else
				bcd_say(m, "%s; nothing was written", err);
			goto out;
		}
		if (a->state == BC_JOIN_JOINED)
			break;
		if (a->state == BC_JOIN_CHALLENGE)
			rc = answer_challenge(pr, a, h, &challenges, &att, &att_len, m);
		else if (a->state == BC_JOIN_PENDING && !wait)
			rc = no_wait(a, m);
		else if (a->state == BC_JOIN_PENDING && pendings == 0 && r->on_pending != NULL &&
		         (rc = r->on_pending(r->on_pending_ctx, m)) != 0)
			; /* nothing kept: the join ends here */
		else if (a->state == BC_JOIN_PENDING && (rc = wait_pending(a, &pendings, m)) == 0) {
			snprintf(request, sizeof(request), "%s",
			         a->request_id[0] ? a->request_id : "without an id");
			challenges = 0; /* a fresh round 1, whose challenges count anew */
			rc = evidence(pr, p->key, h, &att, &att_len, m);
		} else if (a->state != BC_JOIN_PENDING)
			rc = BC_ERR_INTERNAL;
		bc_join_answer_free(a);
		if (rc != 0)
			goto out;
	}
out:
	bc_freezero(att, att_len);
	p->attestation = NULL;
	p->attestation_len = 0;
	return rc;
}

int bcd_join_request(const struct bcd_config *cfg, const struct bc_client_pins *pins,
                     const struct bcd_join_req *r, struct bc_join_answer *a, struct bcd_msg *m)
{
	struct bc_client_claims claims;
	struct bc_join_params p;
	uint8_t *csr = NULL;
	size_t csr_len = 0;
	int rc;

	memset(&claims, 0, sizeof(claims));
	memset(&p, 0, sizeof(p));
	memset(a, 0, sizeof(*a));
	if ((rc = bcd_claims_read(cfg, &claims, m)) != 0)
		goto out;
	if (r->csr == NULL && (rc = bc_csr_make(r->key, BC_WIRE_CSR_CN, &csr, &csr_len)) != 0) {
		bcd_say(m, "cannot make the CSR (%s)", bc_err_str(rc));
		goto out;
	}
	p.attestor = r->attestor;
	p.role = r->role;
	p.token = r->token;
	p.claims = &claims;
	p.key = r->key;
	p.csr = r->csr != NULL ? r->csr : csr;
	p.csr_len = r->csr != NULL ? r->csr_len : csr_len;
	p.agent_version = BCD_AGENT_VERSION;
	rc = join_rounds(pins, &p, r, a, m);
out:
	bcd_claims_free(&claims);
	free(csr);
	return rc;
}

/* What bcd join keeps while it waits: the first pending answer writes the key and
 * CSR to pending.json and node.key.pending (once). */
struct keep_ctx {
	const struct bcd_config *cfg;
	const char *attestor, *role;
	const struct bcd_nodekey *key;
	const uint8_t *csr;
	size_t csr_len;
	int kept; /* already there: read back from them */
};

static int keep_pending(void *ctx, struct bcd_msg *m)
{
	struct keep_ctx *k = ctx;

	if (k->kept)
		return 0;
	if (bcd_pending_save(k->cfg, k->attestor, k->role, k->key, k->csr, k->csr_len, m) != 0) {
		/* waiting without them would lock a rerun out until the request expires */
		fprintf(stderr, BCD_NAME ": %s; waiting anyway: do not restart bcd join\n",
		        m->text);
		m->text[0] = '\0';
		return 0;
	}
	k->kept = 1;
	fprintf(stderr,
	        BCD_NAME ": keeping the key and CSR of this join request in %s/%s until it is "
	                 "decided\n",
	        k->cfg->data_dir, BCD_PENDING);
	return 0;
}

/* A new node key (in the TPM when node keys may use it) and its CSR. */
static int new_key(const struct bcd_config *cfg, int tpm_required, struct bcd_nodekey *key,
                   uint8_t **csr, size_t *csr_len, struct bcd_msg *m)
{
	int rc;

	if ((rc = bcd_nodekey_new(cfg, tpm_required, key, m)) == 0)
		rc = bcd_nodekey_csr(key, BC_WIRE_CSR_CN, csr, csr_len, m);
	return rc;
}

int bcd_join_kept(const struct bcd_config *cfg, const struct bc_client_pins *pins,
                  struct bcd_join_req *r, int tpm_required, struct bc_join_answer *a,
                  struct bcd_msg *m)
{
	struct keep_ctx kc = {.cfg = cfg, .attestor = r->attestor, .role = r->role};
	struct bcd_nodekey key;
	uint8_t *csr = NULL;
	size_t csr_len = 0;
	int rc;

	memset(a, 0, sizeof(*a));
	/* a join request that waits for this key and CSR: ask again with them */
	rc = bcd_pending_load(cfg, r->attestor, r->role, &key, &csr, &csr_len, m);
	if (rc == BC_ERR_NOT_FOUND) {
		rc = new_key(cfg, tpm_required, &key, &csr, &csr_len, m);
	} else if (rc == 0 && tpm_required && !key.in_tpm) {
		/* a tpm join's key is never a file: not one bcd kept */
		fprintf(stderr,
		        BCD_NAME ": %s: %s: a file key for a tpm join; ignored: a new key and CSR "
		                 "replace it\n",
		        cfg->data_dir, BCD_NODE_KEY_PENDING);
		bcd_pending_drop(cfg);
		bcd_nodekey_free(&key);
		free(csr);
		csr = NULL;
		rc = new_key(cfg, tpm_required, &key, &csr, &csr_len, m);
	} else if (rc == 0) {
		kc.kept = 1;
	}
	if (rc != 0)
		goto out;
	kc.key = &key;
	kc.csr = csr;
	kc.csr_len = csr_len;
	r->key = key.key;
	r->csr = csr;
	r->csr_len = csr_len;
	r->on_pending = keep_pending;
	r->on_pending_ctx = &kc;
	if (r->producer != NULL && r->producer->hold_node_key != NULL)
		r->producer->hold_node_key(r->producer->ctx, &key);
	rc = bcd_join_request(cfg, pins, r, a, m);
	if (r->producer != NULL && r->producer->hold_node_key != NULL)
		r->producer->hold_node_key(r->producer->ctx, NULL);
	/* refused (an operator denied it, or the request is gone): the next run starts
	 * clean */
	if (rc == BC_ERR_DENIED)
		bcd_pending_drop(cfg);
	else if (rc != 0 && kc.kept)
		fprintf(stderr,
		        BCD_NAME ": the key and CSR of the join request stay in %s/%s: run it "
		                 "again to ask with them\n",
		        cfg->data_dir, BCD_PENDING);
	if (rc != 0)
		goto out;
	if ((rc = bcd_identity_save(cfg, &key, a, NULL, m)) == 0)
		bcd_pending_drop(cfg);
out:
	r->key = NULL;
	r->csr = NULL;
	r->on_pending = NULL;
	r->on_pending_ctx = NULL;
	free(csr);
	bcd_nodekey_free(&key);
	return rc;
}

/* A first join: a key (new, or the one a pending request waits for), the rounds, then
 * the files. */
static int join_now(const struct bcd_config *cfg, const char *attestor, const char *role,
                    const char *token, struct bcd_producer *pr, char node_id[static 64],
                    struct bcd_msg *m)
{
	const struct bc_client_attestor *row = bc_client_attestor(attestor);
	int key_in_tpm = row != NULL && (row->flags & BC_CA_KEY_IN_TPM);
	struct bc_client_pins pins;
	struct bc_join_answer a;
	struct bcd_join_req r = {
	    .attestor = attestor, .role = role, .token = token, .producer = pr, .wait_pending = 1};
	int rc;

	memset(&a, 0, sizeof(a));
	if ((rc = bcd_pins_from_config(cfg, &pins, m)) != 0)
		return rc;
	/* in the TPM when there is one for node keys; a tpm join never falls back */
	if ((rc = bcd_join_kept(cfg, &pins, &r, key_in_tpm, &a, m)) == 0) {
		memcpy(node_id, a.node_id, 64);
		bcd_pins_learn_answer(cfg, &pins, &a);
	}
	bc_join_answer_free(&a);
	bc_client_pins_free(&pins);
	return rc;
}

/* --yes and --role, whatever the attestor. */
static int check_common(const struct bcd_opts *o, struct bcd_msg *m)
{
	if (o->yes && !o->reset) {
		bcd_say(m, "--yes goes with --reset");
		return BC_ERR_INVALID;
	}
	if (o->role != NULL && strcmp(o->role, BC_ROLE_NODE) != 0 &&
	    strcmp(o->role, BC_ROLE_SITE) != 0) {
		bcd_say(m,
		        "--role: node (the default) or site (a site machine, with a site token)");
		return BC_ERR_INVALID;
	}
	return 0;
}

/* The options that cannot go together, and the token's source for this attestor: what
 * each attestor takes is its row's (bc_client_attestor). */
static int check_opts(const struct bcd_opts *o, const char *attestor, struct bcd_msg *m)
{
	const struct bc_client_attestor *a = bc_client_attestor(attestor);
	char names[128];
	int rc;

	if ((rc = check_common(o, m)) != 0)
		return rc;
	if (a == NULL || !(a->flags & BC_CA_JOIN)) {
		bcd_say(m, "--attestor %.64s: bcd join takes one of %s", attestor,
		        bc_client_attestor_names(BC_CA_JOIN, names, sizeof(names)));
		return BC_ERR_INVALID;
	}
	/* the provisioned attestor admits nodes: the deploy's token re-keys a node */
	if (o->role != NULL && strcmp(o->role, BC_ROLE_SITE) == 0 && !(a->flags & BC_CA_SITE)) {
		bcd_say(m, "--role site joins with a site token (--attestor %s)",
		        bc_client_attestor_names(BC_CA_SITE, names, sizeof(names)));
		return BC_ERR_INVALID;
	}
	if ((a->flags & BC_CA_TOKEN_FILE) && o->token_file == NULL &&
	    getenv("BCD_JOIN_TOKEN") == NULL) {
		bcd_say(
		    m,
		    "--attestor %s reads the single-use token the deploy rendered into the user "
		    "data: give --token-file FILE",
		    a->id);
		return BC_ERR_INVALID;
	}
	if (!(a->flags & BC_CA_PROVIDER) &&
	    (o->provider != NULL || o->identity_token_file != NULL)) {
		bcd_say(m, "--provider and --identity-token-file go with --attestor %s",
		        bc_client_attestor_names(BC_CA_PROVIDER, names, sizeof(names)));
		return BC_ERR_INVALID;
	}
	if ((a->flags & BC_CA_REJOIN) && (o->token_file != NULL || o->reset)) {
		bcd_say(
		    m,
		    "--attestor %s re-joins with the identity in the data directory: it takes no "
		    "--token-file or --reset (to join anew: bcd join --reset --yes --token-file "
		    "FILE)",
		    a->id);
		return BC_ERR_INVALID;
	}
	if (!(a->flags & BC_CA_TOKEN)) {
		if (o->token_file != NULL) {
			bcd_say(m, "--token-file does not go with --attestor %s: %s", a->id,
			        a->no_token);
			return BC_ERR_INVALID;
		}
		unsetenv("BCD_JOIN_TOKEN");
	}
	return 0;
}

/* bcd join --attestor x509pop: the identity that is there (its certificate may have
 * expired) re-joins as the same node. */
static int rejoin_by_hand(const struct bcd_config *cfg, struct bcd_msg *m)
{
	struct bc_client_pins pins;
	struct bcd_identity id;
	char na[40];
	int rc;

	if ((rc = bcd_identity_load(cfg, &id, m)) != 0) {
		if (rc == BC_ERR_NOT_FOUND)
			bcd_say(m,
			        BC_WIRE_ATTESTOR_X509POP
			        " re-joins a node that joined before: no identity in %s; "
			        "join with a token",
			        cfg->data_dir);
		return rc;
	}
	if ((rc = bcd_pins_from_config(cfg, &pins, m)) != 0)
		goto out;
	if ((rc = bcd_x509pop_rejoin(cfg, &pins, &id, 1, m)) == 0) {
		bc_time_format_ms(id.not_after_ms, na, sizeof(na));
		printf("rejoined as %s with " BC_WIRE_ATTESTOR_X509POP "; certificate until %s\n",
		       id.node_id, na);
	}
	bc_client_pins_free(&pins);
out:
	bcd_identity_free(&id);
	return rc;
}

int bcd_cmd_join(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	const char *attestor = o->attestor != NULL ? o->attestor : BC_WIRE_ATTESTOR_JOIN_TOKEN;
	const struct bc_client_attestor *row;
	struct bcd_producer *pr = NULL;
	struct bcd_config cfg;
	struct bcd_identity id;
	struct bcd_msg why;
	char *token = NULL, node_id[64];
	int rc, lock = -1;

	if ((rc = check_opts(o, attestor, m)) != 0) {
		*exit_status = BCD_EXIT_USAGE;
		return rc;
	}
	if ((rc = bcd_config_load(o->config, &cfg, m)) != 0)
		return rc;
	/* a bcd node renewing (or another bcd join) moves the same files: node.key.next
	 * of one would become node.key of the other's certificate */
	if ((rc = bcd_ensure_dir(cfg.data_dir, m)) != 0 ||
	    (rc = bcd_lock_dir(cfg.data_dir, 1, &lock, m)) != 0)
		goto out;
	/* the reset comes before any credential is read */
	if (o->reset && ((rc = bcd_reset(&cfg, o->yes, m, exit_status)) != 0 || !o->yes))
		goto out;
	/* x509pop is the one join that starts from the identity that is there */
	row = bc_client_attestor(attestor);
	if (row != NULL && (row->flags & BC_CA_REJOIN)) {
		rc = rejoin_by_hand(&cfg, m);
		goto out;
	}
	if ((rc = bcd_identity_load(&cfg, &id, &why)) == 0) {
		printf("already joined as %s\n", id.node_id);
		bcd_identity_free(&id);
		goto out;
	}
	/* a TPM (or file) that cannot be reached says nothing about the identity: joining
	 * over it would replace node.key, for a key in the TPM the only way back to it */
	if (rc == BC_ERR_UNAVAILABLE || rc == BC_ERR_IO || rc == BC_ERR_NOMEM ||
	    rc == BC_ERR_CONFIG) {
		bcd_say(m,
		        "%s; the identity in %s is kept: fix that and run bcd join again, or "
		        "move it aside first: bcd join --reset --yes, then bcd join",
		        why.text, cfg.data_dir);
		goto out;
	}
	if (rc != BC_ERR_NOT_FOUND)
		fprintf(stderr, BCD_NAME ": the identity does not load (%s); joining again\n",
		        why.text);
	if ((rc = bcd_producer_for(&cfg, attestor, o, &pr, m->text, sizeof(m->text))) != 0)
		goto out;
	if (pr == NULL && (rc = read_token(o, &token, m)) != 0)
		goto out;
	if ((rc = join_now(&cfg, attestor, o->role ? o->role : BC_ROLE_NODE, token, pr, node_id,
	                   m)) != 0)
		goto out;
	printf("joined as %s%s\n", node_id,
	       o->role && strcmp(o->role, BC_ROLE_SITE) == 0 ? " (site)" : "");
out:
	if (token != NULL)
		bc_freezero(token, strlen(token));
	bcd_producer_free(pr);
	bcd_unlock_dir(lock);
	bcd_config_free(&cfg);
	return rc;
}
