// Command toolserver is a remote tool server built with package kit
// (github.com/glidepath/glidepath/tools/kit), with one tool for each
// behavior a harness must survive:
//
//	search    read, fast, deterministic results for a query
//	fetch     read; hangs on the first attempt of each Idempotency-Key until
//	          its deadline, answers the next attempt
//	long_job  read, cancellable; a progress heartbeat every 200ms for 2s
//	commit    write, not cancellable; commits late: it ignores its deadline,
//	          works 1.5s, then records done, for the caller to reconcile by key
//	stuck     read; sends only keepalive comments until its deadline
//	stale     read; repeats the same progress units, which never count
//
// Usage:
//
//	go run ./examples/toolserver [--addr 127.0.0.1:8090] [--keepalive 1s] [--mcp]
//	go run ./examples/toolserver --mcp-stdio
//
// It listens on loopback unless --addr names another host, and stops
// cleanly on Ctrl-C or SIGTERM: every running handler's context ends and
// the server waits for them.
//
// With --mcp it also serves the same tools over MCP's streamable HTTP at
// /mcp on the same address, for any MCP client: a tool written once with
// the kit answers both protocols, from the same records (a key used over
// MCP is found by the status endpoint). With --mcp-stdio it serves MCP on
// its stdin and stdout instead of HTTP, so that an MCP client can start
// it as a command, and stops when the client closes its stdin; what it
// says itself then goes to stderr. Either way a tools/call's _meta may
// carry io.github.glidepath/budget-remaining-ms and
// io.github.glidepath/idempotency-key, which the kit reads as it reads
// the Budget-Remaining-Ms and Idempotency-Key headers, and a progressToken
// for the progress of long_job, stale and the like (package kit, # MCP).
// A tools file names it as Glidepath's MCP servers are named (SPEC §5b):
//
//	{"tools": [],
//	 "mcpServers": {
//	   "demo": {"command": "go", "args": ["run", "./examples/toolserver", "--mcp-stdio"],
//	            "tools": {"search": {"effect": "read"}}},
//	   "demo-http": {"url": "http://127.0.0.1:8090/mcp", "trust_hints": true}}}
//
// # Trying it
//
//	curl -s localhost:8090/tools
//	curl -sN -H 'Accept: text/event-stream' -H 'Idempotency-Key: k1' \
//		-H 'Budget-Remaining-Ms: 5000' -d '{"arguments":{}}' localhost:8090/tools/long_job
//	curl -s localhost:8090/tools/long_job/calls/k1
//
// With --mcp, any MCP client, e.g. the MCP Inspector:
//
//	npx @modelcontextprotocol/inspector   # then connect to http://127.0.0.1:8090/mcp
//
// The tools are built by demo.NewServer (package tools/demo), which the
// tests run on httptest and which `harness run`'s demo also serves in memory.
package main
