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
// or the server is trusted (trust_hints) and marks it readOnlyHint.
//
// Every tools/call carries in _meta a progressToken, the call's idempotency
// key ([MetaIdempotencyKey], the same on every attempt) and the attempt's
// lease in milliseconds ([MetaBudgetRemainingMs]); its context is the
// lease. notifications/progress are routed to the call by their token, and
// only progress that grew counts as a heartbeat; progress for a call that
// has returned is dropped. When a lease ends, the quiet clock fires or the
// run is cancelled, the sdk cancels the request the MCP way
// (notifications/cancelled on stdio, the request's stream closed on HTTP),
// and the run records a cancel_sent with state "sent": there is no answer
// to wait for ([cancel.ErrNoAnswer]). A write cut that way is an orphan:
// MCP has no status to reconcile against.
//
// A result with isError is a failed call that the model reads and that is
// not tried again; a JSON-RPC error is invalid; a server that died or
// dropped the session is an upstream error, and the next attempt — a read
// is retried, a write never blindly — connects again.
package mcp
