#!/usr/bin/env bash
# bcd's own words: --version and version print the project's VERSION; every command's
# --help (and bcd help CMD) is its own usage, flags and what it does, from the one
# command table; a flag of another command is a usage error (exit 2) naming it; bcd
# completion bash is a script bash loads and that completes commands, flags and values.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bcd_lib.sh"
cd "$T"

want=$(sed -n 's/^project(better_compute VERSION \([0-9.]*\) .*/\1/p' "$BC_SOURCE_DIR/CMakeLists.txt")
[ -n "$want" ] || fail "no VERSION in CMakeLists.txt"
[ "$(bcd --version)" = "bcd $want" ] || fail "bcd --version: $(bcd --version)"
[ "$(bcd version)" = "bcd $want" ] || fail "bcd version: $(bcd version)"

# each command's help is its own, and the same through bcd help CMD
declare -A flag=([join]=--token-file [node]=--config [status]=--json [doctor]=--json
	[helper]=--config [site]=--config [ramdisk]=--cmdline [version]="" [completion]=bash)
for c in join node status doctor helper site ramdisk version completion; do
	bcd "$c" --help >h1.out || fail "bcd $c --help exited $?"
	bcd help "$c" >h2.out || fail "bcd help $c exited $?"
	cmp -s h1.out h2.out || fail "bcd $c --help and bcd help $c differ"
	head -1 h1.out | grep -q "^usage: bcd $c\b" || fail "bcd $c --help: $(head -1 h1.out)"
	[ -z "${flag[$c]}" ] || grep -q -- "${flag[$c]}" h1.out || fail "bcd $c --help lacks ${flag[$c]}"
	grep -q "^Exit status: 0 ok, 1 failed, 2 usage error" h1.out || fail "bcd $c --help: no exit codes"
done
bcd join --help | grep -q -- "--json" && fail "bcd join --help lists --json, which is not join's"
bcd status --help | grep -q -- "--token-file" && fail "bcd status --help lists --token-file"
bcd --help | grep -q "^  completion " || fail "the global usage lacks completion"

# exit codes: a flag of another command, an unknown command, no shell: 2
rc=0; bcd status --token-file x >u.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--token-file does not go with bcd status" u.out || fail "status --token-file: $rc $(cat u.out)"
grep -q "^usage: bcd status" u.out || fail "the usage error does not show status's usage"
rc=0; bcd --token-file x doctor >u.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--token-file does not go with bcd doctor" u.out || fail "before the command: $rc $(cat u.out)"
# --attestor: one of bcd join's (the attestor table), the message lists them; discovery
# is bcd ramdisk's
for a in nosuch discovery; do
	rc=0; bcd join --attestor "$a" >u.out 2>&1 || rc=$?
	[ "$rc" = 2 ] && grep -q -- "--attestor $a: bcd join takes one of join-token, tpm, x509pop, provisioned, cloud-iid" u.out ||
		fail "join --attestor $a: $rc $(cat u.out)"
done
rc=0; bcd join --attestor tpm --provider gcp >u.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--provider and --identity-token-file go with --attestor cloud-iid" u.out ||
	fail "join --attestor tpm --provider: $rc $(cat u.out)"
rc=0; bcd join --attestor tpm --role site >u.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--role site joins with a site token (--attestor join-token)" u.out ||
	fail "join --attestor tpm --role site: $rc $(cat u.out)"
rc=0; bcd frobnicate >u.out 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "unknown command exited $rc"
rc=0; bcd completion >u.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "which shell" u.out || fail "completion without a shell: $rc $(cat u.out)"
rc=0; bcd completion zsh >u.out 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "completion zsh exited $rc"

# the completion script loads and completes
bcd completion bash >bcd.bash
bash -n bcd.bash || fail "the completion script does not parse"
complete_words() { # the words bash offers after "bcd $*"
	bash -c '. ./bcd.bash; COMP_WORDS=(bcd "$@"); COMP_CWORD=$(($# )); _bcd; echo "${COMPREPLY[*]}"' _ "$@"
}
[ "$(complete_words do)" = doctor ] || fail "bcd do<TAB>: $(complete_words do)"
[ "$(complete_words doctor --)" = "--config --json --help" ] || fail "bcd doctor --<TAB>: $(complete_words doctor --)"
[ "$(complete_words join --attestor t)" = tpm ] || fail "--attestor t<TAB>: $(complete_words join --attestor t)"
[ "$(complete_words join --role "")" = "node site" ] || fail "--role <TAB>: $(complete_words join --role "")"
[ "$(complete_words help ra)" = ramdisk ] || fail "help ra<TAB>: $(complete_words help ra)"
[ "$(complete_words completion "")" = "bash --help" ] || fail "completion <TAB>"
echo "ok: bcd --version, per-command help, usage exit codes and bash completion"
