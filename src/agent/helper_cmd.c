/* bcd helper, the command: root, a Unix socket at [helper] socket, one session at a
 * time (helper.h), each from the [helper] user alone. SIGTERM or SIGINT end it with
 * status 0 and remove the socket. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/helper.h"
#include "bc/log.h"

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/* The socket's directory is root's and no one else's to write: whoever can write it
 * could swap the socket for one of their own (and hand bcd node a key of theirs for a
 * TPM one), or a symbolic link, between our bind and chown. */
static int socket_dir_safe(const char *path, struct bcd_msg *m)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0'; /* an absolute path (config.c) */
	if (lstat(dir[0] != '\0' ? dir : "/", &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
		bcd_say(m,
		        "helper: the socket's directory %s must be a directory of root's that no "
		        "one else can write (systemd's RuntimeDirectory=bcd makes /run/bcd so)",
		        dir[0] != '\0' ? dir : "/");
		return BC_ERR_CONFIG;
	}
	return 0;
}

/* The socket: a stale one replaced, owned by root and the user's group, 0660 from its
 * bind on (the umask), so only root and that group can even connect; the peer check
 * below is what decides. */
static int listen_on(const struct bcd_config *cfg, gid_t gid, int *fd, struct bcd_msg *m)
{
	struct sockaddr_un sa;
	mode_t old;
	int s, rc;

	*fd = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cfg->helper_socket);
	if ((rc = socket_dir_safe(sa.sun_path, m)) != 0)
		return rc;
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		bcd_say(m, "helper: socket: %s", strerror(errno));
		return BC_ERR_IO;
	}
	if (unlink(sa.sun_path) != 0 && errno != ENOENT) {
		bcd_say(m, "helper: cannot remove the old %s: %s", sa.sun_path, strerror(errno));
		close(s);
		return BC_ERR_IO;
	}
	old = umask(0117);
	rc = bind(s, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	/* never through a symbolic link, whatever is at the path by now */
	if (rc != 0 || fchownat(AT_FDCWD, sa.sun_path, 0, gid, AT_SYMLINK_NOFOLLOW) != 0 ||
	    listen(s, 8) != 0) {
		bcd_say(m,
		        "helper: cannot listen on %s: %s (is its directory there? systemd's "
		        "RuntimeDirectory=bcd makes /run/bcd)",
		        sa.sun_path, strerror(errno));
		close(s);
		return BC_ERR_IO;
	}
	*fd = s;
	return 0;
}

/* Who may talk to the helper: the [helper] user, by uid, never root. */
static int peer_allowed(int c, uid_t uid, char *why, size_t len)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &n) != 0 || n != sizeof(cr)) {
		snprintf(why, len, "refused: no peer credentials");
		return 0;
	}
	if (cr.uid != uid) {
		snprintf(why, len, "refused: uid %u is not the helper's user", (unsigned)cr.uid);
		return 0;
	}
	return 1;
}

static void session(struct bcd_helper *h, int c, uid_t uid)
{
	struct timeval tv = {.tv_sec = BCD_HELPER_TIMEOUT_S, .tv_usec = 0};
	char why[128], uidtext[16];

	(void)setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!peer_allowed(c, uid, why, sizeof(why))) {
		bc_log(BC_LOG_WARN, "helper: peer refused", "error", why, NULL);
		bcd_helper_refuse(c, why);
		return;
	}
	snprintf(uidtext, sizeof(uidtext), "%u", (unsigned)uid);
	if (bcd_helper_serve(h, c) != 0)
		bc_log(BC_LOG_INFO, "helper: session ended", "uid", uidtext, NULL);
}

static int serve_loop(struct bcd_helper *h, int s, uid_t uid)
{
	struct pollfd p = {.fd = s, .events = POLLIN};

	while (!stopping) {
		int c, n = poll(&p, 1, 1000);
		if (n < 0 && errno != EINTR)
			return BC_ERR_IO;
		if (n <= 0)
			continue;
		if ((c = accept4(s, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		session(h, c, uid);
		close(c);
	}
	return 0;
}

static int helper_user(const struct bcd_config *cfg, uid_t *uid, gid_t *gid, struct bcd_msg *m)
{
	struct passwd *pw = getpwnam(cfg->helper_user);

	if (pw == NULL) {
		bcd_say(m, "helper: no user %s ([helper] user in %s); the install script makes it",
		        cfg->helper_user, cfg->path);
		return BC_ERR_CONFIG;
	}
	if (pw->pw_uid == 0) {
		bcd_say(m,
		        "helper: [helper] user %s is root; name the unprivileged user bcd node "
		        "runs as",
		        cfg->helper_user);
		return BC_ERR_CONFIG;
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

int bcd_cmd_helper(const struct bcd_opts *o, struct bcd_msg *m, int *exit_status)
{
	struct bcd_config cfg;
	struct bcd_helper *h = NULL;
	struct sigaction sa;
	char tcti[BCD_TCTI_MAX];
	uid_t uid = 0;
	gid_t gid = 0;
	int s = -1, rc;

	(void)exit_status;
	bc_log_set_level(BC_LOG_INFO);
	if ((rc = bcd_config_load(o->config, &cfg, m)) != 0)
		return rc;
	if (!cfg.has_helper) {
		bcd_say(m,
		        "%s has no [helper] table: bcd helper serves the bcd node of such a config",
		        cfg.path);
		rc = BC_ERR_CONFIG;
		goto out;
	}
	if (geteuid() != 0) {
		bcd_say(m, "bcd helper runs as root (it opens the TPM)");
		rc = BC_ERR_DENIED;
		goto out;
	}
	if ((rc = helper_user(&cfg, &uid, &gid, m)) != 0 ||
	    (rc = bcd_tpm_tcti(&cfg, BCD_TPM_ANY, tcti, sizeof(tcti), m)) != 0)
		goto out;
	if ((rc = bcd_helper_new(tcti, &h)) != 0 || (rc = listen_on(&cfg, gid, &s, m)) != 0)
		goto out;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	bc_log(BC_LOG_INFO, "helper: started", "socket", cfg.helper_socket, "user", cfg.helper_user,
	       "tpm", tcti, NULL);
	rc = serve_loop(h, s, uid);
	unlink(cfg.helper_socket);
	bc_log(BC_LOG_INFO, "helper: stopped", NULL);
out:
	if (s >= 0)
		close(s);
	bcd_helper_free(h);
	bcd_config_free(&cfg);
	return rc;
}
