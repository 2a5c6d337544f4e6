/* The hardware claims a join sends: product UUID and serial from DMI, the MACs of
 * physical NICs (those with a device behind them, so no bridge, veth or tunnel), the
 * host name and the architecture; or, in tests, the same from the [fakehw] claims
 * file. The server decides what to trust; bcd sends only well-formed values. */
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/agent.h"
#include "bc/canon.h"
#include "bc/json.h"

#define MAX_MACS        32
#define MAX_CLAIMS_FILE (16u * 1024)
#define MAX_SYS_VALUE   256

void bcd_claims_free(struct bc_client_claims *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; c->macs != NULL && i < c->n_macs; i++)
		free(c->macs[i]);
	free(c->macs);
	free(c->product_uuid);
	free(c->serial);
	free(c->hostname);
	free(c->arch);
	memset(c, 0, sizeof(*c));
}

/* xx:xx:xx:xx:xx:xx in either case, made canonical in place (s has its length);
 * the all-zero address of an unset interface is no claim. */
static int mac_ok(char *s)
{
	char m[BC_MAC_LEN + 1];

	if (bc_mac_canon(s, m) != 0)
		return 0;
	memcpy(s, m, sizeof(m));
	return strcmp(s, "00:00:00:00:00:00") != 0;
}

/* 8-4-4-4-12 hex digits in either case, made canonical in place. */
static int uuid_ok(char *s)
{
	char u[BC_UUID_LEN + 1];

	if (bc_uuid_canon(s, u) != 0)
		return 0;
	memcpy(s, u, sizeof(u));
	return 1;
}

/* Printable ASCII without spaces at either end, 1 to 128 characters. */
static int text_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 128 || s[0] == ' ' || s[n - 1] == ' ')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

static int add_mac(struct bc_client_claims *c, const char *mac)
{
	if (c->n_macs == MAX_MACS)
		return BC_ERR_LIMIT;
	if ((c->macs[c->n_macs] = strdup(mac)) == NULL)
		return BC_ERR_NOMEM;
	c->n_macs++;
	return 0;
}

/* A small /sys file's first line, or NULL (unreadable is not an error: DMI files are
 * root's, and a VM may have none). */
static char *sys_line(const char *path)
{
	char buf[MAX_SYS_VALUE];
	FILE *f = fopen(path, "re");
	size_t n;

	if (f == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	while (n > 0 && buf[0] != '\0' && buf[strlen(buf) - 1] == ' ')
		buf[strlen(buf) - 1] = '\0';
	return buf[0] != '\0' ? strdup(buf) : NULL;
}

static int read_sys_macs(struct bc_client_claims *c)
{
	DIR *d = opendir("/sys/class/net");
	struct dirent *e;
	char path[512], *mac;
	struct stat st;
	int rc = 0;

	if (d == NULL)
		return 0;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/device", e->d_name);
		if (stat(path, &st) != 0)
			continue; /* virtual: no device behind it */
		snprintf(path, sizeof(path), "/sys/class/net/%s/address", e->d_name);
		if ((mac = sys_line(path)) != NULL && mac_ok(mac))
			rc = add_mac(c, mac);
		free(mac);
	}
	closedir(d);
	return rc;
}

static int read_sys(struct bc_client_claims *c)
{
	char host[256] = "";
	struct utsname u;

	c->product_uuid = sys_line("/sys/class/dmi/id/product_uuid");
	if (c->product_uuid != NULL && !uuid_ok(c->product_uuid)) {
		free(c->product_uuid);
		c->product_uuid = NULL;
	}
	c->serial = sys_line("/sys/class/dmi/id/product_serial");
	if (c->serial != NULL && !text_ok(c->serial)) {
		free(c->serial);
		c->serial = NULL;
	}
	if (gethostname(host, sizeof(host) - 1) == 0 && text_ok(host) &&
	    (c->hostname = strdup(host)) == NULL)
		return BC_ERR_NOMEM;
	if (uname(&u) == 0 && (c->arch = strdup(u.machine)) == NULL)
		return BC_ERR_NOMEM;
	return read_sys_macs(c);
}

static const char *const fake_keys[] = {"product_uuid", "serial", "macs", "hostname", "arch"};

static int fake_string(const json_t *j, const char *key, char **dst, const char *path,
                       struct bcd_msg *m)
{
	const char *v;
	int rc = bc_json_get_string(j, key, &v);

	if (rc == BC_ERR_NOT_FOUND)
		return 0;
	if (rc != 0 || !text_ok(v)) {
		bcd_say(m, "%s: %s must be a string of printable ASCII (1 to 128)", path, key);
		return BC_ERR_CONFIG;
	}
	if ((*dst = strdup(v)) == NULL)
		return BC_ERR_NOMEM;
	if (strcmp(key, "product_uuid") == 0 && !uuid_ok(*dst)) {
		bcd_say(m, "%s: product_uuid must be a UUID (8-4-4-4-12 hex digits)", path);
		return BC_ERR_CONFIG;
	}
	return 0;
}

static int fake_macs(const json_t *j, struct bc_client_claims *c, const char *path,
                     struct bcd_msg *m)
{
	json_t *a = json_object_get(j, "macs"), *v;
	char mac[32];
	size_t i;
	int rc;

	if (a == NULL)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > MAX_MACS) {
		bcd_say(m, "%s: macs must be an array of at most %d MAC addresses", path, MAX_MACS);
		return BC_ERR_CONFIG;
	}
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) >= sizeof(mac)) {
			bcd_say(m, "%s: macs[%zu] must be xx:xx:xx:xx:xx:xx", path, i);
			return BC_ERR_CONFIG;
		}
		memcpy(mac, json_string_value(v), json_string_length(v) + 1);
		if (!mac_ok(mac)) {
			bcd_say(m, "%s: macs[%zu] must be xx:xx:xx:xx:xx:xx", path, i);
			return BC_ERR_CONFIG;
		}
		if ((rc = add_mac(c, mac)) != 0)
			return rc;
	}
	return 0;
}

static int read_fake(const char *path, struct bc_client_claims *c, struct bcd_msg *m)
{
	char *text = NULL, jerr[160];
	const char *key;
	json_t *j = NULL, *v;
	size_t len = 0;
	int rc;

	if ((rc = bcd_read_file(path, MAX_CLAIMS_FILE, &text, &len, m)) != 0)
		return rc == BC_ERR_NOMEM ? rc : BC_ERR_CONFIG;
	if (bc_json_parse(text, len, MAX_CLAIMS_FILE, &j, jerr, sizeof(jerr)) != 0 ||
	    !json_is_object(j)) {
		bcd_say(m, "%s: not a JSON object ([fakehw] claims)", path);
		rc = BC_ERR_CONFIG;
		goto out;
	}
	json_object_foreach(j, key, v)
	{
		size_t k;
		for (k = 0; k < sizeof(fake_keys) / sizeof(fake_keys[0]); k++)
			if (strcmp(key, fake_keys[k]) == 0)
				break;
		if (k == sizeof(fake_keys) / sizeof(fake_keys[0])) {
			bcd_say(m, "%s: unknown field %.64s ([fakehw] claims)", path, key);
			rc = BC_ERR_CONFIG;
			goto out;
		}
	}
	if ((rc = fake_string(j, "product_uuid", &c->product_uuid, path, m)) != 0 ||
	    (rc = fake_string(j, "serial", &c->serial, path, m)) != 0 ||
	    (rc = fake_string(j, "hostname", &c->hostname, path, m)) != 0 ||
	    (rc = fake_string(j, "arch", &c->arch, path, m)) != 0)
		goto out;
	rc = fake_macs(j, c, path, m);
out:
	json_decref(j);
	free(text);
	return rc;
}

int bcd_claims_read(const struct bcd_config *cfg, struct bc_client_claims *c, struct bcd_msg *m)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if ((c->macs = calloc(MAX_MACS, sizeof(*c->macs))) == NULL) {
		bcd_say(m, "out of memory");
		return BC_ERR_NOMEM;
	}
	if (cfg->fakehw_claims != NULL)
		rc = read_fake(cfg->fakehw_claims, c, m);
	else
		rc = read_sys(c);
	if (rc == BC_ERR_NOMEM)
		bcd_say(m, "out of memory");
	if (rc != 0)
		bcd_claims_free(c);
	return rc;
}
