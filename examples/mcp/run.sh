#!/bin/sh
# examples/mcp: a run whose tools are two MCP servers, the reference server
# over stdio (fetched by npx) and the kit's demo tools over streamable
# HTTP; then the report over its trace. Run from the repository's root
# after `make build`, or as `make mcp`. OUT (default bin) gets the trace.
set -eu
harness=${HARNESS:-bin/harness}
out=${OUT:-bin}
addr=127.0.0.1:8090
rm -f "$out/mcp.jsonl" "$out/mcp-toolserver.log"

go build -o "$out/toolserver" ./examples/toolserver
"$out/toolserver" --addr "$addr" --mcp 2>"$out/mcp-toolserver.log" &
server=$!
stop() { kill -TERM "$server" 2>/dev/null && wait "$server" || true; }
trap stop EXIT
i=0
until curl -s -o /dev/null "http://$addr/tools"; do
	i=$((i + 1))
	if [ "$i" -gt 200 ] || ! kill -0 "$server" 2>/dev/null; then
		echo "the demo tool server did not start:" >&2
		cat "$out/mcp-toolserver.log" >&2
		exit 1
	fi
	sleep 0.05
done

"$harness" run --budget 60s --tools examples/mcp/tools.yaml --trace "$out/mcp.jsonl" \
	--journal "$out/mcp-orphans.jsonl" "Add 2 and 3, then look up deadline budgets"
"$harness" report "$out/mcp.jsonl"
