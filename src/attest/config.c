/* The one setup every attestor's configuration goes through: its tables are read by
 * bc_toml_read_table with messages that start "[<table>] " and renamed keys warned
 * about in the log, and its own checks are worded the same way (attest/attest.h). */
#include <stdio.h>

#include "attest/attest.h"

int bc_attest_read_table(const bc_toml *t, const char *table, const struct bc_toml_field *fields,
                         size_t n_fields, void *dst, char *err, size_t errlen)
{
	/* a sub-table's path is bounded by its reader (cloud-iid's at 512 bytes) */
	char label[600];
	struct bc_toml_read r = {
	    .table = table, .label = label, .fields = fields, .n_fields = n_fields};

	snprintf(label, sizeof(label), "[%s] ", table);
	return bc_toml_read_table(t, &r, dst, err, errlen);
}

int bc_attest_config_fail(char *err, size_t errlen, const char *table, const char *key,
                          const char *what)
{
	snprintf(err, errlen, "[%s] %s: %s", table, key, what);
	return BC_ERR_CONFIG;
}
