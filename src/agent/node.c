/* bcd node: the daemon. It keeps the node's certificate fresh: a renewal at two thirds
 * of the certificate's life (BCD_RENEW_AFTER, e.g. "3s", overrides it for tests), a
 * failure retried with backoff from 30 s (BCD_RETRY_BASE) doubling to 10 minutes.
 * SIGTERM and SIGINT end it with status 0: they are blocked and waited for with
 * sigtimedwait, so every wait is interruptible and no handler runs mid-write.
 *
 * A renewal moves the identity forward through files that each leave a loadable
 * identity behind a crash: node.key.next (0600) first, then node.crt.next, then
 * node.crt.next -> node.crt and node.key.next -> node.key (a crash between these two
 * leaves a certificate whose key is node.key.next, which the loader accepts and
 * finishes), and identity.json last. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "bc/buf.h"
#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/log.h"
#include "bc/pki.h"

#define DEFAULT_RETRY_BASE_MS 30000
#define MAX_BACKOFF_MS (10 * 60 * 1000)

struct daemon {
	struct bcd_config cfg;
	struct bc_client_pins pins;
	struct bcd_identity id;
	sigset_t sigs;
	int64_t renew_after_ms; /* 0: two thirds of the certificate's life */
	int64_t retry_base_ms;
	int64_t last_ok_ms;     /* start, or the last renewal */
	int attempt;            /* failed renewals since the last success */
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

/* The new certificate and key into place, identity.json last. */
static int swap_in(struct daemon *d, const struct bc_join_answer *a, struct bcd_msg *m)
{
	const char *dir = d->cfg.data_dir;
	char *chain = NULL, *ca = NULL, crt_next[4096], key_next[4096];
	struct bc_node_identity ni;
	int rc;

	if ((rc = bcd_chain_pem(a->chain, a->chain_lens, a->n_chain, &chain)) != 0 ||
	    (a->n_trust_bundle > 0 &&
	     (rc = bcd_chain_pem(a->trust_bundle, a->trust_bundle_lens, a->n_trust_bundle, &ca)) != 0)) {
		bcd_say(m, "cannot encode the new certificates (%s)", bc_err_str(rc));
		goto out;
	}
	if ((rc = bcd_write_atomic(dir, BCD_NODE_CRT_NEXT, chain, strlen(chain), 0644, m)) != 0 ||
	    (ca != NULL && (rc = bcd_write_atomic(dir, BCD_CA, ca, strlen(ca), 0644, m)) != 0))
		goto out;
	if ((rc = bcd_path(crt_next, sizeof(crt_next), dir, BCD_NODE_CRT_NEXT)) != 0 ||
	    (rc = bcd_path(key_next, sizeof(key_next), dir, BCD_NODE_KEY_NEXT)) != 0)
		goto out;
	if ((rc = bcd_commit(crt_next, dir, BCD_NODE_CRT, m)) != 0 ||
	    (rc = bcd_commit(key_next, dir, BCD_NODE_KEY, m)) != 0 ||
	    (rc = bcd_sync_dir(dir, m)) != 0)
		goto out;
	if ((rc = bc_pki_node_identity(a->chain[0], a->chain_lens[0], d->cfg.trust_domain, &ni)) != 0) {
		bcd_say(m, "the new certificate is not a node certificate");
		goto out;
	}
	rc = bcd_identity_write_json(&d->cfg, ni.node_id, ni.role, d->cfg.trust_domain,
	                             ni.serial_hex, ni.not_after_ms, d->id.joined_at, m);
	bc_node_identity_clear(&ni);
out:
	free(chain);
	free(ca);
	return rc;
}

static int renew_once(struct daemon *d, struct bcd_msg *m)
{
	struct bc_join_answer a;
	EVP_PKEY *next = NULL;
	char *pem = NULL, err[512], path[4096];
	int rc, committed = 0;

	memset(&a, 0, sizeof(a));
	if ((rc = bc_key_generate(&next)) != 0 || (rc = bcd_key_pem(next, &pem)) != 0) {
		bcd_say(m, "cannot make the next key (%s)", bc_err_str(rc));
		goto out;
	}
	if ((rc = bcd_write_atomic(d->cfg.data_dir, BCD_NODE_KEY_NEXT, pem, strlen(pem), 0600, m)) != 0)
		goto out;
	if ((rc = bc_client_renew(&d->pins, (const uint8_t *const *)d->id.chain, d->id.chain_lens,
	                          d->id.n_chain, d->id.key, next, &a, err, sizeof(err))) != 0) {
		bcd_say(m, "%s", err);
		goto out;
	}
	committed = 1;
	if ((rc = swap_in(d, &a, m)) != 0)
		goto out;
	bcd_identity_free(&d->id);
	rc = bcd_identity_load(&d->cfg, &d->id, m);
out:
	if (!committed && bcd_path(path, sizeof(path), d->cfg.data_dir, BCD_NODE_KEY_NEXT) == 0)
		unlink(path);
	if (pem != NULL)
		bc_freezero(pem, strlen(pem));
	EVP_PKEY_free(next);
	bc_join_answer_free(&a);
	return rc;
}

static int64_t backoff_ms(const struct daemon *d)
{
	int64_t b = d->retry_base_ms;

	for (int i = 1; i < d->attempt && b < MAX_BACKOFF_MS; i++)
		b *= 2;
	return b > MAX_BACKOFF_MS ? MAX_BACKOFF_MS : b;
}

static void log_failure(struct daemon *d, const struct bcd_msg *m, int64_t retry)
{
	char attempt[16], expires[32], retry_in[32];

	snprintf(attempt, sizeof(attempt), "%d", d->attempt);
	fmt_duration(d->id.not_after_ms - bc_now_ms(), expires, sizeof(expires));
	fmt_duration(retry, retry_in, sizeof(retry_in));
	bc_log(BC_LOG_WARN, "renewal failed", "nodeId", d->id.node_id, "attempt", attempt,
	       "expiresIn", expires, "retryIn", retry_in, "error", m->text, NULL);
}

static int run_loop(struct daemon *d)
{
	struct bcd_msg m;
	char na[40];
	int64_t when = next_renewal(d);

	for (;;) {
		if (wait_until(d, when))
			return 0;
		m.text[0] = '\0';
		if (renew_once(d, &m) != 0) {
			d->attempt++;
			int64_t b = backoff_ms(d);
			log_failure(d, &m, b);
			when = bc_now_ms() + b;
			if (d->id.key == NULL)
				return BC_ERR_INVALID; /* the identity no longer loads */
			continue;
		}
		d->attempt = 0;
		d->last_ok_ms = bc_now_ms();
		bc_time_format_ms(d->id.not_after_ms, na, sizeof(na));
		bc_log(BC_LOG_INFO, "renewed", "nodeId", d->id.node_id, "notAfter", na, "serial",
		       d->id.serial, NULL);
		when = next_renewal(d);
	}
}

/* A renewal cut short: node.key.next still to rename, or identity.json lagging its
 * certificate (a crash between the swap and its write). */
static void repair(struct daemon *d)
{
	struct bcd_msg m;

	if (bcd_identity_finish_swap(&d->cfg, &d->id, &m) != 0)
		bc_log(BC_LOG_WARN, "cannot finish an interrupted renewal", "error", m.text, NULL);
	if (bcd_identity_write_json(&d->cfg, d->id.node_id, d->id.role, d->cfg.trust_domain,
	                            d->id.serial, d->id.not_after_ms, d->id.joined_at, &m) != 0)
		bc_log(BC_LOG_WARN, "cannot rewrite identity.json", "error", m.text, NULL);
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
	bc_time_format_ms(next_renewal(d), at, sizeof(at));
	bc_log(BC_LOG_INFO, "started", "nodeId", d->id.node_id, "notAfter", na, "renewAt", at, NULL);
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
