// Package sim is a simulated OpenAI-compatible model server with fault
// injection: the model behind "harness run --model sim", and a test double
// for testing how an agent behaves in time — slow first tokens, streams
// that only send keepalives, streams cut or stalled halfway, 429s with
// retry-after-ms, requests that hang until the client leaves.
//
// The sim is honest about what it is. It serves one model, [ModelID]
// ("sim"), and every answer of its own opens with the bracketed tag sim,
// as in the examples below, so nobody mistakes it for a language model. Without a scenario it is a plain
// rule-based agent, deterministic for a seed.
//
// # Wire
//
// It serves Chat Completions as openai-go v3 reads them:
// POST /v1/chat/completions, with stream true or false, and
// GET /v1/models. A stream is server-sent events, data: {chunk}, ending
// with data: [DONE]; chunks are "chat.completion.chunk" objects whose
// delta carries the role (first chunk), content (one word per chunk) or
// tool calls (one chunk with id and name per call, then its arguments in
// pieces of at most 32 bytes); the last choice chunk has finish_reason
// "stop" or "tool_calls"; with stream_options.include_usage a final chunk
// with empty choices carries the usage. A non-streaming answer is a
// "chat.completion" with usage. Token counts are estimates at four bytes a
// token.
//
// Requests are checked as OpenAI checks them: a body that is not JSON is a
// 400, one over [MaxBody] a 413, a conversation whose assistant tool calls
// are not each answered by a tool message (or a tool message that answers
// none) a 400. Errors have OpenAI's shape,
// {"error":{"message","type","param","code"}}, with the status.
//
// # Default policy
//
// Offered tools, the sim calls each offered tool not yet called in the
// conversation exactly once: all in one assistant message, or one per turn
// when parallel_tool_calls is false. A tool whose description contains
// [SkipMarker] ("[sim:skip]") is offered but never called, and
// tool_choice "none" calls nothing. Arguments satisfy the tool's JSON
// Schema: required properties only; strings named like the main input
// (query, q, question, task, prompt, text, input, search, topic, …) get
// the task text, URL, email, date and uuid formats a placeholder, other
// strings a short deterministic "sim-…" string; integers and numbers 1
// (moved into their bounds), booleans true, enums their first value,
// arrays and objects their minimum. Once every such tool has been called
// and answered, it answers from the results:
//
//	[sim] Answer to "find cats": search returned 3 cats; fetch failed: error: timeout.
//
// Offered no tools — the landing call — it summarizes the conversation:
//
//	[sim] Summary of "find cats"
//	Established: search returned 3 cats.
//	Not established: fetch failed: error: timeout.
//
// The task is the first user message. A tool result counts as failed when
// it starts with "error" (any case) or is a JSON object with a non-null
// "error" field. Lines of system and user messages that start with
// "Budget:" or "[budget" are a budget note: the sim records it in
// [Request.BudgetNote] and otherwise ignores it.
//
// # Scenarios
//
// A [Scenario] scripts faults per request (the n-th chat completion request
// the server receives, from 1) or per turn (the assistant messages in the
// conversation + 1); the first matching [Rule] wins, and unmatched requests
// get the default policy. Scenario files are YAML or JSON; see
// [ParseScenario]. The [Rule] documentation gives each field and the
// timeline a response follows. For example, "fail the first request, then
// rate-limit the second, then answer slowly":
//
//	seed: 7
//	rules:
//	  - request: 1
//	    status: 500
//	  - request: 2
//	    status: 429
//	    retry_after_ms: "200"
//	  - first_token: 2s
//	    chunk_gap: 50ms
//
// A stream cut by close_after_chunks reaches openai-go as
// [io.ErrUnexpectedEOF] from its stream's Err (net/http's chunked reader
// sees the connection end without the last chunk); a non-streaming answer
// cut the same way fails with "error reading response body: unexpected
// EOF".
//
// # Servers
//
// [NewServer] listens on 127.0.0.1 like httptest; [NewPipeServer] listens
// in memory on net.Pipe connections, so tests can run a real client against
// it inside a [testing/synctest] bubble and assert exact times (a 2s
// first_token arrives at exactly 2s of fake time). Both record every
// request ([Server.Requests]) and give a client that reaches them
// ([Server.Client]). [Handler] is the sim as an http.Handler, and [Serve]
// runs it on an address until its context ends, for "harness sim serve".
//
// # Goroutines
//
// Each request's handler ends when its response does, when the client
// leaves, or when the server closes: hangs and keepalives watch the
// request's context and the server. [Server.Close] closes every connection
// and waits for every goroutine the server started. [Serve] returns only
// after its handlers have.
//
// # Errors
//
// An invalid scenario is a [*ScenarioError] naming the field and, from a
// file, its line; it matches [ErrScenario]. [NewServer], [NewPipeServer]
// and [Handler] panic on an invalid scenario built in Go; [ParseScenario]'s
// results are always valid.
package sim
