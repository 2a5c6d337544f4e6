/* bcd ramdisk: the platform ramdisk a bare-metal server PXE-booted joins as a ramdisk
 * node. Its kernel command line (/proc/cmdline, --cmdline FILE for tests) carries what
 * the site's boot server (bcd site) rendered: bc.token, the single-use discovery
 * token, and bc.assertion, the boot server's signed DiscoveryAssertion (bc.server may
 * name the control plane's URL, held to the config's rule for its server: https, or
 * http only to loopback; the pins stay the config's). The token is sealed to
 * the pinned join encryption key, the assertion sent as the discovery attestation with
 * the machine's claims; a pending answer (an operator's approval) is waited out and
 * retried with the same key and CSR. The identity goes to the data directory, which
 * on a ramdisk is tmpfs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/producer.h"
#include "bc/pki.h"
#include "bc/wire.h"

#define DEFAULT_CMDLINE "/proc/cmdline"

struct assertion_ctx {
	const uint8_t *p;
	size_t len;
};

/* The assertion is the evidence of every round. */
static int evidence(void *ctx, EVP_PKEY *node_key, const uint8_t csr_sha256[static 32],
                    uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
	const struct assertion_ctx *a = ctx;

	(void)node_key;
	(void)csr_sha256;
	(void)err;
	(void)errlen;
	if ((*out = malloc(a->len)) == NULL)
		return BC_ERR_NOMEM;
	memcpy(*out, a->p, a->len);
	*outlen = a->len;
	return 0;
}

static int read_cmdline(const char *path, struct bcd_cmdline *c, struct bcd_msg *m)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	if ((rc = bcd_read_file(path, BCD_CMDLINE_MAX, &text, &len, m)) != 0)
		return rc;
	rc = bcd_cmdline_parse(text, len, c);
	bc_freezero(text, len + 1);
	if (rc == BC_ERR_NOT_FOUND)
		bcd_say(m,
		        "%s: no bc.token= and bc.assertion= on the kernel command line; boot this "
		        "machine through the site's boot server (bcd site)",
		        path);
	else if (rc != 0)
		bcd_say(m,
		        "%s: bc.token, bc.assertion or bc.server is out of shape or given twice; "
		        "boot again through the site's boot server",
		        path);
	return rc;
}

/* bc.server comes from the boot network, unauthenticated: it is held to the rule of the
 * config's server (the pins' own check), so it can never send the token and claims in
 * plain HTTP off the machine. */
static int use_server(struct bc_client_pins *pins, const char *url, const char *path,
                      struct bcd_msg *m)
{
	char err[256];
	int rc;

	if ((rc = bc_client_pins_set_server(pins, url, err, sizeof(err))) == 0)
		return 0;
	if (rc == BC_ERR_CONFIG && strncmp(err, "pins: server: ", 14) == 0)
		bcd_say(m,
		        "%s: bc.server: %s, as the config's server; set an https URL in the boot "
		        "server's [site] cmdline, or none to use the config's",
		        path, err + 14);
	else
		bcd_say(m, "%s: bc.server: %s", path, bc_err_str(rc));
	return rc;
}

static int join(const struct bcd_config *cfg, struct bc_client_pins *pins,
                const struct bcd_cmdline *c, struct bcd_msg *m)
{
	struct assertion_ctx actx = {.p = c->assertion, .len = c->assertion_len};
	struct bcd_producer pr = {
	    .attestor = BC_WIRE_ATTESTOR_DISCOVERY, .ctx = &actx, .evidence = evidence};
	struct bcd_join_req r = {.attestor = BC_WIRE_ATTESTOR_DISCOVERY,
	                         .role = BC_ROLE_RAMDISK,
	                         .token = c->token,
	                         .producer = &pr,
	                         .wait_pending = 1};
	struct bc_join_answer a;
	int rc;

	/* one key and one CSR for every round: a deferral is retried with the same, and
	 * a data directory that persists keeps them across a restart (pending.json) */
	if ((rc = bcd_join_kept(cfg, pins, &r, 0, &a, m)) != 0)
		goto out;
	printf("joined as %s (ramdisk)\n", a.node_id);
out:
	bc_join_answer_free(&a);
	return rc;
}

int bcd_cmd_ramdisk(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	struct bc_client_pins pins;
	struct bcd_cmdline c;
	struct bcd_config cfg;
	struct bcd_identity id;
	struct bcd_msg why;
	const char *cmdline = o->cmdline ? o->cmdline : DEFAULT_CMDLINE;
	int rc, lock = -1, have_pins = 0;

	(void)exit_status;
	memset(&c, 0, sizeof(c));
	if ((rc = bcd_config_load(o->config, &cfg, m)) != 0)
		return rc;
	if ((rc = bcd_ensure_dir(cfg.data_dir, m)) != 0 ||
	    (rc = bcd_lock_dir(cfg.data_dir, 1, &lock, m)) != 0)
		goto out;
	if (bcd_identity_load(&cfg, &id, &why) == 0) {
		printf("already joined as %s\n", id.node_id);
		bcd_identity_free(&id);
		goto out;
	}
	if ((rc = read_cmdline(cmdline, &c, m)) != 0 ||
	    (rc = bcd_pins_from_config(&cfg, &pins, m)) != 0)
		goto out;
	have_pins = 1;
	if (c.server[0] && (rc = use_server(&pins, c.server, cmdline, m)) != 0)
		goto out;
	rc = join(&cfg, &pins, &c, m);
out:
	if (have_pins)
		bc_client_pins_free(&pins);
	bcd_cmdline_free(&c);
	bcd_unlock_dir(lock);
	bcd_config_free(&cfg);
	return rc;
}
