// Package model calls a chat model under a run's budget, over
// github.com/openai/openai-go/v3 Chat Completions, for any OpenAI-compatible
// server.
//
// Model turns are most of an agent run's time and most of its hidden
// retries: the SDK by default retries twice on its own and sets no overall
// timeout. Here the SDK's retries are off ([option.WithMaxRetries](0)), it has
// no request timeout, and the HTTP client has no Timeout. The [Client] is the
// one retry layer: each attempt streams on a lease of the run's
// [budget.Budget], sends the lease as Budget-Remaining-Ms, and is retried
// only on transport errors, 408, 429, 500, 502, 503, 504 and per-attempt
// timeouts, at most [Config.MaxAttempts] times, after a backoff decided by
// the budget (a server's retry-after-ms or Retry-After wins; a sleep that
// would outlast the budget ends the retries at once with a
// [*trace.GaveUpError]).
//
// # The turn's rules
//
// The rules of a model turn are one pure machine, [TurnMachine]: events in
// ([TurnEvent]: the turn started, an attempt ended as [Attempted] read it,
// a backoff sleep is over), each with the budget's figures at that moment
// ([FiguresOf]), and commands out ([TurnCommand]: make attempt N on this
// lease, sleep this backoff, or the turn is done, with the cause, the
// boundary's words and whether the landing call is sent). It reads no
// clock and does no I/O, so that every host drives the same rules (issue
// 25): [Client], the harness's middleware for a loop of its own
// (harness.ClientOptions), and the Temporal workflow of temporal/durable.
// A [Client]'s turn that failed returns a [*TurnError], which carries the
// TurnDone its machine ended it with ([TurnOf]), so that a host takes the
// machine's word on how it ended rather than read the error again;
// [Ended] makes the machine's end of the error of a model that is not a
// Client.
//
// # Outcomes
//
// Every attempt ends with a [trace.Outcome] (SPEC §6): [trace.OK],
// [trace.GaveUp] (our lease or a deadline), [trace.UpstreamError] (5xx,
// transport, a stream cut short), [trace.RateLimited], [trace.Invalid],
// [trace.Quiet] (the run's context ended with [watchdog.ErrQuiet]) or
// [trace.Cancelled]. A stream that ends without a finish reason is a failed
// attempt ([ErrIncomplete]), never an answer. An answer with a success
// status and no event stream — an HTML page, an empty body, JSON of any
// shape — is not a stream cut short but a server that is not a model
// server: a [*NotServerError] matching [ErrNotModelServer], invalid, not
// retried, and [Refused] (issue 24). Failures are
// [*trace.AttemptError]s of step "model" matching [trace.ErrGaveUp] ("we
// gave up") or [trace.ErrFailed] ("they failed").
//
// # Events
//
// The [trace.Observer] hears every attempt's start and end as a
// [trace.Attempt] (with its lease, outcome, keepalives, chunks and token
// usage), every backoff decision and refusal, and the stream's signals: a
// completed message and each completed tool call are semantic
// ([watchdog.ModelMessage]); SSE comments ([watchdog.Keepalive]) and data
// chunks ([watchdog.Token]) are counted below the SDK's decoder, which
// drops comments silently, and reset nothing.
//
// # The Responses API
//
// With [Config.API] [APIResponses] a Client speaks the Responses API
// (openai-go's Responses.NewStreaming, POST /responses) on the same lease,
// Budget-Remaining-Ms header, retries and records, and returns the same
// [Response]: the conversation's messages are sent as input items (tool
// messages as function_call_output, an assistant's tool calls as
// function_call items) and its tools as function tools; the response's
// message text and function calls come back as the message's content and
// tool calls, finish reason tool_calls or stop (length or content_filter
// when it is incomplete). A finished message or function call
// (response.output_item.done) is semantic, as on the chat path; a finished
// reasoning summary part (response.reasoning_summary_part.done) is the
// model call's progress, a [watchdog.Progress] signal of step "model"
// and a model call's key, "", whose units are the summary parts the
// Client has heard, so that they rise from turn to turn; lifecycle events and deltas are data
// lines, tokens. The response's output items (its reasoning, its message,
// its function calls) are carried to the next turn on the assistant
// message ([AssistantOf]) and sent back as they came, ids and
// encrypted_content included, as the API asks of a reasoning model's
// turns. An error the stream reports (an error event, or
// response.failed) is the SDK's error for the status its code stands for
// (rate_limit_exceeded 429, server_error 500, server_is_overloaded 503,
// another code 400), so that it is classified and retried as that status
// is; a stream that ends without response.completed or
// response.incomplete is [ErrIncomplete] or the stream's own error, as on
// the chat path.
//
// # A loop of its own
//
// A loop that calls openai-go itself uses what the Client uses:
// [Classify] names the outcome of an openai-go error; [CheckFinish] says
// whether a reply is a whole answer by its finish reason ("length" and
// "content_filter" are not: a [*ReplyError] matching [ErrNotAnswer]);
// [Describe] and [Refused] say why a request failed and whether the
// server refused the run itself. The lease, the retries and the record of
// each request are the harness's ClientOptions' (issue 25).
//
// # Landing
//
// [Client.Land] is the landing call: the same client, no tools field at all,
// on a landing lease that may spend the reserve. It is one attempt, never
// retried (SPEC §3): when it fails, the run lands on its deterministic
// summary instead.
//
// # Memory
//
// A run spends most of its life waiting in a stream, so what a waiting
// call holds is kept small (SPEC §7: an idle run costs at most 1.2× a bare
// openai-go streaming call): the accumulator is made at the first chunk,
// and the frames that stay on the stack during the wait hold no response
// or request parameters. [Client.CompletePointer] is [Client.Complete] for
// a caller that waits the same way: it returns the response by pointer,
// made when the turn ends, so that the caller's frame holds no copy of it.
package model
