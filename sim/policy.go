package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"unicode"
)

// SkipMarker in a tool's description keeps the default policy from calling
// that tool: it is offered but not useful. A tool_choice that names it
// still calls it, and "required" does when no other tool is useful.
const SkipMarker = "[sim:skip]"

// clipRunes bounds each tool result quoted in an answer or summary, so a
// large result cannot swell the conversation that follows.
const clipRunes = 120

// A reply is what the assistant says: text, tool calls, or both; and
// what it cost beyond them ([reply.spend]).
type reply struct {
	content   string
	toolCalls []ToolCall
	reasoning int   // the reasoning tokens spent before it
	limit     int64 // the output-token limit it was cut at; 0 when it is whole
}

func (r reply) finishReason() string {
	if r.limit > 0 {
		return "length"
	}
	if len(r.toolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// call is one tool call seen in the conversation and what came of it.
type call struct {
	name      string
	result    string
	hasResult bool
	failed    bool
}

// conversation is what the default policy reads from the messages.
type conversation struct {
	task   string
	note   string
	turn   int
	calls  []call
	called map[string]bool
}

func readConversation(msgs []Message) conversation {
	cv := conversation{turn: 1, called: map[string]bool{}}
	byID := map[string]int{}
	taskSet := false
	for _, m := range msgs {
		switch m.Role {
		case "system", "developer", "user":
			text, note := splitBudgetNote(m.Content)
			if note != "" {
				cv.note = note
			}
			if m.Role == "user" && !taskSet {
				cv.task, taskSet = text, true
			}
		case "assistant":
			cv.turn++
			for _, c := range m.ToolCalls {
				byID[c.ID] = len(cv.calls)
				cv.calls = append(cv.calls, call{name: c.Name})
				cv.called[c.Name] = true
			}
		case "tool":
			if i, ok := byID[m.ToolCallID]; ok {
				cv.calls[i].result, cv.calls[i].hasResult = m.Content, true
				cv.calls[i].failed = isErrorResult(m.Content)
			}
		}
	}
	return cv
}

// splitBudgetNote separates the budget note from a message: the lines
// that start, after spaces, with "Budget:" or "[budget" (any case). It
// returns the rest, trimmed, and the note's lines joined.
func splitBudgetNote(s string) (rest, note string) {
	var keep, notes []string
	for line := range strings.SplitSeq(s, "\n") {
		l := strings.ToLower(strings.TrimSpace(line))
		if strings.HasPrefix(l, "budget:") || strings.HasPrefix(l, "[budget") {
			notes = append(notes, strings.TrimSpace(line))
			continue
		}
		keep = append(keep, line)
	}
	return strings.TrimSpace(strings.Join(keep, "\n")), strings.Join(notes, "\n")
}

// isErrorResult reports whether a tool result reports a failure: its text
// starts with "error" (any case), or it is a JSON object with a non-null
// "error" field. Chat Completions has no error flag for tool results, so
// this convention is the sim's.
func isErrorResult(s string) bool {
	t := strings.TrimSpace(s)
	if len(t) >= 5 && strings.EqualFold(t[:5], "error") {
		return true
	}
	if !strings.HasPrefix(t, "{") {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &obj) != nil {
		return false
	}
	e, ok := obj["error"]
	return ok && string(e) != "null" && string(e) != "false" && string(e) != `""`
}

// decide is the default policy, for one choice of the answer: call every
// useful tool not yet called (as tool_choice allows), then answer from the
// results; offered no tools, summarize. Choices differ only in their tool
// call ids.
func decide(req *chatRequest, msgs []Message, seed int64, choice int) reply {
	cv := readConversation(msgs)
	if len(req.tools) == 0 {
		return reply{content: summary(cv)}
	}
	pending := toCall(req, cv)
	if len(pending) == 0 {
		return reply{content: answer(cv)}
	}
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		pending = pending[:1]
	}
	calls := make([]ToolCall, len(pending))
	for i, t := range pending {
		calls[i] = ToolCall{
			ID:        callID(seed, cv, choice, i, t.Function.Name),
			Name:      t.Function.Name,
			Arguments: arguments(t.Function.Parameters, cv.task, seed, t.Function.Name),
		}
	}
	return reply{toolCalls: calls}
}

// replies is the default policy's answer to a request: one reply per
// choice, the content shaped by response_format.
func replies(req *chatRequest, msgs []Message, seed int64) ([]reply, *apiError) {
	reps := make([]reply, req.n)
	for i := range reps {
		reps[i] = decide(req, msgs, seed, i)
	}
	// The format is applied on every turn, one that calls tools too, so
	// that a schema the sim cannot meet is refused at once, as OpenAI
	// refuses a bad schema whatever the turn.
	content, e := req.format.content(reps[0].content, readConversation(msgs).task, seed)
	if e != nil {
		return nil, e
	}
	for i := range reps {
		if len(reps[i].toolCalls) == 0 {
			reps[i].content = content
		}
	}
	return reps, nil
}

// toCall picks the tools to call this turn by tool_choice: "none" calls
// none; a named function is called every turn; "auto" calls each useful
// tool (offered, not marked [SkipMarker]) not yet called; "required" does
// the same, and once none is left calls the first useful tool again (the
// first tool, if none is useful): it must call one. allowed_tools narrows
// the tools offered to those it lists.
func toCall(req *chatRequest, cv conversation) []wireTool {
	c := req.choice
	offered := req.tools
	if c.allowed != nil {
		offered = slices.DeleteFunc(slices.Clone(offered), func(t wireTool) bool { return !slices.Contains(c.allowed, t.Function.Name) })
	}
	if c.name != "" {
		i := slices.IndexFunc(offered, func(t wireTool) bool { return t.Function.Name == c.name })
		return offered[i : i+1] // decodeToolChoice checked that it is offered
	}
	if c.mode == "none" {
		return nil
	}
	useful := func(t wireTool) bool { return !strings.Contains(t.Function.Description, SkipMarker) }
	var pending []wireTool
	for _, t := range offered {
		if useful(t) && !cv.called[t.Function.Name] {
			pending = append(pending, t)
		}
	}
	if len(pending) > 0 || c.mode != "required" {
		return pending
	}
	if i := slices.IndexFunc(offered, useful); i >= 0 {
		return offered[i : i+1]
	}
	return offered[:1]
}

// callID depends on the conversation, not on arrival order, so concurrent
// conversations get the same ids however they interleave.
func callID(seed int64, cv conversation, choice, i int, name string) string {
	parts := []string{cv.task, fmt.Sprint(cv.turn), fmt.Sprint(i), name}
	if choice > 0 {
		parts = append(parts, "choice", fmt.Sprint(choice))
	}
	return fmt.Sprintf("call_sim_%016x", hash(seed, parts...))
}

func answer(cv conversation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[sim] Answer to %q: ", clip(cv.task, 200))
	if len(cv.calls) == 0 {
		b.WriteString("no tool results.")
		return b.String()
	}
	for i, c := range cv.calls {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(outcome(c))
	}
	b.WriteString(".")
	return b.String()
}

func summary(cv conversation) string {
	var ok, notOK []string
	for _, c := range cv.calls {
		if c.hasResult && !c.failed {
			ok = append(ok, outcome(c))
		} else {
			notOK = append(notOK, outcome(c))
		}
	}
	list := func(items []string) string {
		if len(items) == 0 {
			return "nothing."
		}
		return strings.Join(items, "; ") + "."
	}
	return fmt.Sprintf("[sim] Summary of %q\nEstablished: %s\nNot established: %s",
		clip(cv.task, 200), list(ok), list(notOK))
}

func outcome(c call) string {
	switch {
	case !c.hasResult:
		return c.name + " has no result"
	case c.failed:
		return c.name + " failed: " + clip(c.result, clipRunes)
	}
	return c.name + " returned " + clip(c.result, clipRunes)
}

// clip collapses whitespace, so a quoted result keeps the fixed line
// format, and cuts to n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func hash(seed int64, parts ...string) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, seed)
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return h.Sum64()
}
