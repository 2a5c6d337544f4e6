/* Failed admin authentication, limited per client address (an IPv6 address counts by
 * its /64): a fixed table (never grows), so that many addresses cost no more memory
 * than one. Thread-safe. */
#ifndef BC_SERVER_ADMIN_LIMIT_H
#define BC_SERVER_ADMIN_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#define BC_ADMIN_LIMIT_SLOTS    4096
#define BC_ADMIN_LIMIT_FAILURES 10
#define BC_ADMIN_LIMIT_WINDOW   60000 /* ms */

struct bc_admin_limiter;

/* A table of slots addresses (0: BC_ADMIN_LIMIT_SLOTS), each allowed failures failed
 * authentications per window_ms (0: the defaults). NULL when out of memory. */
struct bc_admin_limiter *bc_admin_limiter_new(size_t slots, unsigned failures, int64_t window_ms);
void bc_admin_limiter_free(struct bc_admin_limiter *l);

/* 0 when addr may try to authenticate at now_ms; else the seconds (>= 1) until it may. */
int64_t bc_admin_limiter_blocked(struct bc_admin_limiter *l, const char *addr, int64_t now_ms);

/* Counts a failed authentication of addr: BC_ADMIN_LIMIT_FIRST for the first of its
 * window, BC_ADMIN_LIMIT_REACHED for the one that reached the limit (the caller logs
 * these two only), else 0. When the table is full the address whose window started
 * first makes room. */
#define BC_ADMIN_LIMIT_FIRST   1
#define BC_ADMIN_LIMIT_REACHED 2
int bc_admin_limiter_fail(struct bc_admin_limiter *l, const char *addr, int64_t now_ms);

/* How many addresses the table holds now (tests: at most the slots). */
size_t bc_admin_limiter_used(struct bc_admin_limiter *l);

#endif
