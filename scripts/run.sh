#!/bin/sh
# make run: initializes ./var on first start, prints how to join a machine, then
# runs the control plane in the foreground (Ctrl-C stops it cleanly).
set -eu
bin=$1
var=$2
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ ! -f "$var/server.toml" ]; then
	"$bin" init --dir "$var"
	echo
fi
url=$(sed -n 's/^public_url *= *"\(.*\)"/\1/p' "$var/server.toml")
cat <<MSG
The control plane is starting at ${url:-the address in $var/server.toml}.
Its web console: ${url:-the public_url}/console/ (sign in with the key in $var/admin.key).
To join a machine, in a second shell in $top:

  build/better-compute pools create web
  build/better-compute tokens create --role node --pool web --out $var/token
  build/better-compute daemon config --bcd-dir $var/machine1 --data-dir $top/$var/machine1/data
  build/bcd join --config $var/machine1/config.toml --token-file $var/token
  build/better-compute nodes list
  build/bcd status --config $var/machine1/config.toml

(the CLI finds the server and the admin key in ./$var by itself)

MSG
exec "$bin" serve --config "$var/server.toml"
