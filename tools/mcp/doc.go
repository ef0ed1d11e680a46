// Package mcp offers the tools of MCP servers as Glidepath tools (SPEC
// §5b), so that the servers a user already has configured are called on
// the run's budget like any other tool.
//
// [Connect] starts a stdio server (command, args, env: a process group of
// its own, killed when the [Server] closes, in the environment a command
// tool gets, [tools.Environ]: no key of the harness's unless its env names
// it; its standard error to [Options].Stderr) or reaches a streamable HTTP
// one (url, headers), initializes a session and lists the server's tools,
// on a context the caller bounds: inside a run, the lease of a setup step
// (see # Connecting).
// Each tool is offered as mcp__SERVER__TOOL ([ToolName]) with the server's
// inputSchema, and is a write unless the config's tools entry says read,
// or the server is trusted (trust_hints) and marks it readOnlyHint. A tool
// whose inputSchema is not of type "object", or whose name another of the
// server's tools already has once sanitized, is not offered, and
// [Server.Warnings] says why, by the tools' own names. Wherever a url
// server is shown ([Server.Where], errors), its password and the values of
// its query are redacted.
//
// Every tools/call carries in _meta a progressToken, the call's idempotency
// key ([MetaIdempotencyKey], the same on every attempt) and the attempt's
// lease in milliseconds ([MetaBudgetRemainingMs]); its context is the
// lease. notifications/progress are routed to the call by their token, and
// only progress that grew counts as a heartbeat, whose units come from one
// counter of the Server's, so that they grow across a call's attempts
// although the server's progress starts over with each. An attempt returns
// only once the progress being delivered to it has been; what comes after
// is dropped. When a lease ends, the quiet clock fires or the
// run is cancelled, the sdk cancels the request the MCP way: it sends
// notifications/cancelled (over HTTP too, and closes the request's
// stream), and the run records a cancel_sent with state "sent": there is
// no answer to wait for ([cancel.ErrNoAnswer]), and MCP says a cancelled
// request gets none. A write cut that way is an orphan: MCP has no status
// to reconcile against.
//
// A result with isError is a failed call that the model reads and that is
// not tried again; a JSON-RPC error the server answered with is invalid; a
// server that died or dropped the session, or an HTTP request that failed
// on the way (which the go-sdk returns as a JSON-RPC error of its own, code
// -32005), is an upstream error, and the next attempt — a read is retried,
// a write never blindly — connects again. A call that waits for another's
// connect waits only as long as its own context lets it. An HTTP call
// whose session had failed before its request went out, or whose request
// the server refused with 404 as one of a session it had ended, is known
// not to have reached the tool (the answer says NotSent: a write is no
// orphan, and is sent again with its key on a fresh session); any other
// failure may have.
//
// # Reconnects
//
// The go-sdk's own reconnects and stream resumption are off (its
// StreamableClientTransport with MaxRetries < 0): the harness is the one
// retry layer (SPEC §5b). With them, a broken stream was resumed with
// Last-Event-ID after backoffs of 1s, 1.5s, 2.25s…, so a dead server took
// 17.6s to become an upstream error, and through a restarted proxy the
// reference server replayed a call's progress out of order and never
// delivered its result, so the call waited out its lease (issue 17). Now a
// request's stream that breaks, or the session's standalone stream, fails
// the session at once: the attempt under way is an upstream error within
// milliseconds, and the next attempt, a read's retry, goes out on a fresh
// session with the same idempotency key. A standalone stream that a
// proxy closes while no call is in flight costs the next call a fresh
// session: it fails unsent, and a read is retried.
//
// # Connecting
//
// Connecting and listing tools is a setup step on the run's budget.
// [ConnectTimeout] is its ceiling: the entry's connect_timeout when it
// gives one (still a lease out of the budget, which may cut it shorter),
// else the smaller of [MaxConnectTimeout] (5s) and a quarter of the run's
// work time B − R — the share [budget.SetupCeiling] gives every piece of
// a run's setup, manifests too (issue 24) — so that a mute server cannot
// eat a short run: a server
// that never answers initialize costs a 10s run (R 2.5s) 1875ms, not its
// whole work time. [Connect] bounds itself by the entry's connect_timeout
// or 5s when its caller's context does not bound it sooner.
//
// Nothing goes out before initialize that the MCP reference server
// rejects: the first initialize asks for protocol 2025-11-25, the newest
// that initialize negotiates (asked for nothing, the go-sdk would first
// send the 2026-07-28 server/discover, which the reference server answers
// with "Method not found"); a reconnect asks for the version the server
// answered with.
//
// # Zero values
//
// [Options] is ready as a zero value: it connects as the entry says. A
// [Server] is made by Connect only; the methods of a zero one report a
// server with no tools, no warnings and nothing missing, and its Close
// returns nil at once. [ServerError] and [NotOfferedError] are errors
// Connect returns, whose zero values still print and unwrap.
//
// # Processes and Close
//
// A stdio server runs in a process group of its own; on Linux the kernel
// also kills its leader should the harness die without closing it
// (Pdeathsig). [Server.Close] gives up a connect under way, and returns
// once nothing of the server is left or when its context ends, whichever
// is first: then what is left is stopped at once (a stdio group killed,
// HTTP requests such as the session's DELETE cancelled) and finishes on
// its own, and a later Close waits for it.
package mcp
