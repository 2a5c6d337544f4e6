/* Internal to the discovery attestor: its configuration, read from
 * [attestors.discovery] by discovery_config.c and used by discovery.c. */
#ifndef BC_ATTEST_DISCOVERY_H
#define BC_ATTEST_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "bc/attestor.h"
#include "bc/toml.h"

#define CERT_TTL_MAX_S 7200

enum approval { APPROVE_NEVER = 0, APPROVE_UNKNOWN, APPROVE_ALWAYS };
enum hwkey { HWKEY_NONE = 0, HWKEY_UUID };

struct disc_cfg {
	enum approval approval;
	enum hwkey hwkey;
	int64_t pending_ttl_s;
	int64_t retry_after_s;
	int resolve_workflow_node;
	int64_t cert_ttl_s; /* 0: the ramdisk default, 2 hours */
	int64_t max_age_ms; /* an assertion admits at most this long after issued_at */
	char allowed_kinds[BC_ALLOWED_KINDS_JSON_MAX]; /* a JSON array, for the result */
};

/* Reads the table into c, which holds the defaults: a key the table does not set
 * keeps its default. BC_ERR_CONFIG with err "[table] key: what is wrong". */
BC_WUR int disc_cfg_read(const bc_toml *t, const char *table, struct disc_cfg *c, char *err,
                         size_t errlen);

#endif
