/* pki init, and the key files it shares with init: the server secret and the sealed
 * PKI bundle. Neither is ever overwritten: replacing them would cut off every node. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "bc/buf.h"
#include "bc/codec.h"
#include "bc/clock.h"
#include "bc/crypto.h"
#include "bc/files.h"
#include "bc/pki.h"
#include "cli/cli.h"
#include "server/config.h"
#include "server/server.h"

#define DEFAULT_TRUST_DOMAIN "bc.internal"

static int write_failed(struct cli *c, int rc, const char *path)
{
	if (rc == BC_ERR_CONFLICT)
		return cli_fail(c, rc,
		                "%s exists: keys are never overwritten; remove it yourself "
		                "only if you mean to start over",
		                path);
	return cli_fail(c, rc, "cannot write %s: %s; check the directory and its permissions", path,
	                strerror(errno));
}

int cli_new_secret(struct cli *c, const char *path, uint8_t secret[static 32])
{
	char line[66];
	int rc;

	if ((rc = bc_random(secret, 32)) != 0)
		return cli_fail(c, rc, "cannot get random bytes for the server secret: %s",
		                bc_err_str(rc));
	bc_hex_encode_to(secret, 32, line);
	line[64] = '\n';
	line[65] = '\0';
	if ((rc = cli_write_file(path, line, 65, 0600, CLI_WRITE_NOCLOBBER)) != 0)
		rc = write_failed(c, rc, path);
	OPENSSL_cleanse(line, sizeof(line));
	return rc;
}

int cli_new_bundle(struct cli *c, const char *path, const char *trust_domain,
                   const uint8_t secret[static 32], bc_pki **out)
{
	bc_pki *pki = NULL;
	char *text = NULL;
	int rc;

	*out = NULL;
	if ((rc = bc_pki_generate(trust_domain, &pki)) != 0) {
		if (rc == BC_ERR_INVALID)
			return cli_usage(c,
			                 "--trust-domain \"%s\" is not a DNS-like name "
			                 "([a-z0-9.-], 1 to 255 characters)",
			                 trust_domain);
		return cli_fail(c, rc, "cannot generate the PKI keys: %s", bc_err_str(rc));
	}
	if ((rc = bc_pki_seal(pki, secret, &text)) != 0) {
		rc = cli_fail(c, rc, "cannot seal the PKI bundle: %s", bc_err_str(rc));
		goto out;
	}
	if ((rc = cli_write_file(path, text, strlen(text), 0600, CLI_WRITE_NOCLOBBER)) != 0) {
		rc = write_failed(c, rc, path);
		goto out;
	}
	*out = pki;
	pki = NULL;
out:
	if (text != NULL)
		bc_freezero(text, strlen(text));
	if (pki != NULL)
		bc_pki_free(pki);
	return rc;
}

/* The secret server.toml names, made now when it does not exist yet. */
static int load_or_make_secret(struct cli *c, const char *path, uint8_t secret[static 32],
                               int *created)
{
	char err[256];
	int rc;

	*created = 0;
	if (!cli_exists(path)) {
		if ((rc = cli_new_secret(c, path, secret)) != 0)
			return rc;
		*created = 1;
		fprintf(stderr, CLI_NAME ": wrote a new server secret to %s (mode 0600)\n", path);
		return 0;
	}
	if ((rc = bc_server_secret_load(path, secret, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s; the secret file holds 64 hex characters", err);
	return 0;
}

int cli_cmd_pki_init(struct cli *c)
{
	const char *config, *td = cli_opt(c, "trust-domain");
	struct bc_server_config cfg;
	uint8_t secret[32];
	bc_pki *pki = NULL;
	char err[512];
	int rc, created = 0;

	memset(&cfg, 0, sizeof(cfg));
	if ((rc = cli_config_path(c, "whose pki_bundle to write", &config)) != 0)
		return rc;
	if ((rc = bc_server_config_load(config, &cfg, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s; check --config", err);
	if (cli_exists(cfg.pki_bundle)) {
		rc = write_failed(c, BC_ERR_CONFLICT, cfg.pki_bundle);
		goto out;
	}
	if ((rc = load_or_make_secret(c, cfg.secret_file, secret, &created)) != 0)
		goto out;
	td = td ? td : DEFAULT_TRUST_DOMAIN;
	if ((rc = cli_new_bundle(c, cfg.pki_bundle, td, secret, &pki)) != 0)
		goto out;
	if (c->json)
		rc = cli_print_json(json_pack("{s:s,s:s,s:s}", "pkiBundle", cfg.pki_bundle,
		                              "trustDomain", td, "secretFile", cfg.secret_file));
	else
		printf("Wrote the PKI bundle %s (trust domain %s), sealed under %s.\n",
		       cfg.pki_bundle, td, cfg.secret_file);
out:
	/* a secret made for a bundle that was never written protects nothing */
	if (rc != 0 && created)
		unlink(cfg.secret_file);
	OPENSSL_cleanse(secret, sizeof(secret));
	if (pki != NULL)
		bc_pki_free(pki);
	bc_server_config_free(&cfg);
	return rc;
}

/* pki bundle: the trust bundle /bundle serves, the node CAs of the store (no server
 * needed), for a relying party set up before the server runs. */
int cli_cmd_pki_bundle(struct cli *c)
{
	const char *config;
	struct bc_server_config cfg;
	bc_pki *pki = NULL;
	char err[512], *out = NULL;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	if ((rc = cli_config_path(c, "whose pki_bundle to read", &config)) != 0)
		return rc;
	if ((rc = bc_server_config_load(config, &cfg, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s; check --config", err);
	if ((rc = bc_server_pki_load(&cfg, &pki, err, sizeof(err))) != 0) {
		rc = cli_fail(c, rc, "%s", err);
		goto out;
	}
	if ((rc = cli_pki_store_cas(c, &cfg, pki)) != 0)
		goto out;
	if ((rc = bc_pki_trust_bundle(pki, cli_flag(c, "spiffe"), &out)) != 0) {
		rc = cli_fail(c, rc, "cannot make the trust bundle: %s", bc_err_str(rc));
		goto out;
	}
	fputs(out, stdout);
	if (out[0] != '\0' && out[strlen(out) - 1] != '\n')
		fputc('\n', stdout);
out:
	free(out);
	if (pki != NULL)
		bc_pki_free(pki);
	bc_server_config_free(&cfg);
	return rc;
}

/* pki check: what would break first, as bcd doctor does for an agent. */
#define CHECK_DAY_MS     (24LL * 3600 * 1000)
#define CHECK_TLS_FAIL_D 30  /* an operator's TLS certificate this close to its end */
#define CHECK_CA_WARN_D  365 /* a CA this close to its end */

enum check_level { CHECK_OK, CHECK_WARN, CHECK_FAIL };
static const char *const check_words[] = {"ok", "warn", "fail"};

struct checks {
	json_t *list;
	int worst;
};

static void check_add(struct checks *k, enum check_level lvl, const char *name, const char *msg)
{
	if ((int)lvl > k->worst)
		k->worst = (int)lvl;
	if (k->list != NULL)
		json_array_append_new(k->list, json_pack("{s:s,s:s,s:s}", "check", name, "status",
		                                         check_words[lvl], "message", msg));
	else
		printf("%-5s %-22s %s\n", check_words[lvl], name, msg);
}

static void check_ca(struct checks *k, const char *name, X509 *ca, int64_t now)
{
	char msg[160], na[32];
	const ASN1_TIME *end = X509_get0_notAfter(ca);
	int day = 0, sec = 0;

	if (end == NULL || ASN1_TIME_diff(&day, &sec, NULL, end) != 1) {
		check_add(k, CHECK_FAIL, name, "its notAfter does not read");
		return;
	}
	/* ASN1_TIME_diff counts from the system clock: move it by the test offset */
	day -= (int)(bc_clock_offset_ms() / CHECK_DAY_MS);
	bc_time_format_ms(now + (int64_t)day * CHECK_DAY_MS, na, sizeof(na));
	snprintf(msg, sizeof(msg), "expires in %d days (about %.10s)", day, na);
	check_add(k,
	          day <= 0                ? CHECK_FAIL
	          : day < CHECK_CA_WARN_D ? CHECK_WARN
	                                  : CHECK_OK,
	          name, msg);
}

static void check_tls(struct checks *k, const struct bc_server_config *cfg, const bc_pki *pki,
                      int64_t now)
{
	struct bc_server_tls t;
	char *pem = NULL, msg[256], na[32], at[32];
	size_t len;
	int64_t left;

	if (cfg->tls_cert == NULL) {
		check_add(k, CHECK_OK, "tls certificate", "none: plain HTTP on loopback");
		return;
	}
	if (bc_file_read(cfg->tls_cert, 1 << 20, BC_FILE_TEXT | BC_FILE_FOLLOW, &pem, &len) != 0 ||
	    bc_pki_server_tls_read(pki, pem, &t) != 0) {
		snprintf(msg, sizeof(msg), "%s does not read as a PEM certificate", cfg->tls_cert);
		check_add(k, CHECK_FAIL, "tls certificate", msg);
		free(pem);
		return;
	}
	free(pem);
	bc_time_format_ms(t.not_after_ms, na, sizeof(na));
	bc_time_format_ms(bc_server_tls_renew_at(&t), at, sizeof(at));
	left = (t.not_after_ms - now) / CHECK_DAY_MS;
	if (t.ours) {
		snprintf(msg, sizeof(msg),
		         "issued by the server TLS CA: the server renews it from %s (notAfter %s)",
		         at, na);
		check_add(k, CHECK_OK, "tls certificate", msg);
	} else if (now >= t.not_after_ms) {
		snprintf(msg, sizeof(msg),
		         "the operator's %s expired at %s: agents cannot connect; replace it and "
		         "restart",
		         cfg->tls_cert, na);
		check_add(k, CHECK_FAIL, "tls certificate", msg);
	} else {
		snprintf(
		    msg, sizeof(msg),
		    "the operator's %s expires in %lld days (%s); the server never replaces it: "
		    "replace it before then and restart",
		    cfg->tls_cert, (long long)left, na);
		check_add(k,
		          left < CHECK_TLS_FAIL_D             ? CHECK_FAIL
		          : now >= bc_server_tls_renew_at(&t) ? CHECK_WARN
		                                              : CHECK_OK,
		          "tls certificate", msg);
	}
	bc_server_tls_clear(&t);
}

int cli_cmd_pki_check(struct cli *c)
{
	const char *config;
	struct bc_server_config cfg;
	struct checks k = {0};
	struct bc_node_cas *cas;
	bc_pki *pki = NULL;
	char err[512];
	int64_t now = bc_now_ms();
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	if ((rc = cli_config_path(c, "to check", &config)) != 0)
		return rc;
	if ((rc = bc_server_config_load(config, &cfg, err, sizeof(err))) != 0)
		return cli_fail(c, rc, "%s; check --config", err);
	if ((rc = bc_server_pki_load(&cfg, &pki, err, sizeof(err))) != 0) {
		rc = cli_fail(c, rc, "%s", err);
		goto out;
	}
	if (c->json && (k.list = json_array()) == NULL) {
		rc = cli_fail(c, BC_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* the node CA that issues now, of the store's generations */
	if ((rc = cli_pki_store_cas(c, &cfg, pki)) != 0)
		goto out;
	cas = bc_pki_node_cas_get(pki);
	check_tls(&k, &cfg, pki, now);
	check_ca(&k, "node CA", cas != NULL ? cas->ca[cas->issuing].cert : pki->node_ca, now);
	bc_node_cas_put(cas);
	check_ca(&k, "server TLS CA", pki->tls_ca, now);
	if (c->json && (rc = cli_print_json(json_pack("{s:o,s:b}", "checks", k.list, "ok",
	                                              k.worst != CHECK_FAIL))) != 0)
		goto out;
	rc = k.worst == CHECK_FAIL ? BC_ERR_INVALID : 0;
out:
	if (pki != NULL)
		bc_pki_free(pki);
	bc_server_config_free(&cfg);
	return rc;
}
