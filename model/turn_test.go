package model_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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

// An openai-go request sent with LeaseOptions carries the lease as
// Budget-Remaining-Ms, is not retried by the SDK on a 500, and counts the
// SSE comments of a stream as keepalives.
func TestLeaseOptionsSendTheLeaseTurnTheSDKRetriesOffAndCountKeepalives(t *testing.T) {
	var requests atomic.Int64
	var sent atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		sent.Store(r.Header.Get(budget.Header))
		if requests.Add(1) == 1 {
			http.Error(w, `{"error":{"message":"down"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": keepalive\n\n: keepalive\n\n")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	b, err := budget.New(budget.Config{Total: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := b.Lease(b.Estimates().Kind(model.Kind), 0)
	if err != nil {
		t.Fatal(err)
	}
	// The SDK's default would retry the 500 twice: the options turn it off.
	oa := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"))
	params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	var keepalives atomic.Int64
	opts := model.LeaseOptions(lease, func() { keepalives.Add(1) })

	_, err = oa.Chat.Completions.New(t.Context(), params, opts...)

	if err == nil || requests.Load() != 1 {
		t.Fatalf("a 500: %v after %d requests, want the error after 1", err, requests.Load())
	}
	if got, want := sent.Load(), strconv.FormatInt(lease.Granted.Milliseconds(), 10); got != want {
		t.Errorf("%s %v, want %s", budget.Header, got, want)
	}
	stream := oa.Chat.Completions.NewStreaming(t.Context(), params, opts...)
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	if n := keepalives.Load(); n != 2 {
		t.Errorf("%d keepalives counted, want 2", n)
	}
}
