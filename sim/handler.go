package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ModelID is the one model the sim serves, and the model named in every
// answer, whatever the request asked for.
const ModelID = "sim"

// MaxBody bounds a request body; a larger one is refused with 413.
const MaxBody = 8 << 20

// argPiece is the largest piece of a tool call's arguments in one stream
// chunk, so clients see arguments arrive in fragments, as from OpenAI.
const argPiece = 32

// Request is the record of one request the server received.
type Request struct {
	Index        int           // 1-based position among all requests received
	Completion   int           // 1-based number among model requests, chat completions and responses alike (what [Rule.Request] matches); 0 for other paths
	Turn         int           // assistant messages in the conversation + 1 (what [Rule.Turn] matches)
	Rule         int           // 1-based index of the rule applied; 0 for none
	Time         time.Time     // arrival, with its monotonic reading
	At           time.Duration // arrival since the first model request's, never negative (what [Rule.After] and [Rule.For] match); 0 for other paths
	Method       string
	Path         string
	Header       http.Header // with Authorization, Api-Key and similar values redacted
	Model        string      // as requested
	Stream       bool        // the stream flag
	IncludeUsage bool        // reports whether stream_options.include_usage was true
	Tools        int         // tools offered
	HasTools     bool        // reports whether the tools field was present at all, even empty or null
	Parallel     *bool       // parallel_tool_calls; nil when absent
	// ToolChoice is tool_choice as read: "" when absent, "none", "auto",
	// "required", "function:NAME" for a named function, or
	// "allowed_tools:MODE" (MODE auto or required).
	ToolChoice string
	// ResponseFormat is response_format's type as read: "" when absent,
	// "text", "json_object", or "json_schema:NAME".
	ResponseFormat string
	N              int       // choices asked for (n); 1 when absent
	Messages       []Message // the conversation; nil when the body was not valid
	BudgetNote     string    // the last budget note seen in system and user messages
	Reasoning      []string  // the ids of the reasoning items a /v1/responses input carried back
	Err            string    // why the request was refused with a 4xx, if it was

	// MaxOutputTokens is the output-token limit the request carried:
	// max_completion_tokens (else max_tokens) on Chat Completions,
	// max_output_tokens on the Responses API; 0 when none. An answer
	// longer than it is cut there (see Limits in the package doc).
	MaxOutputTokens int64
}

// Message is one message of a recorded conversation, its content
// flattened to text.
type Message struct {
	Role       string
	Content    string
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
}

// secretHeaders are redacted in recorded requests and never logged.
var secretHeaders = []string{"Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key", "Cookie"}

type handler struct {
	sc     Scenario
	record bool
	done   <-chan struct{} // closed when the owning server shuts down; nil: no owner, request contexts alone end waits

	logMu sync.Mutex // serializes lines on log
	log   io.Writer

	// Nothing below grows without bound as requests come (used grows with
	// the rules, reqs up to MaxRecords): a long-lived server must not
	// fill its memory with history.
	mu          sync.Mutex // guards the fields below; never held across I/O
	seq         int
	completions int
	epoch       time.Time // arrival of completion 1: zero on Request.At's clock
	used        []int     // uses per rule
	// reqs holds the last MaxRecords records, a ring once full: the
	// oldest is at next, which is where the next record goes.
	reqs []Request
	next int
}

func newHandler(sc *Scenario, record bool, log io.Writer, done <-chan struct{}) *handler {
	h := &handler{record: record, done: done, log: log}
	if sc != nil {
		h.sc = Scenario{Seed: sc.Seed, Rules: slices.Clone(sc.Rules)}
	}
	h.used = make([]int, len(h.sc.Rules))
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: redact(r.Header)}
	switch r.URL.Path {
	case "/v1/chat/completions":
		if r.Method != http.MethodPost {
			h.refuse(w, &rec, &apiError{status: http.StatusMethodNotAllowed, msg: "Only POST is allowed on " + r.URL.Path}, "POST")
			return
		}
		h.completion(w, r, rec)
	case "/v1/responses":
		if r.Method != http.MethodPost {
			h.refuse(w, &rec, &apiError{status: http.StatusMethodNotAllowed, msg: "Only POST is allowed on " + r.URL.Path}, "POST")
			return
		}
		h.response(w, r, rec)
	case "/v1/models", "/v1/models/" + ModelID:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.refuse(w, &rec, &apiError{status: http.StatusMethodNotAllowed, msg: "Only GET is allowed on " + r.URL.Path}, "GET, HEAD")
			return
		}
		h.admit(&rec, false, false)
		h.logf(&rec, http.StatusOK)
		model := map[string]any{"id": ModelID, "object": "model", "created": 0, "owned_by": "glidepath"}
		if r.URL.Path == "/v1/models" {
			writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{model}})
		} else {
			writeJSON(w, http.StatusOK, model)
		}
	default:
		h.refuse(w, &rec, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf(
			"Unknown request URL: %s %s. The sim serves POST /v1/chat/completions, POST /v1/responses and GET /v1/models.", r.Method, r.URL.Path)}, "")
	}
}

func (h *handler) refuse(w http.ResponseWriter, rec *Request, e *apiError, allow string) {
	rec.Err = e.msg
	h.admit(rec, false, false)
	h.logf(rec, e.status)
	if allow != "" {
		w.Header().Set("Allow", allow)
	}
	writeError(w, e.status, e.msg, e.param, e.code)
}

func (h *handler) completion(w http.ResponseWriter, r *http.Request, rec Request) {
	var req chatRequest
	apiErr := readRequest(w, r, &req)
	var msgs []Message
	if apiErr == nil {
		apiErr = req.decodeTools()
	}
	if apiErr == nil {
		msgs, apiErr = req.messages()
	}
	if apiErr == nil {
		apiErr = req.decodeOptions(msgs)
	}
	var reps []reply
	if apiErr == nil {
		reps, apiErr = replies(&req, msgs, h.sc.Seed)
	}
	rec.Model, rec.Stream, rec.Parallel, rec.Messages = req.Model, req.Stream, req.ParallelToolCalls, msgs
	rec.IncludeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	rec.MaxOutputTokens = req.limit
	rec.HasTools, rec.Tools = len(req.Tools) > 0, len(req.tools)
	rec.ToolChoice, rec.ResponseFormat, rec.N = req.choice.record, req.format.record(), 1
	if req.N != nil {
		rec.N = *req.N
	}
	rec.Turn = 1
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			rec.Turn++
		}
	}
	cv := readConversation(msgs)
	rec.BudgetNote = cv.note
	rule, ok := h.admitted(w, &rec, apiErr)
	if !ok {
		return
	}
	h.respond(w, r, &req, msgs, rec, rule, reps)
}

// readRequest reads and decodes the body, bounded by MaxBody.
func readRequest(w http.ResponseWriter, r *http.Request, req any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return &apiError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("Request body too large: the sim accepts at most %d bytes.", MaxBody)}
	}
	if err != nil {
		return &apiError{status: http.StatusBadRequest, msg: "Could not read the request body: " + err.Error()}
	}
	if err := json.Unmarshal(body, req); err != nil {
		return &apiError{status: http.StatusBadRequest, msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.) " + err.Error()}
	}
	return nil
}

// admit numbers a request, picks the first matching rule and records it,

// admitted admits the request rec (a chat completion, or a Responses
// request: both count as model requests), logs it, and answers apiErr, a
// request the API refuses, at once; it reports whether the request is to
// be answered by the returned rule.
func (h *handler) admitted(w http.ResponseWriter, rec *Request, apiErr *apiError) (Rule, bool) {
	if apiErr != nil {
		rec.Err = apiErr.msg
	}
	rule := h.admit(rec, true, apiErr == nil)
	if apiErr != nil {
		h.logf(rec, apiErr.status)
		writeError(w, apiErr.status, apiErr.msg, apiErr.param, apiErr.code)
		return rule, false
	}
	h.logf(rec, max(rule.Status, http.StatusOK))
	return rule, true
}

// all under one lock so numbering, rule use and the record agree.
func (h *handler) admit(rec *Request, chat, valid bool) Rule {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	rec.Index = h.seq
	if chat {
		h.completions++
		rec.Completion = h.completions
		if rec.Completion == 1 {
			h.epoch = rec.Time
		}
		// Arrival is stamped before the body is read, so a request can be
		// numbered after one that arrived later than it did; it counts
		// as arriving with the first rather than before the clock began.
		rec.At = max(rec.Time.Sub(h.epoch), 0)
	}
	var rule Rule
	if valid {
		for i := range h.sc.Rules {
			r := &h.sc.Rules[i]
			if (r.Request == 0 || r.Request == rec.Completion) && (r.Turn == 0 || r.Turn == rec.Turn) &&
				(r.Times == 0 || h.used[i] < r.Times) && r.inWindow(rec.At) {
				h.used[i]++
				rec.Rule = i + 1
				rule = *r
				break
			}
		}
	}
	if h.record {
		if len(h.reqs) < MaxRecords {
			h.reqs = append(h.reqs, *rec)
		} else {
			h.reqs[h.next] = *rec
			h.next = (h.next + 1) % MaxRecords
		}
	}
	return rule
}

// records copies the records held, oldest first.
func (h *handler) records() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Concat(h.reqs[h.next:], h.reqs[:h.next])
}

// received is how many requests the handler has numbered.
func (h *handler) received() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

func (h *handler) logf(rec *Request, status int) {
	if h.log == nil {
		return
	}
	h.logMu.Lock()
	defer h.logMu.Unlock()
	if rec.Completion == 0 {
		fmt.Fprintf(h.log, "sim: #%d %s %s -> %d\n", rec.Index, rec.Method, rec.Path, status)
		return
	}
	var asked strings.Builder
	if rec.ToolChoice != "" {
		fmt.Fprintf(&asked, " tool_choice=%s", rec.ToolChoice)
	}
	if rec.ResponseFormat != "" {
		fmt.Fprintf(&asked, " response_format=%s", rec.ResponseFormat)
	}
	if rec.N != 1 {
		fmt.Fprintf(&asked, " n=%d", rec.N)
	}
	if rec.MaxOutputTokens != 0 {
		fmt.Fprintf(&asked, " max_output_tokens=%d", rec.MaxOutputTokens)
	}
	fmt.Fprintf(h.log, "sim: #%d %s %s completion=%d turn=%d stream=%t tools=%d%s rule=%d -> %d\n",
		rec.Index, rec.Method, rec.Path, rec.Completion, rec.Turn, rec.Stream, rec.Tools, asked.String(), rec.Rule, status)
}

// opening is the start of either API's answer along the rule's timeline:
// its request id, its Delay, then a Status fault or a Hang with no
// keepalives, served whole. It reports whether the answer goes on.
func (h *handler) opening(ctx context.Context, w http.ResponseWriter, rec Request, rule Rule) bool {
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_sim_%d", rec.Index))
	if !h.pause(ctx, w, rule.Delay) {
		return false
	}
	if rule.Status >= 400 {
		writeFault(w, rule, rec)
		return false
	}
	if rule.Hang && rule.Keepalive == 0 {
		h.pause(ctx, w, Forever)
		return false
	}
	return true
}

// respond serves one admitted chat completion along the rule's timeline
// (see [Rule]): the policy's replies, one per choice, unless the rule
// gives its own.
func (h *handler) respond(w http.ResponseWriter, r *http.Request, req *chatRequest, msgs []Message, rec Request, rule Rule, reps []reply) {
	ctx := r.Context()
	if !h.opening(ctx, w, rec, rule) {
		return
	}

	if len(rule.ToolCalls) > 0 || rule.Answer != "" {
		reps = ruleReplies(rule, h.sc.Seed, rec.Completion, len(reps))
	}
	for i := range reps {
		reps[i] = reps[i].spend(rule.ReasoningTokens, rec.MaxOutputTokens)
	}
	base := chunk{
		ID:                fmt.Sprintf("chatcmpl-sim-%016x", hash(h.sc.Seed, strconv.Itoa(rec.Completion))),
		Created:           time.Now().Unix(),
		Model:             ModelID,
		SystemFingerprint: "fp_sim",
	}
	use := usage(msgs, reps)
	use.details(rule.CachedTokens, reps)
	events := streamEvents(base, reps, use, rule.Usage == nil && rec.IncludeUsage || rule.Usage != nil && *rule.Usage)
	if req.Stream {
		h.stream(ctx, w, rule, events, chatSSE)
		return
	}
	if rule.Usage != nil && !*rule.Usage {
		use = nil
	}
	h.whole(ctx, w, rule, len(events), wholeBody(base, reps, use))
}

// ruleReplies is a rule's fixed reply, for each of n choices. Its tool
// calls without an id get deterministic ones, each choice its own.
func ruleReplies(rule Rule, seed int64, completion, n int) []reply {
	reps := make([]reply, n)
	for choice := range reps {
		rep := reply{content: rule.Answer}
		for i, c := range rule.ToolCalls {
			if c.ID == "" {
				parts := []string{"rule", strconv.Itoa(completion), strconv.Itoa(i)}
				if choice > 0 {
					parts = append(parts, "choice", strconv.Itoa(choice))
				}
				c.ID = fmt.Sprintf("call_sim_%016x", hash(seed, parts...))
			}
			if c.Arguments == "" {
				c.Arguments = "{}"
			}
			rep.toolCalls = append(rep.toolCalls, c)
		}
		reps[choice] = rep
	}
	return reps
}

// pause waits d, or until the client leaves or the server closes. It
// reports whether d elapsed; on a server close it has cut the connection,
// so the client sees a broken response rather than an empty one.
func (h *handler) pause(ctx context.Context, w http.ResponseWriter, d time.Duration) bool {
	var timer <-chan time.Time
	switch d {
	case 0:
		select {
		case <-ctx.Done():
			return false
		case <-h.done:
			abort(w)
			return false
		default:
			return true
		}
	case Forever:
	default:
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-ctx.Done():
		return false
	case <-h.done:
		abort(w)
		return false
	}
}

// abort cuts the connection under a response without ending its body:
// the client reads an unexpected EOF (or, before headers, a plain EOF)
// rather than a response that looks complete.
func abort(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not HTTP/1 (or wrapped without Unwrap): the documented way to
		// abort a response without a logged stack.
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// sse is how a stream frames its events: Chat Completions' chunks each
// as "data: {chunk}", ending with "data: [DONE]"; the Responses API's
// events framed already, with nothing after the last. first is the index
// of the first event that waits for FirstToken: those before it come
// with the headers.
type sse struct {
	prefix, suffix, done string
	first                int
}

// Chat Completions' framing, and the Responses API's.
var (
	chatSSE      = sse{prefix: "data: ", suffix: "\n\n", done: "data: [DONE]\n\n"}
	responsesSSE = sse{first: opening}
)

// stream serves events along the rule's timeline: the headers (and the
// events before f.first), the keepalive period, FirstToken, then the rest
// ChunkGap apart, cut or hung after HangAfterChunks or CloseAfterChunks
// events, as both APIs' streams are.
func (h *handler) stream(ctx context.Context, w http.ResponseWriter, rule Rule, events [][]byte, f sse) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil || !h.keepalives(ctx, w, rc, rule) {
		return
	}
	if rule.Hang {
		h.pause(ctx, w, Forever)
		return
	}
	for i := 0; ; i++ {
		if rule.CloseAfterChunks != nil && i == *rule.CloseAfterChunks {
			abort(w)
			return
		}
		if rule.HangAfterChunks != nil && i == *rule.HangAfterChunks {
			h.pause(ctx, w, Forever)
			return
		}
		if i == len(events) {
			if f.done != "" {
				io.WriteString(w, f.done)
				rc.Flush()
			}
			return
		}
		var gap time.Duration
		switch {
		case i == f.first:
			gap = rule.FirstToken
		case i > f.first:
			gap = rule.ChunkGap
		}
		if !h.pause(ctx, w, gap) {
			return
		}
		if _, err := fmt.Fprintf(w, "%s%s%s", f.prefix, events[i], f.suffix); err != nil || rc.Flush() != nil {
			return
		}
	}
}

// keepalives sends the rule's keepalive comments, one every
// KeepaliveEvery for Keepalive. It reports whether the period ended; if
// not, the client left or the server closed.
func (h *handler) keepalives(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, rule Rule) bool {
	if rule.Keepalive == 0 {
		return true
	}
	every := rule.KeepaliveEvery
	if every == 0 {
		every = DefaultKeepaliveEvery
	}
	var spent time.Duration
	for rule.Keepalive-spent > every {
		if !h.pause(ctx, w, every) {
			return false
		}
		spent += every
		if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
			return false
		}
	}
	return h.pause(ctx, w, rule.Keepalive-spent)
}

// whole serves a non-streaming answer after the time its stream of n
// chunks would have taken.
func (h *handler) whole(ctx context.Context, w http.ResponseWriter, rule Rule, n int, body []byte) {
	if rule.Keepalive > 0 && !h.pause(ctx, w, rule.Keepalive) {
		return
	}
	if rule.Hang {
		h.pause(ctx, w, Forever)
		return
	}
	if !h.pause(ctx, w, streamTime(rule, n)) {
		return
	}
	cut := rule.CloseAfterChunks != nil || rule.HangAfterChunks != nil
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if !cut {
		w.Write(body)
		return
	}
	w.Write(body[:len(body)/2])
	if http.NewResponseController(w).Flush() != nil {
		return
	}
	if rule.CloseAfterChunks != nil {
		abort(w)
		return
	}
	h.pause(ctx, w, Forever)
}

// streamTime is FirstToken + (n−1)·ChunkGap, saturating at Forever.
func streamTime(rule Rule, n int) time.Duration {
	gaps := time.Duration(max(n-1, 0))
	if rule.ChunkGap > 0 && gaps > (Forever-rule.FirstToken)/rule.ChunkGap {
		return Forever
	}
	return rule.FirstToken + gaps*rule.ChunkGap
}

func writeFault(w http.ResponseWriter, rule Rule, rec Request) {
	if rule.RetryAfter != "" {
		w.Header().Set("Retry-After", rule.RetryAfter)
	}
	if rule.RetryAfterMs != "" {
		w.Header().Set("Retry-After-Ms", rule.RetryAfterMs)
	}
	msg := rule.Message
	if msg == "" {
		msg = fmt.Sprintf("[sim] injected status %d by rule %d on request %d.", rule.Status, rec.Rule, rec.Completion)
	}
	writeError(w, rule.Status, msg, "", "")
}

// writeError answers in OpenAI's error shape, with its type and, unless
// given one, the code for the status.
func writeError(w http.ResponseWriter, status int, msg, param, code string) {
	d := errorDetail{Message: msg, Type: "invalid_request_error"}
	byStatus := ""
	switch {
	case status == http.StatusUnauthorized:
		byStatus = "invalid_api_key"
	case status == http.StatusNotFound:
		byStatus = "unknown_url"
	case status == http.StatusRequestEntityTooLarge:
		byStatus = "request_too_large"
	case status == http.StatusTooManyRequests:
		d.Type, byStatus = "requests", "rate_limit_exceeded"
	case status >= 500:
		d.Type = "server_error"
	}
	if code == "" {
		code = byStatus
	}
	if code != "" {
		d.Code = &code
	}
	if param != "" {
		d.Param = &param
	}
	writeJSON(w, status, errorBody{Error: d})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	// Not HTML-escaped, as OpenAI's: messages say ">=", not "\u003e=".
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only the sim's own fixed shapes come here; failing to encode one
		// is a bug in the sim.
		panic(fmt.Sprintf("sim: encoding a response: %v", err))
	}
	b := buf.Bytes()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

func wholeBody(base chunk, reps []reply, use *usageReport) []byte {
	choices := make([]choice, len(reps))
	for i, rep := range reps {
		msg := outMessage{Role: "assistant"}
		if rep.content != "" || len(rep.toolCalls) == 0 {
			msg.Content = &rep.content
		}
		for _, c := range rep.toolCalls {
			msg.ToolCalls = append(msg.ToolCalls, outToolCall{ID: c.ID, Type: "function", Function: outFunction{Name: c.Name, Arguments: c.Arguments}})
		}
		choices[i] = choice{Index: i, Message: msg, FinishReason: rep.finishReason()}
	}
	b, _ := json.Marshal(completion{
		ID: base.ID, Object: "chat.completion", Created: base.Created, Model: base.Model,
		SystemFingerprint: base.SystemFingerprint,
		Choices:           choices,
		Usage:             use,
	})
	return b
}

// streamEvents renders the data chunks of a streamed answer, each with
// one choice's delta: for each choice its content one word per chunk (the
// first also carries the role), each tool call as a chunk with its id and
// name followed by its arguments in pieces, and its finish_reason chunk.
// With several choices their chunks take turns, as in OpenAI's streams;
// the usage chunk, if wanted, comes last.
func streamEvents(base chunk, reps []reply, use *usageReport, withUsage bool) [][]byte {
	base.Object = "chat.completion.chunk"
	per := make([][]chunkChoice, len(reps))
	longest := 0
	for i, rep := range reps {
		per[i] = deltas(i, rep)
		longest = max(longest, len(per[i]))
	}
	var events [][]byte
	for k := range longest {
		for i := range per {
			if k < len(per[i]) {
				c := base
				c.Choices = per[i][k : k+1]
				b, _ := json.Marshal(c)
				events = append(events, b)
			}
		}
	}
	if withUsage && use != nil {
		c := base
		c.Choices = []chunkChoice{}
		c.Usage = use
		b, _ := json.Marshal(c)
		events = append(events, b)
	}
	return events
}

// deltas are the chunk choices that stream one choice's reply.
func deltas(index int, rep reply) []chunkChoice {
	var out []chunkChoice
	emit := func(d delta, finish *string) {
		if len(out) == 0 {
			d.Role = "assistant"
		}
		out = append(out, chunkChoice{Index: index, Delta: d, FinishReason: finish})
	}
	for _, word := range words(rep.content) {
		emit(delta{Content: &word}, nil)
	}
	for i, tc := range rep.toolCalls {
		emit(delta{ToolCalls: []outToolCall{{Index: &i, ID: tc.ID, Type: "function", Function: outFunction{Name: tc.Name}}}}, nil)
		for _, p := range pieces(tc.Arguments, argPiece) {
			emit(delta{ToolCalls: []outToolCall{{Index: &i, Function: outFunction{Arguments: p}}}}, nil)
		}
	}
	if len(out) == 0 {
		empty := ""
		emit(delta{Content: &empty}, nil)
	}
	finish := rep.finishReason()
	emit(delta{}, &finish)
	return out
}

// words splits text after each run of spaces, keeping the spaces with the
// word before them, so the pieces join back to the text.
func words(s string) []string {
	var out []string
	start, inSpace := 0, false
	for i, r := range s {
		space := r == ' ' || r == '\n' || r == '\t'
		if inSpace && !space {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// pieces cuts s into pieces of at most n bytes without splitting a rune.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// usage estimates tokens at four bytes each, the completion's summed over
// its choices, their reasoning included; it is deterministic, not a
// tokenizer (see limit.go).
func usage(msgs []Message, reps []reply) *usageReport {
	var in, out int
	for _, m := range msgs {
		in += len(m.Role) + len(m.Content) + 4
		for _, c := range m.ToolCalls {
			in += len(c.Name) + len(c.Arguments)
		}
	}
	for _, rep := range reps {
		out += rep.outputTokens()
	}
	u := &usageReport{PromptTokens: tokens(in), CompletionTokens: out}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func redact(h http.Header) http.Header {
	c := h.Clone()
	for _, k := range secretHeaders {
		if _, ok := c[k]; ok {
			c[k] = []string{"[redacted]"}
		}
	}
	return c
}
