package sim

import (
	"fmt"
	"unicode/utf8"
)

// The output-token limit a request carries, and the tokens an answer
// spends (issue 28).
//
// The sim counts tokens as [usage] always has: four bytes of text a
// token, rounded up, over a reply's content and each tool call's name and
// arguments. A reasoning model thinks before it answers: its reasoning
// tokens (on the Responses API those of its summary, or a rule's
// ReasoningTokens on either API) are spent first and counted in the
// output, as OpenAI counts them. Under a limit, the reasoning gets what it
// needs up to the limit and the reply what is left; a reply that does not
// fit is cut after that many tokens' bytes, and the answer reports
// exactly the limit as its output tokens, as OpenAI's does.

// bytesPerToken is the sim's token: four bytes of text.
const bytesPerToken = 4

// tokens is how many tokens n bytes of text are.
func tokens(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

// The least limit each API accepts: Chat Completions' max_completion_tokens
// (and max_tokens) at least 1, the Responses API's max_output_tokens at
// least 16, with OpenAI's 400 below it.
const (
	leastChatLimit      = 1
	leastResponsesLimit = 16
)

// decodeLimit reads the request's output-token limit: a Responses
// request's max_output_tokens, else max_completion_tokens, else the
// older max_tokens, which max_completion_tokens replaces when both come.
// Absent or null is none (0).
func (req *chatRequest) decodeLimit() *apiError {
	param, v, least := "max_completion_tokens", req.MaxCompletionTokens, int64(leastChatLimit)
	switch {
	case req.maxOutputTokens != nil:
		param, v, least = "max_output_tokens", req.maxOutputTokens, leastResponsesLimit
	case v == nil:
		param, v = "max_tokens", req.MaxTokens
	}
	if v == nil {
		return nil
	}
	if *v < least {
		e := invalid(param, fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= %d, but got %d instead.", param, least, *v))
		e.code = "integer_below_min_value"
		return e
	}
	req.limit = *v
	return nil
}

// replyBytes is the length of what a reply says, as its tokens count it.
func (r reply) replyBytes() int {
	n := len(r.content)
	for _, c := range r.toolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n
}

// spend is r as the model gives it after thinking reasoning tokens, under
// limit output tokens (0: no limit): whole if it fits in what the
// reasoning left, else cut.
func (r reply) spend(reasoning int, limit int64) reply {
	if limit <= 0 {
		r.reasoning = reasoning
		return r
	}
	r.reasoning = int(min(int64(reasoning), limit))
	left := limit - int64(r.reasoning)
	if int64(tokens(r.replyBytes())) <= left {
		return r
	}
	return r.cut(int(left), limit)
}

// cut keeps the first left tokens' bytes of r: its content, then each tool
// call in turn, a rune never split, and marks it cut at limit. A call whose
// name does not fit whole is not begun, and none after it. A call begun is
// sent as far as it got, its arguments cut short, as OpenAI streams a call
// the limit stopped: the finish reason "length" (on the Responses API the
// item's status "incomplete") is what says it is no usable call, and a
// client must not run it.
func (r reply) cut(left int, limit int64) reply {
	room := left * bytesPerToken
	out := reply{reasoning: r.reasoning, limit: limit, content: prefix(r.content, room)}
	if len(out.content) < len(r.content) {
		return out
	}
	room -= len(out.content)
	for _, c := range r.toolCalls {
		if room < len(c.Name) {
			break
		}
		room -= len(c.Name)
		c.Arguments = prefix(c.Arguments, room)
		room -= len(c.Arguments)
		out.toolCalls = append(out.toolCalls, c)
	}
	return out
}

// prefix is the longest start of s of at most n bytes that does not split
// a rune.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)]
}

// outputTokens is what the reply costs in output tokens: the limit when it
// was cut, else its reasoning and its own tokens.
func (r reply) outputTokens() int {
	if r.limit > 0 {
		return int(r.limit)
	}
	return r.reasoning + tokens(r.replyBytes())
}

// details adds the rule's cached tokens (at most the input's) and the
// replies' reasoning tokens to u, where there are any: OpenAI's
// prompt_tokens_details and completion_tokens_details.
func (u *usageReport) details(cached int, reps []reply) {
	reasoning := 0
	for _, rep := range reps {
		reasoning += rep.reasoning
	}
	if cached = min(cached, u.PromptTokens); cached > 0 {
		u.PromptDetails = &promptDetails{CachedTokens: cached}
	}
	if reasoning > 0 {
		u.CompletionDetails = &completionDetails{ReasoningTokens: reasoning}
	}
}

// promptDetails and completionDetails are the parts of a usage report's
// tokens, as Chat Completions reports them.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type completionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}
