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
//	go run ./examples/toolserver [--addr 127.0.0.1:8090] [--keepalive 1s]
//
// It listens on loopback unless --addr names another host, and stops
// cleanly on Ctrl-C or SIGTERM: every running handler's context ends and
// the server waits for them.
//
// # Trying it
//
//	curl -s localhost:8090/tools
//	curl -sN -H 'Accept: text/event-stream' -H 'Idempotency-Key: k1' \
//		-H 'Budget-Remaining-Ms: 5000' -d '{"arguments":{}}' localhost:8090/tools/long_job
//	curl -s localhost:8090/tools/long_job/calls/k1
//
// The tools are built by demo.NewServer (package tools/demo), which the
// tests run on httptest and which `harness run`'s demo also serves in memory.
package main
