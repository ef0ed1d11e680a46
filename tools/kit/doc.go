// Package kit is a server kit for writing remote tools in Go: a [Server]
// speaks the remote tool protocol of SPEC §5, and MCP (see # MCP), so that
// every call it serves is leased, observable, cancellable and safe to time
// out.
//
// A tool is a [Tool] value with a [Handler]; a Server is a value, like
// [net/http.ServeMux], and a [net/http.Handler]:
//
//	var srv kit.Server
//	err := srv.Register(kit.Tool{
//		Name:   "greet",
//		Effect: kit.Read,
//		P50:    5 * time.Millisecond,
//		P95:    20 * time.Millisecond,
//		Max:    time.Second,
//		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
//			var args struct{ Name string }
//			if err := json.Unmarshal(call.Args, &args); err != nil {
//				return nil, &kit.Error{Message: "greet: " + err.Error()}
//			}
//			return "hello, " + args.Name, nil
//		},
//	})
//	...
//	err = kit.ListenAndServe(ctx, "", &srv) // loopback, until ctx ends
//
// # Protocol
//
//   - GET /tools answers the manifest, {"tools":[{"name", "description",
//     "parameters", "effect", "cancellable", "p50_ms", "p95_ms"}]}, in
//     registration order.
//   - POST /tools/{name} with the body {"arguments":{…}} calls the tool.
//     The body is bounded by [Server.MaxBody] (1 MiB by default; larger is
//     a 413); a body that is not that shape, or arguments that are not an
//     object, is a 400. The Idempotency-Key header is required: a call
//     without one is a 400, since without it neither a retry nor a status
//     request can be matched to the call. Budget-Remaining-Ms is optional
//     (see # Deadlines). When the Accept header names text/event-stream,
//     the answer is an event stream: progress events
//     {"units":n,"total":t,"message":"…"}, keepalive comments, then exactly
//     one result event {"output":…} or error event
//     {"message":"…","retryable":bool}. Otherwise it is application/json:
//     200 with {"output":…}, or an error status (see # Errors).
//   - GET /tools/{name}/calls/{key} answers {"state":"running|done|failed",
//     "output":…,"units":n}, with "output" only when done and
//     "error":{"message","retryable"} when failed; 404 when the call was
//     never received (or forgotten, see # Idempotency).
//   - DELETE /tools/{name}/calls/{key} cancels (see # Cancel).
//
// Every error answer, whatever the endpoint, is JSON:
// {"error":{"message":"…","retryable":bool}}. Unknown tools and paths are
// 404s, wrong methods 405s with an Allow header.
//
// # Deadlines
//
// The handler's context ends at min(Budget-Remaining-Ms, [Tool.Max]) after
// the request arrived, as [budget.Receive] computes it: the header is the
// caller's lease, and Max is the tool's own limit, which no caller can
// extend. A value above Max is clamped to Max (cause
// [budget.ErrLeaseExpired]); a value within it ends the context with cause
// [budget.ErrDeadline]; a call without the header gets Max. The context
// ends earlier, with cause [ErrCallerGone], when the caller hangs up: a
// caller whose lease ended has stopped waiting. A malformed value (not an
// integer, negative, a fraction, sent twice, or more than
// [budget.MaxHeader]) is a 400 whose message names the header. A handler
// that ignores its context keeps running and its outcome is still
// recorded: that is how a write that commits late is found done by the
// caller's reconciliation.
//
// # Progress
//
// [Call.Progress] is non-blocking and coalesced: a stream sends only the
// latest report not yet sent, so a fast handler never waits for a slow
// client. The kit drops a report whose units are not greater than the last
// accepted one's: units strictly increase, which is what lets a caller
// count a progress event as a semantic heartbeat (SPEC §3). A stream that
// stays silent for [Server.KeepaliveEvery] (15s by default) gets a
// keepalive comment, ": keepalive"; keepalives are transport only and
// never stand for progress. The status endpoint reports the last units.
//
// # Idempotency
//
// The same Idempotency-Key returns the first call's outcome, once that
// outcome is final: an output, or a failure that is not retryable. A
// second POST with the key of a finished call gets the stored outcome at
// once, and the handler does not run again. A POST with the key of a call
// still running in this process does not start the handler again: it
// follows the running attempt (its progress and keepalives, when
// streaming) and answers with its outcome; if its own deadline comes
// first it gets a retryable 503 (or error event). A retryable failure is
// recorded (the status endpoint says failed) but does not stick: the next
// POST with the key runs the handler again, with [Call.Attempt] one
// higher. That is what lets a read that timed out be retried with the same
// key, as SPEC §2 wants. A key sent again with other arguments is a 422.
//
// Records live in a [Store]: [MemoryStore] by default, which forgets a
// finished record an hour after it finished or, oldest first, beyond
// 10,000 finished records. With a Store shared by several processes, a
// POST with the key of a call running in another process is a 409.
//
// # Cancel
//
// DELETE /tools/{name}/calls/{key} ends the running handler's context
// with cause [ErrCancelled] and answers 202 at once, without waiting for
// the handler to return; the call then fails retryably. A finished call
// also answers 202 (cancelling is idempotent); an unknown one 404; a
// call of a tool that is not [Tool.Cancellable], or one running in
// another process, 409.
//
// # Errors
//
// A handler chooses what the caller is told by returning an [*Error] with
// a message and whether it is retryable. Any other error is a failure
// that is not retryable, unless the handler's context had ended when it
// returned: then the call failed because of its deadline, a cancel, the
// server closing or the caller hanging up, and it is retryable. A panic in
// a handler is recovered in one place, its stack logged to
// [Server.Logger], and the call fails, not retryably; the server keeps
// serving.
//
// As JSON, a failure is a 422 when it is not retryable and a 503 when it
// is. The kit's own refusals: 400 for a malformed request, 404, 405, 409,
// 413, 422 for a reused key, 503 when the server is closed.
// [Server.Register] returns a [*ToolError] matching [ErrBadTool], and
// also [ErrDuplicate] for a name registered twice.
//
// # MCP
//
// A Server serves the same tools over MCP too, with the official SDK
// (github.com/modelcontextprotocol/go-sdk), so that a tool written once
// works from Glidepath's protocol and from any MCP client.
// [Server.MCPHandler] serves MCP's streamable HTTP transport, to mount
// beside the Server on one address; [Server.ServeMCP] serves one client
// over an SDK transport, such as stdio for a server that an MCP client
// starts as a command:
//
//	mux := http.NewServeMux()
//	mux.Handle("/mcp", srv.MCPHandler())
//	mux.Handle("/", &srv)
//	...
//	err = srv.ServeMCP(ctx, &mcp.StdioTransport{}) // until the client leaves
//
// Both serve the Server's tools and records, as the protocol above does:
//
//   - tools/list offers each tool with its name, description, its
//     Parameters as inputSchema ("type":"object" added when they leave it
//     out; a tool whose Parameters name another type is not offered, and
//     [Server.Logger] says so), annotations.readOnlyHint true for a Read
//     tool, and the manifest's other fields in _meta:
//     io.github.glidepath/effect, /cancellable, /p50-ms and /p95-ms, and
//     /agent when it is one. The SDK lists tools by name.
//   - A tools/call's _meta [MetaBudgetRemaining], a JSON integer of
//     milliseconds, is its Budget-Remaining-Ms: the handler's deadline is
//     min(it, Max) from arrival, read by the same code (see # Deadlines),
//     and 0 is a failure with [CodeDeadline] at once, the handler never
//     running. Its
//     [MetaIdempotencyKey] is its Idempotency-Key, with the semantics of
//     # Idempotency; the records are the Server's, so a key called over
//     MCP is known to the status and cancel endpoints, and a retry may
//     come over either protocol. A call without the key gets a fresh key
//     of its own ("mcp_…"): it is not idempotent. [Call.Lease] and
//     [Call.MCP] say what arrived. A malformed field, a key reused with
//     other arguments, or arguments that are not an object are JSON-RPC
//     invalid params errors naming what was wrong.
//   - An output is a text content holding its JSON, and structuredContent
//     too when it is an object. A failure (an [*Error], any other error, a
//     panic, a deadline) is a result with isError, its message as the text
//     (" (deadline_exceeded)" appended when its code is [CodeDeadline]),
//     and io.github.glidepath/retryable and /code in its _meta. The kit's
//     own refusals (the server closed, the store failed, the key runs in
//     another process) are JSON-RPC errors: they tell nothing of the call.
//   - When a tools/call carries a progressToken, [Call.Progress] sends
//     notifications/progress with it: progress is the units, then total and
//     message, coalesced and strictly increasing as in # Progress. Without
//     a token nothing is sent.
//   - notifications/cancelled for the call is its only cancel (SPEC §5b):
//     it ends the handler's context with [ErrCancelled] for a Cancellable
//     tool and with [ErrCallerGone] for another, as a hang-up does, and the
//     call then fails retryably, as under # Cancel. The cancelled request
//     gets no response, as MCP says: nothing more is written to its stream
//     (the SDK would answer it with an error, which a client that has
//     forgotten the request reports as "unknown message ID"). A session
//     whose connection breaks ends its calls with [ErrCallerGone].
//   - Over streamable HTTP, a request's stream that closes without
//     notifications/cancelled is not a cancel: a network blip must not kill
//     a handler. The handler runs on, its outcome is recorded, and its key
//     finds it, from the status endpoint or a retry over either protocol.
//
// [Server.MCPHandler] validates the Origin header, as MCP's transport
// rules ask against DNS rebinding (SPEC §5b): a request with no Origin
// (any client that is not a browser) is served, and so is one whose
// Origin is one of [Server.AllowedOrigins] (compared without case or a
// trailing slash) or the server's own origin on a loopback host (the Host
// it was asked at, when that is localhost, 127.0.0.0/8 or ::1: no other
// site can have that origin, since a rebinding site's Origin names its
// own host). Any other Origin, "null" and a repeated header among them,
// is refused with 403 before the SDK sees the request.
//
// The streamable HTTP handler keeps sessions (Mcp-Session-Id), which is
// how a notifications/cancelled finds the request it cancels; the SDK's
// client, which tries its newest protocol first, speaks 2025-11-25 to it.
// Over ServeMCP the client chooses. Both are checked against the official
// TypeScript SDK client in interop/mcpts.
//
// # Zero values
//
// A zero [Server] is ready to use, with the defaults its fields name; a
// zero [MemoryStore] too. A zero [Call], as a handler's unit test makes,
// drops its progress. A [Tool] must name its Name, Effect and Handler:
// Register refuses one that does not, with a [*ToolError]. A zero
// [Record] is a call that is not final.
//
// # Goroutines
//
// Each call's handler runs in a goroutine the [Server] owns, so that a
// handler that outlives its request (the caller hung up, or it ignores
// its deadline) still has its outcome recorded. [Server.Close] ends every
// handler's context with [ErrClosed] and waits for them all;
// [Server.Shutdown] does the same within a context. They end MCP too:
// every tools/call stops waiting for its handler and is answered with a
// JSON-RPC error naming [ErrClosed], then every MCP session ends (the SDK
// drops the answers of requests in flight when a session ends, so the
// answers go first). After, MCPHandler answers 503 and ServeMCP returns
// ErrClosed. [Serve] and [ListenAndServe] close the server when their
// context ends, and return once its handlers and the answers being
// written are done. [Listen] listens on loopback unless given another
// host.
package kit
