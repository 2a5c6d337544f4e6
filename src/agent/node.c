/* bcd node: the daemon. It keeps the node's certificate fresh: a renewal at two thirds
 * of the certificate's life (BCD_RENEW_AFTER, e.g. "3s", overrides it for tests), a
 * failure retried with backoff from 30 s (BCD_RETRY_BASE) doubling to 10 minutes, each
 * wait jittered by a quarter either way; a control plane that answers unavailable with
 * a Retry-After (it sheds load) is tried again after that long, plus up to a quarter.
 * SIGTERM and SIGINT end it with status 0: they are blocked and waited for with
 * sigtimedwait, so every wait is interruptible and no handler runs mid-write.
 *
 * A renewal moves the identity forward through files that each leave a loadable
 * identity behind a crash: node.key.next (0600) first, then node.crt.next, then
 * node.crt.next -> node.crt and node.key.next -> node.key (a crash between these two
 * leaves a certificate whose key is node.key.next, which the loader accepts and
 * finishes), and identity.json last (bcd_identity_replace, save.c).
 *
 * A certificate that has expired (found so at start, or a renewal refused after its
 * notAfter) cannot be renewed: the node re-joins with x509pop (x509pop.c), the same
 * node with a new certificate, and goes back to renewing. A refused or failed re-join
 * is retried with the same backoff as a renewal. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/nodekey.h"
#include "bc/crypto.h"
#include "bc/clock.h"
#include "bc/log.h"
#include "bc/wire.h"

#define DEFAULT_RETRY_BASE_MS 30000
#define MAX_BACKOFF_MS        (10 * 60 * 1000)

struct daemon {
	struct bcd_config cfg;
	struct bc_client_pins pins;
	struct bcd_identity id;
	sigset_t sigs;
	int64_t renew_after_ms; /* 0: two thirds of the certificate's life */
	int64_t retry_base_ms;
	int64_t retry_in_ms; /* the wait the last failed step chose */
	int64_t last_ok_ms;  /* start, or the last renewal */
	int attempt;         /* failed renewals since the last success */
};

static void fmt_duration(int64_t ms, char *out, size_t len)
{
	int64_t s = (ms < 0 ? -ms : ms) / 1000;

	snprintf(out, len, "%s%lldh%02lldm%02llds", ms < 0 ? "-" : "", (long long)(s / 3600),
	         (long long)(s % 3600 / 60), (long long)(s % 60));
}

static int env_duration(const char *name, int64_t *out, struct bcd_msg *m)
{
	const char *v = getenv(name);

	*out = 0;
	if (v == NULL || v[0] == '\0')
		return 0;
	if (bc_duration_parse_ms(v, out) != 0 || *out <= 0) {
		bcd_say(m, "%s=%.32s: expected a duration such as 3s, 5m or 1h", name, v);
		return BC_ERR_CONFIG;
	}
	return 0;
}

static int64_t next_renewal(const struct daemon *d)
{
	int64_t life = d->id.not_after_ms - d->id.not_before_ms;

	if (d->renew_after_ms > 0)
		return d->last_ok_ms + d->renew_after_ms;
	return d->id.not_before_ms + life / 3 * 2;
}

/* Sleeps until deadline (bc_now_ms time) or a signal: 1 when SIGTERM or SIGINT came. */
static int wait_until(struct daemon *d, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - bc_now_ms();
		struct timespec ts;

		if (left <= 0)
			return 0;
		ts.tv_sec = (time_t)(left / 1000);
		ts.tv_nsec = (long)(left % 1000) * 1000000L;
		int sig = sigtimedwait(&d->sigs, NULL, &ts);
		if (sig == SIGTERM || sig == SIGINT)
			return 1;
		if (sig < 0 && errno != EAGAIN && errno != EINTR)
			return 1;
	}
}

/* The next key and its CSR: for a certificate that names an AK, made in the TPM and
 * certified by that AK into ka (issue 7; no fallback to a file key), else as any key. */
static int next_for(struct daemon *d, struct bcd_nodekey *next, uint8_t **csr, size_t *csr_len,
                    struct bcd_key_cert *kc, struct bc_key_attestation *ka, int *attested,
                    struct bcd_msg *m)
{
	uint8_t ak[BCD_TPM_NAME_LEN];
	int rc, names = bcd_leaf_ak_name(d->id.chain[0], d->id.chain_lens[0], ak);

	*attested = 0;
	if (names < 0) {
		bcd_say(m, "renewal: the certificate's urn:bc:tpm-ak: statement is malformed; join "
		           "again: bcd join --reset --yes, then bcd join");
		return BC_ERR_INVALID;
	}
	if (names == 0) {
		if ((rc = bcd_next_key(&d->cfg, &d->id, next, m)) != 0)
			return rc;
		return bcd_nodekey_csr(next, BC_WIRE_CSR_CN, csr, csr_len, m);
	}
	if ((rc = bcd_next_key_certified(&d->cfg, &d->id, ak, next, csr, csr_len, kc, m)) != 0)
		return rc;
	ka->ak_public = kc->ak.pub;
	ka->ak_public_len = kc->ak.pub_len;
	ka->key_public = kc->key_pub;
	ka->key_public_len = kc->key_pub_len;
	ka->certify_info = kc->cert.attest;
	ka->certify_info_len = kc->cert.attest_len;
	ka->signature = kc->cert.sig;
	ka->signature_len = kc->cert.sig_len;
	*attested = 1;
	return 0;
}

static int renew_once(struct daemon *d, struct bcd_msg *m)
{
	struct bc_join_answer a;
	struct bcd_nodekey next;
	struct bcd_key_cert kc;
	struct bc_key_attestation ka;
	struct bc_renew_params p;
	struct bc_signer cur;
	uint8_t *csr = NULL;
	size_t csr_len = 0;
	char err[512];
	int rc, committed = 0, attested = 0;

	memset(&a, 0, sizeof(a));
	memset(&next, 0, sizeof(next));
	memset(&kc, 0, sizeof(kc));
	memset(&ka, 0, sizeof(ka));
	if ((rc = next_for(d, &next, &csr, &csr_len, &kc, &ka, &attested, m)) != 0)
		goto out;
	/* the proof by the current key, wherever it is; checked under its public half */
	if ((rc = bcd_nodekey_signer(&d->id.nk, &cur)) != 0) {
		bcd_say(m, "renewal: the current node key cannot sign (%s)", bc_err_str(rc));
		goto out;
	}
	p = (struct bc_renew_params){.chain = (const uint8_t *const *)d->id.chain,
	                             .chain_lens = d->id.chain_lens,
	                             .n_chain = d->id.n_chain,
	                             .signer = &cur,
	                             .csr = csr,
	                             .csr_len = csr_len,
	                             .ka = attested ? &ka : NULL};
	if ((rc = bc_client_renew(&d->pins, &p, &a, err, sizeof(err))) != 0) {
		bcd_say(m, "%s", err);
		goto out;
	}
	committed = 1;
	if ((rc = bcd_identity_replace(&d->cfg, &a, d->id.joined_at, m)) == 0)
		bcd_pins_learn_answer(&d->cfg, &d->pins, &a);
out:
	if (!committed)
		bcd_next_key_drop(&d->cfg);
	else
		rc = bcd_identity_reload(&d->cfg, &d->id, rc, m);
	free(csr);
	bcd_key_cert_free(&kc);
	bcd_nodekey_free(&next);
	bc_join_answer_free(&a);
	return rc;
}

/* Doubling from the base to MAX_BACKOFF_MS, each wait drawn from [3/4, 5/4) of it: a
 * fleet cut off at once does not come back at once. */
static int64_t backoff_ms(const struct daemon *d)
{
	int64_t b = d->retry_base_ms;
	uint32_t r = 0;

	for (int i = 1; i < d->attempt && b < MAX_BACKOFF_MS; i++)
		b *= 2;
	if (b > MAX_BACKOFF_MS)
		b = MAX_BACKOFF_MS;
	if (b < 4 || bc_random(&r, sizeof(r)) != 0)
		return b;
	return b - b / 4 + (int64_t)(r % (uint32_t)(b / 2));
}

/* The wait before the next attempt after a failure rc: what the server asked for when
 * it answered unavailable with a Retry-After (plus up to a quarter), the backoff
 * otherwise. */
static int64_t retry_wait_ms(const struct daemon *d, int rc)
{
	int64_t w = rc == BC_ERR_UNAVAILABLE ? bc_client_retry_after_wait_ms() : 0;

	return w > 0 ? w : backoff_ms(d);
}

static void log_failure(struct daemon *d, const char *what, const struct bcd_msg *m, int64_t retry)
{
	char attempt[16], expires[32], retry_in[32];

	snprintf(attempt, sizeof(attempt), "%d", d->attempt);
	fmt_duration(d->id.not_after_ms - bc_now_ms(), expires, sizeof(expires));
	fmt_duration(retry, retry_in, sizeof(retry_in));
	bc_log(BC_LOG_WARN, what, "nodeId", d->id.node_id, "attempt", attempt, "expiresIn", expires,
	       "retryIn", retry_in, "error", m->text, NULL);
}

static int expired(const struct daemon *d)
{
	return bc_now_ms() >= d->id.not_after_ms;
}

/* Renewal refuses an expired certificate, so an expired one re-joins with x509pop.
 * The server's refusal does not say why (permission_denied whatever the reason): a
 * renewal refused once the certificate has expired by this clock is taken for that. */
static int rejoin(struct daemon *d, struct bcd_msg *m)
{
	char na[40];

	bc_time_format_ms(d->id.not_after_ms, na, sizeof(na));
	m->text[0] = '\0';
	/* a certificate that names the TPM's AK re-joins only with that TPM: the control
	 * plane refuses x509pop for it (never a certificate without the statement) */
	if (d->id.n_chain > 0 && bcd_leaf_names_ak(d->id.chain[0], d->id.chain_lens[0]) == 1) {
		bcd_say(m,
		        "the certificate names the TPM's attestation key and expired at %s: "
		        "re-join with the TPM: bcd join --reset --yes --attestor tpm",
		        na);
		return BC_ERR_DENIED;
	}
	bc_log(BC_LOG_INFO, "certificate expired: re-joining with " BC_WIRE_ATTESTOR_X509POP,
	       "nodeId", d->id.node_id, "notAfter", na, NULL);
	return bcd_x509pop_rejoin(&d->cfg, &d->pins, &d->id, 0, m);
}

/* One renewal, or one re-join; logs what it did. */
static int step(struct daemon *d)
{
	struct bcd_msg m = {""};
	const char *done = "renewed", *failed = "renewal failed";
	char na[40];
	int rc = 0, lock = -1;

	/* a bcd join by hand (x509pop, --reset) moves the same files: its turn first */
	if ((rc = bcd_lock_dir(d->cfg.data_dir, 0, &lock, &m)) == 0 &&
	    (expired(d) || ((rc = renew_once(d, &m)) == BC_ERR_DENIED && expired(d)))) {
		done = "rejoined with " BC_WIRE_ATTESTOR_X509POP;
		rc = rejoin(d, &m);
		failed = rc == BC_ERR_DENIED ? BC_WIRE_ATTESTOR_X509POP " refused"
		                             : BC_WIRE_ATTESTOR_X509POP " failed";
	}
	bcd_unlock_dir(lock);
	if (rc != 0) {
		d->attempt++;
		d->retry_in_ms = retry_wait_ms(d, rc);
		log_failure(d, failed, &m, d->retry_in_ms);
		return rc;
	}
	d->attempt = 0;
	d->last_ok_ms = bc_now_ms();
	bc_time_format_ms(d->id.not_after_ms, na, sizeof(na));
	bc_log(BC_LOG_INFO, done, "nodeId", d->id.node_id, "notAfter", na, "serial", d->id.serial,
	       NULL);
	return 0;
}

static int run_loop(struct daemon *d)
{
	/* expired at start: the re-join does not wait for a renewal time */
	int64_t when = expired(d) ? bc_now_ms() : next_renewal(d);

	for (;;) {
		if (wait_until(d, when))
			return 0;
		if (step(d) == 0) {
			when = next_renewal(d);
			continue;
		}
		if (d->id.key == NULL)
			return BC_ERR_INVALID; /* the identity no longer loads */
		when = bc_now_ms() + d->retry_in_ms;
	}
}

/* A renewal cut short: node.key.next still to rename, or identity.json lagging its
 * certificate (a crash between the swap and its write). */
static void repair(struct daemon *d)
{
	struct bcd_msg m;
	int lock = -1;

	if (bcd_lock_dir(d->cfg.data_dir, 0, &lock, &m) != 0) {
		bc_log(BC_LOG_WARN, "cannot finish an interrupted renewal", "error", m.text, NULL);
		return;
	}
	if (bcd_identity_finish_swap(&d->cfg, &d->id, &m) != 0)
		bc_log(BC_LOG_WARN, "cannot finish an interrupted renewal", "error", m.text, NULL);
	if (bcd_identity_write_json(&d->cfg, d->id.node_id, d->id.role, d->cfg.trust_domain,
	                            d->id.serial, d->id.not_after_ms, d->id.joined_at, &m) != 0)
		bc_log(BC_LOG_WARN, "cannot rewrite identity.json", "error", m.text, NULL);
	bcd_unlock_dir(lock);
}

static int start(struct daemon *d, const struct bcd_opts *o, struct bcd_msg *m)
{
	char na[40], at[40];
	int rc;

	if ((rc = env_duration("BCD_RENEW_AFTER", &d->renew_after_ms, m)) != 0 ||
	    (rc = env_duration("BCD_RETRY_BASE", &d->retry_base_ms, m)) != 0)
		return rc;
	if (d->retry_base_ms == 0)
		d->retry_base_ms = DEFAULT_RETRY_BASE_MS;
	if ((rc = bcd_config_load(o->config, &d->cfg, m)) != 0 ||
	    (rc = bcd_pins_from_config(&d->cfg, &d->pins, m)) != 0 ||
	    (rc = bcd_identity_load(&d->cfg, &d->id, m)) != 0)
		return rc;
	repair(d);
	d->last_ok_ms = bc_now_ms();
	bc_time_format_ms(d->id.not_after_ms, na, sizeof(na));
	bc_time_format_ms(expired(d) ? bc_now_ms() : next_renewal(d), at, sizeof(at));
	bc_log(BC_LOG_INFO, "started", "nodeId", d->id.node_id, "notAfter", na, "renewAt", at,
	       NULL);
	return 0;
}

int bcd_cmd_node(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	struct daemon d;
	int rc;

	(void)exit_status;
	memset(&d, 0, sizeof(d));
	sigemptyset(&d.sigs);
	sigaddset(&d.sigs, SIGTERM);
	sigaddset(&d.sigs, SIGINT);
	if (sigprocmask(SIG_BLOCK, &d.sigs, NULL) != 0) {
		bcd_say(m, "cannot block SIGTERM: %s", strerror(errno));
		return BC_ERR_INTERNAL;
	}
	bc_log_set_level(BC_LOG_INFO);
	if ((rc = start(&d, o, m)) == 0 && (rc = run_loop(&d)) == 0)
		bc_log(BC_LOG_INFO, "stopped", "nodeId", d.id.node_id, NULL);
	else if (rc != 0 && m->text[0] == '\0')
		bcd_say(m, "the identity no longer loads; see the log above, then bcd join");
	bcd_identity_free(&d.id);
	bc_client_pins_free(&d.pins);
	bcd_config_free(&d.cfg);
	return rc;
}
