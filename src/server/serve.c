/* `better-compute serve --config server.toml` */
#include "server/serve.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bc/log.h"
#include "bc/reload.h"
#include "server/server.h"

/* On stdout when asked for (--help), on stderr after a usage error. */
static void usage(FILE *f)
{
	fprintf(f, "usage: better-compute serve --config server.toml\n"
	           "  starts the control plane (JoinService, the admin API, /healthz);\n"
	           "  SIGTERM or SIGINT finishes in-flight requests and exits;\n"
	           "  SIGHUP reads cloud-iid's JWKS files again (nothing else).\n"
	           "  `better-compute init --dir var` writes a server.toml to start from.\n");
}

/* The database setting as the log may show it: a postgres:// URL without its password
 * (user:secret@ -> user@; a password=... parameter -> password=xxx). */
static void store_shown(const char *db, char *out, size_t outlen)
{
	const char *scheme = strstr(db, "://"), *host, *at = NULL, *colon, *pw;
	char tmp[512];

	snprintf(out, outlen, "%s", db);
	if (scheme == NULL)
		return;
	/* the userinfo ends at the authority's last '@' (a password may hold one) */
	host = scheme + 3;
	for (const char *p = host; p < host + strcspn(host, "/?"); p++)
		if (*p == '@')
			at = p;
	colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
	if (colon != NULL)
		snprintf(out, outlen, "%.*s%s", (int)(colon - db), db, at);
	if ((pw = strstr(out, "password=")) != NULL) {
		snprintf(tmp, sizeof(tmp), "%.*spassword=xxx%s", (int)(pw - out), out,
		         pw + 9 + strcspn(pw + 9, "&"));
		snprintf(out, outlen, "%s", tmp);
	}
}

int bc_cmd_serve(int argc, char **argv)
{
	struct bc_server_config cfg;
	struct bc_server *srv = NULL;
	const char *path = NULL;
	char err[512] = "";
	sigset_t set;
	int sig = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			path = argv[i] + 9;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "better-compute serve: unknown argument %s\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (path == NULL) {
		fprintf(stderr, "better-compute serve: --config is required\n");
		usage(stderr);
		return 2;
	}
	if (bc_server_config_load(path, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "better-compute serve: %s\n", err);
		bc_server_config_free(&cfg);
		return 1;
	}
	bc_log_set_level(cfg.log_level);
	bc_log_set_format(cfg.log_format);
	/* block the signals before any thread starts, so only sigwait() sees them */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((rc = bc_server_start(&cfg, NULL, NULL, &srv, err, sizeof(err))) != 0) {
		fprintf(stderr, "better-compute serve: %s\n", err[0] ? err : bc_err_str(rc));
		bc_server_config_free(&cfg);
		return 1;
	}
	char port[8], mport[8], store[512], attestors[512];
	snprintf(port, sizeof(port), "%u", bc_server_port(srv));
	snprintf(mport, sizeof(mport), "%u", bc_server_metrics_port(srv));
	bc_server_attestors(srv, attestors, sizeof(attestors));
	store_shown(cfg.database, store, sizeof(store));
	bc_log(BC_LOG_INFO, "control plane listening", "version", BC_VERSION, "store",
	       strncmp(cfg.database, "postgres", 8) == 0 ? "postgresql" : "sqlite", "database",
	       store, "listen", cfg.listen, "port", port, "url", cfg.public_url, "tls",
	       cfg.tls_cert ? "on" : "off", "metrics_listen",
	       cfg.metrics_listen ? cfg.metrics_listen : "none", "metrics_port",
	       cfg.metrics_listen ? mport : "", "attestors", attestors, "access_log",
	       cfg.access_log ? "on" : "off", NULL);
	while (sigwait(&set, &sig) == 0 && sig == SIGHUP) {
		bc_reload_request();
		bc_log(BC_LOG_INFO, "SIGHUP: JWKS files are read again at their next use", NULL);
	}
	bc_log(BC_LOG_INFO, "shutting down", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
	bc_server_stop(srv);
	bc_log(BC_LOG_INFO, "stopped", NULL);
	bc_server_config_free(&cfg);
	return 0;
}
