#include "join/events.h"

#include <stdlib.h>
#include <string.h>

#include "bc/json.h"

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
	bc_param p[] = {BC_TEXT(id),      BC_TEXT(tenant_id), BC_TEXT(type),
	                BC_TEXT(subject), BC_TEXT(js),        BC_INT(bc_tx_now_ms(tx))};
	rc = bc_tx_exec(tx,
	                "INSERT INTO events (id, tenant_id, type, subject, data, created_at) "
	                "VALUES ($1, $2, $3, $4, $5, $6)",
	                p, 6, NULL);
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
	bc_param p[] = {
	    BC_TEXT(id),      BC_TEXT(tenant_id), BC_TEXT(actor),          BC_TEXT(action),
	    BC_TEXT(subject), BC_TEXT(js),        BC_INT(bc_tx_now_ms(tx))};
	rc = bc_tx_exec(
	    tx,
	    "INSERT INTO audit (id, tenant_id, actor, action, subject, data, created_at) "
	    "VALUES ($1, $2, $3, $4, $5, $6, $7)",
	    p, 7, NULL);
	free(js);
	return rc;
}
