# Shared by the crash-consistency tests: source it after lib.sh (and pg_lib.sh), with
# var/ initialized and its server started. crash_rounds ROUNDS JOINS kills the server
# with SIGKILL while JOINS bc-join processes run at once (as soon as one of them has
# its answer), ROUNDS times, starting it
# again each time; then check_consistency SQL checks what every 200 answered against
# the store, where SQL is a command that prints one value per line for a query.
bc() { "$BIN/better-compute" "$@"; }
TOKENS=8
USES=5

crash_setup() {
	local pool
	pool=$(bc --json pools create crash | json_get '["id"]')
	bc daemon config --out pins.json
	for t in $(seq 1 $TOKENS); do
		bc tokens create --role node --pool "$pool" --uses $USES --out "tok$t" >/dev/null
	done
}

crash_rounds() {
	local rounds=$1 joins=$2 r j pids
	for r in $(seq 1 "$rounds"); do
		pids=""
		for j in $(seq 1 "$joins"); do
			"$BIN/bc-join" --pins pins.json --token-file "tok$(((r * joins + j) % TOKENS + 1))" \
				--out "m$r-$j" --product-uuid "$(printf '6b1d0c3e-cccc-4000-8000-%06d%06d' "$r" "$j")" \
				>"join$r-$j.out" 2>&1 &
			pids="$pids $!"
		done
		# in the middle of the joins: as soon as the first has its answer
		for _ in $(seq 1 300); do
			grep -q "joined as node_" join"$r"-*.out 2>/dev/null && break
			sleep 0.01
		done
		kill -KILL "$SERVER_PID"
		wait "$SERVER_PID" 2>/dev/null || true
		for p in $pids; do wait "$p" || true; done
		PIDS=$(echo "$PIDS" | sed "s/ $SERVER_PID//")
		echo "round $r: $(grep -l 'joined as node_' join"$r"-*.out 2>/dev/null | wc -l) of $joins joins answered 200 before SIGKILL"
		start_server var
	done
}

# check_consistency SQL
check_consistency() {
	local q=$1 ok=0 f node sha spent nodes
	for f in join*-*.out; do
		grep -q "joined as node_" "$f" || continue
		ok=$((ok + 1))
		node=$(sed -n 's/.*joined as \(node_[0-9a-z]*\).*/\1/p' "$f")
		dir=m${f#join}
		dir=${dir%.out}
		sha=$(openssl x509 -in "$dir/node.crt" -outform DER | sha256sum | cut -d' ' -f1)
		[ "$($q "SELECT COUNT(*) FROM nodes WHERE id = '$node'")" = 1 ] ||
			fail "$f answered 200 for $node, which is not in the store"
		[ "$($q "SELECT node_id FROM node_certs WHERE der_sha256 = '$sha'")" = "$node" ] ||
			fail "$f: the certificate answered is not $node's in the store"
	done
	spent=$($q "SELECT COALESCE(SUM(uses_total - uses_left), 0) FROM join_tokens")
	nodes=$($q "SELECT COUNT(*) FROM nodes")
	[ "$($q "SELECT COUNT(*) FROM join_tokens WHERE uses_left < 0 OR uses_left > uses_total")" = 0 ] ||
		fail "a token was spent beyond its uses"
	[ "$spent" = "$nodes" ] || fail "$spent token uses spent for $nodes nodes"
	[ "$ok" -le "$nodes" ] || fail "$ok joins answered 200 but only $nodes nodes"
	[ "$nodes" -le $((TOKENS * USES)) ] || fail "$nodes nodes from $((TOKENS * USES)) uses"
	[ "$($q "SELECT COUNT(*) FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM node_certs c WHERE c.node_id = n.id)")" = 0 ] ||
		fail "a node without a certificate"
	echo "consistent: $ok joins answered 200, $nodes nodes, $spent token uses spent of $((TOKENS * USES))"
}
