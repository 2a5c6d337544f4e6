/* Loopback checks and listen addresses, for the server, the client and the CLI. */
#include "bc/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int bc_net_addr_is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;

	if (sa == NULL)
		return 0;
	switch (sa->sa_family) {
	case AF_INET: return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
	case AF_INET6: return IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
	default: return 0;
	}
}

int bc_net_host_is_loopback(const char *host)
{
	struct sockaddr_in v4 = {.sin_family = AF_INET};
	struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
	char buf[INET6_ADDRSTRLEN + 1];
	size_t n;

	if (host == NULL)
		return 0;
	if (strcasecmp(host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, host, &v4.sin_addr) == 1)
		return bc_net_addr_is_loopback((const struct sockaddr *)&v4);
	n = strlen(host);
	if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
		if (n - 2 >= sizeof(buf))
			return 0;
		memcpy(buf, host + 1, n - 2);
		buf[n - 2] = '\0';
		host = buf;
	}
	if (inet_pton(AF_INET6, host, &v6.sin6_addr) == 1)
		return bc_net_addr_is_loopback((const struct sockaddr *)&v6);
	return 0;
}

int bc_net_hostport_is_loopback(const char *hostport)
{
	char host[INET6_ADDRSTRLEN + 1];
	uint16_t port;

	if (bc_net_split_hostport(hostport, host, sizeof(host), &port) != 0)
		return 0;
	return bc_net_host_is_loopback(host);
}

int bc_net_split_hostport(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	const char *colon, *h = s, *hend;
	unsigned long v;
	char *end;

	*port = 0;
	if (hostlen > 0)
		host[0] = '\0';
	if (s == NULL || (colon = strrchr(s, ':')) == NULL)
		return BC_ERR_INVALID;
	hend = colon;
	if (*h == '[') {
		if (hend == h || hend[-1] != ']')
			return BC_ERR_INVALID;
		h++;
		hend--;
	} else if (memchr(h, ':', (size_t)(colon - h)) != NULL) {
		return BC_ERR_INVALID; /* a bare IPv6 address needs brackets */
	}
	if (hend <= h || (size_t)(hend - h) >= hostlen)
		return BC_ERR_INVALID;
	if (colon[1] < '0' || colon[1] > '9' || strlen(colon + 1) > 5)
		return BC_ERR_INVALID;
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || v > 65535)
		return BC_ERR_INVALID;
	memcpy(host, h, (size_t)(hend - h));
	host[hend - h] = '\0';
	*port = (uint16_t)v;
	return 0;
}
