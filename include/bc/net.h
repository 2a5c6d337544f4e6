/* Network addresses: whether one stays on this machine (plain HTTP is allowed only
 * there), and the "host:port" form of listen addresses.
 *
 * Loopback is 127.0.0.0/8, ::1, and the name "localhost" in any case (and nothing
 * that merely starts with it: "localhost.example.com" is another machine). Only
 * numeric addresses and that one name count: no name is resolved. */
#ifndef BC_NET_H
#define BC_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bc/err.h"

/* host as a URL gives it: "localhost", a dotted-quad IPv4 address, or an IPv6
 * address with or without its brackets ("[::1]", "::1"). 1 loopback, 0 not. */
int bc_net_host_is_loopback(const char *host);
/* A listen address, "host:port" or "[v6]:port" (the port is required). */
int bc_net_hostport_is_loopback(const char *hostport);
/* An AF_INET or AF_INET6 socket address; any other family is not loopback. */
int bc_net_addr_is_loopback(const struct sockaddr *sa);

/* Splits "host:port" or "[v6]:port" into host (without brackets, NUL-terminated in
 * host[hostlen]) and port (decimal, 0 to 65535). A bare IPv6 address needs its
 * brackets. BC_ERR_INVALID (host is then empty and *port 0). */
BC_WUR int bc_net_split_hostport(const char *s, char *host, size_t hostlen, uint16_t *port);

#endif
