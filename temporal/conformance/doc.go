// Package conformance holds the suite that runs one table of scenarios
// through both of Glidepath's hosts — the in-process harness (package
// harness, as `harness run` drives it) and the durable workflow (package
// durable, on an in-process Temporal server) — and asserts that they end
// the same: status, cause, boundary, in_flight, unavailable, the
// result's steps, attempts and orphans, the attempts of each step by
// outcome in the trace, the model requests the server saw,
// and the trace records apart from their times, ids and keys (issue 25,
// item 3), less one documented list of records only one host has a
// counterpart for (hostOnly: a setup attempt that ended ok). It is what
// keeps the two hosts from drifting again.
//
// The in-process host is the reference (issue 25): a row that fails says
// which host diverged, on what, and what each said. Each row names the
// divergence of issue 25 it covers, in its name, so that
//
//	go test -run 'TestBothHostsAgree' -v ./conformance/
//
// lists the rows as sentences, and -run 'TestBothHostsAgree/a_silent_model'
// runs one. The package has no code of its own: the suite is its tests.
// Its budgets are small (a few seconds), its rows run in parallel, and it
// runs in make test (make temporal-test) in about a minute.
package conformance
