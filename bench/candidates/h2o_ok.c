/* Step 1 candidate: libh2o-evloop 2.2.5 on OpenSSL (one event loop, h2o_accept: TLS,
 * ALPN h2/http1.1) answering "ok". usage: h2o_ok PORT CERT|- KEY */
#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/socket/evloop.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static h2o_globalconf_t config;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
	static h2o_generator_t gen = {NULL, NULL};
	h2o_iovec_t body = h2o_iovec_init(H2O_STRLIT("ok"));

	(void)self;
	req->res.status = 200;
	req->res.reason = "OK";
	h2o_start_response(req, &gen);
	h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
	return 0;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
	h2o_socket_t *sock;

	if (err != NULL || (sock = h2o_evloop_socket_accept(listener)) == NULL)
		return;
	h2o_accept(&accept_ctx, sock);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	h2o_pathconf_t *path;
	h2o_socket_t *ls;
	int fd, one = 1;

	if (argc < 4)
		return 2;
	h2o_config_init(&config);
	path = h2o_config_register_path(
	    h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535), "/",
	    0);
	h2o_create_handler(path, sizeof(h2o_handler_t))->on_req = on_req;
	h2o_context_init(&ctx, h2o_evloop_create(), &config);
	accept_ctx.ctx = &ctx;
	accept_ctx.hosts = config.hosts;
	if (strcmp(argv[2], "-") != 0) {
		SSL_CTX *s = SSL_CTX_new(TLS_server_method());
		SSL_CTX_set_min_proto_version(s, TLS1_2_VERSION);
		/* as ours: no tickets, no session cache (every client here is new) */
		SSL_CTX_set_options(s, SSL_OP_NO_TICKET);
		SSL_CTX_set_num_tickets(s, 0);
		SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
		if (SSL_CTX_use_certificate_chain_file(s, argv[2]) != 1 ||
		    SSL_CTX_use_PrivateKey_file(s, argv[3], SSL_FILETYPE_PEM) != 1)
			return 1;
		h2o_ssl_register_alpn_protocols(s, h2o_http2_alpn_protocols);
		accept_ctx.ssl_ctx = s;
	}
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 1024) != 0)
		return 1;
	ls = h2o_evloop_socket_create(ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(ls, on_accept);
	while (h2o_evloop_run(ctx.loop, INT32_MAX) == 0)
		;
	return 0;
}
