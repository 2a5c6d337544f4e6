/* bcd status (the identity in one line, or JSON) and bcd doctor (checks, each ok, warn
 * or fail with a hint, as lines or JSON; one check asks the server whether the
 * certificate is still current, RenewRequest.check_only, proven by the node key). Both
 * only read: neither writes to the data directory, except that loading an identity
 * finishes a renewal whose certificate was already swapped. */
#include <grp.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "bc/wire.h"
#include "agent/keyops.h"
#include "bc/clock.h"
#include "bc/json.h"

#define SKEW_WARN_MS 5000
#define SKEW_FAIL_MS 60000

static const char *key_word(const struct bcd_identity *id)
{
	return id->key_in_tpm ? "tpm" : "file";
}

static void fmt_left(int64_t ms, char *out, size_t len)
{
	int64_t s = (ms < 0 ? -ms : ms) / 1000;

	if (ms < 0)
		snprintf(out, len, "expired %lldh%02lldm ago", (long long)(s / 3600),
		         (long long)(s % 3600 / 60));
	else
		snprintf(out, len, "in %lldh%02lldm", (long long)(s / 3600),
		         (long long)(s % 3600 / 60));
}

int bcd_cmd_status(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	struct bcd_config cfg;
	struct bcd_identity id;
	char na[40], left[48];
	int rc;

	(void)exit_status;
	if ((rc = bcd_config_load(o->config, &cfg, m)) != 0)
		return rc;
	if ((rc = bcd_identity_load(&cfg, &id, m)) != 0)
		goto out;
	bc_time_format_ms(id.not_after_ms, na, sizeof(na));
	if (o->json) {
		rc = 0;
		json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "nodeId", id.node_id,
		                      "role", id.role, "notAfter", na, "nodeKey", key_word(&id),
		                      "serial", id.serial, "trustDomain", id.trust_domain);
		char *s = j != NULL ? bc_json_dump(j) : NULL;
		if (s != NULL)
			printf("%s\n", s);
		else
			rc = BC_ERR_NOMEM;
		free(s);
		json_decref(j);
	} else {
		fmt_left(id.not_after_ms - bc_now_ms(), left, sizeof(left));
		printf("node %s, role %s, certificate expires %s (%s), node key %s\n", id.node_id,
		       id.role, na, left, id.key_in_tpm ? "in the TPM" : "a file");
	}
	bcd_identity_free(&id);
out:
	bcd_config_free(&cfg);
	return rc;
}

/* ---- doctor ---- */

enum verdict { OK = 0, WARN = 1, FAIL = 2 };

static const char *const verdict_words[] = {"ok", "warn", "fail"};

struct report {
	int worst;
	json_t *checks; /* --json: the checks, printed at the end; NULL: lines as they come */
	int nomem;
};

static void check(struct report *r, enum verdict v, const char *name, const char *what,
                  const char *hint)
{
	if ((int)v > r->worst)
		r->worst = v;
	if (r->checks != NULL) {
		json_t *c =
		    json_pack("{s:s, s:s, s:s, s:s?}", "name", name, "status", verdict_words[v],
		              "message", what, "hint", v != OK ? hint : NULL);
		if (c == NULL || json_array_append_new(r->checks, c) != 0)
			r->nomem = 1;
		return;
	}
	printf("%-4s  %-18s %s\n", verdict_words[v], name, what);
	if (v != OK && hint != NULL)
		printf("      %-18s hint: %s\n", "", hint);
}

/* 1 when the server answered /healthz (whatever its status). */
static int check_server(struct report *r, const struct bc_client_pins *pins)
{
	struct bcd_msg m = {""};
	char what[1200];
	long status = 0;
	int64_t date = 0, skew;

	if (bcd_healthz(pins, &status, &date, &m) != 0) {
		check(r, FAIL, "server reachable", m.text,
		      "check the server URL in the config, the network and the server's TLS");
		check(r, WARN, "clock skew", "not measured (no answer from the server)", NULL);
		return 0;
	}
	snprintf(what, sizeof(what), "%s/healthz answered HTTP %ld", pins->server_url, status);
	check(r, status == 200 ? OK : FAIL, "server reachable", what,
	      "the server is up but unhealthy: ask the operator (its store may be down)");
	if (date == 0) {
		check(r, WARN, "clock skew", "the server sent no Date header", NULL);
		return 1;
	}
	/* against the system clock: the server's Date is its system clock too */
	skew = (int64_t)time(NULL) * 1000 - date;
	snprintf(what, sizeof(what), "%+lld s against the server", (long long)(skew / 1000));
	check(r,
	      (skew < 0 ? -skew : skew) > SKEW_FAIL_MS   ? FAIL
	      : (skew < 0 ? -skew : skew) > SKEW_WARN_MS ? WARN
	                                                 : OK,
	      "clock skew", what,
	      "fix this machine's time (NTP): renewals are refused beyond 60 s of skew");
	return 1;
}

static void check_window(struct report *r, const struct bcd_identity *id)
{
	int64_t now = bc_now_ms(), life = id->not_after_ms - id->not_before_ms;
	char na[40], what[160], left[48];

	bc_time_format_ms(id->not_after_ms, na, sizeof(na));
	fmt_left(id->not_after_ms - now, left, sizeof(left));
	snprintf(what, sizeof(what), "valid until %s (%s)", na, left);
	if (now < id->not_before_ms)
		check(r, FAIL, "certificate", "not valid yet", "fix this machine's time (NTP)");
	else if (now >= id->not_after_ms)
		check(r, FAIL, "certificate", what,
		      "expired: renewal cannot help; re-join as this node: bcd join "
		      "--attestor " BC_WIRE_ATTESTOR_X509POP
		      " (bcd node does it by itself); if that is refused: bcd join --reset "
		      "--yes --token-file FILE");
	else if (id->not_after_ms - now < life / 3 - life / 12)
		check(
		    r, WARN, "certificate", what,
		    "past its renewal time: is bcd node running? see its log (journalctl -u bcd)");
	else
		check(r, OK, "certificate", what, NULL);
}

static void check_node_key(struct report *r, const struct bcd_config *cfg,
                           const struct bcd_identity *id)
{
	if (id->key_in_tpm)
		check(r, OK, "node key", "in the TPM", NULL);
	else if (!bcd_host_has_tpm(cfg))
		check(r, OK, "node key", "a file (this host has no TPM)", NULL);
	else
		check(
		    r, WARN, "node key", "a file on a host with a TPM",
		    "the next renewal moves it into the TPM (through bcd helper when bcd node runs "
		    "unprivileged)");
}

/* 1 when user is in group (as its primary group or a member). */
static int user_in_group(const char *user, const char *group)
{
	struct passwd *pw = getpwnam(user);
	struct group *gr = getgrnam(group);

	if (pw == NULL || gr == NULL)
		return 0;
	if (pw->pw_gid == gr->gr_gid)
		return 1;
	for (char **mem = gr->gr_mem; mem != NULL && *mem != NULL; mem++)
		if (strcmp(*mem, user) == 0)
			return 1;
	return 0;
}

/* Under [helper]: the node's user must not be able to open the TPM (the tss group
 * owns /dev/tpmrm0), and the helper answers it. */
static void check_tpm(struct report *r, const struct bcd_config *cfg)
{
	struct bcd_keyops *s = NULL;
	struct bcd_tpm_ak ak;
	EVP_PKEY *key = NULL;
	char what[700], err[512] = "";

	if (!cfg->has_helper)
		return;
	if (user_in_group(cfg->helper_user, "tss")) {
		snprintf(what, sizeof(what),
		         "the node's user %s is in the tss group, so it can open "
		         "the TPM itself",
		         cfg->helper_user);
		check(r, FAIL, "tpm", what,
		      "take it out: gpasswd -d bcd tss (the install script "
		      "does it on an upgrade); bcd node reaches the TPM through bcd helper");
		return;
	}
	if (geteuid() == 0) {
		snprintf(what, sizeof(what),
		         "%s is not in the tss group; bcd node uses bcd helper (%s)",
		         cfg->helper_user, cfg->helper_socket);
		check(r, OK, "tpm", what, NULL);
		return;
	}
	if (bcd_keyops_open(NULL, cfg->helper_socket, &s, err, sizeof(err)) == 0 &&
	    bcd_keyops_ak(s, &ak, &key, err, sizeof(err)) == 0) {
		snprintf(what, sizeof(what), "through bcd helper (%s); %s is not in the tss group",
		         cfg->helper_socket, cfg->helper_user);
		check(r, OK, "tpm", what, NULL);
	} else {
		check(r, FAIL, "tpm", err, "start bcd helper as root: systemctl start bcd-helper");
	}
	EVP_PKEY_free(key);
	bcd_keyops_close(s);
}

/* The pins bcd holds: the config's, or what pins.json grew them into. */
static void check_pins(struct report *r, const struct bc_client_pins *pins)
{
	char what[1200];
	size_t n;

	n = (size_t)snprintf(what, sizeof(what), "sequence %lld:", (long long)pins->sequence);
	for (size_t i = 0; i < pins->n_keys && n < sizeof(what); i++)
		n +=
		    (size_t)snprintf(what + n, sizeof(what) - n, "%s %s %.16s %s", i > 0 ? "," : "",
		                     bc_join_key_use_name(pins->keys[i].use), pins->keys[i].kid,
		                     bc_client_pin_state_name(pins->keys[i].state));
	check(r, OK, "pins", what, NULL);
}

/* Whether the server's pin set is newer than ours: the statement of the check's
 * answer, opened as bcd node opens it (nothing written here). */
static void check_pins_update(struct report *r, const struct bc_client_pins *pins,
                              const uint8_t *stmt, size_t len)
{
	static const char name[] = "pins update";
	struct bc_pins_update u;
	const char *reason = NULL;
	char err[512], what[600];

	if (stmt == NULL) {
		check(r, OK, name, "none announced by the server", NULL);
		return;
	}
	if (bc_client_pins_update_open(pins, stmt, len, &u, &reason, err, sizeof(err)) != 0) {
		check(r, WARN, name, err,
		      "bcd node refuses this statement and keeps its pins; ask the operator");
		return;
	}
	if (u.sequence > pins->sequence)
		snprintf(what, sizeof(what),
		         "pending: the server announces sequence %lld (this agent has %lld); "
		         "bcd node applies it at its next renewal",
		         (long long)u.sequence, (long long)pins->sequence);
	else
		snprintf(what, sizeof(what), "up to date (sequence %lld)", (long long)u.sequence);
	check(r, OK, name, what, NULL);
	bc_pins_update_free(&u);
}

/* The server asked whether the certificate is still current, proven by the node key
 * (the proof of a renewal; nothing is issued). pins NULL: the server did not answer. */
static void check_current(struct report *r, const struct bc_client_pins *pins,
                          struct bcd_identity *id)
{
	static const char name[] = "identity current";
	struct bcd_msg m = {""};
	struct bc_renew_params p;
	struct bc_signer cur;
	uint8_t *csr = NULL, *stmt = NULL;
	size_t csr_len = 0, stmt_len = 0;
	char err[512] = "";
	int rc;

	if (pins == NULL) {
		check(r, WARN, name, "not asked (no answer from the server)",
		      "run bcd doctor again once the server answers");
		return;
	}
	if (bc_now_ms() >= id->not_after_ms)
		return; /* the certificate check failed already, and says what to do */
	if (bcd_nodekey_csr(&id->nk, BC_WIRE_CSR_CN, &csr, &csr_len, &m) != 0) {
		check(r, FAIL, name, m.text, "see the node key and tpm checks");
		return;
	}
	if (bcd_nodekey_signer(&id->nk, &cur) != 0) {
		free(csr);
		check(r, FAIL, name, "the node key cannot sign", "see the node key and tpm checks");
		return;
	}
	p = (struct bc_renew_params){.chain = (const uint8_t *const *)id->chain,
	                             .chain_lens = id->chain_lens,
	                             .n_chain = id->n_chain,
	                             .signer = &cur,
	                             .csr = csr,
	                             .csr_len = csr_len};
	rc = bc_client_renew_check_pins(pins, &p, &stmt, &stmt_len, err, sizeof(err));
	free(csr);
	if (rc == 0) {
		check(r, OK, name, "the server holds this certificate as the node's current one",
		      NULL);
		check_pins_update(r, pins, stmt, stmt_len);
		free(stmt);
	} else if (rc == BC_ERR_DENIED)
		check(r, FAIL, name,
		      "the server refused this certificate: it was revoked, a newer certificate of "
		      "this node superseded it (a re-join or a reclaim), or the node was retired "
		      "(or this machine's clock is more than 60 s off: see clock skew)",
		      BCD_REJOIN_HINT);
	else if (rc == BC_ERR_VERIFY)
		check(r, FAIL, name, err, BCD_PINS_RETIRED_HINT);
	else
		check(r, WARN, name, err, "run bcd doctor again once the server answers");
}

static void check_identity(struct report *r, const struct bcd_config *cfg,
                           const struct bc_client_pins *pins)
{
	struct bcd_identity id;
	struct bcd_msg m = {""};
	char what[1200];
	int rc;

	if ((rc = bcd_identity_load(cfg, &id, &m)) != 0) {
		check(r, FAIL, "identity", m.text,
		      rc == BC_ERR_NOT_FOUND ? "join: bcd join --token-file FILE"
		                             : "join again: bcd join --reset --yes, then bcd join");
		return;
	}
	snprintf(what, sizeof(what), "%s %s in %s", id.role, id.node_id, cfg->data_dir);
	check(r, OK, "identity", what, NULL);
	check_window(r, &id);
	check_node_key(r, cfg, &id);
	check_current(r, pins, &id);
	bcd_identity_free(&id);
}

/* --json: {"status": worst, "ok": no failure, "checks": [{name, status, message,
 * hint}]}. */
static int print_json(struct report *r)
{
	json_t *j = json_pack("{s:s, s:b, s:O}", "status", verdict_words[r->worst], "ok",
	                      r->worst != FAIL, "checks", r->checks);
	char *text = j != NULL && !r->nomem ? bc_json_dump(j) : NULL;

	if (text != NULL)
		printf("%s\n", text);
	free(text);
	json_decref(j);
	return text != NULL ? 0 : BC_ERR_NOMEM;
}

static void run_checks(struct report *r, const char *path)
{
	struct bcd_config cfg;
	struct bc_client_pins pins;
	struct bcd_msg why = {""};
	int answered = 0;

	memset(&pins, 0, sizeof(pins));
	if (bcd_config_load(path, &cfg, &why) != 0) {
		check(r, FAIL, "config", why.text,
		      "write it with better-compute daemon config --bcd-dir");
		return;
	}
	if (bcd_pins_from_config(&cfg, &pins, &why) != 0) {
		check(r, FAIL, "config", why.text,
		      "write it with better-compute daemon config --bcd-dir");
	} else {
		check(r, OK, "config", cfg.path, NULL);
		check_pins(r, &pins);
		answered = check_server(r, &pins);
	}
	check_tpm(r, &cfg);
	check_identity(r, &cfg, answered ? &pins : NULL);
	bc_client_pins_free(&pins);
	bcd_config_free(&cfg);
}

int bcd_cmd_doctor(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	struct report r = {OK, NULL, 0};
	int rc = 0;

	if (o->json && (r.checks = json_array()) == NULL)
		return BC_ERR_NOMEM;
	run_checks(&r, o->config);
	if (r.checks != NULL && (rc = print_json(&r)) != 0)
		bcd_say(m, "out of memory printing the checks");
	json_decref(r.checks);
	*exit_status = r.worst == FAIL ? 1 : 0;
	return rc;
}
