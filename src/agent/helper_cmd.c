/* bcd helper, the command: root, a Unix socket at [helper] socket, up to
 * BCD_HELPER_SESSIONS_MAX sessions at once in one poll (helper.h), each from the
 * [helper] user alone and each with its own deadline. SIGTERM or SIGINT end it with
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

/* A new peer: refused unless it is the user and a session is free; else its session. */
static void admit(struct bcd_helper *h, int s, uid_t uid, struct bcd_helper_session **ss, size_t *n,
                  unsigned idle_ms)
{
	struct timeval tv = {.tv_sec = idle_ms / 1000, .tv_usec = (idle_ms % 1000) * 1000};
	char why[128];
	int c;

	if ((c = accept4(s, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return;
	/* answers are written blocking: a peer that does not read them holds the helper
	 * no longer than the idle time */
	(void)setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!peer_allowed(c, uid, why, sizeof(why))) {
		bc_log(BC_LOG_WARN, "helper: peer refused", "error", why, NULL);
	} else if (*n == BCD_HELPER_SESSIONS_MAX) {
		snprintf(why, sizeof(why), "busy: %d sessions open; try again",
		         BCD_HELPER_SESSIONS_MAX);
		bc_log(BC_LOG_WARN, "helper: peer refused", "error", why, NULL);
	} else if (bcd_helper_session_new(h, c, &ss[*n]) == 0) {
		(*n)++;
		return;
	} else {
		snprintf(why, sizeof(why), "out of memory");
	}
	bcd_helper_refuse(c, why);
	close(c);
}

static void end_session(struct bcd_helper *h, struct bcd_helper_session *s, int rc, uid_t uid)
{
	char uidtext[16];
	int fd = bcd_helper_session_fd(s);

	snprintf(uidtext, sizeof(uidtext), "%u", (unsigned)uid);
	if (rc == BC_ERR_EXPIRED)
		bc_log(BC_LOG_WARN,
		       "helper: no complete request within the idle time; session closed", "uid",
		       uidtext, NULL);
	else if (rc != BCD_HELPER_ENDED)
		bc_log(BC_LOG_INFO, "helper: session ended", "uid", uidtext, "error",
		       bc_err_str(rc), NULL);
	bcd_helper_session_free(h, s);
	close(fd);
}

/* The listening socket and every open session in one poll: each session has its own
 * deadline, and a request is answered as soon as it is whole, whatever the others do. */
static int serve_loop(struct bcd_helper *h, int s, uid_t uid, unsigned idle_ms)
{
	struct bcd_helper_session *ss[BCD_HELPER_SESSIONS_MAX];
	struct pollfd p[1 + BCD_HELPER_SESSIONS_MAX];
	size_t n = 0;

	while (!stopping) {
		int wait = 1000, k;
		p[0] = (struct pollfd){.fd = s, .events = POLLIN};
		for (size_t i = 0; i < n; i++) {
			int w = bcd_helper_session_wait(ss[i]);
			p[1 + i] =
			    (struct pollfd){.fd = bcd_helper_session_fd(ss[i]), .events = POLLIN};
			wait = w < wait ? w : wait;
		}
		if ((k = poll(p, 1 + n, wait)) < 0 && errno != EINTR)
			break;
		/* from the last, so that moving the last session into a freed slot skips none */
		for (size_t i = n; i-- > 0;) {
			int rc = bcd_helper_session_step(h, ss[i], k > 0 && p[1 + i].revents != 0);
			if (rc != 0) {
				end_session(h, ss[i], rc, uid);
				ss[i] = ss[--n];
			}
		}
		if (k > 0 && (p[0].revents & POLLIN))
			admit(h, s, uid, ss, &n, idle_ms);
	}
	while (n > 0)
		end_session(h, ss[--n], BCD_HELPER_ENDED, uid);
	return stopping ? 0 : BC_ERR_IO;
}

/* BCD_HELPER_IDLE_SECONDS (1 .. BCD_HELPER_TIMEOUT_S) may shorten the idle time, for tests
 * that watch a session cut off; it is never longer than the default. */
static int idle_time(unsigned *ms, struct bcd_msg *m)
{
	const char *v = getenv("BCD_HELPER_IDLE_SECONDS");
	char *end = NULL;
	long s;

	*ms = BCD_HELPER_TIMEOUT_S * 1000;
	if (v == NULL || v[0] == '\0')
		return 0;
	errno = 0;
	s = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || s < 1 || s > BCD_HELPER_TIMEOUT_S) {
		bcd_say(m, "helper: BCD_HELPER_IDLE_SECONDS is a number of seconds from 1 to %d",
		        BCD_HELPER_TIMEOUT_S);
		return BC_ERR_CONFIG;
	}
	*ms = (unsigned)s * 1000;
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
	unsigned idle_ms = 0;
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
	if ((rc = idle_time(&idle_ms, m)) != 0 || (rc = bcd_helper_new(tcti, &h)) != 0 ||
	    (rc = bcd_helper_set_idle(h, idle_ms)) != 0 || (rc = listen_on(&cfg, gid, &s, m)) != 0)
		goto out;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	bc_log(BC_LOG_INFO, "helper: started", "socket", cfg.helper_socket, "user", cfg.helper_user,
	       "tpm", tcti, NULL);
	rc = serve_loop(h, s, uid, idle_ms);
	unlink(cfg.helper_socket);
	bc_log(BC_LOG_INFO, "helper: stopped", NULL);
out:
	if (s >= 0)
		close(s);
	bcd_helper_free(h);
	bcd_config_free(&cfg);
	return rc;
}
