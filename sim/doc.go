// Package sim is a simulated OpenAI-compatible model server with fault
// injection: the model behind "harness run --model sim", and a test double
// for testing how an agent behaves in time — slow first tokens, streams
// that only send keepalives, streams cut or stalled halfway, 429s with
// retry-after-ms, requests that hang until the client leaves.
//
// The sim is honest about what it is. It serves one model, [ModelID]
// ("sim"), and every answer of its own opens with the bracketed tag sim,
// as in the examples below, so nobody mistakes it for a language model
// (a structured answer carries that text in its answer-like fields; see
// Structured answers). Without a scenario it is a plain rule-based agent,
// deterministic for a seed.
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
// "stop" or "tool_calls" ("length" when cut; see Limits); with
// stream_options.include_usage a final chunk with empty choices carries
// the usage. A non-streaming answer is a "chat.completion" with usage.
// Token counts are estimates at four bytes a token.
//
// n asks for several choices (1 to 128; absent or null is 1): the answer
// has choices with indexes 0 to n−1, each the same reply but for its tool
// call ids, which are its own. Streamed, every chunk carries one choice's
// delta with its index, and the choices take turns chunk by chunk (0, 1,
// …, 0, 1, …), each with its own role chunk and finish_reason; the usage
// counts the completion tokens of all of them.
//
// Requests are checked as OpenAI checks them: a body that is not JSON is a
// 400, one over [MaxBody] a 413, a conversation whose assistant tool calls
// are not each answered by a tool message (or a tool message that answers
// none) a 400. So are, with OpenAI's messages: a tool_choice without tools
// (any tool_choice, "required" too, when tools is absent or empty), a
// tool_choice that names a function not offered, an n below 1 or above
// 128, a response_format of type json_object when no message contains the
// word "json", a json_schema without a name (or one not matching
// ^[a-zA-Z0-9_-]+$, or over 64 bytes), and a schema that does not compile.
// Errors have OpenAI's shape, {"error":{"message","type","param","code"}},
// with the status, e.g.
//
//	400 {"error":{"message":"Invalid value for 'tool_choice': function 'fetch' not found in 'tools'.","type":"invalid_request_error","param":"tool_choice","code":null}}
//
// It serves the Responses API too, as openai-go v3's responses package
// and the OpenAI Node SDK read it: POST /v1/responses, with stream true or
// false, the same policy and scenarios in that API's shapes. input is a
// string (one user message) or items: messages (user, system, developer,
// assistant), function_call, function_call_output and reasoning items;
// instructions is a system message before them; tools are
// {"type":"function","name",…}, tool_choice names a function as
// {"type":"function","name":X}, and text.format is read as
// response_format. The answer is a "response" whose output is a reasoning
// item with one summary part (what the sim is about to do, "[sim] Next:
// call search."; its encrypted_content only when include asks for
// "reasoning.encrypted_content"), then a message or the function calls,
// with usage counting reasoning tokens. A stream is typed events, each
// "event: TYPE" and "data: {…}" with its sequence_number:
// response.created, response.in_progress and the reasoning item's
// response.output_item.added; response.reasoning_summary_part.added, its
// summary text's delta and done, response.reasoning_summary_part.done and
// the item's response.output_item.done; for a message
// response.output_item.added, response.content_part.added,
// response.output_text.delta (one word each), response.output_text.done,
// response.content_part.done and response.output_item.done; for each
// function call response.output_item.added,
// response.function_call_arguments.delta (pieces of at most 32 bytes),
// response.function_call_arguments.done and response.output_item.done;
// and last response.completed with the whole response
// (response.incomplete for one cut at its limit). It ends there,
// with no data: [DONE]. A request is checked as for Chat Completions, and
// as OpenAI checks input: a function_call_output whose call_id answers no
// function_call before it is a 400 "No tool call found for function call
// output with call_id X.", and a function_call left unanswered a 400 "No
// tool output found for function call X.". The assistant items that come
// together in input (reasoning, a message, function calls) are one
// assistant turn.
//
// # Default policy
//
// Offered tools, the sim calls each offered tool not yet called in the
// conversation exactly once: all in one assistant message, or one per turn
// when parallel_tool_calls is false. A tool whose description contains
// [SkipMarker] ("[sim:skip]") is offered but never called. Arguments
// satisfy the tool's JSON Schema: required properties only; strings named
// like the main input (query, q, question, task, prompt, text, input,
// search, topic, …) get the task text, URL, email, date and uuid formats a
// placeholder, other strings a short deterministic "sim-…" string, and a
// string that does not match its pattern the shortest one the sim builds
// from the pattern; integers and numbers 1 (moved into their bounds),
// booleans true, enums their first value, arrays and objects their
// minimum. Once every such tool has been called and answered, it answers
// from the results:
//
//	[sim] Answer to "find cats": search returned 3 cats; fetch failed: error: timeout.
//
// Offered no tools — the landing call — it summarizes the conversation:
//
//	[sim] Summary of "find cats"
//	Established: search returned 3 cats.
//	Not established: fetch failed: error: timeout.
//
// tool_choice changes which tools are called, and nothing else:
//
//   - absent, null or "auto": the policy above.
//   - "none": no tool calls; the sim answers from what it has.
//   - "required": the policy above, and once it has nothing left to call,
//     the first useful tool again (the first tool, if every one is marked
//     skip): a tool call every turn, as the API promises.
//   - {"type":"function","function":{"name":"X"}}: exactly one call, to X,
//     every turn, even if X is marked skip.
//   - {"type":"allowed_tools","allowed_tools":{"mode":M,"tools":[…]}}: the
//     policy of mode M ("auto" or "required") over the listed function
//     tools only.
//
// The task is the first user message. A tool result counts as failed when
// it starts with "error" (any case) or is a JSON object with a non-null
// "error" field. Lines of system and user messages that start with
// "Budget:" or "[budget" are a budget note: the sim records it in
// [Request.BudgetNote] and otherwise ignores it.
//
// # Limits
//
// A request may limit its output tokens: max_completion_tokens (or the
// older max_tokens, which max_completion_tokens replaces when both come)
// on Chat Completions, max_output_tokens on the Responses API. Below 1,
// or below 16 for max_output_tokens, it is OpenAI's 400 "Invalid
// 'max_output_tokens': integer below minimum value. Expected a value >=
// 16, but got 8 instead.". [Request.MaxOutputTokens] records it. A
// reasoning model spends its reasoning tokens first (on the Responses API
// those of its summary; a rule's reasoning_tokens on either API), up to
// the limit, and its reply gets the rest: a reply longer than that, at
// four bytes a token over its content and each tool call's name and
// arguments, is cut after that many tokens' bytes (never inside a rune),
// and reports exactly the limit as its output tokens, as OpenAI's does.
// The cut answer has finish_reason "length" on Chat Completions; on the
// Responses API its status is "incomplete", with incomplete_details
// {"reason":"max_output_tokens"}, its last output item "incomplete", and
// its stream ends with response.incomplete. A tool call the limit stopped
// is sent as far as it got, its arguments cut short, as OpenAI sends one;
// the finish reason is what says it is not a call to run. A call whose
// name did not fit is not begun, nor is one after a cut answer.
//
// A rule's cached_tokens and reasoning_tokens add to the usage what a
// provider's cache and a reasoning model report: cached_tokens of the
// input (at most all of it) as prompt_tokens_details.cached_tokens
// (input_tokens_details on the Responses API), reasoning_tokens within
// the output as completion_tokens_details.reasoning_tokens
// (output_tokens_details). Without them a Chat Completions usage has no
// details, as before.
//
// # Structured answers
//
// response_format shapes the content of the sim's answers (and summaries);
// tool calls are made as without it. {"type":"text"} changes nothing.
// {"type":"json_object"} answers {"answer":"[sim] …"}, the text it would
// have said. {"type":"json_schema","json_schema":{"name","schema","strict"}}
// answers a value built from the schema as arguments are (the simplest
// value of each type; const, enum, default, formats and patterns; anyOf
// and oneOf by their first alternative that is not null; allOf merged;
// $ref within the schema, to $defs or definitions), with every property
// of each object when strict is true and the required ones otherwise, and
// the answer's text in string properties named like an answer (answer,
// summary, result, output, content, text, message, …) and the task in
// those named like the input; without a schema, like json_object. For
// example, with the schema {"type":"object","properties":{"answer":
// {"type":"string"},"count":{"type":"integer","minimum":3}}} strict,
// offered no tools:
//
//	{"answer":"[sim] Summary of \"find cats\"\nEstablished: nothing.\nNot established: nothing.","count":3}
//
// Streamed or not, the content is the same JSON text. The sim checks the
// value against the schema before it answers, with the schema read as
// draft 2020-12 unless its $schema says otherwise and patterns as Go
// regular expressions (RE2: no lookaround or backreferences). A schema it
// cannot satisfy this way (one that no finite value meets, or a "not" the
// simplest values fall into) is a 400 naming the schema and where the value
// failed, on every turn of the conversation, one that calls tools too;
// one that does not compile is a 400 "Invalid schema for response_format".
// The sim does not enforce the extra rules of OpenAI's strict mode
// (additionalProperties false and every property required).
//
// A [Rule]'s tool_calls or answer replace the policy's reply whatever
// tool_choice and response_format say, in every choice, so a scenario can
// script a model that disobeys them.
//
// # Scenarios
//
// A [Scenario] scripts faults per request (the n-th model request, chat
// completion or response, the server receives, from 1), per turn (the assistant messages in the
// conversation + 1) or by arrival time (a window of the server's clock,
// which starts when its first model request arrives); the first
// matching [Rule] wins, and unmatched requests get the default policy.
// Scenario files are YAML or JSON; see [ParseScenario]. The [Rule]
// documentation gives each field and the timeline a response follows. For
// example, "fail the first request, then rate-limit the second, then answer
// slowly":
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
// A window, after and for, matches the requests that arrive in
// [after, after+for) of the server's clock (without for: from after on),
// and combines with the rule's other match fields (request, turn, times)
// as all of them must hold. The clock starts with the first model request
// (chat completion or response), not with the server, so a fleet of runs
// started together on one shared sim meets the window when its calls do,
// however long the sim sat idle before them ([Request.At] is each request's time
// on it). For example, "an outage: every request in the first 300ms gets
// 503 with Retry-After: 1":
//
//	rules:
//	  - after: 0s
//	    for: 300ms
//	    status: 503
//	    retry_after: "1"
//
// On /v1/responses a rule counts the Responses API's events as it counts
// chunks, and its timeline keeps a reasoning model's silence: the three
// opening events (response.created, response.in_progress, the reasoning
// item's response.output_item.added) come with the headers, and
// first_token is the silence after them, before the summary part. So
//
//	rules:
//	  - first_token: 30s
//
// is a model that reasons silently for 30s, and close_after_chunks: 3 one
// whose stream stops after its opening events. stream_error: CODE ends the
// stream where its output would begin with an error event, in the shape
// OpenAI's servers send ({"type":"error","error":{"type","code",
// "message","param"}}, which the SDKs raise as an error), and failed: CODE
// with response.failed carrying {"code","message"}; a non-streaming
// request gets the status the code stands for (rate_limit_exceeded 429,
// server_error 500, server_is_overloaded 503, others 400).
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
// first_token arrives at exactly 2s of fake time). Both record requests
// and give a client that reaches them ([Server.Client]). The records are
// bounded so that a server can run as long as its process does, for a
// fleet of runs as for one test: [Server.Requests] holds the last
// [MaxRecords] ([Server.Received] counts them all), and nothing else a
// server keeps grows with the requests it serves. [Handler] is the sim as
// an http.Handler, and [Serve] runs it on an address until its context
// ends, for "harness sim serve"; they keep no records.
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
