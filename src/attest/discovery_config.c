/* [attestors.discovery] in server.toml (docs/commissioning.md): read through the
 * attestors' table reader (bc_attest_read_table), then the command kinds checked one
 * by one and kept as the JSON array the result carries. */
#include <stdio.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/discovery.h"
#include "bc/err.h"
#include "bc/toml.h"
#include "bc/wire.h"

/* What the reader fills: the configuration, and the kinds before they are checked. */
struct raw {
	struct disc_cfg c;
	struct bc_toml_strings kinds;
};

static const char *const approvals[] = {"never", "unknown-machines", "always", NULL};
/* what join requests are keyed on: "product-uuid" is the boot entry's, which an
 * operator set; a serial is only ever the machine's claim, so it is no choice */
static const char *const hwkeys[] = {"none", "product-uuid", NULL};

static const struct bc_toml_field fields[] = {
    {.key = "approval",
     .type = BC_TOML_CHOICE,
     .choices = approvals,
     BC_TOML_AT(struct raw, c.approval)},
    {.key = "hardware_key",
     .type = BC_TOML_CHOICE,
     .choices = hwkeys,
     .expect = "\"none\" or \"product-uuid\" (the boot entry's; a serial is only the "
               "machine's claim)",
     BC_TOML_AT(struct raw, c.hwkey)},
    BC_ATTEST_PENDING_TTL_FIELD(struct raw, c.pending_ttl_s),
    BC_ATTEST_RETRY_AFTER_FIELD(struct raw, c.retry_after_s),
    {.key = "resolve_workflow_node",
     .type = BC_TOML_BOOL,
     BC_TOML_AT(struct raw, c.resolve_workflow_node)},
    {.key = "cert_ttl_seconds",
     .type = BC_TOML_SECONDS,
     .min = 60,
     .max = CERT_TTL_MAX_S,
     .expect = "60 to 7200 (a ramdisk certificate lasts at most 2 hours)",
     BC_TOML_AT(struct raw, c.cert_ttl_s)},
    /* the spec's maxAgeMs: at most the 15 minutes bc/wire.h fixes, never longer */
    {.key = "max_age_seconds",
     .type = BC_TOML_SECONDS,
     .min = 1,
     .max = BC_WIRE_DISCOVERY_MAX_AGE_MS / 1000,
     .scale = 1000,
     .expect = "1 to 900 (an assertion admits at most 15 minutes after it was issued)",
     BC_TOML_AT(struct raw, c.max_age_ms)},
    {.key = "allowed_kinds",
     .type = BC_TOML_STRINGS,
     .min = 1,
     .max = BC_ALLOWED_KINDS_MAX,
     .expect = "an array of 1 to 32 command kinds, such as [\"disk.wipe\", \"diag.*\"]",
     BC_TOML_AT(struct raw, kinds)},
};

/* A command kind: lower-case dotted words ("disk.wipe"), the last of which may be "*"
 * ("diag.*"); a word is [a-z0-9] and may hold '-' or '_' inside it. */
static int kind_ok(const char *s)
{
	size_t n = strlen(s), w = 0;

	if (n == 0 || n > BC_ALLOWED_KIND_LEN)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		char ch = s[i];
		if (ch == '.' || ch == 0) {
			/* an empty word, or a word ending in '-' or '_' */
			if (w == 0 || s[i - 1] == '-' || s[i - 1] == '_')
				return 0;
			w = 0;
		} else if (ch == '*') {
			/* "*" only as the whole last word, after at least one word */
			if (w != 0 || i == 0 || s[i + 1] != 0)
				return 0;
			return 1;
		} else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
			w++;
		} else if ((ch == '-' || ch == '_') && w > 0) {
			w++;
		} else {
			return 0;
		}
	}
	return 1;
}

/* allowed_kinds (1 to BC_ALLOWED_KINDS_MAX, counted by the reader): each a valid kind,
 * as the JSON array of them. */
static int read_kinds(const struct bc_toml_strings *v, const char *table, struct disc_cfg *c,
                      char *err, size_t errlen)
{
	size_t off = 0;

	if (v->v == NULL)
		return 0;
	c->allowed_kinds[off++] = '[';
	for (size_t i = 0; i < v->n; i++) {
		if (!kind_ok(v->v[i])) {
			char what[200];
			snprintf(
			    what, sizeof(what),
			    "\"%.64s\" is not a command kind: expected lower-case dotted words "
			    "of at most 64 characters, the last of which may be \"*\"",
			    v->v[i]);
			return bc_attest_config_fail(err, errlen, table, "allowed_kinds", what);
		}
		/* bounded by BC_ALLOWED_KINDS_JSON_MAX; a kind needs no JSON escaping */
		off += (size_t)snprintf(c->allowed_kinds + off, sizeof(c->allowed_kinds) - off,
		                        "%s\"%s\"", i ? "," : "", v->v[i]);
	}
	snprintf(c->allowed_kinds + off, sizeof(c->allowed_kinds) - off, "]");
	return 0;
}

int disc_cfg_read(const bc_toml *t, const char *table, struct disc_cfg *c, char *err, size_t errlen)
{
	struct raw raw = {.c = *c};
	int rc;

	if ((rc = bc_attest_read_table(t, table, fields, BC_ATTEST_N_FIELDS(fields), &raw, err,
	                               errlen)) != 0 ||
	    (rc = read_kinds(&raw.kinds, table, &raw.c, err, errlen)) != 0)
		return rc;
	*c = raw.c;
	return 0;
}
