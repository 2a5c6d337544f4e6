#!/usr/bin/env bash
# The startup line of a server on PostgreSQL names the engine and the URL without its
# password (user:secret@ and password=... both hidden), and the server still works.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_lib.sh"
cd "$T"
PORT=$(free_port)
"$BIN/better-compute" init --dir var --listen "127.0.0.1:$PORT" >init.out
# the same URL with a password in it (the throwaway cluster trusts loopback)
SECRETURL=$(echo "$PGURL" | sed 's|^postgres\(ql\)\?://\([^@:/]*\)@|postgres://\2:s3cr3tpw%40x@|')
case "$SECRETURL" in *s3cr3tpw*) ;; *) fail "cannot put a password into $PGURL" ;; esac
case "$SECRETURL" in *\?*) SECRETURL="$SECRETURL&password=s3cr3tpw" ;; *) SECRETURL="$SECRETURL?password=s3cr3tpw" ;; esac
sed -i "s|^database *=.*|database = \"$SECRETURL\"|" var/server.toml
start_server var
line=$(grep 'msg="control plane listening"' var/serve.log) || fail "no startup line: $(cat var/serve.log)"
case "$line" in *" store=postgresql "*) ;; *) fail "the startup line does not say postgresql: $line" ;; esac
case "$line" in *s3cr3tpw*) fail "the startup line shows the password: $line" ;; esac
case "$line" in *"password=xxx"*) ;; *) fail "the password= parameter is not masked: $line" ;; esac
grep -q s3cr3tpw var/serve.log && fail "the log shows the password"
stop_server var
echo "ok: $line"
