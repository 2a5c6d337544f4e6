#!/bin/sh
# Installs the Debian 12 packages that building, running and testing need, when
# missing (Chromium, Node.js and npm for the web console's browser test too;
# debhelper, dpkg-dev, lintian and fakeroot for make deb; prometheus for promtool, which
# the metrics test runs on a scrape and on the alert rules). Run as root (make does
# it for you); does nothing when all are present.
set -eu
PKGS="build-essential cmake pkg-config clang clang-format libclang-rt-14-dev git curl ca-certificates openssl python3 procps
libssl-dev libsqlite3-dev libpq-dev libprotobuf-c-dev protobuf-c-compiler
libh2o-evloop-dev libjansson-dev libtss2-dev libcmocka-dev
postgresql swtpm swtpm-tools tpm2-tools groff-base python3-cryptography
debhelper dpkg-dev lintian fakeroot
prometheus
chromium"
# the console's browser test drives chromium with npm playwright-core (tests/console):
# Debian's Node.js and npm unless a Node.js with npm is already installed
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"
missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing Debian packages:$missing" >&2
	echo "deps: run as root, or: sudo apt-get install$missing" >&2
	exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
