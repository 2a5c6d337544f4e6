/* The pins bcd learned from pins-update statements: pins.json in the data directory,
 * read over the config's pins whenever they are loaded, written (temporary file, fsync,
 * rename) when an answer carries a statement with a higher sequence. The file records
 * the config's join_signing_key_id it grew from: a config written again since (after
 * `better-compute daemon config`) makes it stale, and the config's pins count. */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "bc/log.h"

#define MAX_PINS_FILE (16u * 1024)

int bcd_pins_load_file(const struct bcd_config *cfg, struct bc_client_pins *pins, struct bcd_msg *m)
{
	char path[4096], *text = NULL, err[512];
	size_t len = 0;
	int rc, stale = 0;

	if ((rc = bcd_path(path, sizeof(path), cfg->data_dir, BCD_PINS)) != 0) {
		bcd_say(m, "%s/%s: path too long", cfg->data_dir, BCD_PINS);
		return rc;
	}
	if ((rc = bcd_read_file(path, MAX_PINS_FILE, &text, &len, m)) != 0) {
		if (rc == BC_ERR_NOT_FOUND) {
			m->text[0] = '\0';
			return 0;
		}
		return rc;
	}
	rc = bc_client_pins_set_from_json(pins, text, len, cfg->join_signing_key_id, &stale, err,
	                                  sizeof(err));
	if (rc != 0)
		bcd_say(m,
		        "%s: %s; remove it to use the config's pins (bcd learns them again at "
		        "the next renewal)",
		        path, err);
	else if (stale)
		bc_log(BC_LOG_INFO, "pins file ignored: the config was written since", "file", path,
		       NULL);
	free(text);
	return rc;
}

static int save(const struct bcd_config *cfg, const struct bc_client_pins *pins, struct bcd_msg *m)
{
	char *json = NULL;
	int rc;

	if ((rc = bc_client_pins_set_to_json(pins, cfg->join_signing_key_id, &json)) != 0) {
		bcd_say(m, "cannot encode the pins (%s)", bc_err_str(rc));
		return rc;
	}
	rc = bcd_write_atomic(cfg->data_dir, BCD_PINS, json, strlen(json), 0644, m);
	free(json);
	return rc;
}

int bcd_pins_learn(const struct bcd_config *cfg, struct bc_client_pins *pins, const uint8_t *stmt,
                   size_t len, struct bcd_msg *m)
{
	struct bc_pins_update u;
	const char *reason = NULL;
	char err[512], seq[24];
	int rc, changed = 0;

	if (stmt == NULL || len == 0)
		return 0;
	if ((rc = bc_client_pins_update_open(pins, stmt, len, &u, &reason, err, sizeof(err))) !=
	    0) {
		bcd_say(m, "%s", err);
		if (reason != NULL)
			bc_log(BC_LOG_WARN, "pins update refused", "reason", reason, "error", err,
			       NULL);
		return rc;
	}
	if ((rc = bc_client_pins_apply(pins, &u, &changed)) != 0)
		bcd_say(m, "cannot apply the pins update (%s)", bc_err_str(rc));
	else if (changed && (rc = save(cfg, pins, m)) == 0) {
		snprintf(seq, sizeof(seq), "%lld", (long long)pins->sequence);
		bc_log(BC_LOG_INFO, "pins updated", "sequence", seq, "signingKeyId",
		       pins->join_signing_kid, NULL);
	}
	bc_pins_update_free(&u);
	return rc;
}

void bcd_pins_learn_answer(const struct bcd_config *cfg, struct bc_client_pins *pins,
                           const struct bc_join_answer *a)
{
	struct bcd_msg m = {""};

	if (bcd_pins_learn(cfg, pins, a->pins_update, a->pins_update_len, &m) != 0)
		bc_log(BC_LOG_WARN, "pins not updated", "error", m.text, NULL);
}
