package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode"
)

// SkipMarker in a tool's description keeps the default policy from calling
// that tool: it is offered but not useful.
const SkipMarker = "[sim:skip]"

// clipRunes bounds each tool result quoted in an answer or summary, so a
// large result cannot swell the conversation that follows.
const clipRunes = 120

// A reply is what the assistant says: text, tool calls, or both.
type reply struct {
	content   string
	toolCalls []ToolCall
}

func (r reply) finishReason() string {
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

// decide is the default policy: call every useful tool not yet called,
// then answer from the results; offered no tools, summarize.
func decide(req *chatRequest, msgs []Message, seed int64) reply {
	cv := readConversation(msgs)
	if len(req.tools) == 0 {
		return reply{content: summary(cv)}
	}
	var pending []wireTool
	if !req.toolChoiceNone() {
		for _, t := range req.tools {
			if !cv.called[t.Function.Name] && !strings.Contains(t.Function.Description, SkipMarker) {
				pending = append(pending, t)
			}
		}
	}
	if len(pending) == 0 {
		return reply{content: answer(cv)}
	}
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		pending = pending[:1]
	}
	calls := make([]ToolCall, len(pending))
	for i, t := range pending {
		calls[i] = ToolCall{
			ID:        callID(seed, cv, i, t.Function.Name),
			Name:      t.Function.Name,
			Arguments: arguments(t.Function.Parameters, cv.task, seed, t.Function.Name),
		}
	}
	return reply{toolCalls: calls}
}

// callID depends on the conversation, not on arrival order, so concurrent
// conversations get the same ids however they interleave.
func callID(seed int64, cv conversation, i int, name string) string {
	return fmt.Sprintf("call_sim_%016x", hash(seed, cv.task, fmt.Sprint(cv.turn), fmt.Sprint(i), name))
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
