#include "join/events.h"

#include <stdlib.h>
#include <string.h>

#include "bc/json.h"
#include "rows/history.h"

static char *dump(json_t *data)
{
	return data ? bc_json_dump(data) : strdup("{}");
}

int bc_event_publish(bc_tx *tx, const char *tenant_id, const char *type, const char *subject,
                     json_t *data)
{
	char id[64];
	char *js;
	int rc;

	if ((rc = bc_new_id("evt", id, sizeof(id))) != 0)
		return rc;
	if ((js = dump(data)) == NULL)
		return BC_ERR_NOMEM;
	rc = bc_row_event_insert(tx, id, tenant_id, type, subject, js, bc_tx_now_ms(tx));
	free(js);
	return rc;
}

int bc_audit(bc_tx *tx, const char *tenant_id, const char *actor, const char *action,
             const char *subject, json_t *data)
{
	char id[64];
	char *js;
	int rc;

	if ((rc = bc_new_id("aud", id, sizeof(id))) != 0)
		return rc;
	if ((js = dump(data)) == NULL)
		return BC_ERR_NOMEM;
	rc = bc_row_audit_insert(tx, id, tenant_id, actor, action, subject, js, bc_tx_now_ms(tx));
	free(js);
	return rc;
}
