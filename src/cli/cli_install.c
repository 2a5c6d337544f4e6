/* What the agent, bcd, needs on a machine: `daemon config --bcd-dir DIR` writes its
 * config.toml and ca.pem; `daemon install-script` prints a POSIX sh script that
 * installs bcd, that config and its systemd unit, joins the machine and (re)starts the
 * unit, and that works again as an upgrade. Both start from GET /v1/daemon-config.
 *
 * The config is TOML without multi-line strings, so the pinned keys go in as single-
 * line base64 of their SPKI DER. Everything from the server is checked before it is
 * written into a file or a script: keys parse, strings hold no quote, backslash or
 * control character the formats would have to escape. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bc/client.h"
#include "bc/codec.h"
#include "bc/crypto.h"
#include "bc/wire.h"
#include "cli/cli.h"

#define DEFAULT_DATA_DIR "/var/lib/bcd"
/* the unit's data directory line, replaced by --data-dir's */
#define UNIT_DATA_DIR DEFAULT_DATA_DIR

/* A copy of packaging/bcd.service: keep the two in step. */
static const char unit_text[] =
    "# bcd, the Better Compute agent (installed by better-compute daemon install-script)\n"
    "[Unit]\n"
    "Description=Better Compute agent (bcd node)\n"
    "Wants=network-online.target bcd-helper.service\n"
    "After=network-online.target bcd-helper.service\n"
    "\n"
    "[Service]\n"
    "Type=simple\n"
    "ExecStart=/usr/local/bin/bcd node --config /etc/bcd/config.toml\n"
    "Restart=on-failure\n"
    "RestartSec=10s\n"
    "User=bcd\n"
    "Group=bcd\n"
    "StateDirectory=bcd\n"
    "StateDirectoryMode=0700\n"
    "ReadWritePaths=" UNIT_DATA_DIR "\n"
    "UMask=0077\n"
    "NoNewPrivileges=yes\n"
    "ProtectSystem=strict\n"
    "ProtectHome=yes\n"
    "PrivateTmp=yes\n"
    "PrivateDevices=yes\n"
    "ProtectKernelTunables=yes\n"
    "ProtectKernelModules=yes\n"
    "ProtectKernelLogs=yes\n"
    "ProtectControlGroups=yes\n"
    "ProtectClock=yes\n"
    "ProtectHostname=yes\n"
    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n"
    "RestrictNamespaces=yes\n"
    "RestrictRealtime=yes\n"
    "RestrictSUIDSGID=yes\n"
    "LockPersonality=yes\n"
    "MemoryDenyWriteExecute=yes\n"
    "SystemCallArchitectures=native\n"
    "SystemCallFilter=@system-service\n"
    "SystemCallFilter=~@privileged @resources\n"
    "CapabilityBoundingSet=\n"
    "AmbientCapabilities=\n"
    "\n"
    "[Install]\n"
    "WantedBy=multi-user.target\n";

/* A copy of packaging/bcd-helper.service: keep the two in step. */
static const char helper_unit_text[] =
    "# bcd helper, the TPM for bcd node (installed by better-compute daemon install-script)\n"
    "[Unit]\n"
    "Description=Better Compute agent's TPM helper (bcd helper)\n"
    "Before=bcd.service\n"
    "\n"
    "[Service]\n"
    "Type=simple\n"
    "ExecStart=/usr/local/bin/bcd helper --config /etc/bcd/config.toml\n"
    "Restart=on-failure\n"
    "RestartSec=5s\n"
    "RuntimeDirectory=bcd\n"
    "RuntimeDirectoryMode=0755\n"
    "UMask=0077\n"
    "NoNewPrivileges=yes\n"
    "ProtectSystem=strict\n"
    "ProtectHome=yes\n"
    "PrivateTmp=yes\n"
    "PrivateNetwork=yes\n"
    "DevicePolicy=closed\n"
    "DeviceAllow=/dev/tpmrm0 rw\n"
    "ProtectKernelTunables=yes\n"
    "ProtectKernelModules=yes\n"
    "ProtectKernelLogs=yes\n"
    "ProtectControlGroups=yes\n"
    "ProtectClock=yes\n"
    "ProtectHostname=yes\n"
    "RestrictAddressFamilies=AF_UNIX\n"
    "RestrictNamespaces=yes\n"
    "RestrictRealtime=yes\n"
    "RestrictSUIDSGID=yes\n"
    "LockPersonality=yes\n"
    "MemoryDenyWriteExecute=yes\n"
    "SystemCallArchitectures=native\n"
    "SystemCallFilter=@system-service\n"
    "SystemCallFilter=~@privileged @resources\n"
    "CapabilityBoundingSet=CAP_CHOWN\n"
    "AmbientCapabilities=\n"
    "\n"
    "[Install]\n"
    "WantedBy=multi-user.target\n";

/* Printable ASCII without ", \ or ' : safe inside a TOML basic string and a sh
 * single-quoted string alike. */
static int plain(const char *s)
{
	if (s == NULL || s[0] == '\0')
		return 0;
	for (const char *p = s; *p != '\0'; p++)
		if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\' || *p == '\'')
			return 0;
	return 1;
}

/* A PEM public key from the server as one line of base64 SPKI DER. */
static int key_b64(const char *pem, char **out)
{
	EVP_PKEY *k = NULL;
	uint8_t *der = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (pem == NULL || (rc = bc_pubkey_from_pem(pem, strlen(pem), &k)) != 0 ||
	    (rc = bc_key_spki(k, &der, &len)) != 0) {
		EVP_PKEY_free(k);
		return BC_ERR_INVALID;
	}
	if ((*out = bc_b64_encode(der, len)) == NULL)
		rc = BC_ERR_NOMEM;
	EVP_PKEY_free(k);
	free(der);
	return rc;
}

/* config.toml and ca.pem for bcd from the daemon-config answer (both malloc'd). */
static int bcd_files(struct cli *c, const json_t *j, const char *data_dir, char **toml, char **ca)
{
	const char *server = cli_jstr(j, "server"), *kid = cli_jstr(j, "joinSigningKeyId");
	const char *td = cli_jstr(j, "trustDomain"), *bundle = cli_jstr(j, "caBundle");
	char *sign = NULL, *enc = NULL;
	int rc;

	*toml = *ca = NULL;
	if (!plain(server) || !plain(kid) || !plain(td) || bundle == NULL ||
	    key_b64(cli_jstr(j, "joinSigningKey"), &sign) != 0 ||
	    key_b64(cli_jstr(j, "joinEncryptionKey"), &enc) != 0) {
		rc = cli_fail(c, BC_ERR_INVALID,
		              "the server's daemon config is not what this CLI "
		              "expects (server, joinSigningKeyId, keys, caBundle, trustDomain); is "
		              "--server a `" CLI_NAME " serve` of this version?");
		goto out;
	}
	if (asprintf(toml,
	             "# bcd's config, from `" CLI_NAME " daemon config --bcd-dir` (docs/agent.md)\n"
	             "server = \"%s\"\n"
	             "join_signing_key_id = \"%s\"\n"
	             "join_signing_key = \"%s\"\n"
	             "join_encryption_key = \"%s\"\n"
	             "trust_domain = \"%s\"\n"
	             "ca_bundle = \"ca.pem\"\n"
	             "data_dir = \"%s\"\n",
	             server, kid, sign, enc, td, data_dir) < 0 ||
	    (*ca = strdup(bundle)) == NULL) {
		*toml = NULL;
		rc = BC_ERR_NOMEM;
		goto out;
	}
	rc = 0;
out:
	free(sign);
	free(enc);
	return rc;
}

static int data_dir_opt(struct cli *c, const char **out)
{
	const char *d = cli_opt(c, "data-dir");

	*out = d != NULL ? d : DEFAULT_DATA_DIR;
	if (d != NULL && (d[0] != '/' || !plain(d)))
		return cli_usage(c, "--data-dir: an absolute path without quotes or backslashes");
	return 0;
}

int cli_bcd_files(struct cli *c, char **toml, char **ca, char **server)
{
	const char *data_dir;
	struct cli_resp r;
	int rc;

	*toml = *ca = NULL;
	if (server != NULL)
		*server = NULL;
	if ((rc = data_dir_opt(c, &data_dir)) != 0)
		return rc;
	if ((rc = cli_api(c, "GET", "/v1/daemon-config", NULL, &r)) != 0)
		return rc;
	rc = bcd_files(c, r.json, data_dir, toml, ca);
	/* bcd_files held it to plain() */
	if (rc == 0 && server != NULL && (*server = strdup(cli_jstr(r.json, "server"))) == NULL)
		rc = BC_ERR_NOMEM;
	cli_resp_free(&r);
	return rc;
}

static int fetch_files(struct cli *c, char **toml, char **ca)
{
	return cli_bcd_files(c, toml, ca, NULL);
}

int cli_daemon_config_bcd(struct cli *c, const char *dir)
{
	char *toml = NULL, *ca = NULL, *tp = NULL, *cp = NULL;
	int rc;

	if (cli_opt(c, "out") != NULL)
		return cli_usage(c, "--out and --bcd-dir do not go together");
	if ((tp = cli_join_path(dir, "config.toml")) == NULL ||
	    (cp = cli_join_path(dir, "ca.pem")) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	/* a joined machine's config names its data directory: replacing it with the
	 * default would strand its identity, so that one is never guessed */
	if (cli_exists(tp) && cli_flag(c, "force") && cli_opt(c, "data-dir") == NULL) {
		rc = cli_usage(c,
		               "--force replaces %s: give --data-dir too (the data_dir it names "
		               "is not guessed)",
		               tp);
		goto out;
	}
	if ((rc = cli_out_check(c, tp)) != 0 || (rc = cli_out_check(c, cp)) != 0 ||
	    (rc = fetch_files(c, &toml, &ca)) != 0)
		goto out;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		rc = cli_fail(c, BC_ERR_IO, "cannot make %s: %s; check --bcd-dir", dir,
		              strerror(errno));
		goto out;
	}
	/* the CA first: a config.toml names it */
	if ((rc = cli_write_file(cp, ca, strlen(ca), 0644, cli_out_flags(c))) != 0 ||
	    (rc = cli_write_file(tp, toml, strlen(toml), 0644, cli_out_flags(c))) != 0) {
		rc = cli_fail(c, rc, "cannot write into %s: %s; check --bcd-dir", dir,
		              strerror(errno));
		goto out;
	}
	if (c->json)
		rc = cli_print_json(json_pack("{s:s, s:s}", "config", tp, "caBundle", cp));
	else
		printf("Wrote bcd's config to %s and its CA bundle to %s.\n", tp, cp);
out:
	free(toml);
	free(ca);
	free(tp);
	free(cp);
	return rc;
}

/* ---- install-script ---- */

static const char script_head[] =
    "#!/bin/sh\n"
    "# Installs or upgrades bcd, the Better Compute agent, on this machine (as root).\n"
    "# Written by `" CLI_NAME " daemon install-script`; run it again to upgrade: an\n"
    "# installed machine that has joined needs no token the second time.\n"
    "#   join-token: sh install-bcd.sh < token     or  sh install-bcd.sh --token-file FILE\n"
    "#   tpm:        sh install-bcd.sh             (needs /dev/tpmrm0; reads no token)\n"
    "#   cloud-iid:  sh install-bcd.sh             (the cloud's instance identity; no token)\n"
    "#   provisioned: sh install-bcd.sh --token-file FILE (the single-use token of a deploy\n"
    "#               or a provider bootstrap; the machine's product UUID binds it)\n"
    "# BCD_ROOT prefixes every path it installs to and SYSTEMCTL replaces systemctl\n"
    "# (tests: BCD_ROOT=/tmp/x SYSTEMCTL=true).\n"
    "set -eu\n";

static const char script_body[] =
    "ROOT=${BCD_ROOT:-}\n"
    "# the data directory is under BCD_ROOT too (in the config this script writes and runs)\n"
    "DATA=$ROOT$DATA_DIR\n"
    "case $DATA in *[!A-Za-z0-9._/+-]*) echo \"install-bcd: the data directory $DATA (BCD_ROOT "
    "and --data-dir): letters, digits and ._/+- only\" >&2; exit 2 ;; esac\n"
    "SYSTEMCTL=${SYSTEMCTL:-systemctl}\n"
    "CONFIG=$ROOT/etc/bcd/config.toml\n"
    "BCD=$ROOT/usr/local/bin/bcd\n"
    "TOKEN_FILE=\n"
    "TOKEN=\n"
    "die() { echo \"install-bcd: $*\" >&2; exit 1; }\n"
    "while [ $# -gt 0 ]; do\n"
    "\tcase $1 in\n"
    "\t--token-file) [ $# -ge 2 ] || die \"--token-file needs a file\"; TOKEN_FILE=$2; shift 2 ;;\n"
    "\t--token-file=*) TOKEN_FILE=${1#--token-file=}; shift ;;\n"
    "\t*) die \"unknown argument $1 (the token goes on standard input or in --token-file)\" ;;\n"
    "\tesac\n"
    "done\n"
    "if [ \"$ATTESTOR\" = " BC_WIRE_ATTESTOR_TPM " ]; then\n"
    "\t[ -z \"$TOKEN_FILE\" ] || die \"--token-file does not go with the " BC_WIRE_ATTESTOR_TPM
    " attestor: the TPM is "
    "the credential\"\n"
    "\t[ -e \"$ROOT/dev/tpmrm0\" ] || die \"no TPM at $ROOT/dev/tpmrm0: this script joins with the "
    "TPM; use the " BC_WIRE_ATTESTOR_JOIN_TOKEN " script instead\"\n"
    "elif [ \"$ATTESTOR\" = " BC_WIRE_ATTESTOR_CLOUD_IID " ]; then\n"
    "\t[ -z \"$TOKEN_FILE\" ] || die \"--token-file does not go with " BC_WIRE_ATTESTOR_CLOUD_IID
    ": the instance "
    "identity is the credential\"\n"
    "elif [ \"$ATTESTOR\" = " BC_WIRE_ATTESTOR_PROVISIONED " ]; then\n"
    "\t[ -n \"$TOKEN_FILE\" ] || die \"the " BC_WIRE_ATTESTOR_PROVISIONED
    " attestor reads its single-use token from "
    "--token-file FILE\"\n"
    "\t[ -r \"$TOKEN_FILE\" ] || die \"cannot read the token file $TOKEN_FILE\"\n"
    "elif [ -n \"$TOKEN_FILE\" ]; then\n"
    "\t[ -r \"$TOKEN_FILE\" ] || die \"cannot read the token file $TOKEN_FILE\"\n"
    "elif [ ! -t 0 ]; then\n"
    "\tIFS= read -r TOKEN || true\n"
    "fi\n"
    "# bcd node runs as the unprivileged user bcd and reaches the TPM only through bcd helper\n"
    "# (root); USERADD, GPASSWD, GETENT and CHOWN replace the tools (tests)\n"
    "USERADD=${USERADD:-useradd}\n"
    "GPASSWD=${GPASSWD:-gpasswd}\n"
    "GETENT=${GETENT:-getent}\n"
    "CHOWN=${CHOWN:-chown}\n"
    "if ! $GETENT passwd bcd >/dev/null; then\n"
    "\t$USERADD --system --user-group --no-create-home --home-dir /nonexistent --shell "
    "/usr/sbin/nologin bcd || die \"cannot make the user bcd\"\n"
    "fi\n"
    "# scripts before the helper put bcd in the tss group (it could open /dev/tpmrm0): no more\n"
    "if $GETENT group tss | cut -d: -f4 | tr ',' '\\n' | grep -qx bcd; then\n"
    "\t$GPASSWD -d bcd tss >/dev/null || die \"cannot take the user bcd out of the tss group\"\n"
    "fi\n"
    "umask 022\n"
    "mkdir -p \"$ROOT/usr/local/bin\" \"$ROOT/etc/bcd\" \"$ROOT/etc/systemd/system\" || die "
    "\"cannot make the directories under ${ROOT:-/}\"\n"
    "mkdir -p -m 0700 \"$DATA\" || die \"cannot make $DATA\"\n"
    "# every file through a temporary name and a rename: an upgrade never leaves half a file\n"
    "put() {\n"
    "\tt=$1.new.$$\n"
    "\tcat >\"$t\" && chmod \"$2\" \"$t\" && mv -f \"$t\" \"$1\" || { rm -f \"$t\"; die \"cannot "
    "write $1\"; }\n"
    "}\n"
    "sha256_of() {\n"
    "\tif command -v sha256sum >/dev/null 2>&1; then sha256sum <\"$1\" | cut -d' ' -f1\n"
    "\telse openssl dgst -sha256 -r <\"$1\" | cut -d' ' -f1; fi\n"
    "}\n"
    "# the binary pinned by its SHA-256: anything else is removed, not installed\n"
    "pinned() {\n"
    "\t[ -z \"$BCD_SHA256\" ] && return 0\n"
    "\tgot=$(sha256_of \"$1\") || got=\n"
    "\t[ \"$got\" = \"$BCD_SHA256\" ] && return 0\n"
    "\trm -f \"$1\"\n"
    "\tdie \"refusing to install bcd from $2: its SHA-256 is ${got:-unknown}, not the pinned "
    "$BCD_SHA256 (a different or tampered binary: print a new script for this release)\"\n"
    "}\n"
    "if [ -n \"$BCD_URL\" ]; then\n"
    "\tcurl -fsSL --proto '=https' --proto-redir '=https' -o \"$BCD.new.$$\" \"$BCD_URL\" || "
    "{ rm -f \"$BCD.new.$$\"; die \"cannot download bcd from $BCD_URL\"; }\n"
    "\tpinned \"$BCD.new.$$\" \"$BCD_URL\"\n"
    "\tchmod 0755 \"$BCD.new.$$\" && mv -f \"$BCD.new.$$\" \"$BCD\" || die \"cannot install "
    "$BCD\"\n"
    "else\n"
    "\t[ -r \"$BCD_PATH\" ] || die \"cannot read $BCD_PATH (--bcd-path)\"\n"
    "\tcat <\"$BCD_PATH\" >\"$BCD.new.$$\" || { rm -f \"$BCD.new.$$\"; die \"cannot copy "
    "$BCD_PATH\"; }\n"
    "\tpinned \"$BCD.new.$$\" \"$BCD_PATH\"\n"
    "\tchmod 0755 \"$BCD.new.$$\" && mv -f \"$BCD.new.$$\" \"$BCD\" || die \"cannot install "
    "$BCD\"\n"
    "fi\n";

static const char script_tail[] =
    "# join before the unit (re)starts; an identity that loads answers \"already joined\"\n"
    "if [ \"$ATTESTOR\" = " BC_WIRE_ATTESTOR_TPM " ]; then\n"
    "\t\"$BCD\" join --config \"$CONFIG\" --attestor " BC_WIRE_ATTESTOR_TPM
    " </dev/null || die \"bcd join failed "
    "(above); fix it and run this script again\"\n"
    "elif [ \"$ATTESTOR\" = " BC_WIRE_ATTESTOR_CLOUD_IID " ]; then\n"
    "\t\"$BCD\" join --config \"$CONFIG\" --attestor " BC_WIRE_ATTESTOR_CLOUD_IID
    " </dev/null || die \"bcd join "
    "failed (above); fix it and run this script again\"\n"
    "elif [ \"$ATTESTOR\" = " BC_WIRE_ATTESTOR_PROVISIONED " ]; then\n"
    "\t\"$BCD\" join --config \"$CONFIG\" --attestor " BC_WIRE_ATTESTOR_PROVISIONED
    " --token-file \"$TOKEN_FILE\" "
    "</dev/null || die \"bcd join failed (above); the token is spent only by a join that "
    "succeeds: fix it and run this script again\"\n"
    "elif [ -n \"$TOKEN_FILE\" ]; then\n"
    "\t\"$BCD\" join --config \"$CONFIG\" --token-file \"$TOKEN_FILE\" </dev/null || die \"bcd "
    "join failed (above); fix it and run this script again\"\n"
    "elif [ -n \"$TOKEN\" ]; then\n"
    "\tBCD_JOIN_TOKEN=$TOKEN \"$BCD\" join --config \"$CONFIG\" </dev/null || die \"bcd join "
    "failed (above); fix it and run this script again\"\n"
    "else\n"
    "\t\"$BCD\" join --config \"$CONFIG\" </dev/null || die \"bcd join failed (above): give the "
    "token on standard input or with --token-file\"\n"
    "fi\n"
    "TOKEN=\n"
    "# bcd join ran as root: the identity is bcd node's\n"
    "$CHOWN -R bcd:bcd \"$DATA\" || die \"cannot give $DATA to the user bcd\"\n"
    "$SYSTEMCTL daemon-reload\n"
    "$SYSTEMCTL enable bcd-helper.service bcd.service\n"
    "$SYSTEMCTL restart bcd-helper.service\n"
    "$SYSTEMCTL restart bcd.service\n"
    "echo \"install-bcd: bcd is installed and running; check it with: bcd doctor --config "
    "$CONFIG\"\n";

/* One heredoc that writes a file through filter (a command the text is piped through,
 * or NULL); its text must not hold the end marker's line. */
static int heredoc_via(FILE *f, const char *filter, const char *dest, const char *mode,
                       const char *text)
{
	/* no line of the text may be the marker, last line included */
	for (const char *l = text; *l != '\0';) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (n == 7 && strncmp(l, "BCD_EOF", 7) == 0)
			return BC_ERR_INVALID;
		if (nl == NULL)
			break;
		l = nl + 1;
	}
	if (filter != NULL)
		fprintf(f, "%s <<'BCD_EOF' | put \"%s\" %s\n", filter, dest, mode);
	else
		fprintf(f, "put \"%s\" %s <<'BCD_EOF'\n", dest, mode);
	fprintf(f, "%s%sBCD_EOF\n", text,
	        text[0] != '\0' && text[strlen(text) - 1] == '\n' ? "" : "\n");
	return 0;
}

static int heredoc(FILE *f, const char *dest, const char *mode, const char *text)
{
	return heredoc_via(f, NULL, dest, mode, text);
}

/* The SHA-256 of a local file, in lower-case hex, into out[65]. */
static int file_sha256(struct cli *c, const char *path, char out[static 65])
{
	unsigned char buf[65536], md[32];
	unsigned mdlen = 0;
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	FILE *f = fopen(path, "rb");
	size_t n;
	int ok = x != NULL && f != NULL && EVP_DigestInit_ex(x, bc_crypto_sha256(), NULL) == 1;

	while (ok && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		ok = EVP_DigestUpdate(x, buf, n) == 1;
	ok = ok && !ferror(f) && EVP_DigestFinal_ex(x, md, &mdlen) == 1 && mdlen == 32;
	if (f != NULL)
		fclose(f);
	EVP_MD_CTX_free(x);
	if (!ok)
		return cli_usage(c, "--bcd-file %s: cannot read it (%s)", path,
		                 errno ? strerror(errno) : "read error");
	for (size_t i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* --bcd-sha256 HEX or --bcd-file FILE: the binary's pin, lower-case hex into out[65];
 * "" when neither (only with --bcd-path). */
static int pin_opt(struct cli *c, const char *url, char out[static 65])
{
	const char *hex = cli_opt(c, "bcd-sha256"), *file = cli_opt(c, "bcd-file");

	out[0] = '\0';
	if (hex != NULL && file != NULL)
		return cli_usage(c, "--bcd-sha256 and --bcd-file do not go together");
	if (file != NULL)
		return file_sha256(c, file, out);
	if (hex == NULL)
		return url == NULL
		           ? 0
		           : cli_usage(c, "--bcd-url needs the binary's pin: --bcd-sha256 HEX "
		                          "or --bcd-file FILE (a local copy of that binary)");
	if (strlen(hex) != 64 || strspn(hex, "0123456789abcdefABCDEF") != 64)
		return cli_usage(c, "--bcd-sha256: 64 hex digits (sha256sum bcd)");
	for (size_t i = 0; i <= 64; i++)
		out[i] = (char)(hex[i] >= 'A' && hex[i] <= 'F' ? hex[i] - 'A' + 'a' : hex[i]);
	return 0;
}

static int script_opts(struct cli *c, const char **attestor, const char **url, const char **path,
                       char pin[static 65])
{
	const struct bc_client_attestor *a;
	char names[128];

	*attestor =
	    cli_opt(c, "attestor") != NULL ? cli_opt(c, "attestor") : BC_WIRE_ATTESTOR_JOIN_TOKEN;
	*url = cli_opt(c, "bcd-url");
	*path = cli_opt(c, "bcd-path");
	/* the script runs bcd join --attestor with it: one of bcd's that a first join uses */
	if ((a = bc_client_attestor(*attestor)) == NULL || !(a->flags & BC_CA_INSTALL))
		return cli_usage(c, "--attestor: one of %s",
		                 bc_client_attestor_names(BC_CA_INSTALL, names, sizeof(names)));
	if ((*url == NULL) == (*path == NULL))
		return cli_usage(c, "give --bcd-url URL (where the machine downloads bcd) or "
		                    "--bcd-path PATH (a bcd already on the machine)");
	if (*url != NULL &&
	    (!plain(*url) || strncmp(*url, "https://", 8) != 0 || (*url)[8] == '\0'))
		return cli_usage(c,
		                 "--bcd-url: an https:// URL (never http://: the download must be "
		                 "authenticated) without quotes or backslashes");
	if (*path != NULL && (!plain(*path) || (*path)[0] != '/'))
		return cli_usage(c, "--bcd-path: an absolute path without quotes or backslashes");
	return pin_opt(c, *url, pin);
}

/* cloud-iid: [cloud] provider (and audience) in the config, so bcd join and bcd node's
 * re-joins know where the identity comes from. */
static int add_cloud(struct cli *c, const char *attestor, char **toml)
{
	const char *p = cli_opt(c, "provider"), *aud = cli_opt(c, "audience");
	const struct bc_client_attestor *a = bc_client_attestor(attestor);
	char *t = NULL, names[128];

	if (a == NULL || !(a->flags & BC_CA_PROVIDER)) {
		if (p != NULL || aud != NULL)
			return cli_usage(
			    c, "--provider and --audience go with --attestor %s",
			    bc_client_attestor_names(BC_CA_PROVIDER, names, sizeof(names)));
		return 0;
	}
	if (p == NULL || (strcmp(p, "gcp") && strcmp(p, "aws") && strcmp(p, "oidc")))
		return cli_usage(c, "--attestor %s: --provider gcp, aws or oidc", attestor);
	/* an instance identity document carries no audience: one given is a mistake, and
	 * whatever is given is held to plain() before it goes into the config */
	if (strcmp(p, "aws") == 0 && aud != NULL)
		return cli_usage(c, "--provider aws takes no --audience: an AWS instance identity "
		                    "document carries none");
	if (strcmp(p, "aws") != 0 && !plain(aud))
		return cli_usage(
		    c, "--provider gcp and oidc: --audience A, the audience of the "
		       "server's [attestors.cloud-iid.<provider>] (no quotes or backslashes)");
	if (asprintf(&t, "%s\n[cloud]\nprovider = \"%s\"\n%s%s%s", *toml, p,
	             aud ? "audience = \"" : "", aud ? aud : "", aud ? "\"\n" : "") < 0)
		return BC_ERR_NOMEM;
	free(*toml);
	*toml = t;
	return 0;
}

/* The installed bcd node runs unprivileged: its config names bcd helper. */
static int add_helper(char **toml)
{
	char *t = NULL;

	if (asprintf(&t, "%s\n[helper]\nsocket = \"/run/bcd/helper.sock\"\nuser = \"bcd\"\n",
	             *toml) < 0)
		return BC_ERR_NOMEM;
	free(*toml);
	*toml = t;
	return 0;
}

int cli_cmd_daemon_install_script(struct cli *c)
{
	const char *attestor, *url, *path, *data_dir;
	char *toml = NULL, *ca = NULL, *text = NULL, pin[65];
	size_t len = 0;
	FILE *f = NULL;
	int rc;

	if ((rc = script_opts(c, &attestor, &url, &path, pin)) != 0 ||
	    (rc = data_dir_opt(c, &data_dir)) != 0)
		return rc;
	/* the script puts it into sed and the unit: what needs no quoting anywhere */
	if (strspn(data_dir,
	           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/+-") !=
	    strlen(data_dir))
		return cli_usage(c,
		                 "--data-dir: letters, digits and ._/+- only in an install script");
	if ((rc = fetch_files(c, &toml, &ca)) != 0 || (rc = add_helper(&toml)) != 0 ||
	    (rc = add_cloud(c, attestor, &toml)) != 0)
		goto out;
	/* built in memory and printed whole, so a failure prints no half script */
	if ((f = open_memstream(&text, &len)) == NULL) {
		rc = BC_ERR_NOMEM;
		goto out;
	}
	fprintf(
	    f, "%sATTESTOR='%s'\nBCD_URL='%s'\nBCD_PATH='%s'\nBCD_SHA256='%s'\nDATA_DIR='%s'\n%s",
	    script_head, attestor, url ? url : "", path ? path : "", pin, data_dir, script_body);
	/* the data directory under BCD_ROOT in the config, the machine's in the unit */
	if ((rc = heredoc_via(f, "sed \"s|^data_dir = .*|data_dir = \\\"$DATA\\\"|\"", "$CONFIG",
	                      "0644", toml)) != 0 ||
	    (rc = heredoc(f, "$ROOT/etc/bcd/ca.pem", "0644", ca)) != 0 ||
	    (rc = heredoc(f, "$ROOT/etc/systemd/system/bcd-helper.service", "0644",
	                  helper_unit_text)) != 0 ||
	    (rc = heredoc_via(
	         f, "sed \"s|^ReadWritePaths=" UNIT_DATA_DIR "$|ReadWritePaths=$DATA_DIR|\"",
	         "$ROOT/etc/systemd/system/bcd.service", "0644", unit_text)) != 0) {
		rc = cli_fail(c, rc, "the server's daemon config cannot be embedded in a script");
		goto out;
	}
	fputs(script_tail, f);
	if (fclose(f) != 0) {
		f = NULL;
		rc = BC_ERR_NOMEM;
		goto out;
	}
	f = NULL;
	if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
		rc = cli_fail(c, BC_ERR_IO, "cannot write the script: %s", strerror(errno));
out:
	if (f != NULL)
		fclose(f);
	free(text);
	free(toml);
	free(ca);
	return rc;
}
