/* bc/net.h: which hosts and listen addresses stay on this machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "bc/net.h"

static void test_host(void **state)
{
	(void)state;
	assert_true(bc_net_host_is_loopback("127.0.0.1"));
	assert_true(bc_net_host_is_loopback("127.1.2.3"));
	assert_true(bc_net_host_is_loopback("localhost"));
	assert_true(bc_net_host_is_loopback("LOCALHOST"));
	assert_true(bc_net_host_is_loopback("LocalHost"));
	assert_true(bc_net_host_is_loopback("[::1]"));
	assert_true(bc_net_host_is_loopback("::1"));
	assert_true(bc_net_host_is_loopback("[0:0:0:0:0:0:0:1]"));
	assert_false(bc_net_host_is_loopback("10.0.0.1"));
	assert_false(bc_net_host_is_loopback("128.0.0.1"));
	assert_false(bc_net_host_is_loopback("0.0.0.0"));
	assert_false(bc_net_host_is_loopback("localhost.evil.com"));
	assert_false(bc_net_host_is_loopback("localhost."));
	assert_false(bc_net_host_is_loopback("127.0.0.1.evil.com"));
	assert_false(bc_net_host_is_loopback("127.1"));
	assert_false(bc_net_host_is_loopback("[::]"));
	assert_false(bc_net_host_is_loopback("[::ffff:10.0.0.1]"));
	assert_false(bc_net_host_is_loopback("[::1"));
	assert_false(bc_net_host_is_loopback("[127.0.0.1]"));
	assert_false(bc_net_host_is_loopback(""));
	assert_false(bc_net_host_is_loopback(NULL));
}

static void test_hostport(void **state)
{
	(void)state;
	assert_true(bc_net_hostport_is_loopback("127.0.0.1:8080"));
	assert_true(bc_net_hostport_is_loopback("127.255.0.1:1"));
	assert_true(bc_net_hostport_is_loopback("localhost:80"));
	assert_true(bc_net_hostport_is_loopback("LOCALHOST:80"));
	assert_true(bc_net_hostport_is_loopback("[::1]:0"));
	assert_false(bc_net_hostport_is_loopback("0.0.0.0:80"));
	assert_false(bc_net_hostport_is_loopback("10.1.2.3:80"));
	assert_false(bc_net_hostport_is_loopback("128.0.0.1:80"));
	assert_false(bc_net_hostport_is_loopback("[::]:80"));
	assert_false(bc_net_hostport_is_loopback("[::ffff:10.0.0.1]:80"));
	assert_false(bc_net_hostport_is_loopback("localhost.evil.com:80"));
	assert_false(bc_net_hostport_is_loopback("::1:80")); /* brackets needed */
	assert_false(bc_net_hostport_is_loopback("127.0.0.1"));
	assert_false(bc_net_hostport_is_loopback("127.0.0.1:65536"));
	assert_false(bc_net_hostport_is_loopback("127.0.0.1:8x"));
	assert_false(bc_net_hostport_is_loopback(""));
	assert_false(bc_net_hostport_is_loopback(NULL));
}

static void test_split(void **state)
{
	char host[64];
	uint16_t port;

	(void)state;
	assert_int_equal(bc_net_split_hostport("[::1]:8443", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 8443);
	assert_int_equal(bc_net_split_hostport("example.com:65535", host, sizeof(host), &port), 0);
	assert_string_equal(host, "example.com");
	assert_int_equal(port, 65535);
	assert_int_equal(bc_net_split_hostport(":80", host, sizeof(host), &port), BC_ERR_INVALID);
	assert_string_equal(host, "");
	assert_int_equal(bc_net_split_hostport("h:", host, sizeof(host), &port), BC_ERR_INVALID);
	assert_int_equal(bc_net_split_hostport("h:-1", host, sizeof(host), &port), BC_ERR_INVALID);
	assert_int_equal(bc_net_split_hostport("h:123456", host, sizeof(host), &port),
	                 BC_ERR_INVALID);
	assert_int_equal(bc_net_split_hostport("a-long-host-name:1", host, 8, &port),
	                 BC_ERR_INVALID);
	assert_int_equal(port, 0);
}

static void test_addr(void **state)
{
	struct sockaddr_in v4 = {.sin_family = AF_INET};
	struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
	struct sockaddr other = {.sa_family = AF_UNIX};

	(void)state;
	assert_int_equal(inet_pton(AF_INET, "127.1.2.3", &v4.sin_addr), 1);
	assert_true(bc_net_addr_is_loopback((struct sockaddr *)&v4));
	assert_int_equal(inet_pton(AF_INET, "10.0.0.1", &v4.sin_addr), 1);
	assert_false(bc_net_addr_is_loopback((struct sockaddr *)&v4));
	assert_int_equal(inet_pton(AF_INET6, "::1", &v6.sin6_addr), 1);
	assert_true(bc_net_addr_is_loopback((struct sockaddr *)&v6));
	assert_int_equal(inet_pton(AF_INET6, "::ffff:127.0.0.1", &v6.sin6_addr), 1);
	assert_false(bc_net_addr_is_loopback((struct sockaddr *)&v6));
	assert_false(bc_net_addr_is_loopback(&other));
	assert_false(bc_net_addr_is_loopback(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host),
	    cmocka_unit_test(test_hostport),
	    cmocka_unit_test(test_split),
	    cmocka_unit_test(test_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
