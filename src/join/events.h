/* Events and audit rows, written inside the caller's transaction so they commit or
 * roll back with the change they describe.
 *
 * Event types in use: node.joined, node.reclaimed, node.renewed, node.cordoned,
 * node.uncordoned, node.retired, node.deleted, node.identity-revoked,
 * security.join.refused, security.renew.refused, security.site.refused (the three
 * written by join/refusal.h), token.created, token.revoked,
 * pool.created, pool.updated. data is a JSON object (borrowed; may be NULL). */
#ifndef BC_JOIN_EVENTS_H
#define BC_JOIN_EVENTS_H

#include <jansson.h>

#include "bc/store.h"

BC_WUR int bc_event_publish(bc_tx *tx, const char *tenant_id, const char *type, const char *subject,
                            json_t *data);
/* actor: "api:<key id>", "join:<attestor>", "system" */
BC_WUR int bc_audit(bc_tx *tx, const char *tenant_id, const char *actor, const char *action,
                    const char *subject, json_t *data);

#endif
