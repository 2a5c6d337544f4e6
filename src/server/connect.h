/* JoinService as Connect unary RPCs: the one place that maps what JoinService
 * answered (enum bc_rpc_status) onto an HTTP status and Connect error JSON.
 *
 *   POST /bettercompute.join.v1.JoinService/<Method>, Content-Type application/proto,
 *   body the serialized request -> 200 application/proto SignedResponse, or a non-200
 *   status with {"code":..., "message":...}.
 *
 * Every refusal of a method is the same bytes, whatever its reason. */
#ifndef BC_SERVER_CONNECT_H
#define BC_SERVER_CONNECT_H

#include "join/join.h"
#include "server/http.h"

/* The refusal bodies of Join and Renew, exposed for tests. */
extern const char bc_connect_permission_denied[];
extern const char bc_connect_renew_refused[];

/* 1 when path is JoinService's (the caller then hands the request to bc_connect_serve). */
int bc_connect_owns(const char *path);

/* Serves one JoinService request: the method, the content type, then the method's
 * handler. */
void bc_connect_serve(struct bc_join_service *join, const struct bc_http_request *req,
                      struct bc_http_response *resp);

/* A request shed before it is read, having waited waited_ms for a worker: 503
 * unavailable with a Retry-After drawn from 1 s to about twice the wait (at most 60 s),
 * so that the agents told come back spread over the time the backlog needs. */
void bc_connect_shed(uint64_t waited_ms, struct bc_http_response *resp);

#endif
