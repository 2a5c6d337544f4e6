/* JoinService over Connect: routing by path and the answers of every status. */
#include "server/connect.h"

#include <stdlib.h>
#include <string.h>

#include "bc/crypto.h"
#include "bc/wire.h"

#define PROTO BC_WIRE_CONTENT_TYPE
#define JSON  "application/json"

const char bc_connect_permission_denied[] =
    "{\"code\":\"permission_denied\",\"message\":\"access denied\"}";
const char bc_connect_renew_refused[] =
    "{\"code\":\"permission_denied\",\"message\":\"Renew refused\"}";
static const char unavailable[] =
    "{\"code\":\"unavailable\",\"message\":\"the control plane cannot reach its store; retry\"}";
static const char overloaded[] =
    "{\"code\":\"unavailable\",\"message\":\"the control plane is overloaded; retry after "
    "the seconds Retry-After says\"}";
static const char internal[] = "{\"code\":\"internal\",\"message\":\"internal error\"}";
static const char unimplemented[] =
    "{\"code\":\"unimplemented\",\"message\":\"this control plane does not serve that method\"}";
static const char bad_type[] =
    "{\"code\":\"invalid_argument\",\"message\":\"Content-Type must be " BC_WIRE_CONTENT_TYPE "\"}";

static const char not_lease[] =
    "{\"code\":\"invalid_argument\",\"message\":\"the request is not a LeaseRequest\"}";

typedef enum bc_rpc_status (*rpc_fn)(struct bc_join_service *s, const uint8_t *body, size_t len,
                                     uint8_t **resp, size_t *resp_len);

struct method {
	const char *path;
	rpc_fn fn;
	const char *refused; /* the method's one refusal body */
	const char *invalid; /* a body that is not the method's request */
};

static const struct method methods[] = {
    {BC_WIRE_PATH_JOIN, bc_join_handle, bc_connect_permission_denied,
     "{\"code\":\"invalid_argument\",\"message\":\"the request is not a JoinRequest\"}"},
    {BC_WIRE_PATH_RENEW, bc_renew_handle, bc_connect_renew_refused,
     "{\"code\":\"invalid_argument\",\"message\":\"the request is not a RenewRequest\"}"},
    {BC_WIRE_PATH_FETCH_SECRET, bc_secret_handle, bc_connect_permission_denied,
     "{\"code\":\"invalid_argument\",\"message\":\"the request is not a SecretRequest\"}"},
    {BC_WIRE_PATH_ACQUIRE_LEASE, bc_site_acquire_handle, bc_connect_permission_denied, not_lease},
    {BC_WIRE_PATH_RENEW_LEASE, bc_site_renew_handle, bc_connect_permission_denied, not_lease},
    {BC_WIRE_PATH_RELEASE_LEASE, bc_site_release_handle, bc_connect_permission_denied, not_lease},
    {BC_WIRE_PATH_LIST_BOOT, bc_site_boot_entries_handle, bc_connect_permission_denied,
     "{\"code\":\"invalid_argument\",\"message\":\"the request is not a "
     "BootEntriesRequest\"}"},
};

static void json(struct bc_http_response *resp, int status, const char *body)
{
	bc_http_set_body(resp, status, JSON, body, strlen(body));
}

static int is_proto(const char *ct)
{
	size_t n = strlen(PROTO);
	return strncmp(ct, PROTO, n) == 0 && (ct[n] == 0 || ct[n] == ';');
}

int bc_connect_owns(const char *path)
{
	return strncmp(path, BC_WIRE_JOIN_SERVICE, strlen(BC_WIRE_JOIN_SERVICE)) == 0 ||
	       strncmp(path, BC_WIRE_SITE_SERVICE, strlen(BC_WIRE_SITE_SERVICE)) == 0;
}

static void answer(const struct method *m, enum bc_rpc_status st, uint8_t *body, size_t len,
                   struct bc_http_response *resp)
{
	switch (st) {
	case BC_RPC_OK:
		resp->status = 200;
		resp->content_type = PROTO;
		resp->body = body;
		resp->body_len = len;
		return;
	case BC_RPC_REFUSED: json(resp, 403, m->refused); break;
	case BC_RPC_INVALID: json(resp, 400, m->invalid); break;
	case BC_RPC_UNAVAILABLE:
		json(resp, 503, unavailable);
		/* the store is away: agents come back in a second or so, not at once */
		resp->retry_after_s = 1;
		break;
	case BC_RPC_INTERNAL:
	default: json(resp, 500, internal); break;
	}
	free(body);
}

/* The longest Retry-After a shed request is told: a backlog of seconds is spread over
 * twice its length, never over more than this. */
#define SHED_RETRY_MAX_S 60

void bc_connect_shed(uint64_t waited_ms, struct bc_http_response *resp)
{
	uint64_t spread = 2 * (waited_ms / 1000) + 1;
	uint32_t r = 0;

	json(resp, 503, overloaded);
	if (spread > SHED_RETRY_MAX_S - 1)
		spread = SHED_RETRY_MAX_S - 1;
	/* no randomness: everyone is told the same, which still holds them off a second */
	if (bc_random(&r, sizeof(r)) != 0)
		r = 0;
	resp->retry_after_s = 1 + (unsigned)(r % (spread + 1));
}

void bc_connect_serve(struct bc_join_service *join, const struct bc_http_request *req,
                      struct bc_http_response *resp)
{
	uint8_t *body = NULL;
	size_t len = 0;

	if (strcmp(req->method, "POST") != 0) {
		json(resp, 405, unimplemented);
		return;
	}
	if (!is_proto(req->content_type)) {
		json(resp, 415, bad_type);
		return;
	}
	for (size_t i = 0; i < sizeof(methods) / sizeof(*methods); i++) {
		if (strcmp(req->path, methods[i].path) != 0)
			continue;
		enum bc_rpc_status st = methods[i].fn(join, req->body, req->body_len, &body, &len);
		answer(&methods[i], st, body, len, resp);
		return;
	}
	json(resp, 404, unimplemented);
}
