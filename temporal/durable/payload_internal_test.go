package durable

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAToolOutputIsCutToWhatARunCarriesAsValidJSONThatSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		same bool   // kept as it is
		says string // what the cut output says
	}{
		{"an output that fits is kept as it is", `{"hits": 3}`, true, ""},
		{"an output of exactly the bound is kept", `"` + strings.Repeat("a", MaxToolOutputBytes-2) + `"`, true, ""},
		{"a long output is cut and says where", `"` + strings.Repeat("a", 3*MaxToolOutputBytes) + `"`, false, "[output cut at"},
		{"a long output of runes is cut between them", `"` + strings.Repeat("é", 2*MaxToolOutputBytes) + `"`, false, "[output cut at"},
		{"a long JSON object is cut, its quotes escaped within the bound", `{"rows": [` + strings.Repeat(`{"id": 1, "name": "a"}, `, MaxToolOutputBytes/10) + `{}]}`, false, "[output cut at"},
		{"a long HTML page is cut, its tags kept as they are", strings.Repeat(`<p class="x">a &amp; b</p>`, MaxToolOutputBytes/10), false, "<p class=\"x\">a &amp; b</p>"},
		{"an output of quotes alone is cut to what fits", strings.Repeat(`"`, 2*MaxToolOutputBytes), false, "[output cut at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cutOutput(json.RawMessage(tc.out))
			if tc.same {
				if string(got) != tc.out {
					t.Fatalf("changed an output that fits")
				}
				return
			}
			var s string
			if err := json.Unmarshal(got, &s); err != nil {
				t.Fatalf("not a JSON string: %v", err)
			}
			if len(got) > MaxToolOutputBytes || !utf8.ValidString(s) || !strings.Contains(s, tc.says) {
				t.Errorf("%d bytes, valid UTF-8 %v, says %q: %q", len(got), utf8.ValidString(s), tc.says, s[max(0, len(s)-200):])
			}
		})
	}
}

func TestARequestWithinTheBoundIsSentAsItIs(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "s"}, {Role: "tool", Content: strings.Repeat("a", 1000)}}
	if !fitted(msgs) || msgs[1].Content != strings.Repeat("a", 1000) {
		t.Errorf("fitted changed a request that fits")
	}
	huge := []Message{{Role: "user", Content: strings.Repeat("u", MaxRequestBytes+1)}}
	if fitted(huge) {
		t.Errorf("a user message past the bound fitted")
	}
}

func TestASizeIsSaidAsItsBoundsAreSet(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{MaxRequestBytes, "1.5 MiB"},
		{MaxCarryBytes, "1.75 MiB"},
		{MaxHistoryBytes, "40 MiB"},
		{MaxToolOutputBytes, "256 KiB"},
		{3430000, "3.27 MiB"},
		{512, "512 bytes"},
	} {
		if got := mib(tc.n); got != tc.want {
			t.Errorf("mib(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// Issue 27: an answer that came over the Responses API carries its output
// items (its reasoning, its text again, its calls) beside its content.
// Left out, its content alone was replaced, and the items kept the
// request past the bound; now they go with it, its calls kept.
func TestAnAnswerLeftOutTakesItsResponsesOutputWithIt(t *testing.T) {
	items := json.RawMessage(`[{"type":"reasoning","encrypted_content":"` + strings.Repeat("r", MaxRequestBytes) + `"}]`)
	call := ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{}`)}
	msgs := []Message{
		{Role: "user", Content: "task"},
		{Role: "assistant", Content: "thinking aloud", ToolCalls: []ToolCall{call}, Output: items},
		{Role: "tool", ToolCallID: "c1", Content: "found"},
		{Role: "assistant", ToolCalls: []ToolCall{call}, Output: items},
	}
	if !fitted(msgs) {
		t.Fatal("a conversation whose answers' output items pass the bound did not fit once they were left out")
	}
	for _, i := range []int{1, 3} {
		if msgs[i].Output != nil || len(msgs[i].ToolCalls) != 1 {
			t.Errorf("answer %d: output %d bytes, %d calls; want its output left out and its call kept", i, len(msgs[i].Output), len(msgs[i].ToolCalls))
		}
	}
	if !strings.Contains(msgs[1].Content, "left out") || msgs[3].Content != "" {
		t.Errorf("contents %q, %q; want the first said left out, the second still empty", msgs[1].Content, msgs[3].Content)
	}
}
