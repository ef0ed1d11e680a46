// Package mcp offers the tools of MCP servers as Glidepath tools (SPEC
// §5b), so that the servers a user already has configured are called on
// the run's budget like any other tool.
//
// [Connect] starts a stdio server (command, args, env: a process group of
// its own, killed when the [Server] closes) or reaches a streamable HTTP
// one (url, headers), initializes a session and lists the server's tools,
// on a context the caller bounds: inside a run, the lease of a setup step.
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
// run is cancelled, the sdk cancels the request the MCP way
// (notifications/cancelled on stdio, the request's stream closed on HTTP),
// and the run records a cancel_sent with state "sent": there is no answer
// to wait for ([cancel.ErrNoAnswer]). A write cut that way is an orphan:
// MCP has no status to reconcile against.
//
// A result with isError is a failed call that the model reads and that is
// not tried again; a JSON-RPC error the server answered with is invalid; a
// server that died or dropped the session, or an HTTP request that failed
// on the way (which the go-sdk returns as a JSON-RPC error of its own, code
// -32005), is an upstream error, and the next attempt — a read is retried,
// a write never blindly — connects again. A call that waits for another's
// connect waits only as long as its own context lets it.
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
