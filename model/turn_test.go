package model_test

import (
	"errors"
	"testing"

	"github.com/glidepath/glidepath/model"
)

func TestAReplyIsAWholeAnswerUnlessCutOrWithheld(t *testing.T) {
	cases := []struct {
		reason string
		want   bool // reports whether it is an answer
		says   string
	}{
		{"stop", true, ""},
		{"tool_calls", true, ""},
		{"eos", true, ""}, // servers spell stop in more ways than one
		{"", true, ""},    // a stream's business: ErrIncomplete
		{"length", false, "its reply was cut at the token limit (finish reason length)"},
		{"content_filter", false, "its reply was withheld by a content filter (finish reason content_filter)"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := model.CheckFinish(tc.reason)
			if (err == nil) != tc.want || (err != nil && !errors.Is(err, model.ErrNotAnswer)) {
				t.Fatalf("CheckFinish(%q) = %v, want an answer: %v", tc.reason, err, tc.want)
			}
			if err != nil {
				if re, ok := errors.AsType[*model.ReplyError](err); !ok || re.FinishReason != tc.reason {
					t.Errorf("%v is not a ReplyError of %q", err, tc.reason)
				}
				if got := model.Describe(err); got != tc.says {
					t.Errorf("Describe = %q, want %q", got, tc.says)
				}
			}
		})
	}
}
