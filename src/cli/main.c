/* better-compute: the control plane's command line. main() finds the command in
 * the table below, parses its options and runs it; only main() exits.
 *
 * Exit status: 0 success, 1 failure, 2 usage error. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc/log.h"
#include "cli/cli.h"
#include "server/serve.h"

static int cli_cmd_version(struct cli *c);
static int cli_cmd_completion(struct cli *c);

#define API CLI_F_API
#define TNT (CLI_F_API | CLI_F_TENANT)
/* the options of every paged list */
#define PAGE_HELP                                                                                  \
	"  --limit N            at most N rows (1 to 1000; default 100)\n"                         \
	"  --cursor C           the page a nextCursor or prevCursor names (--json shows both;\n"   \
	"                       a full page prints the next --cursor on stderr)\n"

/* the --config of the commands that work on the store or the PKI without a server
 * (cli_config_path) */
#define CONFIG_DEFAULT "                       (default: ./var/server.toml, when it exists)\n"

static const struct cli_cmd commands[] = {
    {"init", NULL,
     "[--dir var] [--trust-domain bc.internal] [--listen 127.0.0.1:8080] [--public-url URL]",
     "bootstrap a control plane in a directory (no server needed)",
     "dir= trust-domain= listen= public-url=", 0, 0, 0, cli_cmd_init,
     "  --dir DIR            where to write (default var): server.toml, secret, pki.bundle,\n"
     "                       bc.db, admin.key, tls-ca.pem, and tls.crt/tls.key for TLS\n"
     "  --trust-domain NAME  the SPIFFE trust domain of node certificates (default bc.internal)\n"
     "  --listen HOST:PORT   the server's address (default 127.0.0.1:8080); TLS unless loopback\n"
     "  --public-url URL     what agents use (default http://LISTEN on loopback, else https://)\n"
     "It refuses a DIR that holds a server.toml. On failure it removes what it wrote.\n",
     0},
    {"version", NULL, "", "print the version of better-compute", "", 0, 0, 0, cli_cmd_version, NULL,
     0},
    {"completion", NULL, "bash",
     "print a bash completion script (source it, or put it in /etc/bash_completion.d)", "", 1, 1, 0,
     cli_cmd_completion, NULL, 0},
    {"serve", NULL, "--config server.toml", "run the control plane", "", 0, 0, 0, NULL, NULL, 0},
    {"prune", NULL, "[--config server.toml] [--batch 5000] [--events-days N] [--audit-days N]",
     "delete expired and spent rows, old events and audit rows from the store (no server "
     "needed)",
     "config= batch= events-days= audit-days=", 0, 0, 0, cli_cmd_prune,
     "  --config FILE        the server.toml whose database to prune\n" CONFIG_DEFAULT
     "  --batch N            rows per transaction (default 5000)\n"
     "  --events-days N      delete events older than N days (default: event_retention_days\n"
     "                       of server.toml, 90; 0 keeps every event)\n"
     "  --audit-days N       delete audit rows older than N days (default:\n"
     "                       audit_retention_days of server.toml, 400; 0 keeps them)\n"
     "Deletes expired attestation uses, expired, spent or revoked tokens, decided or\n"
     "expired join requests, old events and audit rows, and certificates expired more\n"
     "than 90 days ago that are no node's current one, at database time, and prints\n"
     "the counts. The server does the same every prune_interval_seconds.\n",
     0},
    {"store", "copy", "--from <sqlite path> --to <postgres url> [--batch 500]",
     "copy a whole store into a new, empty database (no server needed)", "from= to= batch=", 0, 0,
     0, cli_cmd_store_copy,
     "  --from PATH          the SQLite database (stop its server first)\n"
     "  --to URL             the target, e.g. postgres://bc@db.example/bc: migrated, and\n"
     "                       refused unless every table is empty\n"
     "  --batch N            rows per INSERT (default 500)\n"
     "The target is written in one transaction: a copy that fails leaves it empty.\n",
     0},
    {"store", "migrate", "[--config server.toml] [--check]",
     "apply the schema migrations this better-compute holds, or list them (--check)",
     "config= check", 0, 0, 0, cli_cmd_store_migrate,
     "  --config FILE        the server.toml whose database to migrate\n" CONFIG_DEFAULT
     "  --check              print what would run and change nothing\n"
     "The server applies them at start too. A schema newer than this better-compute is\n"
     "refused, naming both versions.\n",
     0},
    {"store", "backup", "[--config server.toml] --out FILE [--force]",
     "copy a SQLite store into FILE while the server runs (SQLite's online backup)",
     "config= out= force", 0, 0, 0, cli_cmd_store_backup,
     "  --config FILE        the server.toml whose database to back up\n" CONFIG_DEFAULT
     "  --out FILE           the copy: a new file, mode 0600, fsynced; in place only when\n"
     "                       whole\n"
     "  --force              replace FILE if it exists\n"
     "For a PostgreSQL store it exits 2: use pg_dump or pg_basebackup (docs/server.md).\n",
     0},
    {"pki", "init", "[--config server.toml] [--trust-domain bc.internal]",
     "write the PKI bundle server.toml names, if it does not exist yet", "config= trust-domain=", 0,
     0, 0, cli_cmd_pki_init,
     "  --config FILE        the server.toml whose pki_bundle (and secret_file) to "
     "write\n" CONFIG_DEFAULT
     "  --trust-domain NAME  the SPIFFE trust domain (default bc.internal)\n"
     "The secret is made when secret_file does not exist. Existing keys are never\n"
     "overwritten.\n",
     0},
    {"pki", "bundle", "[--config server.toml] [--spiffe]",
     "print the trust bundle that GET /bundle serves (the node CAs), from the PKI bundle",
     "config= spiffe", 0, 0, 0, cli_cmd_pki_bundle,
     "  --config FILE        the server.toml whose pki_bundle (and secret_file) to "
     "read\n" CONFIG_DEFAULT
     "  --spiffe             print it as a SPIFFE trust bundle (GET /bundle/spiffe)\n"
     "Relying parties verify node certificates against it; see docs/server.md.\n",
     0},
    {"pki", "check", "[--config server.toml]",
     "check what expires: the TLS certificate (renewed by the server or the operator's), "
     "the CAs",
     "config=", 0, 0, 0, cli_cmd_pki_check,
     "  --config FILE        the server.toml whose [tls] cert and pki_bundle to "
     "check\n" CONFIG_DEFAULT
     "Exit 1 when a check fails: an operator's TLS certificate expired or within 30 days\n"
     "of it (warn from two thirds of its life), a CA expired (warn within a year).\n",
     0},
    {"pki", "rotate", "node-ca|join-signing|join-encryption [--config server.toml]",
     "prepare a new key: a node CA published in the trust bundle, or a join key announced to "
     "agents as next; it signs nothing yet",
     "config=", 1, 1, 0, cli_cmd_pki_rotate,
     "  --config FILE        the server.toml whose store (and pki_bundle, secret_file) to "
     "use\n" CONFIG_DEFAULT
     "Then `pki activate KIND` once relying parties fetched the bundle (node-ca) or agents\n"
     "renewed (join keys); see docs/server.md, \"PKI lifecycle\".\n",
     0},
    {"pki", "activate", "node-ca|join-signing|join-encryption [--config server.toml] [--id N]",
     "make the prepared key the one that signs new node certificates, signs answers, or new "
     "tokens are sealed to",
     "config= id=", 1, 1, 0, cli_cmd_pki_activate,
     "  --config FILE        the server.toml whose store to change\n" CONFIG_DEFAULT
     "  --id N               the generation (default: the prepared one)\n"
     "The keys before it still verify (node CA) or open tokens (join encryption) until\n"
     "retired.\n",
     0},
    {"pki", "retire",
     "node-ca|join-signing|join-encryption [--config server.toml] [--id N] [--force]",
     "retire an old key: a node CA once every certificate it signed has expired, a join key "
     "once agents renewed onto the next",
     "config= id= force", 1, 1, 0, cli_cmd_pki_retire,
     "  --config FILE        the server.toml whose store to change\n" CONFIG_DEFAULT
     "  --id N               the generation (default: the oldest active one that no longer\n"
     "                       issues or signs; a prepared one only by --id)\n"
     "  --force              a compromised key: a node CA now although its certificates may\n"
     "                       be unexpired (they are refused from then on); the current join\n"
     "                       key (by --id), a prepared one taking over at once\n",
     0},
    {"pki", "status", "[--config server.toml]",
     "list the generations of the node CA and the join keys: state, dates", "config=", 0, 0, 0,
     cli_cmd_pki_status,
     "  --config FILE        the server.toml whose store to read\n" CONFIG_DEFAULT, 0},
    {"api-keys", "create", "--name N [--role R] [--ttl 720h] [--tenant T]",
     "create an API key (shown once)", "name= role= ttl=", 0, 0, TNT, cli_cmd_api_keys_create,
     "  --name N             what the key is for (a person, a pipeline)\n"
     "  --role R             what it may call: admin (everything; the default), operator\n"
     "                       (all but API keys and tenants), viewer (read only), metrics\n"
     "                       (GET /metrics only, for a root tenant's scraper)\n"
     "  --ttl DURATION       refuse the key after this long: 1h, 30d, 720h (default: never)\n"
     "The key is printed once; the server keeps only its hash.\n",
     0},
    {"api-keys", "list", "[--tenant T]", "list API keys: created, expires, last used, revoked", "",
     0, 0, TNT, cli_cmd_api_keys_list, NULL, 0},
    {"api-keys", "revoke", "ID|NAME [--tenant T]", "revoke an API key: it is refused from now on",
     "", 1, 1, TNT, cli_cmd_api_keys_revoke, NULL, CLI_K_API_KEY},
    {"tenants", "list", "", "list tenants", "", 0, 0, API, cli_cmd_tenants_list, NULL, 0},
    {"tenants", "create", "NAME", "create a tenant (root key only)", "", 1, 1, API,
     cli_cmd_tenants_create, NULL, 0},
    {"tenants", "delete", "ID|NAME",
     "delete a tenant with nothing left in it (root admin key only)", "", 1, 1, API,
     cli_cmd_tenants_delete, NULL, CLI_K_TENANT},
    {"pools", "create", "NAME [--join-attestors a,b] [--policy JSON]", "create a pool",
     "join-attestors= policy=", 1, 1, TNT, cli_cmd_pools_create,
     "  --join-attestors a,b the attestors that may admit machines into the pool\n"
     "                       (policy.joinAttestors), e.g. tpm,x509pop\n"
     "  --policy JSON        the whole policy object, e.g. '{\"joinAttestors\":[\"tpm\"]}'\n",
     0},
    {"pools", "get", "ID|NAME", "show a pool", "", 1, 1, TNT, cli_cmd_pools_get, NULL, CLI_K_POOL},
    {"pools", "list", "", "list pools", "", 0, 0, TNT, cli_cmd_pools_list, NULL, 0},
    {"pools", "update", "ID [--name N] [--policy JSON] [--join-attestors a,b]",
     "rename a pool or change its policy (--join-attestors keeps the rest of the policy)",
     "name= policy= join-attestors=", 1, 1, TNT, cli_cmd_pools_update,
     "  --name N             a new name\n"
     "  --policy JSON        a new policy object: it replaces the old one whole\n"
     "  --join-attestors a,b set only policy.joinAttestors and keep the rest of the policy\n",
     CLI_K_POOL},
    {"pools", "delete", "ID|NAME",
     "delete a pool that no node, live token or open join request names", "", 1, 1, TNT,
     cli_cmd_pools_delete, NULL, CLI_K_POOL},
    {"sites", "create", "NAME", "create a site", "", 1, 1, TNT, cli_cmd_sites_create, NULL, 0},
    {"sites", "list", "", "list sites", "", 0, 0, TNT, cli_cmd_sites_list, NULL, 0},
    {"sites", "get", "ID|NAME", "show a site and who holds its boot lease (holder, epoch, expiry)",
     "", 1, 1, TNT, cli_cmd_sites_get, NULL, CLI_K_SITE},
    {"sites", "release-lease", "ID|NAME",
     "end the site's boot lease: another site node takes it at the next epoch", "", 1, 1, TNT,
     cli_cmd_sites_release_lease, NULL, CLI_K_SITE},
    {"sites", "delete", "ID|NAME",
     "delete a site that no node, live token, open join request or running commission names", "", 1,
     1, TNT, cli_cmd_sites_delete, NULL, CLI_K_SITE},
    {"tokens", "create",
     "--role node|site|provisioned (--pool ID|NAME | --site ID|NAME) [--uses N] [--ttl 1h] "
     "[--expect-product-uuid U] "
     "[--expect-mac M] [--expect-serial S] [--allow-reclaim] [--description D] [--out FILE "
     "[--force]]",
     "create a join token (its secret is shown once, or written to --out FILE)",
     "role= pool= site= uses= ttl= expect-product-uuid= expect-mac= expect-serial= "
     "allow-reclaim description= out= force",
     0, 0, TNT, cli_cmd_tokens_create,
     "  --role node|site     what the machine joins as; provisioned: a provider bootstrap's\n"
     "                       single-use token (--pool and --expect-product-uuid needed)\n"
     "  --pool ID            the pool of a node token      --site ID  the site of a site token\n"
     "  --uses N             how many joins it admits (1 to 10000; default 1)\n"
     "  --ttl DURATION       how long it is valid: 30m, 1h, 7d (default 1h)\n"
     "  --expect-product-uuid U, --expect-mac M, --expect-serial S\n"
     "                       admit only a machine that reports these\n"
     "  --allow-reclaim      let the token re-join a machine another node holds\n"
     "  --description D      a note shown in `tokens list`\n"
     "  --out FILE           write the secret to a new FILE (mode 0600) instead of printing it\n"
     "  --force              let --out replace an existing FILE\n",
     0},
    {"tokens", "list", "[--limit N] [--cursor C]", "list join tokens, a page at a time",
     "limit= cursor=", 0, 0, TNT, cli_cmd_tokens_list, PAGE_HELP, 0},
    {"tokens", "revoke", "ID", "revoke a join token", "", 1, 1, TNT, cli_cmd_tokens_revoke, NULL,
     0},
    {"join-requests", "list", "[--state pending|approved|denied|used] [--limit N] [--cursor C]",
     "list join requests (machines waiting for an operator, such as tpm enrollment)",
     "state= limit= cursor=", 0, 0, TNT, cli_cmd_join_requests_list,
     "  --state S            only requests in this state\n" PAGE_HELP, 0},
    {"join-requests", "approve", "ID", "approve a pending join request: the machine joins", "", 1,
     1, TNT, cli_cmd_join_requests_approve, NULL, 0},
    {"join-requests", "deny", "ID", "deny a pending join request: the machine stops", "", 1, 1, TNT,
     cli_cmd_join_requests_deny, NULL, 0},
    {"join-requests", "delete", "ID", "delete a join request: the machine's next round starts over",
     "", 1, 1, TNT, cli_cmd_join_requests_delete, NULL, 0},
    {"nodes", "list",
     "[--pool P] [--state S] [--attestor A] [--product-uuid U] [--mac M] [--serial S] "
     "[--expiring-within 2h] [--limit N] [--cursor C]",
     "list nodes, a page at a time, with when their certificates expire",
     "pool= state= attestor= product-uuid= mac= serial= expiring-within= limit= after= cursor=", 0,
     0, TNT, cli_cmd_nodes_list,
     "  --pool P             only nodes of this pool (id or name)\n"
     "  --state S            only nodes in this state: adopted, cordoned, retired, ...\n"
     "  --attestor A         only nodes that joined through this attestor, e.g. tpm\n"
     "  --product-uuid U     only the node with this product UUID (the machine a\n"
     "                       join:reclaim refusal is about)\n"
     "  --mac M              only nodes that reported this MAC address\n"
     "  --serial S           only nodes with this serial number\n"
     "  --expiring-within D  only nodes whose certificate expires within D (2h, 7d), or has\n"
     "  --limit N            at most N nodes (1 to 500; default 100)\n"
     "  --cursor C           the page a nextCursor or prevCursor names (--json shows both;\n"
     "                       a full page prints the next --cursor on stderr)\n"
     "  --after ID           the page after this node id (id order only)\n"
     "Nodes come in id order, with --expiring-within in order of expiry.\n",
     0},
    {"nodes", "get", "ID|HOSTNAME", "show a node", "", 1, 1, TNT, cli_cmd_nodes_get, NULL,
     CLI_K_NODE},
    {"nodes", "cordon", "ID|HOSTNAME", "cordon a node", "", 1, 1, TNT, cli_cmd_nodes_cordon, NULL,
     CLI_K_NODE},
    {"nodes", "uncordon", "ID|HOSTNAME", "uncordon a node", "", 1, 1, TNT, cli_cmd_nodes_uncordon,
     NULL, CLI_K_NODE},
    {"nodes", "delete", "ID|HOSTNAME --yes",
     "delete a cordoned or retired node: revoke its certificates, free its bindings", "yes", 1, 1,
     TNT, cli_cmd_nodes_delete,
     "  --yes                do it; without it, say what it would do and exit 2\n", CLI_K_NODE},
    {"nodes", "revoke-identity", "ID|HOSTNAME",
     "revoke every certificate of a node and raise its identity generation", "", 1, 1, TNT,
     cli_cmd_nodes_revoke_identity, NULL, CLI_K_NODE},
    {"nodes", "retire", "ID|HOSTNAME", "retire a node and revoke its certificates", "", 1, 1, TNT,
     cli_cmd_nodes_retire, NULL, CLI_K_NODE},
    {"nodes", "inventory", "ID|HOSTNAME", "show what each of a node's joins claimed, oldest first",
     "", 1, 1, TNT, cli_cmd_nodes_inventory, NULL, CLI_K_NODE},
    {"workflows", "list", "[--limit N] [--cursor C]",
     "list commission and deploy workflows, a page at a time", "limit= cursor=", 0, 0, TNT,
     cli_cmd_workflows_list, PAGE_HELP, 0},
    {"workflows", "get", "ID", "show a workflow", "", 1, 1, TNT, cli_cmd_workflows_get, NULL, 0},
    {"workflows", "cancel", "ID", "cancel a running workflow (a deploy's token is then refused)",
     "", 1, 1, TNT, cli_cmd_workflows_cancel, NULL, 0},
    {"workflows", "complete", "ID [--failed]", "end a running workflow as succeeded (or failed)",
     "failed", 1, 1, TNT, cli_cmd_workflows_complete,
     "  --failed             end it as failed rather than succeeded\n", 0},
    {"machines", "commission", "--site S --mac M [--product-uuid U] [--node N] [--ttl 1h]",
     "create a commission workflow and its boot entry for a MAC at a site",
     "site= mac= product-uuid= node= ttl=", 0, 0, TNT, cli_cmd_machines_commission,
     "  --site ID            the site whose boot server boots the machine\n"
     "  --mac M              its MAC address, any case, ':' or '-' between octets\n"
     "  --product-uuid U     the product UUID it must report, when known\n"
     "  --node N             the node it is, when it was one before\n"
     "  --ttl DURATION       how long the boot entry lives (default 1h, at most 7d)\n",
     0},
    {"machines", "enroll", "--node N --pool P",
     "enroll a discovered (ramdisk) node in a pool, so that it can be deployed", "node= pool=", 0,
     0, TNT, cli_cmd_machines_enroll,
     "  --node N             the ramdisk node discovery admitted (id or hostname)\n"
     "  --pool P             the pool it joins as a node (id or name); its joinAttestors\n"
     "                       must admit provisioned (the deploy's join)\n"
     "The node keeps its id, inventory and history; machines deploy installs it.\n",
     0},
    {"machines", "deploy",
     "--node N [--user-data FILE] [--out FILE [--force]] [--bcd-url URL] [--data-dir DIR] "
     "[--ttl 24h]",
     "create a deploy workflow: a single-use provisioned token in the node's user data",
     "node= user-data= out= force bcd-url= data-dir= ttl=", 0, 0, TNT, cli_cmd_machines_deploy,
     "  --node N             the node whose OS is installed (it must have joined once)\n"
     "  --user-data FILE     a template instead of the default cloud-init document:\n"
     "                       {{token}}, {{server}}, {{config}} (bcd's config.toml) and\n"
     "                       {{ca}} (its ca.pem) are filled in\n"
     "  --out FILE           write the user data to a new FILE (0600) instead of printing it\n"
     "  --force              let --out replace an existing FILE\n"
     "  --bcd-url URL        cloud-init downloads bcd from this https:// URL first\n"
     "  --data-dir DIR       bcd's data directory in the config (default /var/lib/bcd)\n"
     "  --ttl DURATION       how long the token is valid (default 24h, at most 7d)\n"
     "The user data holds the token's secret: it is shown once.\n",
     0},
    {"events", "list", "[--type T] [--since 1h|TIME] [--node N] [--limit N] [--cursor C]",
     "list events, newest first", "type= since= node= limit= cursor=", 0, 0, TNT,
     cli_cmd_events_list,
     "  --type T             only events of this type, e.g. security.join.refused\n"
     "  --since D|TIME       only events of the last D (1h, 30m, 7d) or since an RFC 3339\n"
     "                       time (2026-11-29T10:00:00Z)\n"
     "  --node N             only events about this node (id or hostname)\n"
     "  --limit N            at most N events (1 to 1000; default 100)\n"
     "  --cursor C           the page a nextCursor or prevCursor names\n",
     0},
    {"audit", "list", "[--action A] [--since 1h|TIME] [--node N] [--limit N] [--cursor C]",
     "list the audit trail (who changed what through the admin API), newest first",
     "action= since= node= limit= cursor=", 0, 0, TNT, cli_cmd_audit_list,
     "  --action A           only rows of this action, e.g. pool.updated\n"
     "  --since D|TIME       only rows of the last D (1h, 30m, 7d) or since an RFC 3339 time\n"
     "  --node N             only rows about this node (id or hostname)\n"
     "  --limit N            at most N rows (1 to 1000; default 100)\n"
     "  --cursor C           the page a nextCursor or prevCursor names\n",
     0},
    {"daemon", "config", "[--out FILE | --bcd-dir DIR [--data-dir DIR]] [--force]",
     "print the agent's pins (server, keys, CA bundle) as JSON, or write them to FILE",
     "out= bcd-dir= data-dir= force", 0, 0, API, cli_cmd_daemon_config,
     "  --out FILE           write the JSON to a new FILE instead of printing it\n"
     "  --bcd-dir DIR        write bcd's DIR/config.toml and DIR/ca.pem instead\n"
     "  --data-dir DIR       the data_dir in that config.toml (default /var/lib/bcd)\n"
     "  --force              replace an existing FILE, or DIR's files (a joined machine's\n"
     "                       config: give its --data-dir too, it is not guessed)\n",
     0},
    {"daemon", "install-script",
     "(--bcd-url URL (--bcd-sha256 HEX | --bcd-file FILE) | --bcd-path PATH) [--attestor "
     "join-token|tpm|provisioned|cloud-iid [--provider gcp|aws|oidc] [--audience A]] "
     "[--data-dir DIR]",
     "print a sh script that installs or upgrades bcd on a machine and joins it",
     "bcd-url= bcd-path= bcd-sha256= bcd-file= attestor= provider= audience= data-dir=", 0, 0, API,
     cli_cmd_daemon_install_script,
     "  --bcd-url URL        where the machine downloads the bcd binary (https:// only)\n"
     "  --bcd-sha256 HEX     the binary's SHA-256: the script installs nothing else\n"
     "  --bcd-file FILE      or a local copy of the binary, whose SHA-256 is pinned\n"
     "  --bcd-path PATH      or a bcd binary already on the machine (pinned too with\n"
     "                       --bcd-sha256 or --bcd-file)\n"
     "  --attestor A         join-token (default: the token on stdin or --token-file) or\n"
     "                       tpm (no token; the script fails early without /dev/tpmrm0)\n"
     "                       or provisioned (the token from machines deploy in\n"
     "                       --token-file; the machine's product UUID binds it)\n"
     "                       or cloud-iid (no token: the cloud's instance identity)\n"
     "  --provider P         cloud-iid: gcp, aws or oidc (oidc: set [cloud]\n"
     "                       identity_token_command in the config before the join)\n"
     "  --audience A         cloud-iid gcp and oidc: [attestors.cloud-iid.P] audience\n"
     "  --data-dir DIR       bcd's data directory (default /var/lib/bcd)\n"
     "Run the script as root: sh install-bcd.sh < token. Again to upgrade, without a token.\n",
     0},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char global_help[] =
    "Global options (before or after the command):\n"
    "  --server URL         the control plane (env BC_SERVER; default: public_url of\n"
    "                       ./var/server.toml when it exists, else http://127.0.0.1:8080)\n"
    "  --api-key KEY        the API key (env BC_API_KEY)\n"
    "  --api-key-file FILE  a file holding the API key (env BC_API_KEY_FILE;\n"
    "                       default: ./var/admin.key when it exists)\n"
    "  --ca-file PEM        CA certificates for an https server (default: ./var/tls-ca.pem)\n"
    "  --tenant T           the tenant of a tenant-scoped command (default: the key's own)\n"
    "  --timeout D          give up on a server that has not answered within D (default\n"
    "                       30s, at most 1h)\n"
    "  --json               print the API's JSON as is, for scripts; errors as\n"
    "                       {\"error\":{\"code\",\"message\"}} on stderr\n"
    "  --help               help for any command\n"
    "  --version            print the version\n"
    "Names work wherever ids do: pools, sites, tenants and API keys by name, nodes by\n"
    "hostname (an ambiguous or unknown name is refused, naming what matched).\n"
    "Exit status: 0 done; 1 the server refused or the operation failed; 2 usage (an\n"
    "unknown command or option, a missing or malformed value).\n";

static int cli_cmd_version(struct cli *c)
{
	if (c->json)
		printf("{\"version\":\"%s\"}\n", BC_VERSION);
	else
		printf(CLI_NAME " %s\n", BC_VERSION);
	return 0;
}

/* The global options that take a value, for completion to skip their values. */
static const char completion_valued[] =
    "--server|--api-key|--api-key-file|--ca-file|--tenant|--timeout";
static const char completion_globals[] =
    "--server --api-key --api-key-file --ca-file --tenant --timeout --json --help --version";

/* "--a --b" of a command's "a= b" options. */
static void print_opts(const char *opts)
{
	const char *p = opts;

	while (*p != '\0') {
		size_t n = strcspn(p, " =");

		printf(" --%.*s", (int)n, p);
		p += strcspn(p, " ");
		p += strspn(p, " ");
	}
}

/* Generated from the command table: the words, then each command's options. */
static int cli_cmd_completion(struct cli *c)
{
	if (strcmp(c->args[0], "bash") != 0)
		return cli_usage(c, "only bash is supported, got \"%s\"", c->args[0]);
	printf("# bash completion for " CLI_NAME " %s, generated by `" CLI_NAME
	       " completion bash`\n"
	       "_better_compute()\n{\n"
	       "\tlocal cur=${COMP_WORDS[COMP_CWORD]} g='' v='' i w opts=''\n"
	       "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	       "\t\tw=${COMP_WORDS[i]}\n"
	       "\t\tcase $w in\n"
	       "\t\t%s) i=$((i + 1)) ;;\n"
	       "\t\t-*) ;;\n"
	       "\t\t*) if [ -z \"$g\" ]; then g=$w; elif [ -z \"$v\" ]; then v=$w; fi ;;\n"
	       "\t\tesac\n"
	       "\tdone\n"
	       "\tcase \"$g\" in\n"
	       "\t'')\n\t\tCOMPREPLY=($(compgen -W '",
	       BC_VERSION, completion_valued);
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (i == 0 || strcmp(commands[i].group, commands[i - 1].group) != 0)
			printf("%s%s", i ? " " : "", commands[i].group);
	printf(" help' -- \"$cur\"))\n\t\treturn ;;\n");
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (commands[i].name == NULL ||
		    (i > 0 && strcmp(commands[i].group, commands[i - 1].group) == 0))
			continue;
		printf("\t%s)\n\t\tif [ -z \"$v\" ]; then\n\t\t\tCOMPREPLY=($(compgen -W '",
		       commands[i].group);
		for (size_t k = i;
		     k < N_COMMANDS && strcmp(commands[k].group, commands[i].group) == 0; k++)
			printf("%s%s", k > i ? " " : "", commands[k].name);
		printf("' -- \"$cur\"))\n\t\t\treturn\n\t\tfi ;;\n");
	}
	printf("\tesac\n\tcase \"$g:$v\" in\n");
	for (size_t i = 0; i < N_COMMANDS; i++) {
		const struct cli_cmd *cmd = &commands[i];

		printf("\t'%s:%s'%s) opts='", cmd->group, cmd->name ? cmd->name : "",
		       cmd->name ? "" : "*");
		print_opts(cmd->opts);
		printf("' ;;\n");
	}
	printf("\tesac\n"
	       "\tCOMPREPLY=($(compgen -W \"$opts %s\" -- \"$cur\"))\n"
	       "}\n"
	       "complete -F _better_compute " CLI_NAME "\n",
	       completion_globals);
	return 0;
}

static int group_exists(const char *group)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].group, group) == 0)
			return 1;
	return 0;
}

static const struct cli_cmd *find_command(const char *group, const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		const struct cli_cmd *c = &commands[i];
		if (strcmp(c->group, group) != 0)
			continue;
		if (c->name == NULL || (name != NULL && strcmp(c->name, name) == 0))
			return c;
	}
	return NULL;
}

static void print_commands(FILE *f, const char *group)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		const struct cli_cmd *c = &commands[i];
		char words[64];

		if (group != NULL && strcmp(c->group, group) != 0)
			continue;
		snprintf(words, sizeof(words), "%s%s%s", c->group, c->name ? " " : "",
		         c->name ? c->name : "");
		fprintf(f, "  %-24s %s\n", words, c->summary);
	}
}

static void print_help(FILE *f, const char *group)
{
	if (group != NULL) {
		fprintf(f, "usage: " CLI_NAME " %s COMMAND [options]\n\nCommands:\n", group);
		print_commands(f, group);
		fprintf(f, "\nRun `" CLI_NAME " %s COMMAND --help` for a command's options.\n",
		        group);
		return;
	}
	fprintf(f, "usage: " CLI_NAME " [global options] COMMAND [options]\n\nCommands:\n");
	print_commands(f, NULL);
	fprintf(f, "\n%s\nRun `" CLI_NAME " COMMAND --help` for a command's options.\n",
	        global_help);
}

static void print_usage(const struct cli_cmd *cmd)
{
	FILE *f = stdout;

	fprintf(f, "usage: " CLI_NAME " %s%s%s %s\n\n%c%s.\n", cmd->group, cmd->name ? " " : "",
	        cmd->name ? cmd->name : "", cmd->usage, toupper((unsigned char)cmd->summary[0]),
	        cmd->summary + 1);
	if (cmd->help != NULL)
		fprintf(f, "\nOptions:\n%s", cmd->help);
	/* the global options once, in `better-compute --help`, not in every command's */
	if (cmd->flags & CLI_F_API)
		fprintf(f,
		        "\nIt speaks the admin API of the server given by --server.\n"
		        "Global options: --server, --api-key, --api-key-file, --ca-file,%s "
		        "--timeout, --json\n(see `" CLI_NAME " --help`).\n",
		        cmd->flags & CLI_F_TENANT ? " --tenant," : "");
	else
		fprintf(f, "\nGlobal options: --json (see `" CLI_NAME " --help`).\n");
	fprintf(f, "Exit status: 0 done, 1 refused or failed, 2 usage.\n");
}

/* `serve` has options of its own: everything from the word on is the server's. */
static int run_serve(struct cli *c, int argc, char **argv, int i)
{
	static char *serve_help[] = {"serve", "--help", NULL};

	if (c->opt_server || c->opt_api_key || c->opt_api_key_file || c->opt_ca_file ||
	    c->opt_tenant || c->opt_timeout || c->json) {
		c->usage_error = 1;
		return cli_fail(
		    c, BC_ERR_INVALID,
		    "serve: the client options (--server, --api-key, --json, ...) do not "
		    "apply to serve; see `" CLI_NAME " serve --help`");
	}
	c->exit_direct = 1;
	if (c->help)
		c->exit_status = bc_cmd_serve(2, serve_help);
	else
		c->exit_status = bc_cmd_serve(argc - i, argv + i);
	return 0;
}

/* The counts of positional arguments, and --tenant only where it means something. */
static int check_command(struct cli *c)
{
	const struct cli_cmd *cmd = c->cmd;

	if ((int)c->n_args < cmd->min_args)
		return cli_usage(c, "missing argument: %s", cmd->usage);
	if ((int)c->n_args > cmd->max_args)
		return cli_usage(c, "unexpected argument `%s`", c->args[cmd->max_args]);
	if (c->opt_tenant != NULL && !(cmd->flags & CLI_F_TENANT))
		return cli_usage(c, "--tenant does not apply to this command");
	if (c->opt_tenant != NULL && c->opt_tenant[0] == '\0')
		return cli_usage(c, "--tenant is empty; give a tenant id");
	return 0;
}

/* Global options before the command's words (and between them). */
static int skip_globals(struct cli *c, int argc, char **argv, int *i)
{
	int consumed, rc;

	while (*i < argc && argv[*i][0] == '-' && argv[*i][1] != '\0') {
		if ((rc = cli_parse_global(c, argc, argv, *i, &consumed)) != 0)
			return rc;
		if (consumed == 0)
			return cli_usage(c, "unknown option %s before the command", argv[*i]);
		*i += consumed;
	}
	return 0;
}

/* "create, get, list or update": the commands of a group, for a message. */
static void group_verbs(const char *group, char *out, size_t len)
{
	size_t n = 0, k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < N_COMMANDS; i++)
		n += strcmp(commands[i].group, group) == 0;
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (strcmp(commands[i].group, group) != 0)
			continue;
		k++;
		snprintf(out + strlen(out), len - strlen(out), "%s%s",
		         k == 1 ? "" : (k == n ? " or " : ", "), commands[i].name);
	}
}

/* The second word of a group with several commands. */
static int find_verb(struct cli *c, int argc, char **argv, const char *group, int *i)
{
	const char *name = NULL;
	char verbs[160];
	int rc;

	if ((rc = skip_globals(c, argc, argv, i)) != 0)
		return rc;
	if (*i < argc)
		name = argv[(*i)++];
	if (name != NULL && (c->cmd = find_command(group, name)) != NULL)
		return 0;
	if (c->help && name == NULL) {
		print_help(stdout, group);
		return 0;
	}
	group_verbs(group, verbs, sizeof(verbs));
	c->usage_error = 1;
	if (name == NULL)
		return cli_fail(c, BC_ERR_INVALID,
		                "%s: which command? %s; see `" CLI_NAME " %s --help`", group, verbs,
		                group);
	return cli_fail(c, BC_ERR_INVALID,
	                "%s: unknown command `%s`; choose %s; see `" CLI_NAME " %s --help`", group,
	                name, verbs, group);
}

static int dispatch(struct cli *c, int argc, char **argv)
{
	const char *group = NULL;
	int i = 1, rc;

	if ((rc = skip_globals(c, argc, argv, &i)) != 0)
		return rc;
	if (c->version && !c->help)
		return cli_cmd_version(c);
	if (i < argc && strcmp(argv[i], "help") == 0) {
		c->help = 1;
		i++;
	}
	if (i < argc)
		group = argv[i++];
	if (group == NULL) {
		print_help(c->help ? stdout : stderr, NULL);
		if (c->help)
			return 0;
		c->usage_error = c->reported = 1;
		return BC_ERR_INVALID;
	}
	if (!group_exists(group))
		return cli_usage(c, "unknown command `%s`", group);
	if (strcmp(group, "serve") == 0)
		return run_serve(c, argc, argv, i - 1);
	/* the libraries log for a server; a command's user wants only its own messages */
	bc_log_set_level(BC_LOG_WARN);
	if ((c->cmd = find_command(group, NULL)) == NULL) {
		if ((rc = find_verb(c, argc, argv, group, &i)) != 0 || c->cmd == NULL)
			return rc;
	}
	if ((rc = cli_parse_command(c, argc, argv, i)) != 0)
		return rc;
	if (c->help) {
		print_usage(c->cmd);
		return 0;
	}
	if (c->version)
		return cli_cmd_version(c);
	if ((rc = check_command(c)) != 0)
		return rc;
	/* a name given where an id goes: the one resolver, before the command runs */
	if (c->cmd->arg_kind != CLI_K_NONE &&
	    (rc = cli_resolve_arg(c, (enum cli_kind)c->cmd->arg_kind, 0)) != 0)
		return rc;
	return c->cmd->fn(c);
}

int main(int argc, char **argv)
{
	struct cli c;
	int rc, status;

	memset(&c, 0, sizeof(c));
	/* --json anywhere shapes even the errors of the options before it */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0 && strcmp(argv[i], "serve") != 0;
	     i++)
		c.json_errors |= strcmp(argv[i], "--json") == 0;
	rc = dispatch(&c, argc, argv);
	if (rc != 0 && !c.reported)
		cli_fail(&c, rc, "%s%s%s: %s", c.cmd ? c.cmd->group : "",
		         c.cmd && c.cmd->name ? " " : "", c.cmd && c.cmd->name ? c.cmd->name : "",
		         bc_err_str(rc));
	if (rc != 0)
		status = c.usage_error ? 2 : 1;
	else
		status = c.exit_direct ? c.exit_status : 0;
	cli_free(&c);
	return status;
}
