/* bcd join --reset: move the old identity aside before a join, so a machine whose
 * identity still loads (or whose TPM changed), or whose join request waits with a
 * key it no longer wants (pending.json, node.key.pending), can join again. Nothing is deleted:
 * each file becomes <name>.reset-<UTC yyyymmddThhmmssZ> in the data directory, and
 * a name that already exists is never overwritten. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "bc/clock.h"

static const char *const reset_files[] = {BCD_IDENTITY, BCD_NODE_KEY, BCD_NODE_KEY_NEXT,
                                          BCD_JOURNAL,  BCD_PENDING,  BCD_NODE_KEY_PENDING};
#define N_RESET (sizeof(reset_files) / sizeof(reset_files[0]))

static void stamp(char out[static 20])
{
	time_t t = (time_t)(bc_now_ms() / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 20, "%Y%m%dT%H%M%SZ", &tm);
}

static int move_one(const struct bcd_config *cfg, const char *name, const char *ts,
                    struct bcd_msg *m)
{
	char from[4096], to[4096], toname[128];

	snprintf(toname, sizeof(toname), "%s.reset-%s", name, ts);
	if (bcd_path(from, sizeof(from), cfg->data_dir, name) != 0 ||
	    bcd_path(to, sizeof(to), cfg->data_dir, toname) != 0) {
		bcd_say(m, "%s: path too long", cfg->data_dir);
		return BC_ERR_LIMIT;
	}
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) != 0) {
		bcd_say(m, "%s: cannot move it to %s: %s; nothing after it was moved", from, toname,
		        strerror(errno));
		return BC_ERR_IO;
	}
	printf("moved %s to %s\n", from, toname);
	return 0;
}

int bcd_reset(const struct bcd_config *cfg, int yes, struct bcd_msg *m, int *exit_status)
{
	char ts[20];
	size_t n = 0;
	int rc = 0;

	stamp(ts);
	for (size_t i = 0; i < N_RESET; i++) {
		if (!bcd_exists(cfg->data_dir, reset_files[i]))
			continue;
		n++;
		if (!yes)
			printf("would move %s/%s to %s.reset-%s\n", cfg->data_dir, reset_files[i],
			       reset_files[i], ts);
	}
	if (!yes) {
		printf(n == 0 ? "nothing to move; bcd join joins without --reset\n"
		              : "moved nothing: run bcd join --reset --yes to move them and join "
		                "again\n");
		*exit_status = BCD_EXIT_USAGE;
		return 0;
	}
	for (size_t i = 0; i < N_RESET && rc == 0; i++)
		if (bcd_exists(cfg->data_dir, reset_files[i]))
			rc = move_one(cfg, reset_files[i], ts, m);
	if (rc == 0 && n > 0)
		rc = bcd_sync_dir(cfg->data_dir, m);
	return rc;
}
