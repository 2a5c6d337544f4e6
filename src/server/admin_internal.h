/* Admin API internals shared by admin.c (routing, authentication, answers) and the
 * admin_*.c files that hold the handlers of one kind of object each.
 *
 * A handler runs inside the route's transaction (bc_store_run), after the caller's
 * key was authenticated, the query checked and the body parsed. It returns 0 with
 * c->status and c->answer set, or a negative BC_ERR_* after admin_fail() explained
 * it: BC_ERR_INVALID (400 INVALID_INPUT, the message names the field),
 * BC_ERR_DENIED (401/403 ACCESS_DENIED), BC_ERR_NOT_FOUND (404), BC_ERR_CONFLICT
 * (409); any other error is a 500 whose detail is only logged. A handler may be run
 * again when the transaction is replayed: it must not keep state between runs. */
#ifndef BC_SERVER_ADMIN_INTERNAL_H
#define BC_SERVER_ADMIN_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "bc/cursor.h"
#include "rows/query.h"
#include "server/admin.h"

#define ADMIN_ID_MAX      64
#define ADMIN_MAX_ARGS    3
#define ADMIN_MAX_BODY    (64 * 1024)
#define ADMIN_ROOT_TENANT "root"
#define ADMIN_KEY_ID_LEN  30 /* "key_" + a 26-character ULID */

/* What an API key may call, from least to most (docs/admin-api.md, "Roles"): each
 * role may do all that the roles below it may. The route table in admin.c names the
 * least role of each route. */
enum admin_role {
	ADMIN_ROLE_METRICS,  /* GET /metrics (server.c), nothing under /v1/ */
	ADMIN_ROLE_VIEWER,   /* every GET */
	ADMIN_ROLE_OPERATOR, /* every route but API keys' and tenants' writes */
	ADMIN_ROLE_ADMIN,    /* everything */
};
#define ADMIN_ROLE_DEFAULT ADMIN_ROLE_ADMIN /* of a key made without one */

/* The role's name ("viewer"). */
const char *admin_role_name(enum admin_role role);
/* The role named name: 0, or BC_ERR_INVALID when name is none of them. */
int admin_role_parse(const char *name, enum admin_role *out);

struct admin_call {
	const struct bc_admin_config *cfg;
	const struct bc_http_request *req;
	char arg[ADMIN_MAX_ARGS][ADMIN_ID_MAX]; /* path captures in order: {t}, then {p}... */
	json_t *body;                           /* the parsed body; NULL when there is none */
	char tenant_id[ADMIN_ID_MAX];           /* the caller's key */
	char key_id[ADMIN_ID_MAX];
	enum admin_role role;         /* the caller's key's */
	char actor[ADMIN_ID_MAX + 8]; /* "api:<key id>" */
	/* the answer, reset before each run */
	int status;
	json_t *answer;
	int err_status; /* 0: derived from the error code */
	char msg[512];
};

typedef int (*admin_fn)(bc_tx *tx, struct admin_call *c);

/* Records why a call fails and returns rc; message is printf-like. */
int admin_fail(struct admin_call *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Takes ownership of answer (NULL: BC_ERR_NOMEM). */
int admin_answer(struct admin_call *c, int status, json_t *answer);
int admin_is_root(const struct admin_call *c);

/* Body checks. what is the object's name in messages ("pool"); allowed ends in NULL. */
int admin_check_fields(struct admin_call *c, const json_t *obj, const char *what,
                       const char *const *allowed);
/* A string of 1 to max bytes without control characters. When required is 0, an
 * absent key or a JSON null leaves *out NULL. */
int admin_get_text(struct admin_call *c, const json_t *obj, const char *key, const char *field,
                   int required, size_t max, const char **out);
/* A name: admin_get_text with at most 128 bytes. A tenant's, pool's, site's or API
 * key's name (field "pool.name"...) that begins with its kind's id prefix ("pool_")
 * is refused: it would be taken for an id. */
int admin_get_name(struct admin_call *c, const json_t *obj, const char *key, const char *field,
                   int required, const char **out);
/* An integer in [min, max]; def when absent. */
int admin_get_int(struct admin_call *c, const json_t *obj, const char *key, const char *field,
                  int64_t min, int64_t max, int64_t def, int64_t *out);
int admin_get_bool(struct admin_call *c, const json_t *obj, const char *key, const char *field,
                   int def, int *out);

/* s itself when it is a short plain identifier (safe to echo), else "(field)". */
const char *admin_safe(const char *s);

/* Rows to JSON. fn builds one object from the current row (NULL: out of memory). */
typedef json_t *(*admin_row_fn)(bc_rows *r);
/* Every row of rows, a view of src/rows, into a new array; rows is freed. */
int admin_rows_list(bc_rows *rows, admin_row_fn fn, json_t **out);
/* The first row; BC_ERR_NOT_FOUND when there is none. rows is freed. */
int admin_rows_one(bc_rows *rows, admin_row_fn fn, json_t **out);
json_t *admin_time(int64_t ms);
/* NULL columns as JSON null. */
json_t *admin_col_text(bc_rows *r, int col);
json_t *admin_col_time(bc_rows *r, int col);
/* A JSON text column parsed; fallback ("{}" or "[]") when it does not parse. */
json_t *admin_col_json(bc_rows *r, int col, const char *fallback);

/* Query parameters of list routes, each refused by name when out of shape:
 * limit (1..max, def when absent); a text value of 1..maxlen bytes (NULL when absent);
 * since or until (key), a duration back from now ("1h", "30m", "7d") or milliseconds
 * since the epoch
 * (*present 0 when absent). */
int admin_query_limit(struct admin_call *c, int64_t def, int64_t max, int64_t *out);
int admin_query_text(struct admin_call *c, const char *key, size_t maxlen, const char **out);
int admin_query_since(struct admin_call *c, const char *key, int64_t now_ms, int64_t *out,
                      int *present);

/* A page of a list route (rows/query.h, bc/cursor.h): ?cursor= (a nextCursor or
 * prevCursor this list answered) and ?limit=. list names the cursors; at_col and
 * id_col are the view's columns of the order key (at_col -1: the list orders by id
 * alone). */
#define ADMIN_LIST_LIMIT_DEFAULT 100 /* tokens, join requests, workflows */
#define ADMIN_LIST_LIMIT_MAX     1000
struct admin_page {
	const char *list;
	int at_col, id_col;
	struct bc_cursor cursor;
	struct bc_row_page rows; /* what the rows layer reads */
};
/* Reads ?cursor= and ?limit= (1..max, def when absent) into pg. Refused by name: a
 * cursor that is not one of this list's ("cursor: ..."), a bad limit. */
int admin_query_page(struct admin_call *c, struct admin_page *pg, const char *list, int at_col,
                     int id_col, int64_t def, int64_t max);
/* Starts pg after the row of key id (the older ?after=), as a cursor would. */
int admin_page_after(struct admin_call *c, struct admin_page *pg, const char *id);
/* Answers 200 with {key: [the page's rows, in the list's order], "nextCursor": ...,
 * "prevCursor": ...}: a cursor where another page may follow that way, else null.
 * rows is freed. */
int admin_page_answer(struct admin_call *c, const struct admin_page *pg, bc_rows *rows,
                      admin_row_fn fn, const char *key);

/* Events and audit of one change, both in tx: type is the event type and audit action. */
int admin_record(bc_tx *tx, struct admin_call *c, const char *tenant_id, const char *type,
                 const char *subject, json_t *data, int event);

/* Handlers (admin_tenants.c, admin_pools.c, admin_tokens.c, admin_nodes.c). */
int admin_whoami(bc_tx *tx, struct admin_call *c);
int admin_server_facts(bc_tx *tx, struct admin_call *c);
int admin_daemon_config(bc_tx *tx, struct admin_call *c);
int admin_tenants_list(bc_tx *tx, struct admin_call *c);
int admin_tenants_create(bc_tx *tx, struct admin_call *c);
int admin_api_keys_create(bc_tx *tx, struct admin_call *c);
int admin_api_keys_list(bc_tx *tx, struct admin_call *c);
int admin_api_keys_revoke(bc_tx *tx, struct admin_call *c);
int admin_tenants_delete(bc_tx *tx, struct admin_call *c);
int admin_sites_list(bc_tx *tx, struct admin_call *c);
int admin_sites_create(bc_tx *tx, struct admin_call *c);
int admin_pools_list(bc_tx *tx, struct admin_call *c);
int admin_pools_create(bc_tx *tx, struct admin_call *c);
int admin_pools_get(bc_tx *tx, struct admin_call *c);
int admin_pools_update(bc_tx *tx, struct admin_call *c);
int admin_pools_delete(bc_tx *tx, struct admin_call *c);
int admin_tokens_list(bc_tx *tx, struct admin_call *c);
int admin_tokens_create(bc_tx *tx, struct admin_call *c);
int admin_tokens_revoke(bc_tx *tx, struct admin_call *c);
int admin_nodes_list(bc_tx *tx, struct admin_call *c);
int admin_nodes_counts(bc_tx *tx, struct admin_call *c);
int admin_nodes_certificates(bc_tx *tx, struct admin_call *c);
int admin_nodes_get(bc_tx *tx, struct admin_call *c);
int admin_nodes_cordon(bc_tx *tx, struct admin_call *c);
int admin_nodes_uncordon(bc_tx *tx, struct admin_call *c);
int admin_nodes_revoke_identity(bc_tx *tx, struct admin_call *c);
int admin_nodes_retire(bc_tx *tx, struct admin_call *c);
int admin_nodes_delete(bc_tx *tx, struct admin_call *c);
int admin_events_list(bc_tx *tx, struct admin_call *c);
int admin_audit_list(bc_tx *tx, struct admin_call *c);
/* admin_workflows.c */
int admin_workflows_list(bc_tx *tx, struct admin_call *c);
int admin_workflows_get(bc_tx *tx, struct admin_call *c);
int admin_workflows_cancel(bc_tx *tx, struct admin_call *c);
int admin_workflows_complete(bc_tx *tx, struct admin_call *c);
int admin_machines_commission(bc_tx *tx, struct admin_call *c);
int admin_machines_deploy(bc_tx *tx, struct admin_call *c);
int admin_machines_enroll(bc_tx *tx, struct admin_call *c);
int admin_nodes_inventory(bc_tx *tx, struct admin_call *c);
/* admin_sites.c */
int admin_sites_get(bc_tx *tx, struct admin_call *c);
int admin_sites_release_lease(bc_tx *tx, struct admin_call *c);
int admin_sites_delete(bc_tx *tx, struct admin_call *c);

/* admin_join_requests.c */
int admin_join_requests_list(bc_tx *tx, struct admin_call *c);
int admin_join_requests_approve(bc_tx *tx, struct admin_call *c);
int admin_join_requests_deny(bc_tx *tx, struct admin_call *c);
int admin_join_requests_delete(bc_tx *tx, struct admin_call *c);

#endif
