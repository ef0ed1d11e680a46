#!/bin/sh
# examples/subagents: a parent run with three researcher sub-agents, two in
# this process and one in another, served by `harness serve`; then the
# report over both traces. Run from the repository's root after
# `make build`, or as `make subagents`. OUT (default bin) gets the traces.
set -eu
harness=${HARNESS:-bin/harness}
here=examples/subagents
out=${OUT:-bin}
addr=127.0.0.1:8093
rm -f "$out/subagents.jsonl" "$out/subagents-serve.jsonl" "$out/subagents-serve.log"

"$harness" serve --addr "$addr" --tools "$here/remote.yaml" --trace "$out/subagents-serve.jsonl" \
	2>"$out/subagents-serve.log" &
serve=$!
stop() { kill -TERM "$serve" 2>/dev/null && wait "$serve" || true; }
trap stop EXIT
i=0
until grep -q "serving" "$out/subagents-serve.log"; do
	i=$((i + 1))
	if [ "$i" -gt 200 ] || ! kill -0 "$serve" 2>/dev/null; then
		echo "harness serve did not start:" >&2
		cat "$out/subagents-serve.log" >&2
		exit 1
	fi
	sleep 0.05
done
sed 's/^/  /' "$out/subagents-serve.log"

"$harness" run --budget 20s --tools "$here/tools.yaml" --trace "$out/subagents.jsonl" \
	"Why do deadlines compose where timeouts do not?"

# SIGTERM lands any child still running and the server exits 0; its trace
# is whole once it has.
stop
trap - EXIT
sed 's/^/  /' "$out/subagents-serve.log" | tail -n +4
"$harness" report "$out/subagents.jsonl" "$out/subagents-serve.jsonl"
