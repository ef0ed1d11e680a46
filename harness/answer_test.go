package harness_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The middleware reads an answer as openai-go reads it (issue 25, found in
// review): an event's data on several lines is one chunk, a JSON media
// type is a completion however it is spelled, and a completion too long to
// read for the record is still an answer.
func TestTheMiddlewareReadsAnAnswerAsTheClientDoes(t *testing.T) {
	const chunk = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",`
	big := strings.Repeat("a", 5<<20)
	for _, tc := range []struct {
		name, ctype, body string
		stream            bool
		chunks            int64
		finish            string
	}{
		{name: "a chunk whose data spans two lines is one chunk, and its finish reason is read",
			ctype: "text/event-stream", stream: true, chunks: 2, finish: "stop",
			body: "data: " + chunk + `"choices":[{"index":0,"delta":{"role":"assistant","content":"cats"},"finish_reason":null}]}` + "\r\n\r\n" +
				"data: " + chunk + "\n" + `data: "choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
				": keepalive\n\ndata: [DONE]\n\n"},
		{name: "a completion of media type Application/JSON is a completion",
			ctype: "Application/JSON; charset=utf-8", finish: "stop",
			body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The cats are in"},"finish_reason":"stop"}]}`},
		{name: "a completion of a +json media type is a completion",
			ctype: "application/vnd.example+json", finish: "stop",
			body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The cats are in"},"finish_reason":"stop"}]}`},
		{name: "a completion longer than the middleware reads is an answer, with no finish reason on the record",
			ctype: "application/json",
			body:  `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + big + `"},"finish_reason":"stop"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mux := http.NewServeMux()
				mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", tc.ctype)
					io.WriteString(w, tc.body)
				})
				srv := serveHandler(mux)
				defer srv.close()
				oa := openai.NewClient(append([]option.RequestOption{option.WithBaseURL("http://tools.invalid/v1"),
					option.WithHTTPClient(srv.client())}, harness.ClientOptions()...)...)
				var sink collect
				s, ctx := start(t, time.Minute, harness.Config{Task: "find cats", Sinks: []trace.Sink{&sink}})
				tctx, turn, err := s.BeginTurn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}}
				var content string
				if tc.stream {
					st := oa.Chat.Completions.NewStreaming(tctx, params)
					var acc openai.ChatCompletionAccumulator
					for st.Next() {
						acc.AddChunk(st.Current())
					}
					if len(acc.Choices) > 0 {
						content = acc.Choices[0].Message.Content
					}
					err = turn.End(st.Err())
					st.Close()
				} else {
					c, cerr := oa.Chat.Completions.New(tctx, params)
					if cerr == nil {
						content = c.Choices[0].Message.Content
					}
					err = turn.End(cerr)
				}
				s.Close()
				if err != nil || content == "" {
					t.Fatalf("End: %v, the client read %d bytes: want an answer", err, len(content))
				}
				var end trace.Record
				for _, r := range sink.all() {
					if r.Event == trace.AttemptEnd && r.Step == "model" {
						end = r
					}
				}
				if end.Outcome != trace.OK || end.Chunks != tc.chunks || end.FinishReason != tc.finish {
					t.Errorf("attempt_end outcome %q, chunks %d, finish %q; want ok, %d, %q", end.Outcome, end.Chunks, end.FinishReason, tc.chunks, tc.finish)
				}
			})
		})
	}
}
