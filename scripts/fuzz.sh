#!/bin/sh
# Runs every libFuzzer target in a build directory for the given seconds each,
# starting from its seed corpus (tests/fuzz/corpus/<name>/) when there is one.
set -eu
dir=$1
secs=$2
top=$(cd "$(dirname "$0")/.." && pwd)
n=0
for f in "$dir"/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	work=$(mktemp -d)
	if [ -d "$top/tests/fuzz/corpus/$name" ]; then
		cp -r "$top/tests/fuzz/corpus/$name/." "$work/"
	fi
	printf 'fuzz %-28s %ss ... ' "$name" "$secs"
	if "$f" -max_total_time="$secs" -print_final_stats=1 "$work" >"$work.log" 2>&1; then
		execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work.log" | grep -o '[0-9]*$' || echo '?')
		echo "ok ($execs runs)"
	else
		echo "FAILED"
		tail -40 "$work.log"
		rm -rf "$work" "$work.log"
		exit 1
	fi
	rm -rf "$work" "$work.log"
	n=$((n + 1))
done
echo "fuzz: $n targets ran"
